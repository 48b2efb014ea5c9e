"""An FPGA's sparse PEs (lowering/kernels/quant_sparse_pe.py), as the graph sees them: which
weights are sparse enough, their rows (one an output channel, as the PEs walk them), each
row's work, and how the rows are dealt to P PEs so that their work is even (the reorder
pass's `pes` mode and the HLS project's folding use the same)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .dtypes import DType

if TYPE_CHECKING:
    from .graph import Value

# a matrix product whose weights are at least this share zeros runs on sparse PEs
SPARSE_MIN_ZEROS = 0.5
# whether the channels are dealt to the PEs by their work (interleaved_pe_order) or in their
# own order (benchmarks/bench_hls.py --ablate turns it off to measure what reordering gives)
INTERLEAVE = True


def sparse_why(b_v: Value) -> str:
    """Why constant 8-bit weights `b_v` are not sparse enough for sparse PEs ("" if they
    are)."""
    if not b_v.is_const or b_v.dtype not in (DType.I8, DType.U8) or len(b_v.shape) != 2:
        return "B is not a constant 8-bit matrix"
    zeros = float(np.mean(b_v.const == 0)) if b_v.const.size else 0.0
    return "" if zeros >= SPARSE_MIN_ZEROS else \
        f"weights under {SPARSE_MIN_ZEROS:.0%} zeros (the dense unit)"


def sparse_rows(b_v: Value, zb_v: Value | None, trans_b: bool) -> np.ndarray:
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


def sparse_conv_rows(w_v: Value, zw_v: Value | None, cp: int) -> np.ndarray:
    """W - zw as [M, taps x cp] (a window's terms tap by tap, channels padded to cp)."""
    wc = w_v.const.astype(np.int32)
    if zw_v is not None:
        wc = wc - zw_v.const.astype(np.int32).reshape(-1, 1, 1, 1)
    m, c = wc.shape[:2]
    wc = np.pad(wc.transpose(0, 2, 3, 1), ((0, 0), (0, 0), (0, 0), (0, cp - c)))
    return np.ascontiguousarray(wc.reshape(m, -1))


def interleaved_pe_order(work: np.ndarray, pes: int) -> np.ndarray:
    """The channel each stored row of a unit of `pes` processing elements computes, where PE
    p takes stored rows p, p + pes, p + 2 pes, ... (-1: a row past the channels, which
    computes nothing): the channels of `work` dealt so that the PEs' sums are about equal,
    heaviest first, each to the least loaded PE with a row left (LPT with equal counts),
    then rows swapped off the busiest PE while that lowers it (`_refine`)."""
    work = np.asarray(work, np.float64)
    rows = -(-work.size // pes)
    if not INTERLEAVE:  # PE p: channels p, p + pes, ...
        return np.concatenate([np.arange(work.size), np.full(rows * pes - work.size, -1)])
    load, count = np.zeros(pes), np.zeros(pes, np.int64)
    order = np.full(rows * pes, -1, np.int64)
    for ch in np.argsort(-work, kind="stable"):
        p = min((q for q in range(pes) if count[q] < rows), key=lambda q: (load[q], q))
        order[count[p] * pes + p] = ch
        count[p] += 1
        load[p] += work[ch]
    return _refine(order, work, pes)


def _refine(order: np.ndarray, work: np.ndarray, pes: int, rounds: int = 200) -> np.ndarray:
    """`order` with rows swapped between the busiest PE and the others while a swap lowers
    the busiest PE's work below what it was (the greedy deal leaves some: 5, 5, 4, 3, 3 on 2
    PEs of 3 rows gives 9 and 11, one swap 10 and 10)."""
    order = order.copy()
    rowwork = np.where(order >= 0, work[np.maximum(order, 0)], 0.0).reshape(-1, pes)
    for _ in range(rounds):
        load = rowwork.sum(0)
        top = int(np.argmax(load))
        best = None
        for q in range(pes):  # the swap of a row of `top` and one of q that most lowers
            if q == top:  # the larger of the two PEs' work, if below top's
                continue
            gain = rowwork[:, top][:, None] - rowwork[:, q][None, :]  # top's row i, q's j
            worse = np.maximum(load[top] - gain, load[q] + gain)
            i, j = np.unravel_index(np.argmin(worse), worse.shape)
            if worse[i, j] < load[top] - 1e-9 and (best is None or worse[i, j] < best[0]):
                best = (worse[i, j], q, i, j)
        if best is None:
            break
        _, q, i, j = best
        rowwork[i, top], rowwork[j, q] = rowwork[j, q], rowwork[i, top]
        order[i * pes + top], order[j * pes + q] = order[j * pes + q], order[i * pes + top]
    return order


def pe_loads(work: np.ndarray, order: np.ndarray, pes: int) -> np.ndarray:
    """Each PE's sum of `work` under `order` (interleaved_pe_order's form)."""
    w = np.where(order >= 0, np.asarray(work, np.float64)[np.maximum(order, 0)], 0.0)
    return w.reshape(-1, pes).sum(0)
