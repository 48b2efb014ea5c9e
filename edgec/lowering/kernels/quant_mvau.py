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
from ...kernel_ir.kernel import LoopKind, cast, const, minimum, select
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
    plane = h * w_
    xt = kb.alloc("xt", x_v.dtype, (plane * cp,), "local", partition=simd)
    (sy, sx), (dy, dx), (py, px) = geo.strides, geo.dil, geo.p0
    with kb.loop(geo.n, "n") as n:
        with kb.loop(c_, "c") as c, \
                kb.loop(plane, "p", kind=LoopKind.PIPELINE, ii=1) as p:  # to HWC
            kb.store(xt, p * cp + c, x[(n * c_ + c) * plane + p])
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


# a matrix product whose weights are at least this share zeros runs on sparse PEs
SPARSE_MIN_ZEROS = 0.5


def sparse_mvau_candidate(node: Node, a_v: Value, b_v: Value, bias_v: Value | None
                          ) -> Candidate:
    """The sparse unit at PE = 1 (folding sets it), or why it does not apply: the dense
    unit's conditions, and weights at least SPARSE_MIN_ZEROS zeros."""
    dense = mvau_candidate(node, a_v, b_v, bias_v)
    return Candidate.of(Kind.HLS_SPARSE_MVAU, {"pe": 1}, dense.reason or sparse_why(b_v),
                        tunable=("pe",))


def sparse_why(b_v: Value) -> str:
    """Why constant 8-bit weights `b_v` are not sparse enough for sparse PEs ("" if they
    are)."""
    if not b_v.is_const or b_v.dtype not in (DType.I8, DType.U8) or len(b_v.shape) != 2:
        return "B is not a constant 8-bit matrix"
    zeros = float(np.mean(b_v.const == 0)) if b_v.const.size else 0.0
    return "" if zeros >= SPARSE_MIN_ZEROS else \
        f"weights under {SPARSE_MIN_ZEROS:.0%} zeros (the dense unit)"


def sparse_rows(node: Node, b_v: Value, zb_v: Value | None, trans_b: bool) -> np.ndarray:
    """The weights B - zb as [N output channels, K terms] (int32)."""
    w = b_v.const.astype(np.int32)
    if trans_b:
        w = w.T
    if zb_v is not None:
        w = w - zb_v.const.astype(np.int32).reshape(1, -1)
    return np.ascontiguousarray(w.T)


def sparse_work(rows: np.ndarray) -> np.ndarray:
    """Each output channel's entries on a sparse PE: its non-zeros, and at least one (the
    entry that writes it)."""
    return np.maximum(np.count_nonzero(rows, axis=1), 1)


def sparse_entries(rows: np.ndarray, order: np.ndarray, pe: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The PEs' entry tables, [pe, L] each: weight, term and the channel the entry ends
    (-1: the row goes on; -2: padding past the PE's work), and each PE's count of real
    entries. PE p runs the rows order[p], order[p + pe], ... (reorder.interleaved_pe_order)."""
    lists = []
    for p in range(pe):
        ent = []
        for ch in order[p::pe]:
            if ch < 0:
                continue
            nz = np.flatnonzero(rows[ch])
            if nz.size == 0:
                ent.append((0, 0, int(ch)))
            else:
                ent += [(int(rows[ch, t]), int(t), -1) for t in nz[:-1]]
                ent.append((int(rows[ch, nz[-1]]), int(nz[-1]), int(ch)))
        lists.append(ent)
    length = max(1, max(len(e) for e in lists))
    tables = np.zeros((3, pe, length), np.int64)
    tables[2] = -2
    for p, ent in enumerate(lists):
        if ent:
            tables[:, p, :len(ent)] = np.array(ent).T
    return tables[0], tables[1], tables[2], np.array([len(e) for e in lists])


def sparse_mvau(kb: NodeKernelBuilder, node: Node, a_v: Value, za_v: Value | None,
                b_v: Value, zb_v: Value | None, bias_v: Value | None, zy_v: Value | None,
                trans_b: bool, pe: int) -> None:
    """y = A @ B on `pe` sparse PEs that skip B's zeros: PE p walks its table of entries
    (weight, term, the channel it ends), one a cycle, all PEs in step: acc += (a[term] - za)
    weight; an entry that ends a row writes requantize(acc + bias) to its channel and starts
    the next row from 0. The rows are dealt to the PEs by the reorder pass's interleaved
    order (`pe_order` where it set one for this PE count, else the same computed here), so
    that every PE has about as many entries; a step of the unit takes max over PEs of their
    entries cycles a row of A. Each PE counts the entries it runs (`pe_work`, a C-simulation
    counter). Integer sums, grouped otherwise: the same outputs bit for bit."""
    from ...passes.reorder import pe_order

    rows = sparse_rows(node, b_v, zb_v, trans_b)
    n, k = rows.shape
    if not 1 <= pe <= n:
        raise EdgecError(f"node {node.name}: hls-sparse-mvau{{pe={pe}}} needs PE within its "
                         f"{n} outputs")
    order = pe_order(node, sparse_work(rows), pe)
    wv, tv, ov, counts = sparse_entries(rows, order, pe)
    length = wv.shape[1]
    wt = constant_table(kb, narrow(wv.reshape(-1)), f"sval{pe}", b_v)
    tt = constant_table(kb, narrow(tv.reshape(-1)), f"sterm{pe}", b_v)
    ot = constant_table(kb, narrow(ov.reshape(-1)), f"sout{pe}", b_v)
    m = a_v.shape[0]
    a = kb.bind(a_v, "a")
    za = zero_point(kb, za_v, "a_zp")
    c = kb.bind(bias_v, "c") if bias_v is not None else None
    cstride = 1 if bias_v is not None and bias_v.type.numel > 1 else 0
    finish = fixed_finish(kb, node, fixed_point(node), zero_point(kb, zy_v, "y_zp"), b_v)
    y = kb.bind(node.output, "y")
    nnz = int(np.count_nonzero(rows))
    kb.strategy = (f"sparse matrix-vector unit, {pe} PE ({nnz} non-zeros of {rows.size}, "
                   f"{length} cycles a row, PE work max / mean "
                   f"{counts.max() / max(counts.mean(), 1e-9):.3f})")
    work = kb.alloc("pe_work", I32, (pe,), "local", counts=f"{kb.name}_pe_work")
    for p in range(pe):
        kb.store(work, p, const(0, I32))
    with kb.loop(m, "i") as i:
        accs = [kb.local(f"acc{p}", const(0, I32)) for p in range(pe)]
        with kb.loop(length, "t", kind=LoopKind.PIPELINE, ii=1) as t:
            for p, acc in enumerate(accs):
                e = named(kb, f"e{p}", t + p * length)
                out = named(kb, f"ch{p}", cast(ot[e], I32))
                xv = cast(a[i * k + cast(tt[e], DType.INDEX)], I32)
                xv = xv - za if za is not None else xv
                kb.assign(acc, acc + xv * cast(wt[e], I32))
                with kb.if_(out >= -1):  # a real entry: counted
                    kb.store(work, p, work[p] + 1)
                with kb.if_(out >= 0):  # it ends a row: the output, then the next row
                    ch = cast(out, DType.INDEX)
                    total = acc + cast(c[ch * cstride], I32) if c is not None else acc
                    kb.store(y, i * n + ch, finish((), i, ch, total))
                    kb.assign(acc, const(0, I32))
