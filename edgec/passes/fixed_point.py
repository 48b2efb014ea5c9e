"""Fixed-point requantization: the blocked integer convolutions, the integer GEMMs on the
int8 micro-kernel (QLinearMatMul, QGemm: pack_weights.gemm_matrix) and the integer
GlobalAveragePool (QLinearGlobalAveragePool) rescale their int32 sums
with an integer multiplier and a shift instead of a float32 multiply, and QLinearAdd adds its
rescaled operands in 32-bit integers (ir/ops/quant.py add_fixed_point).

    BlockedQLinearConv(x, sx, zx, W, sw, zw, sy, zy, b){...}
        -> BlockedQLinearConv(...){..., rq_mult=[q per output channel], rq_shift=s}

with q / 2^s = sx * sw / sy (ir/ops/quant.py fixed_point_multipliers; one shift per node, so
the tile shifts by a scalar) and the result round(acc * q / 2^s) from the exact 64-bit
product, rounded half up. The text IR shows the integers; the kernels and the interpreter
compute the same ones (kernel_ir.mulshift). A node keeps float requantization where its
multipliers cannot be held this way (one >= 0.25, or channels spanning more than 2^16), and
the report's strategy says which each node got.

With `scalar` (the HLS target's pipeline: integer arithmetic only) the plain NCHW QLinearConv
and the scalar integer GEMMs (QLinearMatMul, QGemm of 8-bit A with constant scales) get the
same multipliers, so they compute exactly what the blocked and packed kernels of a vector
target compute for the same model.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..ir.ops.quant import (
    INT16,
    add_fixed_point,
    add_ratios,
    fixed_point_multipliers,
    gap_min_shift,
    gap_multiplier,
    qgemm_multiplier,
    requantize_multiplier,
)
from .manager import register_pass
from .pack_weights import gemm_matrix


def _multipliers(node: Node, scalar: bool) -> np.ndarray | None:
    """The float32 multipliers (one, or one per output channel or column) of a node this
    pass can give fixed-point requantization."""
    if node.op == "BlockedQLinearConv" or (scalar and node.op == "QLinearConv"):
        sx, sw, sy = (node.inputs[i] for i in (1, 4, 6))
        if not all(v.is_const for v in (sx, sw, sy)) or node.inputs[0].dtype in INT16:
            return None
        return requantize_multiplier(sx.const.reshape(()), sw.const.reshape(-1),
                                     sy.const.reshape(()))
    if node.op == "QLinearGlobalAveragePool":
        sx, sy = node.inputs[1], node.inputs[3]
        if not (sx.is_const and sy.is_const):
            return None
        return gap_multiplier(sx.const, sy.const, int(np.prod(node.inputs[0].shape[2:])))
    if node.op not in ("QLinearMatMul", "QGemm"):
        return None
    scales = (1, 4, 7) if node.op == "QGemm" else (1, 4, 6)
    if scalar and not node.attrs.get("benc"):  # (the scalar integer GEMM's rows)
        if node.inputs[0].dtype in INT16 or not all(
                node.input(i) is not None and node.input(i).is_const for i in scales) or \
                node.inputs[1].const.size != 1:  # (a scale per row of A: one multiplier
            return None                           # per column is what the kernels take)
    elif not node.attrs.get("benc") and gemm_matrix(node) is None:
        return None  # (packed, or what the int8 GEMM micro-kernel runs)
    if node.op == "QGemm":
        return qgemm_multiplier(node.attrs["alpha"], *(node.inputs[i].const for i in (1, 4, 7)))
    sa, sb, sy = (node.inputs[i].const for i in (1, 4, 6))
    return requantize_multiplier(sa.reshape(()), sb.reshape(-1), sy.reshape(()))


@register_pass("fixed-point")
def fixed_point(graph: Graph, scalar: bool = False) -> bool:
    """Requantize the blocked integer convolutions and the int8 GEMMs with integer
    multipliers and shifts (`scalar`: also the plain NCHW QLinearConv and the integer GEMMs
    of scalar code, as a target that computes in integers only needs)."""
    changed = False
    for node in graph.nodes:
        if node.attrs.get("rq_shift"):
            continue
        if node.op == "QLinearAdd":
            changed |= _fixed_add(node)
            continue
        mult = _multipliers(node, scalar)
        if mult is None:
            continue
        # a mean's sums are small: they may be shifted left before a multiplier >= 0.25
        fixed = fixed_point_multipliers(mult, gap_min_shift(int(np.prod(
            node.inputs[0].shape[2:])))) if node.op == "QLinearGlobalAveragePool" else \
            fixed_point_multipliers(mult)
        if fixed is None:
            continue
        q, s = fixed
        node.attrs["rq_mult"], node.attrs["rq_shift"] = [int(v) for v in q], s
        changed = True
    return changed


def _fixed_add(node: Node) -> bool:
    """A QLinearAdd with constant scales: its two ratios as 21-bit integers and a shift."""
    scales = [node.inputs[i] for i in (1, 4, 6)]
    if not all(v.is_const for v in scales) or any(
            v.dtype in INT16 for v in (node.inputs[0], node.inputs[3], node.output)):
        return False  # (16-bit operands would pass the 32-bit sums)
    fixed = add_fixed_point(*add_ratios(*(v.const for v in scales)))
    if fixed is None:
        return False
    node.attrs["rq_mult"], node.attrs["rq_shift"] = fixed
    return True
