"""Micro-kernels: the hot inner loops, written once in kernel IR and shared by every node.

Each builder returns a `Kernel` specialised on what must be known at compile time for the
accumulators to live in registers (vector lanes L, the register tile, constant strides,
epilogue) and takes the rest as scalar parameters, so one micro-kernel serves many layers.
Every renderer prints them with its own vector ISA; they are cached by their parameters.

Register tiles (AVX-512 has 32 vector registers, AVX2 16):

- `conv_tile`: a dense convolution on channel-blocked data: MB output blocks of L channels
  x R output pixels of one row. For every input block cb, valid tap (kh, kw) and input
  channel ci of the block, MB weight vectors are loaded once and each of the R input values
  is broadcast once: acc[t][j] += x[.., pixel t, ci] * w[cb, kh, kw, ci, j*L : (j+1)*L].
  MB*R accumulators + MB weights + 1 broadcast must fit the register file.
- `depthwise_tile`: R output pixels of one channel block: acc[t] += x[.., pixel t, :] *
  w[kh, kw, :] (the L channels of a block are the lanes, so no broadcast is needed).
- `gemm_tile`: rows of A against a packed panel of B (the weights): MR rows x NV vectors,
  acc[i][v] += A[i, k] * Bp[k, v*L : (v+1)*L].

The epilogue y = act(acc + bias (+ residual)) runs on the accumulators before their one store.

Weights stored as int8 codes (the `dequantize-weights` pass's `WeightCodes`: a quarter of the
bytes) reach the float tiles two ways. The dense convolution's driver converts a chunk of
codes once per task into a stack buffer (`widen_codes`, codes x scale: the float build's
weights, bit for bit) that the tiles then read as they read float weights. Converted in the
tile, the 2 conversions per 24 FMAs of the AVX-512 tile cost 6-13% on ResNet-18's
compute-bound layers (Zen 4). The GEMM tile (`w8`) loads its codes as bytes, converts them in
the register it uses them from and scales the sums in its epilogue: a matrix-vector product
uses each weight once, and reads a quarter of the bytes. Depthwise weights stay float.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..ir.dtypes import DType
from ..kernel_ir.kernel import (
    INDEX,
    Buffer,
    Expr,
    Kernel,
    KernelBuilder,
    broadcast,
    cast,
    fma,
    vload,
)

F32, I8, I32 = DType.F32, DType.I8, DType.I32
Activation = Callable[[Expr], Expr]

_CACHE: dict[tuple, Kernel] = {}


def _cached(key: tuple, build: Callable[[], Kernel]) -> Kernel:
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


def wload(w: Buffer, index: Expr, lanes: int) -> Expr:
    """A float weight vector: loaded, or, from int8 codes, widened and converted."""
    v = vload(w, index, lanes)
    return cast(cast(v, I32), F32) if w.dtype is I8 else v


def widen_codes(lanes: int, mb: int) -> Kernel:
    """n x MB vectors of int8 codes as float weights, code x scale (the float constant's
    values exactly), vector j of each MB taking scale vector j: a chunk of a convolution's
    packed codes, converted once per task. Parameters: w (codes), s (MB x L scales), u (out),
    n."""
    def build() -> Kernel:
        kb = KernelBuilder(f"mk_widen_i8x{lanes}_m{mb}",
                           f"int8 codes x scales to float, {mb} vectors of {lanes} at a time")
        w, s = kb.pointer("w", I8), kb.pointer("s", F32)
        u, n = kb.pointer("u", F32, "out"), kb.scalar("n")
        scales = [kb.local(f"s{j}_", vload(s, j * lanes, lanes)) for j in range(mb)]
        with kb.loop(n, "i") as i:
            for j in range(mb):
                at = (i * mb + j) * lanes
                kb.store(u, at, wload(w, at, lanes) * scales[j])
        return kb.build()

    return _cached(("widen", lanes, mb), build)


def conv_tiles(lanes: int, registers: int = 16) -> tuple[int, int]:
    """(MB, R): output blocks and pixels of the dense-convolution register tile, for an ISA
    with `registers` vector registers: AVX-512 24 + 2 + 1 of 32, aarch64 NEON 24 + 4 + 1 of
    32, AVX2 and Armv7 NEON 12 + 2 + 1 of 16."""
    if lanes >= 16:
        return 2, 12
    if registers >= 32:
        return 4, 6
    return (2, 6) if lanes >= 4 else (1, 4)


def stem_tiles(lanes: int, registers: int = 16) -> tuple[int, int]:
    """(MB, R) of the tile over a plain NCHW input: on AVX2 R = 5, measured faster than 6 on
    7x7 and 3x3 stride-2 stems (the broadcasts of overlapping taps crowd the 16 registers)."""
    return (2, 5) if lanes == 8 else conv_tiles(lanes, registers)


def depthwise_pixels(lanes: int, registers: int = 16) -> int:
    return 8 if lanes >= 16 or registers >= 32 else 6


def conv_tile(lanes: int, mb: int, r: int, x_pix: int, x_ci: int | None,
              nci: int | None, residual: bool, act_name: str,
              act: Activation | None, kw_const: tuple[int, int] | None = None,
              partial: bool = False) -> Kernel:
    """The dense convolution tile (see the module doc). `x_pix` (elements between the
    input values of consecutive output pixels) is a constant so that the R broadcasts
    address x + constant; `x_ci` and `nci` are constants for blocked input (1 and L) and
    parameters (None) for a plain NCHW input, whose interior tiles also fix the taps of a
    row (`kw_const`: count and stride).

    A `partial` tile reduces over a chunk of the input blocks only: two more parameters say
    whether to start from the partial sums already in y (`acc_in` nonzero) and whether more
    chunks follow (`more` nonzero: store the raw sums; zero: apply the epilogue). The driver
    then keeps one chunk of weights in L1 while it sweeps many output rows."""
    key = ("conv", lanes, mb, r, x_pix, x_ci, nci, residual, act_name, kw_const, partial)

    def build() -> Kernel:
        tag = f"{'b' if x_ci is not None else 'p'}{x_pix}{'_z' if residual else ''}"
        tag += "_acc" if partial else ""
        tag += f"_k{kw_const[0]}s{kw_const[1]}" if kw_const else ""
        kb = KernelBuilder(f"mk_conv_f32x{lanes}_m{mb}_r{r}_{tag}{_act_tag(act_name)}",
                           f"conv tile: {mb} blocks of {lanes} output channels x {r} pixels",
                           outlined=True)
        x, w, b = kb.pointer("x", F32), kb.pointer("w", F32), kb.pointer("b", F32)
        z = kb.pointer("z", F32) if residual else None
        y = kb.pointer("y", F32, "out")
        ncb, nkh, nkw = kb.scalar("ncb"), kb.scalar("nkh"), kb.scalar("nkw")
        n_ci = kb.scalar("nci") if nci is None else nci
        xs_ci = kb.scalar("x_ci") if x_ci is None else x_ci
        x_cb, x_kh, x_kw = kb.scalar("x_cb"), kb.scalar("x_kh"), kb.scalar("x_kw")
        w_cb, w_kh, w_kw = kb.scalar("w_cb"), kb.scalar("w_kh"), kb.scalar("w_kw")
        y_mb = kb.scalar("y_mb")
        acc_in, more = (kb.scalar("acc_in"), kb.scalar("more")) if partial else (None, None)
        # FMA latency x throughput needs about 8 independent accumulators; a narrow tile
        # (the pixels at a row's edges) keeps `ways` sets over interleaved input channels
        ways = 1
        if nci is not None:
            while r * mb * ways < 8 and ways < 4 and nci % (2 * ways) == 0:
                ways *= 2
        sets = [[[kb.local(f"acc{t}_{j}_", broadcast(0.0, lanes)) for j in range(mb)]
                 for t in range(r)] for _ in range(ways)]
        if partial:
            with kb.if_(acc_in.ne(0)):
                for t in range(r):
                    for j in range(mb):
                        kb.assign(sets[0][t][j], vload(y, j * y_mb + t * lanes, lanes))
        if x_ci is None:  # plain NCHW input: [ci][kh][kw] order, taps along a row innermost
            _plain_taps(kb, sets[0], x, w, n_ci, xs_ci, nkh, x_kh, nkw, x_kw, w_cb, w_kh,
                        mb, r, lanes, x_pix, kw_const)
            ncb = 0  # (the blocked loop nest below is empty)
        with kb.loop(ncb, "cb") as cb, kb.loop(nkh, "kh") as kh, kb.loop(nkw, "kw") as kw:
            xo = kb.local("xo", cb * x_cb + kh * x_kh + kw * x_kw)
            wo = kb.local("wo", cb * w_cb + kh * w_kh + kw * w_kw)
            # two input channels per iteration halve the loop's overhead (5-10% on 3x3
            # convs); written out in the IR instead, the copies' loads crowd the registers
            with kb.loop(n_ci // ways if ways > 1 else n_ci, "ci",
                         unroll=2 if nci is not None else 0) as cq:
                for u, acc in enumerate(sets):
                    ci = cq * ways + u if ways > 1 else cq
                    wv = [kb.local(f"w{j}_", vload(w, wo + ci * (mb * lanes) + j * lanes,
                                                   lanes)) for j in range(mb)]
                    xi = kb.local("xi", xo + ci * xs_ci)
                    for t in range(r):
                        xv = kb.local(f"x{t}_", broadcast(x[xi + t * x_pix], lanes))
                        for j in range(mb):
                            kb.assign(acc[t][j], fma(xv, wv[j], acc[t][j]))
        acc = sets[0]
        for other in sets[1:]:
            for t in range(r):
                for j in range(mb):
                    kb.assign(acc[t][j], acc[t][j] + other[t][j])
        if partial:
            with kb.if_(more.ne(0)):
                for j in range(mb):
                    for t in range(r):
                        kb.store(y, j * y_mb + t * lanes, acc[t][j])
            with kb.else_():
                _conv_epilogue(kb, acc, b, z, y, y_mb, mb, r, lanes, act)
        else:
            _conv_epilogue(kb, acc, b, z, y, y_mb, mb, r, lanes, act)
        return kb.build()

    return _cached(key, build)


def _conv_epilogue(kb: KernelBuilder, acc, b, z, y, y_mb, mb: int, r: int, lanes: int,
                   act: Activation | None) -> None:
    """y = act(acc + bias (+ residual)), one store per accumulator."""
    for j in range(mb):
        bias = kb.local(f"b{j}_", vload(b, j * lanes, lanes))
        for t in range(r):
            v = acc[t][j] + bias
            if z is not None:
                v = v + vload(z, j * y_mb + t * lanes, lanes)
            kb.store(y, j * y_mb + t * lanes, _apply(kb, act, v))


def _plain_taps(kb: KernelBuilder, acc, x, w, n_ci, xs_ci, nkh, x_kh, nkw, x_kw, w_ci, w_kh,
                mb: int, r: int, lanes: int, x_pix: int, kw_const: tuple[int, int] | None):
    """The reduction of a tile over a plain NCHW input (a stem convolution with a few input
    channels): weights [ci][kh][kw][block][lane]; with `kw_const` = (taps, tap stride) an
    interior tile's row of taps has a constant length, so it unrolls."""
    n_kw, xs_kw = kw_const if kw_const else (nkw, x_kw)
    with kb.loop(n_ci, "ci") as ci, kb.loop(nkh, "kh") as kh:
        xo = kb.local("xo", ci * xs_ci + kh * x_kh)
        wo = kb.local("wo", ci * w_ci + kh * w_kh)
        if kw_const and xs_kw * (n_kw - 1) >= x_pix:
            _overlapping_taps(kb, acc, x, w, xo, wo, n_kw, xs_kw, mb, r, lanes, x_pix)
        else:
            _row_of_taps(kb, acc, x, w, xo, wo, n_kw, xs_kw, mb, r, lanes, x_pix,
                         "unroll" if kw_const else "serial")


def _row_of_taps(kb: KernelBuilder, acc, x, w, xo, wo, n_kw, xs_kw, mb: int, r: int,
                 lanes: int, x_pix: int, kind: str) -> None:
    with kb.loop(n_kw, "kw", kind=kind) as kw:
        wv = [kb.local(f"w{j}_", vload(w, wo + kw * (mb * lanes) + j * lanes, lanes))
              for j in range(mb)]
        xi = kb.local("xi", xo + kw * xs_kw)
        for t in range(r):
            xv = kb.local(f"x{t}_", broadcast(x[xi + t * x_pix], lanes))
            for j in range(mb):
                kb.assign(acc[t][j], fma(xv, wv[j], acc[t][j]))


def _overlapping_taps(kb: KernelBuilder, acc, x, w, xo, wo, n_kw: int, xs_kw: int, mb: int,
                      r: int, lanes: int, x_pix: int) -> None:
    """One row of taps when the taps of neighbouring pixels read the same inputs (a 7x7
    stride-2 stem): each distinct input value is broadcast once and meets the weights of
    every (pixel, tap) that reads it. Unrolled tap by tap, a C compiler merges the repeated
    broadcasts itself and spills the register tile to hold them."""
    for e in range(x_pix * (r - 1) + xs_kw * (n_kw - 1) + 1):
        uses = [(t, (e - t * x_pix) // xs_kw) for t in range(r)
                if 0 <= e - t * x_pix < n_kw * xs_kw and (e - t * x_pix) % xs_kw == 0]
        if uses:
            xv = kb.local("xe_", broadcast(x[xo + e], lanes))
            for t, kw in uses:
                for j in range(mb):
                    wv = vload(w, wo + kw * (mb * lanes) + j * lanes, lanes)
                    kb.assign(acc[t][j], fma(xv, wv, acc[t][j]))


def depthwise_tile(lanes: int, r: int, x_pix: int, residual: bool, act_name: str,
                   act: Activation | None) -> Kernel:
    """R pixels of one channel block of a depthwise convolution (see the module doc)."""
    key = ("dw", lanes, r, x_pix, residual, act_name)

    def build() -> Kernel:
        tag = f"p{x_pix}{'_z' if residual else ''}"
        kb = KernelBuilder(f"mk_dwconv_f32x{lanes}_r{r}_{tag}{_act_tag(act_name)}",
                           f"depthwise conv tile: {lanes} channels x {r} pixels")
        x, w, b = kb.pointer("x", F32), kb.pointer("w", F32), kb.pointer("b", F32)
        z = kb.pointer("z", F32) if residual else None
        y = kb.pointer("y", F32, "out")
        nkh, nkw = kb.scalar("nkh"), kb.scalar("nkw")
        x_kh, x_kw, w_kh = kb.scalar("x_kh"), kb.scalar("x_kw"), kb.scalar("w_kh")
        bias = kb.local("bias", vload(b, 0, lanes))
        acc = [kb.local(f"acc{t}_", bias) for t in range(r)]
        with kb.loop(nkh, "kh") as kh, kb.loop(nkw, "kw") as kw:
            xo = kb.local("xo", kh * x_kh + kw * x_kw)
            wv = kb.local("wv", vload(w, kh * w_kh + kw * lanes, lanes))
            for t in range(r):
                kb.assign(acc[t], fma(vload(x, xo + t * x_pix, lanes), wv, acc[t]))
        for t in range(r):
            v = acc[t] if z is None else acc[t] + vload(z, t * lanes, lanes)
            kb.store(y, t * lanes, _apply(kb, act, v))
        return kb.build()

    return _cached(key, build)


def gemm_tile(lanes: int, mr: int, nv: int, residual: bool, act_name: str,
              act: Activation | None, w8: bool = False) -> Kernel:
    """MR rows x NV vectors of C = act(A @ Bp + bias (+ Z)); Bp is a panel of the packed
    weights, [K][NV*L] contiguous. `ncols` (<= NV*L) columns are stored, the last vector
    masked, so the panel may run past N. `w8`: Bp holds int8 codes, converted as they are
    loaded, and the sums are scaled by the panel's scales (parameter `s`) before the bias."""
    key = ("gemm", lanes, mr, nv, residual, act_name, w8)

    def build() -> Kernel:
        kb = KernelBuilder(f"mk_gemm_f32x{lanes}_m{mr}_v{nv}{'_z' if residual else ''}"
                           f"{'_w8' if w8 else ''}{_act_tag(act_name)}",
                           f"gemm tile: {mr} rows x {nv * lanes} columns")
        a = kb.pointer("a", F32)
        bp = kb.pointer("bp", I8 if w8 else F32)
        s = kb.pointer("s", F32) if w8 else None
        bias = kb.pointer("bias", F32)
        z = kb.pointer("z", F32) if residual else None
        c = kb.pointer("c", F32, "out")
        k_n, lda, ldc, ncols = kb.scalar("k"), kb.scalar("lda"), kb.scalar("ldc"), \
            kb.scalar("ncols")
        width = nv * lanes
        acc = [[kb.local(f"acc{i}_{v}_", broadcast(0.0, lanes)) for v in range(nv)]
               for i in range(mr)]
        with kb.loop(k_n, "kk") as kk:
            bv = [kb.local(f"b{v}_", wload(bp, kk * width + v * lanes, lanes))
                  for v in range(nv)]
            for i in range(mr):
                av = kb.local(f"a{i}_", broadcast(a[i * lda + kk], lanes))
                for v in range(nv):
                    kb.assign(acc[i][v], fma(av, bv[v], acc[i][v]))
        full = kb.local("full", (ncols // lanes).cast(INDEX))
        rest = kb.local("rest", ncols - full * lanes)
        for v in range(nv):
            bias_v = kb.local(f"bias{v}_", vload(bias, v * lanes, lanes))
            scale = kb.local(f"s{v}_", vload(s, v * lanes, lanes)) if s is not None else None
            for i in range(mr):
                val = acc[i][v] + bias_v if scale is None else fma(acc[i][v], scale, bias_v)
                at = i * ldc + v * lanes
                with kb.if_(full > v):
                    zz = val if z is None else val + vload(z, at, lanes)
                    kb.store(c, at, _apply(kb, act, zz))
                with kb.else_(), kb.if_(full.eq(v) & (rest > 0)):
                    zz = val if z is None else val + vload(z, at, lanes, rest)
                    kb.store(c, at, _apply(kb, act, zz), rest)
        return kb.build()

    return _cached(key, build)


def _apply(kb: KernelBuilder, act: Activation | None, v: Expr) -> Expr:
    if act is None:
        return v
    return act(kb.local("v", v))  # activations read their operand more than once


def _act_tag(name: str) -> str:
    """The activation's part of a micro-kernel name: its name and parameters as an
    identifier (Clip [0, 6] -> _clip_0_6)."""
    return "_" + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") if name else ""
