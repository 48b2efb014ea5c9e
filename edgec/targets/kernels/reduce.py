"""Kernel builders of the reductions (ReduceSum/Mean/Max/Min/Prod) and ArgMax.

The input's axes are first merged into alternating runs of kept and reduced dims. When the
innermost run is reduced, each output element is one accumulator over a contiguous inner loop:
    y[k] = finish(fold(combine, init, x[k, r...]))
otherwise the kernel walks the input in memory order and accumulates into the output rows,
    y[k] = init;  for r: y[k] = combine(y[k], x[.., r, .., k]);  y[k] = finish(y[k])
whose inner loop is unit stride in both buffers (so gcc vectorizes it). Max/Min propagate NaN
like numpy; ReduceMean divides the sum by the count (integer division truncates, as the
reference does).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node
from ...ir.ops.reduce import reduce_axes
from ..kernel_ir import Expr, call, cast, const, linear_index, select
from ..lowering import NodeKernelBuilder, kernel
from .elementwise import max_nan, min_nan
from .tensor import flat_copy, row_strides


@dataclass(frozen=True)
class Reduction:
    init: Callable[[DType], Expr]
    combine: Callable[[Expr, Expr], Expr]
    mean: bool = False


def _lowest(dt: DType) -> Expr:
    if dt.is_float:
        return const(-math.inf, dt)
    return const(False if dt is DType.BOOL else np.iinfo(dt.np).min, dt)


def _highest(dt: DType) -> Expr:
    if dt.is_float:
        return const(math.inf, dt)
    return const(True if dt is DType.BOOL else np.iinfo(dt.np).max, dt)


LANES = 8  # float accumulators per output in a reduction over the innermost axis

REDUCTIONS: dict[str, Reduction] = {
    "ReduceSum": Reduction(lambda dt: const(0, dt), lambda a, v: a + v),
    "ReduceMean": Reduction(lambda dt: const(0, dt), lambda a, v: a + v, mean=True),
    "ReduceProd": Reduction(lambda dt: const(1, dt), lambda a, v: a * v),
    "ReduceMax": Reduction(_lowest, max_nan),
    "ReduceMin": Reduction(_highest, min_nan),
}


def runs(shape, axes) -> list[tuple[int, bool]]:
    """(extent, reduced) runs: extent-1 dims dropped, neighbours of one kind merged."""
    out: list[tuple[int, bool]] = []
    for d, n in enumerate(shape):
        if n == 1:
            continue
        red = d in axes
        if out and out[-1][1] == red:
            out[-1] = (out[-1][0] * n, red)
        else:
            out.append((n, red))
    return out


@kernel(*REDUCTIONS)
def reduce_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    axes_v = node.input(1)
    axes = reduce_axes(node.op, len(x.shape), None if axes_v is None else axes_v.const,
                       node.attrs["noop_with_empty_axes"])
    if not axes:
        flat_copy(kb, x, y)
        return
    red = REDUCTIONS[node.op]
    count = math.prod(x.shape[a] for a in axes)
    dt = x.dtype

    def finish(acc: Expr) -> Expr:
        return acc / const(count, dt) if red.mean and count else acc

    if y.numel == 0:
        return
    groups = runs(x.shape, set(axes))
    xst = row_strides([n for n, _ in groups])
    kept = [(n, s) for (n, r), s in zip(groups, xst, strict=True) if not r]
    reduced = [(n, s) for (n, r), s in zip(groups, xst, strict=True) if r]
    kept_ext = [n for n, _ in kept]
    if not groups or groups[-1][1] or count == 0:
        # kept loops outside, the accumulator(s) over the reduced loops inside
        inner = reduced[-1][0] if reduced else 1
        lanes = LANES if dt.is_float and inner >= 2 * LANES else 1
        with kb.loops(kept_ext, [f"k{i}" for i in range(len(kept))]) as ks:
            accs = [kb.local("acc", red.init(dt)) for _ in range(lanes)]
            outer_red = reduced[:-1] if lanes > 1 else reduced
            with kb.loops([n for n, _ in outer_red], [f"r{i}" for i in range(len(outer_red))]) \
                    as rs:
                src = _offset(list(ks) + list(rs), kept + outer_red)
                if lanes == 1:
                    kb.assign(accs[0], red.combine(accs[0], x[src]))
                else:
                    _lanes(kb, red, accs, x, src, inner)
            kb.store(y, linear_index(ks, kept_ext), finish(_tree(kb, red, accs)))
        return
    # memory order, accumulating into the output rows
    with kb.loop(y.numel) as i:
        kb.store(y, i, red.init(dt))
    names = [f"i{i}" for i in range(len(groups))]
    with kb.loops([n for n, _ in groups], names) as vs:
        src = _offset(vs, [(n, s) for (n, _), s in zip(groups, xst, strict=True)])
        dst = linear_index([v for v, (_, r) in zip(vs, groups, strict=True) if not r], kept_ext)
        kb.store(y, dst, red.combine(y[dst], x[src]))
    if red.mean:
        with kb.loop(y.numel) as i:
            kb.store(y, i, finish(y[i]))


def _lanes(kb: NodeKernelBuilder, red: Reduction, accs: list[Expr], x, src: Expr,
           n: int) -> None:
    """acc[l] = combine(acc[l], x[src + b * L + l]) over blocks b of L lanes, then the tail;
    the L independent chains vectorize (a single float chain cannot be reordered)."""
    lanes = len(accs)
    with kb.loop(n // lanes, "b") as b:
        for lane, acc in enumerate(accs):
            kb.assign(acc, red.combine(acc, x[src + b * lanes + lane]))
    for lane in range(n % lanes):
        acc = accs[lane]
        kb.assign(acc, red.combine(acc, x[src + ((n // lanes) * lanes + lane)]))


def _tree(kb: NodeKernelBuilder, red: Reduction, accs: list[Expr]) -> Expr:
    """Combine the lane accumulators pairwise into the first one."""
    step = 1
    while step < len(accs):
        for i in range(0, len(accs) - step, 2 * step):
            kb.assign(accs[i], red.combine(accs[i], accs[i + step]))
        step *= 2
    return accs[0]


def _offset(vs, dims) -> Expr:
    src: Expr = const(0)
    for v, (_, s) in zip(vs, dims, strict=True):
        src = src + v * s
    return src


@kernel("ArgMax")
def argmax_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """The first maximum's index (the last with select_last_index); NaN counts as the
    maximum, as numpy's argmax has it."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    rank = len(x.shape)
    a = node.attrs["axis"] + rank if node.attrs["axis"] < 0 else node.attrs["axis"]
    outer, n, inner = math.prod(x.shape[:a]), x.shape[a], math.prod(x.shape[a + 1:])
    last = bool(node.attrs["select_last_index"])
    if y.numel == 0:
        return
    with kb.loop(outer, "o") as o, kb.loop(inner, "j") as j:
        base = o * (n * inner) + j
        best = kb.local("best", x[base])
        idx = kb.local("idx", const(0))
        with kb.loop(n, "k") as k:
            v = x[base + k * inner]
            if last:
                better = v >= best
                if x.dtype.is_float:
                    better = better | call("isnan", v)
            else:
                better = v > best
                if x.dtype.is_float:
                    better = better | (call("isnan", v) & ~call("isnan", best))
            kb.assign(idx, select(better, k, idx))
            kb.assign(best, select(better, v, best))
        kb.store(y, o * inner + j, cast(idx, DType.I64))



