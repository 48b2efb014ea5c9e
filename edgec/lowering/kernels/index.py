"""Kernel builders of the ops driven by index tensors: GatherElements, ScatterElements,
GatherND, ScatterND, TensorScatter and OneHot. Indices are read at run time: negative ones
wrap, the rest are clamped into range (onnxruntime rejects out-of-range indices with an error;
a kernel cannot fail, and clamping keeps every access inside its buffer); scatters copy the
data, then apply the updates in order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ir.graph import Node
from ...ir.ops.tensor import (
    norm_axis,
)
from ...kernel_ir.kernel import INDEX, Buffer, Expr, cast, const, select
from ..lower import NodeKernelBuilder, kernel
from .elementwise import max_nan, min_nan
from .tensor import flat_copy, row_strides


def _in_range(kb: NodeKernelBuilder, raw: Expr, n: int) -> Expr:
    """An index read from a tensor, negative counted from the end, clamped into [0, n)."""
    j = kb.local("j", cast(raw, INDEX))
    kb.assign(j, select(j < 0, j + n, j))
    kb.assign(j, select(j < 0, 0, select(j >= n, n - 1, j)))
    return j


@kernel("GatherElements", "ScatterElements")
def elements_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Walks the indices: y[.., idx[c], ..] (op)= updates[c] (scatter, after copying data) or
    y[c] = data[.., idx[c], ..] (gather), the axis coordinate replaced by the index."""
    data, idx = kb.bind(node.inputs[0], "data"), kb.bind(node.inputs[1], "idx")
    scatter = node.op == "ScatterElements"
    upd = kb.bind(node.inputs[2], "updates") if scatter else None
    y = kb.bind(node.output, "y")
    a = norm_axis(node.op, node.attrs["axis"], len(data.shape))
    if scatter:
        flat_copy(kb, data, y)
    if idx.numel == 0:
        return
    with kb.loops(idx.shape, [f"i{d}" for d in range(len(idx.shape))]) as vs:
        coords = list(vs)
        coords[a] = _in_range(kb, idx.at(*vs), data.shape[a])
        at = data.offset(*coords)
        if scatter:
            kb.store(y, at, _combine(node.attrs["reduction"], y[at], upd.at(*vs)))
        else:
            kb.store(y, idx.offset(*vs), data[at])


def _combine(reduction: str, old: Expr, new: Expr) -> Expr:
    if reduction == "add":
        return old + new
    if reduction == "mul":
        return old * new
    if reduction == "max":
        return max_nan(old, new)
    if reduction == "min":
        return min_nan(old, new)
    return new


def _tuple_offset(kb: NodeKernelBuilder, idx: Buffer, row: Expr, dims: Sequence[int]) -> Expr:
    """The row-major offset in `dims` of the index tuple idx[row, :]."""
    off: Expr = const(0)
    for t, (n, s) in enumerate(zip(dims, row_strides(dims), strict=True)):
        off = off + _in_range(kb, idx[row * len(dims) + t], n) * s
    return off


@kernel("GatherND")
def gather_nd_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Per batch b and index tuple i, copies the slice data[b, idx[b, i, :], ...]."""
    data, idx = kb.bind(node.inputs[0], "data"), kb.bind(node.inputs[1], "idx")
    y = kb.bind(node.output, "y")
    b = node.attrs["batch_dims"]
    last = idx.shape[-1]
    batch = math.prod(data.shape[:b])
    tuples = math.prod(idx.shape[b:-1])
    dims = data.shape[b:b + last]
    inner = math.prod(data.shape[b + last:])
    if y.numel == 0:
        return
    with kb.loop(batch, "b") as bb, kb.loop(tuples, "t") as t:
        row = bb * tuples + t
        src = kb.local("src", (bb * math.prod(dims) + _tuple_offset(kb, idx, row, dims)) * inner)
        with kb.loop(inner, "i") as i:
            kb.store(y, row * inner + i, data[src + i])


@kernel("ScatterND")
def scatter_nd_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """y = data; then in order, y[idx[i, :], ...] (op)= updates[i, ...] (whole slices)."""
    data, idx = kb.bind(node.inputs[0], "data"), kb.bind(node.inputs[1], "idx")
    upd, y = kb.bind(node.inputs[2], "updates"), kb.bind(node.output, "y")
    last = idx.shape[-1]
    dims = data.shape[:last]
    inner = math.prod(data.shape[last:])
    flat_copy(kb, data, y)
    tuples = math.prod(idx.shape[:-1])
    if tuples * inner == 0:
        return
    with kb.loop(tuples, "t") as t:
        dst = kb.local("dst", _tuple_offset(kb, idx, t, dims) * inner)
        with kb.loop(inner, "i") as i:
            kb.store(y, dst + i, _combine(node.attrs["reduction"], y[dst + i], upd[t * inner + i]))


@kernel("TensorScatter")
def tensor_scatter_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """y = past_cache; per batch b the update's steps go to rows w[b] + s of the axis (modulo
    its size in circular mode; clamped into range in linear mode, where onnxruntime fails)."""
    cache, upd = kb.bind(node.inputs[0], "cache"), kb.bind(node.inputs[1], "update")
    w = kb.bind(node.inputs[2], "write_idx") if node.input(2) is not None else None
    y = kb.bind(node.output, "y")
    a = norm_axis("TensorScatter", node.attrs["axis"], len(cache.shape))
    batch, mid = cache.shape[0], math.prod(cache.shape[1:a])
    n, steps, inner = cache.shape[a], upd.shape[a], math.prod(cache.shape[a + 1:])
    flat_copy(kb, cache, y)
    if batch * mid * steps * inner == 0:
        return
    with kb.loop(batch, "b") as b, kb.loop(mid, "m") as m, kb.loop(steps, "s") as s:
        start: Expr = const(0) if w is None else cast(w[b], INDEX)
        p = kb.local("p", start + s)
        if node.attrs["mode"] == "circular":
            kb.assign(p, (p % n + n) % n)
        else:
            kb.assign(p, select(p < 0, 0, select(p >= n, n - 1, p)))
        with kb.loop(inner, "i") as i:
            kb.store(y, ((b * mid + m) * n + p) * inner + i,
                     upd[((b * mid + m) * steps + s) * inner + i])


@kernel("OneHot")
def one_hot_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """y[.., d, ..] = on if d == idx (negative idx + depth) else off, d on the new axis."""
    idx, y = kb.bind(node.inputs[0], "idx"), kb.bind(node.output, "y")
    values = operand_pair(kb, node.inputs[2])
    a = norm_axis("OneHot", node.attrs["axis"], len(idx.shape) + 1)
    depth = y.shape[a]
    outer, inner = math.prod(idx.shape[:a]), math.prod(idx.shape[a:])
    if y.numel == 0:
        return
    with kb.loop(outer, "o") as o, kb.loop(inner, "i") as i:
        j = kb.local("j", cast(idx[o * inner + i], INDEX))
        kb.assign(j, select(j < 0, j + depth, j))
        with kb.loop(depth, "d") as d:
            kb.store(y, (o * depth + d) * inner + i, select(d.eq(j), values[1], values[0]))


def operand_pair(kb: NodeKernelBuilder, v) -> list[Expr]:
    """The two elements of a 2-element input: literals when constant, else loads."""
    if v.is_const:
        return [const(e.item(), v.dtype) for e in v.const.reshape(-1)]
    buf = kb.bind(v, "values")
    return [buf[0], buf[1]]
