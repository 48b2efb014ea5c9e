"""Kernel builders of the convolutions (Conv, ConvTranspose and the fused form's core).

The loops are written for gcc -O3 without -ffast-math, which vectorizes a loop whose
iterations are independent, or a group of independent scalar accumulators updated in the
same order, but never reassociates one float reduction. So:

- Convolutions (constant weights, at least 4 output channels per group) use register tiles:
  8 output channels x up to 4 pixels of accumulators in locals, updated in an innermost loop
  over input channels acc[t][j] += w[tap, c, j] * x[c, tap(t)] that gcc vectorizes across j,
  from weights packed at compile time so that loop reads them in order; the epilogue
  act(acc + b + z) is applied to each accumulator before its one store.
- Pointwise convolutions (1x1, stride 1, no pads) are a GEMM y[m, :] = b[m] + sum_c
  w[m, c] * x[c, :] over the flattened plane, in tiles of pixels small enough that the
  tile of x (Cg x pixels) stays in L2 while every output channel reads it; within a tile,
  PW_ROWS output rows are updated by PW_DEPTH input rows per unit-stride pass
  y_j[p] += w[j, c]*x_c[p] + w[j, c+1]*x_{c+1}[p] + ..., so each x load serves PW_ROWS
  rows and each y load/store PW_DEPTH channels. The first pass starts from the bias and
  the last applies the epilogue, while the tile is in L1.
- Depthwise and transposed convolutions accumulate a row at a time in the output itself:
  y[row] (+)= w * x[row shifted by the tap], a unit-stride loop, then one pass applies the
  epilogue to the hot row. Taps in the padding are cut off by loop bounds (`common.window`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...ir.graph import Node, Value
from ...kernel_ir.kernel import (
    Buffer,
    Expr,
    const,
    minimum,
    select,
)
from ...targets.target import Caches
from ..lower import NodeKernelBuilder, kernel
from .common import (
    Activation,
    Epilogue,
    Operand,
    _axis_names,
    _letter,
    derived_constant,
    named,
    offset,
    row_major_strides,
    window,
)

# -- convolution ----------------------------------------------------------------------------

TILE_M = 8  # output channels per register tile: one vector of accumulators per pixel
TILE_P = 4  # output pixels per register tile along a row (with more, gcc's register
#             allocator sometimes spills accumulators inside the innermost loop)
TILE_P_ONE = 8  # a row interior up to this wide is one tile (the 5 pixels of a 7x7 map)
PW_ROWS = 8  # output channels a pointwise pass updates per load of an x row
PW_DEPTH = 4  # input channels a pointwise pass adds per load and store of a y row
PW_TILE_L2_SHARE = 3 / 8  # of L2 for a pointwise tile of x (Cg rows): 192 KB of 512
PW_TILE_MIN, PW_TILE_MAX = 64, 1024  # pixels per pointwise tile


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
    o*s + k*d - p] + z[n, m, o]), N-D, grouped (depthwise when Cg = 1).

    With constant weights: pointwise convolutions as a tiled GEMM (`_conv_pointwise`), others
    with at least TILE_M / 2 output channels per group in register tiles (`_conv_tiles`);
    otherwise (depthwise, weights computed at run time) rows (`_conv_rows`).
    """
    geo = ConvGeometry.of(node)
    w_v, b_v = node.inputs[1], node.input(2)
    pointwise = w_v.is_const and geo.pointwise
    tiled = w_v.is_const and geo.mg >= TILE_M // 2 and not pointwise
    x = kb.bind(node.inputs[0], "x")
    if pointwise:
        w = derived_constant(kb, w_v, f"packed{PW_ROWS}",
                             lambda a: pack_conv_weights(a, geo.group, PW_ROWS, False))
    elif tiled:
        w = derived_constant(kb, w_v, f"packed{TILE_M}{'r' if geo.reduce_rows else ''}",
                             lambda a: pack_conv_weights(a, geo.group, TILE_M, geo.reduce_rows))
    else:
        w = kb.bind(w_v, "w")
    b = kb.bind(b_v, "b") if b_v is not None else None
    ys = row_major_strides((geo.n, geo.m, *geo.osp))
    epi = Epilogue(activation=activation)
    if residual is not None:
        epi.addends.append((Operand(kb.bind(residual, "z"), ys), 1.0))
    y = kb.bind(node.outputs[0], "y")
    builder = _conv_pointwise if pointwise else _conv_tiles if tiled else _conv_rows
    kb.strategy = ("pointwise conv as GEMM tiles" if pointwise else
                   "conv register tiles" if tiled else "conv rows")
    builder(kb, geo, x, w, b, y, epi)


def pointwise_tile(cg: int, plane: int, itemsize: int = 4, l2: int = Caches().l2) -> int:
    """Pixels per tile of a pointwise convolution: at most PW_TILE_MAX and few enough that
    the tile of x (cg rows) fits in PW_TILE_L2_SHARE of the L2, split evenly over the plane
    in multiples of 16 (a vector), or the whole plane when it fits."""
    limit = max(PW_TILE_MIN, min(PW_TILE_MAX, int(l2 * PW_TILE_L2_SHARE) // (itemsize * cg)))
    ntiles = -(-plane // limit)
    return min(plane, (-(-plane // ntiles) + 15) // 16 * 16)


def _conv_pointwise(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, wp: Buffer,
                    b: Buffer | None, y: Buffer, epi: Epilogue) -> None:
    """Pointwise convolution as a GEMM over pixel tiles: for each image, group and tile,
    for each block of `rows` <= PW_ROWS output channels, passes over the tile's pixels
    y_j[p] = y_j[p] + sum_u wp[c + u, j] * x[c + u, p] for `depth` input channels c + u at a
    time (unit stride in p, so gcc vectorizes it). The first pass starts from the bias, the
    last ends with the epilogue; the weights of a pass are locals loaded before it."""
    cg, mg, plane = geo.cg, geo.mg, geo.osp[0]
    tp = pointwise_tile(cg, plane, y.dtype.itemsize, kb.target.caches.l2)
    ntiles = -(-plane // tp)
    # the input channels in passes: the first, PW_DEPTH-deep middle ones in a loop, the last
    # (which takes the remainder); one pass when there are fewer than 2 * PW_DEPTH channels
    first = PW_DEPTH if cg >= 2 * PW_DEPTH else cg
    middle = max(0, cg // PW_DEPTH - 2) if cg >= 2 * PW_DEPTH else 0
    last = cg - first - middle * PW_DEPTH
    with kb.loops([geo.n, geo.group, ntiles], ["n", "g", "pt"]) as (n, g, pt):
        p0 = named(kb, "p0", pt * tp)
        npix = const(tp) if plane % tp == 0 else kb.local("npix", minimum(const(plane) - p0, tp))
        xt = named(kb, "xt", offset([n, g * cg, p0], (geo.c * plane, plane, 1)))
        ys = (geo.m * plane, plane, 1)
        for rows, nblocks, m_first in [(PW_ROWS, mg // PW_ROWS, 0),
                                       (mg % PW_ROWS, 1, mg - mg % PW_ROWS)]:
            if not rows or not nblocks:
                continue
            with kb.loop(nblocks, "mb") as mb:
                m0 = named(kb, "m0", g * mg + mb * PW_ROWS + m_first)
                blk = _PointwiseBlock(x, wp, b, y, epi, plane, rows, n, m0, p0, npix,
                                      xt, named(kb, "wblk", m0 * cg),
                                      named(kb, "yt", offset([n, m0, p0], ys)))
                blk.update(kb, const(0), first, True, last == 0)
                with kb.loop(middle, "kc") as kc:
                    blk.update(kb, first + kc * PW_DEPTH, PW_DEPTH, False, False)
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
                b: Buffer | None, y: Buffer, epi: Epilogue) -> None:
    """Register tiles of tm <= TILE_M output channels x T <= TILE_P pixels of one row, the
    accumulators in locals: for each valid tap, acc[t][j] += wp[tap, c, j] * x[c, tap(t)]
    in a loop over c (vectorized across j), then the epilogue and one store per output.
    Pixels whose taps all lie inside the input take full tiles; the few near the left and
    right edges take one-pixel tiles with their own range of taps along the row."""
    mg = geo.mg
    # full blocks of TILE_M channels, then each group's remaining channels
    for tm, nblocks, first in [(TILE_M, mg // TILE_M, 0), (mg % TILE_M, 1, mg - mg % TILE_M)]:
        if tm and nblocks:
            _conv_tile_rows(kb, geo, x, wp, b, y, epi, tm, nblocks, first)


def _conv_tile_rows(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, wp: Buffer,
                    b: Buffer | None, y: Buffer, epi: Epilogue, tm: int, nblocks: int,
                    first: int) -> None:
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
        m0 = named(kb, "m0", g * mg + mb * TILE_M + first)
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
        if 0 < inner <= TILE_P_ONE:
            tile(const(lo), inner, True)
        elif inner:
            # the last tile ends at `hi`, overlapping the one before (its pixels are computed
            # twice, identically) rather than being narrower
            with kb.loop(-(-inner // TILE_P), "t") as t:
                tile(named(kb, "ow", minimum(lo + t * TILE_P, hi - TILE_P)), TILE_P, True)


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
