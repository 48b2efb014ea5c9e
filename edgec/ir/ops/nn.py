"""Neural-network ops: convolution, matrix products, pooling, normalization, softmax.

Sliding windows: along a spatial axis with input length n (after padding p0 + p1), kernel k,
stride s and dilation d, output position o reads input positions o*s + j*d - p0 (j < k), so
out = floor((n + p0 + p1 - ((k-1)*d + 1)) / s) + 1 (ceil instead of floor for ceil-mode pools).
"""

from __future__ import annotations

import itertools
import math
from typing import NoReturn

import numpy as np

from ...errors import ShapeError
from .. import onnx_dtypes
from ..dtypes import DType
from ..registry import Attr, broadcast_shapes, const_input, op
from ..types import TensorType


def _fail(opname: str, msg: str) -> NoReturn:
    raise ShapeError(f"{opname}: {msg}")


def _acc_dtype(dt: np.dtype) -> np.dtype:
    """float16 accumulates in float32 (as onnxruntime does); other types in themselves."""
    return np.dtype(np.float32) if dt == np.float16 else dt


# -- sliding windows shared by convolutions and pools -------------------------------------

def _check_spatial(opname: str, x: TensorType, nsp: int, **per_axis) -> None:
    if x.rank < 3:
        _fail(opname, f"input must be [N, C, spatial...] of rank >= 3, got {x}")
    for name, (vals, want) in per_axis.items():
        if len(vals) != want:
            _fail(opname, f"'{name}' has {len(vals)} values; a {x.rank}-D input needs {want}")
    if any(s < 1 for s in per_axis.get("strides", ([1], 0))[0]):
        _fail(opname, "strides must be >= 1")
    if any(d < 1 for d in per_axis.get("dilations", ([1], 0))[0]):
        _fail(opname, "dilations must be >= 1")
    if any(k < 1 for k in per_axis.get("kernel_shape", ([1], 0))[0]):
        _fail(opname, "kernel_shape must be >= 1")
    pads = per_axis.get("pads", ([0], 0))[0]
    if any(p < 0 for p in pads):  # as ONNX's shape inference has it; Pad crops, these do not
        _fail(opname, f"pads {list(pads)} must not be negative")


def _window_out(opname: str, n: int, k: int, s: int, d: int, p0: int, p1: int,
                ceil_mode: bool = False) -> int:
    span = (k - 1) * d + 1
    room = n + p0 + p1 - span
    if room < 0:
        _fail(opname, f"window of extent {span} does not fit in a padded input of length "
                      f"{n + p0 + p1}")
    out = (-(-room // s) if ceil_mode else room // s) + 1
    # a ceil-mode window must start inside the input or its left padding (ONNX, onnxruntime)
    if ceil_mode and (out - 1) * s >= n + p0:
        out -= 1
    return out


def _window_views(xp: np.ndarray, kernel, strides, dilations, out):
    """For each kernel offset (in C order), the strided view of padded `xp` it reads."""
    for offs in itertools.product(*[range(k) for k in kernel]):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                   for o, d, s, n in zip(offs, dilations, strides, out, strict=True))
        yield xp[(slice(None), slice(None)) + sl]


def _pad_spatial(x: np.ndarray, pads, value, extra=None) -> np.ndarray:
    nsp = x.ndim - 2
    extra = extra or [0] * nsp
    width = [(0, 0), (0, 0)] + [(pads[i], pads[i + nsp] + extra[i]) for i in range(nsp)]
    if not any(a or b for a, b in width):
        return x
    return np.pad(x, width, constant_values=value)


# -- Conv ---------------------------------------------------------------------------------

_CONV_ATTRS = {
    "dilations": Attr.ints(),
    "group": Attr.int(1),
    "pads": Attr.ints(),
    "strides": Attr.ints(),
}


def _infer_conv(inputs, *, dilations, group, pads, strides):
    x, w, b = inputs[0].type, inputs[1].type, (inputs[2] if len(inputs) > 2 else None)
    nsp = x.rank - 2
    _check_spatial("Conv", x, nsp, dilations=(dilations, nsp), pads=(pads, 2 * nsp),
                   strides=(strides, nsp))
    if w.rank != x.rank:
        _fail("Conv", f"weight {w} must have the rank of input {x}")
    if group < 1 or x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        _fail("Conv", f"input {x} with group={group} needs weight [M, C/group, ...] with M "
                      f"divisible by group; got weight {w}")
    if x.dtype != w.dtype or not x.dtype.is_float:
        _fail("Conv", f"input {x} and weight {w} must be floats of one dtype")
    if b is not None and b.shape != (w.shape[0],):
        _fail("Conv", f"bias {b.type} must be 1-D of length M={w.shape[0]}")
    out = [_window_out("Conv", x.shape[2 + i], w.shape[2 + i], strides[i], dilations[i],
                       pads[i], pads[i + nsp]) for i in range(nsp)]
    return TensorType((x.shape[0], w.shape[0], *out), x.dtype)


def conv_nd(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, *, dilations, group, pads,
            strides) -> np.ndarray:
    """Grouped N-D convolution as one batched matrix product over im2col columns."""
    n, c = x.shape[:2]
    m, kernel = w.shape[0], w.shape[2:]
    nsp = len(kernel)
    acc = _acc_dtype(x.dtype)
    xp = _pad_spatial(x.astype(acc, copy=False), pads, 0)
    out = [_window_out("Conv", x.shape[2 + i], kernel[i], strides[i], dilations[i], pads[i],
                       pads[i + nsp]) for i in range(nsp)]
    k = math.prod(kernel)
    cols = np.stack(list(_window_views(xp, kernel, strides, dilations, out)), axis=2)
    cols = cols.reshape(n, group, (c // group) * k, math.prod(out))  # [N, G, C/G*K, P]
    wm = w.astype(acc, copy=False).reshape(group, m // group, (c // group) * k)
    y = np.matmul(wm[None], cols).reshape(n, m, *out)
    if b is not None:
        y = y + b.astype(acc, copy=False).reshape((1, m) + (1,) * nsp)
    return y.astype(x.dtype, copy=False)


@op("Conv", inputs=(2, 3), attrs=_CONV_ATTRS, infer=_infer_conv)
def conv(x, w, b=None, *, dilations, group, pads, strides):
    return conv_nd(x, w, b, dilations=dilations, group=group, pads=pads, strides=strides)


# -- ConvTranspose ------------------------------------------------------------------------

def _infer_conv_transpose(inputs, *, dilations, group, output_padding, pads, strides):
    x, w, b = inputs[0].type, inputs[1].type, (inputs[2] if len(inputs) > 2 else None)
    nsp = x.rank - 2
    _check_spatial("ConvTranspose", x, nsp, dilations=(dilations, nsp), pads=(pads, 2 * nsp),
                   strides=(strides, nsp), output_padding=(output_padding, nsp))
    if w.rank != x.rank or group < 1 or w.shape[0] != x.shape[1] or x.shape[1] % group:
        _fail("ConvTranspose", f"input {x} with group={group} needs weight [C, M/group, ...] "
                               f"and C divisible by group; got weight {w}")
    if x.dtype != w.dtype or not x.dtype.is_float:
        _fail("ConvTranspose", f"input {x} and weight {w} must be floats of one dtype")
    m = w.shape[1] * group
    if b is not None and b.shape != (m,):
        _fail("ConvTranspose", f"bias {b.type} must be 1-D of length M={m}")
    out = []
    for i in range(nsp):
        full = strides[i] * (x.shape[2 + i] - 1) + output_padding[i] \
            + (w.shape[2 + i] - 1) * dilations[i] + 1
        o = full - pads[i] - pads[i + nsp]
        if o < 1 or min(pads[i], pads[i + nsp]) < 0:
            _fail("ConvTranspose", f"pads {pads} leave no output along spatial axis {i}")
        out.append(o)
    return TensorType((x.shape[0], m, *out), x.dtype)


@op("ConvTranspose", inputs=(2, 3), infer=_infer_conv_transpose,
    attrs={**_CONV_ATTRS, "output_padding": Attr.ints()})
def conv_transpose(x, w, b=None, *, dilations, group, output_padding, pads, strides):
    """Each input pixel scatters kernel * value into the output at o = i*s + j*d - p0."""
    n, c, *insp = x.shape
    mg, kernel = w.shape[1], w.shape[2:]
    nsp, k, m = len(kernel), math.prod(kernel), w.shape[1] * group
    acc = _acc_dtype(x.dtype)
    xm = x.astype(acc, copy=False).reshape(n, group, c // group, math.prod(insp))
    wm = w.astype(acc, copy=False).reshape(group, c // group, mg * k)
    cols = np.matmul(wm.transpose(0, 2, 1)[None], xm).reshape(n, m, k, *insp)
    full = [strides[i] * (insp[i] - 1) + (kernel[i] - 1) * dilations[i] + 1 + output_padding[i]
            for i in range(nsp)]
    y = np.zeros((n, m, *full), dtype=acc)
    for ki, offs in enumerate(itertools.product(*[range(kk) for kk in kernel])):
        sl = tuple(slice(o * d, o * d + s * (ni - 1) + 1, s)
                   for o, d, s, ni in zip(offs, dilations, strides, insp, strict=True))
        y[(slice(None), slice(None)) + sl] += cols[:, :, ki]
    y = y[(slice(None), slice(None)) +
          tuple(slice(pads[i], full[i] - pads[i + nsp]) for i in range(nsp))]
    if b is not None:
        y = y + b.astype(acc, copy=False).reshape((1, m) + (1,) * nsp)
    return y.astype(x.dtype)


# -- matrix products ----------------------------------------------------------------------

def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy.matmul's result shape: 1-D operands get a dim added then removed; batch dims
    broadcast."""
    if not a or not b:
        raise ShapeError(f"MatMul: operands must have rank >= 1, got {list(a)} and {list(b)}")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise ShapeError(f"MatMul: inner dimensions differ: {list(a)} @ {list(b)}")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())
    return out


def _infer_matmul(inputs):
    a, b = inputs[0].type, inputs[1].type
    if a.dtype != b.dtype:
        _fail("MatMul", f"operands {a} and {b} must have one dtype")
    return TensorType(matmul_shape(a.shape, b.shape), a.dtype)


@op("MatMul", inputs=2, infer=_infer_matmul)
def matmul(a, b):
    acc = _acc_dtype(a.dtype)
    return np.matmul(a.astype(acc, copy=False), b.astype(acc, copy=False)).astype(a.dtype)


def gemm_dims(op: str, a: TensorType, b: TensorType, trans_a: int, trans_b: int):
    """(M, N) of a Gemm-like product of 2-D A and B, or a ShapeError naming `op`."""
    if a.rank != 2 or b.rank != 2:
        _fail(op, f"A and B must be 2-D, got {a} and {b}")
    m, ka = a.shape[::-1] if trans_a else a.shape
    kb, n = b.shape[::-1] if trans_b else b.shape
    if ka != kb:
        _fail(op, f"inner dimensions differ: A {a} (transA={trans_a}), B {b} "
                  f"(transB={trans_b})")
    return m, n


def _infer_gemm(inputs, *, alpha, beta, transA, transB):
    a, b = inputs[0].type, inputs[1].type
    c = inputs[2] if len(inputs) > 2 else None
    m, n = gemm_dims("Gemm", a, b, transA, transB)
    if a.dtype != b.dtype:
        _fail("Gemm", f"A {a} and B {b} must have one dtype")
    if c is not None and broadcast_shapes(c.shape, (m, n)) != (m, n):
        _fail("Gemm", f"C {c.type} does not broadcast to [{m}, {n}]")
    return TensorType((m, n), a.dtype)


@op("Gemm", inputs=(2, 3), infer=_infer_gemm, attrs={
    "alpha": Attr.float(1.0), "beta": Attr.float(1.0),
    "transA": Attr.int(0), "transB": Attr.int(0)})
def gemm(a, b, c=None, *, alpha, beta, transA, transB):
    """Y = alpha * A' @ B' + beta * C (A' = A or its transpose, likewise B')."""
    acc = _acc_dtype(a.dtype)
    a = a.astype(acc, copy=False)
    b = b.astype(acc, copy=False)
    y = np.matmul(a.T if transA else a, b.T if transB else b)
    if alpha != 1.0:
        y = y * np.asarray(alpha, dtype=acc)
    if c is not None:
        cc = c.astype(acc, copy=False)
        y = y + (cc if beta == 1.0 else cc * np.asarray(beta, dtype=acc))
    return y.astype(a.dtype)


# -- normalization ------------------------------------------------------------------------

def _infer_batchnorm(inputs, *, epsilon, momentum, training_mode):
    x = inputs[0].type
    if training_mode:
        _fail("BatchNormalization", "training_mode=1 (batch statistics and running-mean "
                                    "outputs) is not supported; export the model for inference")
    if x.rank < 2:
        _fail("BatchNormalization", f"input must be [N, C, ...], got {x}")
    for i, what in enumerate(("scale", "B", "input_mean", "input_var"), start=1):
        if inputs[i].shape != (x.shape[1],):
            _fail("BatchNormalization", f"{what} {inputs[i].type} must be 1-D of length "
                                        f"C={x.shape[1]}")
    return x


@op("BatchNormalization", inputs=5, infer=_infer_batchnorm, attrs={
    "epsilon": Attr.float(1e-5), "momentum": Attr.float(0.9), "training_mode": Attr.int(0)})
def batch_normalization(x, scale, b, mean, var, *, epsilon, momentum, training_mode):
    """Y = (X - mean) / sqrt(var + epsilon) * scale + B, per channel (axis 1)."""
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    acc = _acc_dtype(x.dtype)
    f = lambda a: a.astype(acc, copy=False).reshape(shape)  # noqa: E731
    inv = f(scale) / np.sqrt(f(var) + np.asarray(epsilon, dtype=acc))
    return ((x.astype(acc, copy=False) - f(mean)) * inv + f(b)).astype(x.dtype)



# -- pooling --------------------------------------------------------------------------------

_POOL_ATTRS = {
    "ceil_mode": Attr.int(0),
    "dilations": Attr.ints(),
    "kernel_shape": Attr.ints(),
    "pads": Attr.ints(),
    "strides": Attr.ints(),
}


def _pool_geometry(opname: str, shape, *, ceil_mode, dilations, kernel_shape, pads, strides):
    """Output spatial sizes, and the extra right padding ceil mode needs for its last window."""
    nsp = len(shape) - 2
    out, extra = [], []
    for i in range(nsp):
        k, s, d = kernel_shape[i], strides[i], dilations[i]
        o = _window_out(opname, shape[2 + i], k, s, d, pads[i], pads[i + nsp], bool(ceil_mode))
        out.append(o)
        padded = shape[2 + i] + pads[i] + pads[i + nsp]
        extra.append(max(0, (o - 1) * s + (k - 1) * d + 1 - padded))
    return out, extra


def _infer_pool(opname: str, types_out: int):
    def infer(inputs, *, ceil_mode, dilations, kernel_shape, pads, strides, **_):
        x = inputs[0].type
        nsp = x.rank - 2
        _check_spatial(opname, x, nsp, kernel_shape=(kernel_shape, nsp), strides=(strides, nsp),
                       dilations=(dilations, nsp), pads=(pads, 2 * nsp))
        if any(p >= (k - 1) * d + 1 for p, k, d in
               zip(pads, kernel_shape * 2, dilations * 2, strict=True)):
            _fail(opname, f"pads {pads} must be smaller than the kernel extent")
        out, _ = _pool_geometry(opname, x.shape, ceil_mode=ceil_mode, dilations=dilations,
                                kernel_shape=kernel_shape, pads=pads, strides=strides)
        y = x.with_shape(x.shape[:2] + tuple(out))
        return [y, y.with_dtype(DType.I64)][:types_out]

    return infer


def _lowest(dt: np.dtype):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _max_pool_infer(inputs, *, storage_order, **kw):
    x = inputs[0].type
    if x.dtype.np.kind not in "fiu":
        _fail("MaxPool", f"input {x} must be float or int")
    return _infer_pool("MaxPool", 2)(inputs, **kw)


@op("MaxPool", outputs=(1, 2), infer=_max_pool_infer,
    attrs={**_POOL_ATTRS, "storage_order": Attr.int(0)})
def max_pool(x, *, ceil_mode, dilations, kernel_shape, pads, strides, storage_order):
    """Max over each window (padding never wins). Indices: the flat index of the first
    maximum in X, the spatial part row-major (storage_order=0) or column-major (1)."""
    n, c, *sp = x.shape
    geo = dict(dilations=dilations, kernel_shape=kernel_shape, pads=pads, strides=strides)
    out, extra = _pool_geometry("MaxPool", x.shape, ceil_mode=ceil_mode, **geo)
    npix = math.prod(sp)
    flat = np.arange(npix, dtype=np.int64).reshape(sp, order="F" if storage_order else "C")
    idx = _pad_spatial(np.broadcast_to(flat, x.shape), pads, -1, extra)
    xp = _pad_spatial(x, pads, _lowest(x.dtype), extra)
    best, best_i = None, None
    for v, vi in zip(_window_views(xp, kernel_shape, strides, dilations, out),
                     _window_views(idx, kernel_shape, strides, dilations, out), strict=True):
        if best is None:
            best, best_i = v.copy(), vi.copy()
        else:
            better = v > best
            best = np.where(better, v, best)
            best_i = np.where(better, vi, best_i)
    base = (np.arange(n * c, dtype=np.int64) * npix).reshape((n, c) + (1,) * len(sp))
    return best, best_i + base


def _avg_infer(inputs, *, count_include_pad, **kw):
    x = inputs[0].type
    if not x.dtype.is_float:
        _fail("AveragePool", f"input {x} must be float")
    return _infer_pool("AveragePool", 1)(inputs, **kw)


@op("AveragePool", infer=_avg_infer, attrs={**_POOL_ATTRS, "count_include_pad": Attr.int(0)})
def average_pool(x, *, ceil_mode, count_include_pad, dilations, kernel_shape, pads, strides):
    """Window sum / window count; the count includes the explicit pads when count_include_pad,
    never the extra cells a ceil-mode window hangs past them."""
    nsp = x.ndim - 2
    geo = dict(dilations=dilations, kernel_shape=kernel_shape, pads=pads, strides=strides)
    out, extra = _pool_geometry("AveragePool", x.shape, ceil_mode=ceil_mode, **geo)
    acc = _acc_dtype(x.dtype)
    xp = _pad_spatial(x.astype(acc, copy=False), pads, 0, extra)
    ones = np.ones((1, 1, *x.shape[2:]), dtype=acc)
    if count_include_pad:
        inside = _pad_spatial(_pad_spatial(ones, pads, 1), [0] * (2 * nsp), 0, extra)
    else:
        inside = _pad_spatial(ones, pads, 0, extra)
    total = sum(_window_views(xp, kernel_shape, strides, dilations, out))
    count = sum(_window_views(inside, kernel_shape, strides, dilations, out))
    return (total / count).astype(x.dtype)


def _infer_global_pool(opname: str):
    def infer(inputs):
        x = inputs[0].type
        if x.rank < 3:
            _fail(opname, f"input must be [N, C, spatial...], got {x}")
        return x.with_shape(x.shape[:2] + (1,) * (x.rank - 2))

    return infer


@op("GlobalAveragePool", infer=_infer_global_pool("GlobalAveragePool"))
def global_average_pool(x):
    axes = tuple(range(2, x.ndim))
    return np.mean(x, axis=axes, keepdims=True, dtype=_acc_dtype(x.dtype)).astype(x.dtype)


@op("GlobalMaxPool", infer=_infer_global_pool("GlobalMaxPool"))
def global_max_pool(x):
    return np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True)


# -- softmax and layer normalization ---------------------------------------------------------

def _axis(opname: str, axis: int, rank: int) -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        _fail(opname, f"axis {axis} is out of range for rank {rank}")
    return a


def _infer_softmax(opname: str):
    def infer(inputs, *, axis):
        x = inputs[0].type
        if not x.dtype.is_float:
            _fail(opname, f"input {x} must be float")
        _axis(opname, axis, x.rank)
        return x

    return infer


@op("Softmax", attrs={"axis": Attr.int(-1)}, infer=_infer_softmax("Softmax"))
def softmax(x, *, axis):
    """exp(x - max) / sum(exp(x - max)) along one axis (opset 13)."""
    a = _axis("Softmax", axis, x.ndim)
    e = np.exp(x - np.max(x, axis=a, keepdims=True))
    return (e / np.sum(e, axis=a, keepdims=True)).astype(x.dtype)


@op("LogSoftmax", attrs={"axis": Attr.int(-1)}, infer=_infer_softmax("LogSoftmax"))
def log_softmax(x, *, axis):
    """(x - max) - log(sum(exp(x - max))) along one axis (opset 13)."""
    a = _axis("LogSoftmax", axis, x.ndim)
    d = x - np.max(x, axis=a, keepdims=True)
    return (d - np.log(np.sum(np.exp(d), axis=a, keepdims=True))).astype(x.dtype)


@op("Hardmax", attrs={"axis": Attr.int(-1)}, infer=_infer_softmax("Hardmax"))
def hardmax(x, *, axis):
    """1 at the first maximum along one axis, 0 elsewhere (opset 13). NaNs as in onnxruntime,
    which scans with `v > best`: a NaN is skipped, and a row starting with NaN is all 0."""
    a = _axis("Hardmax", axis, x.ndim)
    first = np.take(x, [0], axis=a)
    idx = np.argmax(np.where(np.isnan(x), -np.inf, x), axis=a, keepdims=True)
    y = np.zeros_like(x)
    np.put_along_axis(y, idx, np.where(np.isnan(first), 0, 1).astype(x.dtype), axis=a)
    return y


def _infer_layer_norm(inputs, *, axis, epsilon, stash_type):
    x = inputs[0].type
    if not x.dtype.is_float:
        _fail("LayerNormalization", f"input {x} must be float")
    a = _axis("LayerNormalization", axis, x.rank)
    for v in inputs[1:]:
        if v is not None and (v.dtype != x.dtype or broadcast_shapes(x.shape[a:], v.shape)
                              != x.shape[a:]):
            _fail("LayerNormalization", f"scale/bias {v.type} must broadcast to the normalized "
                                        f"shape {list(x.shape[a:])} with X's dtype")
    stash = onnx_dtypes.from_onnx(stash_type)
    stats = TensorType(x.shape[:a] + (1,) * (x.rank - a), stash)
    return [x, stats, stats]


@op("LayerNormalization", inputs=(2, 3), outputs=(1, 3), infer=_infer_layer_norm,
    attrs={"axis": Attr.int(-1), "epsilon": Attr.float(1e-5), "stash_type": Attr.int(1)})
def layer_normalization(x, scale, b=None, *, axis, epsilon, stash_type):
    """Over axes [axis, rank): Y = (X - mean) * InvStdDev * scale + B, with
    InvStdDev = 1 / sqrt(var + epsilon), computed in the stash type."""
    st = onnx_dtypes.from_onnx(stash_type).np
    a = _axis("LayerNormalization", axis, x.ndim)
    axes = tuple(range(a, x.ndim))
    xs = x.astype(st)
    mean = np.mean(xs, axis=axes, keepdims=True)
    d = xs - mean
    inv = 1 / np.sqrt(np.mean(d * d, axis=axes, keepdims=True) + np.asarray(epsilon, st))
    y = (d * inv).astype(x.dtype) * scale
    if b is not None:
        y = y + b
    return y.astype(x.dtype), mean, inv


# -- Resize ---------------------------------------------------------------------------------

_RESIZE_MODES = ("nearest", "linear", "cubic")
_COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                "asymmetric", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")
_F = np.float32  # onnxruntime maps coordinates in float32; so do we, to pick the same pixels


def _given(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None or a.size == 0 else a


def resize_plan(shape, scales, sizes, *, axes, keep_aspect_ratio_policy):
    """Output shape and per-axis float32 scales from the `scales` or `sizes` input.

    scales: out = floor(in * scale). sizes: scale = out / in, or with a keep-aspect policy
    one common scale (min for not_larger, max for not_smaller) and out = round(in * scale).
    """
    rank = len(shape)
    ax = list(range(rank)) if axes is None else [_axis("Resize", a, rank) for a in axes]
    if len(set(ax)) != len(ax):
        _fail("Resize", f"axes {axes} repeat an axis")
    scales, sizes = _given(scales), _given(sizes)
    if (scales is None) == (sizes is None):
        _fail("Resize", "give exactly one of the 'scales' and 'sizes' inputs")
    given = scales if scales is not None else sizes
    if given.ndim != 1 or given.size != len(ax):
        _fail("Resize", f"scales/sizes {given.tolist()} need one value per resized axis {ax}")
    out, sc = list(shape), [_F(1)] * rank
    if scales is not None:
        for a, s in zip(ax, scales.astype(_F), strict=True):
            if s <= 0:
                _fail("Resize", f"scales {scales.tolist()} must be positive")
            out[a], sc[a] = int(np.floor(s * _F(shape[a]))), s
        return tuple(out), sc
    if keep_aspect_ratio_policy not in _ASPECT_POLICIES:
        _fail("Resize", f"keep_aspect_ratio_policy {keep_aspect_ratio_policy!r} is not one of "
                        f"{_ASPECT_POLICIES}")
    ratios = [_F(s) / _F(shape[a]) for a, s in zip(ax, sizes, strict=True)]
    if keep_aspect_ratio_policy == "stretch":
        for a, s, r in zip(ax, sizes, ratios, strict=True):
            out[a], sc[a] = int(s), r
        return tuple(out), sc
    r = min(ratios) if keep_aspect_ratio_policy == "not_larger" else max(ratios)
    for a in ax:  # roundf: halves away from zero
        out[a], sc[a] = int(np.floor(r * _F(shape[a]) + _F(0.5))), r
    return tuple(out), sc


def _resize_args(inputs, axes, keep_aspect_ratio_policy):
    scales = const_input(inputs, 2, "Resize's 'scales' input")
    sizes = const_input(inputs, 3, "Resize's 'sizes' input")
    return resize_plan(inputs[0].shape, scales, sizes, axes=axes,
                       keep_aspect_ratio_policy=keep_aspect_ratio_policy)


def _source_coords(x_out: np.ndarray, n_in: int, n_out: int, scale, mode: str, roi) -> np.ndarray:
    """Where output coordinates `x_out` fall in the input (ONNX coordinate_transformation_mode)."""
    one, half = _F(1), _F(0.5)
    if mode == "half_pixel":
        return (x_out + half) / scale - half
    if mode == "half_pixel_symmetric":  # onnxruntime takes the last steps in double
        adjustment = _F(n_out) / (scale * _F(n_in))
        offset = _F(n_in) / _F(2) * (one - adjustment)
        return (np.float64(offset) + (x_out + 0.5) / np.float64(scale) - 0.5).astype(_F)
    if mode == "pytorch_half_pixel":
        return (x_out + half) / scale - half if n_out > 1 else np.zeros_like(x_out)
    if mode == "align_corners":
        return x_out * _F(n_in - 1) / _F(n_out - 1) if n_out > 1 else np.zeros_like(x_out)
    if mode == "asymmetric":
        return x_out / scale
    start, end = _F(roi[0]), _F(roi[1])  # tf_crop_and_resize
    if n_out == 1:
        return np.full_like(x_out, 0.5 * np.float64(start + end) * (n_in - 1))
    return start * _F(n_in - 1) + x_out * (end - start) * _F(n_in - 1) / _F(n_out - 1)


def _nearest(src: np.ndarray, mode: str) -> np.ndarray:
    if mode == "floor":
        return np.floor(src)
    if mode == "ceil":
        return np.ceil(src)
    # A coordinate within 1e-6 of a half counts as a tie, as recent onnxruntime does: the
    # float32 mapping lands one ulp off x.5 as often as on it.
    tie = np.abs(src - np.floor(src) - _F(0.5)) <= _F(1e-6)
    rounded = np.sign(src) * np.floor(np.abs(src) + _F(0.5))
    return np.where(tie, np.floor(src) if mode == "round_prefer_floor" else np.ceil(src), rounded)


def _cubic_weights(t: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution weights of the 4 neighbours at offsets -1, 0, 1, 2."""
    a = _F(a)

    def near(d):  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def _resample_axis(x: np.ndarray, axis: int, src: np.ndarray, *, mode, nearest_mode,
                   cubic_coeff_a, exclude_outside) -> np.ndarray:
    """1-D resampling of `x` along `axis` at source coordinates `src` (one per output)."""
    n = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = len(src)
    if mode == "nearest":
        idx = np.clip(_nearest(src, nearest_mode), 0, n - 1).astype(np.int64)
        return np.take(x, idx, axis=axis)
    if mode == "linear":
        c = np.clip(src, 0, n - 1)
        i0 = np.minimum(np.floor(c).astype(np.int64), n - 1)
        i1 = np.minimum(i0 + 1, n - 1)
        w1 = (c - i0).astype(_F).reshape(shape)
        return np.take(x, i0, axis=axis) * (1 - w1) + np.take(x, i1, axis=axis) * w1
    base = np.floor(src).astype(np.int64)
    w = _cubic_weights((src - base).astype(_F), cubic_coeff_a)
    idx = base[:, None] + np.arange(-1, 3)
    if exclude_outside:
        w = np.where((idx >= 0) & (idx < n), w, 0)
        w = w / w.sum(axis=1, keepdims=True)
    idx = np.clip(idx, 0, n - 1)
    y = 0
    for k in range(4):
        y = y + np.take(x, idx[:, k], axis=axis) * w[:, k].astype(_F).reshape(shape)
    return y


def antialias_taps(n_in: int, n_out: int, scale, *, mode: str, coordinate_transformation_mode: str,
                   roi, cubic_coeff_a: float, exclude_outside: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Input indices [n_out, T] (edge-clamped) and float32 weights [n_out, T] of an antialiased
    linear or cubic pass along one axis, as the ONNX reference computes them (in float64).

    With s = min(scale, 1) the kernel K (triangle, or Keys' cubic) is stretched by 1/s: output
    o at source coordinate x = left + r (left integer, r in (0, 1]) takes the T = 2 - 2*start
    taps left + i, i in [start, 2 - start), start = floor(-support / s) + 1 (support 1 for
    linear, 2 for cubic), weighted K((i - r) * s) / sum. Taps past the edges repeat the edge
    pixel, or with exclude_outside get weight 0 before the weights are normalized again.
    """
    s = min(float(scale), 1.0)
    x = _source_coords(np.arange(n_out, dtype=_F), n_in, n_out, _F(scale),
                       coordinate_transformation_mode, roi).astype(np.float64)
    left = np.floor(x)
    ratio = x - left
    whole = ratio == 0  # the reference keeps the pixel left of an integer coordinate: r = 1
    left[whole] -= 1
    ratio[whole] = 1
    start = int(np.floor(-(1.0 if mode == "linear" else 2.0) / s) + 1)
    taps = np.arange(start, 2 - start)
    d = np.abs((taps[None, :] - ratio[:, None]) * s)
    if mode == "linear":
        w = np.clip(1 - d, 0, 1)
    else:
        a = float(cubic_coeff_a)
        w = np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                     np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0))
    w = w / w.sum(axis=1, keepdims=True)
    idx = left.astype(np.int64)[:, None] + taps[None, :]
    if exclude_outside:
        w = np.where((idx >= 0) & (idx < n_in), w, 0.0)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    return np.clip(idx, 0, n_in - 1), w.astype(_F)


def _antialiased(antialias: int, mode: str, scale) -> bool:
    """Whether an axis takes the antialiased (stretched-kernel) pass: downsampling only."""
    return bool(antialias) and mode != "nearest" and scale < 1


def _check_resize_modes(mode, coordinate_transformation_mode, nearest_mode, antialias, scales,
                        dtype: DType) -> None:
    for what, val, allowed in [("mode", mode, _RESIZE_MODES),
                               ("coordinate_transformation_mode",
                                coordinate_transformation_mode, _COORD_MODES),
                               ("nearest_mode", nearest_mode, _NEAREST_MODES)]:
        if val not in allowed:
            _fail("Resize", f"{what} {val!r} is not one of {allowed}")
    if mode != "nearest" and dtype != DType.F32:
        _fail("Resize", f"mode {mode!r} needs a float32 input, got {dtype}")


_RESIZE_ATTRS = {
    "antialias": Attr.int(0),
    "axes": Attr.ints(None),
    "coordinate_transformation_mode": Attr.str("half_pixel"),
    "cubic_coeff_a": Attr.float(-0.75),
    "exclude_outside": Attr.int(0),
    "extrapolation_value": Attr.float(0.0),
    "keep_aspect_ratio_policy": Attr.str("stretch"),
    "mode": Attr.str("nearest"),
    "nearest_mode": Attr.str("round_prefer_floor"),
}


def _infer_resize(inputs, *, antialias, axes, coordinate_transformation_mode, mode,
                  nearest_mode, keep_aspect_ratio_policy, **_):
    x = inputs[0].type
    out, scales = _resize_args(inputs, axes, keep_aspect_ratio_policy)
    _check_resize_modes(mode, coordinate_transformation_mode, nearest_mode, antialias, scales,
                        x.dtype)
    if coordinate_transformation_mode == "tf_crop_and_resize":
        roi = const_input(inputs, 1, "Resize's 'roi' input (tf_crop_and_resize)")
        n = x.rank if axes is None else len(axes)
        if roi is None or roi.size != 2 * n:
            _fail("Resize", f"tf_crop_and_resize needs a roi of {2 * n} values")
    return x.with_shape(out)


@op("Resize", inputs=(1, 4), attrs=_RESIZE_ATTRS, infer=_infer_resize)
def resize(x, roi=None, scales=None, sizes=None, *, antialias, axes,
           coordinate_transformation_mode, cubic_coeff_a, exclude_outside, extrapolation_value,
           keep_aspect_ratio_policy, mode, nearest_mode):
    """Separable N-D resampling: one 1-D pass per resized axis (nearest, N-linear or cubic),
    each output coordinate mapped back by coordinate_transformation_mode."""
    out, sc = resize_plan(x.shape, scales, sizes, axes=axes,
                          keep_aspect_ratio_policy=keep_aspect_ratio_policy)
    rank = x.ndim
    ax = list(range(rank)) if axes is None else [_axis("Resize", a, rank) for a in axes]
    rois = [(0.0, 1.0)] * rank
    if coordinate_transformation_mode == "tf_crop_and_resize":
        flat = roi.astype(np.float64).reshape(-1)
        for i, a in enumerate(ax):
            rois[a] = (flat[i], flat[i + len(ax)])
    if out == x.shape:  # onnxruntime copies the input then, whatever the scales say
        return x.copy()
    y = x.astype(_F) if mode != "nearest" else x
    outside = np.zeros((1,) * rank, dtype=bool)
    for a in range(rank):
        if sc[a] == 1:  # onnxruntime maps such an axis one to one, whatever its roi says
            continue
        src = _source_coords(np.arange(out[a], dtype=_F), x.shape[a], out[a], sc[a],
                             coordinate_transformation_mode, rois[a])
        if _antialiased(antialias, mode, sc[a]):
            idx, w = antialias_taps(x.shape[a], out[a], sc[a], mode=mode,
                                    coordinate_transformation_mode=coordinate_transformation_mode,
                                    roi=rois[a], cubic_coeff_a=cubic_coeff_a,
                                    exclude_outside=exclude_outside)
            shape = [1] * rank
            shape[a] = out[a]
            acc = None  # tap by tap, in the kernel's order
            for k in range(idx.shape[1]):
                term = np.take(y, idx[:, k], axis=a) * w[:, k].reshape(shape)
                acc = term if acc is None else acc + term
            y = acc
        else:
            y = _resample_axis(y, a, src, mode=mode, nearest_mode=nearest_mode,
                               cubic_coeff_a=cubic_coeff_a, exclude_outside=exclude_outside)
        if coordinate_transformation_mode == "tf_crop_and_resize":
            shape = [1] * rank
            shape[a] = out[a]
            outside = outside | ((src < 0) | (src > x.shape[a] - 1)).reshape(shape)
    if outside.any():
        y = np.where(outside, np.asarray(extrapolation_value, y.dtype), y)
    return np.asarray(y).astype(x.dtype)
