"""Operator reordering: the output channels of sparse layers permuted so that the threads get
equal shares of the non-zeros, at no cost at run time.

The thread pool gives each thread one contiguous slice of a parallel loop, so a sparse
kernel whose first half of output channels holds more non-zeros than the second keeps one
thread waiting. The pass reorders the units the kernels split (block rows of a SparseConv,
slices of a SparseMatMul) by recursive bisection (ir/sparse.py `balanced_order`): every split
into 2, 4, 8, ... equal contiguous parts then gets about the same work, whatever the thread
count at run time. The permutation never runs:

- SparseConv: attribute `order` says which channel block each stored block row computes; the
  kernel's epilogue, which already writes each output row at its own address, writes it at
  the channel's (bias and residual read there too): the output keeps its channel order.
- SparseMatMul: where one matrix product with a constant weight consumes the result, the
  order is folded into the graph: the columns of W and the bias are permuted, and so are
  the rows of that consumer's weight. The columns are first sorted by their non-zeros
  (SELL-C-sigma), so that the C outputs of a slice have rows of about the same length and
  the slice stores little padding; the slices are then balanced. Where no consumer can
  take a permutation (a fused QKV projection that is split, a classifier), the slices alone
  are balanced, in the kernel: attribute `order` says which slice of C outputs each stored
  slice computes, and the kernel writes its vector there (a fused QKV projection of a
  trained text recognizer, pruned to 90%: its query, key and value thirds kept 7%, 10% and
  13% of their weights, halves 1.22 to 1).

With `pes=P` (an FPGA's sparse units, lowering/kernels/quant_mvau.py), the pass instead deals
the output channels of each integer matrix product with mostly zero weights over P PEs that
each take every P-th stored row (PE p: rows p, p + P, ...), heaviest first to the least
loaded PE (`pe_order` in the node's record; the HLS project does the same for the PE count it
folds a unit to); the kernel writes each row at its channel.

`node.record.reorder` (a ReorderRecord) keeps the imbalance (max / mean work per thread at `threads`
contiguous parts) before and after, and for SparseMatMul the padding (stored / non-zero
values) before and after; the report prints them with the kernel.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..ir.encodings import carry_codes
from ..ir.records import ReorderRecord
from ..ir.sparse import (
    ConvTasks,
    SlicedWeights,
    SparseWeights,
    balanced_order,
    block_row_work,
    decode_sliced,
    encode_sliced,
    imbalance,
)
from ..ir.sparse_pe import interleaved_pe_order, pe_loads
from .manager import register_pass

# a permutation must lower the imbalance by this much to be applied (both are figures of
# the same work; below it the gain is noise)
_MIN_GAIN = 1e-3
# a permuted convolution writes its output channels out of order (0.5-2.4% slower at 2
# threads on ResNet-18 where its tasks were balanced anyway): it must gain 2% of balance
_MIN_CONV_GAIN = 0.02
_RUNS = 64  # a convolution's block rows move in about this many runs (ir/sparse.py)


def pe_order(node: Node, work: np.ndarray, pes: int) -> np.ndarray:
    """The interleaved order of `node`'s output channels over `pes` PEs (`reorder{pes=P}`):
    the one the pass recorded (node.record.reorder) for that many PEs, else computed and
    recorded
    (ir/sparse.py interleaved_pe_order: PE p takes stored rows p, p + P, ...), with the
    imbalance (max / mean work per PE) before (channels in their order, dealt the same way)
    and after."""
    rec = node.record.reorder
    if rec is not None and rec.threads == pes and len(rec.pe_order) == -(-work.size // pes) \
            * pes:
        return np.asarray(rec.pe_order, np.int64)
    order = interleaved_pe_order(work, pes)
    plain = np.arange(len(order))
    plain = np.where(plain < work.size, plain, -1)

    def spread(o: np.ndarray) -> float:
        loads = pe_loads(work, o, pes)
        return float(loads.max() / max(loads.mean(), 1e-12))

    node.record.reorder = ReorderRecord(pes, (round(spread(plain), 3), round(spread(order), 3)),
                                        pe_order=tuple(int(v) for v in order))
    return order


@register_pass("reorder")
def reorder(graph: Graph, *, threads: int = 2, lanes: int = 0, registers: int = 16,
            pes: int = 0) -> bool:
    """Balance the non-zeros of sparse layers across `threads` contiguous parts (and any
    power-of-two split of them) by permuting output channels; see the module doc. With the
    target's float `lanes` (and `registers`), a convolution is judged by the thread pool's
    shares of its kernel's tasks (ir/sparse.py `ConvTasks`: row bands first)."""
    if pes:
        return _interleave(graph, pes)
    changed = False
    for node in list(graph.nodes):
        if node.op == "SparseConv" and node.attrs["wenc"].startswith("nm "):
            continue  # N:M: every channel holds as many weights, in a fixed layout
        if node.op == "SparseConv":
            changed |= _reorder_conv(graph, node, threads, lanes, registers)
        elif node.op == "SparseMatMul":
            changed |= _reorder_matmul(graph, node, threads)
    return changed


def _interleave(graph: Graph, pes: int) -> bool:
    """`pes` mode: each integer matrix product or convolution (one group) with constant 8-bit
    weights at least half zeros (an FPGA's sparse unit, lowering/kernels/quant_sparse_pe.py)
    gets the interleaved order of its output channels over `pes` PEs (`pe_order`), through
    which its kernel writes. (A convolution's work per channel does not depend on how its
    input channels are padded: the order holds at any SIMD.)"""
    from ..ir.sparse_pe import sparse_conv_rows, sparse_rows, sparse_why, sparse_work

    changed = False
    for node in graph.nodes:
        if node.op in ("QGemm", "QLinearMatMul") and not sparse_why(node.inputs[3]):
            rows = sparse_rows(node.inputs[3], node.input(5),
                               bool(node.attrs.get("transB")))
        elif node.op == "QLinearConv" and int(node.attrs.get("group", 1)) == 1 and \
                node.inputs[3].is_const and np.mean(node.inputs[3].const == 0) >= 0.5:
            rows = sparse_conv_rows(node.inputs[3], node.input(5), node.inputs[3].shape[1])
        else:
            continue
        pe_order(node, sparse_work(rows), min(pes, rows.shape[0]))
        changed = True
    return changed


def _reorder_conv(graph: Graph, node: Node, threads: int, lanes: int, registers: int) -> bool:
    enc = SparseWeights.parse(node.attrs["wenc"])
    vals, offs, rowptr = (node.inputs[k].const for k in (1, 2, 3))
    work = block_row_work(rowptr)  # blocks per block row (R FMAs per pixel each), and its own
    if work.size < threads:
        return False  # one block row per thread at most: nothing to balance
    # runs of block rows, not single ones: the kernel writes each channel's rows where they
    # belong, and scattered writes cost (a 6625-channel classifier permuted row by row ran
    # 12% slower at one thread)
    order = balanced_order(work, _RUNS)
    spread, gain = (lambda w: imbalance(w, threads)), _MIN_GAIN
    if lanes:
        n, m, oh, _ = node.output.shape
        split = ConvTasks.of(n, m, oh, node.inputs[0].shape[3], enc.rows, lanes, registers)
        spread, gain = (lambda w: split.imbalance(w, threads)), _MIN_CONV_GAIN
    before, after = spread(work), spread(work[order])
    node.record.reorder = ReorderRecord(threads, (round(before, 3), round(min(before, after), 3)))
    if after > before - gain:
        return False
    pick = np.concatenate([np.arange(rowptr[q], rowptr[q + 1]) for q in order]).astype(np.int64)
    new_ptr = np.concatenate([[0], np.cumsum(np.diff(rowptr)[order])]).astype(np.int32)
    new_vals = vals.reshape(-1, enc.block)[pick].reshape(-1)
    names = [node.inputs[k].name for k in (1, 2, 3)]
    for k, arr, nm in zip((1, 2, 3), (new_vals, offs[pick], new_ptr), names):
        graph.set_input(node, k, graph.const(arr, f"{nm}_reordered"))
    old = node.attrs.get("order") or list(range(work.size))
    node.attrs["order"] = [int(old[q]) for q in order]
    return True


def _fold_target(graph: Graph, node: Node) -> Node | None:
    """The one matrix product with a constant weight that consumes `node`'s output as its
    left operand (whose weight rows can take the permutation), or None."""
    y = node.output
    if node.input(5) is not None or y in graph.outputs or len(y.users()) != 1:
        return None
    user = y.users()[0]
    if user.op not in ("MatMul", "FusedMatMul", "SparseMatMul") or user.inputs[0] is not y or \
            any(v is y for v in user.inputs[1:]):
        return None
    w = user.inputs[1]
    if user.op != "SparseMatMul" and not (w.is_const and w.type.rank == 2):
        return None
    return user


def _reorder_matmul(graph: Graph, node: Node, threads: int) -> bool:
    enc = SlicedWeights.parse(node.attrs["wenc"])
    k, n = node.attrs["wshape"]
    vals = node.inputs[1].const
    widths = np.diff(node.inputs[3].const).astype(np.int64)
    if widths.size < threads or node.attrs.get("order"):
        return False  # one slice per thread at most: nothing to balance (or done already)
    user = _fold_target(graph, node)
    if user is None:
        return _order_slices(graph, node, enc, widths, threads)
    b = decode_sliced(vals, node.inputs[2].const, node.inputs[3].const, enc, [k, n])
    nnz = max(int(np.count_nonzero(b)), 1)
    # columns by their non-zeros, most first; then the slices balanced
    by_len = np.argsort(-np.count_nonzero(b, axis=0), kind="stable")
    _, _, ptr = encode_sliced(b[:, by_len], enc)
    sorted_widths = np.diff(ptr).astype(np.int64)
    slice_order = balanced_order(sorted_widths)
    perm = np.concatenate([by_len[s * enc.c:(s + 1) * enc.c] for s in slice_order])
    new_vals, new_cols, new_ptr = encode_sliced(b[:, perm], enc)
    new_widths = np.diff(new_ptr).astype(np.int64)
    before = (imbalance(widths, threads), vals.size / nnz)
    after = (imbalance(new_widths, threads), new_vals.size / nnz)
    keep = not (after[1] < before[1] - _MIN_GAIN or after[0] < before[0] - _MIN_GAIN)
    node.record.reorder = ReorderRecord(
        threads, (round(before[0], 3), round(before[0] if keep else after[0], 3)),
        (round(before[1], 3), round(before[1] if keep else after[1], 3)))
    if keep:
        return False
    names = [node.inputs[j].name for j in (1, 2, 3)]
    for j, arr, nm in zip((1, 2, 3), (new_vals, new_cols, new_ptr), names):
        graph.set_input(node, j, graph.const(arr, f"{nm}_reordered"))
    if node.input(4) is not None:
        bias = node.inputs[4]
        graph.set_input(node, 4, graph.const(bias.const[perm], f"{bias.name}_reordered"))
    _permute_rows(graph, user, perm)
    return True


def _order_slices(graph: Graph, node: Node, enc: SlicedWeights, widths: np.ndarray,
                  threads: int) -> bool:
    """Balance the slices of a SparseMatMul whose output no consumer can take permuted: the
    kernel computes them in a balanced order and writes each at its own outputs (`order`);
    the columns keep their slices (no sorting by length)."""
    order = balanced_order(widths)
    before, after = imbalance(widths, threads), imbalance(widths[order], threads)
    nnz = max(int(np.count_nonzero(node.inputs[1].const)), 1)
    pad = round(node.inputs[1].const.size / nnz, 3)
    node.record.reorder = ReorderRecord(threads, (round(before, 3), round(min(before, after), 3)),
                                        (pad, pad))
    if after > before - _MIN_GAIN:
        return False
    ptr, c = node.inputs[3].const, enc.c
    pick = np.concatenate([np.arange(ptr[q] * c, ptr[q + 1] * c) for q in order])
    new_ptr = np.concatenate([[0], np.cumsum(widths[order])]).astype(np.int32)
    names = [node.inputs[j].name for j in (1, 2, 3)]
    arrays = (node.inputs[1].const[pick], node.inputs[2].const[pick], new_ptr)
    for j, arr, nm in zip((1, 2, 3), arrays, names):
        graph.set_input(node, j, graph.const(arr, f"{nm}_reordered"))
    node.attrs["order"] = [int(q) for q in order]
    return True


def _permute_rows(graph: Graph, user: Node, perm: np.ndarray) -> None:
    """`user`'s weight W [K, N] -> W[perm]: its left operand now comes in the order perm."""
    if user.op != "SparseMatMul":
        w = user.inputs[1]
        moved = graph.const(np.ascontiguousarray(w.const[perm]), f"{w.name}_reordered")
        carry_codes(w, moved, lambda a: a[perm], 1)  # (a MatMul's scales: per column)
        graph.set_input(user, 1, moved)
        return
    enc = SlicedWeights.parse(user.attrs["wenc"])
    w = decode_sliced(*(user.inputs[j].const for j in (1, 2, 3)), enc, user.attrs["wshape"],
                      user.attrs.get("order", []))
    names = [user.inputs[j].name for j in (1, 2, 3)]
    for j, arr, nm in zip((1, 2, 3), encode_sliced(w[perm], enc), names):
        graph.set_input(user, j, graph.const(arr, f"{nm}_reordered"))
    user.attrs.pop("order", None)  # stored in slice order again
