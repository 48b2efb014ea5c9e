"""Small ONNX models for tests, built with onnx.helper and random weights, and onnxruntime as
their oracle: `OnnxNet` (a few-line builder), `small_resnet` and `rowwise` (row-wise ops for
the thread pool), `residual_cnn` (a branch joined by a residual Add, pooling, a view) and
`samples` (random inputs of a model, for calibration)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


class OnnxNet:
    """Builds an ONNX graph node by node; every method returns the name of its output."""

    def __init__(self, name: str = "net", seed: int = 0):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[str] = []
        self._n = 0

    def fresh(self, base: str) -> str:
        self._n += 1
        return f"{base}{self._n}"

    def input(self, name: str, shape: Sequence[int]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        return name

    def const(self, arr, name: str | None = None) -> str:
        name = name or self.fresh("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def weight(self, shape: Sequence[int], scale: float | None = None) -> str:
        fan = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        a = self.rng.standard_normal(shape) * (scale if scale is not None else np.sqrt(2 / fan))
        return self.const(a.astype(np.float32), self.fresh("w"))

    def node(self, op: str, inputs: Sequence[str], outputs: int = 1, name: str | None = None,
             **attrs):
        """The node's output (its first one named `name` if given), or a list of several."""
        outs = [self.fresh(op.lower()) for _ in range(outputs)]
        outs[0] = name or outs[0]
        self.nodes.append(helper.make_node(op, list(inputs), outs, **attrs))
        return outs[0] if outputs == 1 else outs

    def conv(self, x: str, cin: int, cout: int, k, stride=1, pads=None, dilation=1, group=1,
             bias: bool = True, name: str | None = None) -> str:
        """Conv with a [cout, cin/group, kh, kw] weight; `pads` default to 'same' for stride 1
        ((k-1)*dilation/2 on each side); ints are the same for both axes."""
        kh, kw = (k, k) if isinstance(k, int) else k
        sh, sw = (stride, stride) if isinstance(stride, int) else stride
        dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
        if pads is None:
            ph, pw = (kh - 1) * dh // 2, (kw - 1) * dw // 2
            pads = [ph, pw, ph, pw]
        ins = [x, self.weight((cout, cin // group, kh, kw))]
        if bias:
            ins.append(self.weight((cout,), 0.1))
        return self.node("Conv", ins, name=name, group=group, strides=[sh, sw], pads=list(pads),
                         dilations=[dh, dw], kernel_shape=[kh, kw])

    def output(self, *names: str) -> None:
        self.outputs += names

    def model(self, opset: int = 17) -> onnx.ModelProto:
        outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in self.outputs]
        g = helper.make_graph(self.nodes, self.name, self.inputs, outs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 10
        # the outputs' shapes, from ONNX's own shape inference
        inferred = onnx.shape_inference.infer_shapes(m).graph
        known = {v.name: v for v in [*inferred.value_info, *inferred.output]}
        for o in m.graph.output:
            o.type.CopyFrom(known[o.name].type)
        onnx.checker.check_model(m)
        return m


def small_resnet(size: int = 32) -> onnx.ModelProto:
    """[1, 3, size, size] -> logits [1, 10] and the feature map of a 1x1 conv: stem conv +
    relu, a residual block of two 3x3 convs, a stride-2 depthwise conv, a 1x1 conv to 24
    channels, maxpool, global average pool, flatten and gemm."""
    n = OnnxNet("small_resnet")
    x = n.node("Relu", [n.conv(n.input("input", [1, 3, size, size]), 3, 16, 3)])
    a = n.node("Relu", [n.conv(x, 16, 16, 3)])
    r = n.node("Relu", [n.node("Add", [n.conv(a, 16, 16, 3), x])])
    d = n.node("Relu", [n.conv(r, 16, 16, 3, stride=2, group=16)])
    f = n.conv(d, 16, 24, 1, name="features")
    p = n.node("MaxPool", [f], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])
    g = n.node("Flatten", [n.node("GlobalAveragePool", [p])], axis=1)
    logits = n.node("Gemm", [g, n.weight((10, 24)), n.weight((10,), 0.1)], name="logits",
                    transB=1)
    n.output(logits, f)
    return n.model()


def rowwise() -> onnx.ModelProto:
    """Row-wise and elementwise ops large enough for the thread pool, in tasks that do not
    divide their rows: Exp over 99 900 elements (chunks of 16 384), a broadcast Add by rows
    of 333, Softmax along the last axis and along a middle one (a task per outer index, each
    with its inner loop), LayerNormalization, and the reductions of each row (ReduceMean,
    ReduceLogSumExp)."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal(333).astype(np.float32), n)
             for n in ("b", "scale", "bias")]
    nodes = [helper.make_node("Exp", ["x"], ["e"]),
             helper.make_node("Add", ["x", "b"], ["a"]),
             helper.make_node("Softmax", ["x"], ["s"], axis=-1),
             helper.make_node("Softmax", ["z"], ["m"], axis=1),
             helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["n"], axis=-1),
             helper.make_node("ReduceMean", ["x"], ["r"], axes=[-1]),
             helper.make_node("ReduceLogSumExp", ["x"], ["l"], axes=[-1])]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, "rowwise", [helper.make_tensor_value_info("x", f, [300, 333]),
                           helper.make_tensor_value_info("z", f, [4, 100, 257])],
        [helper.make_tensor_value_info(n, f, None) for n in "easmnrl"], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def random_feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
            .astype(np.float32) for i in model.graph.input}


def onnxruntime_outputs(model: onnx.ModelProto, feeds) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    return dict(zip(names, sess.run(names, feeds)))


def residual_cnn(seed: int = 0) -> onnx.ModelProto:
    """conv-relu, then a branch (conv-relu-conv 1x1) joined to it by a residual Add and Relu,
    MaxPool, Flatten, Gemm: a stream fork and join, pooling and a view."""
    rng = np.random.default_rng(seed)

    def w(name, *shape):
        std = np.sqrt(2 / np.prod(shape[1:]))
        return numpy_helper.from_array((rng.standard_normal(shape) * std).astype(np.float32), name)

    inits = [w("c1.w", 8, 3, 3, 3), w("c2.w", 8, 8, 3, 3), w("c3.w", 8, 8, 1, 1),
             w("fc.w", 5, 8 * 4 * 4),
             numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "c1.b"),
             numpy_helper.from_array((rng.standard_normal(5) * 0.1).astype(np.float32), "fc.b")]
    nodes = [helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "c2.w"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "c3.w"], ["c3"]),
             helper.make_node("Add", ["c3", "r1"], ["s"]),
             helper.make_node("Relu", ["s"], ["r3"]),
             helper.make_node("MaxPool", ["r3"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["y"], transB=1)]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", f, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", f, [1, 5])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def samples(model: onnx.ModelProto, n: int, seed: int) -> dict[str, np.ndarray]:
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    return {inp.name: rng.standard_normal((n, *shape[1:])).astype(np.float32)}


def cpu_twin() -> str:
    """The CPU target whose build of an edgec-quantized model an HLS design must equal bit for
    bit: this machine's `x86`, except on an AVX2 CPU without AVX-VNNI, where `x86` fits 8-bit
    weights to vpmaddubsw's pair sums (targets.pair_sums) and the HLS target does not; there
    `c-generic`, which quantizes as the HLS target does on every host."""
    from edgec.targets.target import get_target, pair_sums

    return "c-generic" if pair_sums(get_target("x86")) else "x86"
