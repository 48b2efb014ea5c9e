"""Kernel builders of the matrix products without a vector micro-kernel (MatMul, Gemm;
`gemm.py` has the vector GEMM they try first): with B row-major, a row of Y accumulates in
the output itself, y[i, :] += A[i, k] * B[k, :] for k = 0..K-1 (a unit-stride loop gcc
vectorizes, without reassociating any sum), then one pass applies the epilogue to the hot row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...ir.graph import Node, Value
from ...kernel_ir.kernel import (
    const,
)
from ..lower import NodeKernelBuilder, kernel
from .common import (
    Activation,
    Epilogue,
    bind_operand,
    broadcast_strides,
    derived_constant,
    named,
    offset,
    row_major_strides,
)
from .gemm import vector_gemm

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
    if not vector_gemm(kb, node.inputs[0], node.inputs[1], node.output):
        build_matmul(kb, node.inputs[0], node.inputs[1], node.output)


@kernel("Gemm")
def gemm(kb: NodeKernelBuilder, node: Node) -> None:
    c = node.input(2)
    build_matmul(kb, node.inputs[0], node.inputs[1], node.output,
                 trans_a=bool(node.attrs["transA"]), trans_b=bool(node.attrs["transB"]),
                 scale=node.attrs["alpha"], addends=[(c, node.attrs["beta"])] if c else [])
