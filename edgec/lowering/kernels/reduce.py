"""Kernel builders of the reductions and scans: Reduce*, ArgMax/ArgMin, TopK, CumSum/CumProd
and Einsum.

The input's axes are first merged into alternating runs of kept and reduced dims. When the
innermost run is reduced, each output element is one accumulator over a contiguous inner loop:
    y[k] = post(fold(combine, init, pre(x[k, r...])))
otherwise the kernel walks the input in memory order and accumulates into the output rows,
    y[k] = init;  for r: y[k] = combine(y[k], pre(x[.., r, .., k]));  y[k] = post(y[k])
whose inner loop is unit stride in both buffers (so gcc vectorizes it). That second form needs
the accumulator in the output's dtype; float16 accumulates in float32 (and sqrt/log of integer
sums in double), so those always take the first. Max/Min propagate NaN like numpy; ReduceMean
divides the sum by the count (integer division truncates, as the reference does).
LogSumExp makes two passes per output: m = max, then m' + log(sum exp(x - m')), m' = m (0 if
m is infinite).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node
from ...ir.ops.reduce import cum_axis, einsum_spec, reduce_axes, topk_k
from ...kernel_ir.kernel import Buffer, Expr, call, cast, const, linear_index, select
from ..lower import NodeKernelBuilder, kernel
from .common import lane_steps, named, warp_rows
from .elementwise import abs_, max_nan, min_nan
from .tensor import flat_copy, row_strides


def _identity(v: Expr) -> Expr:
    return v


def _keep(acc: Expr, count: int) -> Expr:
    return acc


@dataclass(frozen=True)
class Reduction:
    init: Callable[[DType], Expr]
    combine: Callable[[Expr, Expr], Expr]
    pre: Callable[[Expr], Expr] = _identity
    post: Callable[[Expr, int], Expr] = _keep
    float_post: bool = False  # post is sqrt/log: integer inputs compute it in double


def _lowest(dt: DType) -> Expr:
    if dt.is_float:
        return const(-math.inf, dt)
    return const(False if dt is DType.BOOL else np.iinfo(dt.np).min, dt)


def _highest(dt: DType) -> Expr:
    if dt.is_float:
        return const(math.inf, dt)
    return const(True if dt is DType.BOOL else np.iinfo(dt.np).max, dt)


def _mean(acc: Expr, count: int) -> Expr:
    return acc / const(count, acc.dtype) if count else acc


def _in_float(fn: str) -> Callable[[Expr, int], Expr]:
    def post(acc: Expr, count: int) -> Expr:
        return call(fn, acc if acc.dtype.is_float else cast(acc, DType.F64))

    return post



_zero = lambda dt: const(0, dt)  # noqa: E731
_add = lambda a, v: a + v  # noqa: E731

REDUCTIONS: dict[str, Reduction] = {
    "ReduceSum": Reduction(_zero, _add),
    "ReduceMean": Reduction(_zero, _add, post=_mean),
    "ReduceProd": Reduction(lambda dt: const(1, dt), lambda a, v: a * v),
    "ReduceMax": Reduction(_lowest, max_nan),
    "ReduceMin": Reduction(_highest, min_nan),
    "ReduceL1": Reduction(_zero, _add, pre=abs_),
    "ReduceSumSquare": Reduction(_zero, _add, pre=lambda v: v * v),
    "ReduceL2": Reduction(_zero, _add, pre=lambda v: v * v, post=_in_float("sqrt"),
                          float_post=True),
    "ReduceLogSum": Reduction(_zero, _add, post=_in_float("log"), float_post=True),
}


def accumulator(dt: DType) -> DType:
    """float16 accumulates in float32 (as the references and onnxruntime do)."""
    return DType.F32 if dt is DType.F16 else dt


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


@dataclass
class _Layout:
    """The input as runs of kept and reduced dims, with their strides."""

    kept: list[tuple[int, int]]
    reduced: list[tuple[int, int]]
    groups: list[tuple[int, bool]]
    strides: list[int]

    @property
    def kept_extents(self) -> list[int]:
        return [n for n, _ in self.kept]


def _layout(shape, axes) -> _Layout:
    groups = runs(shape, set(axes))
    xst = row_strides([n for n, _ in groups])
    kept = [(n, s) for (n, r), s in zip(groups, xst, strict=True) if not r]
    reduced = [(n, s) for (n, r), s in zip(groups, xst, strict=True) if r]
    return _Layout(kept, reduced, groups, xst)


@kernel(*REDUCTIONS, "ReduceLogSumExp")
def reduce_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    axes_v = node.input(1)
    axes = reduce_axes(node.op, len(x.shape), None if axes_v is None else axes_v.const,
                       node.attrs["noop_with_empty_axes"])
    if not axes:
        flat_copy(kb, x, y)
        return
    if y.numel == 0:
        return
    count = math.prod(x.shape[a] for a in axes)
    lay = _layout(x.shape, axes)
    if node.op == "ReduceLogSumExp":
        _log_sum_exp(kb, x, y, lay)
        return
    red = REDUCTIONS[node.op]
    acc_dt = accumulator(x.dtype)

    def load(idx: Expr) -> Expr:
        return red.pre(cast(x[idx], acc_dt))

    if kb.target.gpu is not None and lay.groups and lay.groups[-1][1] and \
            len(lay.reduced) == 1 and count > 1:
        # one contiguous reduced run, innermost: a warp per output, folding its lanes'
        kb.strategy = "reduction, a warp per output"
        with warp_rows(kb, y.numel) as (r, lane, width):
            base = named(kb, "base", r * count)
            acc = kb.local("acc", red.init(acc_dt))
            with lane_steps(kb, lane, width, count) as j:
                kb.assign(acc, red.combine(acc, load(base + j)))
            kb.warp_reduce(acc, red.combine, width)
            with kb.if_(lane.eq(0)):
                kb.store(y, r, red.post(acc, count))
        return

    if not lay.groups or lay.groups[-1][1] or count == 0 or acc_dt != x.dtype or \
            (red.float_post and not x.dtype.is_float):
        # kept loops outside, the accumulator(s) over the reduced loops inside
        inner = lay.reduced[-1][0] if lay.reduced else 1
        per = kb.target.tiles.reduce_lanes  # float accumulators per output
        lanes = per if acc_dt.is_float and inner >= 2 * per else 1
        with _kept_loops(kb, lay, count) as ks:
            accs = [kb.local("acc", red.init(acc_dt)) for _ in range(lanes)]
            outer_red = lay.reduced[:-1] if lanes > 1 else lay.reduced
            with kb.loops([n for n, _ in outer_red], [f"r{i}" for i in range(len(outer_red))]) \
                    as rs:
                src = _offset(list(ks) + list(rs), lay.kept + outer_red)
                if lanes == 1:
                    kb.assign(accs[0], red.combine(accs[0], load(src)))
                else:
                    _lanes(kb, red, accs, load, src, inner)
            kb.store(y, linear_index(ks, lay.kept_extents),
                     red.post(_tree(kb, red, accs), count))
        return
    # memory order, accumulating into the output rows
    with kb.loop(y.numel) as i:
        kb.store(y, i, red.init(acc_dt))
    names = [f"i{i}" for i in range(len(lay.groups))]
    with kb.loops([n for n, _ in lay.groups], names) as vs:
        src = _offset(vs, [(n, s) for (n, _), s in zip(lay.groups, lay.strides, strict=True)])
        dst = linear_index([v for v, (_, r) in zip(vs, lay.groups, strict=True) if not r],
                           lay.kept_extents)
        kb.store(y, dst, red.combine(y[dst], load(src)))
    if red.post is not _keep:
        with kb.loop(y.numel) as i:
            kb.store(y, i, red.post(y[i], count))


@contextmanager
def _kept_loops(kb: NodeKernelBuilder, lay: _Layout, count: int):
    """The loops over the kept dims, the outermost on the thread pool when the reduction is
    large (KernelBuilder.rows; `count`: the elements reduced into each output); yields
    their variables."""
    ext = lay.kept_extents
    if not ext:
        yield []
        return
    with kb.rows(ext[0], count * math.prod(ext[1:]), "k0") as k0, \
            kb.loops(ext[1:], [f"k{i}" for i in range(1, len(ext))]) as rest:
        yield [k0, *rest]


def _log_sum_exp(kb: NodeKernelBuilder, x: Buffer, y: Buffer, lay: _Layout) -> None:
    """Per output: m = max x, then m' + log(sum exp(x - m')) with m' = 0 where m is infinite
    (all -inf gives log 0 = -inf; a +inf gives +inf), as the reference computes it."""
    dt = x.dtype if x.dtype.is_float else DType.F64
    dt = accumulator(dt)
    names = [f"r{i}" for i in range(len(lay.reduced))]
    with _kept_loops(kb, lay, math.prod(n for n, _ in lay.reduced)) as ks:
        m = kb.local("m", const(-math.inf, dt))
        with kb.loops([n for n, _ in lay.reduced], names) as rs:
            kb.assign(m, max_nan(m, cast(x[_offset(list(ks) + list(rs), lay.kept + lay.reduced)],
                                         dt)))
        kb.assign(m, select(call("isinf", m), const(0, dt), m))
        acc = kb.local("acc", const(0, dt))
        with kb.loops([n for n, _ in lay.reduced], names) as rs:
            v = cast(x[_offset(list(ks) + list(rs), lay.kept + lay.reduced)], dt)
            kb.assign(acc, acc + call("exp", v - m))
        kb.store(y, linear_index(ks, lay.kept_extents), call("log", acc) + m)


def _lanes(kb: NodeKernelBuilder, red: Reduction, accs: list[Expr],
           load: Callable[[Expr], Expr], src: Expr, n: int) -> None:
    """acc[l] = combine(acc[l], x[src + b * L + l]) over blocks b of L lanes, then the tail;
    the L independent chains vectorize (a single float chain cannot be reordered)."""
    lanes = len(accs)
    with kb.loop(n // lanes, "b") as b:
        for lane, acc in enumerate(accs):
            kb.assign(acc, red.combine(acc, load(src + b * lanes + lane)))
    for lane in range(n % lanes):
        acc = accs[lane]
        kb.assign(acc, red.combine(acc, load(src + ((n // lanes) * lanes + lane))))


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


def _axis_split(shape, axis: int) -> tuple[int, int, int, int]:
    """(axis normalized, outer, extent, inner) of `shape` around `axis`."""
    a = axis + len(shape) if axis < 0 else axis
    return a, math.prod(shape[:a]), shape[a], math.prod(shape[a + 1:])


def _beats(largest: bool) -> Callable[[Expr, Expr], Expr]:
    """better(v, best): strictly larger (smaller) where NaN ranks above every number."""

    def better(v: Expr, best: Expr) -> Expr:
        if largest:
            b = v > best
            return b | (call("isnan", v) & ~call("isnan", best)) if v.dtype.is_float else b
        b = v < best
        return b | (call("isnan", best) & ~call("isnan", v)) if v.dtype.is_float else b

    return better


@kernel("ArgMax", "ArgMin")
def argmax_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """The first maximum's (minimum's) index, the last with select_last_index; NaN wins, as
    with numpy's argmax and argmin."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    _, outer, n, inner = _axis_split(x.shape, node.attrs["axis"])
    last = bool(node.attrs["select_last_index"])
    if y.numel == 0:
        return
    nan_wins = node.op == "ArgMax"  # argmax: NaN is "largest"; argmin: NaN is "smallest"
    # serial: split into row tasks, the same loop ran 20% slower at one thread (256 x 1000 on
    # Zen 3; gcc laid out its branches differently) for 20% faster at two
    with kb.loop(outer, "o") as o, kb.loop(inner, "j") as j:
        base = o * (n * inner) + j
        best = kb.local("best", x[base])
        idx = kb.local("idx", const(0))
        with kb.loop(n, "k") as k:
            v = x[base + k * inner]
            cmp = (v > best if nan_wins else v < best)
            if last:
                better = (v >= best if nan_wins else v <= best)
                if x.dtype.is_float:
                    better = better | call("isnan", v)
            else:
                better = cmp
                if x.dtype.is_float:
                    better = better | (call("isnan", v) & ~call("isnan", best))
            kb.assign(idx, select(better, k, idx))
            kb.assign(best, select(better, v, best))
        kb.store(y, o * inner + j, cast(idx, DType.I64))


@kernel("TopK")
def topk_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Per slice, an insertion into the sorted output: an element enters when the list has
    room or it beats the last entry; it goes after every entry not worse than it (so equal
    values keep their input order) and the worse ones shift down. O(n k) at worst, O(n) when
    few elements make the cut."""
    x = kb.bind(node.inputs[0], "x")
    vals = kb.bind(node.outputs[0], "values")
    idx = kb.bind(node.outputs[1], "indices") if len(node.outputs) > 1 else None
    _, outer, n, inner = _axis_split(x.shape, node.attrs["axis"])
    k = topk_k(node.inputs)
    if k == 0 or vals.numel == 0:
        return
    better = _beats(bool(node.attrs["largest"]))
    with kb.loop(outer, "o") as o, kb.loop(inner, "j") as j:
        src, dst = o * (n * inner) + j, o * (k * inner) + j
        cnt = kb.local("cnt", const(0))
        with kb.loop(n, "t") as t:
            v = kb.local("v", x[src + t * inner])
            with kb.if_((cnt < k) | better(v, vals[dst + (k - 1) * inner])):
                pos = kb.local("pos", const(0))
                with kb.loop(k, "q") as q:
                    stays = (q < cnt) & ~better(v, vals[dst + q * inner])
                    kb.assign(pos, pos + select(stays, const(1), const(0)))
                end = kb.local("end", select(cnt < k - 1, cnt, const(k - 1)))
                with kb.loop(end - pos, "s") as s:
                    at = dst + (end - s) * inner
                    kb.store(vals, at, vals[at - inner])
                    if idx is not None:
                        kb.store(idx, at, idx[at - inner])
                kb.store(vals, dst + pos * inner, v)
                if idx is not None:
                    kb.store(idx, dst + pos * inner, cast(t, DType.I64))
                kb.assign(cnt, select(cnt < k, cnt + 1, cnt))


@kernel("CumSum", "CumProd")
def cumulative_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Running sum (product) along the axis. With an inner extent, whole rows at once:
    y[t] = y[t-1] op x[t] (exclusive: op x[t-1]), a unit-stride loop gcc vectorizes; alone,
    one accumulator. float16 keeps a float32 accumulator, so it takes the scalar form."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    _, outer, n, inner = _axis_split(x.shape, cum_axis(node.op, node.inputs))
    if y.numel == 0:
        return
    prod = node.op == "CumProd"
    excl, rev = bool(node.attrs["exclusive"]), bool(node.attrs["reverse"])
    acc_dt = accumulator(x.dtype)
    neutral = const(1 if prod else 0, acc_dt)

    def op(a: Expr, b: Expr) -> Expr:
        return a * b if prod else a + b

    def step(t) -> Expr:  # the t-th position visited
        return (n - 1) - t if rev else t

    if inner == 1 or acc_dt != x.dtype:
        with kb.loop(outer, "o") as o, kb.loop(inner, "j") as j:
            acc = kb.local("acc", neutral)
            with kb.loop(n, "t") as t:
                at = (o * n + step(t)) * inner + j
                if excl:
                    kb.store(y, at, acc)
                    kb.assign(acc, op(acc, cast(x[at], acc_dt)))
                else:
                    kb.assign(acc, op(acc, cast(x[at], acc_dt)))
                    kb.store(y, at, acc)
        return
    with kb.loop(outer, "o") as o:
        first = (o * n + step(0)) * inner
        with kb.loop(inner, "j") as j:
            kb.store(y, first + j, neutral if excl else x[first + j])
        with kb.loop(n - 1, "t") as t:
            at, prev = (o * n + step(t + 1)) * inner, (o * n + step(t)) * inner
            with kb.loop(inner, "j") as j:
                kb.store(y, at + j, op(y[prev + j], x[(prev if excl else at) + j]))


@kernel("Einsum")
def einsum_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """A loop nest: the output's indices outside, the summed ones inside, one accumulator:
    y[out...] = sum over summed... of prod_k x_k[its indices]. When the innermost summed
    index strides through an operand but the innermost output index does not (ij,jk->ik),
    that output index goes innermost instead and the sum accumulates in y, row by row, so
    the inner loop is unit stride. Either way each output sums its terms in the same order.
    A repeated index in one operand reads its diagonal; a broadcast ellipsis dim, index 0."""
    xs = [kb.bind(v, f"x{k}") for k, v in enumerate(node.inputs)]
    y = kb.bind(node.output, "y")
    spec = einsum_spec(node.attrs["equation"], [b.shape for b in xs])
    if y.numel == 0:
        return
    acc_dt = accumulator(y.dtype)
    ext = {c: spec.sizes[c] for c in spec.output + spec.summed}
    name = {c: f"i{c}" if c.isalpha() else f"e{c}" for c in ext}

    def term(env: dict[str, Expr]) -> Expr:
        t: Expr | None = None
        for b, letters in zip(xs, spec.inputs, strict=True):
            v = cast(b.at(*[env[c] for c in letters]), acc_dt)
            t = v if t is None else t * v
        return t

    def contiguous(c: str) -> bool:  # unit (or no) stride in every operand
        return all(c not in t or (t[-1] == c and t.count(c) == 1) for t in spec.inputs)

    out_ext = [ext[c] for c in spec.output]
    if spec.summed and spec.output and acc_dt == y.dtype and contiguous(spec.output[-1]) \
            and not contiguous(spec.summed[-1]):
        with kb.loop(y.numel) as i:
            kb.store(y, i, const(0, y.dtype))
        outer, last = spec.output[:-1], spec.output[-1]
        with kb.loops([ext[c] for c in outer], [name[c] for c in outer]) as ov, \
                kb.loops([ext[c] for c in spec.summed], [name[c] for c in spec.summed]) as sv, \
                kb.loop(ext[last], name[last]) as lv:
            env = dict(zip(outer + spec.summed + last, [*ov, *sv, lv], strict=True))
            at = linear_index([env[c] for c in spec.output], out_ext)
            kb.store(y, at, y[at] + term(env))
        return
    with kb.loops(out_ext, [name[c] for c in spec.output]) as ov:
        acc = kb.local("acc", const(0, acc_dt))
        with kb.loops([ext[c] for c in spec.summed], [name[c] for c in spec.summed]) as sv:
            kb.assign(acc, acc + term(dict(zip(spec.output + spec.summed, [*ov, *sv],
                                               strict=True))))
        kb.store(y, linear_index(ov, out_ext), acc)
