"""Kernel builders of the normalization family (edgec/ir/ops/normalization.py): instance,
group, mean-variance and Lp normalization, LRN, Lp pools and MaxUnpool.

Instance, group and mean-variance normalization share one loop nest: the input's dims split
into kept ones (one set of statistics each) and reduced ones, each walked by its stride, and
per kept index three passes over the reduced elements, in float32 (or the stash type):
    mean = sum(x) / n;  var = sum((x - mean)^2) / n;  y = (x - mean) * inv_std(var) [* s + b]
LRN accumulates the squares of its channel window into the output row itself (a unit-stride
loop over the plane) and then scales it in place; RoiAlign likewise accumulates its samples
into the output, the bilinear taps of a sample computed once for all channels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ...ir.dtypes import DType
from ...ir.graph import Node
from ...ir.onnx_dtypes import from_onnx
from ...ir.ops.normalization import MVN_EPSILON, lrn_window
from ...kernel_ir.kernel import INDEX, Buffer, Expr, call, cast, const, maximum, minimum, select
from ..lower import NodeKernelBuilder, kernel
from .common import named, offset, row_major_strides, window
from .elementwise import max_nan
from .reduce import runs

F32 = DType.F32
Dims = Sequence[tuple[int, int]]  # (extent, element stride) per loop
Affine = Callable[[list[Expr], list[Expr], Expr], Expr]


def _stat_type(dtype: DType) -> DType:
    return F32 if dtype in (DType.F16, F32) else dtype


def standardize(kb: NodeKernelBuilder, x: Buffer, y: Buffer, kept: Dims, reduced: Dims,
                inv_std: Callable[[Expr], Expr], st: DType, affine: Affine | None = None) -> None:
    """y = (x - mean) * inv_std(var) over the `reduced` dims, for each index of the `kept`
    dims; `affine(kept vars, reduced vars, value)` may scale and shift the result."""
    count = math.prod(n for n, _ in reduced)
    kst, rst = [s for _, s in kept], [s for _, s in reduced]
    rext = [n for n, _ in reduced]
    rnames = [f"r{i}" for i in range(len(reduced))]
    if count == 0:
        return
    with kb.loops([n for n, _ in kept], [f"k{i}" for i in range(len(kept))]) as ks:
        base = named(kb, "base", offset(ks, kst))
        total = kb.local("sum", const(0, st))
        with kb.loops(rext, rnames) as rs:
            kb.assign(total, total + cast(x[base + offset(rs, rst)], st))
        mean = kb.local("mean", total / const(count, st))
        sq = kb.local("sq", const(0, st))
        with kb.loops(rext, rnames) as rs:
            d = cast(x[base + offset(rs, rst)], st) - mean
            kb.assign(sq, sq + d * d)
        inv = kb.local("inv", inv_std(sq / const(count, st)))
        with kb.loops(rext, rnames) as rs:
            idx = base + offset(rs, rst)
            v = (cast(x[idx], st) - mean) * inv
            kb.store(y, idx, affine(list(ks), list(rs), v) if affine else v)


def _group_norm(kb: NodeKernelBuilder, node: Node, groups: int, st: DType) -> None:
    """x viewed as [N, G, C/G, plane]: statistics per (n, g), scale and bias per channel."""
    x_v = node.inputs[0]
    n_, c_ = x_v.shape[:2]
    plane, cg = math.prod(x_v.shape[2:]), c_ // groups
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    scale, bias = kb.bind(node.inputs[1], "scale"), kb.bind(node.inputs[2], "bias")
    eps = const(node.attrs["epsilon"], st)

    def affine(ks: list[Expr], rs: list[Expr], v: Expr) -> Expr:
        c = ks[1] * cg + rs[0]
        return cast(v, y.dtype) * scale[c] + bias[c]

    standardize(kb, x, y, [(n_, c_ * plane), (groups, cg * plane)], [(cg, plane), (plane, 1)],
                lambda var: const(1, st) / call("sqrt", var + eps), st, affine)


@kernel("InstanceNormalization")
def instance_normalization(kb: NodeKernelBuilder, node: Node) -> None:
    x_v = node.inputs[0]
    _group_norm(kb, node, x_v.shape[1], _stat_type(x_v.dtype))


@kernel("GroupNormalization")
def group_normalization(kb: NodeKernelBuilder, node: Node) -> None:
    _group_norm(kb, node, node.attrs["num_groups"], from_onnx(node.attrs["stash_type"]))


@kernel("MeanVarianceNormalization")
def mean_variance_normalization(kb: NodeKernelBuilder, node: Node) -> None:
    """Over any set of axes: the input's dims merged into runs of kept and reduced ones."""
    x_v = node.inputs[0]
    axes = {a % len(x_v.shape) for a in node.attrs["axes"]}
    groups = runs(x_v.shape, axes)
    strides = row_major_strides([n for n, _ in groups])
    kept = [(n, s) for (n, r), s in zip(groups, strides, strict=True) if not r]
    reduced = [(n, s) for (n, r), s in zip(groups, strides, strict=True) if r]
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    st = _stat_type(x_v.dtype)
    standardize(kb, x, y, kept, reduced,
                lambda var: const(1, st) / (call("sqrt", var) + const(MVN_EPSILON, st)), st)


@kernel("LpNormalization")
def lp_normalization(kb: NodeKernelBuilder, node: Node) -> None:
    """y = x / ||x||_p along the axis (x itself where the norm is 0)."""
    x_v = node.inputs[0]
    rank = len(x_v.shape)
    a = node.attrs["axis"] % rank
    outer, n, inner = (math.prod(x_v.shape[:a]), x_v.shape[a], math.prod(x_v.shape[a + 1:]))
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    dt = x.dtype
    with kb.loops([outer, inner], ["o", "i"]) as (o, i):
        base = named(kb, "base", o * (n * inner) + i)
        acc = kb.local("norm", const(0, dt))
        with kb.loop(n, "a") as k:
            v = x[base + k * inner]
            kb.assign(acc, acc + (call("abs", v) if node.attrs["p"] == 1 else v * v))
        norm = acc if node.attrs["p"] == 1 else kb.local("l2", call("sqrt", acc))
        with kb.loop(n, "a") as k:
            v = x[base + k * inner]
            kb.store(y, base + k * inner, select(norm.eq(0), v, v / norm))


@kernel("LRN")
def lrn(kb: NodeKernelBuilder, node: Node) -> None:
    """y[n, c] = sum of x[n, c']^2 over the channel window (row by row), then
    y = x * (bias + alpha / size * y)^-beta."""
    x_v, at = node.inputs[0], node.attrs
    n_, c_ = x_v.shape[:2]
    plane = math.prod(x_v.shape[2:])
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    st = _stat_type(x.dtype)
    before, after = lrn_window(at["size"])
    with kb.loops([n_, c_], ["n", "c"]) as (n, c):
        row = named(kb, "row", (n * c_ + c) * plane)
        first = kb.local("first", maximum(c - before, 0))
        last = kb.local("last", minimum(c + after, c_ - 1))
        with kb.loop(plane, "p") as p:
            kb.store(y, row + p, const(0, y.dtype))
        with kb.loop(last - first + 1, "k") as k:
            src = named(kb, "src", (n * c_ + first + k) * plane)
            with kb.loop(plane, "p") as p:
                v = cast(x[src + p], st)
                kb.store(y, row + p, cast(y[row + p], st) + v * v)
        with kb.loop(plane, "p") as p:
            s = const(at["bias"], st) + const(at["alpha"] / at["size"], st) * cast(y[row + p], st)
            kb.store(y, row + p, cast(x[row + p], st) * call("pow", s, const(-at["beta"], st)))


# -- Lp pools -----------------------------------------------------------------------------------

def _lp_power(v: Expr, p: int) -> Expr:
    if p == 2:
        return v * v
    a = call("abs", v)
    return a if p == 1 else call("pow", a, const(float(p), v.dtype))


def _lp_root(s: Expr, p: int) -> Expr:
    if p == 1:
        return s
    if p == 2:
        return call("sqrt", s)
    return call("pow", s, const(1.0 / p, s.dtype))


@kernel("LpPool")
def lp_pool(kb: NodeKernelBuilder, node: Node) -> None:
    """Per output pixel, the taps that land inside the input (their ranges from `window`,
    so padding costs nothing) accumulate |x|^p; y = acc^(1/p)."""
    x_v, y_v, at = node.inputs[0], node.output, node.attrs
    n_, c_, *isp = x_v.shape
    osp = list(y_v.shape[2:])
    nsp = len(isp)
    x, y = kb.bind(x_v, "x"), kb.bind(y_v, "y")
    st = _stat_type(x.dtype)
    ks, strides, dil, p0 = at["kernel_shape"], at["strides"], at["dilations"], at["pads"][:nsp]
    names = [str(i) for i in range(nsp)]
    with kb.loops([n_ * c_, *osp], ["r", *(f"o{a}" for a in names)]) as (r, *oo):
        taps = [window(kb, f"k{names[i]}", o * strides[i], -p0[i], dil[i], isp[i], ks[i],
                       range(0, osp[i] * strides[i], strides[i])) for i, o in enumerate(oo)]
        acc = kb.local("acc", const(0, st))
        with kb.loops([cnt for _, cnt in taps], [f"j{a}" for a in names]) as js:
            pos = [o * s + (first + j) * d - p for o, (first, _), j, s, d, p
                   in zip(oo, taps, js, strides, dil, p0, strict=True)]
            v = cast(x[r * math.prod(isp) + offset(pos, row_major_strides(isp))], st)
            kb.assign(acc, acc + _lp_power(v, at["p"]))
        kb.store(y, r * math.prod(osp) + offset(oo, row_major_strides(osp)),
                 _lp_root(acc, at["p"]))


@kernel("GlobalLpPool")
def global_lp_pool(kb: NodeKernelBuilder, node: Node) -> None:
    x_v = node.inputs[0]
    rows, plane = math.prod(x_v.shape[:2]), math.prod(x_v.shape[2:])
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    st = _stat_type(x.dtype)
    with kb.loop(rows, "r") as r:
        acc = kb.local("acc", const(0, st))
        with kb.loop(plane, "p") as p:
            kb.assign(acc, acc + _lp_power(cast(x[r * plane + p], st), node.attrs["p"]))
        kb.store(y, r, _lp_root(acc, node.attrs["p"]))


@kernel("MaxUnpool")
def max_unpool(kb: NodeKernelBuilder, node: Node) -> None:
    """Zero Y, then scatter: y[I[i]] = x[i], the index clamped into Y (a kernel cannot stop
    with an error as onnxruntime does on an out-of-range index)."""
    x, idx = kb.bind(node.inputs[0], "x"), kb.bind(node.inputs[1], "indices")
    y = kb.bind(node.output, "y")
    with kb.loop(y.numel, "i") as i:
        kb.store(y, i, const(0, y.dtype))
    with kb.loop(x.numel, "i") as i:
        j = cast(idx[i], INDEX)
        kb.store(y, minimum(maximum(j, 0), y.numel - 1), x[i])


# -- RoiAlign -----------------------------------------------------------------------------------

def _roi_taps(kb: NodeKernelBuilder, pos: Expr, limit: int, name: str):
    """(low, high, low weight, high weight) of the bilinear taps at `pos` along one axis of
    length `limit`, as the reference's `roi_samples` computes them."""
    pos = kb.local(f"{name}_pos", pos)
    outside = (pos < -1.0) | (pos > float(limit))
    clamped = kb.local(f"{name}_c", select(pos < 0.0, const(0, pos.dtype), pos))
    low = kb.local(f"{name}_lo", minimum(cast(clamped, INDEX), limit - 1))
    edge = low >= limit - 1
    high = kb.local(f"{name}_hi", select(edge, low, low + 1))
    w_high = select(edge, const(0, pos.dtype), clamped - cast(low, pos.dtype))
    w_high = kb.local(f"{name}_wh", select(outside, const(0, pos.dtype), w_high))
    w_low = kb.local(f"{name}_wl", select(outside, const(0, pos.dtype),
                                          const(1, pos.dtype) - w_high))
    return low, high, w_low, w_high


@kernel("RoiAlign")
def roi_align(kb: NodeKernelBuilder, node: Node) -> None:
    """Per region r and output bin (i, j): the region's box in X's pixels and its sample grid
    (sampling_ratio, or ceil(box / bins) per axis at run time); per sample, the four bilinear
    taps and weights, then for every channel y += w . v (avg, divided by the sample count at
    the end) or y = max(y, max_k w_k v_k)."""
    at = node.attrs
    x_v, y_v = node.inputs[0], node.output
    n_, c_, height, width = x_v.shape
    n_rois, _, out_h, out_w = y_v.shape
    x, rois = kb.bind(x_v, "x"), kb.bind(node.inputs[1], "rois")
    idx, y = kb.bind(node.inputs[2], "batch_indices"), kb.bind(y_v, "y")
    dt = x.dtype
    half_pixel = at["coordinate_transformation_mode"] == "half_pixel"
    avg = at["mode"] == "avg"
    sr = at["sampling_ratio"]
    plane, bins = height * width, out_h * out_w
    if n_rois == 0:
        return
    with kb.loop(n_rois, "r") as r:
        img = kb.local("img", minimum(maximum(cast(idx[r], INDEX), 0), n_ - 1) * (c_ * plane))
        box = [kb.local(nm, rois[r * 4 + k] * const(at["spatial_scale"], dt)
                        - const(0.5 if half_pixel else 0.0, dt))
               for k, nm in enumerate(("x1", "y1", "x2", "y2"))]
        sizes = []
        for lo, hi, nm in ((box[1], box[3], "h"), (box[0], box[2], "w")):
            size = hi - lo
            if not half_pixel:  # malformed regions become 1x1
                size = maximum(size, const(1, dt))
            sizes.append(kb.local(f"roi_{nm}", size))
        grid = [const(sr) if sr else
                kb.local(f"grid_{nm}", maximum(cast(call("ceil", s / const(n, dt)), INDEX), 0))
                for s, n, nm in ((sizes[0], out_h, "h"), (sizes[1], out_w, "w"))]
        step = [kb.local(f"bin_{nm}", s / const(n, dt))
                for s, n, nm in ((sizes[0], out_h, "h"), (sizes[1], out_w, "w"))]
        with kb.loops([out_h, out_w], ["ph", "pw"]) as (ph, pw):
            out = named(kb, "out", r * (c_ * bins) + ph * out_w + pw)
            with kb.loop(c_, "c") as c:
                kb.store(y, out + c * bins, const(0 if avg else -math.inf, dt))
            with kb.loop(grid[0], "iy") as iy:
                ypos = box[1] + cast(ph, dt) * step[0] \
                    + (cast(iy, dt) + 0.5) * step[0] / cast(grid[0], dt)
                ylo, yhi, yl, yh = _roi_taps(kb, ypos, height, "y")
                with kb.loop(grid[1], "ix") as ix:
                    xpos = box[0] + cast(pw, dt) * step[1] \
                        + (cast(ix, dt) + 0.5) * step[1] / cast(grid[1], dt)
                    xlo, xhi, xl, xh = _roi_taps(kb, xpos, width, "x")
                    taps = [(kb.local(f"w{k + 1}", wa * wb), ya * width + xb)
                            for k, (wa, wb, ya, xb) in enumerate(
                                [(yl, xl, ylo, xlo), (yl, xh, ylo, xhi),
                                 (yh, xl, yhi, xlo), (yh, xh, yhi, xhi)])]
                    with kb.loop(c_, "c") as c:
                        src = named(kb, "src", img + c * plane)
                        terms = [w * x[src + pos] for w, pos in taps]
                        yi = out + c * bins
                        if avg:
                            kb.store(y, yi, y[yi] + (((terms[0] + terms[1]) + terms[2])
                                                     + terms[3]))
                        else:
                            best = terms[0]
                            for t in terms[1:]:
                                best = max_nan(named(kb, "m", best), named(kb, "t", t))
                            kb.store(y, yi, max_nan(y[yi], named(kb, "m", best)))
            count = named(kb, "count", grid[0] * grid[1])
            with kb.loop(c_, "c") as c:
                yi = out + c * bins
                if avg:
                    kb.store(y, yi, y[yi] / cast(maximum(count, 1), dt))
                else:
                    kb.store(y, yi, select(count > 0, y[yi], const(0, dt)))
