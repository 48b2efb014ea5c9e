"""Fixed-point requantization: the blocked integer convolutions rescale their int32 sums with
an integer multiplier and a shift instead of a float32 multiply.

    BlockedQLinearConv(x, sx, zx, W, sw, zw, sy, zy, b){...}
        -> BlockedQLinearConv(...){..., rq_mult=[q per output channel], rq_shift=s}

with q / 2^s = sx * sw / sy (ir/ops/quant.py fixed_point_multipliers; one shift per node, so
the tile shifts by a scalar) and the result round(acc * q / 2^s) from the exact 64-bit
product, rounded half up. The text IR shows the integers; the kernels and the interpreter
compute the same ones (kernel_ir.mulshift). A node keeps float requantization where its
multipliers cannot be held this way (one >= 0.25, or channels spanning more than 2^16), and
the report's strategy says which each node got.
"""

from __future__ import annotations

from ..ir import Graph
from ..ir.ops.quant import fixed_point_multipliers, requantize_multiplier
from .manager import register_pass


@register_pass("fixed-point")
def fixed_point(graph: Graph) -> bool:
    """Requantize the blocked integer convolutions with integer multipliers and shifts."""
    changed = False
    for node in graph.nodes:
        if node.op != "BlockedQLinearConv" or node.attrs.get("rq_shift"):
            continue
        sx, sw, sy = (node.inputs[i] for i in (1, 4, 6))
        if not all(v.is_const for v in (sx, sw, sy)):
            continue
        mult = requantize_multiplier(sx.const.reshape(()), sw.const.reshape(-1),
                                     sy.const.reshape(()))
        fixed = fixed_point_multipliers(mult)
        if fixed is None:
            continue
        q, s = fixed
        node.attrs["rq_mult"], node.attrs["rq_shift"] = [int(v) for v in q], s
        changed = True
    return changed
