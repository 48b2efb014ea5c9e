"""Kernel builders of the nn ops: convolutions, matrix products, pools, normalizations,
softmax and resize.

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
- Depthwise convolutions, transposed convolutions, pools and matrix products with B
  row-major accumulate a row at a time in the output itself: y[row] (+)= w * x[row shifted
  by the tap], a unit-stride loop, then one pass applies the epilogue to the hot row.
- Taps that land in padding are cut off by loop bounds computed once per row or pixel
  (`window`), never tested in an inner loop: j in [0, extent) reads position a + j*step,
  valid iff 0 <= a + j*step < limit, i.e.
  j in [ceil(max(0, -a) / step), min(extent, ceil(max(0, limit - a) / step))).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...ir.onnx_dtypes import from_onnx
from ...ir.ops.nn import antialias_taps, resize_plan
from ...ir.types import TensorType
from ..kernel_ir import (
    INDEX,
    Buffer,
    Expr,
    call,
    cast,
    const,
    maximum,
    minimum,
    select,
)
from ..lowering import SCALARS, NodeKernelBuilder, broadcast_index, coalesce, kernel, operand
from ..target import Caches

Activation = Callable[[Expr], Expr]


# -- indexing helpers -----------------------------------------------------------------------

def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def broadcast_strides(shape: Sequence[int], out_shape: Sequence[int]) -> tuple[int, ...]:
    """Strides of a row-major `shape` read at `out_shape` coordinates (numpy broadcasting):
    0 along dims the operand broadcasts over."""
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    return tuple(0 if d == 1 else s for d, s in zip(padded, row_major_strides(padded), strict=True))


def offset(coords: Sequence, strides: Sequence[int]) -> Expr:
    e = const(0)
    for c, s in zip(coords, strides, strict=True):
        if s:
            e = e + c * s
    return e


@dataclass(frozen=True)
class Operand:
    """A tensor read at output coordinates; a one-element constant is a literal."""

    src: Buffer | Expr
    strides: tuple[int, ...]

    def at(self, coords: Sequence) -> Expr:
        if isinstance(self.src, Expr):
            return self.src
        return self.src[offset(coords, self.strides)]


def bind_operand(kb: NodeKernelBuilder, value: Value, name: str,
                 out_shape: Sequence[int]) -> Operand:
    return Operand(operand(kb, value, name), broadcast_strides(value.shape, out_shape))


@dataclass
class Epilogue:
    """y = act(scale * acc + sum(factor * addend)), applied to an accumulator before its
    final store. Coordinates are those of the node's output."""

    scale: float = 1.0
    addends: list[tuple[Operand, float]] = field(default_factory=list)
    activation: Activation | None = None

    @property
    def is_identity(self) -> bool:
        return self.scale == 1.0 and not self.addends and self.activation is None

    def __call__(self, kb: NodeKernelBuilder, acc: Expr, coords: Sequence) -> Expr:
        v = acc if self.scale == 1.0 else acc * const(self.scale, acc.dtype)
        for opd, factor in self.addends:
            t = opd.at(coords)
            v = v + (t if factor == 1.0 else t * const(factor, acc.dtype))
        if self.activation is None:
            return v
        return self.activation(named(kb, "v", v))  # activations read their input twice


def window(kb: NodeKernelBuilder, name: str, base: Expr, off: int, step: int, limit: int,
           extent: int, bases: Sequence[int]) -> tuple[Expr, Expr]:
    """(first, count) of the j in [0, extent) whose position base + off + j*step lies in
    [0, limit). `bases` lists the values `base` takes; bounds that never cut fold away."""
    lo, hi = const(0), const(extent)
    if not len(bases):
        return lo, const(0)
    if min(bases) + off < 0:
        lo = kb.local(f"{name}_lo", _ceil_div(maximum(const(-off) - base, 0), step))
    if max(bases) + off + (extent - 1) * step >= limit:
        room = const(limit - off) - base  # may be negative only when the pads are wide
        hi = minimum(_ceil_div(room if limit - off - max(bases) >= 0 else maximum(room, 0),
                               step), extent)
    if lo.is_const and hi.is_const:
        return lo, hi - lo
    return lo, kb.local(f"{name}_n", hi - lo)


def named(kb: NodeKernelBuilder, name: str, e: Expr) -> Expr:
    """`e` held in a local (read once, printed once) unless it is a variable or constant."""
    return e if e.op in ("var", "const") else kb.local(name, e)


def _letter(k: int) -> str:
    """a, b, ..., z, ba, bb, ...: a base-26 name that ends in a letter."""
    return (_letter(k // 26) if k >= 26 else "") + chr(ord("a") + k % 26)


def _ceil_div(e: Expr, d: int) -> Expr:
    return (e + (d - 1)) // d


def _axis_names(nsp: int) -> list[str]:
    return list("dhw"[-nsp:]) if nsp <= 3 else [str(i) for i in range(nsp)]


def _lowest(dtype: DType) -> Expr:
    return const(-math.inf if dtype.is_float else np.iinfo(dtype.np).min, dtype)


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


def derived_constant(kb: NodeKernelBuilder, source: Value, key: str,
                     make: Callable[[np.ndarray], np.ndarray], name: str = "wp") -> Buffer:
    """A buffer for a compile-time transform of constant `source` (a weight layout), made
    once per source and layout so that nodes sharing a weight share its transform."""
    cache = source.meta.setdefault("derived_constants", {})
    if key not in cache:
        arr = make(source.const)
        arr.setflags(write=False)
        cache[key] = Value(f"{source.name}_{key}", TensorType(arr.shape, source.dtype), arr)
    return kb.bind(cache[key], name)


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


# -- matrix products ------------------------------------------------------------------------

def build_matmul(kb: NodeKernelBuilder, a_v: Value, b_v: Value, y_v: Value, *,
                 trans_a: bool = False, trans_b: bool = False, scale: float = 1.0,
                 addends: Sequence[tuple[Value, float]] = (),
                 activation: Activation | None = None) -> None:
    """Y = act(scale * A' @ B' + sum(factor * addend)) with numpy matmul semantics: batch
    dims broadcast, a 1-D A is a row and a 1-D B a column (their unit dim is dropped from Y).

    B row-major [K, N]: per output row, y[i, :] += A[i, k] * B[k, :] for k = 0..K-1 (a
    contiguous axpy). A constant transposed B is transposed back at compile time. B
    transposed at run time, or N = 1: a dot product per output in a local.
    """
    a_shape = (1, *a_v.shape) if len(a_v.shape) == 1 else tuple(a_v.shape)
    b_shape = (*b_v.shape, 1) if len(b_v.shape) == 1 else tuple(b_v.shape)
    m_, k_ = a_shape[-2:][::-1] if trans_a else a_shape[-2:]
    n_ = b_shape[-2] if trans_b else b_shape[-1]
    batch = list(y_v.shape[:len(y_v.shape) - (len(a_v.shape) > 1) - (len(b_v.shape) > 1)])
    a = kb.bind(a_v, "a")
    if trans_b and b_v.is_const and n_ > 1:
        b = derived_constant(kb, b_v, "transposed", lambda w: np.ascontiguousarray(
            np.swapaxes(w, -1, -2)), "b")
        b_shape, trans_b = (*b_shape[:-2], b_shape[-1], b_shape[-2]), False
    else:
        b = kb.bind(b_v, "b")
    sa = broadcast_strides(a_shape, (*batch, *a_shape[-2:]))
    sb = broadcast_strides(b_shape, (*batch, *b_shape[-2:]))
    epi = Epilogue(scale, [(bind_operand(kb, v, "c" if k == 0 else "z", y_v.shape), f)
                           for k, (v, f) in enumerate(addends)], activation)
    y = kb.bind(y_v, "y")
    sy = row_major_strides((*batch, m_, n_))
    zero = const(0, y.dtype)

    def a_at(bi, i, k):
        ik = (k, i) if trans_a else (i, k)
        return a[offset([*bi, *ik], sa)]

    def b_at(bi, k, j):
        kj = (j, k) if trans_b else (k, j)
        return b[offset([*bi, *kj], sb)]

    def out_coords(bi, i, j):  # the view's (batch, i, j) as coordinates of Y itself
        return [*bi, *([i] if len(a_v.shape) > 1 else []), *([j] if len(b_v.shape) > 1 else [])]

    names = [f"b{d}" for d in range(len(batch))]
    kb.strategy = "matmul dot products" if trans_b or n_ == 1 else "matmul rows"
    if trans_b or n_ == 1:
        with kb.loops([*batch, m_, n_], [*names, "i", "j"]) as (*bi, i, j):
            acc = kb.local("acc", zero)
            with kb.loop(k_, "k") as k:
                kb.assign(acc, acc + a_at(bi, i, k) * b_at(bi, k, j))
            kb.store(y, offset([*bi, i, j], sy), epi(kb, acc, out_coords(bi, i, j)))
        return
    with kb.loops([*batch, m_], [*names, "i"]) as (*bi, i):
        yrow = named(kb, "yrow", offset([*bi, i, 0], sy))
        with kb.loop(n_, "j") as j:
            kb.store(y, yrow + j, zero)
        with kb.loop(k_, "k") as k:
            av = kb.local("av", a_at(bi, i, k))
            brow = named(kb, "brow", offset([*bi, k, 0], sb))
            with kb.loop(n_, "j") as j:
                kb.store(y, yrow + j, y[yrow + j] + av * b[brow + j])
        if not epi.is_identity:
            with kb.loop(n_, "j") as j:
                kb.store(y, yrow + j, epi(kb, y[yrow + j], out_coords(bi, i, j)))


@kernel("MatMul")
def matmul(kb: NodeKernelBuilder, node: Node) -> None:
    from .gemm import vector_gemm  # (gemm builds on this module)

    if not vector_gemm(kb, node.inputs[0], node.inputs[1], node.output):
        build_matmul(kb, node.inputs[0], node.inputs[1], node.output)


@kernel("Gemm")
def gemm(kb: NodeKernelBuilder, node: Node) -> None:
    c = node.input(2)
    build_matmul(kb, node.inputs[0], node.inputs[1], node.output,
                 trans_a=bool(node.attrs["transA"]), trans_b=bool(node.attrs["transB"]),
                 scale=node.attrs["alpha"], addends=[(c, node.attrs["beta"])] if c else [])


# -- pooling --------------------------------------------------------------------------------

def _pool(kb: NodeKernelBuilder, node: Node, kind: str) -> None:
    """MaxPool / AveragePool, row by row like Conv. Taps outside the input are skipped (max:
    padding never wins); the average divides by the taps inside the input, or inside the
    explicit pads with count_include_pad (never the cells ceil mode hangs past them)."""
    x_v, y_v = node.inputs[0], node.outputs[0]
    ind_v = node.outputs[1] if len(node.outputs) > 1 else None
    ksz, strides = node.attrs["kernel_shape"], node.attrs["strides"]
    dil, pads = node.attrs["dilations"], node.attrs["pads"]
    n_, c_, *isp = x_v.shape
    osp = list(y_v.shape[2:])
    nsp = len(ksz)
    x = kb.bind(x_v, "x")
    y = kb.bind(y_v, "y")
    ind = kb.bind(ind_v, "ind") if ind_v is not None else None
    xs, ys = row_major_strides(x_v.shape), row_major_strides(y_v.shape)
    names = _axis_names(nsp)
    with_pad = kind == "avg" and node.attrs["count_include_pad"]

    def taps(i: int, o: Expr, what: str, bases=None) -> tuple[Expr, Expr]:
        bases = bases if bases is not None else range(0, osp[i] * strides[i], strides[i])
        if what == "count" and with_pad:  # positions inside [-p0, n + p1)
            return window(kb, f"k{names[i]}", o * strides[i], 0, dil[i],
                          isp[i] + pads[i] + pads[i + nsp], ksz[i], bases)
        return window(kb, f"k{names[i]}", o * strides[i], -pads[i], dil[i], isp[i], ksz[i],
                      bases)

    with kb.loops([n_, c_, *osp[:-1]], ["n", "c", *(f"o{a}" for a in names[:-1])]) as vs:
        n, c, *oo = vs
        rng = [taps(i, o, "read") for i, o in enumerate(oo)]
        yrow = named(kb, "yrow", offset([n, c, *oo, 0], ys))
        with kb.loop(osp[-1], "ow") as ow:
            kb.store(y, yrow + ow, _lowest(y.dtype) if kind == "max" else const(0, y.dtype))
            if ind is not None:
                kb.store(ind, yrow + ow, const(-1, ind.dtype))
        with kb.loops([t[1] for t in rng], [f"k{a}" for a in names[:-1]]) as kk:
            ipos = [o * s + (t[0] + k) * d - p
                    for o, t, k, s, d, p in zip(oo, rng, kk, strides, dil, pads, strict=False)]
            xrow = named(kb, "xrow", offset([n, c, *ipos, 0], xs))
            with kb.loop(ksz[-1], f"k{names[-1]}") as kw:
                lo, cnt = window(kb, f"o{names[-1]}", kw * dil[-1], -pads[nsp - 1],
                                 strides[-1], isp[-1], osp[-1], range(0, ksz[-1] * dil[-1],
                                                                      dil[-1]))
                with kb.loop(cnt, "j") as j:
                    ow = lo + j
                    iw = ow * strides[-1] + kw * dil[-1] - pads[nsp - 1]
                    v, yi = x[xrow + iw], yrow + ow
                    if kind == "avg":
                        kb.store(y, yi, y[yi] + v)
                    elif ind is not None:  # the first maximum wins, as in the reference
                        spatial = [*ipos, iw]
                        st = (row_major_strides(isp) if not node.attrs["storage_order"]
                              else row_major_strides(isp[::-1])[::-1])
                        flat = (n * c_ + c) * math.prod(isp) + offset(spatial, st)
                        kb.store(ind, yi, select(v > y[yi], cast(flat, ind.dtype), ind[yi]))
                    if kind == "max":
                        kb.store(y, yi, select(v > y[yi], v, y[yi]))
        if kind == "avg":
            outer = const(1)
            for i, o in enumerate(oo):
                outer = outer * (taps(i, o, "count")[1] if with_pad else rng[i][1])
            with kb.loop(osp[-1], "ow") as ow:
                cnt = taps(nsp - 1, ow, "count")[1]
                kb.store(y, yrow + ow, y[yrow + ow] / cast(outer * cnt, y.dtype))


@kernel("MaxPool")
def max_pool(kb: NodeKernelBuilder, node: Node) -> None:
    _pool(kb, node, "max")


@kernel("AveragePool")
def average_pool(kb: NodeKernelBuilder, node: Node) -> None:
    _pool(kb, node, "avg")


def _global_pool(kb: NodeKernelBuilder, node: Node, kind: str) -> None:
    x_v = node.inputs[0]
    rows, plane = math.prod(x_v.shape[:2]), math.prod(x_v.shape[2:])
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    with kb.loop(rows, "r") as r:
        acc = kb.local("acc", x[r * plane] if kind == "max" else const(0, y.dtype))
        with kb.loop(plane - 1 if kind == "max" else plane, "p") as p:
            v = x[r * plane + p + (1 if kind == "max" else 0)]
            kb.assign(acc, SCALARS["Max"](acc, v) if kind == "max" else acc + v)
        kb.store(y, r, acc if kind == "max" else acc / const(plane, y.dtype))


@kernel("GlobalAveragePool")
def global_average_pool(kb: NodeKernelBuilder, node: Node) -> None:
    _global_pool(kb, node, "avg")


@kernel("GlobalMaxPool")
def global_max_pool(kb: NodeKernelBuilder, node: Node) -> None:
    _global_pool(kb, node, "max")


# -- normalization and softmax --------------------------------------------------------------

@kernel("BatchNormalization")
def batch_normalization(kb: NodeKernelBuilder, node: Node) -> None:
    """y = (x - mean[c]) * inv[c] + B[c], inv = scale / sqrt(var + epsilon) once per channel."""
    x_v = node.inputs[0]
    n_, c_ = x_v.shape[:2]
    plane = math.prod(x_v.shape[2:])
    x = kb.bind(x_v, "x")
    scale, bias, mean, var = (kb.bind(v, nm) for v, nm in
                              zip(node.inputs[1:5], ("scale", "bias", "mean", "var"), strict=True))
    y = kb.bind(node.output, "y")
    eps = const(node.attrs["epsilon"], x.dtype)
    with kb.loops([n_, c_], ["n", "c"]) as (n, c):
        mu = kb.local("mu", mean[c])
        inv = kb.local("inv", scale[c] / call("sqrt", var[c] + eps))
        beta = kb.local("beta", bias[c])
        base = (n * c_ + c) * plane
        with kb.loop(plane, "p") as p:
            kb.store(y, base + p, (x[base + p] - mu) * inv + beta)


@kernel("LayerNormalization")
def layer_normalization(kb: NodeKernelBuilder, node: Node) -> None:
    """Per row of the axes [axis, rank): mean, var = mean((x - mean)^2), inv = 1/sqrt(var +
    epsilon) in the stash type; y = (x - mean) * inv * scale + B; Mean and InvStdDev
    outputs when the node has them."""
    x_v = node.inputs[0]
    rank = len(x_v.shape)
    axis = node.attrs["axis"] + (rank if node.attrs["axis"] < 0 else 0)
    norm = x_v.shape[axis:]
    rows, size = math.prod(x_v.shape[:axis]), math.prod(norm)
    st = from_onnx(node.attrs["stash_type"])
    x = kb.bind(x_v, "x")
    params = [v for v in node.inputs[1:3] if v is not None]
    bufs = [operand(kb, v, nm) for v, nm in zip(params, ("scale", "bias"), strict=False)]
    y = kb.bind(node.outputs[0], "y")
    stats = [kb.bind(v, nm) for v, nm in zip(node.outputs[1:], ("mean", "inv_std"), strict=False)]
    dims, flags = coalesce(norm, [v.shape for v in params] + [norm])
    with kb.loop(rows, "r") as r:
        base = r * size
        s = kb.local("sum", const(0, st))
        with kb.loop(size, "i") as i:
            kb.assign(s, s + cast(x[base + i], st))
        mean = kb.local("mean", s / const(size, st))
        q = kb.local("sq", const(0, st))
        with kb.loop(size, "i") as i:
            dv = cast(x[base + i], st) - mean
            kb.assign(q, q + dv * dv)
        inv = kb.local("inv", const(1, st) / call("sqrt", q / const(size, st)
                                                  + const(node.attrs["epsilon"], st)))
        with kb.loops(dims, [f"i{k}" for k in range(len(dims))]) as vs:
            idx = base + broadcast_index(vs, dims, flags[-1])
            v = cast((cast(x[idx], st) - mean) * inv, y.dtype)
            for b, f in zip(bufs, flags, strict=False):
                t = b[broadcast_index(vs, dims, f)] if isinstance(b, Buffer) else b
                v = v * t if b is bufs[0] else v + t
            kb.store(y, idx, v)
        for buf, val in zip(stats, (mean, inv), strict=False):
            kb.store(buf, r, val)


def _softmax(kb: NodeKernelBuilder, node: Node, log: bool) -> None:
    """Along one axis, subtracting the max first so exp never overflows:
    softmax = e / sum(e), log-softmax = (x - max) - log(sum(e)), e = exp(x - max)."""
    x_v = node.inputs[0]
    axis = node.attrs["axis"] + (len(x_v.shape) if node.attrs["axis"] < 0 else 0)
    outer, n = math.prod(x_v.shape[:axis]), x_v.shape[axis]
    inner = math.prod(x_v.shape[axis + 1:])
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    with kb.loops([outer, inner], ["o", "i"]) as (o, i):
        base = o * (n * inner) + i
        mx = kb.local("mx", x[base])
        with kb.loop(n - 1, "a") as a:
            v = x[base + (a + 1) * inner]
            kb.assign(mx, select(v > mx, v, mx))
        s = kb.local("sum", const(0, y.dtype))
        with kb.loop(n, "a") as a:
            e = call("exp", x[base + a * inner] - mx)
            if log:
                kb.assign(s, s + e)
            else:
                kb.store(y, base + a * inner, e)
                kb.assign(s, s + y[base + a * inner])
        if log:
            lse = kb.local("lse", call("log", s))
            with kb.loop(n, "a") as a:
                kb.store(y, base + a * inner, (x[base + a * inner] - mx) - lse)
        else:
            with kb.loop(n, "a") as a:
                kb.store(y, base + a * inner, y[base + a * inner] / s)


@kernel("Softmax")
def softmax(kb: NodeKernelBuilder, node: Node) -> None:
    _softmax(kb, node, log=False)


@kernel("LogSoftmax")
def log_softmax(kb: NodeKernelBuilder, node: Node) -> None:
    _softmax(kb, node, log=True)


# -- resize ---------------------------------------------------------------------------------

_F = np.float32  # coordinates are mapped in float32, as the reference (and onnxruntime) do


def _source_coord(xo: Expr, n_in: int, n_out: int, scale, mode: str, roi) -> Expr:
    """The reference's coordinate_transformation_mode, operation for operation in float32
    (literals are the exact float32 constants), so nearest picks the same pixels."""
    F32 = DType.F32

    def f(v) -> Expr:
        return const(_F(v), F32)

    half = f(0.5)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        if mode == "pytorch_half_pixel" and n_out <= 1:
            return f(0)
        return (xo + half) / f(scale) - half
    if mode == "half_pixel_symmetric":
        adjustment = _F(n_out) / (_F(scale) * _F(n_in))
        shift = _F(n_in) / _F(2) * (_F(1) - adjustment)
        return f(shift) + (xo + half) / f(scale) - half
    if mode == "align_corners":
        return xo * f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0)
    if mode == "asymmetric":
        return xo / f(scale)
    start, end = _F(roi[0]), _F(roi[1])  # tf_crop_and_resize
    if n_out == 1:
        return f(_F(0.5) * (start + end) * _F(n_in - 1))
    return f(start * _F(n_in - 1)) + xo * f(end - start) * f(n_in - 1) / f(n_out - 1)


def _nearest_index(src: Expr, mode: str) -> Expr:
    floor = call("floor", src)
    if mode == "floor":
        return floor
    if mode == "ceil":
        return call("ceil", src)
    half = const(0.5, src.dtype)
    rounded = select(src < 0, -call("floor", -src + half), call("floor", src + half))
    if mode == "round_prefer_floor":
        return select((src - floor).eq(half), floor, rounded)
    return rounded


def _clamp(v: Expr, lo, hi) -> Expr:
    v = select(v < lo, const(lo, v.dtype), v)
    return select(v > hi, const(hi, v.dtype), v)


def _resize_taps(kb: NodeKernelBuilder, src: Expr, n: int, name: str, attrs: dict):
    """(source coordinate, [(input index, weight or None)]) interpolating along one axis."""
    mode = attrs["mode"]
    src = kb.local(f"s{name}", src)
    if mode == "nearest":
        idx = cast(_clamp(_nearest_index(src, attrs["nearest_mode"]), 0, n - 1), INDEX)
        return src, [(kb.local(f"i{name}", idx), None)]
    F32, one = DType.F32, const(1.0, DType.F32)
    if mode == "linear":
        cc = kb.local(f"c{name}", _clamp(src, 0, n - 1))
        i0 = kb.local(f"i{name}", minimum(cast(call("floor", cc), INDEX), n - 1))
        w1 = kb.local(f"w{name}", cc - cast(i0, F32))
        return src, [(i0, one - w1), (minimum(i0 + 1, n - 1), w1)]
    # cubic: Keys' kernel on the 4 neighbours at floor(src) - 1 .. floor(src) + 2
    a = _F(attrs["cubic_coeff_a"])
    base = kb.local(f"i{name}", cast(call("floor", src), INDEX))
    t = kb.local(f"t{name}", src - cast(base, F32))

    def near(d: Expr) -> Expr:  # |d| <= 1
        return (const(a + 2, F32) * d - const(a + 3, F32)) * d * d + one

    def far(d: Expr) -> Expr:  # 1 < |d| < 2
        return ((const(a, F32) * d - const(5 * a, F32)) * d + const(8 * a, F32)) * d \
            - const(4 * a, F32)

    ws = [far(t + one), near(t), near(one - t), far(const(2.0, F32) - t)]
    idx = [base + (k - 1) for k in range(4)]
    if attrs["exclude_outside"]:
        ws = [select((i >= 0) & (i < n), wv, const(0.0, F32))
              for i, wv in zip(idx, ws, strict=True)]
    ws = [kb.local(f"w{name}_{k}", wv) for k, wv in enumerate(ws)]
    if attrs["exclude_outside"]:
        total = kb.local(f"wsum{name}", ws[0] + ws[1] + ws[2] + ws[3])
        ws = [wv / total for wv in ws]
    return src, [(minimum(maximum(i, 0), n - 1), wv) for i, wv in zip(idx, ws, strict=True)]


def _antialias_taps(kb: NodeKernelBuilder, node: Node, axis: int, o: Expr, n_in: int,
                    n_out: int, scale, roi) -> list[tuple[Expr, Expr]]:
    """The T taps of output `o` of an antialiased downsampling pass along `axis`: index and
    weight read from compile-time tables [n_out, T] (shapes and scales are static)."""
    at = node.attrs
    cache = node.meta.setdefault("antialias_tables", {})
    if axis not in cache:
        idx, w = antialias_taps(n_in, n_out, scale, mode=at["mode"],
                                coordinate_transformation_mode=at["coordinate_transformation_mode"],
                                roi=roi, cubic_coeff_a=at["cubic_coeff_a"],
                                exclude_outside=at["exclude_outside"])
        idx = np.ascontiguousarray(idx.astype(np.int32))
        w = np.ascontiguousarray(w)
        cache[axis] = [Value(f"{node.name}_aa{nm}{axis}", TensorType(arr.shape, dt), arr)
                       for nm, arr, dt in (("idx", idx, DType.I32), ("w", w, DType.F32))]
    iv, wv = cache[axis]
    t = iv.shape[1]
    itab, wtab = kb.bind(iv, f"aidx{axis}"), kb.bind(wv, f"aw{axis}")
    row = named(kb, f"arow{axis}", o * t)
    return [(kb.local(f"i{axis}_{k}", cast(itab[row + k], INDEX)),
             kb.local(f"w{axis}_{k}", wtab[row + k])) for k in range(t)]


@kernel("Resize")
def resize(kb: NodeKernelBuilder, node: Node) -> None:
    """Separable resampling: each resized axis maps its output index to input taps (nearest:
    one, linear: two, cubic: four, with weights; antialiased downsampling: a fixed count per
    axis read from compile-time tables), computed once at that axis's loop level.
    Y is the weighted sum over the taps, nested in the reference's pass order (the first
    resized axis innermost) so that the float32 arithmetic is the reference's."""
    x_v, y_v, at = node.inputs[0], node.output, node.attrs
    scales, sizes = [node.input(k).const if node.input(k) is not None else None for k in (2, 3)]
    shape, rank = x_v.shape, len(x_v.shape)
    out, sc = resize_plan(shape, scales, sizes, axes=at["axes"],
                          keep_aspect_ratio_policy=at["keep_aspect_ratio_policy"])
    crop = at["coordinate_transformation_mode"] == "tf_crop_and_resize"
    axes = list(range(rank)) if at["axes"] is None else [a % rank for a in at["axes"]]
    rois = [(0.0, 1.0)] * rank
    if crop:
        flat = node.input(1).const.astype(np.float64).reshape(-1)
        for i, a in enumerate(axes):
            rois[a] = (flat[i], flat[i + len(axes)])
    resized = [out[a] != shape[a] or sc[a] != 1 or (crop and rois[a] != (0.0, 1.0))
               for a in range(rank)]
    x, y = kb.bind(x_v, "x"), kb.bind(y_v, "y")
    lead = resized.index(True) if any(resized) else rank  # untouched leading axes: one loop
    xs, ys = row_major_strides(shape)[lead:], row_major_strides(out)[lead:]
    taps: list[list[tuple[Expr, Expr | None]]] = []
    outside: Expr = const(False, DType.BOOL)
    with ExitStack() as stack:
        r = stack.enter_context(kb.loop(math.prod(shape[:lead]), "r"))
        coords = []
        for a in range(lead, rank):
            o = stack.enter_context(kb.loop(out[a], f"o{a}"))
            coords.append(o)
            if not resized[a]:
                taps.append([(o, None)])
                continue
            src = _source_coord(cast(o, DType.F32), shape[a], out[a], sc[a],
                                at["coordinate_transformation_mode"], rois[a])
            if at["antialias"] and at["mode"] != "nearest" and sc[a] < 1:
                src = kb.local(f"s{a}", src) if crop else src
                tp = _antialias_taps(kb, node, a, o, shape[a], out[a], sc[a], rois[a])
            else:
                src, tp = _resize_taps(kb, src, shape[a], str(a), at)
            taps.append(tp)
            if crop:
                outside = outside | (src < 0) | (src > shape[a] - 1)

        def interp(k: int, idx: list) -> Expr:
            """The pass along axis lead + k - 1 applied to the passes of the axes before."""
            if k == 0:
                return x[r * math.prod(shape[lead:]) + offset(idx, xs)]
            total = None
            for i, wv in taps[k - 1]:
                term = interp(k - 1, [i, *idx])
                term = term if wv is None else term * wv
                total = term if total is None else total + term
            return total

        v = interp(len(taps), [])
        if not outside.is_const:
            v = select(outside, const(at["extrapolation_value"], y.dtype), v)
        kb.store(y, r * math.prod(out[lead:]) + offset(coords, ys), v)
