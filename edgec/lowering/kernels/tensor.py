"""Kernel builders of the tensor ops: views, data movement, gathers, fills and casts.

Most data movement is one strided copy: the output is walked in row-major order over dims
(extent, input stride) and out[linear] = x[base + sum(i_d * stride_d)]. Transpose, Slice,
Expand (stride 0) and Tile (an extra stride-0 dim per axis) are all that copy with different
dims; `coalesce_strided` merges dims that are contiguous in both buffers, so the innermost
loop runs over the longest unit-stride run and gcc vectorizes it. Views (Reshape, Flatten,
Squeeze, Unsqueeze, Identity, Dropout) are a flat copy, which the memory planner removes when
it can alias the output to the input. DepthToSpace and SpaceToDepth are strided copies of a
6-D view. Selections with a compile-time count (Compress) place slices by a running count.
Gathers and scatters by index tensors: index.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ir import onnx_dtypes
from ...ir.dtypes import DType
from ...ir.graph import Node
from ...ir.ops.tensor import (
    col2im_geometry,
    compress_selection,
    depth_space_view,
    norm_axis,
    pad_widths,
    slice_ranges,
    split_sizes,
)
from ...ir.registry import get_op
from ...kernel_ir.kernel import (
    INDEX,
    Buffer,
    Expr,
    cast,
    const,
    convert,
    linear_index,
    minimum,
    select,
)
from ..lower import NodeKernelBuilder, kernel, operand, scalar
from .common import independent_loops


def row_strides(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of `shape`."""
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return out[::-1]


def coalesce_strided(dims: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Drop extent-1 dims and merge (n1, s1), (n2, s2) when s1 == n2 * s2: walking the pair
    in row-major order then reads the input at one stride, s2, over n1 * n2 elements."""
    out: list[tuple[int, int]] = []
    for n, s in dims:
        if n == 1:
            continue
        if out and out[-1][1] == n * s:
            out[-1] = (out[-1][0] * n, s)
        else:
            out.append((n, s))
    return out


def strided_copy(kb: NodeKernelBuilder, x: Buffer, y: Buffer,
                 dims: Sequence[tuple[int, int]], base: int = 0) -> None:
    """y[row-major over dims] = x[base + sum(i_d * stride_d)]; dims are (extent, stride)."""
    if any(n == 0 for n, _ in dims):
        return
    dims = coalesce_strided(dims)
    ext = [n for n, _ in dims]
    if kb.gpu_rows:  # a GPU thread an element
        with kb.rows(math.prod(ext), 1, "e") as e:
            vs = [e // st % n for st, n in zip(row_strides(ext), ext, strict=True)]
            kb.store(y, e, x[_offset(base, vs, dims)])
        return
    tiles = _transpose_tiles(dims, kb.target.tiles.transpose_tile_min)
    if tiles is None:
        names = ["i"] if len(dims) == 1 else [f"i{k}" for k in range(len(dims))]
        with kb.loops(ext, names) as vs:
            kb.store(y, linear_index(vs, ext), x[_offset(base, vs, dims)])
        return
    # a transpose: walk T x T tiles of the two swapped dims (j: unit stride in x, k: unit
    # stride in y) so both buffers are read and written a cache line at a time; edge tiles
    # (a dim T does not divide: 6625 characters) hold what is left
    j, k, tj, tk = tiles
    rest = [d for d in range(len(dims)) if d not in (j, k)]
    nj, nk = -(-ext[j] // tj), -(-ext[k] // tk)
    # a 2-D transpose of 16K elements or more (a batched sparse matrix product's operands,
    # sparsify.py) goes to the thread pool by rows of tiles, along the dim with more of them
    big = math.prod(ext) >= kb.target.tiles.transpose_parallel_min
    kind = "parallel" if not rest and big else "serial"
    outer_j = nj >= nk or kind == "serial"
    with kb.loops([ext[d] for d in rest], [f"i{d}" for d in rest]) as vr, \
            kb.loop(nj if outer_j else nk, "ta", kind=kind) as ba, \
            kb.loop(nk if outer_j else nj, "tb") as bb:
        bj, bk = (ba, bb) if outer_j else (bb, ba)
        cu = minimum(ext[k] - bk * tk, tk) if ext[k] % tk else tk
        cv = minimum(ext[j] - bj * tj, tj) if ext[j] % tj else tj
        with kb.loop(cu, "u") as u, kb.loop(cv, "v") as v:
            vs: list[Expr] = [const(0)] * len(dims)
            for d, var_ in zip(rest, vr, strict=True):
                vs[d] = var_
            vs[j], vs[k] = bj * tj + v, bk * tk + u
            kb.store(y, linear_index(vs, ext), x[_offset(base, vs, dims)])


def _transpose_tiles(dims: Sequence[tuple[int, int]],
                     min_elements: int) -> tuple[int, int, int, int] | None:
    """(j, k, Tj, Tk) when the innermost output dim k is strided in x and an outer dim j is
    x's unit-stride dim, both of 4 or more and together of `min_elements` or more (the
    target's Tiles.transpose_tile_min): tiles of up to 16 (the largest of 16, 8, 4 that
    divides the dim, else 16 with an edge tile); else None."""
    if len(dims) < 2 or dims[-1][1] == 1:
        return None
    k = len(dims) - 1
    j = next((d for d, (_, s) in enumerate(dims) if s == 1), None)
    if j is None or dims[j][0] * dims[k][0] < min_elements or \
            min(dims[j][0], dims[k][0]) < 4:
        return None
    tj, tk = (next((t for t in (16, 8, 4) if dims[d][0] % t == 0), 16) for d in (j, k))
    return j, k, tj, tk


def _offset(base: int, vs: Sequence[Expr], dims: Sequence[tuple[int, int]]) -> Expr:
    src: Expr = const(base)
    for v, (_, s) in zip(vs, dims, strict=True):
        src = src + v * s
    return src


def flat_copy(kb: NodeKernelBuilder, x: Buffer, y: Buffer) -> None:
    with kb.loop(y.numel) as i:
        kb.store(y, i, x[i])


def _fill(kb: NodeKernelBuilder, y: Buffer, start, stop, value: Expr, row: Expr | int = 0):
    """y[row + j] = value for start <= j < stop (no loop when the range is empty)."""
    n = stop - start
    if isinstance(n, int) and n <= 0:
        return
    with kb.loop(n, "j") as j:
        kb.store(y, row + start + j, value)


# -- views and copies -----------------------------------------------------------------------

@kernel("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
def view_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    flat_copy(kb, kb.bind(node.inputs[0], "x"), kb.bind(node.outputs[0], "y"))


@kernel("Dropout")
def dropout_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Inference Dropout: the identity, and the optional mask output all true."""
    plan = node.graph.record.memory_plan if node.graph is not None else None
    if plan is None or node.outputs[0].name not in plan.aliases:
        # (when the planner made the output a view of the input there is nothing to copy,
        # and passing one buffer as both restrict parameters would be undefined behaviour)
        flat_copy(kb, kb.bind(node.inputs[0], "x"), kb.bind(node.outputs[0], "y"))
    if len(node.outputs) > 1 and node.outputs[1] is not None:
        mask = kb.bind(node.outputs[1], "mask")
        with kb.loop(mask.numel) as i:
            kb.store(mask, i, const(True, DType.BOOL))


@kernel("Transpose")
def transpose_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    rank = len(x.shape)
    perm = node.attrs["perm"]
    perm = list(range(rank))[::-1] if perm is None else [norm_axis("Transpose", a, rank)
                                                         for a in perm]
    st = row_strides(x.shape)
    strided_copy(kb, x, y, [(x.shape[a], st[a]) for a in perm])


@kernel("Slice")
def slice_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    args = [None if node.input(i) is None else [int(v) for v in node.input(i).const.reshape(-1)]
            for i in range(1, 5)]
    ranges = slice_ranges("Slice", x.shape, *args)
    st = row_strides(x.shape)
    base, dims = 0, []
    for sl, d, s, n in zip(ranges, x.shape, st, y.shape, strict=True):
        start, _, step = sl.indices(d)
        base += start * s
        dims.append((n, step * s))
    strided_copy(kb, x, y, dims, base)


@kernel("Expand")
def expand_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    pad = len(y.shape) - len(x.shape)
    xs = (1,) * pad + x.shape
    st = row_strides(xs)
    dims = [(n, 0 if d == 1 else s) for n, d, s in zip(y.shape, xs, st, strict=True)]
    strided_copy(kb, x, y, dims)


@kernel("Tile")
def tile_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """out viewed as [r_0, d_0, r_1, d_1, ...]: the repeat dims have input stride 0."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    reps = [int(r) for r in node.inputs[1].const.reshape(-1)]
    dims = []
    for r, d, s in zip(reps, x.shape, row_strides(x.shape), strict=True):
        dims += [(r, 0), (d, s)]
    strided_copy(kb, x, y, dims)


@kernel("Concat")
def concat_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Each input is a block of rows: y[o, off_k : off_k + chunk_k] = x_k[o, :]."""
    y = kb.bind(node.output, "y")
    a = norm_axis("Concat", node.attrs["axis"], len(y.shape))
    outer, inner = math.prod(y.shape[:a]), math.prod(y.shape[a + 1:])
    row, off = y.shape[a] * inner, 0
    for k, v in enumerate(node.inputs):
        x = kb.bind(v, f"x{k}")
        chunk = x.shape[a] * inner
        if chunk:
            _rows(kb, src=x, src_row=chunk, src_off=0, dst=y, dst_row=row, dst_off=off,
                  outer=outer, width=chunk)
        off += chunk


@kernel("Split")
def split_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    x = kb.bind(node.inputs[0], "x")
    a = norm_axis("Split", node.attrs["axis"], len(x.shape))
    sizes = split_sizes(node.inputs, node.attrs["axis"], node.attrs["num_outputs"])
    outer, inner = math.prod(x.shape[:a]), math.prod(x.shape[a + 1:])
    row, off = x.shape[a] * inner, 0
    for k, (v, size) in enumerate(zip(node.outputs, sizes, strict=True)):
        y = kb.bind(v, f"y{k}")
        chunk = size * inner
        if chunk:
            _rows(kb, src=x, src_row=row, src_off=off, dst=y, dst_row=chunk, dst_off=0,
                  outer=outer, width=chunk)
        off += chunk


def _rows(kb: NodeKernelBuilder, *, src: Buffer, src_row: int, src_off: int, dst: Buffer,
          dst_row: int, dst_off: int, outer: int, width: int) -> None:
    """dst[o * dst_row + dst_off + j] = src[o * src_row + src_off + j] for j < width."""
    if outer == 0:
        return
    with independent_loops(kb, [outer, width], ["o", "j"], 1) as (o, j):
        kb.store(dst, o * dst_row + dst_off + j, src[o * src_row + src_off + j])


# -- gathers, pads --------------------------------------------------------------------------

@kernel("Gather")
def gather_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """y[o, k, j] = x[o, idx[k], j]; idx < 0 counts from the end; others clamp into range."""
    x, idx, y = (kb.bind(node.inputs[0], "x"), kb.bind(node.inputs[1], "idx"),
                 kb.bind(node.output, "y"))
    a = norm_axis("Gather", node.attrs["axis"], len(x.shape))
    outer, n, inner = math.prod(x.shape[:a]), x.shape[a], math.prod(x.shape[a + 1:])
    m = idx.numel
    if outer * m * inner == 0:
        return
    with independent_loops(kb, [outer, m], ["o", "k"], inner) as (o, k):
        j0 = kb.local("j", cast(idx[k], INDEX))
        kb.assign(j0, select(j0 < 0, j0 + n, j0))
        kb.assign(j0, select(j0 < 0, 0, select(j0 >= n, n - 1, j0)))
        with kb.loop(inner, "i") as i:
            kb.store(y, (o * m + k) * inner + i, x[(o * n + j0) * inner + i])


def _map_coord(kb: NodeKernelBuilder, c: Expr, n: int, mode: str) -> Expr:
    """The in-range coordinate [0, n) that `mode` reads for coordinate c (any integer)."""
    if c.is_const:
        return const(_map_int(c.value, n, mode))
    if mode == "edge":
        return kb.local("c", select(c < 0, 0, select(c > n - 1, n - 1, c)))
    if mode == "wrap":
        return kb.local("c", (c % n + n) % n)
    if n == 1:  # reflect on one element repeats it
        return const(0)
    p = 2 * (n - 1)  # reflection is periodic with period 2(n-1)
    m = kb.local("c", c)
    kb.assign(m, select(m < 0, -m, m) % p)
    kb.assign(m, select(m >= n, p - m, m))
    return m


def _map_int(c: int, n: int, mode: str) -> int:
    if mode == "edge":
        return min(max(c, 0), n - 1)
    if mode == "wrap":
        return c % n
    if n == 1:
        return 0
    m = abs(c) % (2 * (n - 1))
    return 2 * (n - 1) - m if m >= n else m


@kernel("Pad")
def pad_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Negative pads crop first, then each axis pads by its mode (see `_map_coord`).

    Adjacent axes without padding merge; the innermost axis is written as three runs (left
    pad, a contiguous copy, right pad), outer axes map their coordinate once per row.
    """
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    mode = node.attrs["mode"]
    axes = node.input(3)
    width = pad_widths("Pad", len(x.shape), [int(p) for p in node.inputs[1].const.reshape(-1)],
                       None if axes is None else [int(a) for a in axes.const.reshape(-1)])
    cv: Expr = const(0, x.dtype)
    if mode == "constant" and node.input(2) is not None:
        c = operand(kb, node.inputs[2], "cv")
        cv = c if isinstance(c, Expr) else c[0]
    # per axis: (input extent, crop offset, cropped extent, left pad, right pad)
    axs = []
    for d, (b, e) in zip(x.shape, width, strict=True):
        lo = max(-b, 0)
        axs.append([d, lo, d - lo - max(-e, 0), max(b, 0), max(e, 0)])
    merged: list[list[int]] = []
    for ax in axs:
        plain = ax[1] == 0 and ax[2] == ax[0] and ax[3] == ax[4] == 0
        prev = merged[-1] if merged else None
        prev_plain = prev is not None and prev[1] == 0 and prev[2] == prev[0] and \
            prev[3] == prev[4] == 0
        if prev is not None and plain and (prev_plain or mode == "constant"):
            # whole rows of the padded axis: scale its pads and crop by the merged extent
            merged[-1] = [p * ax[0] for p in prev]
        else:
            merged.append(ax)
    if y.numel == 0:
        return
    xs = row_strides([m[0] for m in merged])
    ys = row_strides([m[2] + m[3] + m[4] for m in merged])
    outer, (_, lo, n, b, e) = merged[:-1], merged[-1]
    with kb.loops([m[2] + m[3] + m[4] for m in outer], [f"o{k}" for k in range(len(outer))]) \
            as vs:
        src: Expr = const(lo)
        dst: Expr = const(0)
        valid: Expr = const(True, DType.BOOL)
        for v, (_, clo, cn, cb, ce), sx, sy in zip(vs, outer, xs[:-1], ys[:-1], strict=True):
            dst = dst + v * sy
            c = v - cb
            if cb or ce:
                if mode == "constant":
                    valid = valid & ((c >= 0) & (c < cn))
                else:
                    c = _map_coord(kb, c, cn, mode)
            src = src + (c + clo) * sx
        row_len = n + b + e

        def row():
            if mode == "constant":
                _fill(kb, y, 0, b, cv, dst)
            else:
                with kb.loop(b, "j") as j:
                    kb.store(y, dst + j, x[src + _map_coord(kb, j - b, n, mode)])
            with kb.loop(n, "j") as j:
                kb.store(y, dst + b + j, x[src + j])
            if mode == "constant":
                _fill(kb, y, b + n, row_len, cv, dst)
            else:
                with kb.loop(e, "j") as j:
                    kb.store(y, dst + b + n + j, x[src + _map_coord(kb, n + j, n, mode)])

        if valid.is_const:
            row()
        else:
            with kb.if_(valid):
                row()
            with kb.else_():
                _fill(kb, y, 0, row_len, cv, dst)


# -- shapes, fills, ranges, casts -----------------------------------------------------------

@kernel("Shape")
def shape_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Every shape is static: the kernel writes constants."""
    y = kb.bind(node.output, "y")
    values = get_op("Shape").reference(_Shaped(node.inputs[0].shape), **node.attrs)
    for k, v in enumerate(values.reshape(-1)):
        kb.store(y, k, const(int(v), DType.I64))


class _Shaped:
    """Just enough of an array (ndim, shape) for the Shape reference."""

    def __init__(self, shape):
        self.shape, self.ndim = tuple(shape), len(shape)


@kernel("ConstantOfShape")
def constant_of_shape_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    y = kb.bind(node.output, "y")
    value = node.attrs["value"]
    v = 0 if value is None else value.reshape(-1)[0].item()
    with kb.loop(y.numel) as i:
        kb.store(y, i, const(v, y.dtype))


@kernel("Range")
def range_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """y[i] = start + i * delta, in the output dtype (as the reference computes it)."""
    y = kb.bind(node.output, "y")
    start, delta = (node.inputs[k].const.reshape(()).item() for k in (0, 2))
    with kb.loop(y.numel) as i:
        kb.store(y, i, const(start, y.dtype) + cast(i, y.dtype) * const(delta, y.dtype))


@scalar("Cast")
def cast_(x: Expr, to: int, saturate: int = 1) -> Expr:
    """edgec's value conversion (`ir.dtypes.convert`): floats truncate toward zero and saturate
    to an integer type's range (NaN to 0), integers keep their low bits, nonzero is true."""
    dst = onnx_dtypes.from_onnx(to)
    if dst is DType.BOOL and dst != x.dtype:
        return x.ne(const(0, x.dtype))
    return convert(x, dst)


# -- rearrangements -------------------------------------------------------------------------

@kernel("DepthToSpace", "SpaceToDepth")
def depth_space_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """A transpose of the input's 6-D view: one strided copy."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    view, perm, _ = depth_space_view(node.op, x.shape, node.attrs["blocksize"],
                                     node.attrs.get("mode", "DCR"))
    st = row_strides(view)
    strided_copy(kb, x, y, [(view[p], st[p]) for p in perm])


@kernel("ReverseSequence")
def reverse_sequence_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """y[t, b] = x[len_b - 1 - t, b] for t < len_b (len clamped into [0, T]), else x[t, b]."""
    x, lens = kb.bind(node.inputs[0], "x"), kb.bind(node.inputs[1], "lens")
    y = kb.bind(node.output, "y")
    ta, ba = node.attrs["time_axis"], node.attrs["batch_axis"]
    t_n, b_n = x.shape[ta], x.shape[ba]
    inner = math.prod(x.shape[2:])
    if y.numel == 0:
        return
    st_t, st_b = (b_n * inner, inner) if ta == 0 else (inner, t_n * inner)
    with kb.loop(b_n, "b") as b:
        n = kb.local("n", cast(lens[b], INDEX))
        kb.assign(n, select(n < 0, 0, select(n > t_n, t_n, n)))
        with kb.loop(t_n, "t") as t:
            src = kb.local("src", select(t < n, n - 1 - t, t))
            with kb.loop(inner, "i") as i:
                kb.store(y, t * st_t + b * st_b + i, x[src * st_t + b * st_b + i])


@kernel("Trilu")
def trilu_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Keeps x[.., i, j] where j - i >= k (upper) or <= k (lower); k may be read at run time."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    kv = node.input(1)
    k: Expr = const(0) if kv is None else (
        const(int(kv.const.reshape(())), INDEX) if kv.is_const else
        cast(kb.bind(kv, "k")[0], INDEX))
    rows, cols = x.shape[-2:]
    batch = math.prod(x.shape[:-2])
    if y.numel == 0:
        return
    with kb.loop(batch, "b") as b, kb.loop(rows, "r") as r, kb.loop(cols, "c") as c:
        at = (b * rows + r) * cols + c
        keep = (c - r >= k) if node.attrs["upper"] else (c - r <= k)
        kb.store(y, at, select(keep, x[at], const(0, x.dtype)))


@kernel("EyeLike")
def eye_like_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    y = kb.bind(node.output, "y")
    rows, cols = y.shape
    k = node.attrs["k"]
    one, zero = const(1, y.dtype), const(0, y.dtype)
    with kb.loop(rows, "r") as r, kb.loop(cols, "c") as c:
        kb.store(y, r * cols + c, select((c - r).eq(k), one, zero))


# -- selections -----------------------------------------------------------------------------

@kernel("Compress")
def compress_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Copies the slices whose condition is true, in order: a running count places them."""
    x, cond = kb.bind(node.inputs[0], "x"), kb.bind(node.inputs[1], "cond")
    y = kb.bind(node.output, "y")
    a, _ = compress_selection(node.inputs, node.attrs["axis"])
    n = x.numel if a is None else x.shape[a]
    outer = 1 if a is None else math.prod(x.shape[:a])
    inner = 1 if a is None else math.prod(x.shape[a + 1:])
    picked = y.numel // max(outer * inner, 1)
    if y.numel == 0:
        return
    with kb.loop(outer, "o") as o:
        cnt = kb.local("cnt", const(0))
        with kb.loop(min(n, cond.numel), "p") as p:
            with kb.if_(cond[p]):
                with kb.loop(inner, "i") as i:
                    kb.store(y, (o * picked + cnt) * inner + i, x[(o * n + p) * inner + i])
                kb.assign(cnt, cnt + 1)


@kernel("NonZero")
def nonzero_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Row d of y lists coordinate d of each nonzero, in row-major order (a running count)."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    nnz = y.shape[1]
    if nnz == 0:
        return
    cnt = kb.local("cnt", const(0))
    with kb.loops(x.shape, [f"i{d}" for d in range(len(x.shape))]) as vs:
        with kb.if_(x.at(*vs).ne(const(0, x.dtype))):
            for d, v in enumerate(vs):
                kb.store(y, cnt + d * nnz, cast(v, DType.I64))
            kb.assign(cnt, cnt + 1)


@kernel("Col2Im")
def col2im_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """y = 0; y[n, c, l * s - pad + k * dil] += x[n, c * K + k, l] where that is inside."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")
    geo = col2im_geometry(node.inputs, **node.attrs)
    nd = len(geo.image)
    dil = node.attrs["dilations"] or [1] * nd
    st = node.attrs["strides"] or [1] * nd
    pd = node.attrs["pads"] or [0] * (2 * nd)
    with kb.loop(y.numel) as i:
        kb.store(y, i, const(0, y.dtype))
    planes = x.shape[0] * geo.channels
    if planes * math.prod(geo.block) * math.prod(geo.blocks) == 0:
        return
    img = math.prod(geo.image)
    with kb.loop(planes, "p") as p, \
            kb.loops(geo.block, [f"k{d}" for d in range(nd)]) as ks, \
            kb.loops(geo.blocks, [f"l{d}" for d in range(nd)]) as ls:
        pos = [ls[d] * st[d] - pd[d] + ks[d] * dil[d] for d in range(nd)]
        inside: Expr = const(True, DType.BOOL)
        for d, q in enumerate(pos):
            inside = inside & (q >= 0) & (q < geo.image[d])
        src = (p * math.prod(geo.block) + linear_index(ks, geo.block)) * math.prod(geo.blocks) \
            + linear_index(ls, geo.blocks)
        dst = p * img + linear_index(pos, geo.image)
        with kb.if_(inside):
            kb.store(y, dst, y[dst] + x[src])


@kernel("Unique")
def unique_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    """Unique takes a constant (its output shapes depend on the values): the kernel writes the
    results the reference computes at compile time."""
    results = get_op("Unique").run([node.inputs[0].const], node.attrs)
    for k, (v, arr) in enumerate(zip(node.outputs, results, strict=False)):
        y = kb.bind(v, f"y{k}")
        for i, e in enumerate(arr.reshape(-1)):
            kb.store(y, i, const(e.item(), y.dtype))
