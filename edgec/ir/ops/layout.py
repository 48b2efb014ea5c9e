"""Ops on channel-blocked (NCHWc) tensors, made by the `layout-nchwc` pass.

A blocked tensor of a 4-D NCHW tensor with C channels and block b has shape
[N, ceil(C/b), H, W, b]: element [n, c, h, w] lives at [n, c // b, h, w, c % b], and the
padding channels c >= C hold zeros (or values a zero weight multiplies). Vector code then
reads b channels of one pixel as one register.

    ReorderToBlocked(X){block, shift}     NCHW -> NCHWc (int8 + 128 as uint8 with shift 128)
    ReorderFromBlocked(X){channels, shift}  NCHWc -> NCHW (the first `channels`; shift -128
                                          takes uint8 back to int8)
    BlockedConv(X, W, B?, Z?){Conv attrs, activation, channels, block, blocked_input}
        = block(act(Conv(X', W) + B + Z')), X' = unblock(X) (or X itself, NCHW, when
          blocked_input = 0), Z' = unblock(Z); W stays [M, C/group, KH, KW]
    BlockedPool(X){mode, kernel_shape, strides, pads, count_include_pad, channels}
        = block(MaxPool / AveragePool of unblock(X)); kernel_shape [] is a global pool

Integer (uint8) blocked tensors, the layout of quantized convolutional regions:

    BlockedPad(X, V){pads}                X's planes padded with the scalar V ([top, left,
                                          bottom, right]), the zero point a conv pads with
    BlockedQLinearConv(X, sx, zx, W, sw, zw, sy, zy, B?){Conv attrs, channels, block, wenc,
        wshape, rq_mult, rq_shift} = block(QLinearConv(unblock(X), ...)), padding channels
          holding zy; X's block (its last dim) may differ from the output's: 4 for a stem of 3
          channels. With `wenc` (set by the pack-weights pass) W is the centred weight of
          shape `wshape` stored as the kernel reads it (ir/encodings.py) and zw is absent.
          With `rq_shift` (set by the fixed-point pass) the sums are requantized in fixed
          point, sat(round(acc * rq_mult / 2^rq_shift) + zy) rounded half up from the exact
          product (ops/quant.py requantize_fixed), not through float32 as QLinearConv does
    BlockedQLinearConv(..., B?, R, sr, zr, sc, zc){..., add_mult, add_shift}: with a residual
          R (set by the fuse-residual pass): the conv's result, sy and zy, added to R as the
          fixed-point QLinearAdd(y, sy, zy, R, sr, zr, sc, zc){rq_mult=add_mult,
          rq_shift=add_shift} computes it, in the same kernel; the output is the sum's
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...errors import ShapeError
from ..dtypes import DType
from ..encodings import QConvWeights, decode_qconv, encoded_size
from ..registry import Attr, get_op, op
from ..types import QuantParams, TensorType
from . import (
    fused,  # noqa: F401  (FusedConv must be registered first)
    quant,  # noqa: F401  (QLinearConv too)
)
from .quant import FIXED_SHIFTS, qconv_sums, requantize_fixed

INT8 = (DType.U8, DType.I8)


def blocked_shape(shape, block: int) -> tuple[int, ...]:
    n, c, *sp = shape
    return (n, -(-c // block), *sp, block)


def to_blocked(x: np.ndarray, block: int, fill=0) -> np.ndarray:
    n, c, *sp = x.shape
    cb = -(-c // block)
    pad = np.full((n, cb * block, *sp), fill, x.dtype)
    pad[:, :c] = x
    return np.ascontiguousarray(np.moveaxis(pad.reshape(n, cb, block, *sp), 2, -1))


def from_blocked(x: np.ndarray, channels: int) -> np.ndarray:
    n, cb, *sp, b = x.shape
    return np.ascontiguousarray(np.moveaxis(x, -1, 2).reshape(n, cb * b, *sp)[:, :channels])


def _check_blocked(opname: str, t: TensorType, channels: int) -> int:
    if t.rank != 5 or not (t.dtype.is_float or t.dtype in INT8):
        raise ShapeError(f"{opname}: input {t} must be a blocked float or 8-bit tensor "
                         "[N, C/b, H, W, b]")
    block = t.shape[-1]
    if -(-channels // block) != t.shape[1]:
        raise ShapeError(f"{opname}: {channels} channels do not fill {t.shape[1]} blocks of "
                         f"{block}")
    return block


# shift: int8 activations run blocked as uint8 x + 128 (their zero points + 128 too), the
# form the u8 x s8 dot products take; ReorderToBlocked{shift=128} and
# ReorderFromBlocked{shift=-128} convert at the borders
SHIFTED = {(DType.I8, 128): DType.U8, (DType.U8, -128): DType.I8}


def shifted_dtype(opname: str, dtype: DType, shift: int) -> DType:
    if shift == 0:
        return dtype
    if (dtype, shift) not in SHIFTED:
        raise ShapeError(f"{opname}: shift {shift} applies to int8 (128) or uint8 (-128) "
                         f"values, not {dtype}")
    return SHIFTED[dtype, shift]


def _shift(x: np.ndarray, shift: int, dtype: DType) -> np.ndarray:
    return x if shift == 0 else (x.astype(np.int32) + shift).astype(dtype.np)


def shifted_quant(q: QuantParams | None, shift: int) -> QuantParams | None:
    """The parameters of a value shifted by `shift` (its zero points move with it)."""
    if q is None or shift == 0:
        return q
    return replace(q, zero_point=tuple(z + shift for z in q.zero_point))


@op("ReorderToBlocked", attrs={"block": Attr.int(), "shift": Attr.int(0)},
    infer=lambda inputs, *, block, shift: TensorType(
        blocked_shape(inputs[0].shape, block),
        shifted_dtype("ReorderToBlocked", inputs[0].dtype, shift),
        shifted_quant(inputs[0].type.quant, shift)))
def reorder_to_blocked(x, *, block, shift=0):
    out = shifted_dtype("ReorderToBlocked", DType.from_numpy(x.dtype), shift)
    return to_blocked(_shift(x, shift, out), block)


def _infer_from_blocked(inputs, *, channels, shift):
    t = inputs[0].type
    _check_blocked("ReorderFromBlocked", t, channels)
    return TensorType((t.shape[0], channels, *t.shape[2:-1]),
                      shifted_dtype("ReorderFromBlocked", t.dtype, shift),
                      shifted_quant(t.quant, shift))


@op("ReorderFromBlocked", attrs={"channels": Attr.int(), "shift": Attr.int(0)},
    infer=_infer_from_blocked)
def reorder_from_blocked(x, *, channels, shift=0):
    out = shifted_dtype("ReorderFromBlocked", DType.from_numpy(x.dtype), shift)
    return _shift(from_blocked(x, channels), shift, out)


_FUSED_CONV = get_op("FusedConv")
_LAYOUT_ATTRS = {"channels": Attr.int(), "block": Attr.int(), "blocked_input": Attr.int(1)}


def _nchw(x_type: TensorType, channels: int, blocked_input: int, block: int) -> TensorType:
    if not blocked_input:
        return x_type
    _check_blocked("BlockedConv", x_type, channels)
    if x_type.shape[-1] != block:
        raise ShapeError(f"BlockedConv: input block {x_type.shape[-1]} is not {block}")
    return TensorType((x_type.shape[0], channels, *x_type.shape[2:-1]), x_type.dtype)


class _Typed:
    """A stand-in input for shape inference: the NCHW view of a blocked value."""

    def __init__(self, t: TensorType, const=None):
        self.type, self.const = t, const
        self.shape, self.dtype = t.shape, t.dtype


def _infer_blocked_conv(inputs, *, channels, block, blocked_input, **attrs):
    x = _nchw(inputs[0].type, channels, blocked_input, block)
    base = [_Typed(x), *inputs[1:3]]
    out = _FUSED_CONV.infer(base, **attrs)
    yb = TensorType(blocked_shape(out.shape, block), out.dtype)
    if len(inputs) > 3 and inputs[3] is not None and inputs[3].type != yb:
        raise ShapeError(f"BlockedConv: residual {inputs[3].type} must be {yb}")
    return yb


@op("BlockedConv", inputs=(2, 4), attrs={**_FUSED_CONV.attrs, **_LAYOUT_ATTRS},
    infer=_infer_blocked_conv)
def blocked_conv(x, w, b=None, z=None, *, channels, block, blocked_input, **attrs):
    xn = from_blocked(x, channels) if blocked_input else x
    zn = None if z is None else from_blocked(z, w.shape[0])
    return to_blocked(_FUSED_CONV.reference(xn, w, b, zn, **attrs), block)


def _pool_attrs(kernel_shape, strides, pads) -> dict:
    return {"kernel_shape": list(kernel_shape), "strides": list(strides), "pads": list(pads),
            "dilations": [1] * len(kernel_shape), "ceil_mode": 0}


def _infer_blocked_pool(inputs, *, mode, kernel_shape, strides, pads, count_include_pad,
                        channels):
    t = inputs[0].type
    block = _check_blocked("BlockedPool", t, channels)
    if mode not in ("max", "avg"):
        raise ShapeError(f"BlockedPool: mode {mode!r} must be 'max' or 'avg'")
    x = TensorType((t.shape[0], channels, *t.shape[2:-1]), t.dtype)
    if not kernel_shape:
        return TensorType((t.shape[0], t.shape[1], 1, 1, block), t.dtype,
                          t.quant if mode == "max" else None)
    if mode == "max":
        out = get_op("MaxPool").infer([_Typed(x)], storage_order=0,
                                      **_pool_attrs(kernel_shape, strides, pads))[0]
    else:
        out = get_op("AveragePool").infer([_Typed(x)], count_include_pad=count_include_pad,
                                          **_pool_attrs(kernel_shape, strides, pads))[0]
    return TensorType(blocked_shape(out.shape, block), t.dtype,
                      t.quant if mode == "max" else None)


@op("BlockedPool", infer=_infer_blocked_pool, attrs={
    "mode": Attr.str(), "kernel_shape": Attr.ints([]), "strides": Attr.ints([]),
    "pads": Attr.ints([]), "count_include_pad": Attr.int(0), "channels": Attr.int()})
def blocked_pool(x, *, mode, kernel_shape, strides, pads, count_include_pad, channels):
    xn = from_blocked(x, channels)
    if not kernel_shape:
        y = xn.max(axis=(2, 3), keepdims=True) if mode == "max" else \
            xn.mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(x.dtype)
    elif mode == "max":
        y = get_op("MaxPool").reference(xn, storage_order=0,
                                        **_pool_attrs(kernel_shape, strides, pads))
        y = y[0] if isinstance(y, tuple | list) else y
    else:
        y = get_op("AveragePool").reference(xn, count_include_pad=count_include_pad,
                                            **_pool_attrs(kernel_shape, strides, pads))
    return to_blocked(y, x.shape[-1])


# -- integer ops --------------------------------------------------------------------------------

def _infer_blocked_pad(inputs, *, pads):
    t, v = inputs[0].type, inputs[1].type
    if t.rank != 5 or len(pads) != 4 or min(pads) < 0:
        raise ShapeError(f"BlockedPad: input {t} must be blocked [N, C/b, H, W, b] and pads "
                         f"{list(pads)} four non-negative [top, left, bottom, right]")
    if v.numel != 1 or v.dtype != t.dtype:
        raise ShapeError(f"BlockedPad: the value {v} must be one {t.dtype}")
    n, cb, h, w, b = t.shape
    return TensorType((n, cb, h + pads[0] + pads[2], w + pads[1] + pads[3], b), t.dtype,
                      t.quant)


@op("BlockedPad", inputs=(2, 2), attrs={"pads": Attr.ints()}, infer=_infer_blocked_pad)
def blocked_pad(x, v, *, pads):
    t, left, b, r = pads
    return np.pad(x, ((0, 0), (0, 0), (t, b), (left, r), (0, 0)), constant_values=v.reshape(()))


_QLINEAR_CONV = get_op("QLinearConv")
_QCONV_ATTRS = {k: a for k, a in _QLINEAR_CONV.attrs.items() if not k.startswith("rq_")}
_QCONV_ATTRS |= {"channels": Attr.int(), "block": Attr.int(), "wenc": Attr.str(""),
                 "wshape": Attr.ints([]), "rq_mult": Attr.ints([]), "rq_shift": Attr.int(0)}
_QCONV_ATTRS |= {"add_mult": Attr.ints([]), "add_shift": Attr.int(0)}


def _weights_type(w, zw, wenc: str, wshape) -> _Typed:
    """The logical weight [M, C/group, KH, KW] of a BlockedQLinearConv whose `w` is encoded
    (`wenc`, ir/encodings.py): 1-D int8 of the encoding's size, centred (no zero point)."""
    enc = QConvWeights.parse(wenc)
    if len(wshape) != 4 or w.type.rank != 1 or w.dtype is not DType.I8 or zw is not None:
        raise ShapeError(f"BlockedQLinearConv: weights encoded as '{wenc}' must be 1-D int8 "
                         f"with wshape [M, C/group, KH, KW] and no zero point, not {w.type} "
                         f"with wshape {list(wshape)}")
    if w.type.numel != encoded_size(enc, wshape):
        raise ShapeError(f"BlockedQLinearConv: weights encoded as '{wenc}' for {list(wshape)} "
                         f"take {encoded_size(enc, wshape)} bytes, not {w.type.numel}")
    return _Typed(TensorType(tuple(wshape), DType.I8))


def _check_fixed_point(m: int, rq_mult, rq_shift) -> None:
    lo, hi = FIXED_SHIFTS
    if not rq_shift and not rq_mult:
        return
    if not lo <= rq_shift <= hi or len(rq_mult) not in (1, m) or \
            not all(0 <= q < 2**31 for q in rq_mult):
        raise ShapeError(f"BlockedQLinearConv: fixed-point requantization needs rq_shift in "
                         f"[{lo}, {hi}] and rq_mult one or {m} values in [0, 2^31); got "
                         f"rq_shift={rq_shift} and {len(rq_mult)} values of rq_mult")


def _infer_blocked_qconv(inputs, *, channels, block, wenc, wshape, rq_mult, rq_shift,
                         add_mult, add_shift, **attrs):
    t = inputs[0].type
    _check_blocked("BlockedQLinearConv", t, channels)
    x = TensorType((t.shape[0], channels, *t.shape[2:-1]), t.dtype)
    ins = [_Typed(x), *inputs[1:9]]
    if wenc:
        ins[3] = _weights_type(inputs[3], inputs[5], wenc, wshape)
    _check_fixed_point(ins[3].type.shape[0], rq_mult, rq_shift)
    out = _QLINEAR_CONV.infer(ins, **attrs)
    out = TensorType(blocked_shape(out.shape, block), out.dtype, out.quant)
    if len(inputs) <= 9 or inputs[9] is None:
        if add_shift or add_mult:
            raise ShapeError("BlockedQLinearConv: add_mult and add_shift need a residual R")
        return out
    if len(inputs) < 13 or inputs[10] is None or inputs[12] is None:
        raise ShapeError("BlockedQLinearConv: a residual R needs its scale sr and the sum's "
                         "scale sc (inputs 10 and 12)")
    r = inputs[9].type
    if r.shape != out.shape or r.dtype is not out.dtype:
        raise ShapeError(f"BlockedQLinearConv: the residual {r} must be the output's "
                         f"{out.dtype} of shape {list(out.shape)}")
    rest = [*inputs[9:14]] + [None] * (14 - len(inputs))
    add = get_op("QLinearAdd").infer([_Typed(out), inputs[6], inputs[7], *rest],
                                      rq_mult=add_mult, rq_shift=add_shift)
    return TensorType(out.shape, add.dtype, add.quant)


@op("BlockedQLinearConv", inputs=(8, 14), attrs=_QCONV_ATTRS, infer=_infer_blocked_qconv)
def blocked_qlinear_conv(x, sx, zx, w, sw, zw, sy, zy, b=None, r=None, sr=None, zr=None,
                         sc=None, zc=None, *, channels, block, wenc="", wshape=(), rq_mult=(),
                         rq_shift=0, add_mult=(), add_shift=0, **attrs):
    if wenc:  # centred weights, stored as the kernel reads them
        w = decode_qconv(w, QConvWeights.parse(wenc), wshape).astype(np.int8)
    xn = from_blocked(x, channels)
    if rq_shift:  # fixed-point requantization (ops/quant.py requantize_fixed)
        acc = qconv_sums(xn, zx, w, zw, b, **attrs)
        q = np.asarray(rq_mult, np.int64)
        q = q.reshape(-1, 1, 1) if q.size > 1 else q.reshape(())
        z = 0 if zy is None else zy.reshape(())
        y = requantize_fixed(acc, q, rq_shift, z, DType.from_numpy(
            zy.dtype if zy is not None else x.dtype))
    else:
        y = _QLINEAR_CONV.reference(xn, sx, zx, w, sw, zw, sy, zy, b, **attrs)
    y = to_blocked(y, block, 0 if zy is None else zy.reshape(()))
    if r is None:
        return y
    return get_op("QLinearAdd").reference(y, sy, zy, r, sr, zr, sc, zc, rq_mult=add_mult,
                                          rq_shift=add_shift)
