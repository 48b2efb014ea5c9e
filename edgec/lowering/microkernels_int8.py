"""The int8 micro-kernels: the GEMM tile (uint8/int8 rows of A times a packed int8 panel of
B, int32 accumulators fed by `dot4`) and the blocked convolution tiles.

B [K, N] (the constant operand) comes packed per panel of W = NV*L columns (L int32 lanes) as
[K/4][W][4] (ir/encodings.py "gemm lL vNV"): the 4 consecutive k of a column side by side, so
that one 4L-byte load holds a k-group of L columns and `dot4` against the broadcast 4 bytes of
a row of A adds sum_{k<4} A[i, 4g+k] B[4g+k, j] to each column's lane. The last K % 4 rows of B
are one more k-group against A's last 4 bytes, its rows already summed zero (the row of A is
never read past its end).

The tile is MR rows x NV vectors: acc[i][v] += dot4(A[i, 4g:4g+4], Bp[g, v]). Zero points
fold into the epilogue with sums made at compile time (the column sums of the constant B):
sum_k (A[i,k] - za)(B[k,j] - zb[j]) = acc[i][j] + za * (K zb[j] - colsum[j]) - zb[j] rowsum[i],
rowsum[i] (needed only when zb is not 0) computed by the caller. The result is stored as
int32 or requantized: y = sat(rint(v * M) + zy), M per tensor or per column, exactly as the
scalar kernels of `kernels/quant.py` (clamped in float, rounded half to even), or in fixed
point (kernel_ir.mulshift, ir/ops/quant.py requantize_fixed).

Re-centred (`recentre`, for vector units whose int8 x int8 dot4 is the cheaper one: NEON's,
target.VectorUnit.dot4_recentre): each row's broadcast uint8 bytes become a - 128 once
(kernel_ir.recentre) and the tile sums int8 x int8 dot4s, sum (a - 128) b = sum a b - 128
colsum. The 128 colsum goes to the compile-time tables, so nothing corrects in the loop: a
uint8 row with zero point za is an int8 row a - 128 with zero point za - 128 (the caller
passes za - 128, row sums minus 128 K, and the table cz even where za is 0), and the conv
tiles' corr is computed with zx - 128.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir.dtypes import DType
from ..ir.encodings import GemmWeights, QConvWeights, gemm_tile_shape
from ..ir.ops.quant import QUANT_RANGES
from ..kernel_ir.kernel import (
    INDEX,
    Expr,
    Kernel,
    KernelBuilder,
    broadcast,
    call,
    cast,
    const,
    dot4,
    maximum,
    minimum,
    mul16,
    mulshift,
    nibble,
    pairdot,
    pairfold,
    select,
    vbroadcast,
    vload,
)
from ..kernel_ir.kernel import recentre as recentre_bytes

F32, I32, I8 = DType.F32, DType.I32, DType.I8

_CACHE: dict[tuple, Kernel] = {}


tile_shape = gemm_tile_shape  # (MR, NV) of the GEMM tile (ir/encodings.py)


@dataclass(frozen=True)
class Int8Epilogue:
    """What the tile does with its int32 sums: subtract the zero points' terms (`zero_a`:
    za times the per-column table cz = K zb - colsum; `zero_b`: rowsum[i] times zb[j]), then
    store int32 (`out` I32) or requantize to `out` (U8/I8) with a multiplier per column
    (`mult_per_column`) or one per tensor: float32, or int32 with a shift (`fixed`:
    kernel_ir.mulshift)."""

    out: DType = I32
    zero_a: bool = False
    zero_b: bool = False
    mult_per_column: bool = False
    fixed: bool = False

    @property
    def tag(self) -> str:
        t = "_za" * self.zero_a + "_zb" * self.zero_b
        if self.out is not I32:
            t += f"_q{self.out.name.lower()}{'c' if self.mult_per_column else ''}"
            t += "_fx" * self.fixed
        return t


def gemm_tile(lanes: int, mr: int, nv: int, a_type: DType, ktail: int,
              epi: Int8Epilogue, nibbles: bool = False, used: int = 0,
              sparse: bool = False, pairs16: bool = False, recentre: bool = False,
              pairs: bool = False) -> Kernel:
    """MR rows x NV vectors of y = epilogue(A @ B) (see the module doc): parameters a (row 0
    of the tile), bp and bt (the panel's k-groups and its K % 4 rows, ir/encodings.py
    "gemm lL vNV [nib]": with `nibbles` two vectors to a byte, summed as 16 * b and the
    multipliers divided by 16 by the caller), the epilogue's column tables, y; then groups
    (K/4), lda, ldy, ncols (columns to store, <= W), and the epilogue's scalars (za, the row
    sums, the multiplier per tensor, zy, the shift). With `used` < NV only the first `used`
    vectors of each k-group are summed and stored: a last panel that holds fewer columns
    (N = 196: 4 of a 64-column panel) takes a quarter of the work instead of the whole.

    `sparse` ("gemm lL vV sparse"): one vector of the panel (bp, bt and the tables at its
    columns; `used` 1), over its stored k-groups only: two more parameters after bp/bt,
    gidx (the groups' indices, int32) and nst (their count).

    `pairs16` (uint8 A): B's byte pairs fit int16 (kernel_ir.pairs_fit16; checked by the
    caller on the whole of B, its tail group included): the dot4s say so (op dot4p).
    `recentre` (uint8 A): the rows are summed as a - 128, which the caller's zero point,
    row sums and table cz account for (the module doc). `pairs` (int8 or re-centred rows, B
    within [-127, 127], not sparse, no nibbles): the k-groups two at a time, their products
    summed in int16 (kernel_ir.pairdot) into two accumulators per vector, folded after the
    k loop."""
    used = 1 if sparse else used or nv
    recentre = recentre and a_type is DType.U8
    if recentre and not epi.zero_a:
        raise ValueError("gemm_tile: re-centred rows need the zero-point table (za - 128)")
    if pairs and (sparse or nibbles or not (recentre or a_type is I8)):
        raise ValueError("gemm_tile: pairdot sums int8 rows and int8 weights, dense")
    pairs16 = pairs16 and not recentre
    key = (lanes, mr, nv, a_type, ktail, epi, nibbles, used, sparse, pairs16, recentre, pairs)
    if key in _CACHE:
        return _CACHE[key]
    enc = GemmWeights(lanes, nv, nibbles)
    kb = KernelBuilder(f"mk_gemm_{a_type.name.lower()}{'i4' if nibbles else 'i8'}x{lanes}_m{mr}"
                       f"_v{nv}{f'u{used}' if used < nv and not sparse else ''}"
                       f"{'_sp' if sparse else ''}{'_p16' if pairs16 else ''}"
                       f"{'_s16' if pairs else ''}_t{ktail}{epi.tag}",
                       f"int8 gemm tile: {mr} rows x {used * lanes} columns, int32 accumulators"
                       + (", int4 weights two to a byte" if nibbles else "")
                       + (", two k-groups summed in int16" if pairs else "")
                       + (", weight pairs within int16" if pairs16 else "")
                       + (", the stored dot4 groups only" if sparse else ""), opaque=True)
    a, bp = kb.pointer("a", a_type), kb.pointer("bp", I8)
    bt = kb.pointer("bt", I8) if ktail else None
    gidx = kb.pointer("gidx", I32) if sparse else None
    nst = kb.scalar("nst") if sparse else None
    cz = kb.pointer("cz", I32) if epi.zero_a else None
    zb = kb.pointer("zb", I32) if epi.zero_b else None
    requant = epi.out is not I32
    mtype = I32 if epi.fixed else F32
    mult = kb.pointer("mult", mtype) if requant and epi.mult_per_column else None
    y = kb.pointer("y", epi.out, "out")
    groups, lda, ldy, ncols = (kb.scalar(n) for n in ("groups", "lda", "ldy", "ncols"))
    za = kb.scalar("za", I32) if epi.zero_a else None
    rowsum = [kb.scalar(f"rs{i}", I32) for i in range(mr)] if epi.zero_b else []
    m = kb.scalar("m", mtype) if requant and not epi.mult_per_column else None
    zy = kb.scalar("zy", I32) if requant else None
    shift = kb.scalar("shift", I32) if requant and epi.fixed else None

    acc = [[kb.local(f"acc{i}_{v}_", broadcast(const(0, I32), lanes)) for v in range(used)]
           for i in range(mr)]
    gv = enc.group_vectors

    def group(bbuf, b_at, a_at) -> None:
        """One k-group: the panel's first `used` weight vectors at b_at, each row's 4 bytes
        at a_at."""
        if nibbles:
            bv = []
            for p in range(-(-used // 2)):
                pv = kb.local(f"p{p}_", vload(bbuf, b_at + p * (4 * lanes), 4 * lanes))
                bv += [kb.local(f"b{2 * p + h}_", nibble(pv, h)) for h in (0, 1)
                       if 2 * p + h < used]
        else:
            bv = [kb.local(f"b{v}_", vload(bbuf, b_at + v * (4 * lanes), 4 * lanes))
                  for v in range(used)]
        for i in range(mr):
            av = kb.local(f"a{i}_", vbroadcast(a, i * lda + a_at, 4 * lanes, 4))
            av = kb.local(f"s{i}_", recentre_bytes(av)) if recentre else av
            for v in range(used):
                kb.assign(acc[i][v], dot4(acc[i][v], av, bv[v], pairs16))

    if pairs:
        _gemm_pairs(kb, a, acc, [(bp, g * (4 * lanes * gv), g * 4) for g in (0, 1)], groups,
                    bt, groups * 4 + (ktail - 4), lda, lanes, recentre)
    elif sparse:
        with kb.loop(nst, "e") as e:
            g = kb.local("g", cast(gidx[e], INDEX))
            group(bp, g * (4 * lanes * gv), g * 4)
    else:
        with kb.loop(groups, "g") as g:
            group(bp, g * (4 * lanes * gv), g * 4)
    if ktail and not pairs:  # rows K-4 .. K-1 against the tail group (its rows before
        group(bt, const(0), groups * 4 + (ktail - 4))  # 4 * groups are 0)

    if requant:
        qmin, qmax = QUANT_RANGES[epi.out]
        if epi.fixed:
            lo = kb.local("lo", broadcast(const(qmin, I32), lanes))
            hi = kb.local("hi", broadcast(const(qmax, I32), lanes))
        else:
            lo = kb.local("lo", broadcast(cast(const(qmin, I32) - zy, F32), lanes))
            hi = kb.local("hi", broadcast(cast(const(qmax, I32) - zy, F32), lanes))
    full = kb.local("full", (ncols // lanes).cast(INDEX))
    rest = kb.local("rest", ncols - full * lanes)
    for v in range(used):
        czv = kb.local(f"cz{v}_", vload(cz, v * lanes, lanes)) if cz is not None else None
        zbv = kb.local(f"zb{v}_", vload(zb, v * lanes, lanes)) if zb is not None else None
        mv = kb.local(f"m{v}_", vload(mult, v * lanes, lanes) if mult is not None
                      else broadcast(m, lanes)) if requant else None
        for i in range(mr):
            val: Expr = acc[i][v]
            if czv is not None:
                val = val + broadcast(za, lanes) * czv
            if zbv is not None:
                val = val - broadcast(rowsum[i], lanes) * zbv
            if requant and epi.fixed:
                q = kb.local("q", mulshift(val, mv, shift) + broadcast(zy, lanes))
                val = maximum(minimum(q, hi), lo)
            elif requant:
                f = kb.local("f", cast(val, F32) * mv)
                f = kb.local("f", select(f > lo, f, lo))  # NaN goes to lo, as in the scalar path
                val = cast(call("round", select(f < hi, f, hi)), I32) + broadcast(zy, lanes)
            val = kb.local("q", val)
            at = i * ldy + v * lanes
            with kb.if_(full > v):
                kb.store(y, at, val)
            with kb.else_(), kb.if_(full.eq(v) & (rest > 0)):
                kb.store(y, at, val, rest)
    _CACHE[key] = kb.build()
    return _CACHE[key]


def _gemm_pairs(kb: KernelBuilder, a: Expr, acc: list[list[Expr]], first: list[tuple],
                groups: Expr, bt: Expr | None, tail_at: Expr, lda: Expr, lanes: int,
                recentre: bool) -> None:
    """`gemm_tile`'s k loop with `pairs`: k-groups 2g and 2g + 1 (`first`: their panel
    buffer, weight offset and row offset at g = 0) in one pairdot per half, then the last
    group of an odd number and the K % 4 tail group (`bt`, rows from `tail_at`) alone; the
    sums folded into `acc`."""
    mr, used = len(acc), len(acc[0])
    half = [[[kb.local(f"acc{i}_{v}_{h}_", broadcast(const(0, I32), lanes)) for h in (0, 1)]
             for v in range(used)] for i in range(mr)]

    def step(at: list[tuple]) -> None:
        bv = [[kb.local(f"b{p}_{v}_", vload(buf, b_at + v * (4 * lanes), 4 * lanes))
               for v in range(used)] for p, (buf, b_at, _) in enumerate(at)]
        for i in range(mr):
            av = [vbroadcast(a, i * lda + a_at, 4 * lanes, 4) for _, _, a_at in at]
            av = [kb.local(f"s{p}_", recentre_bytes(x) if recentre else x)
                  for p, x in enumerate(av)]
            for v in range(used):
                for h in (0, 1):
                    kb.assign(half[i][v][h], pairdot(half[i][v][h], [
                        (av[p], bv[p][v]) for p in range(len(at))], h))

    stride = first[1][1] - first[0][1], first[1][2] - first[0][2]  # one k-group's offsets
    with kb.loop(groups // 2, "g") as g:
        step([(buf, b_at + 2 * g * stride[0], a_at + 2 * g * stride[1])
              for buf, b_at, a_at in first])
    with kb.loop(groups % 2, "g") as g:  # the last group of an odd number
        buf, b_at, a_at = first[0]
        step([(buf, b_at + (groups - 1 + g) * stride[0], a_at + (groups - 1 + g) * stride[1])])
    if bt is not None:
        step([(bt, const(0), tail_at)])
    for i in range(mr):
        for v in range(used):
            kb.assign(acc[i][v], pairfold(*half[i][v]))


# -- blocked int8 convolution tiles ---------------------------------------------------------------

@dataclass(frozen=True)
class ResidualAdd:
    """The fixed-point QLinearAdd a tile applies to its requantized outputs q (parameters of
    the tile): y = sat(((qa (q - zy) + qb (r - zr) + 2^(s-1)) >> s) + zc), r read where y is
    written. The shift is a mulshift by 2^(33-s) and 33 (exactly the same floor), so the tile
    needs no vector shift by a run-time count."""

    r: Expr  # the residual's buffer
    zr: Expr
    qa: Expr
    qb: Expr
    m: Expr  # 2^(33 - s)
    zc: Expr

    @staticmethod
    def params(kb: KernelBuilder, out: DType) -> ResidualAdd:
        return ResidualAdd(kb.pointer("r", out), *(kb.scalar(n, I32) for n in
                                                   ("zr", "qa", "qb", "am", "zc")))

    def __call__(self, kb: KernelBuilder, q: Expr, zv: Expr, at: Expr, lanes: int,
                 lo: Expr, hi: Expr) -> Expr:
        rv = cast(vload(self.r, at, lanes), I32)
        v = kb.local("v", (q - zv) * broadcast(self.qa, lanes)
                     + (rv - broadcast(self.zr, lanes)) * broadcast(self.qb, lanes))
        v = kb.local("v", mulshift(v, broadcast(self.m, lanes), const(33, I32))
                     + broadcast(self.zc, lanes))
        return kb.local("q", maximum(minimum(v, hi), lo))


def _requantize_store(kb: KernelBuilder, acc: list[list[Expr]], corr, mult, shift, y, y_mb,
                      zy, lanes: int, out: DType, add: ResidualAdd | None = None,
                      first: int = 0, corr_half: int | None = None) -> None:
    """y[j*y_mb + (first + t)*L] = requantized acc[t][j] + corr[j], L lanes each.
    Fixed-point (`shift` a scalar): sat(mulshift(v, mult[j], shift) + zy) with int32
    multipliers, rounded half up (kernel_ir.mulshift). Float (`shift` None):
    sat(rint(v * mult[j]) + zy), the arithmetic of `ir/ops/quant.py` round_saturate (clamped
    in float, rounded half to even). With `add` (fixed point only) the residual is then
    added. `corr_half` (0 or 1): corr holds two tables interleaved by block ([block][2][L]:
    `qconv_tile`'s `corr_half`), of which this half."""
    qmin, qmax = QUANT_RANGES[out]
    zv = kb.local("zv", broadcast(zy, lanes, I32))
    if shift is None:
        lo = kb.local("lo", broadcast(cast(const(qmin, I32) - zy, F32), lanes))
        hi = kb.local("hi", broadcast(cast(const(qmax, I32) - zy, F32), lanes))
    else:
        lo = kb.local("lo", broadcast(const(qmin, I32), lanes))
        hi = kb.local("hi", broadcast(const(qmax, I32), lanes))
    for j in range(len(acc[0])):
        at = j * lanes if corr_half is None else (2 * j + corr_half) * lanes
        cv = kb.local(f"c{j}_", vload(corr, at, lanes))
        mv = kb.local(f"m{j}_", vload(mult, j * lanes, lanes))
        for t in range(len(acc)):
            at = j * y_mb + (first + t) * lanes
            if shift is None:
                f = kb.local("f", cast(acc[t][j] + cv, F32) * mv)
                f = kb.local("f", select(f > lo, f, lo))  # NaN goes to lo, as round_saturate
                q = kb.local("q", cast(call("round", select(f < hi, f, hi)), I32) + zv)
            else:
                q = kb.local("q", mulshift(acc[t][j] + cv, mv, shift) + zv)
                q = kb.local("q", maximum(minimum(q, hi), lo))
                if add is not None:
                    q = add(kb, q, zv, at, lanes, lo, hi)
            kb.store(y, at, q)


def qconv_tile(lanes: int, mb: int, r: int, x_pix: int, groups: int, out: DType,
               nibbles: bool = False, fixed: bool = False, add: bool = False,
               pairs16: bool = False, recentre: bool = False, pairs: int = 0,
               sign: bool = False, corr_half: int | None = None) -> Kernel:
    """MB output blocks of L channels x R output pixels of one row of a blocked uint8
    convolution whose input is already padded (every tap is inside): for each input block cb,
    tap (kh, kw) and group g of 4 input channels of the block, MB weight vectors (4 bytes per
    output channel: [g][j][lane][4]) are loaded once and the 4 input bytes of each pixel
    broadcast once, acc[t][j] = dot4(acc[t][j], x[pixel t, 4g:4g+4], w[.., g, j]). The sum
    is the exact int32 sum of x * (w - zw); `corr` (the bias minus zx times the weights' sum
    per output channel) centres it on x - zx, then it is requantized. With `nibbles` the
    weight vectors come two to a load (encoding "dot4 ... nib", ir/encodings.py) as 16 * w:
    corr and mult are then scaled by 16 and 1/16 (with `fixed`, the shift grows by 4).

    Parameters: x (the tile's first pixel at its first tap), w (the group's packed weights at
    the first input block), corr and mult (per output channel of the tile's blocks: float32,
    or int32 fixed-point multipliers with `fixed`), y; then ncb (input blocks), nkh, nkw,
    x_cb, x_kh, x_kw (input strides), w_cb, w_kh (weight strides in bytes; w_kw is the
    encoding's bytes per tap), y_mb (output stride between blocks), zy (and the shift with
    `fixed`); with `add` (fixed point) then the residual's buffer, zr, qa, qb, 2^(33-s) and zc
    (`ResidualAdd`). `pairs16`: the weights' byte pairs fit int16 (kernel_ir.pairs_fit16;
    the dot4s are dot4p). `recentre`: the pixels are summed as x - 128, which the caller's
    corr accounts for (computed with zx - 128: the module doc).

    `pairs` (re-centred int8 weights in [-127, 127], no nibbles): the input blocks two at a
    time, each pair of k-groups summed in int16 by `pairdot` into two accumulators per
    output vector, folded after the k loop (`pairfold`); the R pixels `pairs` at a time, each
    such sub-tile over the whole k loop, as twice the accumulators allow.

    `sign` (weights within [-127, 127], no nibbles): the pixels re-centred and summed by
    dot4p of int8 bytes (AVX2's sign trick, kernel_ir), for an AVX2 library's tiles whose
    weight pairs do not fit int16, as the fallback of the AVX-VNNI tile (`with_fallback`).
    The two then read different corr tables (the re-centred one takes zx - 128), so the
    caller interleaves them by block ([block][2][L]) and `corr_half` says which half a tile
    reads (0: x, 1: x - 128)."""
    if add and not fixed:
        raise ValueError("qconv_tile: a residual add needs fixed-point requantization")
    if pairs and (nibbles or not recentre):
        raise ValueError("qconv_tile: pairdot sums re-centred int8 weights, not nibbles")
    if sign and (nibbles or recentre or pairs):
        raise ValueError("qconv_tile: the sign trick sums plain int8 weights of uint8 rows")
    pairs = min(pairs, r)
    pairs16 = (pairs16 and not recentre) or sign
    key = ("qconv", lanes, mb, r, x_pix, groups, out, nibbles, fixed, add, pairs16, recentre,
           pairs, sign, corr_half)
    if key in _CACHE:
        return _CACHE[key]
    enc = QConvWeights("dot4", lanes, 4 * groups, mb, nibbles)
    # opaque: gcc specialised on the call sites' constant taps unrolls the tap loops and
    # spills the accumulators (ResNet-18's 3x3 convolutions ran 1.5x slower)
    kind = "i4" if nibbles else "u8"
    kb = KernelBuilder(f"mk_qconv_{kind}x{lanes}_m{mb}_r{r}_p{x_pix}_g{groups}_"
                       f"{out.name.lower()}{'_fx' if fixed else ''}{'_add' if add else ''}"
                       f"{'_sgn' if sign else '_p16' if pairs16 else ''}"
                       f"{f'_s16x{pairs}' if pairs else ''}"
                       f"{'' if corr_half is None else f'_c{corr_half}'}",
                       f"int8 conv tile: {mb} blocks of {lanes} output channels x {r} pixels"
                       + (", int4 weights two to a byte" if nibbles else "")
                       + (f", two k-groups summed in int16, {pairs} pixels at a time"
                          if pairs else "")
                       + (", the sign trick (weights within +-127)" if sign else
                          ", weight pairs within int16" if pairs16 else "")
                       + (", fixed-point requantization" if fixed else "")
                       + (", residual add" if add else ""), opaque=True)
    x, w = kb.pointer("x", DType.U8), kb.pointer("w", I8)
    corr, mult = kb.pointer("corr", I32), kb.pointer("mult", I32 if fixed else F32)
    y = kb.pointer("y", out, "out")
    ncb, nkh, nkw = kb.scalar("ncb"), kb.scalar("nkh"), kb.scalar("nkw")
    x_cb, x_kh, x_kw = kb.scalar("x_cb"), kb.scalar("x_kh"), kb.scalar("x_kw")
    w_cb, w_kh, y_mb = kb.scalar("w_cb"), kb.scalar("w_kh"), kb.scalar("y_mb")
    zy = kb.scalar("zy", I32)
    shift = kb.scalar("shift", I32) if fixed else None
    residual = ResidualAdd.params(kb, out) if add else None
    vec = 4 * lanes
    if pairs:
        for t0 in range(0, r, pairs):
            acc = _qconv_pairs(kb, x, w, (ncb, nkh, nkw, x_cb, x_kh, x_kw, w_cb, w_kh),
                               min(pairs, r - t0), t0, mb, groups, x_pix, vec, enc.kw_bytes(mb))
            _requantize_store(kb, acc, corr, mult, shift, y, y_mb, zy, lanes, out, residual,
                              t0)
        _CACHE[key] = kb.build()
        return _CACHE[key]
    chunk = enc.chunk(groups, mb)  # groups of 4 input channels per loop iteration
    per = -(-chunk * mb // 2) if nibbles else chunk * mb  # weight loads per iteration
    # the sums start from 0 and take corr in the epilogue: started from corr (24 copies of
    # 2 values), gcc coalesced them badly and spilled the accumulators in the inner loop
    acc = [[kb.local(f"acc{t}_{j}_", broadcast(const(0, I32), lanes)) for j in range(mb)]
           for t in range(r)]
    with kb.loop(ncb, "cb") as cb, kb.loop(nkh, "kh") as kh, kb.loop(nkw, "kw") as kw:
        xo = kb.local("xo", cb * x_cb + kh * x_kh + kw * x_kw)
        wo = kb.local("wo", cb * w_cb + kh * w_kh + kw * enc.kw_bytes(mb))
        # the groups in a loop, not written out: four copies of the body would have gcc
        # hoist their loads and spill accumulators
        with kb.loop(groups // chunk, "g") as g:
            if nibbles:
                wv = []
                for p in range(per):
                    pv = kb.local(f"p{p}_", vload(w, wo + (g * per + p) * vec, vec))
                    wv.append(kb.local(f"w{2 * p}_", nibble(pv, 0)))
                    if 2 * p + 1 < chunk * mb:
                        wv.append(kb.local(f"w{2 * p + 1}_", nibble(pv, 1)))
            else:
                wv = [kb.local(f"w{j}_", vload(w, wo + (g * per + j) * vec, vec))
                      for j in range(per)]
            for c in range(chunk):
                for t in range(r):
                    xb = kb.local(f"x{t}_", vbroadcast(x, xo + t * x_pix + 4 * (g * chunk + c),
                                                       vec, 4))
                    xb = kb.local(f"s{t}_", recentre_bytes(xb)) if recentre or sign \
                        else xb
                    for j in range(mb):
                        kb.assign(acc[t][j], dot4(acc[t][j], xb, wv[c * mb + j], pairs16))
    _requantize_store(kb, acc, corr, mult, shift, y, y_mb, zy, lanes, out, residual,
                      corr_half=corr_half)
    _CACHE[key] = kb.build()
    return _CACHE[key]


def _qconv_pairs(kb: KernelBuilder, x: Expr, w: Expr, dims: tuple[Expr, ...], r: int, t0: int,
                 mb: int, groups: int, x_pix: int, vec: int, kw_bytes: int
                 ) -> list[list[Expr]]:
    """The sums of pixels t0 .. t0 + r - 1 of `qconv_tile` with `pairs`, folded: the input
    blocks two at a time (cb and cb + 1 at one tap: two k-groups per `pairdot`), then the
    last one alone where their number is odd. `dims`: the tile's ncb, nkh, nkw, x_cb, x_kh,
    x_kw, w_cb, w_kh."""
    ncb, nkh, nkw, x_cb, x_kh, x_kw, w_cb, w_kh = dims
    acc = [[[kb.local(f"acc{t}_{j}_{h}_", broadcast(const(0, I32), vec // 4))
             for h in (0, 1)] for j in range(mb)] for t in range(r)]

    def taps(cb: Expr, n: int) -> None:
        with kb.loop(nkh, "kh") as kh, kb.loop(nkw, "kw") as kw:
            xo = kb.local("xo", cb * x_cb + kh * x_kh + kw * x_kw + t0 * x_pix)
            wo = kb.local("wo", cb * w_cb + kh * w_kh + kw * kw_bytes)
            with kb.loop(groups, "g") as g:
                wv = [[kb.local(f"w{p}_{j}_", vload(w, wo + p * w_cb + (g * mb + j) * vec, vec))
                       for j in range(mb)] for p in range(n)]
                for t in range(r):
                    xb = [kb.local(f"s{p}_", recentre_bytes(vbroadcast(
                        x, xo + p * x_cb + t * x_pix + 4 * g, vec, 4))) for p in range(n)]
                    for j in range(mb):
                        for h in (0, 1):
                            kb.assign(acc[t][j][h], pairdot(acc[t][j][h], [
                                (xb[p], wv[p][j]) for p in range(n)], h))

    with kb.loop(ncb // 2, "cb") as cb:
        taps(cb * 2, 2)
    with kb.loop(ncb % 2, "cb") as cb:  # the last input block of an odd number
        taps(ncb - 1 + cb, 1)
    return [[kb.local(f"acc{t}_{j}_", pairfold(*acc[t][j])) for j in range(mb)]
            for t in range(r)]


def with_fallback(fn: Kernel, fallback: Kernel) -> Kernel:
    """`fn` (a dot4 tile for a run-time dispatched extension: sdot) with `fallback`, the same
    tile for CPUs without it (the `pairs` form), under the fallback's name."""
    key = ("fallback", fn.name, fallback.name)
    if key not in _CACHE:
        _CACHE[key] = replace(fn, name=fallback.name, fallback=fallback)
    return _CACHE[key]


def qconv_sparse_tile(lanes: int, r: int, x_pix: int, out: DType, fixed: bool = False,
                      add: bool = False, pairs16: bool = False,
                      recentre: bool = False) -> Kernel:
    """One output block of L channels x R output pixels of one row of a blocked uint8
    convolution whose weights are mostly zero, over the block's stored dot4 groups only: a
    group is L output channels x 4 input channels at one tap whose 4L weights are not all
    zero, stored as its weight vector ([lane][4] bytes) and its input offset (bytes from
    the tile's first pixel: input block, tap, 4-channel group). Per group: one weight load,
    R broadcasts of the pixels' 4 input bytes, R dot4; the epilogue is qconv_tile's.

    Parameters: x (the tile's first pixel), w (the block's first group's weight vector),
    offs (its first group's offset), corr, mult (the block's channels), y; then n (groups),
    y_mb (unused: one block), zy (and the shift with `fixed`); with `add` the residual's
    (`ResidualAdd`). `pairs16` and `recentre` as `qconv_tile`."""
    if add and not fixed:
        raise ValueError("qconv_sparse_tile: a residual add needs fixed-point requantization")
    pairs16 = pairs16 and not recentre
    key = ("qconv_sparse", lanes, r, x_pix, out, fixed, add, pairs16, recentre)
    if key in _CACHE:
        return _CACHE[key]
    kb = KernelBuilder(f"mk_qspconv_u8x{lanes}_r{r}_p{x_pix}_{out.name.lower()}"
                       f"{'_fx' if fixed else ''}{'_add' if add else ''}"
                       f"{'_p16' if pairs16 else ''}",
                       f"sparse int8 conv tile: {lanes} output channels x {r} pixels over "
                       "the stored dot4 groups" + (", fixed-point requantization" if fixed
                                                   else "") + (", residual add" if add else ""),
                       opaque=True)
    x, w = kb.pointer("x", DType.U8), kb.pointer("w", I8)
    offs = kb.pointer("offs", I32)
    corr, mult = kb.pointer("corr", I32), kb.pointer("mult", I32 if fixed else F32)
    y = kb.pointer("y", out, "out")
    n, y_mb = kb.scalar("n"), kb.scalar("y_mb")
    zy = kb.scalar("zy", I32)
    shift = kb.scalar("shift", I32) if fixed else None
    residual = ResidualAdd.params(kb, out) if add else None
    vec = 4 * lanes
    acc = [[kb.local(f"acc{t}_", broadcast(const(0, I32), lanes))] for t in range(r)]
    with kb.loop(n, "e") as e:
        xo = kb.local("xo", cast(offs[e], INDEX))
        wv = kb.local("wv", vload(w, e * vec, vec))
        for t in range(r):
            xb = kb.local(f"x{t}_", vbroadcast(x, xo + t * x_pix, vec, 4))
            xb = kb.local(f"s{t}_", recentre_bytes(xb)) if recentre else xb
            kb.assign(acc[t][0], dot4(acc[t][0], xb, wv, pairs16))
    _requantize_store(kb, acc, corr, mult, shift, y, y_mb, zy, lanes, out, residual)
    _CACHE[key] = kb.build()
    return _CACHE[key]


def qconv_unpack(lanes: int, groups: int, mb: int) -> Kernel:
    """The int4 weights of one group of MB output blocks (encoding "dot4 lL xX mMB nib") as
    the int8 vectors 16 * w of "dot4 lL xX mMB" (the layout `qconv_tile` reads without
    nibbles): a caller with many tiles per group unpacks once, into a buffer the tiles then
    read at int8 speed, instead of in every tile's inner loop.

    Parameters: w (the group's packed weights), u (out: groups * MB vectors per tap), n (the
    taps times the input blocks)."""
    key = ("qunpack", lanes, groups, mb)
    if key in _CACHE:
        return _CACHE[key]
    enc = QConvWeights("dot4", lanes, 4 * groups, mb, True)
    kb = KernelBuilder(f"mk_qunpack_i4x{lanes}_m{mb}_g{groups}",
                       f"int4 weights of {mb} blocks of {lanes} output channels unpacked to "
                       "int8 (16 * w)")
    w, u, n = kb.pointer("w", I8), kb.pointer("u", I8, "out"), kb.scalar("n")
    vec, c = 4 * lanes, enc.chunk(groups, mb)
    per = -(-c * mb // 2)  # packed vectors per chunk of c groups of 4 input channels
    with kb.loop(n, "i") as i:
        src = kb.local("src", i * enc.kw_bytes(mb))
        dst = kb.local("dst", i * (groups * mb * vec))
        for k in range(groups // c):
            for p in range(per):
                pv = kb.local(f"p{p}_", vload(w, src + (k * per + p) * vec, vec))
                for h in (0, 1):
                    if 2 * p + h < c * mb:  # the padding vector of an odd count is dropped
                        kb.store(u, dst + (k * c * mb + 2 * p + h) * vec, nibble(pv, h))
    _CACHE[key] = kb.build()
    return _CACHE[key]


def qdepthwise_tile(lanes: int, r: int, x_pix: int, out: DType, fixed: bool = False,
                    add: bool = False) -> Kernel:
    """R output pixels of one block of a blocked uint8 depthwise convolution over a padded
    input: the L channels are the lanes, acc[t] += widen(x[pixel t, tap]) * widen(w[tap]) in
    int32 (weights w - zw as int8, [kh][kw][lane]: encoding "dw"), then centred and
    requantized as `qconv_tile`.

    Parameters: x, w, corr, mult, y; nkh, nkw, x_kh, x_kw, w_kh (= nkw * L for the full
    kernel), zy (and the shift with `fixed`; and a residual's parameters with `add`, as
    `qconv_tile`)."""
    if add and not fixed:
        raise ValueError("qdepthwise_tile: a residual add needs fixed-point requantization")
    key = ("qdw", lanes, r, x_pix, out, fixed, add)
    if key in _CACHE:
        return _CACHE[key]
    kb = KernelBuilder(f"mk_qdw_u8x{lanes}_r{r}_p{x_pix}_{out.name.lower()}"
                       f"{'_fx' if fixed else ''}{'_add' if add else ''}",
                       f"int8 depthwise tile: {lanes} channels x {r} pixels"
                       + (", fixed-point requantization" if fixed else "")
                       + (", residual add" if add else ""))
    x, w = kb.pointer("x", DType.U8), kb.pointer("w", I8)
    corr, mult = kb.pointer("corr", I32), kb.pointer("mult", I32 if fixed else F32)
    y = kb.pointer("y", out, "out")
    nkh, nkw = kb.scalar("nkh"), kb.scalar("nkw")
    x_kh, x_kw, w_kh = kb.scalar("x_kh"), kb.scalar("x_kw"), kb.scalar("w_kh")
    zy = kb.scalar("zy", I32)
    shift = kb.scalar("shift", I32) if fixed else None
    residual = ResidualAdd.params(kb, out) if add else None
    acc = [[kb.local(f"acc{t}_", broadcast(const(0, I32), lanes))] for t in range(r)]
    with kb.loop(nkh, "kh") as kh, kb.loop(nkw, "kw") as kw:
        xo = kb.local("xo", kh * x_kh + kw * x_kw)
        wv = kb.local("wv", cast(vload(w, kh * w_kh + kw * lanes, lanes), I32))
        for t in range(r):
            xv = cast(vload(x, xo + t * x_pix, lanes), I32)
            kb.assign(acc[t][0], acc[t][0] + mul16(xv, wv))  # bytes times int8 weights
    _requantize_store(kb, acc, corr, mult, shift, y, 0, zy, lanes, out, residual)
    _CACHE[key] = kb.build()
    return _CACHE[key]
