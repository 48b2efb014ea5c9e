"""Kernel builders of the matrix products without a vector micro-kernel (MatMul, Gemm;
`gemm.py` has the vector GEMM they try first): with B row-major, a row of Y accumulates in
the output itself, y[i, :] += A[i, k] * B[k, :] for k = 0..K-1 (a unit-stride loop gcc
vectorizes, without reassociating any sum), then one pass applies the epilogue to the hot row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...kernel_ir.kernel import (
    const,
)
from ...targets.target import Target
from ..lower import NodeKernelBuilder, kernel
from ..strategies import Candidate, Kind, roofline
from .common import (
    Activation,
    Epilogue,
    bind_operand,
    broadcast_strides,
    derived_constant,
    independent_loops,
    lane_steps,
    named,
    offset,
    row_major_strides,
    warp_rows,
)
from .gemm import vector_gemm, vector_gemm_candidate
from .gpu_tiles import GPU_TILE, gpu_tile_reg, gpu_tiles, tiles_text

# -- matrix products ------------------------------------------------------------------------

def _sizes(a_v: Value, b_v: Value, y_v: Value, trans_a: bool, trans_b: bool
           ) -> tuple[int, int, int, int]:
    """(batch, M, K, N) of A' @ B' (a 1-D A a row, a 1-D B a column)."""
    a_shape = (1, *a_v.shape) if len(a_v.shape) == 1 else tuple(a_v.shape)
    b_shape = (*b_v.shape, 1) if len(b_v.shape) == 1 else tuple(b_v.shape)
    m_, k_ = a_shape[-2:][::-1] if trans_a else a_shape[-2:]
    n_ = b_shape[-2] if trans_b else b_shape[-1]
    return max(1, y_v.type.numel // max(1, m_ * n_)), m_, k_, n_


def matmul_candidates(target: Target, a_v: Value, b_v: Value, y_v: Value,
                      trans_a: bool = False, trans_b: bool = False) -> list[Candidate]:
    """The scalar-built products, in order of preference (rows, unless N = 1 or B is
    transposed at run time), by the roofline: rows run gcc's vectors along N at half the FMA
    rate (each FMA loads and stores y), dot products one lane (gcc does not reassociate the
    sum); both read A, B and Y once."""
    batch, m_, k_, n_ = _sizes(a_v, b_v, y_v, trans_a, trans_b)
    macs = batch * m_ * k_ * n_
    nbytes = y_v.dtype.itemsize * (a_v.type.numel + b_v.type.numel + y_v.type.numel)
    lanes = target.lanes(y_v.dtype)
    # rows read B's rows contiguously: a transposed B is transposed back at compile time
    # where it is a constant of more than one column
    rows_reason = "" if not trans_b or (b_v.is_const and n_ > 1) else \
        "B is transposed and computed at run time" if not b_v.is_const else \
        "B is one transposed column"
    if target.gpu is not None:  # a row's loops would run on one thread of it
        rows_reason = "a GPU target: a thread per output (matmul-dots)"
    rows = Candidate.of(Kind.MATMUL_ROWS, {}, rows_reason, None if rows_reason else
                        roofline(target, macs, nbytes, max(1, min(lanes, n_) // 2)))
    dots = Candidate.of(Kind.MATMUL_DOTS, {}, "", roofline(target, macs, nbytes, 1))
    tiled = Candidate.of(Kind.GPU_TILED_GEMM, {"tile": GPU_TILE}, (
        "not a GPU target" if target.gpu is None else
        "A or B is a vector" if len(a_v.shape) < 2 or len(b_v.shape) < 2 else
        "A is transposed and has batch dims" if trans_a and len(a_v.shape) > 2 and
        len(b_v.shape) == 2 else
        "one row of A: a warp an output (matmul-warps) or a thread (matmul-dots)"
        if (batch * m_ if len(b_v.shape) == 2 else m_) == 1 else
        "not float32" if y_v.dtype is not DType.F32 else ""), None, ("tile",))
    one_row = (batch * m_ if len(b_v.shape) == 2 else m_) == 1
    warps = Candidate.of(Kind.MATMUL_WARPS, {}, (
        "not a GPU target" if target.gpu is None else
        "more than one row of A (shared-memory tiles)" if not one_row else
        "B is a vector" if len(b_v.shape) < 2 else
        "B is computed at run time and not transposed: a warp's lanes along K would not read "
        "it coalesced" if not trans_b and not b_v.is_const else
        f"{k_} terms per output, fewer than 2 per lane of a warp" if k_ < 2 * target.gpu.warp
        else ""))
    return [warps, tiled, *([dots, rows] if n_ == 1 or rows_reason else [rows, dots])]


def build_matmul(kb: NodeKernelBuilder, a_v: Value, b_v: Value, y_v: Value, *,
                 trans_a: bool = False, trans_b: bool = False, scale: float = 1.0,
                 addends: Sequence[tuple[Value, float]] = (),
                 activation: Activation | None = None,
                 form: Kind = Kind.MATMUL_ROWS) -> None:
    """Y = act(scale * A' @ B' + sum(factor * addend)) with numpy matmul semantics: batch
    dims broadcast, a 1-D A is a row and a 1-D B a column (their unit dim is dropped from Y).

    B row-major [K, N] (MATMUL_ROWS): per output row, y[i, :] += A[i, k] * B[k, :] for k =
    0..K-1 (a contiguous axpy). A constant transposed B is transposed back at compile time.
    MATMUL_DOTS (or B transposed at run time): a dot product per output in a local.
    GPU_TILED_GEMM (a GPU's): `gpu_tiles`, A's leading dims taken as rows where B is 2-D,
    else a grid of tiles per batch. MATMUL_WARPS (a GPU's, for one row of A): a warp per
    output, its lanes striding along K through B held as [N, K] (a constant B transposed at
    compile time where it is not), the warp's sums folded by shuffles.
    """
    dots, tiled, warps = (form is k for k in (Kind.MATMUL_DOTS, Kind.GPU_TILED_GEMM,
                                              Kind.MATMUL_WARPS))
    a_shape = (1, *a_v.shape) if len(a_v.shape) == 1 else tuple(a_v.shape)
    b_shape = (*b_v.shape, 1) if len(b_v.shape) == 1 else tuple(b_v.shape)
    m_, k_ = a_shape[-2:][::-1] if trans_a else a_shape[-2:]
    n_ = b_shape[-2] if trans_b else b_shape[-1]
    batch = list(y_v.shape[:len(y_v.shape) - (len(a_v.shape) > 1) - (len(b_v.shape) > 1)])
    a = kb.bind(a_v, "a")
    if warps and not trans_b:  # (matmul_candidates: B constant) as [N, K]
        b = derived_constant(kb, b_v, "transposed", lambda w: np.ascontiguousarray(
            np.swapaxes(w, -1, -2)), "b")
        b_shape, trans_b = (*b_shape[:-2], b_shape[-1], b_shape[-2]), True
    elif trans_b and b_v.is_const and n_ > 1 and not warps:
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

    if tiled and len(b_shape) == 2:  # A's leading dims as the rows of one matrix
        kb.strategy = "GPU GEMM, shared-memory tiles"
        lead = y_v.shape[:-1]

        def a_rows(z, i, k):
            return a_at([], i, k) if len(a_shape) == 2 else a[i * k_ + k]

        def b_rows(z, k, j):  # (B broadcast over the batch: its batch strides are 0)
            return b_at([const(0)] * len(batch), k, j)

        def store(z, i, j, acc):  # at Y's coordinates of row i (expressions, not locals:
            # an addend may read only some of them)
            rows = [i] if len(lead) == 1 else \
                [i // math.prod(lead[d + 1:]) % n for d, n in enumerate(lead)]
            kb.store(y, i * n_ + j, epi(kb, acc, [*rows, j]))

        rows = math.prod(lead)
        reg = gpu_tile_reg(kb.target, lambda side: -(-rows // side) * -(-n_ // side))
        kb.strategy += tiles_text(kb.target, y.dtype, reg)
        gpu_tiles(kb, a_rows, b_rows, store, y.dtype, rows, n_, k_, reg=reg,
                  out=(y, lambda z, i, j: i * n_ + j) if y.dtype is DType.F32 else None)
        return
    if tiled:  # a grid of tiles per product of the batch
        kb.strategy = "GPU GEMM, shared-memory tiles"

        def bi(z):  # the batch coordinates of grid index z
            return [z // math.prod(batch[d + 1:]) % n for d, n in enumerate(batch)]

        products = math.prod(batch)
        reg = gpu_tile_reg(kb.target,
                           lambda side: products * -(-m_ // side) * -(-n_ // side))
        kb.strategy += tiles_text(kb.target, y.dtype, reg)
        gpu_tiles(kb, lambda z, i, k: a_at(bi(z), i, k), lambda z, k, j: b_at(bi(z), k, j),
                   lambda z, i, j, acc: kb.store(y, offset([*bi(z), i, j], sy),
                                                 epi(kb, acc, out_coords(bi(z), i, j))),
                   y.dtype, m_, n_, k_, products, reg,
                   out=(y, lambda z, i, j: offset([*bi(z), i, j], sy))
                   if y.dtype is DType.F32 else None)
        return
    names = [f"b{d}" for d in range(len(batch))]
    if warps:
        kb.strategy = "matmul, a GPU warp an output"
        dims = (*batch, m_, n_)
        with warp_rows(kb, math.prod(dims)) as (r, lane, width):
            *bi, i, j = [named(kb, nm, r // st % ext) for nm, st, ext in
                         zip([*names, "i", "j"], row_major_strides(dims), dims, strict=True)]
            acc = kb.local("acc", zero)
            with lane_steps(kb, lane, width, k_, "k") as k:
                kb.assign(acc, acc + a_at(bi, i, k) * b_at(bi, k, j))
            kb.warp_reduce(acc, "add", width)
            with kb.if_(lane.eq(0)):
                kb.store(y, offset([*bi, i, j], sy), epi(kb, acc, out_coords(bi, i, j)))
        return
    dots = dots or trans_b
    kb.strategy = "matmul dot products" if dots else "matmul rows"
    if dots and kb.gpu_rows:  # a GPU thread an output
        with independent_loops(kb, (*batch, m_, n_), [*names, "i", "j"], k_) as (*bi, i, j):
            acc = kb.local("acc", zero)
            with kb.loop(k_, "k") as k:
                kb.assign(acc, acc + a_at(bi, i, k) * b_at(bi, k, j))
            kb.store(y, offset([*bi, i, j], sy), epi(kb, acc, out_coords(bi, i, j)))
        return
    if dots:
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
    a_v, b_v, y_v = node.inputs[0], node.inputs[1], node.output
    c = kb.choose([vector_gemm_candidate(kb.target, a_v, b_v, y_v),
                   *matmul_candidates(kb.target, a_v, b_v, y_v)])
    if c.kind is Kind.VECTOR_GEMM:
        vector_gemm(kb, c, a_v, b_v, y_v)
    else:
        build_matmul(kb, a_v, b_v, y_v, form=c.kind)


@kernel("Gemm")
def gemm(kb: NodeKernelBuilder, node: Node) -> None:
    c, trans_a, trans_b = node.input(2), bool(node.attrs["transA"]), bool(node.attrs["transB"])
    # the vector GEMM takes a Gemm once the fuse pass has made it a FusedMatMul
    vec = Candidate.of(Kind.VECTOR_GEMM, {}, "a Gemm (the fuse pass turns one with alpha 1 "
                       "and no transA into a FusedMatMul, which has a vector GEMM)")
    s = kb.choose([vec, *matmul_candidates(kb.target, node.inputs[0], node.inputs[1],
                                            node.output, trans_a, trans_b)])
    build_matmul(kb, node.inputs[0], node.inputs[1], node.output,
                 trans_a=trans_a, trans_b=trans_b, scale=node.attrs["alpha"],
                 addends=[(c, node.attrs["beta"])] if c else [],
                 form=s.kind)
