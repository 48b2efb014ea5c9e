"""The matrix-vector unit of an FPGA design (the HLS target): y = A @ B of 8-bit integers with
B constant, PE output columns and SIMD terms of each computed a cycle, as FINN's MVAU folds
a layer. The loops, per row of A:

    for nf < N / PE:                       PE accumulators, from the bias
        for sf < K / SIMD:  pipeline II=1
            for s < SIMD:   unrolled       acc[p] += (a[sf SIMD + s] - za) w[nf, sf, p, s]
        y[nf PE + p] = requantize(acc[p])  (fixed point)

with B - zb stored as [N / PE, K / SIMD, PE, SIMD] (so a cycle reads PE x SIMD consecutive
weights: the HLS project partitions that ROM, and A's array, by those factors). The sums are
the scalar rows' (quant.py `_int_matmul`), only grouped otherwise: integer, so the outputs are
the same bit for bit. A candidate of QGemm and QLinearMatMul on the HLS target only, where B
is a constant 8-bit matrix, A has 2 dims and the node has fixed-point requantization
(`--strategy NODE=hls-mvau{pe=P,simd=S}`, or the HLS project's folding). Where PE does not
divide N or SIMD K the unit is padded to whole folds (operator padding): zero weights past K
(the input read at its last term), outputs past N computed and not stored; its strategy says
so.

A convolution (QLinearConv, one group, 2-D, constant 8-bit weights, a constant input zero
point, fixed point) runs as the same unit over each output pixel's window (`conv_mvau`,
`hls-conv-mvau{pe,simd}`): the kernel first copies the input frame into a local array in
HWC order, its channels padded to a multiple of SIMD and the array partitioned cyclic by
SIMD, so that a cycle reads SIMD consecutive channels of one tap; the window's terms run
tap by tap, SIMD channels a cycle (K = taps x padded channels), taps in the padding
contributing zero; weights (W - zw) stored [M / PE, K / SIMD, PE, SIMD] as above."""

from __future__ import annotations

import numpy as np

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...kernel_ir.kernel import Buffer, Expr, LoopKind, cast, const, minimum, select
from ..lower import NodeKernelBuilder
from ..strategies import Candidate, Kind
from .common import named
from .quant_common import constant_table, fixed_finish, fixed_point, narrow, zero_point

I32 = DType.I32


def mvau_candidate(node: Node, a_v: Value, b_v: Value, bias_v: Value | None) -> Candidate:
    """The MVAU at PE = SIMD = 1 (folding sets them), or why it does not apply."""
    n = b_v.shape[0 if node.attrs.get("transB") else -1] if b_v.shape else 0
    why = ("B is not a constant 8-bit matrix" if not b_v.is_const or len(b_v.shape) != 2
           or b_v.dtype not in (DType.I8, DType.U8) else
           "A is not a 2-D 8-bit matrix" if len(a_v.shape) != 2
           or a_v.dtype not in (DType.U8, DType.I8) else
           "its requantization is not fixed point" if fixed_point(node) is None else
           "transposed A" if node.attrs.get("transA") else
           "a bias that is not one value or one per column" if bias_v is not None and (
               not bias_v.is_const or bias_v.type.numel not in (1, n)) else "")
    return Candidate.of(Kind.HLS_MVAU, {"pe": 1, "simd": 1}, why, tunable=("pe", "simd"))


def mvau(kb: NodeKernelBuilder, node: Node, a_v: Value, za_v: Value | None, b_v: Value,
         zb_v: Value | None, bias_v: Value | None, zy_v: Value | None, trans_b: bool,
         pe: int, simd: int) -> None:
    """Emit the folded matrix-vector unit (module doc)."""
    w = b_v.const.astype(np.int32)
    if trans_b:
        w = w.T
    k, n = w.shape
    if not (1 <= pe <= n and 1 <= simd <= k):
        raise EdgecError(f"node {node.name}: hls-mvau{{pe={pe},simd={simd}}} needs PE within "
                         f"its {n} outputs and SIMD within its {k} terms")
    if zb_v is not None:
        w = w - zb_v.const.astype(np.int32).reshape(1, -1)
    # padded to whole folds (operator padding): zero weights past K, outputs past N not stored
    kp, np_ = -(-k // simd) * simd, -(-n // pe) * pe
    w = np.pad(w, ((0, kp - k), (0, np_ - n)))
    packed = w.T.reshape(np_ // pe, pe, kp // simd, simd).transpose(0, 2, 1, 3)
    wt = constant_table(kb, narrow(np.ascontiguousarray(packed).reshape(-1)),
                        f"mvau{pe}x{simd}", b_v)
    m = a_v.shape[0]
    a = kb.bind(a_v, "a")
    za = zero_point(kb, za_v, "a_zp")
    c = kb.bind(bias_v, "c") if bias_v is not None else None
    cstride = 1 if bias_v is not None and bias_v.type.numel > 1 else 0
    finish = fixed_finish(kb, node, fixed_point(node), zero_point(kb, zy_v, "y_zp"), b_v)
    y = kb.bind(node.output, "y")
    padded = [f"{what} padded {a} -> {b}" for what, a, b in (("N", n, np_), ("K", k, kp))
              if b != a]
    kb.strategy = f"matrix-vector unit, {pe} PE x {simd} SIMD" + \
        (f" ({', '.join(padded)})" if padded else "")
    folds = kp // simd
    with kb.loops([m, np_ // pe], ["i", "nf"]) as (i, nf):
        # (a padded output's bias and multiplier are its last real column's: never stored)
        col = [named(kb, "col", minimum(nf * pe + p, const(n - 1)) if np_ != n
                     else nf * pe + p) for p in range(pe)]
        accs = [kb.local(f"acc{p}", cast(c[col[p] * cstride], I32) if c is not None
                         else const(0, I32)) for p in range(pe)]
        with kb.loop(folds, "sf", kind=LoopKind.PIPELINE, ii=1) as sf, \
                kb.loop(simd, "s", kind=LoopKind.UNROLL) as s:
            term = sf * simd + s
            xv = cast(a[i * k + (minimum(term, const(k - 1)) if kp != k else term)], I32)
            xv = named(kb, "xv", xv - za if za is not None else xv)
            base = named(kb, "wrow", ((nf * folds + sf) * pe) * simd + s)
            for p, acc in enumerate(accs):
                kb.assign(acc, acc + xv * cast(wt[base + p * simd], I32))
        for p, acc in enumerate(accs):
            if np_ == n:
                kb.store(y, i * n + col[p], finish((), i, col[p], acc))
            else:
                with kb.if_(nf * pe + p < n):
                    kb.store(y, i * n + col[p], finish((), i, col[p], acc))


def conv_mvau_candidate(node: Node, x_v: Value, zx_v: Value | None, w_v: Value,
                        b_v: Value | None) -> Candidate:
    """A QLinearConv's unit at PE = SIMD = 1 (folding sets them), or why it does not apply."""
    why = ("the weights are not a constant 8-bit tensor" if not w_v.is_const
           or w_v.dtype not in (DType.I8, DType.U8) else
           "not a 2-D convolution" if len(w_v.shape) != 4 else
           "grouped (depthwise: its channels do not share a window)"
           if int(node.attrs.get("group", 1)) != 1 else
           "the input is not 8-bit" if x_v.dtype not in (DType.U8, DType.I8) else
           "a run-time input zero point" if zx_v is not None and not zx_v.is_const else
           "its requantization is not fixed point" if fixed_point(node) is None else
           "a bias that is not constant" if b_v is not None and not b_v.is_const else "")
    return Candidate.of(Kind.HLS_CONV_MVAU, {"pe": 1, "simd": 1}, why, tunable=("pe", "simd"))


def conv_mvau(kb: NodeKernelBuilder, node: Node, geo, x_v: Value, zx_v: Value | None,
              w_v: Value, zw_v: Value | None, b_v: Value | None, zy_v: Value | None,
              sw_v: Value, pe: int, simd: int) -> None:
    """Emit the convolution's unit (module doc); `geo` its ConvGeometry."""
    m_, c_ = geo.m, geo.c
    (kh, kw), (h, w_), (oh, ow) = geo.ksz, geo.isp, geo.osp
    if not (1 <= pe <= m_ and 1 <= simd <= c_):
        raise EdgecError(f"node {node.name}: hls-conv-mvau{{pe={pe},simd={simd}}} needs PE "
                         f"within its {m_} output channels and SIMD within its {c_} input "
                         "channels")
    wc = w_v.const.astype(np.int32)
    if zw_v is not None:
        wc = wc - zw_v.const.astype(np.int32).reshape(-1, 1, 1, 1)
    cp, mp = -(-c_ // simd) * simd, -(-m_ // pe) * pe
    taps = kh * kw
    k = taps * cp
    # [M, kh, kw, C] (a window's terms tap by tap, channels fastest), padded
    mat = np.pad(wc.transpose(0, 2, 3, 1), ((0, mp - m_), (0, 0), (0, 0), (0, cp - c_)))
    packed = mat.reshape(mp // pe, pe, k // simd, simd).transpose(0, 2, 1, 3)
    wt = constant_table(kb, narrow(np.ascontiguousarray(packed).reshape(-1)),
                        f"mvau{pe}x{simd}", w_v)
    x = kb.bind(x_v, "x")
    zx = zero_point(kb, zx_v, "x_zp")
    b = kb.bind(b_v, "b") if b_v is not None else None
    finish = fixed_finish(kb, node, fixed_point(node), zero_point(kb, zy_v, "y_zp"), sw_v)
    y = kb.bind(node.output, "y")
    padded = [f"{what} padded {a} -> {b}" for what, a, b in
              (("output channels", m_, mp), ("input channels", c_, cp)) if b != a]
    kb.strategy = f"convolution as a matrix-vector unit, {pe} PE x {simd} SIMD" + \
        (f" ({', '.join(padded)})" if padded else "")
    folds, per_tap = k // simd, cp // simd
    xt, copy = hwc_frame(kb, x, x_v.dtype, h * w_, c_, cp, simd)
    (sy, sx), (dy, dx), (py, px) = geo.strides, geo.dil, geo.p0
    with kb.loop(geo.n, "n") as n:
        copy(n)
        with kb.loops([oh, ow, mp // pe], ["oy", "ox", "nf"]) as (oy, ox, nf):
            col = [named(kb, "col", minimum(nf * pe + q, const(m_ - 1)) if mp != m_
                         else nf * pe + q) for q in range(pe)]
            accs = [kb.local(f"acc{q}", cast(b[col[q]], I32) if b is not None
                             else const(0, I32)) for q in range(pe)]
            with kb.loop(folds, "sf", kind=LoopKind.PIPELINE, ii=1) as sf:
                tap = named(kb, "tap", sf // per_tap) if per_tap > 1 else sf
                c0 = named(kb, "c0", sf % per_tap * simd) if per_tap > 1 else const(0)
                iy = named(kb, "iy", oy * sy + tap // kw * dy - py)
                ix = named(kb, "ix", ox * sx + tap % kw * dx - px)
                inside = named(kb, "inside", (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w_))
                base = named(kb, "xb", (iy * w_ + ix) * cp + c0)
                with kb.loop(simd, "s", kind=LoopKind.UNROLL) as s:
                    xv = cast(xt[base + s], I32)
                    xv = named(kb, "xv", select(inside, xv - zx if zx is not None else xv,
                                                const(0, I32)))
                    wrow = named(kb, "wrow", ((nf * folds + sf) * pe) * simd + s)
                    for q, acc in enumerate(accs):
                        kb.assign(acc, acc + xv * cast(wt[wrow + q * simd], I32))
            out = named(kb, "yo", (n * m_) * (oh * ow) + oy * ow + ox)
            for q, acc in enumerate(accs):
                store = lambda q=q, acc=acc: kb.store(  # noqa: E731
                    y, out + col[q] * (oh * ow), finish((), None, col[q], acc))
                if mp == m_:
                    store()
                else:
                    with kb.if_(nf * pe + q < m_):
                        store()


def hwc_frame(kb: NodeKernelBuilder, x: Buffer, dtype: DType, plane: int, c_: int, cp: int,
              simd: int):
    """A local copy of an image of x [N, C, plane] in HWC order, its channels padded to
    `cp`, partitioned cyclic by `simd` (a cycle reads SIMD consecutive channels of one
    pixel); and the function that emits image n's copy into it, one element a cycle."""
    xt = kb.alloc("xt", dtype, (plane * cp,), "local", partition=simd)

    def copy(n: Expr) -> None:
        with kb.loop(c_, "c") as c, \
                kb.loop(plane, "p", kind=LoopKind.PIPELINE, ii=1) as p:
            kb.store(xt, p * cp + c, x[(n * c_ + c) * plane + p])

    return xt, copy
