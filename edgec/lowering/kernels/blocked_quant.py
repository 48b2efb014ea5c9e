"""Kernels of the blocked integer ops: uint8 convolutions on channel-blocked data (dense
through the `dot4` tile, depthwise through the widening tile of `microkernels_int8.py`) and
the padding of their inputs.

The input of a BlockedQLinearConv is padded beforehand (BlockedPad with its zero point), so
every tap of every output lies inside it: the tile sums x * (w - zw) over all taps without
bounds, and a per-channel constant, corr[m] = b[m] - zx * sum (w - zw)[m], centres the sum on
x - zx; with the padding holding zx, the taps in the padding add (zx - zx) * w = 0 as the
op's definition says. The weights come in the order the tile reads them, as the pack-weights
pass stored them (ir/encodings.py: two to a byte where they fit 4 bits).
The outer loop, over (image, group of output blocks, output row), is parallel; a row is cut
into tiles of R pixels and a shorter one for the rest. Int4 weights are unpacked by the tile
as it reads them, or, where the group's weights fit the target's `Tiles.int4_unpack_bytes`,
once per task into a stack buffer the int8 tile reads (a task then runs several rows: 16
tiles or more).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.encodings import (
    QConvWeights,
    decode_qconv,
    encode_qconv,
    qconv_encoding,
    qconv_pairs,
    qconv_tiles,
    row_tiles,
)
from ...ir.graph import Node
from ...ir.ops.quant import centred_conv_weights, requantize_multiplier
from ...kernel_ir.kernel import INDEX, Expr, cast, const
from .. import microkernels_int8 as mk
from ..lower import NodeKernelBuilder, kernel
from ..strategies import Candidate, Kind, roofline
from .quant_common import (
    constant_table,
    dot4_pairdot,
    dot4_pairs16,
    dot4_recentre,
    dot4_sign,
)

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
        x, y = node.inputs[0].shape, node.output.shape
        w = node.attrs["wshape"] if node.attrs.get("wenc") else node.inputs[3].shape
        self.n, self.cbin, self.h, self.w, self.xb = x
        self.m, self.kh, self.kw = w[0], w[2], w[3]
        self.mblocks, self.oh, self.ow = y[1], y[2], y[3]
        self.sh, self.sw = node.attrs["strides"]
        self.dh, self.dw = node.attrs["dilations"]
        self.c = node.attrs["channels"]


def _weights(kb: NodeKernelBuilder, node: Node, g: _QGeo, bind: bool = True):
    """(encoding, centred weights, buffer of the encoded weights): the input as the
    pack-weights pass stored it, or, in a pipeline without that pass, packed here; without
    `bind` no buffer (None): the kernel reads the weights in another form."""
    w = node.inputs[3]
    if node.attrs.get("wenc"):
        enc = QConvWeights.parse(node.attrs["wenc"])
        return enc, decode_qconv(w.const, enc, node.attrs["wshape"]), \
            kb.bind(w, "w") if bind else None
    zw = node.inputs[5]
    wc = centred_conv_weights(w.const, None if zw is None else zw.const)
    if wc.min(initial=0) < -128 or wc.max(initial=0) > 127:
        raise EdgecError(f"node {node.name}: weights minus their zero point leave int8")
    enc = qconv_encoding(node.attrs["block"], node.attrs["group"] > 1, g.xb, g.mblocks, g.ow,
                         wc, kb.target.registers)
    return enc, wc, constant_table(kb, encode_qconv(wc, enc), str(enc).replace(" ", "_"), w) \
        if bind else None


def dot4_groups(wc: np.ndarray, g: _QGeo, lanes: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The stored dot4 groups of centred conv weights `wc` [M, C, KH, KW]: (weight vectors
    [groups, L * 4] int8 ([lane][4]: output channel, input channel), input offsets [groups]
    int32 (bytes: input block, tap, 4-channel group), pointers [output blocks + 1] int32,
    the share of the real channels' groups stored). Per output block, in the dense tile's
    order: input block, kh, kw, group."""
    m, c, kh, kw = wc.shape
    q = g.xb // 4
    w = np.zeros((g.mblocks * lanes, g.cbin * g.xb, kh, kw), np.int8)
    w[:m, :c] = wc
    # [block][cb][kh][kw][group][lane][4]
    v = w.reshape(g.mblocks, lanes, g.cbin, q, 4, kh, kw).transpose(0, 2, 5, 6, 3, 1, 4)
    v = v.reshape(g.mblocks, -1, lanes * 4)
    keep = v.any(axis=2)
    cb, i, j, k = np.unravel_index(np.arange(keep.shape[1]), (g.cbin, kh, kw, q))
    off = cb * (g.h * g.w * g.xb) + i * g.dh * (g.w * g.xb) + j * g.dw * g.xb + 4 * k
    offsets = np.broadcast_to(off, keep.shape)[keep].astype(np.int32)
    ptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int32)
    # the share among the groups of real channels: a dense layer whose channels do not fill
    # the last block (a 3-channel stem) stays on the dense tile
    real = np.broadcast_to(cb * g.xb + 4 * k < c, keep.shape) & \
        (np.arange(g.mblocks * lanes).reshape(g.mblocks, lanes)[:, :1] < m)
    share = float(keep[real].mean()) if real.any() else 1.0
    return v[keep], offsets, ptr, share


def _tables(kb: NodeKernelBuilder, node: Node, wc: np.ndarray, lanes: int, scale: int,
            recentre: bool = False, both: bool = False):
    """(corr, mult, shift): corr (b - zx * sum of W - zw per output channel) and the
    multipliers, padded with zeros to whole blocks, for tiles that sum scale * w (a power of
    2); tiles that sum x - 128 (`recentre`, microkernels_int8) take zx - 128 for zx.
    Fixed-point (the node's `rq_shift`, set by the fixed-point pass): the int32 `rq_mult`
    with the shift grown by log2(scale); float (shift None): sx * sw / sy divided by scale,
    exactly. `both`: corr for x and for x - 128 interleaved by block ([block][2][L]: the
    AVX2 sign-trick fallback and its AVX-VNNI tile, qconv_tile's corr_half)."""
    mpad = node.output.shape[1] * lanes
    m = wc.shape[0]
    zx = node.inputs[2]
    b = node.input(8)

    def correction(zxv: int) -> np.ndarray:
        corr = np.zeros(mpad, np.int64)
        corr[:m] = (b.const.astype(np.int64) if b is not None else 0) \
            - zxv * wc.reshape(m, -1).sum(axis=1, dtype=np.int64)
        corr *= scale
        if np.abs(corr).max(initial=0) >= 2**31:
            raise EdgecError(f"node {node.name}: bias minus zero-point correction overflows "
                             "int32")
        return corr

    zxv = (int(zx.const.reshape(-1)[0]) if zx is not None else 0) - 128 * recentre
    corr = correction(zxv)
    if both:
        corr = np.stack([corr.reshape(-1, lanes), correction(zxv - 128).reshape(-1, lanes)],
                        axis=1).reshape(-1)
    src = node.inputs[3]
    corr_t = constant_table(kb, corr.astype(np.int32), f"corr{scale}{'x2' if both else ''}",
                            src)
    if node.attrs.get("rq_shift"):
        q = np.zeros(mpad, np.int32)
        q[:m] = np.broadcast_to(np.asarray(node.attrs["rq_mult"], np.int32), (m,))
        shift = node.attrs["rq_shift"] + scale.bit_length() - 1
        return corr_t, constant_table(kb, q, "rq_mult", src), const(shift, I32)
    mult = np.zeros(mpad, np.float32)
    sx, sw, sy = (node.inputs[i].const for i in (1, 4, 6))
    mult[:m] = np.broadcast_to(requantize_multiplier(sx.reshape(()), sw.reshape(-1),
                                                     sy.reshape(())), (m,))
    if scale != 1:
        small = mult[:m] * np.float32(1 / scale)
        if not np.array_equal(small * np.float32(scale), mult[:m]):
            raise EdgecError(f"node {node.name}: requantization multipliers too small to "
                             f"divide by {scale} exactly")
        mult[:m] = small
    return corr_t, constant_table(kb, mult, f"mult{scale}", src), None


def blocked_int8_candidates(kb: NodeKernelBuilder, g: _QGeo, enc: QConvWeights, lanes: int,
                            density: float) -> list[Candidate]:
    """The three tiles of a BlockedQLinearConv, of which the weights' encoding (pack-weights'
    choice, a graph rewrite) leaves one: dot4 (`r` pixels x mb blocks), sparse dot4 groups
    (`density` of them stored), depthwise (`r` pixels). Costed by the roofline: a dot4 does
    4 multiply-adds per int32 lane, the depthwise tile one; the bytes are x, w and y once."""
    dw = enc.kind == "dw"
    cin = 1 if dw else g.c
    macs = g.n * g.m * g.oh * g.ow * cin * g.kh * g.kw
    nbytes = g.n * g.cbin * g.h * g.w * g.xb + g.m * cin * g.kh * g.kw + g.n * g.m * g.oh * g.ow
    _, r = qconv_tiles(lanes, kb.target.registers)
    said = f"pack-weights encoded the weights as '{enc}'"
    dense = "" if not dw and not enc.sparse else said
    sparse = "" if enc.sparse else said
    depth = "" if dw else said
    t = kb.target
    return [
        Candidate.of(Kind.BLOCKED_INT8_DOT4, {"block": lanes, "mb": enc.mb, "r": r}, dense,
                     None if dense else roofline(t, macs, nbytes, 4 * lanes), ("r",)),
        Candidate.of(Kind.SPARSE_INT8_DOT4, {"block": lanes, "r": r,
                                             "density": round(density, 3)}, sparse,
                     None if sparse else roofline(t, macs * density, nbytes, 4 * lanes),
                     ("r",)),
        Candidate.of(Kind.BLOCKED_INT8_DEPTHWISE,
                     {"block": lanes, "r": t.tiles.int8_depthwise_pixels}, depth,
                     None if depth else roofline(t, macs, nbytes, lanes), ("r",)),
    ]


def _zero_point(v) -> Expr:
    """A constant zero point (absent: 0) as an int32 literal."""
    return const(int(v.const.reshape(-1)[0]) if v is not None else 0, I32)


def _residual(kb: NodeKernelBuilder, node: Node, fixed: bool
              ) -> Callable[[Expr], list] | None:
    """For a node with a residual (the fuse-residual pass): the tile arguments of its add
    (microkernels_int8.ResidualAdd) for the tile whose output starts at yo; None without."""
    if node.input(9) is None:
        return None
    zr, zc = node.input(11), node.input(13)
    if not fixed or not node.attrs.get("add_shift") or any(
            v is not None and not v.is_const for v in (zr, zc)):
        raise EdgecError(f"node {node.name}: a residual add runs in the conv's kernel with "
                         "fixed-point requantization of both and constant zero points; run "
                         "the fixed-point pass before fuse-residual")
    r = kb.bind(node.inputs[9], "r")
    (qa, qb), s = node.attrs["add_mult"], node.attrs["add_shift"]
    scalars = [_zero_point(zr), const(qa, I32), const(qb, I32), const(1 << (33 - s), I32),
               _zero_point(zc)]
    return lambda yo: [(r, yo), *scalars]


@kernel("BlockedQLinearConv")
def blocked_qlinear_conv(kb: NodeKernelBuilder, node: Node) -> None:
    lanes = node.attrs["block"]
    if kb.lanes(I32) != lanes or any(node.attrs["pads"]):
        raise EdgecError(f"node {node.name}: a BlockedQLinearConv of block {lanes} needs a "
                         f"target with {lanes}-lane int32 vectors (this one has "
                         f"{kb.lanes(I32)}) and a padded input (pads 0); run the "
                         "layout-nchwc pass with the target's block")
    g = _QGeo(node)
    enc, wc, _ = _weights(kb, node, g, bind=False)
    # the encoding names the tile ("dot4 ... sparse": pack-weights' choice, or the same rule
    # for weights packed here)
    sparse = dot4_groups(wc, g, lanes) if enc.sparse else None
    c = kb.choose(blocked_int8_candidates(kb, g, enc, lanes,
                                          sparse[3] if sparse is not None else 1.0))
    w = _weights(kb, node, g)[2] if sparse is None else None
    # the report says where the weights were packed: a pipeline without pack-weights packs
    # them here, into a table the text IR does not show
    where = "" if node.attrs.get("wenc") else ", weights packed by the kernel builder"
    recentre = enc.kind == "dot4" and dot4_recentre(kb)
    # weights whose byte pairs fit int16: the cheaper dot4 where the target has one (AVX2's
    # vpmaddubsw; int4 weights, summed as 16 * w, stay as they are)
    pairs16, pairs_say = dot4_pairs16(kb, qconv_pairs(wc)) \
        if enc.kind == "dot4" and not enc.nibbles else (False, "")
    # full-range weights on AVX2: the sign trick where it beats the widening on this CPU
    # family, as the fallback of the AVX-VNNI tile (the dense tile only)
    sign = (enc.kind == "dot4" and not enc.nibbles and not enc.sparse and not pairs16
            and dot4_sign(kb, wc))
    if sign:
        pairs_say = pairs_say.replace("dot4 widened (vpmaddwd: ", "dot4 by the sign trick ("
                                      "vpsignb+vpmaddubsw+vpmaddwd of x - 128: weights within "
                                      "+-127, where ")
    corr, mult, shift = _tables(kb, node, wc, lanes, 16 if enc.nibbles else 1, recentre,
                                both=sign)
    fixed = shift is not None
    rq = ", fixed-point requantization" if fixed else ""
    tail = () if shift is None else (shift,)
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    res = _residual(kb, node, fixed)
    rq += ", residual add fused" if res else ""
    fused = res or (lambda yo: [])
    zy = _zero_point(node.inputs[7])
    out = node.output.dtype
    x_row, x_cb = g.w * g.xb, g.h * g.w * g.xb
    x_img = g.cbin * x_cb
    y_mb = g.oh * g.ow * lanes
    if c.kind is Kind.BLOCKED_INT8_DEPTHWISE:
        kb.strategy = "blocked int8 depthwise conv" + rq + where
        r_max = int(c["r"])
        with kb.loop(g.n * g.mblocks * g.oh, "t", kind="parallel") as t:
            oh = kb.local("oh", t % g.oh)
            nc = kb.local("nc", t // g.oh)  # image * blocks + block
            blk = kb.local("blk", nc % g.mblocks)
            for ow0, r in row_tiles(g.ow, r_max):
                fn = mk.qdepthwise_tile(lanes, r, g.sw * lanes, out, fixed, res is not None)
                xo = nc * x_cb + oh * g.sh * x_row + ow0 * g.sw * lanes
                yo = (nc * g.oh + oh) * g.ow * lanes + ow0 * lanes
                kb.call(fn, (x, xo), (w, blk * (g.kh * g.kw * lanes)), (corr, blk * lanes),
                        (mult, blk * lanes), (y, yo), g.kh, g.kw, g.dh * x_row, g.dw * lanes,
                        g.kw * lanes, zy, *tail, *fused(yo))
        return
    r_max = int(c["r"])
    if c.kind is Kind.SPARSE_INT8_DOT4:
        vals, offs, ptr, density = sparse
        kb.strategy = f"sparse int8 conv dot4 groups, density {density:.2f}" + rq + pairs_say
        src = node.inputs[3]
        wv = constant_table(kb, vals.reshape(-1), f"groups{lanes}", src)
        ov = constant_table(kb, offs, f"group_offsets{lanes}", src)
        pv = constant_table(kb, ptr, f"group_ptr{lanes}", src)
        with kb.loop(g.n * g.oh * g.mblocks, "t", kind="parallel") as t:
            ob = kb.local("ob", t % g.mblocks)
            oh = kb.local("oh", (t // g.mblocks) % g.oh)
            n = kb.local("n", t // (g.mblocks * g.oh))
            lo = kb.local("lo", cast(pv[ob], INDEX))
            cnt = kb.local("cnt", cast(pv[ob + 1], INDEX) - lo)
            for ow0, r in row_tiles(g.ow, r_max):
                fn = mk.qconv_sparse_tile(lanes, r, g.sw * g.xb, out, fixed, res is not None,
                                          pairs16, recentre)
                xo = n * x_img + oh * g.sh * x_row + ow0 * g.sw * g.xb
                yo = ((n * g.mblocks + ob) * g.oh + oh) * g.ow * lanes + ow0 * lanes
                kb.call(fn, (x, xo), (wv, lo * (4 * lanes)), (ov, lo), (corr, ob * lanes),
                        (mult, ob * lanes), (y, yo), cnt, y_mb, zy, *tail, *fused(yo))
        return
    mb_max = enc.mb
    # NEON without dotprod: two k-groups summed in int16 where the weights allow
    pairs, pairdot_say = dot4_pairdot(kb, wc, mb_max) if recentre and not enc.nibbles \
        else (0, "")
    sdot = pairs and "dotprod" in kb.target.features  # the pairs form is sdot's fallback
    groups = g.xb // 4
    ngroups = -(-g.mblocks // mb_max)
    taps = g.kh * g.kw
    tiles = row_tiles(g.ow, r_max)
    # int4 weights: unpacked once per task into a stack buffer that the int8 tile then reads,
    # when it is small; a task runs 16 tiles or more over it. Unpacking in the tile's inner
    # loop costs 2 vector operations per 28 dot4s (ResNet-18's 3 x 3 convolutions ran 4-12%
    # slower than int8); once per task costs the same once per 16 tiles (0.98-1.03x int8)
    unpacked = taps * g.cbin * groups * mb_max * 4 * lanes
    unpack = enc.nibbles and unpacked <= kb.target.tiles.int4_unpack_bytes
    # output rows per task: the fewest that divide the rows and make 16 tiles
    rows = next((d for d in range(1, g.oh) if g.oh % d == 0 and d * len(tiles) >= 16),
                g.oh) if unpack else 1
    kb.strategy = "blocked int8 conv dot4" + (
        ", int4 weights two to a byte" + (" unpacked once per task" if unpack else "")
        if enc.nibbles else "") + rq + pairs_say + pairdot_say + where
    chunks = g.oh // rows
    # the threads' slices of the tasks: by output rows (every group of channels in each
    # task's rows) where the weights are smaller than the input, so that a thread's rows
    # are where the next layer's same thread reads them; by groups of output channels
    # otherwise, so that each thread reads only its share of the weights
    by_rows = g.mblocks * lanes * taps * g.cbin * g.xb <= 2 * x_img
    with kb.loop(g.n * ngroups * chunks, "t", kind="parallel") as t:
        if by_rows:
            grp = kb.local("grp", t % ngroups)
            oh0 = kb.local("oh0", (t // ngroups) % chunks * rows)
        else:
            oh0 = kb.local("oh0", t % chunks * rows)
            grp = kb.local("grp", (t // chunks) % ngroups)
        n = kb.local("n", t // (chunks * ngroups))
        full, rest = g.mblocks // mb_max, g.mblocks % mb_max
        variants = [(mb_max, grp < full)] if full else []
        variants += [(rest, grp >= full)] if rest else []
        wu = kb.alloc("wu", DType.I8, (unpacked,)) if unpack else None
        for mb, cond in variants:
            with kb.if_(cond if len(variants) > 1 else const(True)):
                wgrp = grp * (enc.kw_bytes(mb_max) * taps * g.cbin)
                if unpack:
                    kb.call(mk.qconv_unpack(lanes, groups, mb), (w, wgrp), (wu, 0),
                            taps * g.cbin)
                    wt, wo, w_kh = wu, const(0), g.kw * groups * mb * 4 * lanes
                else:
                    wt, wo, w_kh = w, wgrp, g.kw * enc.kw_bytes(mb)
                with kb.loop(rows, "r") as i:
                    oh = kb.local("oh", oh0 + i)
                    for ow0, r in tiles:
                        tile = (lanes, mb, r, g.sw * g.xb, groups, out,
                                enc.nibbles and not unpack, fixed, res is not None, pairs16,
                                recentre)
                        fn = mk.qconv_tile(*tile, pairs=0 if sdot else pairs,
                                           corr_half=0 if sign else None)
                        if sdot:
                            fn = mk.with_fallback(fn, mk.qconv_tile(*tile, pairs=pairs))
                        if sign:
                            fn = mk.with_fallback(fn, mk.qconv_tile(*tile, sign=True,
                                                                    corr_half=1))
                        xo = n * x_img + oh * g.sh * x_row + ow0 * g.sw * g.xb
                        yo = ((n * g.mblocks + grp * mb_max) * g.oh + oh) * g.ow * lanes \
                            + ow0 * lanes
                        kb.call(fn, (x, xo), (wt, wo),
                                (corr, grp * mb_max * lanes * (2 if sign else 1)),
                                (mult, grp * mb_max * lanes), (y, yo), g.cbin, g.kh, g.kw,
                                x_cb, g.dh * x_row, g.dw * g.xb, g.kh * w_kh, w_kh, y_mb, zy,
                                *tail, *fused(yo))
