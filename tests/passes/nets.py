"""Small ResNet- and MobileNetV2-like graphs built with the graph API, with random weights
and unfolded batch norms, as a frontend imports them from PyTorch."""

from __future__ import annotations

import numpy as np

from edgec.ir import DType, Graph, TensorType, Value


class Net:
    def __init__(self, name: str, shape: tuple[int, ...], seed: int = 0):
        self.g = Graph(name)
        self.rng = np.random.default_rng(seed)
        self.x = self.g.add_input("input", TensorType(shape, DType.F32))

    def const(self, arr, name: str) -> Value:
        return self.g.const(np.asarray(arr, np.float32), name)

    def conv(self, x: Value, cout: int, k: int, stride: int = 1, group: int = 1,
             name: str = "conv") -> Value:
        cin = x.shape[1]
        fan_in = cin // group * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(2 / fan_in)
        p = k // 2
        return self.g.add_node("Conv", [x, self.const(w, f"{name}.weight")], {
            "dilations": [1, 1], "group": group, "pads": [p, p, p, p],
            "strides": [stride, stride]}, name=name).output

    def bn(self, x: Value, name: str = "bn") -> Value:
        c = x.shape[1]
        r = self.rng
        params = [self.const(v, f"{name}.{n}") for n, v in (
            ("weight", r.uniform(0.5, 1.5, c)), ("bias", r.uniform(-0.2, 0.2, c)),
            ("running_mean", r.uniform(-0.2, 0.2, c)), ("running_var", r.uniform(0.5, 1.5, c)))]
        return self.g.add_node("BatchNormalization", [x, *params], name=name).output

    def op(self, op: str, *inputs: Value, **attrs) -> Value:
        return self.g.add_node(op, list(inputs), attrs).output

    def clip6(self, x: Value) -> Value:
        return self.op("Clip", x, self.const(0.0, "zero"), self.const(6.0, "six"))


def resnet_like(seed: int = 0, width: int = 8, size: int = 16, blocks: int = 4) -> Graph:
    """Stem conv-bn-relu, then basic blocks (conv-bn-relu, conv-bn, + shortcut, relu); every
    other block halves the resolution and doubles the width with a 1x1 conv-bn shortcut."""
    n = Net("resnet_like", (1, 3, size, size), seed)
    h = n.op("Relu", n.bn(n.conv(n.x, width, 3, name="stem"), "stem_bn"))
    for i in range(blocks):
        down = i % 2 == 1
        cout = h.shape[1] * (2 if down else 1)
        stride = 2 if down else 1
        a = n.op("Relu", n.bn(n.conv(h, cout, 3, stride, name=f"b{i}c1"), f"b{i}bn1"))
        b = n.bn(n.conv(a, cout, 3, name=f"b{i}c2"), f"b{i}bn2")
        short = n.bn(n.conv(h, cout, 1, stride, name=f"b{i}ds"), f"b{i}dsbn") if down else h
        h = n.op("Relu", n.op("Add", b, short))
    pooled = n.op("ReduceMean", h, n.g.const(np.array([2, 3], np.int64), "axes"))
    flat = n.op("Flatten", pooled)
    w = n.const(n.rng.standard_normal((10, flat.shape[1])) * 0.1, "fc.weight")
    logits = n.op("Gemm", flat, w, n.const(np.zeros(10), "fc.bias"), transB=1)
    n.g.outputs = [logits]
    return n.g


def mobilenet_v2_like(seed: int = 0, size: int = 16) -> Graph:
    """conv-bn-relu6 stem, then inverted residuals: 1x1 expand conv-bn-relu6, 3x3 depthwise
    conv-bn-relu6, 1x1 projection conv-bn, + input when the shape is kept."""
    n = Net("mobilenet_v2_like", (1, 3, size, size), seed)
    h = n.clip6(n.bn(n.conv(n.x, 8, 3, 2, name="stem"), "stem_bn"))
    for i, (cout, stride) in enumerate([(8, 1), (12, 2), (12, 1)]):
        hidden = h.shape[1] * 4
        e = n.clip6(n.bn(n.conv(h, hidden, 1, name=f"b{i}expand"), f"b{i}bn1"))
        d = n.clip6(n.bn(n.conv(e, hidden, 3, stride, group=hidden, name=f"b{i}dw"), f"b{i}bn2"))
        p = n.bn(n.conv(d, cout, 1, name=f"b{i}project"), f"b{i}bn3")
        h = n.op("Add", h, p) if stride == 1 and cout == h.shape[1] else p
    n.g.outputs = [h]
    return n.g
