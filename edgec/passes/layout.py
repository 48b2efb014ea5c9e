"""Layout selection: run the convolutional part of a model in channel-blocked NCHWc.

With a block of b channels (the vector lanes of the target: 16 floats for AVX-512, 8 for
AVX2), the b channels of one pixel are one vector register, so a convolution's output tile
is a set of vector accumulators, a depthwise convolution or a pool is pure vector code, and
no kernel ever gathers across channels. The pass rewrites, in graph order:

- float 2-D Conv/FusedConv with constant weights, dense (group 1) or depthwise, whose
  activation the vector epilogue implements, into BlockedConv; a stem convolution with fewer
  than b input channels reads its NCHW input directly (blocked_input = 0);
- MaxPool/AveragePool (2-D, no dilation or ceil mode) and global pools whose input is
  blocked, into BlockedPool;
- elementwise ops whose operands are all blocked (same shape) or constants that broadcast
  per channel (reblocked at compile time) or scalars, into the same op on blocked tensors.

A ReorderToBlocked goes where a converted op reads a plain value and a ReorderFromBlocked
where a plain op (or a graph output) reads a converted one, so the model's API keeps its own
layout and conversions happen only at the borders of blocked regions.
"""

from __future__ import annotations

import numpy as np

from ..ir import DType, Graph, Node, Value
from ..ir.ops.fused import VECTOR_ACTIVATIONS
from ..ir.ops.layout import INT8, to_blocked
from ..ir.ops.quant import centred_conv_weights
from .manager import register_pass

# elementwise ops that are applied to blocked tensors unchanged (their padding channels stay
# finite: every op maps finite inputs to finite outputs)
ELEMENTWISE = frozenset({"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                         "HardSwish", "Add", "Sub", "Mul", "Identity", "Neg", "Abs"})


class _Layout:
    def __init__(self, graph: Graph, block: int):
        self.g, self.b = graph, block
        self.twin: dict[int, Value] = {}  # id(plain value) -> its blocked form
        self.converted: list[tuple[Node, Node]] = []  # (original, blocked replacement)
        self.narrow: dict[tuple[int, int], Value] = {}  # (id(plain value), block) -> blocked
        self.pads: dict[tuple[int, tuple], Value] = {}  # (id(blocked), pads) -> padded
        self.zps: dict[tuple, Value] = {}  # zero points + 128 of int8 values

    def blocked(self, v: Value, before: Node) -> Value:
        """The blocked form of `v`, reordering it in front of `before` if it has none (int8
        values as uint8 + 128)."""
        if id(v) not in self.twin:
            r = self.g.add_node("ReorderToBlocked", [v], {"block": self.b, "shift": _shift(v)},
                                name=f"{v.name}_to_nchwc", before=before)
            self.twin[id(v)] = r.output
        return self.twin[id(v)]

    def replace(self, node: Node, op: str, inputs: list, attrs: dict) -> None:
        new = self.g.add_node(op, inputs, attrs, name=f"{node.name}_nchwc", before=node)
        new.inherit(node)  # the analyses' figures (sparsify's) go on to the report
        self.twin[id(node.outputs[0])] = new.output  # (a MaxPool may have unused indices)
        self.converted.append((node, new))

    # -- the ops -------------------------------------------------------------------------
    def conv(self, node: Node) -> bool:
        x, w = node.inputs[0], node.inputs[1]
        a = node.attrs
        b = node.input(2)
        # the blocked kernel packs weights and bias at compile time
        if (x.type.rank != 4 or x.dtype.np != np.float32 or not w.is_const
                or (b is not None and not b.is_const)):
            return False
        c, m, group = x.shape[1], w.shape[0], a["group"]
        depthwise = group > 1 and group == c == m
        if (group != 1 and not depthwise) or a.get("activation", "") not in VECTOR_ACTIVATIONS:
            return False
        plain_input = not depthwise and id(x) not in self.twin and c < self.b
        xin = x if plain_input else self.blocked(x, node)
        z = node.input(3)
        inputs = [xin, w, node.input(2)] + ([self.blocked(z, node)] if z is not None else [])
        attrs = {k: a[k] for k in ("dilations", "group", "pads", "strides")}
        attrs |= {"activation": a.get("activation", ""),
                  "activation_params": list(a.get("activation_params", [])),
                  "channels": c, "block": self.b, "blocked_input": 0 if plain_input else 1}
        self.replace(node, "BlockedConv", inputs, attrs)
        return True

    def pool(self, node: Node) -> bool:
        x = node.inputs[0]
        if id(x) not in self.twin or x.type.rank != 4:
            return False
        a = node.attrs
        if node.op in ("GlobalAveragePool", "GlobalMaxPool"):
            attrs = {"mode": "avg" if node.op == "GlobalAveragePool" else "max",
                     "kernel_shape": []}
        else:
            if len(node.outputs) > 1 and (node.outputs[1].uses or
                                          node.outputs[1] in self.g.outputs):
                return False  # MaxPool indices are defined on the plain layout
            if a["ceil_mode"] or any(d != 1 for d in a["dilations"]):
                return False
            attrs = {"mode": "max" if node.op == "MaxPool" else "avg",
                     "kernel_shape": list(a["kernel_shape"]), "strides": list(a["strides"]),
                     "pads": list(a["pads"]),
                     "count_include_pad": a.get("count_include_pad", 0)}
        if not x.dtype.is_float and attrs["mode"] != "max":
            return False  # an integer average would need the quantized op's rounding
        attrs["channels"] = x.shape[1]
        self.replace(node, "BlockedPool", [self.twin[id(x)]], attrs)
        return True

    def elementwise(self, node: Node) -> bool:
        out = node.outputs[0]
        if len(node.outputs) != 1 or out.type.rank != 4 or not out.dtype.is_float:
            return False
        ins: list = []
        for v in node.inputs:
            if v is None or (v.is_const and v.const.size == 1):
                ins.append(v)
            elif id(v) in self.twin and v.shape == out.shape:
                ins.append(self.twin[id(v)])
            elif v.is_const and v.shape in ((1, out.shape[1], 1, 1), (out.shape[1], 1, 1)):
                per_channel = v.const.reshape(1, -1, 1, 1)
                ins.append(self.g.const(to_blocked(per_channel, self.b), f"{v.name}_nchwc"))
            else:
                return False
        if not any(id(v) in self.twin for v in node.inputs if v is not None):
            return False
        self.replace(node, node.op, ins, dict(node.attrs))
        return True

    # -- integer ops (8-bit activations) ----------------------------------------------------
    def narrow_blocked(self, v: Value, block: int, before: Node) -> Value:
        """`v` reordered to a block of `block` < b channels (a stem's few input channels)."""
        key = (id(v), block)
        if key not in self.narrow:
            r = self.g.add_node("ReorderToBlocked", [v], {"block": block, "shift": _shift(v)},
                                name=f"{v.name}_to_nchwc{block}", before=before)
            self.narrow[key] = r.output
        return self.narrow[key]

    def padded(self, x: Value, zx: Value, pads: list[int], before: Node) -> Value:
        """`x` (blocked) with its planes padded by the zero point zx; `pads` in ONNX's order,
        [top, left, bottom, right]."""
        spec = list(pads[:4])
        if not any(spec):
            return x
        key = (id(x), tuple(spec))
        if key not in self.pads:
            p = self.g.add_node("BlockedPad", [x, zx], {"pads": spec},
                                name=f"{x.name}_pad", before=before)
            self.pads[key] = p.output
        return self.pads[key]

    def zero_point(self, of: Value, z: Value) -> Value:
        """The zero point `z` of `of` as its blocked form reads it: + 128 for int8 values."""
        if of.dtype is DType.U8:
            return z
        key = (id(z), "+128")
        if key not in self.zps:
            v = int(z.const.reshape(-1)[0]) + 128
            self.zps[key] = self.g.const(np.asarray(v, np.uint8), f"{z.name}_u8")
        return self.zps[key]

    def qconv(self, node: Node) -> bool:
        """A QLinearConv on 8-bit activations (dense or depthwise, 2-D, constant weights and
        quantization parameters, weights minus their zero point in int8) into
        BlockedQLinearConv over a padded input; int8 activations run as uint8 + 128."""
        x, sx, zx, w, sw, zw, sy, zy, b = (node.input(i) for i in range(9))
        if (x.type.rank != 4 or x.dtype not in INT8 or node.output.dtype not in INT8
                or any(v is not None and not v.is_const for v in (sx, zx, w, sw, zw, sy, zy, b))
                or zx is None or zy is None or zx.type.numel != 1 or zy.type.numel != 1):
            return False
        wc = centred_conv_weights(w.const, None if zw is None else zw.const)
        if wc.min(initial=0) < -128 or wc.max(initial=0) > 127:
            return False
        c, m, group = x.shape[1], w.shape[0], node.attrs["group"]
        depthwise = group > 1 and group == c == m
        if group != 1 and not depthwise:
            return False
        if id(x) in self.twin:
            xin = self.twin[id(x)]
        elif not depthwise and c < self.b:
            xin = self.narrow_blocked(x, min(self.b, -(-c // 4) * 4), node)
        else:
            xin = self.blocked(x, node)
        zx = self.zero_point(x, zx)
        xin = self.padded(xin, zx, list(node.attrs["pads"]), node)
        attrs = {k: node.attrs[k] for k in ("dilations", "group", "strides")}
        attrs |= {"pads": [0, 0, 0, 0], "channels": c, "block": self.b}
        ins = [xin, sx, zx, w, sw, zw, sy, self.zero_point(node.output, zy), b]
        self.replace(node, "BlockedQLinearConv", ins, attrs)
        return True

    def qadd(self, node: Node) -> bool:
        """A QLinearAdd of two 8-bit tensors of one shape, at least one of them blocked, with
        constant scalar parameters: the same op on the blocked tensors."""
        a, b = node.inputs[0], node.inputs[3]
        params = [node.input(i) for i in (1, 2, 4, 5, 6, 7)]
        if (a.shape != b.shape or a.type.rank != 4 or node.output.dtype not in INT8
                or a.dtype not in INT8 or b.dtype not in INT8
                or any(v is None or not v.is_const or v.type.numel != 1 for v in params)
                or (id(a) not in self.twin and id(b) not in self.twin)):
            return False
        ins = list(node.inputs)
        ins[0], ins[3] = self.blocked(a, node), self.blocked(b, node)
        ins[2], ins[5] = self.zero_point(a, ins[2]), self.zero_point(b, ins[5])
        ins[7] = self.zero_point(node.output, ins[7])
        self.replace(node, "QLinearAdd", ins, {})
        return True

    # -- the rewrite ---------------------------------------------------------------------
    def run(self) -> bool:
        for node in list(self.g.nodes):
            if node.op == "QLinearConv":
                self.qconv(node)
            elif node.op == "QLinearAdd":
                self.qadd(node)
            elif node.op in ("Conv", "FusedConv"):
                self.conv(node)
            elif node.op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"):
                self.pool(node)
            elif node.op in ELEMENTWISE:
                self.elementwise(node)
        gone = {id(old) for old, _ in self.converted}
        for old, new in self.converted:
            for v, vb in zip(old.outputs, new.outputs):
                plain_uses = [(n, i) for n, i in v.uses if id(n) not in gone]
                outputs = [k for k, o in enumerate(self.g.outputs) if o is v]
                if not plain_uses and not outputs:
                    continue
                back = self.g.add_node("ReorderFromBlocked", [vb],
                                       {"channels": v.shape[1], "shift": -_shift(v)},
                                       name=f"{v.name}_from_nchwc", before=old).output
                for n, i in plain_uses:
                    self.g.set_input(n, i, back)
                outs = list(self.g.outputs)
                for k in outputs:
                    outs[k] = back
                if outputs:
                    back.name, v.name = v.name, self.g.fresh_name(v.name)
                self.g.outputs = outs
        for old, _ in reversed(self.converted):
            for v in old.outputs[1:]:  # unused MaxPool indices
                for n, i in list(v.uses):
                    self.g.set_input(n, i, None)
            self.g.remove_node(old)
        return bool(self.converted)


def _shift(v: Value) -> int:
    """What the blocked form adds to `v`: 128 for int8 (run as uint8), else 0."""
    return 128 if v.dtype is DType.I8 else 0


@register_pass("layout-nchwc")
def layout_nchwc(graph: Graph, *, block: int = 16) -> bool:
    """Run convolutions, pools and the elementwise ops between them in blocked NCHWc."""
    if block < 2:
        return False
    return _Layout(graph, block).run()
