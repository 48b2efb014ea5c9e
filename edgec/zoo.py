"""Example models, built with `onnx.helper` as PyTorch's exporter writes them.

The graphs follow torchvision's topologies and torch's naming (initializers "conv1.weight",
values "/layer1/layer1.0/conv1/Conv_output_0"), with batch-norm left unfolded. Weights are
random with fixed seeds: convolutions He-scaled (std = sqrt(2 / fan_in)) and batch-norm
statistics random but close to the true ones, so activations stay O(1) through the network.

    python -m edgec.zoo resnet18 -o resnet18.onnx
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 8
PRODUCER = ("pytorch", "2.1.0")


class _Builder:
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
            inputs.append(self.init(f"{prefix}.bias", self._uniform(-0.1, 0.1, cout)))
        p = (k - 1) // 2
        return self.node("Conv", inputs, scope, dilations=[1, 1], group=groups,
                         kernel_shape=[k, k], pads=[p, p, p, p], strides=[stride, stride])

    def bn(self, x: str, prefix: str, scope: str, c: int, gamma: tuple[float, float] = (0.5, 1.0)
           ) -> str:
        # running statistics near what a He-initialised conv produces (mean 0, var ~ 1)
        names = [self.init(f"{prefix}.{n}", a) for n, a in (
            ("weight", self._uniform(*gamma, c)), ("bias", self._uniform(-0.2, 0.2, c)),
            ("running_mean", self._uniform(-0.2, 0.2, c)),
            ("running_var", self._uniform(0.6, 1.6, c)))]
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
                 self.init(f"{prefix}.bias", self._uniform(-0.1, 0.1, cout))]
        return self.node("Gemm", [x, *names], scope, alpha=1.0, beta=1.0, transB=1)

    def unsqueeze(self, x: str, axes: list[int], scope: str = "") -> str:
        if self.opset < 13:
            return self.node("Unsqueeze", [x], scope, axes=axes)
        return self.node("Unsqueeze", [x, self.constant(np.array(axes, np.int64), scope)], scope)

    def _uniform(self, lo: float, hi: float, n: int) -> np.ndarray:
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


# -- ResNet-18 ---------------------------------------------------------------------------------

def resnet18(opset: int = 13, batch: int = 1, seed: int = 0) -> onnx.ModelProto:
    """torchvision ResNet-18 at [batch, 3, 224, 224] -> [batch, 1000]."""
    b = _Builder(seed, opset)
    x = b.conv("input", "conv1", "/conv1", 3, 64, 7, stride=2)
    x = b.bn(x, "bn1", "/bn1", 64)
    x = b.node("Relu", [x], "/relu")
    x = b.node("MaxPool", [x], "/maxpool", ceil_mode=0, dilations=[1, 1], kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], strides=[2, 2])
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512), start=1):
        for blk in range(2):
            stride = 2 if stage > 1 and blk == 0 else 1
            x = _basic_block(b, x, f"layer{stage}.{blk}", cin, cout, stride)
            cin = cout
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.node("Flatten", [x], "", axis=1)
    x = b.gemm(x, "fc", "/fc", 512, 1000)
    return b.model("main_graph", {"input": [batch, 3, 224, 224]}, "output", [batch, 1000], x)


def _basic_block(b: _Builder, x: str, prefix: str, cin: int, cout: int, stride: int) -> str:
    layer = prefix.split(".")[0]
    scope = f"/{layer}/{prefix}"
    y = b.conv(x, f"{prefix}.conv1", f"{scope}/conv1", cin, cout, 3, stride)
    y = b.bn(y, f"{prefix}.bn1", f"{scope}/bn1", cout)
    y = b.node("Relu", [y], f"{scope}/relu")
    y = b.conv(y, f"{prefix}.conv2", f"{scope}/conv2", cout, cout, 3)
    # a smaller gamma on the residual branch keeps the sum of the stages near unit scale
    y = b.bn(y, f"{prefix}.bn2", f"{scope}/bn2", cout, gamma=(0.2, 0.5))
    if stride != 1 or cin != cout:
        ds = f"{scope}/downsample"
        x = b.conv(x, f"{prefix}.downsample.0", f"{ds}/downsample.0", cin, cout, 1, stride)
        x = b.bn(x, f"{prefix}.downsample.1", f"{ds}/downsample.1", cout)
    y = b.node("Add", [y, x], scope)
    return b.node("Relu", [y], f"{scope}/relu_1")


# -- MobileNetV2 -------------------------------------------------------------------------------

# (expansion t, output channels c, repeats n, first stride s), as in torchvision
_MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                 (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet_v2(opset: int = 13, batch: int = 1, seed: int = 0) -> onnx.ModelProto:
    """torchvision MobileNetV2 at [batch, 3, 224, 224] -> [batch, 1000].

    The classifier input is flattened with `x.view(x.size(0), -1)` as older torch exported it:
    Shape -> Gather -> Unsqueeze -> Concat -> Reshape (the frontend folds it away).
    """
    b = _Builder(seed, opset)
    x = _conv_bn_relu6(b, "input", "features.0", "/features", 3, 32, 3, 2)
    cin, idx = 32, 1
    for t, c, n, s in _MOBILENET_V2:
        for i in range(n):
            x = _inverted_residual(b, x, f"features.{idx}", cin, c, s if i == 0 else 1, t)
            cin, idx = c, idx + 1
    x = _conv_bn_relu6(b, x, f"features.{idx}", "/features", cin, 1280, 1, 1)
    x = b.node("GlobalAveragePool", [x], "")
    shape = b.node("Shape", [x], "")
    dim0 = b.node("Gather", [shape, b.constant(np.array(0, np.int64))], "", axis=0)
    dim0 = b.unsqueeze(dim0, [0])
    target = b.node("Concat", [dim0, b.constant(np.array([-1], np.int64))], "", axis=0)
    x = b.node("Reshape", [x, target], "")
    x = b.gemm(x, "classifier.1", "/classifier/classifier.1", 1280, 1000)
    return b.model("main_graph", {"input": [batch, 3, 224, 224]}, "output", [batch, 1000], x)


def _conv_bn_relu6(b: _Builder, x: str, prefix: str, parent: str, cin: int, cout: int, k: int,
                   stride: int, groups: int = 1) -> str:
    """torchvision's Conv2dNormActivation `prefix` (children .0 conv, .1 bn, .2 ReLU6).

    torch scopes a Sequential's child by "<sequential>.<index>": parent/conv.0/conv.0.0/Conv.
    """
    local = ".".join(prefix.split(".")[-2:])
    scope = f"{parent}/{local}"
    x = b.conv(x, f"{prefix}.0", f"{scope}/{local}.0", cin, cout, k, stride, groups)
    # a larger gamma so that some activations reach ReLU6's upper bound
    x = b.bn(x, f"{prefix}.1", f"{scope}/{local}.1", cout, gamma=(0.7, 1.5))
    return b.relu6(x, f"{scope}/{local}.2")


def _inverted_residual(b: _Builder, x: str, prefix: str, cin: int, cout: int, stride: int,
                       t: int) -> str:
    block = f"/features/{prefix}"
    scope = f"{block}/conv"
    hidden = cin * t
    y, i = x, 0
    if t != 1:
        y = _conv_bn_relu6(b, y, f"{prefix}.conv.0", scope, cin, hidden, 1, 1)
        i = 1
    y = _conv_bn_relu6(b, y, f"{prefix}.conv.{i}", scope, hidden, hidden, 3, stride,
                       groups=hidden)
    y = b.conv(y, f"{prefix}.conv.{i + 1}", f"{scope}/conv.{i + 1}", hidden, cout, 1)
    y = b.bn(y, f"{prefix}.conv.{i + 2}", f"{scope}/conv.{i + 2}", cout)
    if stride == 1 and cin == cout:
        y = b.node("Add", [x, y], block)
    return y


# -- small models ------------------------------------------------------------------------------

def mlp(opset: int = 13, seed: int = 0) -> onnx.ModelProto:
    """784-512-256-10 perceptron (Gemm + Relu, Gemm + Relu, Gemm) at batch 1."""
    b = _Builder(seed, opset)
    x = "input"
    sizes = (784, 512, 256, 10)
    for i in range(3):
        x = b.gemm(x, f"fc{i + 1}", f"/fc{i + 1}", sizes[i], sizes[i + 1])
        if i < 2:
            x = b.node("Relu", [x], f"/relu{i + 1}")
    return b.model("main_graph", {"input": [1, 784]}, "output", [1, 10], x)


def tiny_cnn(opset: int = 13, seed: int = 0) -> onnx.ModelProto:
    """[1, 3, 32, 32] -> [1, 10]: conv/2, bn, relu, maxpool, conv/2, relu, avgpool, gemm (~7 KB)."""
    b = _Builder(seed, opset)
    x = b.conv("input", "conv1", "/conv1", 3, 8, 3, stride=2)
    x = b.bn(x, "bn1", "/bn1", 8)
    x = b.node("Relu", [x], "/relu")
    x = b.node("MaxPool", [x], "/pool", ceil_mode=0, kernel_shape=[2, 2], pads=[0, 0, 0, 0],
               strides=[2, 2])
    x = b.conv(x, "conv2", "/conv2", 8, 16, 3, stride=2, bias=True)
    x = b.node("Relu", [x], "/relu_1")
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.node("Flatten", [x], "", axis=1)
    x = b.gemm(x, "fc", "/fc", 16, 10)
    return b.model("main_graph", {"input": [1, 3, 32, 32]}, "output", [1, 10], x)


MODELS = {"resnet18": resnet18, "mobilenet_v2": mobilenet_v2, "mlp": mlp, "tiny_cnn": tiny_cnn}


def save(model: onnx.ModelProto, path: str | Path) -> Path:
    """Write `model` to `path` (folders created as needed); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m edgec.zoo",
                                 description="Write one of edgec's example models as ONNX.")
    ap.add_argument("name", choices=sorted(MODELS))
    ap.add_argument("-o", "--output", help="file to write (default NAME.onnx)")
    ap.add_argument("--opset", type=int, default=13, help="ONNX opset, 11..21 (default 13)")
    args = ap.parse_args(argv)
    try:
        model = MODELS[args.name](opset=args.opset)
    except ValueError as e:
        ap.error(str(e))
    path = save(model, args.output or f"{args.name}.onnx")
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
