"""Sparse PEs of an FPGA design (the HLS target): the matrix-vector units of quant_mvau.py
for weights that are mostly zeros, whose PEs skip them.

Each PE walks a table of entries (a weight, the term it multiplies, and the output channel
whose row the entry ends, or -1), one entry a cycle, all PEs in step; an entry that ends a
row writes requantize(acc + bias) to its channel and starts the next row from 0. A unit's
step takes its busiest PE's entries in cycles, so the output channels are dealt to the PEs
by the reorder pass's interleaved order (PE p takes stored rows p, p + P, ...: passes/
reorder.py `pe_order`, which keeps the order in the node's record), heaviest first to the
least loaded. Each PE counts the entries it runs (`pe_work`, a C-simulation counter that
edgec_stream.h adds up under EDGEC_CSIM_TRACE), so the C-simulation measures what the
cycle model assumes. Integer sums, grouped otherwise: the outputs are the dense kernels'
bit for bit.

- `sparse_mvau` (`hls-sparse-mvau{pe}`): QGemm and QLinearMatMul with constant 8-bit B
  at least half zeros; an entry's term indexes the row of A.
- `sparse_conv` (`hls-sparse-conv{pe,simd}`): QLinearConv of one group (as conv_mvau): per
  output pixel the window (taps x channels, x - zx, zero in the padding) is loaded into
  registers from the HWC copy of the frame, SIMD channels a cycle, and the PEs' entries
  index it (term = tap x padded channels + channel)."""

from __future__ import annotations

import numpy as np

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...ir.sparse_pe import (
    SPARSE_MIN_ZEROS,
    sparse_conv_rows,
    sparse_rows,
    sparse_why,
    sparse_work,
)
from ...kernel_ir.kernel import Buffer, LoopKind, cast, const, select
from ..lower import NodeKernelBuilder
from ..strategies import Candidate, Kind
from .common import named
from .quant_common import constant_table, fixed_finish, fixed_point, narrow, zero_point
from .quant_mvau import conv_mvau_candidate, hwc_frame, mvau_candidate

I32, I16 = DType.I32, DType.I16


def sparse_mvau_candidate(node: Node, a_v: Value, b_v: Value, bias_v: Value | None
                          ) -> Candidate:
    """The sparse unit at PE = 1 (folding sets it), or why it does not apply: the dense
    unit's conditions, and weights at least SPARSE_MIN_ZEROS zeros."""
    dense = mvau_candidate(node, a_v, b_v, bias_v)
    return Candidate.of(Kind.HLS_SPARSE_MVAU, {"pe": 1}, dense.reason or sparse_why(b_v),
                        tunable=("pe",))


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
    """y = A @ B on `pe` sparse PEs (module doc): an entry's term is a column of A."""
    rows = sparse_rows(b_v, zb_v, trans_b)
    n, k = rows.shape
    if not 1 <= pe <= n:
        raise EdgecError(f"node {node.name}: hls-sparse-mvau{{pe={pe}}} needs PE within its "
                         f"{n} outputs")
    wt, tt, ot, counts = _tables(kb, node, rows, pe, b_v)
    length = wt.numel // pe
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
        za_ = za
        _walk(kb, pe, length, wt, tt, ot, work,
              lambda t: (cast(a[i * k + t], I32) - za_) if za_ is not None
              else cast(a[i * k + t], I32),
              lambda ch, acc: kb.store(y, i * n + ch, finish((), i, ch, (
                  acc + cast(c[ch * cstride], I32) if c is not None else acc))))


def sparse_conv_candidate(node: Node, x_v: Value, zx_v: Value | None, w_v: Value,
                          b_v: Value | None) -> Candidate:
    """The sparse convolution unit at PE = SIMD = 1 (folding sets them), or why it does not
    apply: conv_mvau's conditions and weights at least SPARSE_MIN_ZEROS zeros."""
    dense = conv_mvau_candidate(node, x_v, zx_v, w_v, b_v)
    zeros = float(np.mean(w_v.const == 0)) if w_v.is_const and w_v.const.size else 0.0
    why = dense.reason or ("" if zeros >= SPARSE_MIN_ZEROS else
                           f"weights under {SPARSE_MIN_ZEROS:.0%} zeros (the dense unit)")
    return Candidate.of(Kind.HLS_SPARSE_CONV, {"pe": 1, "simd": 1}, why,
                        tunable=("pe", "simd"))


def sparse_conv(kb: NodeKernelBuilder, node: Node, geo, x_v: Value, zx_v: Value | None,
                w_v: Value, zw_v: Value | None, b_v: Value | None, zy_v: Value | None,
                sw_v: Value, pe: int, simd: int) -> None:
    """Emit the sparse convolution unit (module doc); `geo` its ConvGeometry."""
    m_, c_ = geo.m, geo.c
    (kh, kw), (h, w_), (oh, ow) = geo.ksz, geo.isp, geo.osp
    if not (1 <= pe <= m_ and 1 <= simd <= c_):
        raise EdgecError(f"node {node.name}: hls-sparse-conv{{pe={pe},simd={simd}}} needs PE "
                         f"within its {m_} output channels and SIMD within its {c_} input "
                         "channels")
    cp, taps = -(-c_ // simd) * simd, kh * kw
    rows = sparse_conv_rows(w_v, zw_v, cp)
    wt, tt, ot, counts = _tables(kb, node, rows, pe, w_v)
    length = wt.numel // pe
    x = kb.bind(x_v, "x")
    zx = zero_point(kb, zx_v, "x_zp")
    b = kb.bind(b_v, "b") if b_v is not None else None
    finish = fixed_finish(kb, node, fixed_point(node), zero_point(kb, zy_v, "y_zp"), sw_v)
    y = kb.bind(node.output, "y")
    nnz = int(np.count_nonzero(rows))
    kb.strategy = (f"sparse convolution unit, {pe} PE x {simd} SIMD ({nnz} non-zeros of "
                   f"{m_ * taps * c_}, {length} cycles a pixel and {taps * (cp // simd)} "
                   f"to load its window, PE work max / mean "
                   f"{counts.max() / max(counts.mean(), 1e-9):.3f})")
    xt, copy = hwc_frame(kb, x, x_v.dtype, h * w_, c_, cp, simd)
    win = kb.alloc("win", I16, (taps * cp,), "local", partition=taps * cp)
    work = kb.alloc("pe_work", I32, (pe,), "local", counts=f"{kb.name}_pe_work")
    for p in range(pe):
        kb.store(work, p, const(0, I32))
    (sy, sx), (dy, dx), (py, px) = geo.strides, geo.dil, geo.p0
    per_tap = cp // simd
    with kb.loop(geo.n, "n") as n:
        copy(n)
        with kb.loops([oh, ow], ["oy", "ox"]) as (oy, ox):
            with kb.loop(taps * per_tap, "wf", kind=LoopKind.PIPELINE, ii=1) as wf:
                tap = named(kb, "tap", wf // per_tap) if per_tap > 1 else wf
                c0 = named(kb, "c0", wf % per_tap * simd) if per_tap > 1 else const(0)
                iy = named(kb, "iy", oy * sy + tap // kw * dy - py)
                ix = named(kb, "ix", ox * sx + tap % kw * dx - px)
                inside = named(kb, "inside", (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w_))
                base = named(kb, "xb", (iy * w_ + ix) * cp + c0)
                with kb.loop(simd, "s", kind=LoopKind.UNROLL) as s:
                    xv = cast(xt[base + s], I32)
                    xv = xv - zx if zx is not None else xv
                    kb.store(win, tap * cp + c0 + s, cast(select(inside, xv, const(0, I32)),
                                                           I16))
            out = named(kb, "yo", (n * m_) * (oh * ow) + oy * ow + ox)
            _walk(kb, pe, length, wt, tt, ot, work,
                  lambda t: cast(win[t], I32), lambda ch, acc: kb.store(
                      y, out + ch * (oh * ow), finish((), None, ch, (
                          acc + cast(b[ch], I32) if b is not None else acc))))


def _tables(kb: NodeKernelBuilder, node: Node, rows: np.ndarray, pe: int, weights: Value
            ) -> tuple[Buffer, Buffer, Buffer, np.ndarray]:
    """The PEs' entry tables of `rows` (weights [channels, terms]) as the kernel's constants
    (weight, term, the channel an entry ends), in the interleaved order the reorder pass
    keeps for `pe` PEs, and each PE's count of real entries."""
    from ...passes.reorder import pe_order

    wv, tv, ov, counts = sparse_entries(rows, pe_order(node, sparse_work(rows), pe), pe)
    return (*(constant_table(kb, narrow(t.reshape(-1)), f"{name}{pe}", weights)
              for t, name in ((wv, "sval"), (tv, "sterm"), (ov, "sout"))), counts)


def _walk(kb: NodeKernelBuilder, pe: int, length: int, wt: Buffer, tt: Buffer, ot: Buffer,
          work: Buffer, term, emit) -> None:
    """The PEs' walk over their `length` entries, in step (pipelined): `term(index)` is an
    entry's operand, `emit(channel, acc)` writes a finished row."""
    accs = [kb.local(f"acc{p}", const(0, I32)) for p in range(pe)]
    with kb.loop(length, "t", kind=LoopKind.PIPELINE, ii=1) as t:
        for p, acc in enumerate(accs):
            e = named(kb, f"e{p}", t + p * length)
            out = named(kb, f"ch{p}", cast(ot[e], I32))
            kb.assign(acc, acc + term(cast(tt[e], DType.INDEX)) * cast(wt[e], I32))
            with kb.if_(out >= -1):  # a real entry: counted
                kb.store(work, p, work[p] + 1)
            with kb.if_(out >= 0):  # it ends a row: the output, then the next row
                emit(cast(out, DType.INDEX), acc)
                kb.assign(acc, const(0, I32))
