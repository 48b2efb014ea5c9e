"""A warp's tensor-core multiply-add (`Mma`) as the interpreter runs it, and the fragment
layout it and the CUDA renderer share (PTX ISA, "Matrix Fragments for mma.m16n8k8 / k16 /
k32"): with g = lane / 4 and t = lane % 4, a lane holds four 32-bit words of A, word r
being row g + 8 (r % 2), k from (r / 2) K / 2 + e t (e elements a word), two words of B,
word r column g, k from r K / 2 + e t, and C's elements (g + 8 (r / 2), 2 t + r % 2).

Each lane reads its own words (bounds-checked, and recorded for the race check as the GPU
makes them), the warp meets and pools them (kernel_ir/threads.py), and each lane adds its four
elements of the product to its accumulators: float products exactly (float64 holds them),
summed in float64 and rounded once to float32 (tensor cores sum in an order and precision of
their own: float results agree to a few float32 ulps, not to the bit); integers exactly,
wrapping in int32."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..errors import KernelError
from ..ir.dtypes import DType
from .kernel import Mma


def a_words(lane: int, per: int, k: int) -> list[tuple[int, int]]:
    """(row, first k) of each of a lane's four words of A."""
    g, t = lane >> 2, lane & 3
    return [(g + 8 * (r & 1), (r >> 1) * (k // 2) + per * t) for r in range(4)]


def b_words(lane: int, per: int, k: int) -> list[tuple[int, int]]:
    """(column, first k) of each of a lane's two words of B."""
    g, t = lane >> 2, lane & 3
    return [(g, r * (k // 2) + per * t) for r in range(2)]


def c_elements(lane: int) -> list[tuple[int, int]]:
    """(row, column) of each of a lane's four accumulators."""
    g, t = lane >> 2, lane & 3
    return [(g + 8 * (r >> 1), 2 * t + (r & 1)) for r in range(4)]


def tf32(x: np.ndarray) -> np.ndarray:
    """float32 `x` rounded to TF32 (10 mantissa bits) as PTX's cvt.rna.tf32.f32 does: to
    nearest, ties away from zero; NaN and infinities as they are."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(x), rounded, x)


def compile_mma(s: Mma, compile_expr: Callable, trace: Callable) -> Callable:
    """`s` as the interpreter's statement: a function of a thread's environment. `trace()`
    gives the interpreter's current TRACE (None outside a race check)."""
    acc_at, a_at, b_at = (compile_expr(e) for e in (s.acc_at, s.a_at, s.b_at))
    per, k = s.per_word, s.k
    integer = not s.a.dtype.is_float

    def words(env, buf, at: int, ld: int, spots) -> list[np.ndarray]:
        arr = env["#bufs"][buf.name]
        out = []
        for row, k0 in spots:
            i = at + row * ld + k0
            if i < 0 or i + per > arr.size:
                raise KernelError(f"mma reads {buf.name}[{i}:{i + per}] outside its "
                                  f"{arr.size} elements")
            if trace() is not None:
                trace()(env, buf.name, arr, i, per, False)
            out.append(arr[i:i + per].copy())
        return out

    def operand(x: np.ndarray) -> np.ndarray:
        if integer:
            return x.astype(np.int64)
        return (tf32(x) if s.a.dtype is DType.F32 else x).astype(np.float64)

    def mma(env):
        lane = env.get("#warp")
        if lane is None:
            raise KernelError("mma outside the threads of a block loop (a GPU warp op)")
        if lane.size != 32:
            raise KernelError(f"mma in a warp of {lane.size} threads: a tensor core takes a "
                              "whole warp of 32")
        ai, bi = a_at(env), b_at(env)
        if ai % per or bi % per:
            raise KernelError(f"mma's fragments at {s.a.name}[{ai}], {s.b.name}[{bi}] are "
                              f"not whole 32-bit words (multiples of {per} elements)")
        mine = (ai, bi, words(env, s.a, ai, s.a_ld, a_words(lane.index, per, k)),
                words(env, s.b, bi, s.b_ld, b_words(lane.index, per, k)))
        pooled = lane.gather(mine)
        if any(p[:2] != (ai, bi) for p in pooled):
            raise KernelError(f"mma's operands differ between the lanes of a warp "
                              f"({s.a.name}[{ai}], {s.b.name}[{bi}] in lane {lane.index}): "
                              "a tensor core takes one tile a warp")
        a = np.zeros((16, k), np.float64 if not integer else np.int64)
        b = np.zeros((k, 8), a.dtype)
        for n, (_, _, aw, bw) in enumerate(pooled):
            for (row, k0), w in zip(a_words(n, per, k), aw, strict=True):
                a[row, k0:k0 + per] = operand(w)
            for (col, k0), w in zip(b_words(n, per, k), bw, strict=True):
                b[k0:k0 + per, col] = operand(w)
        product = a @ b
        acc, ci = env["#bufs"][s.acc.name], acc_at(env)
        if ci < 0 or ci + 4 > acc.size:
            raise KernelError(f"mma's accumulators {s.acc.name}[{ci}:{ci + 4}] outside its "
                              f"{acc.size} elements")
        if trace() is not None:
            trace()(env, s.acc.name, acc, ci, 4, True)
        sums = np.array([product[r, c] for r, c in c_elements(lane.index)])
        if integer:
            acc[ci:ci + 4] = ((acc[ci:ci + 4].astype(np.int64) + sums) & 0xFFFFFFFF
                              ).astype(np.uint32).view(np.int32)
        else:
            acc[ci:ci + 4] = (acc[ci:ci + 4].astype(np.float64) + sums).astype(np.float32)

    return mma
