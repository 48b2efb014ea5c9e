"""Kernels of the blocked integer ops: uint8 convolutions on channel-blocked data (dense
through the `dot4` tile, depthwise through the widening tile of `microkernels_int8.py`) and
the padding of their inputs.

The input of a BlockedQLinearConv is padded beforehand (BlockedPad with its zero point), so
every tap of every output lies inside it: the tile sums x * (w - zw) over all taps without
bounds, and a per-channel constant, corr[m] = b[m] - zx * sum (w - zw)[m], centres the sum on
x - zx; with the padding holding zx, the taps in the padding add (zx - zx) * w = 0 as the
op's definition says. Weights are packed at compile time in the order the tile reads them.
The outer loop, over (image, group of output blocks, output row), is parallel; a row is cut
into tiles of R pixels and a shorter one for the rest.
"""

from __future__ import annotations

import numpy as np

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.graph import Node
from ...ir.ops.quant import centred_conv_weights, requantize_multiplier
from .. import microkernels_int8 as mk
from ..kernel_ir import const
from ..lowering import NodeKernelBuilder, kernel
from .blocked import pack_depthwise
from .quant import constant_table

I32, F32 = DType.I32, DType.F32


@kernel("BlockedPad")
def blocked_pad(kb: NodeKernelBuilder, node: Node) -> None:
    x = kb.bind(node.inputs[0], "x")
    v = kb.bind(node.inputs[1], "v")
    y = kb.bind(node.output, "y")
    n, cb, h, w, b = x.shape
    _, _, oh, ow, _ = y.shape
    top, left = node.attrs["pads"][:2]
    right = ow - w - left
    fill = v[0]
    with kb.loop(n * cb * oh, "t", kind="parallel") as t:
        r = kb.local("r", t % oh)
        img = kb.local("img", t // oh)  # image * blocks + block
        row = kb.local("row", t * (ow * b))
        with kb.if_((r >= top) & (r < top + h)):
            src = kb.local("src", (img * h + (r - top)) * (w * b))
            with kb.loop(left * b, "i") as i:
                kb.store(y, row + i, fill)
            with kb.loop(w * b, "i") as i:
                kb.store(y, row + left * b + i, x[src + i])
            with kb.loop(right * b, "i") as i:
                kb.store(y, row + (left + w) * b + i, fill)
        with kb.else_(), kb.loop(ow * b, "i") as i:
            kb.store(y, row + i, fill)


class _QGeo:
    """The shapes of a BlockedQLinearConv over its padded input."""

    def __init__(self, node: Node):
        x, w, y = node.inputs[0].shape, node.inputs[3].shape, node.output.shape
        self.n, self.cbin, self.h, self.w, self.xb = x
        self.m, self.kh, self.kw = w[0], w[2], w[3]
        self.mblocks, self.oh, self.ow = y[1], y[2], y[3]
        self.sh, self.sw = node.attrs["strides"]
        self.dh, self.dw = node.attrs["dilations"]
        self.c = node.attrs["channels"]


def _tables(kb: NodeKernelBuilder, node: Node, wc: np.ndarray, lanes: int):
    """corr (b - zx * sum of W - zw per output channel) and mult (sx * sw / sy), padded with
    zeros to whole blocks."""
    mpad = node.output.shape[1] * lanes
    m = wc.shape[0]
    zx = node.inputs[2]
    zxv = int(zx.const.reshape(-1)[0]) if zx is not None else 0
    b = node.input(8)
    corr = np.zeros(mpad, np.int64)
    corr[:m] = (b.const.astype(np.int64) if b is not None else 0) \
        - zxv * wc.reshape(m, -1).sum(axis=1, dtype=np.int64)
    if np.abs(corr).max(initial=0) >= 2**31:
        raise EdgecError(f"node {node.name}: bias minus zero-point correction overflows int32")
    mult = np.zeros(mpad, np.float32)
    sx, sw, sy = (node.inputs[i].const for i in (1, 4, 6))
    mult[:m] = np.broadcast_to(requantize_multiplier(sx.reshape(()), sw.reshape(-1),
                                                     sy.reshape(())), (m,))
    src = node.inputs[3]
    return (constant_table(kb, corr.astype(np.int32), "corr", src),
            constant_table(kb, mult, "mult", src))


def pack_qconv_weights(wc: np.ndarray, lanes: int, xb: int, mb: int) -> np.ndarray:
    """W - zw [M, C, KH, KW] (int8 range) as groups of mb output blocks (fewer in the last),
    each [cb][kh][kw][g][block j][lane][4] with input channel cb*xb + 4g + q at q, zero past
    M and C."""
    m, c, kh, kw = wc.shape
    mblocks, cbin = -(-m // lanes), -(-c // xb)
    wp = np.zeros((mblocks * lanes, cbin * xb, kh, kw), np.int8)
    wp[:m, :c] = wc
    parts = []
    for g0 in range(0, mblocks, mb):
        g1 = min(mblocks, g0 + mb)
        blk = wp[g0 * lanes:g1 * lanes].reshape(g1 - g0, lanes, cbin, xb // 4, 4, kh, kw)
        # (j, lane, cb, g, q, kh, kw) -> (cb, kh, kw, g, j, lane, q)
        parts.append(blk.transpose(2, 5, 6, 3, 0, 1, 4).reshape(-1))
    return np.ascontiguousarray(np.concatenate(parts))


@kernel("BlockedQLinearConv")
def blocked_qlinear_conv(kb: NodeKernelBuilder, node: Node) -> None:
    lanes = node.attrs["block"]
    if kb.lanes(I32) != lanes or any(node.attrs["pads"]):
        raise EdgecError(f"node {node.name}: a BlockedQLinearConv of block {lanes} needs a "
                         f"target with {lanes}-lane int32 vectors (this one has "
                         f"{kb.lanes(I32)}) and a padded input (pads 0); run the "
                         "layout-nchwc pass with the target's block")
    g = _QGeo(node)
    wc = centred_conv_weights(node.inputs[3].const,
                              None if node.inputs[5] is None else node.inputs[5].const)
    if wc.min(initial=0) < -128 or wc.max(initial=0) > 127:
        raise EdgecError(f"node {node.name}: weights minus their zero point leave int8")
    corr, mult = _tables(kb, node, wc, lanes)
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    zy_v = node.inputs[7]
    zy = const(int(zy_v.const.reshape(-1)[0]) if zy_v is not None else 0, I32)
    out = node.output.dtype
    x_row, x_cb = g.w * g.xb, g.h * g.w * g.xb
    x_img = g.cbin * x_cb
    y_mb = g.oh * g.ow * lanes
    if node.attrs["group"] > 1:
        kb.strategy = "blocked int8 depthwise conv"
        r_max = 8
        # as the float depthwise weights, in int32: [cb][kh][kw][lane]
        w = constant_table(kb, pack_depthwise(wc, lanes), f"qdw{lanes}", node.inputs[3])
        with kb.loop(g.n * g.mblocks * g.oh, "t", kind="parallel") as t:
            oh = kb.local("oh", t % g.oh)
            nc = kb.local("nc", t // g.oh)  # image * blocks + block
            blk = kb.local("blk", nc % g.mblocks)
            for ow0, r in _row_tiles(g.ow, r_max):
                fn = mk.qdepthwise_tile(lanes, r, g.sw * lanes, out)
                xo = nc * x_cb + oh * g.sh * x_row + ow0 * g.sw * lanes
                yo = (nc * g.oh + oh) * g.ow * lanes + ow0 * lanes
                kb.call(fn, (x, xo), (w, blk * (g.kh * g.kw * lanes)), (corr, blk * lanes),
                        (mult, blk * lanes), (y, yo), g.kh, g.kw, g.dh * x_row, g.dw * lanes,
                        g.kw * lanes, zy)
        return
    kb.strategy = "blocked int8 conv dot4"
    mb_max, r_max = mk.qconv_tiles(lanes, kb.target.registers)
    # short rows (14 and 7 pixels: tiles of 7) leave accumulators free: more output blocks
    # per tile keep as many sums in flight (3 x 7 = 21 on AVX-512 instead of 2 x 7 = 14)
    r = max(t for _, t in _row_tiles(g.ow, r_max))
    if r < r_max:  # as many blocks as the registers hold: MB*R sums, MB weights, a broadcast
        spare = kb.target.registers - 1 - (4 if lanes < 16 else 0)  # (widening dot4 temps)
        mb_max = max(mb_max, min(4, spare // (r + 1), mb_max * r_max // r))
    mb_max = min(mb_max, g.mblocks)
    groups = g.xb // 4
    w = constant_table(kb, pack_qconv_weights(wc, lanes, g.xb, mb_max),
                       f"q{lanes}m{mb_max}x{g.xb}", node.inputs[3])
    ngroups = -(-g.mblocks // mb_max)
    w_kw = groups * 4 * lanes  # per output block
    w_kh, w_cb = g.kw * w_kw, g.kh * g.kw * w_kw
    with kb.loop(g.n * ngroups * g.oh, "t", kind="parallel") as t:
        oh = kb.local("oh", t % g.oh)
        grp = kb.local("grp", (t // g.oh) % ngroups)
        n = kb.local("n", t // (g.oh * ngroups))
        full, rest = g.mblocks // mb_max, g.mblocks % mb_max
        variants = [(mb_max, grp < full)] if full else []
        variants += [(rest, grp >= full)] if rest else []
        for mb, cond in variants:
            with kb.if_(cond if len(variants) > 1 else const(True)):
                wgrp = grp * (mb_max * w_cb * g.cbin)
                for ow0, r in _row_tiles(g.ow, r_max):
                    fn = mk.qconv_tile(lanes, mb, r, g.sw * g.xb, groups, out)
                    xo = n * x_img + oh * g.sh * x_row + ow0 * g.sw * g.xb
                    yo = ((n * g.mblocks + grp * mb_max) * g.oh + oh) * g.ow * lanes \
                        + ow0 * lanes
                    kb.call(fn, (x, xo), (w, wgrp), (corr, grp * mb_max * lanes),
                            (mult, grp * mb_max * lanes), (y, yo), g.cbin, g.kh, g.kw,
                            x_cb, g.dh * x_row, g.dw * g.xb, mb * w_cb, mb * w_kh, y_mb, zy)


def _row_tiles(ow: int, r_max: int) -> list[tuple[int, int]]:
    """(first pixel, pixels) of the tiles along a row: as few as R allows, of even sizes (a
    row of 14 is two tiles of 7, not 12 and a 2-pixel tile that wastes the registers)."""
    n = -(-ow // r_max)
    base, extra = divmod(ow, n)
    sizes = [base + 1] * extra + [base] * (n - extra)
    return [(sum(sizes[:k]), r) for k, r in enumerate(sizes)]
