"""Weight packing: the constant weights of blocked integer convolutions and integer GEMMs
stored as their kernels read them (ir/encodings.py), so the text IR and the artifact show
the encoding.

    BlockedQLinearConv(x, sx, zx, W, sw, zw, sy, zy, b){...}
        -> BlockedQLinearConv(x, sx, zx, P, sw, -, sy, zy, b){..., wenc="dot4 l16 x16 m2",
                                                              wshape=[M, C, KH, KW]}

P holds W - zw in the tile's order; two weights to a byte ("nib") where every centred weight
fits 4 bits (int4, int3 and int2 weights: half the bytes of int8, unpacked in the tile). The
tile's output blocks per group (M of the encoding) follow the target's register count
(`registers`) and the output row, as `encodings.qconv_blocks` chooses them. Depthwise weights
are stored [cb][kh][kw][lane] in int8 (widened in the tile), never nibble-packed: they are a
few kilobytes a model. Weights shared by several nodes are packed once per encoding.

    QGemm(a, sa, za, B, sb, zb, c, sy, zy){transB=1}
        -> QGemm(a, sa, za, P, sb, zb, c, sy, zy){transB=0, benc="gemm l16 v2", bshape=[K, N]}

With `lanes` (the target's int32 lanes; 0 leaves them alone), the constant int8 B [K, N] of a
MatMulInteger, QLinearMatMul or QGemm that the int8 GEMM micro-kernel takes (`gemm_matrix`)
is stored in its panels (two to a byte where B fits 4 bits); QGemm's transB is applied.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import DType, Graph, Node
from ..ir.encodings import (
    QConvWeights,
    decode_qconv,
    encode_gemm,
    encode_qconv,
    gemm_encoding,
    qconv_encoding,
    qconv_group_share,
)
from ..ir.ops.quant import centred_conv_weights
from .manager import register_pass


def weight_encoding(node: Node, wc: np.ndarray, registers: int, sparse: int = -1
                    ) -> QConvWeights:
    """The encoding the kernel of BlockedQLinearConv `node` reads for centred weights `wc`
    (`sparse` as in encodings.qconv_encoding)."""
    y = node.output.shape
    return qconv_encoding(node.attrs["block"], node.attrs["group"] > 1,
                          node.inputs[0].shape[-1], y[1], y[3], wc, registers, sparse)


# (A, A's zero point, B, B's zero point) inputs of the integer GEMMs
_GEMM_INPUTS = {"MatMulInteger": (0, 2, 1, 3), "QLinearMatMul": (0, 2, 3, 5),
                "QGemm": (0, 2, 3, 5)}


def gemm_matrix(node: Node) -> np.ndarray | None:
    """The constant int8 B [K, N] of an integer GEMM that the int8 GEMM micro-kernel runs
    (kernels/quant_gemm.py `vector_int8_gemm`: A's zero point per tensor, B's constant per tensor
    or per column, constant scales with A's per tensor, QGemm without transA and with a
    per-column bias), or None."""
    if node.op not in _GEMM_INPUTS or node.attrs.get("benc"):
        return None
    ia, iza, ib, izb = _GEMM_INPUTS[node.op]
    a, za, b, zb = (node.input(i) for i in (ia, iza, ib, izb))
    if not b.is_const or b.dtype is not DType.I8 or len(b.shape) != 2:
        return None
    if a.dtype not in (DType.U8, DType.I8) or node.output.dtype in (DType.U16, DType.I16):
        return None  # (W8A16: the scalar kernels)
    bmat = b.const.T if node.op == "QGemm" and node.attrs["transB"] else b.const
    k, n = bmat.shape
    if not a.shape or a.shape[-1] != k or k < 4 or n == 0:
        return None
    if za is not None and za.type.numel != 1:
        return None
    if zb is not None and not (zb.is_const and (zb.type.numel == 1 or tuple(zb.shape) == (n,))):
        return None
    if node.op != "MatMulInteger":
        scales = [node.input(i) for i in ((1, 4, 6) if node.op == "QLinearMatMul" else (1, 4, 7))]
        if not all(v.is_const for v in scales) or scales[0].type.numel != 1:
            return None
    if node.op == "QGemm":
        c = node.input(6)
        if node.attrs["transA"] or len(a.shape) != 2:
            return None
        if c is not None and (not c.is_const or c.type.numel not in (1, n) or
                              (za is not None and not za.is_const)):
            return None
    return np.ascontiguousarray(bmat)


@register_pass("pack-weights")
def pack_weights(graph: Graph, *, registers: int = 16, lanes: int = 0, sparse: int = -1) -> bool:
    """Store the weights of blocked integer convolutions and integer GEMMs in their kernels'
    encoding (`sparse` 0 or 1: dense or sparse dot4 groups, for the convolutions' tile and
    the GEMMs' encoding, "gemm lL vV sparse"; -1: by the share of groups that hold a
    weight)."""
    packed: dict = {}
    changed = False
    for node in list(graph.nodes):
        if lanes >= 4 and node.op in _GEMM_INPUTS:
            changed |= _pack_gemm(graph, node, lanes, packed, sparse)
            continue
        if node.op != "BlockedQLinearConv":
            continue
        if node.attrs.get("wenc"):  # packed: `sparse` may still switch the tile
            changed |= _switch_tile(node, sparse)
            continue
        w, zw = node.inputs[3], node.input(5)
        if not w.is_const or (zw is not None and not zw.is_const):
            continue
        wc = centred_conv_weights(w.const, None if zw is None else zw.const)
        enc = weight_encoding(node, wc, registers, sparse)
        key = (id(w), id(zw), str(enc))
        if key not in packed:
            packed[key] = graph.const(encode_qconv(wc, enc), f"{w.name}_packed")
        graph.set_input(node, 3, packed[key])
        if zw is not None:
            graph.set_input(node, 5, None)
        node.attrs["wenc"], node.attrs["wshape"] = str(enc), list(w.shape)
        changed = True
    return changed


def _switch_tile(node: Node, sparse: int) -> bool:
    """A packed convolution's encoding with `sparse` 0 or 1 (the same bytes: only the tile
    that reads them changes); -1 keeps it."""
    enc = QConvWeights.parse(node.attrs["wenc"])
    if sparse == -1 or enc.kind != "dot4" or enc.nibbles or enc.sparse == bool(sparse):
        return False
    if sparse:
        wc = decode_qconv(node.inputs[3].const, enc, node.attrs["wshape"])
        if qconv_group_share(wc, enc.lanes) >= 1:
            return False  # no group to skip
    node.attrs["wenc"] = str(dataclasses.replace(enc, sparse=bool(sparse)))
    return True


def _pack_gemm(graph: Graph, node: Node, lanes: int, packed: dict, sparse: int) -> bool:
    bmat = gemm_matrix(node)
    if bmat is None:
        return False
    ib = _GEMM_INPUTS[node.op][2]
    b = node.inputs[ib]
    enc = gemm_encoding(lanes, bmat, sparse)
    key = (id(b), node.op == "QGemm" and node.attrs["transB"], str(enc))
    if key not in packed:
        packed[key] = graph.const(encode_gemm(bmat, enc), f"{b.name}_packed")
    graph.set_input(node, ib, packed[key])
    if node.op == "QGemm":
        node.attrs["transB"] = 0
    node.attrs["benc"], node.attrs["bshape"] = str(enc), list(bmat.shape)
    return True
