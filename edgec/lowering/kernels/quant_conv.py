"""Kernel builders of the integer convolutions (ConvInteger, QLinearConv), in the arithmetic
of quant.py: int32 accumulators of (x - zx) * (w - zw) from the int32 bias, requantized once
(int64 where a 16-bit x could pass int32: quant_common.accumulator_type).

Three forms (gcc -O3 vectorizes integer reductions, reassociating them, so the loop it picks is
the innermost one): register tiles of output channels whose innermost loop runs over input
channels; sums written out term by term where an output has few terms (depthwise), so the loop
over output columns is the one that vectorizes; and a direct loop nest for the rest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...ir.ops.quant import centred_conv_weights, requantize_multiplier
from ...kernel_ir.kernel import Buffer, Expr, cast, const
from ..lower import NodeKernelBuilder, kernel
from ..strategies import Candidate, Kind
from .common import independent_loops, named, offset, row_major_strides
from .conv import ConvGeometry
from .gpu_tiles import conv_as_gemm, conv_tiles_fit, int8_on_tensor_cores
from .pool_unit import depthwise_unit, depthwise_unit_candidate
from .quant_common import (
    Requant,
    accumulator_type,
    constant_table,
    fixed_finish,
    fixed_point,
    narrow,
    scalar,
    zero_point,
)
from .quant_mvau import conv_mvau, conv_mvau_candidate
from .quant_sparse_pe import sparse_conv, sparse_conv_candidate

F32, I32 = DType.F32, DType.I32
# The tile sizes are the Target's facts (Tiles.int_*): a convolution with at most
# int_unroll_terms terms per output (input channels x taps) is written out, for
# int_unroll_channels output channels at a time, unless it has more than int_tile_terms terms
# and its channels fit register tiles of int_conv_m (measured on AVX2: depthwise and
# pointwise over <= 8 channels are faster written out, wider pointwise ones in tiles).



# -- convolutions ------------------------------------------------------------------------------

Finish = Callable[[Expr], Callable[[Expr], Expr]]


def _conv_tile(mg: int, tile_m: int) -> int:
    """Output channels per register tile: a vector of int32 accumulators."""
    return next((t for t in (tile_m, tile_m // 2) if mg % t == 0 and mg >= t), 1)


def int_conv_candidates(kb: NodeKernelBuilder, geo: ConvGeometry, const_weights: bool,
                        wide: bool = False, bytes_fit: bool = False) -> list[Candidate]:
    """The three forms, in order of preference. Not costed: which is faster turns on loop
    overhead the roofline does not see (the thresholds of Target.tiles were measured)."""
    t = kb.target.tiles
    terms = geo.cg * math.prod(geo.ksz)
    tile = _conv_tile(geo.mg, t.int_conv_m)
    tiles = ("the weights (or their zero point) are computed at run time" if not const_weights
             else f"{geo.mg} output channels per group fill no tile of {t.int_conv_m} or "
             f"{t.int_conv_m // 2}" if tile == 1 else
             f"{terms} terms per output, at most int_tile_terms ({t.int_tile_terms})"
             if terms <= t.int_tile_terms else "")
    unroll = f"{terms} terms per output, more than int_unroll_terms ({t.int_unroll_terms})" \
        if terms > t.int_unroll_terms else ""
    cpu = [Candidate.of(Kind.INT_CONV_TILES, {"tile": tile}, tiles),
           Candidate.of(Kind.INT_CONV_ROWS_UNROLLED,
                        {"channels": min(tile, t.int_unroll_channels)}, unroll),
           Candidate.of(Kind.INT_CONV_ROWS)]
    if kb.target.gpu is None:
        return cpu
    # a GPU's threads: the CPU forms would run their loops on one thread of it
    gpu = "a GPU target: the CPU's loops would run on one thread (int-conv-threads)"
    unfit, reg = conv_tiles_fit(kb.target, geo)
    gemm = ("the weights (or their zero point) are computed at run time" if not const_weights
            else "64-bit sums" if wide else unfit)
    # (dp4a is a fact of the weights and zero point, not a choice: a --strategy may set reg)
    return [Candidate.of(Kind.INT_CONV_GPU_GEMM, {"reg": reg, "dp4a": int(bytes_fit)}, gemm,
                         None, ("reg",)),
            Candidate.of(Kind.INT_CONV_THREADS),
            *(Candidate.of(c.kind, dict(c.params), gpu) for c in cpu)]


def pack_int_conv_weights(wc: np.ndarray, group: int, tile: int) -> np.ndarray:
    """W - zw [M, Cg, taps...] as [group, block, tap, channel in block, c]: each accumulator
    of a tile reads its weights over c contiguously."""
    m, cg = wc.shape[:2]
    mg = m // group
    w = wc.reshape(group, mg // tile, tile, cg, -1)
    return np.ascontiguousarray(w.transpose(0, 1, 4, 2, 3))


def _int_conv(kb: NodeKernelBuilder, node: Node, x_v: Value, xz_v: Value | None, w_v: Value,
              wz_v: Value | None, bias_v: Value | None, channel: Finish) -> None:
    """y[n, m, o] = finish_m(b[m] + sum_{c, k} (x[n, g*Cg + c, o*s + k*d - p] - zx) *
    (w[m, c, k] - zw[m])) with int32 accumulators; taps in the padding are cut off by loop
    bounds (they would multiply x - zx = 0). `channel(m)` sets up per-channel values once and
    returns the finishing function of the accumulator.

    Constant weights (and zero point) are stored as W - zw. The chosen candidate
    (`int_conv_candidates`): with more than int_tile_terms terms per output and a multiple
    of 4 output channels per group they are packed for register tiles (`_int_conv_tiles`);
    with at most int_unroll_terms terms the sums are written out (`_unrolled_rows`);
    otherwise one accumulator per output runs over c and the taps."""
    geo = ConvGeometry.of(node, x_v, w_v, flatten_pointwise=False)
    known = w_v.is_const and (wz_v is None or wz_v.is_const)
    wc = centred_conv_weights(w_v.const, None if wz_v is None else wz_v.const) if known \
        else None
    terms = geo.cg * math.prod(geo.ksz)
    acc_t = accumulator_type(x_v, xz_v, terms * 255 if wc is None else
                             np.abs(wc.reshape(wc.shape[0], -1)).sum(1).max(initial=0), bias_v)
    wide = ", 64-bit sums" if acc_t is not I32 else ""
    x = kb.bind(x_v, "x")
    xz = zero_point(kb, xz_v, "x_zp")
    xz = cast(xz, acc_t) if xz is not None else None
    b = kb.bind(bias_v, "b") if bias_v is not None else None
    y = kb.bind(node.output, "y")
    wz_buf = wz_lit = None
    # dp4a sums the raw 8-bit x against int8 W - zw, the zero point's share subtracted after
    # (zx sum W - zw, a table), and the padding read as zx: where W - zw fits int8 and zx is
    # known at compile time
    zx = None if xz_v is None else int(xz_v.const.reshape(-1)[0]) \
        if xz_v.is_const and xz_v.type.numel == 1 else False
    bytes_fit = known and zx is not False and x_v.dtype in (DType.U8, DType.I8) and \
        wc.size > 0 and int(wc.min()) >= -128 and int(wc.max()) <= 127
    form = kb.choose(int_conv_candidates(kb, geo, known, acc_t is not I32, bytes_fit))
    dp4a = form.kind is Kind.INT_CONV_GPU_GEMM and bool(int(form["dp4a"]))
    if known:
        if form.kind is Kind.INT_CONV_TILES:
            tile = int(form["tile"])
            w = constant_table(kb, narrow(pack_int_conv_weights(wc, geo.group, tile)),
                               f"packed{tile}", w_v)
            kb.strategy = "integer conv register tiles" + wide
            _int_conv_tiles(kb, geo, x, xz, w, tile, b, y, channel, acc_t)
            return
        if not dp4a:  # (which stores its own bytes)
            w = constant_table(kb, narrow(wc), "wc", w_v)
    else:
        w = kb.bind(w_v, "w")
        per_m = wz_v is not None and wz_v.type.numel > 1
        wz_buf = kb.bind(wz_v, "w_zp") if per_m else None
        wz_lit = zero_point(kb, wz_v, "w_zp") if not per_m else None
    xs, ws = row_major_strides(x_v.shape), row_major_strides(w_v.shape)
    ys = row_major_strides(node.output.shape)
    if form.kind is Kind.INT_CONV_GPU_GEMM:
        reg = int(form["reg"])
        kb.strategy = "integer conv as implicit GEMM, shared-memory tiles" + \
            (", tensor cores (int8)" if dp4a and int8_on_tensor_cores(kb.target) else
             (f", {reg} x {reg} outputs a thread" if reg > 1 else "") +
             (", dp4a" if dp4a else ""))
        kterms = geo.cg * math.prod(geo.ksz)
        share = None
        if dp4a:  # raw bytes against int8 W - zw; the padding reads zx
            w8 = constant_table(kb, wc.reshape(geo.m, kterms).astype(np.int8), "wc8", w_v)
            share = constant_table(kb, (zx or 0) * wc.reshape(geo.m, kterms).astype(np.int64)
                                   .sum(1).astype(np.int32), "zshare", w_v)
            weight = lambda m, k: w8[m * kterms + k]  # noqa: E731
            pixel = lambda n, c, ipos: x[offset([n, c, *ipos], xs)]  # noqa: E731
        else:  # int32 tiles of W - zw and x - zx
            weight = lambda m, k: cast(w[m * kterms + k], I32)  # noqa: E731

            def pixel(n, c, ipos):
                xv = cast(x[offset([n, c, *ipos], xs)], I32)
                return xv - xz if xz is not None else xv

        def store(n, m, coords, p, acc):
            total = acc - share[m] if share is not None else acc
            total = total + cast(b[m], I32) if b is not None else total
            kb.store(y, offset([n, m], ys[:2]) + p, channel(m)(total))

        conv_as_gemm(kb, geo, weight, pixel, store, x_v.dtype if dp4a else I32, reg,
                     pad=const(zx or 0, x_v.dtype) if dp4a else None, dp4a=dp4a)
        return
    if form.kind is Kind.INT_CONV_THREADS:
        kb.strategy = "integer conv, a GPU thread an output" + wide
        dims = (geo.n, geo.m, *geo.osp)
        with independent_loops(kb, dims, ["n", "m", *(f"o{a}" for a in geo.names)],
                               terms) as (n, m, *oo):
            wz = named(kb, "wz", cast(wz_buf[m], acc_t)) if wz_buf is not None else \
                cast(wz_lit, acc_t) if wz_lit is not None else None
            finish = channel(m)
            taps = geo.row_taps(kb, oo)
            acc = kb.local("acc", cast(b[m], acc_t) if b is not None else const(0, acc_t))
            g = named(kb, "g", m // geo.mg)
            with kb.loop(geo.cg, "c") as c, \
                    kb.loops([t[1] for t in taps], [f"k{a}" for a in geo.names]) as kk:
                kidx = [t[0] + k for t, k in zip(taps, kk, strict=True)]
                xv = cast(x[offset([n, g * geo.cg + c, *geo.input_pos(oo, kidx)], xs)], acc_t)
                wv = cast(w[offset([m, c, *kidx], ws)], acc_t)
                kb.assign(acc, acc + (xv - xz if xz is not None else xv)
                          * (wv - wz if wz is not None else wv))
            kb.store(y, offset([n, m, *oo], ys), finish(acc))
        return
    unroll = form.kind is Kind.INT_CONV_ROWS_UNROLLED
    tj = int(form["channels"]) if unroll else 1
    kb.strategy = ("integer conv rows, unrolled" if unroll else "integer conv rows") + wide
    with kb.loops([geo.n, geo.group, geo.mg // tj], ["n", "g", "mo"]) as (n, g, mo):
        chans = []
        for j in range(tj):
            m = named(kb, "m", g * geo.mg + mo * tj + j)
            wz = named(kb, "wz", cast(wz_buf[m], acc_t)) if wz_buf is not None else \
                cast(wz_lit, acc_t) if wz_lit is not None else None
            chans.append(_Channel(m, channel(m), wz, cast(b[m], acc_t) if b is not None
                                  else const(0, acc_t)))

        def centered_x(c, pos) -> Expr:
            xv = cast(x[offset([n, g * geo.cg + c, *pos], xs)], acc_t)
            return xv - xz if xz is not None else xv

        def weight(ch: _Channel, c, kidx) -> Expr:
            wv = cast(w[offset([ch.m, c, *kidx], ws)], acc_t)
            return wv - ch.wz if ch.wz is not None else wv

        def store(ch: _Channel, oo, acc: Expr) -> None:
            kb.store(y, offset([n, ch.m, *oo], ys), ch.finish(acc))

        def pixel(ch: _Channel, oo: list[Expr]) -> None:
            taps = geo.row_taps(kb, oo)
            acc = kb.local("acc", ch.bias)
            with kb.loop(geo.cg, "c") as c, \
                    kb.loops([t[1] for t in taps], [f"k{a}" for a in geo.names]) as kk:
                kidx = [t[0] + k for t, k in zip(taps, kk, strict=True)]
                kb.assign(acc, acc + centered_x(c, geo.input_pos(oo, kidx)) * weight(ch, c, kidx))
            store(ch, oo, acc)

        if not unroll:
            with kb.loops(geo.osp, [f"o{a}" for a in geo.names]) as oo:
                pixel(chans[0], oo)
        else:
            _unrolled_rows(kb, geo, chans, weight, centered_x, pixel, store)


@dataclass
class _Channel:
    """An output channel of a convolution kernel: its index, finishing function, weight zero
    point (None when subtracted at compile time) and bias."""

    m: Expr
    finish: Callable[[Expr], Expr]
    wz: Expr | None
    bias: Expr


def _unrolled_rows(kb: NodeKernelBuilder, geo: ConvGeometry, chans: list[_Channel],
                   weight: Callable, centered_x: Callable, pixel: Callable,
                   store: Callable) -> None:
    """A few output channels with few terms per output (depthwise, narrow pointwise): their
    weights in locals and, where every tap of a row's columns lies inside the input, each sum
    written out, so the loop over those columns vectorizes (the channels share its x loads);
    the other positions go through `pixel`."""
    terms = [(c, k) for c in range(geo.cg) for k in itertools.product(*map(range, geo.ksz))]
    wk = {(id(ch), c, k): named(kb, "wk", weight(ch, c, [const(v) for v in k]))
          for ch in chans for c, k in terms}

    def unrolled(oo: list[Expr]) -> None:
        xs = [centered_x(c, geo.input_pos(oo, [const(v) for v in k])) for c, k in terms]
        for ch in chans:
            acc = ch.bias
            for xv, (c, k) in zip(xs, terms, strict=True):
                acc = acc + xv * wk[id(ch), c, k]
            store(ch, oo, named(kb, "acc", acc))

    inner = geo.interior()
    lo, hi = inner[-1]
    last = geo.osp[-1]

    def edge(start: int, stop: int, oo: list[Expr]) -> None:
        for ch in chans:
            with kb.loop(stop - start, "ow") as t:
                pixel(ch, [*oo, t + start])

    def interior_row(oo: list[Expr]) -> None:
        edge(0, lo, oo)
        with kb.loop(hi - lo, "ow") as t:
            unrolled([*oo, t + lo])
        edge(hi, last, oo)

    with kb.loops(geo.osp[:-1], [f"o{a}" for a in geo.names[:-1]]) as oo:
        cond = None  # the row's taps along the outer axes all lie inside the input
        for o, (a, z), size in zip(oo, inner[:-1], geo.osp[:-1], strict=True):
            for t in ([o >= a] if a > 0 else []) + ([o < z] if z < size else []):
                cond = t if cond is None else cond & t
        if cond is None:
            interior_row(oo)
        else:
            with kb.if_(cond):
                interior_row(oo)
            with kb.else_():
                edge(0, last, oo)


def _int_conv_tiles(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, xz: Expr | None,
                w: Buffer, tile: int, b: Buffer | None, y: Buffer, channel: Finish,
                acc_t: DType = I32) -> None:
    """Register tiles of `tile` output channels, weights packed by pack_int_conv_weights: per
    output position, acc[j] += (x[c, tap] - zx) * w[tap, j, c] over the taps and input
    channels, the innermost loop over c updating every j from one x load. gcc vectorizes that
    loop over c: each j's weights are contiguous in c, the x values a strided gather that the
    tile shares."""
    xs = row_major_strides((geo.n, geo.cg * geo.group, *geo.isp))
    ys = row_major_strides((geo.n, geo.mg * geo.group, *geo.osp))
    ntaps = math.prod(geo.ksz)
    blocks = geo.mg // tile
    with kb.loops([geo.n, geo.group, blocks], ["n", "g", "blk"]) as (n, g, blk):
        m0 = named(kb, "m0", g * geo.mg + blk * tile)
        wblk = named(kb, "wblk", (g * blocks + blk) * (ntaps * geo.cg * tile))
        finishes = [channel(m0 + j) for j in range(tile)]
        with kb.loops(geo.osp, [f"o{a}" for a in geo.names]) as oo:
            taps = geo.row_taps(kb, oo)
            accs = [kb.local(f"acc{j}", cast(b[m0 + j], acc_t) if b is not None
                             else const(0, acc_t)) for j in range(tile)]
            with kb.loops([t[1] for t in taps], [f"k{a}" for a in geo.names]) as kk:
                kidx = [t[0] + k for t, k in zip(taps, kk, strict=True)]
                xrow = named(kb, "xrow", offset([n, g * geo.cg, *geo.input_pos(oo, kidx)], xs))
                wrow = named(kb, "wrow", wblk + offset(kidx, row_major_strides(geo.ksz))
                             * (geo.cg * tile))
                with kb.loop(geo.cg, "c") as c:
                    xv = cast(x[xrow + c * xs[1]], acc_t)
                    xv = named(kb, "xv", xv - xz if xz is not None else xv)
                    for j, acc in enumerate(accs):
                        wv = cast(w[wrow + j * geo.cg + c], acc_t)
                        kb.assign(acc, acc + xv * wv)
            for j, acc in enumerate(accs):
                kb.store(y, offset([n, m0 + j, *oo], ys), finishes[j](acc))


@kernel("ConvInteger")
def conv_integer(kb: NodeKernelBuilder, node: Node) -> None:
    _int_conv(kb, node, node.inputs[0], node.input(2), node.inputs[1], node.input(3), None,
              lambda m: lambda acc: acc)


@kernel("QLinearConv")
def qlinear_conv(kb: NodeKernelBuilder, node: Node) -> None:
    """y = sat(rint(acc * M[m]) + zy), M[m] = sx * sw[m] / sy; with `rq_shift`
    sat(mulshift(acc, q[m], s) + zy)."""
    x_v, sx_v, zx_v, w_v, sw_v, zw_v, sy_v, zy_v, b_v = (node.input(i) for i in range(9))
    fixed = fixed_point(node)
    if kb.target.arch == "hls" and (kb.forced is None or kb.forced.kind in
                                    (Kind.HLS_CONV_MVAU, Kind.HLS_SPARSE_CONV,
                                     Kind.HLS_DEPTHWISE)):
        chosen = kb.choose([sparse_conv_candidate(node, x_v, zx_v, w_v, b_v),
                            conv_mvau_candidate(node, x_v, zx_v, w_v, b_v),
                            depthwise_unit_candidate(node, x_v, zx_v, w_v, b_v),
                            Candidate.of(Kind.INT_CONV_ROWS)])
        if chosen.kind is Kind.HLS_DEPTHWISE:
            depthwise_unit(kb, node, x_v, zx_v, w_v, zw_v, b_v, zy_v, sw_v, int(chosen["pe"]))
            return
        unit = sparse_conv if chosen.kind is Kind.HLS_SPARSE_CONV else \
            conv_mvau if chosen.kind is Kind.HLS_CONV_MVAU else None
        if unit is not None:
            unit(kb, node, ConvGeometry.of(node, x_v, w_v, flatten_pointwise=False), x_v,
                 zx_v, w_v, zw_v, b_v, zy_v, sw_v, int(chosen["pe"]), int(chosen["simd"]))
            return
    if fixed is not None:  # (fixed-point{scalar=1}: int32 sums of 8-bit x)
        finish = fixed_finish(kb, node, fixed, zero_point(kb, zy_v, "y_zp"), sw_v)
        _int_conv(kb, node, x_v, zx_v, w_v, zw_v, b_v,
                  lambda m: lambda acc: finish((), None, m, acc))
        kb.strategy += ", fixed-point requantization"
        return
    per_m = sw_v.type.numel > 1
    if sx_v.is_const and sw_v.is_const and sy_v.is_const:
        table = requantize_multiplier(sx_v.const.reshape(()), sw_v.const.reshape(-1),
                                      sy_v.const.reshape(()))
        if per_m:
            buf = constant_table(kb, table, "mults", sw_v)
            mult_of = lambda m: buf[m]  # noqa: E731
        else:
            lit = const(float(table.reshape(-1)[0]), F32)
            mult_of = lambda m: lit  # noqa: E731
    else:
        sx, sy = scalar(kb, sx_v, "x_scale", F32), scalar(kb, sy_v, "y_scale", F32)
        sw_buf = kb.bind(sw_v, "w_scale") if per_m else None
        sw = scalar(kb, sw_v, "w_scale", F32) if not per_m else None
        mult_of = lambda m: (sx * (cast(sw_buf[m], F32) if per_m else sw)) / sy  # noqa: E731
    req = Requant.make(kb, node.output.dtype, zero_point(kb, zy_v, "y_zp"))

    def channel(m: Expr):
        mm = named(kb, "mult", mult_of(m))
        return lambda acc: req(kb, cast(acc, F32) * mm)

    _int_conv(kb, node, x_v, zx_v, w_v, zw_v, b_v, channel)
