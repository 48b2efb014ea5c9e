"""Kernel builders of the convolutions (Conv, ConvTranspose and the fused form's core).

The loops are written for gcc -O3 without -ffast-math, which vectorizes a loop whose
iterations are independent, or a group of independent scalar accumulators updated in the
same order, but never reassociates one float reduction. So:

- Convolutions (constant weights, at least 4 output channels per group) use register tiles:
  tile_m output channels x up to tile_p pixels of accumulators (Target.tiles: 8 x 4) in
  locals, updated in an innermost loop over input channels acc[t][j] += w[tap, c, j] *
  x[c, tap(t)] that gcc vectorizes across j, from weights packed at compile time so that
  loop reads them in order; the epilogue act(acc + b + z) is applied to each accumulator
  before its one store.
- Pointwise convolutions (1x1, stride 1, no pads) are a GEMM y[m, :] = b[m] + sum_c
  w[m, c] * x[c, :] over the flattened plane, in tiles of pixels small enough that the
  tile of x (Cg x pixels) stays in L2 while every output channel reads it; within a tile,
  `rows` output rows are updated by `depth` input rows per unit-stride pass
  y_j[p] += w[j, c]*x_c[p] + w[j, c+1]*x_{c+1}[p] + ..., so each x load serves `rows`
  rows and each y load/store `depth` channels (Target.tiles: pointwise_rows, _depth). The
  first pass starts from the bias and the last applies the epilogue, while the tile is in L1.
- Depthwise and transposed convolutions accumulate a row at a time in the output itself:
  y[row] (+)= w * x[row shifted by the tap], a unit-stride loop, then one pass applies the
  epilogue to the hot row. Taps in the padding are cut off by loop bounds (`common.window`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...kernel_ir.kernel import (
    Buffer,
    Expr,
    const,
    minimum,
    select,
)
from ...targets.target import Caches, Target, Tiles
from ..lower import NodeKernelBuilder, kernel
from ..strategies import Candidate, Kind, roofline
from .common import (
    Activation,
    Epilogue,
    Operand,
    _axis_names,
    _letter,
    derived_constant,
    independent_loops,
    named,
    offset,
    row_major_strides,
    window,
)
from .gpu_tiles import (
    conv_as_gemm,
    conv_depthwise_tiles,
    conv_tiles_fit,
    depthwise_tiles_fit,
    tiles_text,
)

# -- convolution ----------------------------------------------------------------------------
# (the tile sizes are the Target's facts, `Tiles`: conv_m, conv_p, conv_p_one, pointwise_*)


@dataclass
class ConvGeometry:
    """A convolution's sizes; a pointwise one (1x1 taps, stride 1, no pads) is viewed as 1-D
    over the flattened spatial axes, so its rows are whole planes."""

    n: int
    c: int
    m: int
    group: int
    isp: list[int]
    osp: list[int]
    ksz: list[int]
    strides: list[int]
    dil: list[int]
    p0: list[int]

    @staticmethod
    def of(node: Node, x_v: Value | None = None, w_v: Value | None = None,
           flatten_pointwise: bool = True) -> ConvGeometry:
        """The geometry of a Conv-like node whose data and weight are `x_v` and `w_v`
        (inputs 0 and 1 unless given, as for QLinearConv)."""
        x = (x_v or node.inputs[0]).shape
        w = (w_v or node.inputs[1]).shape
        y = node.outputs[0].shape
        nsp = len(w) - 2
        g = ConvGeometry(x[0], x[1], w[0], node.attrs["group"], list(x[2:]), list(y[2:]),
                         list(w[2:]), list(node.attrs["strides"]), list(node.attrs["dilations"]),
                         list(node.attrs["pads"][:nsp]))
        if flatten_pointwise and all(k == 1 for k in g.ksz) and all(s == 1 for s in g.strides) \
                and not any(node.attrs["pads"]):
            g.isp = g.osp = [math.prod(g.osp)]
            g.ksz, g.strides, g.dil, g.p0 = [1], [1], [1], [0]
        return g

    @property
    def cg(self) -> int:
        return self.c // self.group

    @property
    def mg(self) -> int:
        return self.m // self.group

    @property
    def pointwise(self) -> bool:
        """A 1x1 convolution with stride 1 and no pads, seen as 1-D over the whole plane."""
        return (self.ksz == [1] and self.strides == [1] and self.p0 == [0]
                and self.isp == self.osp)

    @property
    def reduce_rows(self) -> bool:
        """Whether register tiles reduce over the kernel's rows in their innermost loop
        rather than over input channels: a 2-D convolution with fewer input channels than
        kernel rows, such as a 7x7 stem on RGB (3 iterations per loop would be mostly
        overhead)."""
        return len(self.ksz) == 2 and self.cg < self.ksz[0]

    @property
    def names(self) -> list[str]:
        return _axis_names(len(self.ksz))

    def row_taps(self, kb: NodeKernelBuilder, oo: Sequence[Expr]) -> list[tuple[Expr, Expr]]:
        """(first, count) of the valid taps along each outer spatial axis of output row oo."""
        return [window(kb, f"k{self.names[i]}", o * self.strides[i], -self.p0[i], self.dil[i],
                       self.isp[i], self.ksz[i], range(0, self.osp[i] * self.strides[i],
                                                       self.strides[i]))
                for i, o in enumerate(oo)]

    def interior(self) -> list[tuple[int, int]]:
        """Per axis, the output positions [a, b) whose taps all lie inside the input."""
        out = []
        for n, o, k, s, d, p in zip(self.isp, self.osp, self.ksz, self.strides, self.dil,
                                    self.p0, strict=True):
            a = min(-(-p // s), o)
            room = n - 1 + p - (k - 1) * d
            out.append((a, max(a, min(o, room // s + 1 if room >= 0 else 0))))
        return out

    def input_pos(self, oo: Sequence[Expr], kidx: Sequence[Expr]) -> list[Expr]:
        """The input coordinates that tap `kidx` of output position `oo` reads."""
        return [o * s + k * d - p for o, k, s, d, p in
                zip(oo, kidx, self.strides, self.dil, self.p0, strict=True)]


def pack_conv_weights(w: np.ndarray, group: int, tile: int, reduce_rows: bool) -> np.ndarray:
    """W [M, Cg, taps...] as blocks of `tile` output channels (fewer in a group's last block),
    each laid out [tap][c][channel in block], or for a 2-D `reduce_rows` convolution
    [c][kw][kh][channel in block]: in the order the innermost loop reads it."""
    m, cg = w.shape[:2]
    mg = m // group
    w4 = w.reshape(m, cg, -1, w.shape[-1])  # [M, Cg, outer taps, KW]
    order = (1, 3, 2, 0) if reduce_rows else (2, 3, 1, 0)
    blocks = [w4[g * mg + m0:g * mg + min(m0 + tile, mg)].transpose(order).reshape(-1)
              for g in range(group) for m0 in range(0, mg, tile)]
    return np.ascontiguousarray(np.concatenate(blocks))


def build_conv(kb: NodeKernelBuilder, node: Node, residual: Value | None = None,
               activation: Activation | None = None) -> None:
    """Conv / FusedConv: y[n, m, o] = act(b[m] + sum_{c, k} w[m, c, k] * x[n, g*Cg + c,
    o*s + k*d - p] + z[n, m, o]), N-D, grouped (depthwise when Cg = 1), by the candidate
    `conv_candidates` lists and the builder chooses: pointwise convolutions as a tiled GEMM
    (`_conv_pointwise`), register tiles (`_conv_tiles`), or rows (`_conv_rows`).
    """
    geo = ConvGeometry.of(node)
    w_v, b_v = node.inputs[1], node.input(2)
    c = kb.choose(conv_candidates(kb.target, geo, w_v.is_const, w_v.dtype.itemsize))
    x = kb.bind(node.inputs[0], "x")
    if c.kind is Kind.CONV_POINTWISE:
        rows = int(c["rows"])
        w = derived_constant(kb, w_v, f"packed{rows}",
                             lambda a: pack_conv_weights(a, geo.group, rows, False))
    elif c.kind is Kind.CONV_TILES:
        tm = int(c["tile_m"])
        w = derived_constant(kb, w_v, f"packed{tm}{'r' if geo.reduce_rows else ''}",
                             lambda a: pack_conv_weights(a, geo.group, tm, geo.reduce_rows))
    else:
        w = kb.bind(w_v, "w")
    b = kb.bind(b_v, "b") if b_v is not None else None
    ys = row_major_strides((geo.n, geo.m, *geo.osp))
    epi = Epilogue(activation=activation)
    if residual is not None:
        epi.addends.append((Operand(kb.bind(residual, "z"), ys), 1.0))
    y = kb.bind(node.outputs[0], "y")
    kb.strategy = {Kind.CONV_POINTWISE: "pointwise conv as GEMM tiles",
                   Kind.CONV_TILES: "conv register tiles", Kind.CONV_ROWS: "conv rows",
                   Kind.CONV_THREADS: "conv, a GPU thread an output",
                   Kind.CONV_GPU_DEPTHWISE: "depthwise conv, an input tile in shared memory "
                                            "a block, a GPU thread an output",
                   Kind.CONV_GPU_GEMM: "conv as implicit GEMM, shared-memory tiles"
                   + (tiles_text(kb.target, y.dtype, int(c["reg"]))
                      if c.kind is Kind.CONV_GPU_GEMM else "")}[c.kind]
    if c.kind is Kind.CONV_GPU_GEMM:
        _conv_gemm_tiles(kb, geo, x, w, b, y, epi, int(c["reg"]))
    elif c.kind is Kind.CONV_THREADS:
        _conv_threads(kb, geo, x, w, b, y, epi)
    elif c.kind is Kind.CONV_GPU_DEPTHWISE:
        conv_depthwise_tiles(kb, geo, x, w, b, y, epi)
    elif c.kind is Kind.CONV_POINTWISE:
        _conv_pointwise(kb, geo, x, w, b, y, epi, int(c["rows"]), int(c["depth"]),
                        int(c["tile"]))
    elif c.kind is Kind.CONV_TILES:
        _conv_tiles(kb, geo, x, w, b, y, epi, int(c["tile_m"]), int(c["tile_p"]),
                    int(c["tile_p_one"]))
    else:
        _conv_rows(kb, geo, x, w, b, y, epi)


def conv_candidates(target: Target, geo: ConvGeometry, const_weights: bool,
                    itemsize: int = 4) -> list[Candidate]:
    """The float convolution's candidates, in order of preference, costed by the roofline
    of `strategies.py`: all three read x and w and write y once (bytes); the pointwise GEMM
    runs the target's full vectors along the pixels, register tiles vectors across their
    tile_m channels, and rows vectors along a row at half the FMA rate (each FMA waits on a
    load and a store of the row in the output)."""
    t, lanes = target.tiles, target.lanes(DType.F32)
    macs = geo.n * geo.m * math.prod(geo.osp) * geo.cg * math.prod(geo.ksz)
    nbytes = itemsize * (geo.n * geo.c * math.prod(geo.isp) + geo.m * geo.cg
                         * math.prod(geo.ksz) + geo.n * geo.m * math.prod(geo.osp))
    const_w = "" if const_weights else \
        "the weights are computed at run time (packing needs them at compile time)"
    pw = const_w or ("" if geo.pointwise else "not a 1x1 convolution with stride 1 and no pads")
    tiles = const_w or (f"{geo.mg} output channels per group, fewer than half a tile "
                        f"(tile_m {t.conv_m})" if geo.mg < t.conv_m // 2 else "")
    cpu = [
        Candidate.of(Kind.CONV_POINTWISE,
                     {"rows": t.pointwise_rows, "depth": t.pointwise_depth,
                      **({"tile": pointwise_tile(geo.cg, geo.osp[0], itemsize,
                                                 target.caches.l2, t)} if geo.pointwise else {})},
                     pw, None if pw else roofline(target, macs, nbytes, lanes),
                     ("rows", "depth", "tile")),
        Candidate.of(Kind.CONV_TILES,
                     {"tile_m": t.conv_m, "tile_p": t.conv_p, "tile_p_one": t.conv_p_one,
                      "reduce": "rows" if geo.reduce_rows else "channels"},
                     tiles, None if tiles else roofline(target, macs, nbytes,
                                                        min(lanes, t.conv_m)),
                     ("tile_m", "tile_p", "tile_p_one")),
        Candidate.of(Kind.CONV_ROWS, {}, "",
                     roofline(target, macs, nbytes, max(1, min(lanes, geo.osp[-1]) // 2))),
    ]
    if target.gpu is None:
        return cpu
    # a GPU's threads: the CPU forms would run their loops on one thread of it
    gpu = "a GPU target: the CPU's loops would run on one thread (conv-threads)"
    unfit, reg = conv_tiles_fit(target, geo)
    gemm = "not float32" if itemsize != 4 else unfit
    return [Candidate.of(Kind.CONV_GPU_GEMM, {"reg": reg}, gemm, None, ("reg",)),
            Candidate.of(Kind.CONV_GPU_DEPTHWISE, {}, depthwise_tiles_fit(target, geo)),
            Candidate.of(Kind.CONV_THREADS),
            *(Candidate.of(c.kind, dict(c.params), gpu) for c in cpu)]


def pointwise_tile(cg: int, plane: int, itemsize: int = 4, l2: int = Caches().l2,
                   tiles: Tiles | None = None) -> int:
    """Pixels per tile of a pointwise convolution: at most `tiles.pointwise_max` and few
    enough that the tile of x (cg rows) fits in `tiles.pointwise_l2_share` of the L2, split
    evenly over the plane in multiples of 16 (a vector), or the whole plane when it fits."""
    tiles = tiles or Tiles()
    limit = max(tiles.pointwise_min, min(tiles.pointwise_max,
                                         int(l2 * tiles.pointwise_l2_share) // (itemsize * cg)))
    ntiles = -(-plane // limit)
    return min(plane, (-(-plane // ntiles) + 15) // 16 * 16)


def _conv_pointwise(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, wp: Buffer,
                    b: Buffer | None, y: Buffer, epi: Epilogue, pw_rows: int, pw_depth: int,
                    tp: int) -> None:
    """Pointwise convolution as a GEMM over pixel tiles of `tp` pixels: for each image, group
    and tile, for each block of `rows` <= pw_rows output channels, passes over the pixels
    y_j[p] = y_j[p] + sum_u wp[c + u, j] * x[c + u, p] for `depth` input channels c + u at a
    time (unit stride in p, so gcc vectorizes it). The first pass starts from the bias, the
    last ends with the epilogue; the weights of a pass are locals loaded before it."""
    cg, mg, plane = geo.cg, geo.mg, geo.osp[0]
    ntiles = -(-plane // tp)
    # the input channels in passes: the first, pw_depth-deep middle ones in a loop, the last
    # (which takes the remainder); one pass when there are fewer than 2 * pw_depth channels
    first = pw_depth if cg >= 2 * pw_depth else cg
    middle = max(0, cg // pw_depth - 2) if cg >= 2 * pw_depth else 0
    last = cg - first - middle * pw_depth
    with kb.loops([geo.n, geo.group, ntiles], ["n", "g", "pt"]) as (n, g, pt):
        p0 = named(kb, "p0", pt * tp)
        npix = const(tp) if plane % tp == 0 else kb.local("npix", minimum(const(plane) - p0, tp))
        xt = named(kb, "xt", offset([n, g * cg, p0], (geo.c * plane, plane, 1)))
        ys = (geo.m * plane, plane, 1)
        for rows, nblocks, m_first in [(pw_rows, mg // pw_rows, 0),
                                       (mg % pw_rows, 1, mg - mg % pw_rows)]:
            if not rows or not nblocks:
                continue
            with kb.loop(nblocks, "mb") as mb:
                m0 = named(kb, "m0", g * mg + mb * pw_rows + m_first)
                blk = _PointwiseBlock(x, wp, b, y, epi, plane, rows, n, m0, p0, npix,
                                      xt, named(kb, "wblk", m0 * cg),
                                      named(kb, "yt", offset([n, m0, p0], ys)))
                blk.update(kb, const(0), first, True, last == 0)
                with kb.loop(middle, "kc") as kc:
                    blk.update(kb, first + kc * pw_depth, pw_depth, False, False)
                if last:
                    blk.update(kb, const(cg - last), last, False, True)


@dataclass
class _PointwiseBlock:
    """The passes of one block of `rows` output channels over one pixel tile."""

    x: Buffer
    wp: Buffer
    b: Buffer | None
    y: Buffer
    epi: Epilogue
    plane: int
    rows: int
    n: Expr
    m0: Expr  # first output channel of the block
    p0: Expr  # first pixel of the tile
    npix: Expr  # pixels in the tile
    xt: Expr  # x[n, first input channel of the group, p0]
    wblk: Expr  # the block's packed weights [c][row]
    yt: Expr  # y[n, m0, p0]

    def update(self, kb: NodeKernelBuilder, c0: Expr, depth: int, start: bool,
               end: bool) -> None:
        """y_j[p] = (b[m0 + j] if start else y_j[p]) + sum_u w[c0 + u, j] * x[c0 + u, p] for
        the tile's pixels p and the block's rows j, then the epilogue if `end`."""
        rows, plane = self.rows, self.plane
        # w2b: the weight of row 2 for input b; names end in a letter, so the builder's
        # numeric suffixes for repeated names cannot collide
        w = [[kb.local(f"w{j}{_letter(u)}", self.wp[self.wblk + (c0 + u) * rows + j])
              for j in range(rows)] for u in range(depth)]
        with kb.loop(self.npix, "p") as p:
            xv = [kb.local(f"x{_letter(u)}", self.x[self.xt + (c0 + u) * plane + p])
                  for u in range(depth)]
            for j in range(rows):
                yi = self.yt + j * plane + p
                v = (self.y[yi] if not start
                     else self.b[self.m0 + j] if self.b is not None else None)
                for u in range(depth):
                    v = w[u][j] * xv[u] if v is None else v + w[u][j] * xv[u]
                if end:
                    v = self.epi(kb, v, [self.n, self.m0 + j, self.p0 + p])
                kb.store(self.y, yi, v)


def _conv_tiles(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, wp: Buffer,
                b: Buffer | None, y: Buffer, epi: Epilogue, tile_m: int, tile_p: int,
                tile_p_one: int) -> None:
    """Register tiles of tm <= tile_m output channels x T <= tile_p pixels of one row, the
    accumulators in locals: for each valid tap, acc[t][j] += wp[tap, c, j] * x[c, tap(t)]
    in a loop over c (vectorized across j), then the epilogue and one store per output.
    Pixels whose taps all lie inside the input take full tiles; the few near the left and
    right edges take one-pixel tiles with their own range of taps along the row; a row
    interior up to `tile_p_one` pixels is one tile."""
    mg = geo.mg
    # full blocks of tile_m channels, then each group's remaining channels
    for tm, nblocks, first in [(tile_m, mg // tile_m, 0), (mg % tile_m, 1, mg - mg % tile_m)]:
        if tm and nblocks:
            _conv_tile_rows(kb, geo, x, wp, b, y, epi, tm, nblocks, first, tile_m, tile_p,
                            tile_p_one)


def _conv_tile_rows(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, wp: Buffer,
                    b: Buffer | None, y: Buffer, epi: Epilogue, tm: int, nblocks: int,
                    first: int, tile_m: int, tile_p: int, tile_p_one: int) -> None:
    """The loop nest over images, groups, `nblocks` blocks of `tm` channels starting at
    channel `first` of each group, and output rows; each row split into tiles."""
    cg, mg, osp, ksz = geo.cg, geo.mg, geo.osp, geo.ksz
    xs = row_major_strides((geo.n, geo.c, *geo.isp))
    ys = row_major_strides((geo.n, geo.m, *osp))
    s, d, p, width, ow_n, kw_n = (geo.strides[-1], geo.dil[-1], geo.p0[-1], geo.isp[-1],
                                  osp[-1], ksz[-1])
    lo = min(ow_n, -(-p // s))  # interior of the row: [lo, hi)
    hi = max(lo, min(ow_n, (width - 1 + p - (kw_n - 1) * d) // s + 1))
    edge = [*range(lo), *range(hi, ow_n)]
    names = geo.names
    # blocks outside rows: a block's packed weights stay in cache while it sweeps the rows
    with kb.loops([geo.n, geo.group, nblocks, *osp[:-1]],
                  ["n", "g", "mb", *(f"o{a}" for a in names[:-1])]) as (n, g, mb, *oo):
        rows = geo.row_taps(kb, oo)
        m0 = named(kb, "m0", g * mg + mb * tile_m + first)
        wblk = named(kb, "wblk", m0 * (cg * math.prod(ksz)))
        yrow = named(kb, "yrow", offset([n, m0, *oo, 0], ys))

        def tile(ow0: Expr, npix: int, interior: bool) -> None:
            init = [b[m0 + j] if b is not None else const(0, y.dtype) for j in range(tm)]
            acc = [[kb.local(f"acc{t}_{j}", init[j]) for j in range(tm)] for t in range(npix)]

            def reduce(xr: Expr, wr: Expr, extent, xstep: int, name: str) -> None:
                """The innermost loop: acc[t][j] += wp[wr + r*tm + j] * x[xr + r*xstep + t*s]
                for every accumulator at once (gcc vectorizes it across j)."""
                with kb.loop(extent, name) as r:
                    xv = [kb.local(f"x{t}", x[xr + r * xstep + t * s]) for t in range(npix)]
                    for t in range(npix):
                        for j in range(tm):
                            kb.assign(acc[t][j], acc[t][j] + wp[wr + r * tm + j] * xv[t])

            kw_lo, kw_cnt = ((const(0), const(kw_n)) if interior else
                             window(kb, f"k{names[-1]}", ow0 * s, -p, d, width, kw_n,
                                    [o * s for o in edge]))
            if geo.reduce_rows:  # [c][kw][kh][j]: the loop over kh innermost
                (kh_lo, kh_cnt), = rows
                with kb.loop(cg, "c") as c:
                    with kb.loop(kw_cnt, f"k{names[-1]}") as kv:
                        kw = kw_lo + kv
                        ih = oo[0] * geo.strides[0] + kh_lo * geo.dil[0] - geo.p0[0]
                        xr = named(kb, "xr", offset([n, g * cg + c, ih, ow0 * s + kw * d - p],
                                                    xs))
                        wr = named(kb, "wr", wblk + ((c * kw_n + kw) * ksz[0] + kh_lo) * tm)
                        reduce(xr, wr, kh_cnt, geo.dil[0] * xs[2], f"k{names[0]}")
            else:  # [taps][c][j]: the loop over c innermost
                with kb.loops([r[1] for r in rows], [f"k{a}" for a in names[:-1]]) as kk:
                    with kb.loop(kw_cnt, f"k{names[-1]}") as kv:
                        kidx = [r[0] + k for r, k in zip(rows, kk, strict=True)] + [kw_lo + kv]
                        ipos = [o * st + k * dd - pp for o, k, st, dd, pp in
                                zip([*oo, ow0], kidx, geo.strides, geo.dil, geo.p0, strict=True)]
                        xr = named(kb, "xr", offset([n, g * cg, *ipos], xs))
                        wr = named(kb, "wr", wblk + offset(kidx, row_major_strides(ksz))
                                   * (cg * tm))
                        reduce(xr, wr, const(cg), xs[1], "c")
            for t in range(npix):
                for j in range(tm):
                    kb.store(y, yrow + j * ys[1] + ow0 + t,
                             epi(kb, acc[t][j], [n, m0 + j, *oo, ow0 + t]))

        if edge:
            with kb.loop(len(edge), "q") as q:
                ow = q + (hi - lo) if lo == 0 else q if hi == ow_n else \
                    select(q < lo, q, q + (hi - lo))
                tile(named(kb, "ow", ow), 1, False)
        inner = hi - lo
        if 0 < inner <= tile_p_one:
            tile(const(lo), inner, True)
        elif inner:
            # the last tile ends at `hi`, overlapping the one before (its pixels are computed
            # twice, identically) rather than being narrower
            with kb.loop(-(-inner // tile_p), "t") as t:
                tile(named(kb, "ow", minimum(lo + t * tile_p, hi - tile_p)), tile_p, True)


def _conv_threads(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, w: Buffer,
                  b: Buffer | None, y: Buffer, epi: Epilogue) -> None:
    """A GPU's convolution: one thread an output element (`independent_loops`, a parallel
    loop that bind_threads spreads over the grid), which sums its group's input channels times the
    taps that fall inside the input, then applies the epilogue."""
    cg, mg, osp, ksz = geo.cg, geo.mg, geo.osp, geo.ksz
    xs = row_major_strides((geo.n, geo.c, *geo.isp))
    ws = row_major_strides((geo.m, cg, *ksz))
    dims = (geo.n, geo.m, *osp)
    with independent_loops(kb, dims, ["n", "m", *(f"o{a}" for a in geo.names)],
                           cg * math.prod(ksz)) as coords:
        n, m, *oo = coords
        acc = kb.local("acc", b[m] if b is not None else const(0, y.dtype))
        with kb.loop(cg, "c") as c, kb.loops(list(ksz), [f"k{a}" for a in geo.names]) as kk:
            ipos = [named(kb, f"i{a}", oi * s + k * d - p) for a, oi, k, s, d, p in
                    zip(geo.names, oo, kk, geo.strides, geo.dil, geo.p0, strict=True)]
            inside = None
            for i, size in zip(ipos, geo.isp, strict=True):
                cond = (i >= 0) & (i < size)
                inside = cond if inside is None else inside & cond
            with kb.if_(inside):
                kb.assign(acc, acc + w[offset([m, c, *kk], ws)]
                          * x[offset([n, m // mg * cg + c, *ipos], xs)])
        kb.store(y, offset(coords, row_major_strides(dims)), epi(kb, acc, coords))


def _conv_gemm_tiles(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, w: Buffer,
                     b: Buffer | None, y: Buffer, epi: Epilogue, reg: int) -> None:
    """The float convolution on a GPU (`conv_as_gemm`), the bias, residual and activation as
    each output is stored."""
    ys = row_major_strides((geo.n, geo.m, *geo.osp))
    xs = row_major_strides((geo.n, geo.c, *geo.isp))
    kterms = geo.cg * math.prod(geo.ksz)

    def store(n: Expr, m: Expr, coords: list, p: Expr, acc: Expr) -> None:
        total = acc + b[m] if b is not None else acc
        kb.store(y, offset([n, m], ys[:2]) + p, epi(kb, total, coords))

    conv_as_gemm(kb, geo, lambda m, k: w[m * kterms + k],
                 lambda n, c, ipos: x[offset([n, c, *ipos], xs)], store, y.dtype, reg,
                 out=(y, lambda n, m, p: offset([n, m], ys[:2]) + p)
                 if y.dtype is DType.F32 else None)


def _conv_rows(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, w: Buffer,
               b: Buffer | None, y: Buffer, epi: Epilogue) -> None:
    """One output row at a time, accumulated in the output: y[row] = b[m], then for each
    input channel and tap y[row] += w * x[shifted row] (a unit-stride axpy), then the
    epilogue over the row. For depthwise convolutions, whose reductions are too short for
    register tiles."""
    cg, mg, osp, ksz = geo.cg, geo.mg, geo.osp, geo.ksz
    xs = row_major_strides((geo.n, geo.c, *geo.isp))
    ws = row_major_strides((geo.m, cg, *ksz))
    ys = row_major_strides((geo.n, geo.m, *osp))
    strides, dil, p0, names = geo.strides, geo.dil, geo.p0, geo.names
    # n, group, then the output rows (all spatial axes but the last): the input slab a row
    # reads (Cg x taps x W) stays in cache while every output channel of the group uses it
    with kb.loops([geo.n, geo.group, *osp[:-1]],
                  ["n", "g", *(f"o{a}" for a in names[:-1])]) as (n, g, *oo):
        taps = geo.row_taps(kb, oo)
        with kb.loop(mg, "m") as mo:
            m = named(kb, "co", g * mg + mo)
            yrow = named(kb, "yrow", offset([n, m, *oo, 0], ys))
            with kb.loop(osp[-1], "ow") as ow:
                kb.store(y, yrow + ow, b[m] if b is not None else const(0, y.dtype))
            with kb.loop(cg, "c") as c, \
                    kb.loops([t[1] for t in taps], [f"k{a}" for a in names[:-1]]) as kk:
                kidx = [t[0] + k for t, k in zip(taps, kk, strict=True)]
                ipos = [o * s + k * d - p
                        for o, k, s, d, p in zip(oo, kidx, strides, dil, p0, strict=False)]
                xrow = named(kb, "xrow", offset([n, g * cg + c, *ipos, 0], xs))
                wrow = named(kb, "wrow", offset([m, c, *kidx, 0], ws))
                with kb.loop(ksz[-1], f"k{names[-1]}") as kw:
                    wv = kb.local("wv", w[wrow + kw])
                    lo, cnt = window(kb, f"o{names[-1]}", kw * dil[-1], -p0[-1], strides[-1],
                                     geo.isp[-1], osp[-1], range(0, ksz[-1] * dil[-1], dil[-1]))
                    with kb.loop(cnt, "j") as j:
                        ow = lo + j
                        xi = xrow + ow * strides[-1] + kw * dil[-1] - p0[-1]
                        kb.store(y, yrow + ow, y[yrow + ow] + wv * x[xi])
            if not epi.is_identity:
                with kb.loop(osp[-1], "ow") as ow:
                    kb.store(y, yrow + ow, epi(kb, y[yrow + ow], [n, m, *oo, ow]))


@kernel("Conv")
def conv(kb: NodeKernelBuilder, node: Node) -> None:
    build_conv(kb, node)


@kernel("ConvTranspose")
def conv_transpose(kb: NodeKernelBuilder, node: Node) -> None:
    """Scatter form: y[n, m, i*s + k*d - p] += x[n, c, i] * w[c, m - g*Mg, k], one input row
    at a time (the innermost loop runs over input positions, writing with stride s)."""
    x_v, w_v, b_v, y_v = node.inputs[0], node.inputs[1], node.input(2), node.outputs[0]
    strides, dil = node.attrs["strides"], node.attrs["dilations"]
    group, pads = node.attrs["group"], node.attrs["pads"]
    n_, c_, *isp = x_v.shape
    _, mg, *ksz = w_v.shape
    osp = list(y_v.shape[2:])
    nsp, cg = len(ksz), c_ // group
    x, w = kb.bind(x_v, "x"), kb.bind(w_v, "w")
    b = kb.bind(b_v, "b") if b_v is not None else None
    y = kb.bind(y_v, "y")
    xs, ws = row_major_strides(x_v.shape), row_major_strides(w_v.shape)
    ys = row_major_strides(y_v.shape)
    names, plane = _axis_names(nsp), math.prod(osp)
    with kb.loops([n_, group, mg], ["n", "g", "m"]) as (n, g, mo):
        m = named(kb, "co", g * mg + mo)
        ybase = named(kb, "ybase", offset([n, m], ys[:2]))
        with kb.loop(plane, "p") as p:
            kb.store(y, ybase + p, b[m] if b is not None else const(0, y.dtype))
        with kb.loop(cg, "c") as c, \
                kb.loops(isp[:-1], [f"i{a}" for a in names[:-1]]) as ii:
            taps = [window(kb, f"k{names[a]}", i * strides[a], -pads[a], dil[a], osp[a],
                           ksz[a], range(0, isp[a] * strides[a], strides[a]))
                    for a, i in enumerate(ii)]
            with kb.loops([t[1] for t in taps], [f"k{a}" for a in names[:-1]]) as kk:
                kidx = [t[0] + k for t, k in zip(taps, kk, strict=True)]
                opos = [i * s + k * d - p
                        for i, k, s, d, p in zip(ii, kidx, strides, dil, pads, strict=False)]
                xrow = named(kb, "xrow", offset([n, g * cg + c, *ii, 0], xs))
                wrow = named(kb, "wrow", offset([g * cg + c, mo, *kidx, 0], ws))
                yrow = named(kb, "yrow", ybase + offset([*opos, 0], ys[2:]))
                with kb.loop(ksz[-1], f"k{names[-1]}") as kw:
                    wv = kb.local("wv", w[wrow + kw])
                    lo, cnt = window(kb, f"i{names[-1]}", kw * dil[-1], -pads[nsp - 1],
                                     strides[-1], osp[-1], isp[-1],
                                     range(0, ksz[-1] * dil[-1], dil[-1]))
                    with kb.loop(cnt, "j") as j:
                        iw = lo + j
                        yi = yrow + iw * strides[-1] + kw * dil[-1] - pads[nsp - 1]
                        kb.store(y, yi, y[yi] + wv * x[xrow + iw])
