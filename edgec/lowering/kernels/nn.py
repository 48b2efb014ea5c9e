"""Kernel builders of the remaining nn ops: batch and layer normalization, softmax and
resize. (Convolutions: conv.py; matrix products: matmul.py and gemm.py; pools: pool.py;
what they share: common.py.)
"""

from __future__ import annotations

import math
from contextlib import ExitStack

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...ir.onnx_dtypes import from_onnx
from ...ir.ops.nn import antialias_taps, resize_plan
from ...ir.types import TensorType
from ...kernel_ir.kernel import (
    INDEX,
    Buffer,
    Expr,
    broadcast,
    call,
    cast,
    const,
    hreduce,
    maximum,
    minimum,
    select,
    vload,
)
from ..lower import NodeKernelBuilder, broadcast_index, coalesce, kernel, operand
from .common import (
    independent_loops,
    lane_steps,
    named,
    offset,
    row_major_strides,
    warp_rows,
)

# -- normalization and softmax --------------------------------------------------------------

@kernel("BatchNormalization")
def batch_normalization(kb: NodeKernelBuilder, node: Node) -> None:
    """y = (x - mean[c]) * inv[c] + B[c], inv = scale / sqrt(var + epsilon) once per channel."""
    x_v = node.inputs[0]
    n_, c_ = x_v.shape[:2]
    plane = math.prod(x_v.shape[2:])
    x = kb.bind(x_v, "x")
    scale, bias, mean, var = (kb.bind(v, nm) for v, nm in
                              zip(node.inputs[1:5], ("scale", "bias", "mean", "var"), strict=True))
    y = kb.bind(node.output, "y")
    eps = const(node.attrs["epsilon"], x.dtype)
    with kb.loops([n_, c_], ["n", "c"]) as (n, c):
        mu = kb.local("mu", mean[c])
        inv = kb.local("inv", scale[c] / call("sqrt", var[c] + eps))
        beta = kb.local("beta", bias[c])
        base = (n * c_ + c) * plane
        with kb.loop(plane, "p") as p:
            kb.store(y, base + p, (x[base + p] - mu) * inv + beta)


@kernel("LayerNormalization")
def layer_normalization(kb: NodeKernelBuilder, node: Node) -> None:
    """Per row of the axes [axis, rank): mean, var = mean((x - mean)^2), inv = 1/sqrt(var +
    epsilon) in the stash type; y = (x - mean) * inv * scale + B; Mean and InvStdDev
    outputs when the node has them."""
    x_v = node.inputs[0]
    rank = len(x_v.shape)
    axis = node.attrs["axis"] + (rank if node.attrs["axis"] < 0 else 0)
    norm = x_v.shape[axis:]
    rows, size = math.prod(x_v.shape[:axis]), math.prod(norm)
    st = from_onnx(node.attrs["stash_type"])
    x = kb.bind(x_v, "x")
    params = [v for v in node.inputs[1:3] if v is not None]
    bufs = [operand(kb, v, nm) for v, nm in zip(params, ("scale", "bias"), strict=False)]
    y = kb.bind(node.outputs[0], "y")
    stats = [kb.bind(v, nm) for v, nm in zip(node.outputs[1:], ("mean", "inv_std"), strict=False)]
    if kb.target.gpu is not None and size > 1 and \
            all(math.prod(v.shape) in (1, size) for v in params):
        kb.strategy = "layer normalization, a warp per row"
        _layer_norm_warps(kb, x, y, bufs, stats, rows, size, st, node.attrs["epsilon"])
        return
    dims, flags = coalesce(norm, [v.shape for v in params] + [norm])
    lanes = kb.lanes(st) if x.dtype is st is DType.F32 and kb.target.gpu is None else 1
    if lanes > 1 and size >= lanes:
        kb.strategy = f"layer normalization, {lanes}-lane partial sums per row"
    with kb.rows(rows, size, "r") as r:
        base = r * size
        if lanes > 1 and size >= lanes:  # the two sums in partial lanes: _row_sum
            s = _row_sum(kb, "sum", x, base, size, lanes, lambda v: v)
            mean = kb.local("mean", s / const(size, st))
            mb = kb.local("meanb", broadcast(mean, lanes))

            def square(v):
                d = kb.local("dv", v - (mb if v.lanes > 1 else mean))
                return d * d
            q = _row_sum(kb, "sq", x, base, size, lanes, square)
        else:
            s = kb.local("sum", const(0, st))
            with kb.loop(size, "i") as i:
                kb.assign(s, s + cast(x[base + i], st))
            mean = kb.local("mean", s / const(size, st))
            q = kb.local("sq", const(0, st))
            with kb.loop(size, "i") as i:
                dv = cast(x[base + i], st) - mean
                kb.assign(q, q + dv * dv)
        inv = kb.local("inv", const(1, st) / call("sqrt", q / const(size, st)
                                                  + const(node.attrs["epsilon"], st)))
        with kb.loops(dims, [f"i{k}" for k in range(len(dims))]) as vs:
            idx = base + broadcast_index(vs, dims, flags[-1])
            v = cast((cast(x[idx], st) - mean) * inv, y.dtype)
            for b, f in zip(bufs, flags, strict=False):
                t = b[broadcast_index(vs, dims, f)] if isinstance(b, Buffer) else b
                v = v * t if b is bufs[0] else v + t
            kb.store(y, idx, v)
        for buf, val in zip(stats, (mean, inv), strict=False):
            kb.store(buf, r, val)


def _layer_norm_warps(kb: NodeKernelBuilder, x: Buffer, y: Buffer, params: list,
                      stats: list[Buffer], rows: int, size: int, st: DType,
                      epsilon: float) -> None:
    """LayerNormalization over rows of `size`, a GPU warp per row (the scale and bias a
    value each or one per element of the row): the lanes' sums, then their squared
    deviations from the mean, each folded by the warp."""
    with warp_rows(kb, rows) as (r, lane, width):
        base = named(kb, "base", r * size)
        s = kb.local("sum", const(0, st))
        with lane_steps(kb, lane, width, size) as j:
            kb.assign(s, s + cast(x[base + j], st))
        kb.warp_reduce(s, "add", width)
        mean = kb.local("mean", s / const(size, st))
        q = kb.local("sq", const(0, st))
        with lane_steps(kb, lane, width, size) as j:
            dv = kb.local("dv", cast(x[base + j], st) - mean)
            kb.assign(q, q + dv * dv)
        kb.warp_reduce(q, "add", width)
        inv = kb.local("inv", const(1, st) / call("sqrt", q / const(size, st)
                                                  + const(epsilon, st)))
        with lane_steps(kb, lane, width, size) as j:
            v = cast((cast(x[base + j], st) - mean) * inv, y.dtype)
            for k, b in enumerate(params):
                t = b if not isinstance(b, Buffer) else b[j] if b.numel > 1 else b[0]
                v = v * t if k == 0 else v + t
            kb.store(y, base + j, v)
        for buf, val in zip(stats, (mean, inv), strict=False):
            with kb.if_(lane.eq(0)):
                kb.store(buf, r, val)


def _softmax(kb: NodeKernelBuilder, node: Node, log: bool) -> None:
    """Along one axis, subtracting the max first so exp never overflows:
    softmax = e / sum(e), log-softmax = (x - max) - log(sum(e)), e = exp(x - max).
    On a GPU, along the innermost axis: a warp per row, its max and sum warp reductions; on
    a CPU with vectors, along the innermost axis: _softmax_vectors."""
    x_v = node.inputs[0]
    axis = node.attrs["axis"] + (len(x_v.shape) if node.attrs["axis"] < 0 else 0)
    outer, n = math.prod(x_v.shape[:axis]), x_v.shape[axis]
    inner = math.prod(x_v.shape[axis + 1:])
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    if kb.target.gpu is not None and inner == 1 and n > 1:
        kb.strategy = "softmax, a warp per row"
        _softmax_warps(kb, x, y, outer, n, log)
        return
    lanes = kb.lanes(y.dtype) if y.dtype is DType.F32 else 1
    if kb.target.gpu is None and inner == 1 and lanes > 1 and n >= lanes:
        kb.strategy = f"softmax, {lanes}-lane partial max and sum per row"
        _softmax_vectors(kb, x, y, outer, n, lanes, log)
        return
    with kb.rows(outer, n * inner, "o") as o, kb.loop(inner, "i") as i:
        base = o * (n * inner) + i
        mx = kb.local("mx", x[base])
        with kb.loop(n - 1, "a") as a:
            v = x[base + (a + 1) * inner]
            kb.assign(mx, select(v > mx, v, mx))
        s = kb.local("sum", const(0, y.dtype))
        with kb.loop(n, "a") as a:
            e = call("exp", x[base + a * inner] - mx)
            if log:
                kb.assign(s, s + e)
            else:
                kb.store(y, base + a * inner, e)
                kb.assign(s, s + y[base + a * inner])
        if log:
            lse = kb.local("lse", call("log", s))
            with kb.loop(n, "a") as a:
                kb.store(y, base + a * inner, (x[base + a * inner] - mx) - lse)
        else:
            with kb.loop(n, "a") as a:
                kb.store(y, base + a * inner, y[base + a * inner] / s)


def _softmax_vectors(kb: NodeKernelBuilder, x: Buffer, y: Buffer, rows: int, n: int,
                     lanes: int, log: bool) -> None:
    """Softmax along rows of `n` (the innermost axis) in vectors of `lanes`: the row's max and
    its sum of e = exp(x - max) kept in `lanes` partial lanes (element j in lane j % lanes)
    over the whole vectors; the max folded by hreduce (exact in any order), the lanes' sums
    added in lane order (a float sum's bits depend on its order, which every backend and the
    interpreter then share), then the tail's elements one by one. The last pass multiplies
    by the sum's reciprocal (or subtracts the log of the sum) a vector at a time, the tail
    masked. (A scalar loop carries its sum through every element in turn: a chain of
    dependent adds that no compiler may reorder.)"""
    full, tail = divmod(n, lanes)
    with kb.rows(rows, n, "o") as o:
        base = named(kb, "base", o * n)
        mv = kb.local("mxv", vload(x, base, lanes))
        with kb.loop(full - 1, "v") as v:
            t = vload(x, base + (v + 1) * lanes, lanes)
            kb.assign(mv, select(t > mv, t, mv))
        mx = kb.local("mx", hreduce("max", mv))
        with kb.loop(tail, "a") as a:
            t = x[base + full * lanes + a]
            kb.assign(mx, select(t > mx, t, mx))
        m = kb.local("mxb", broadcast(mx, lanes))
        sv = kb.local("sumv", broadcast(const(0, y.dtype), lanes))
        with kb.loop(full, "v") as v:
            e = kb.local("e", call("exp", vload(x, base + v * lanes, lanes) - m))
            if not log:
                kb.store(y, base + v * lanes, e)
            kb.assign(sv, sv + e)
        s = _lane_order_sum(kb, "sum", sv)
        with kb.loop(tail, "a") as a:
            j = base + full * lanes + a
            e = kb.local("et", call("exp", x[j] - mx))
            if not log:
                kb.store(y, j, e)
            kb.assign(s, s + e)
        if log:
            lse = kb.local("lse", broadcast(call("log", s), lanes))
        else:  # one division, then a multiply per element
            inv = kb.local("inv", broadcast(const(1, y.dtype) / s, lanes))

        def last(at, cnt=None) -> None:
            if log:
                kb.store(y, at, (vload(x, at, lanes, cnt) - m) - lse, cnt)
            else:
                kb.store(y, at, vload(y, at, lanes, cnt) * inv, cnt)

        with kb.loop(full, "v") as v:
            last(base + v * lanes)
        if tail:
            last(base + full * lanes, tail)


def _lane_order_sum(kb: NodeKernelBuilder, name: str, v: Expr) -> Expr:
    """A scalar local `name`: the lanes of vector `v` added in lane order, lane 0 first (a
    float sum's bits depend on its order: every backend and the interpreter take this one)."""
    part = kb.alloc("part", v.dtype, [v.lanes])
    kb.store(part, 0, v)
    s = kb.local(name, part[0])
    with kb.loop(v.lanes - 1, "l") as lane:
        kb.assign(s, s + part[lane + 1])
    return s


def _row_sum(kb: NodeKernelBuilder, name: str, x: Buffer, base: Expr, n: int, lanes: int,
             term) -> Expr:
    """A scalar local `name`: the sum of term(x[base + j]) over j < n, in `lanes` partial
    lanes over the whole vectors (term takes a vector there), added in lane order, then the
    tail's terms one by one."""
    full, tail = divmod(n, lanes)
    acc = kb.local(f"{name}v", broadcast(const(0, x.dtype), lanes))
    with kb.loop(full, "v") as v:
        kb.assign(acc, acc + term(vload(x, base + v * lanes, lanes)))
    s = _lane_order_sum(kb, name, acc)
    with kb.loop(tail, "a") as a:
        kb.assign(s, s + term(x[base + full * lanes + a]))
    return s


def _softmax_warps(kb: NodeKernelBuilder, x: Buffer, y: Buffer, rows: int, n: int,
                   log: bool) -> None:
    """Softmax along rows of `n`, a GPU warp per row: each lane folds its elements (lane,
    lane + 32, ...), the warp folds the lanes' max and sum."""
    with warp_rows(kb, rows) as (row, lane, width):
        base = named(kb, "base", row * n)
        mx = kb.local("mx", x[base + minimum(lane, n - 1)])
        with lane_steps(kb, lane, width, n) as j:
            kb.assign(mx, maximum(mx, x[base + j]))
        kb.warp_reduce(mx, "max", width)
        s = kb.local("sum", const(0, y.dtype))
        with lane_steps(kb, lane, width, n) as j:
            e = kb.local("e", call("exp", x[base + j] - mx))
            if not log:
                kb.store(y, base + j, e)
            kb.assign(s, s + e)
        kb.warp_reduce(s, "add", width)
        if log:
            lse = kb.local("lse", call("log", s))
            with lane_steps(kb, lane, width, n) as j:
                kb.store(y, base + j, (x[base + j] - mx) - lse)
        else:
            with lane_steps(kb, lane, width, n) as j:
                kb.store(y, base + j, y[base + j] / s)


@kernel("Softmax")
def softmax(kb: NodeKernelBuilder, node: Node) -> None:
    _softmax(kb, node, log=False)


@kernel("LogSoftmax")
def log_softmax(kb: NodeKernelBuilder, node: Node) -> None:
    _softmax(kb, node, log=True)


# -- resize ---------------------------------------------------------------------------------

_F = np.float32  # coordinates are mapped in float32, as the reference (and onnxruntime) do


def _source_coord(xo: Expr, n_in: int, n_out: int, scale, mode: str, roi) -> Expr:
    """The reference's coordinate_transformation_mode, operation for operation in float32
    (literals are the exact float32 constants), so nearest picks the same pixels."""
    F32 = DType.F32

    def f(v) -> Expr:
        return const(_F(v), F32)

    half = f(0.5)
    if mode in ("half_pixel", "pytorch_half_pixel"):
        if mode == "pytorch_half_pixel" and n_out <= 1:
            return f(0)
        return (xo + half) / f(scale) - half
    if mode == "half_pixel_symmetric":
        adjustment = _F(n_out) / (_F(scale) * _F(n_in))
        shift = _F(n_in) / _F(2) * (_F(1) - adjustment)
        return f(shift) + (xo + half) / f(scale) - half
    if mode == "align_corners":
        return xo * f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0)
    if mode == "asymmetric":
        return xo / f(scale)
    start, end = _F(roi[0]), _F(roi[1])  # tf_crop_and_resize
    if n_out == 1:
        return f(_F(0.5) * (start + end) * _F(n_in - 1))
    return f(start * _F(n_in - 1)) + xo * f(end - start) * f(n_in - 1) / f(n_out - 1)


def _nearest_index(src: Expr, mode: str) -> Expr:
    floor = call("floor", src)
    if mode == "floor":
        return floor
    if mode == "ceil":
        return call("ceil", src)
    half = const(0.5, src.dtype)
    rounded = select(src < 0, -call("floor", -src + half), call("floor", src + half))
    if mode == "round_prefer_floor":
        return select((src - floor).eq(half), floor, rounded)
    return rounded


def _clamp(v: Expr, lo, hi) -> Expr:
    v = select(v < lo, const(lo, v.dtype), v)
    return select(v > hi, const(hi, v.dtype), v)


def _resize_taps(kb: NodeKernelBuilder, src: Expr, n: int, name: str, attrs: dict):
    """(source coordinate, [(input index, weight or None)]) interpolating along one axis."""
    mode = attrs["mode"]
    src = kb.local(f"s{name}", src)
    if mode == "nearest":
        idx = cast(_clamp(_nearest_index(src, attrs["nearest_mode"]), 0, n - 1), INDEX)
        return src, [(kb.local(f"i{name}", idx), None)]
    F32, one = DType.F32, const(1.0, DType.F32)
    if mode == "linear":
        cc = kb.local(f"c{name}", _clamp(src, 0, n - 1))
        i0 = kb.local(f"i{name}", minimum(cast(call("floor", cc), INDEX), n - 1))
        w1 = kb.local(f"w{name}", cc - cast(i0, F32))
        return src, [(i0, one - w1), (minimum(i0 + 1, n - 1), w1)]
    # cubic: Keys' kernel on the 4 neighbours at floor(src) - 1 .. floor(src) + 2
    a = _F(attrs["cubic_coeff_a"])
    base = kb.local(f"i{name}", cast(call("floor", src), INDEX))
    t = kb.local(f"t{name}", src - cast(base, F32))

    def near(d: Expr) -> Expr:  # |d| <= 1
        return (const(a + 2, F32) * d - const(a + 3, F32)) * d * d + one

    def far(d: Expr) -> Expr:  # 1 < |d| < 2
        return ((const(a, F32) * d - const(5 * a, F32)) * d + const(8 * a, F32)) * d \
            - const(4 * a, F32)

    ws = [far(t + one), near(t), near(one - t), far(const(2.0, F32) - t)]
    idx = [base + (k - 1) for k in range(4)]
    if attrs["exclude_outside"]:
        ws = [select((i >= 0) & (i < n), wv, const(0.0, F32))
              for i, wv in zip(idx, ws, strict=True)]
    ws = [kb.local(f"w{name}_{k}", wv) for k, wv in enumerate(ws)]
    if attrs["exclude_outside"]:
        total = kb.local(f"wsum{name}", ws[0] + ws[1] + ws[2] + ws[3])
        ws = [wv / total for wv in ws]
    return src, [(minimum(maximum(i, 0), n - 1), wv) for i, wv in zip(idx, ws, strict=True)]


def _antialias_taps(kb: NodeKernelBuilder, node: Node, axis: int, o: Expr, n_in: int,
                    n_out: int, scale, roi) -> list[tuple[Expr, Expr]]:
    """The T taps of output `o` of an antialiased downsampling pass along `axis`: index and
    weight read from compile-time tables [n_out, T] (shapes and scales are static)."""
    at = node.attrs
    cache = node.meta.setdefault("antialias_tables", {})
    if axis not in cache:
        idx, w = antialias_taps(n_in, n_out, scale, mode=at["mode"],
                                coordinate_transformation_mode=at["coordinate_transformation_mode"],
                                roi=roi, cubic_coeff_a=at["cubic_coeff_a"],
                                exclude_outside=at["exclude_outside"])
        idx = np.ascontiguousarray(idx.astype(np.int32))
        w = np.ascontiguousarray(w)
        cache[axis] = [Value(f"{node.name}_aa{nm}{axis}", TensorType(arr.shape, dt), arr)
                       for nm, arr, dt in (("idx", idx, DType.I32), ("w", w, DType.F32))]
    iv, wv = cache[axis]
    t = iv.shape[1]
    itab, wtab = kb.bind(iv, f"aidx{axis}"), kb.bind(wv, f"aw{axis}")
    row = named(kb, f"arow{axis}", o * t)
    return [(kb.local(f"i{axis}_{k}", cast(itab[row + k], INDEX)),
             kb.local(f"w{axis}_{k}", wtab[row + k])) for k in range(t)]


@kernel("Resize")
def resize(kb: NodeKernelBuilder, node: Node) -> None:
    """Separable resampling: each resized axis maps its output index to input taps (nearest:
    one, linear: two, cubic: four, with weights; antialiased downsampling: a fixed count per
    axis read from compile-time tables), computed once at that axis's loop level.
    Y is the weighted sum over the taps, nested in the reference's pass order (the first
    resized axis innermost) so that the float32 arithmetic is the reference's."""
    _resize(kb, node, lambda v: v, lambda v: v)


@kernel("QLinearResize")
def qlinear_resize(kb: NodeKernelBuilder, node: Node) -> None:
    """Resize on uint8/int8 data: each tap dequantized as it is read, s * (x - z) in float32,
    the sum quantized as it is stored (ir/ops/quant.py: the QDQ graph's arithmetic)."""
    s = const(float(node.inputs[4].const.reshape(-1)[0].astype(np.float32)), DType.F32)
    z = const(int(node.inputs[5].const.reshape(-1)[0]), DType.I32)
    out = node.output.dtype
    lo, hi = ((0, 255) if out is DType.U8 else (-128, 127))
    flo, fhi = const(float(lo), DType.F32) - cast(z, DType.F32), \
        const(float(hi), DType.F32) - cast(z, DType.F32)

    def store(v: Expr) -> Expr:
        q = named(kb, "q", v / s)
        q = named(kb, "q", select(q > flo, q, flo))  # NaN to the lower bound, as Quantize
        q = select(q < fhi, q, fhi)
        return cast(cast(call("round", q), DType.I32) + z, out)

    _resize(kb, node, lambda v: cast(cast(v, DType.I32) - z, DType.F32) * s, store)
    kb.strategy = "int8 resize, " + node.attrs["mode"]


def _resize(kb: NodeKernelBuilder, node: Node, load, store) -> None:
    """The Resize kernel with `load` applied to every input element read and `store` to
    every output element written."""
    x_v, y_v, at = node.inputs[0], node.output, node.attrs
    scales, sizes = [node.input(k).const if node.input(k) is not None else None for k in (2, 3)]
    shape, rank = x_v.shape, len(x_v.shape)
    out, sc = resize_plan(shape, scales, sizes, axes=at["axes"],
                          keep_aspect_ratio_policy=at["keep_aspect_ratio_policy"])
    crop = at["coordinate_transformation_mode"] == "tf_crop_and_resize"
    axes = list(range(rank)) if at["axes"] is None else [a % rank for a in at["axes"]]
    rois = [(0.0, 1.0)] * rank
    if crop:
        flat = node.input(1).const.astype(np.float64).reshape(-1)
        for i, a in enumerate(axes):
            rois[a] = (flat[i], flat[i + len(axes)])
    resized = [out[a] != shape[a] or sc[a] != 1 or (crop and rois[a] != (0.0, 1.0))
               for a in range(rank)]
    x, y = kb.bind(x_v, "x"), kb.bind(y_v, "y")
    lead = resized.index(True) if any(resized) else rank  # untouched leading axes: one loop
    xs, ys = row_major_strides(shape)[lead:], row_major_strides(out)[lead:]
    taps: list[list[tuple[Expr, Expr | None]]] = []
    outside: Expr = const(False, DType.BOOL)
    with ExitStack() as stack:
        if kb.gpu_rows:  # a GPU thread an output element, its taps computed by the thread
            r, *gpu_coords = stack.enter_context(independent_loops(
                kb, [math.prod(shape[:lead]), *out[lead:]],
                ["r", *(f"o{a}" for a in range(lead, rank))], 2 ** (rank - lead)))
        else:  # each axis's taps computed in its own loop, once for the loops inside
            r = stack.enter_context(kb.loop(math.prod(shape[:lead]), "r"))
        coords = []
        for a in range(lead, rank):
            o = gpu_coords[a - lead] if kb.gpu_rows else \
                stack.enter_context(kb.loop(out[a], f"o{a}"))
            coords.append(o)
            if not resized[a]:
                taps.append([(o, None)])
                continue
            src = _source_coord(cast(o, DType.F32), shape[a], out[a], sc[a],
                                at["coordinate_transformation_mode"], rois[a])
            if at["antialias"] and at["mode"] != "nearest" and sc[a] < 1:
                src = kb.local(f"s{a}", src) if crop else src
                tp = _antialias_taps(kb, node, a, o, shape[a], out[a], sc[a], rois[a])
            else:
                src, tp = _resize_taps(kb, src, shape[a], str(a), at)
            taps.append(tp)
            if crop:
                outside = outside | (src < 0) | (src > shape[a] - 1)

        def interp(k: int, idx: list) -> Expr:
            """The pass along axis lead + k - 1 applied to the passes of the axes before."""
            if k == 0:
                return load(x[r * math.prod(shape[lead:]) + offset(idx, xs)])
            total = None
            for i, wv in taps[k - 1]:
                term = interp(k - 1, [i, *idx])
                term = term if wv is None else term * wv
                total = term if total is None else total + term
            return total

        v = interp(len(taps), [])
        if not outside.is_const:
            v = select(outside, const(at["extrapolation_value"], v.dtype), v)
        kb.store(y, r * math.prod(out[lead:]) + offset(coords, ys), store(v))
