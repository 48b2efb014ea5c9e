"""The model builder of the zoo: nodes and initializers with torch-style names (initializers
"conv1.weight", values "/layer1/layer1.0/conv1/Conv_output_0"), layers as torch exports them,
and the finished ModelProto."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8
PRODUCER = ("pytorch", "2.1.0")


class Builder:
    """Collects nodes and initializers with torch-style names."""

    def __init__(self, seed: int, opset: int):
        if not 11 <= opset <= 21:
            raise ValueError(f"opset must be in 11..21, got {opset}")
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []
        self.counts: dict[str, int] = {}

    # -- names ---------------------------------------------------------------------------
    def _node_name(self, scope: str, op: str) -> str:
        base = f"{scope}/{op}"
        k = self.counts.get(base, 0)
        self.counts[base] = k + 1
        return base if k == 0 else f"{base}_{k}"

    def node(self, op: str, inputs: Sequence[str], scope: str = "", n_out: int = 1,
             **attrs) -> str:
        name = self._node_name(scope, op)
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        return outs[0]

    def init(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def constant(self, array: np.ndarray, scope: str = "") -> str:
        """A Constant node, as torch emits for scalars and small shape tensors."""
        return self.node("Constant", [], scope, value=numpy_helper.from_array(np.asarray(array)))

    # -- layers --------------------------------------------------------------------------
    def conv(self, x: str, prefix: str, scope: str, cin: int, cout: int, k: int,
             stride: int = 1, groups: int = 1, bias: bool = False) -> str:
        fan_in = cin // groups * k * k
        w = self.rng.normal(0, math.sqrt(2 / fan_in), (cout, cin // groups, k, k))
        inputs = [x, self.init(f"{prefix}.weight", w.astype(np.float32))]
        if bias:
            inputs.append(self.init(f"{prefix}.bias", self.uniform(-0.1, 0.1, cout)))
        p = (k - 1) // 2
        return self.node("Conv", inputs, scope, dilations=[1, 1], group=groups,
                         kernel_shape=[k, k], pads=[p, p, p, p], strides=[stride, stride])

    def bn(self, x: str, prefix: str, scope: str, c: int, gamma: tuple[float, float] = (0.5, 1.0)
           ) -> str:
        # running statistics near what a He-initialised conv produces (mean 0, var ~ 1)
        names = [self.init(f"{prefix}.{n}", a) for n, a in (
            ("weight", self.uniform(*gamma, c)), ("bias", self.uniform(-0.2, 0.2, c)),
            ("running_mean", self.uniform(-0.2, 0.2, c)),
            ("running_var", self.uniform(0.6, 1.6, c)))]
        attrs = {"epsilon": 1e-5, "momentum": 0.9}
        if self.opset >= 14:
            attrs["training_mode"] = 0
        return self.node("BatchNormalization", [x, *names], scope, **attrs)

    def relu6(self, x: str, scope: str) -> str:
        lo = self.constant(np.float32(0.0), scope)
        hi = self.constant(np.float32(6.0), scope)
        return self.node("Clip", [x, lo, hi], scope)

    def gemm(self, x: str, prefix: str, scope: str, cin: int, cout: int) -> str:
        w = self.rng.normal(0, math.sqrt(1 / cin), (cout, cin)).astype(np.float32)
        names = [self.init(f"{prefix}.weight", w),
                 self.init(f"{prefix}.bias", self.uniform(-0.1, 0.1, cout))]
        return self.node("Gemm", [x, *names], scope, alpha=1.0, beta=1.0, transB=1)

    def unsqueeze(self, x: str, axes: list[int], scope: str = "") -> str:
        if self.opset < 13:
            return self.node("Unsqueeze", [x], scope, axes=axes)
        return self.node("Unsqueeze", [x, self.constant(np.array(axes, np.int64), scope)], scope)

    def uniform(self, lo: float, hi: float, n: int) -> np.ndarray:
        return self.rng.uniform(lo, hi, n).astype(np.float32)

    # -- the model -----------------------------------------------------------------------
    def model(self, name: str, inputs: dict[str, Sequence[int]], output: str,
              out_shape: Sequence[int], result: str) -> onnx.ModelProto:
        # torch names the last node's result after the graph output
        for n in self.nodes:
            n.output[:] = [output if o == result else o for o in n.output]
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, out_shape)],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name=PRODUCER[0], producer_version=PRODUCER[1])
        model.ir_version = IR_VERSION
        return model



def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, list(shape))


def finish(b: Builder, name: str, inputs: Sequence[onnx.ValueInfoProto],
            outputs: Sequence[tuple[str, onnx.ValueInfoProto]],
            producer: tuple[str, str] = PRODUCER,
            opsets: Sequence[tuple[str, int]] = (),
            functions: Sequence[onnx.FunctionProto] = ()) -> onnx.ModelProto:
    """A model of `b`'s nodes; each output is (the value that holds it, its ValueInfo)."""
    rename = {src: info.name for src, info in outputs}
    for n in b.nodes:
        n.output[:] = [rename.get(o, o) for o in n.output]
    graph = helper.make_graph(b.nodes, name, list(inputs), [info for _, info in outputs], b.inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", b.opset)]
        + [helper.make_opsetid(d, v) for d, v in opsets],
        producer_name=producer[0], producer_version=producer[1], functions=list(functions))
    model.ir_version = IR_VERSION
    return model



def save(model: onnx.ModelProto, path: str | Path) -> Path:
    """Write `model` to `path` (folders created as needed); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path
