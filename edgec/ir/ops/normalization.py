"""Normalizations beyond batch and layer norm, and the pools that go with them: instance, group,
Lp and mean-variance normalization, local response normalization, Lp pools and MaxUnpool.

Instance and group normalization standardize each (image, channel group) over its channels
and pixels: y = (x - mean) / sqrt(var + epsilon) * scale[c] + bias[c], var the biased variance
(InstanceNormalization is GroupNormalization with one channel per group). The other maths:
    MeanVarianceNormalization  y = (x - mean) / (sqrt(var) + 1e-9) over `axes`
    LpNormalization            y = x / ||x||_p along `axis` (p = 1 or 2)
    LRN                        y = x * (bias + alpha / size * sum_{c' near c} x[c']^2)^-beta
    LpPool, GlobalLpPool       y = (sum_window |x|^p)^(1/p) (padding contributes 0)
    MaxUnpool                  y = 0, then y.flat[I[i]] = X[i]
    RoiAlign                   y[r, c, i, j] = mean (or max) over a grid of samples in bin
                               (i, j) of region r, each bilinearly interpolated from X
"""

from __future__ import annotations

import math

import numpy as np

from .. import onnx_dtypes
from ..dtypes import DType
from ..registry import Attr, const_input, op
from ..types import TensorType
from .nn import _check_spatial, _fail, _pad_spatial, _pool_geometry, _window_views

MVN_EPSILON = 1e-9  # the constant of ONNX's MeanVarianceNormalization function body


def _check_float(opname: str, t: TensorType) -> None:
    if not t.dtype.is_float:
        _fail(opname, f"input {t} must be float")


def _norm_axis(opname: str, axis: int, rank: int) -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        _fail(opname, f"axis {axis} is out of range for rank {rank}")
    return a


def standardize(x: np.ndarray, axes: tuple[int, ...], epsilon: float,
                dtype=np.float32) -> np.ndarray:
    """(x - mean) / sqrt(var + epsilon) over `axes`, computed in `dtype`."""
    xs = x.astype(dtype)
    d = xs - np.mean(xs, axis=axes, keepdims=True)
    var = np.mean(d * d, axis=axes, keepdims=True)
    return d / np.sqrt(var + np.asarray(epsilon, dtype))


# -- instance and group normalization -----------------------------------------------------

def _check_channel_params(opname: str, x: TensorType, params, length: int, what: str) -> None:
    if x.rank < 2:
        _fail(opname, f"input must be [N, C, ...], got {x}")
    for v in params:
        if v.shape != (length,) or v.dtype != x.dtype:
            _fail(opname, f"scale and bias must be {x.dtype}[{length}] ({what}), got {v.type}")


def _infer_instance_norm(inputs, *, epsilon):
    x = inputs[0].type
    _check_float("InstanceNormalization", x)
    _check_channel_params("InstanceNormalization", x, inputs[1:3], x.shape[1] if x.rank > 1 else 0,
                          "one per channel")
    return x


@op("InstanceNormalization", inputs=3, infer=_infer_instance_norm,
    attrs={"epsilon": Attr.float(1e-5)})
def instance_normalization(x, scale, b, *, epsilon):
    """Per image and channel, over the spatial axes."""
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    y = standardize(x, tuple(range(2, x.ndim)), epsilon)
    return (y * scale.reshape(shape) + b.reshape(shape)).astype(x.dtype)


def _infer_group_norm(inputs, *, epsilon, num_groups, stash_type):
    x = inputs[0].type
    _check_float("GroupNormalization", x)
    c = x.shape[1] if x.rank > 1 else 0
    if num_groups < 1 or c % num_groups:
        _fail("GroupNormalization", f"num_groups={num_groups} must divide the {c} channels of "
                                    f"{x}")
    _check_channel_params("GroupNormalization", x, inputs[1:3], c, "opset-21 form: one per "
                          "channel; the frontend converts the opset-18 form")
    onnx_dtypes.from_onnx(stash_type)
    return x


@op("GroupNormalization", inputs=3, infer=_infer_group_norm,
    attrs={"epsilon": Attr.float(1e-5), "num_groups": Attr.int(), "stash_type": Attr.int(1)})
def group_normalization(x, scale, b, *, epsilon, num_groups, stash_type):
    """Per image and group of C / num_groups channels, over those channels and all pixels;
    statistics in the stash type, scale and bias per channel (opset 21)."""
    n, c = x.shape[:2]
    st = onnx_dtypes.from_onnx(stash_type).np
    g = standardize(x.reshape(n, num_groups, -1), (2,), epsilon, st).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return (g.astype(x.dtype) * scale.reshape(shape) + b.reshape(shape)).astype(x.dtype)


# -- Lp and mean-variance normalization ----------------------------------------------------

def _infer_lp_norm(inputs, *, axis, p):
    x = inputs[0].type
    _check_float("LpNormalization", x)
    _norm_axis("LpNormalization", axis, x.rank)
    if p not in (1, 2):
        _fail("LpNormalization", f"p must be 1 or 2, got {p}")
    return x


@op("LpNormalization", infer=_infer_lp_norm, attrs={"axis": Attr.int(-1), "p": Attr.int(2)})
def lp_normalization(x, *, axis, p):
    """x / ||x||_p along `axis`; a zero norm leaves its zeros alone (as onnxruntime)."""
    a = _norm_axis("LpNormalization", axis, x.ndim)
    if p == 1:
        norm = np.sum(np.abs(x), axis=a, keepdims=True)
    else:
        norm = np.sqrt(np.sum(x * x, axis=a, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm == 0, x, x / norm).astype(x.dtype)


def _mvn_axes(opname: str, axes, rank: int) -> tuple[int, ...]:
    out = sorted({_norm_axis(opname, a, rank) for a in axes})
    if len(out) != len(axes):
        _fail(opname, f"axes {axes} repeat an axis")
    return tuple(out)


def _infer_mvn(inputs, *, axes):
    x = inputs[0].type
    _check_float("MeanVarianceNormalization", x)
    _mvn_axes("MeanVarianceNormalization", axes, x.rank)
    return x


@op("MeanVarianceNormalization", infer=_infer_mvn, attrs={"axes": Attr.ints([0, 2, 3])})
def mean_variance_normalization(x, *, axes):
    """(x - mean) / (sqrt(var) + 1e-9) over `axes` (the ONNX function body's epsilon)."""
    ax = _mvn_axes("MeanVarianceNormalization", axes, x.ndim)
    xs = x.astype(np.float32)
    d = xs - np.mean(xs, axis=ax, keepdims=True)
    std = np.sqrt(np.mean(d * d, axis=ax, keepdims=True))
    return (d / (std + np.float32(MVN_EPSILON))).astype(x.dtype)


def _infer_lrn(inputs, *, alpha, beta, bias, size):
    x = inputs[0].type
    _check_float("LRN", x)
    if x.rank < 3:
        _fail("LRN", f"input must be [N, C, spatial...], got {x}")
    if size < 1:
        _fail("LRN", f"size must be >= 1, got {size}")
    return x


def lrn_window(size: int) -> tuple[int, int]:
    """Channels summed around c: [c - before, c + after]."""
    return (size - 1) // 2, size // 2


@op("LRN", infer=_infer_lrn, attrs={"alpha": Attr.float(1e-4), "beta": Attr.float(0.75),
                                    "bias": Attr.float(1.0), "size": Attr.int()})
def lrn(x, *, alpha, beta, bias, size):
    """x * (bias + alpha / size * square_sum)^-beta, the sum over channels
    [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the existing ones."""
    before, after = lrn_window(size)
    sq = (x * x).astype(np.float32)
    c = x.shape[1]
    pad = np.pad(sq, [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
    total = sum(pad[:, k:k + c] for k in range(size))
    scale = np.float32(bias) + np.float32(alpha / size) * total
    return (x * np.power(scale, np.float32(-beta))).astype(x.dtype)


# -- Lp pools -----------------------------------------------------------------------------------

_LP_POOL_ATTRS = {
    "ceil_mode": Attr.int(0),
    "dilations": Attr.ints(),
    "kernel_shape": Attr.ints(),
    "p": Attr.int(2),
    "pads": Attr.ints(),
    "strides": Attr.ints(),
}


def _infer_lp_pool(inputs, *, ceil_mode, dilations, kernel_shape, p, pads, strides):
    x = inputs[0].type
    _check_float("LpPool", x)
    nsp = x.rank - 2
    _check_spatial("LpPool", x, nsp, kernel_shape=(kernel_shape, nsp), strides=(strides, nsp),
                   dilations=(dilations, nsp), pads=(pads, 2 * nsp))
    if p < 1:
        _fail("LpPool", f"p must be >= 1, got {p}")
    out, _ = _pool_geometry("LpPool", x.shape, ceil_mode=ceil_mode, dilations=dilations,
                            kernel_shape=kernel_shape, pads=pads, strides=strides)
    return x.with_shape(x.shape[:2] + tuple(out))


def lp_power(x: np.ndarray, p: int) -> np.ndarray:
    """|x|^p (x*x for p = 2, as the kernel computes it)."""
    return x * x if p == 2 else np.power(np.abs(x), np.float32(p))


def lp_root(s: np.ndarray, p: int) -> np.ndarray:
    return np.sqrt(s) if p == 2 else np.power(s, np.float32(1.0 / p))


@op("LpPool", infer=_infer_lp_pool, attrs=_LP_POOL_ATTRS)
def lp_pool(x, *, ceil_mode, dilations, kernel_shape, p, pads, strides):
    """(sum over the window of |x|^p)^(1/p); padding cells contribute nothing."""
    geo = dict(dilations=dilations, kernel_shape=kernel_shape, pads=pads, strides=strides)
    out, extra = _pool_geometry("LpPool", x.shape, ceil_mode=ceil_mode, **geo)
    xp = _pad_spatial(lp_power(x.astype(np.float32), p), pads, 0, extra)
    total = sum(_window_views(xp, kernel_shape, strides, dilations, out))
    return lp_root(total, p).astype(x.dtype)


def _infer_global_lp_pool(inputs, *, p):
    x = inputs[0].type
    _check_float("GlobalLpPool", x)
    if x.rank < 3:
        _fail("GlobalLpPool", f"input must be [N, C, spatial...], got {x}")
    if p < 1:
        _fail("GlobalLpPool", f"p must be >= 1, got {p}")
    return x.with_shape(x.shape[:2] + (1,) * (x.rank - 2))


@op("GlobalLpPool", infer=_infer_global_lp_pool, attrs={"p": Attr.int(2)})
def global_lp_pool(x, *, p):
    total = np.sum(lp_power(x.astype(np.float32), p), axis=tuple(range(2, x.ndim)),
                   keepdims=True)
    return lp_root(total, p).astype(x.dtype)


# -- MaxUnpool ------------------------------------------------------------------------------

def _infer_max_unpool(inputs, *, kernel_shape, pads, strides):
    x, idx = inputs[0].type, inputs[1].type
    nsp = x.rank - 2
    _check_spatial("MaxUnpool", x, nsp, kernel_shape=(kernel_shape, nsp), strides=(strides, nsp),
                   pads=(pads, 2 * nsp))
    if idx.shape != x.shape or idx.dtype != DType.I64:
        _fail("MaxUnpool", f"indices {idx} must be i64 of X's shape {list(x.shape)}")
    given = const_input(inputs, 2, "MaxUnpool's 'output_shape' input")
    if given is not None:
        shape = tuple(int(d) for d in given.reshape(-1))
        if len(shape) != x.rank or shape[:2] != x.shape[:2] or min(shape) < 1:
            _fail("MaxUnpool", f"output_shape {list(shape)} must be [N, C, spatial...] with X's "
                               f"N and C ({list(x.shape)})")
        return x.with_shape(shape)
    out = [(x.shape[2 + i] - 1) * strides[i] + kernel_shape[i] - pads[i] - pads[i + nsp]
           for i in range(nsp)]
    if min(out) < 1:
        _fail("MaxUnpool", f"kernel_shape {kernel_shape}, strides {strides} and pads {pads} "
                           f"leave no output for input {x}")
    return x.with_shape(x.shape[:2] + tuple(out))


@op("MaxUnpool", inputs=(2, 3), infer=_infer_max_unpool, traits=("indices",),
    attrs={"kernel_shape": Attr.ints(), "pads": Attr.ints(), "strides": Attr.ints()})
def max_unpool(x, indices, output_shape=None, *, kernel_shape, pads, strides):
    """Zeros, with each X[i] written at flat index I[i] of Y (indices clipped into range,
    as the kernel does; onnxruntime rejects out-of-range ones)."""
    if output_shape is not None:
        shape = tuple(int(d) for d in output_shape.reshape(-1))
    else:
        nsp = x.ndim - 2
        shape = x.shape[:2] + tuple(
            (x.shape[2 + i] - 1) * strides[i] + kernel_shape[i] - pads[i] - pads[i + nsp]
            for i in range(nsp))
    y = np.zeros(math.prod(shape), dtype=x.dtype)
    y[np.clip(indices.reshape(-1), 0, y.size - 1)] = x.reshape(-1)
    return y.reshape(shape)


# -- RoiAlign -----------------------------------------------------------------------------------

_ROI_MODES = ("half_pixel", "output_half_pixel")


def _infer_roi_align(inputs, *, coordinate_transformation_mode, mode, output_height,
                     output_width, sampling_ratio, spatial_scale):
    x, rois, idx = (v.type for v in inputs)
    _check_float("RoiAlign", x)
    if x.rank != 4:
        _fail("RoiAlign", f"X must be [N, C, H, W], got {x}")
    if rois.rank != 2 or rois.shape[1] != 4 or rois.dtype != x.dtype:
        _fail("RoiAlign", f"rois must be {x.dtype}[num_rois, 4], got {rois}")
    if idx.shape != rois.shape[:1] or idx.dtype != DType.I64:
        _fail("RoiAlign", f"batch_indices must be i64[{rois.shape[0]}], got {idx}")
    if rois.shape[0] and x.shape[1] and 0 in (x.shape[0],) + x.shape[2:]:
        _fail("RoiAlign", f"{rois.shape[0]} region(s) cannot be pooled from X {x}, which has "
                          f"no image or an empty map (no batch index or pixel to land on)")
    if coordinate_transformation_mode not in _ROI_MODES:
        _fail("RoiAlign", f"coordinate_transformation_mode {coordinate_transformation_mode!r} "
                          f"is not one of {_ROI_MODES}")
    if mode not in ("avg", "max"):
        _fail("RoiAlign", f"mode must be 'avg' or 'max', got {mode!r}")
    if output_height < 1 or output_width < 1 or sampling_ratio < 0:
        _fail("RoiAlign", "output_height and output_width must be >= 1, sampling_ratio >= 0")
    return x.with_shape((rois.shape[0], x.shape[1], output_height, output_width))


def roi_samples(start, size, bins: int, grid: int, limit: int):
    """Bilinear taps of the `grid` samples per bin along one axis of one region, each
    [bins, grid]: (low index, high index, low weight, high weight). A sample outside
    [-1, limit] gets zero weights; others are clamped into the map, as onnxruntime does."""
    f32 = np.float32
    bin_size = f32(size) / f32(bins)
    k = np.arange(bins, dtype=f32)[:, None]
    i = np.arange(grid, dtype=f32)[None, :]
    pos = f32(start) + k * bin_size + (i + f32(0.5)) * bin_size / f32(grid)
    outside = (pos < -1) | (pos > limit)
    pos = np.maximum(pos, 0)
    low = np.minimum(pos.astype(np.int64), limit - 1)
    edge = low >= limit - 1
    high = np.where(edge, low, low + 1)
    pos = np.where(edge, low.astype(f32), pos)
    hi_w = pos - low.astype(f32)
    lo_w = 1 - hi_w
    return low, high, np.where(outside, 0, lo_w), np.where(outside, 0, hi_w)


def roi_region(roi, spatial_scale: float, half_pixel: bool, out_h: int, out_w: int,
               sampling_ratio: int):
    """(start_h, start_w, height, width, grid_h, grid_w) of one region in X's pixels."""
    f32 = np.float32
    off = f32(0.5) if half_pixel else f32(0)
    x1, y1, x2, y2 = (f32(v) * f32(spatial_scale) - off for v in roi)
    h, w = y2 - y1, x2 - x1
    if not half_pixel:  # the legacy mode makes malformed regions 1x1
        h, w = max(h, f32(1)), max(w, f32(1))
    gh = sampling_ratio or int(np.ceil(h / f32(out_h)))
    gw = sampling_ratio or int(np.ceil(w / f32(out_w)))
    return y1, x1, h, w, max(gh, 0), max(gw, 0)


@op("RoiAlign", inputs=3, infer=_infer_roi_align, traits=("indices",), attrs={
    "coordinate_transformation_mode": Attr.str("half_pixel"), "mode": Attr.str("avg"),
    "output_height": Attr.int(1), "output_width": Attr.int(1), "sampling_ratio": Attr.int(0),
    "spatial_scale": Attr.float(1.0)})
def roi_align(x, rois, batch_indices, *, coordinate_transformation_mode, mode, output_height,
              output_width, sampling_ratio, spatial_scale):
    """avg: the mean of the samples; max: the max over samples of the largest of its four
    weighted corners (onnxruntime's and ONNX's definition). An empty grid gives 0."""
    n, c, height, width = x.shape
    out = np.zeros((rois.shape[0], c, output_height, output_width), dtype=x.dtype)
    for r in range(rois.shape[0]):
        y1, x1, h, w, gh, gw = roi_region(rois[r], spatial_scale,
                                          coordinate_transformation_mode == "half_pixel",
                                          output_height, output_width, sampling_ratio)
        if gh * gw == 0:
            continue
        ylo, yhi, yl, yh = roi_samples(y1, h, output_height, gh, height)
        xlo, xhi, xl, xh = roi_samples(x1, w, output_width, gw, width)
        img = x[int(np.clip(batch_indices[r], 0, n - 1))].astype(np.float32)

        def at(yi, xi, img=img):  # [C, out_h, gh, out_w, gw]
            return img[:, yi[:, :, None, None], xi[None, None, :, :]]

        def wt(a, b):
            return a[:, :, None, None] * b[None, None, :, :]

        terms = [wt(yl, xl) * at(ylo, xlo), wt(yl, xh) * at(ylo, xhi),
                 wt(yh, xl) * at(yhi, xlo), wt(yh, xh) * at(yhi, xhi)]
        if mode == "avg":
            total = ((terms[0] + terms[1]) + terms[2]) + terms[3]
            out[r] = total.sum(axis=(2, 4)) / np.float32(gh * gw)
        else:
            out[r] = np.maximum.reduce(terms).max(axis=(2, 4))
    return out
