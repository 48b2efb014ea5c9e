"""The benchmark models: torchvision's ResNet-18 and MobileNetV2, the MLP (784-512-256-10) and
a tiny CNN, with batch-norm left unfolded as torch exports them."""

from __future__ import annotations

import numpy as np
import onnx

from .builder import Builder

# -- ResNet-18 ---------------------------------------------------------------------------------

def resnet18(opset: int = 13, batch: int = 1, seed: int = 0, width: int = 64, size: int = 224,
             classes: int = 1000) -> onnx.ModelProto:
    """torchvision ResNet-18 at [batch, 3, 224, 224] -> [batch, 1000]; `width`, `size` and
    `classes` make a reduced one (the stages' channels width x 1, 2, 4, 8, the input's side,
    the classes) of the same topology."""
    b = Builder(seed, opset)
    x = b.conv("input", "conv1", "/conv1", 3, width, 7, stride=2)
    x = b.bn(x, "bn1", "/bn1", width)
    x = b.node("Relu", [x], "/relu")
    x = b.node("MaxPool", [x], "/maxpool", ceil_mode=0, dilations=[1, 1], kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], strides=[2, 2])
    cin = width
    for stage, cout in enumerate((width, 2 * width, 4 * width, 8 * width), start=1):
        for blk in range(2):
            stride = 2 if stage > 1 and blk == 0 else 1
            x = _basic_block(b, x, f"layer{stage}.{blk}", cin, cout, stride)
            cin = cout
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.node("Flatten", [x], "", axis=1)
    x = b.gemm(x, "fc", "/fc", 8 * width, classes)
    return b.model("main_graph", {"input": [batch, 3, size, size]}, "output", [batch, classes],
                   x)


def _basic_block(b: Builder, x: str, prefix: str, cin: int, cout: int, stride: int) -> str:
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
    b = Builder(seed, opset)
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


def _conv_bn_relu6(b: Builder, x: str, prefix: str, parent: str, cin: int, cout: int, k: int,
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


def _inverted_residual(b: Builder, x: str, prefix: str, cin: int, cout: int, stride: int,
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
    b = Builder(seed, opset)
    x = "input"
    sizes = (784, 512, 256, 10)
    for i in range(3):
        x = b.gemm(x, f"fc{i + 1}", f"/fc{i + 1}", sizes[i], sizes[i + 1])
        if i < 2:
            x = b.node("Relu", [x], f"/relu{i + 1}")
    return b.model("main_graph", {"input": [1, 784]}, "output", [1, 10], x)


def tiny_cnn(opset: int = 13, seed: int = 0) -> onnx.ModelProto:
    """[1, 3, 32, 32] -> [1, 10]: conv/2, bn, relu, maxpool, conv/2, relu, avgpool, gemm (~7 KB)."""
    b = Builder(seed, opset)
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
