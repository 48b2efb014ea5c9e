"""Residual adds in the convolution's kernel: a fixed-point QLinearAdd one of whose operands
is a blocked integer convolution's output, read by nothing else, becomes that convolution's
epilogue (ResNet's `conv2 + identity`, MobileNetV2's `project + input`):

    y = BlockedQLinearConv(x, sx, zx, W, sw, zw, sy, zy, b){..., rq_mult, rq_shift}
    z = QLinearAdd(y, sy, zy, r, sr, zr, sc, zc){rq_mult=[qa, qb], rq_shift=s}
        -> z = BlockedQLinearConv(x, ..., b, r, sr, zr, sc, zc){..., add_mult=[qa, qb],
                                                                add_shift=s}

(the conv as the add's second operand: the multipliers swap). The result is the same
integers: the conv's requantized output, clamped to its type, enters the same fixed-point
sum (ir/ops/layout.py), but y is never written to memory nor read back, and the add's loop
over the tensor is gone. Both ops must be fixed point (run after the fixed-point pass), of
one 8-bit type, with the add's parameters for y being the conv's own sy and zy.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Value
from .manager import register_pass
from .rewrite import NoMatch, PatternPass, pattern, replace_value, require, sole_user


def _same_const(a: Value | None, b: Value | None) -> bool:
    if a is None or b is None:
        return a is b or all(v is None or (v.is_const and not v.const.any()) for v in (a, b))
    return a.is_const and b.is_const and np.array_equal(a.const.reshape(-1), b.const.reshape(-1))


def _match(node: Node):
    require(node.attrs.get("rq_shift"), "the add is not fixed point (run fixed-point first)")
    reasons = []
    for i in (0, 3):
        y, r = node.inputs[i], node.inputs[3 - i]
        conv = y.producer
        try:
            require(conv is not None and conv.op == "BlockedQLinearConv",
                    f"%{y.name} is not a blocked integer convolution's output")
            require(conv.attrs.get("rq_shift"), f"{conv.name} is not fixed point")
            require(conv.input(9) is None, f"{conv.name} already adds a residual")
            require(sole_user(y) is node, f"%{y.name} is read elsewhere")
            require(r is not y, "both operands are the convolution's output")
            require(r.type.shape == y.type.shape and r.dtype is y.dtype is node.output.dtype,
                    f"the operands and the sum are not all {y.dtype} of one shape")
            require(_same_const(node.input(i + 1), conv.input(6))
                    and _same_const(node.input(i + 2), conv.input(7)),
                    "the add's scale or zero point for the conv is not the conv's own")
            return conv, i
        except NoMatch as e:
            reasons.append(e.reason)
    return "; ".join(reasons)


@pattern("QLinearAdd", match=_match, name="conv-residual-add")
def _fuse(graph: Graph, node: Node, m) -> None:
    conv, i = m
    ins = [conv.input(k) for k in range(9)]
    ins += [node.inputs[3 - i], node.input(4 - i), node.input(5 - i), node.inputs[6],
            node.input(7)]
    qa, qb = node.attrs["rq_mult"]
    attrs = dict(conv.attrs)
    attrs["add_mult"] = [qa, qb] if i == 0 else [qb, qa]
    attrs["add_shift"] = node.attrs["rq_shift"]
    new = graph.add_node("BlockedQLinearConv", ins, attrs, name=conv.name, before=node)
    # the nodes whose work the kernel does, the conv's first: a per-layer report gives its
    # time to the conv and says the add runs in its kernel
    new.record.fused = (*(conv.record.fused or (conv.name,)), node.name)
    replace_value(graph, node.output, new.output)


FUSE_RESIDUAL_PATTERNS = [_fuse]

register_pass(PatternPass("fuse-residual", FUSE_RESIDUAL_PATTERNS,
                          doc="Run a fixed-point QLinearAdd of a blocked integer convolution's "
                              "output in the convolution's kernel."))
