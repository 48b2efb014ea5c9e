"""Quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, the integer
products MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv, and the two ops QDQ graphs are
fused into, QGemm and QLinearAdd (onnxruntime's com.microsoft contrib ops of those names).

Affine quantization: real = scale * (q - zero_point). Quantize: q = sat(rint(x / scale) + zp),
rint rounding halves to even, sat clamping to the integer type's range (NaN goes to its
minimum, as onnxruntime's kernels do). The integer products accumulate
acc = sum (a - za)(b - zb) (+ an int32 bias) exactly in int32 (int64 where an operand has 16
bits: W8A16, below) and requantize
y = sat(rint(acc * M) + zy) with M = (sa * sb) / sy. All float arithmetic is float32 (float16
scales are widened first), as in onnxruntime; the ONNX reference implementation computes
acc * M in float64 (and M in float16 for float16 scales), which can differ by one step.
Blocked convolutions can requantize in fixed point instead (requantize_fixed, below).

W8A16: QLinearConv, QLinearMatMul, QGemm and QLinearAdd also take and give 16-bit activations
(uint16/int16 a or x, y) against 8-bit weights; |a - za| <= 65535, so one product needs 24
bits and a sum of K of them can pass int32 (the kernels bound each node's sums from its
weights and keep int32 where they fit: lowering/kernels/quant_common.py accumulator_type).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ShapeError
from .. import onnx_dtypes
from ..dtypes import SUB_BYTE, DType, int_range
from ..encodings import GemmWeights, decode_gemm
from ..registry import Attr, broadcast_shapes, get_op, op
from ..types import QuantParams, TensorType
from .nn import _check_spatial, _window_out, conv_nd, gemm_dims, matmul_shape

F32 = np.float32

# Integer types a tensor can be quantized to, with their ranges; DequantizeLinear also reads
# int32 (quantized biases).
QUANT_RANGES: dict[DType, tuple[int, int]] = {
    DType.U8: (0, 255), DType.I8: (-128, 127), DType.U16: (0, 65535),
    DType.I16: (-32768, 32767),
} | {t: int_range(t) for t in SUB_BYTE}  # int4 and below, one value per byte
DEQUANT_TYPES = (*QUANT_RANGES, DType.I32)
INT8 = (DType.U8, DType.I8)
INT16 = (DType.U16, DType.I16)
# what the integer ops that requantize read and write as activations (weights: INT8)
ACTIVATION_TYPES = INT8 + INT16
SCALE_TYPES = (DType.F32, DType.F16)


def _fail(opname: str, msg: str):
    raise ShapeError(f"{opname}: {msg}")


def _opt(inputs, i: int):
    return inputs[i] if i < len(inputs) else None


def _check_scale(opname: str, what: str, s: TensorType) -> None:
    if s.dtype not in SCALE_TYPES:
        _fail(opname, f"{what} {s} must be float32 or float16")


def _check_zero_point(opname: str, what: str, z: TensorType | None, s: TensorType | None,
                      dtype: DType | None = None) -> None:
    if z is None:
        return
    if dtype is not None and z.dtype != dtype:
        _fail(opname, f"{what} {z} must have the dtype of the tensor it describes ({dtype})")
    if s is not None and z.shape != s.shape and not (z.numel == 1 and s.numel == 1):
        _fail(opname, f"{what} {z} must have the shape of its scale {s}")


# -- how a scale maps onto the tensor it describes ----------------------------------------------

@dataclass(frozen=True)
class QuantLayout:
    """Which scale (and zero point) element each element of a tensor uses: one for the whole
    tensor (`axis` None), one per index along `axis` (`block` 0), or one per `block`
    consecutive indices along `axis` (blocked quantization: the scale has the tensor's shape
    but ceil(n / block) along `axis`)."""

    axis: int | None
    block: int = 0

    def expand(self, p: np.ndarray, shape) -> np.ndarray:
        """`p` (a scale or zero point) broadcastable against a tensor of `shape`."""
        if self.axis is None:
            return p.reshape(())
        if not self.block:
            dims = [1] * len(shape)
            dims[self.axis] = p.size
            return p.reshape(dims)
        p = np.repeat(p, self.block, axis=self.axis)
        return np.take(p, np.arange(shape[self.axis]), axis=self.axis)


def quant_layout(opname: str, x: TensorType, s: TensorType, axis: int,
                 block_size: int) -> QuantLayout:
    """The layout of scale `s` for tensor `x` (ShapeError if they do not fit)."""
    r = x.rank
    if block_size < 0:
        _fail(opname, f"block_size must be >= 0, got {block_size}")
    if s.numel == 1 and s.rank <= 1 and not block_size:
        return QuantLayout(None)
    if not -r <= axis < r:
        _fail(opname, f"axis {axis} is out of range for input {x}")
    axis %= r
    n = x.shape[axis]
    if not block_size:
        if s.rank != 1 or s.shape[0] != n:
            _fail(opname, f"a per-axis scale must be 1-D of length {n} (dim {axis} of input "
                          f"{x}); got {s}")
        return QuantLayout(axis)
    want = tuple(-(-d // block_size) if i == axis else d for i, d in enumerate(x.shape))
    if s.shape != want:
        _fail(opname, f"a blocked scale (block_size={block_size}, axis={axis}) for input {x} "
                      f"must have shape {list(want)}; got {s}")
    return QuantLayout(axis, block_size)


# -- the arithmetic shared by the references ----------------------------------------------------

def round_saturate(v: np.ndarray, zp, dtype: DType) -> np.ndarray:
    """sat(rint(v) + zp) for float32 `v`: v is clamped to [qmin - zp, qmax - zp] first (a NaN
    to the lower bound, as onnxruntime's max(v, lo) does), rounded half to even, shifted."""
    lo, hi = QUANT_RANGES[dtype]
    zp = np.asarray(zp, dtype=np.int32)
    lo_f, hi_f = (lo - zp).astype(F32), (hi - zp).astype(F32)
    v = np.where(v > lo_f, v, lo_f)
    v = np.where(v < hi_f, v, hi_f)
    return (np.rint(v).astype(np.int32) + zp).astype(dtype.np)


def _f32(a) -> np.ndarray:
    return np.asarray(a).astype(F32)


def _i32(a) -> np.ndarray:
    return np.asarray(a).astype(np.int32)


def sums_type(*operands) -> type:
    """The integer type the reference sums products of `operands` in: int32, int64 where one
    has 16 bits (W8A16: the sums can pass int32; int64 holds them exactly)."""
    return np.int64 if any(np.asarray(x).dtype.itemsize >= 2 for x in operands
                           if x is not None) else np.int32


def _zero_or(z) -> np.ndarray:
    return np.zeros((), np.int32) if z is None else _i32(z)


def requantize_multiplier(sa, sb, sy) -> np.ndarray:
    """M = (sa * sb) / sy in float32, in that order (onnxruntime's output scale)."""
    return (_f32(sa) * _f32(sb)) / _f32(sy)


# Fixed-point requantization: M = q / 2^s with an int32 q and 33 <= s <= 62, applied to an
# int32 sum v as round(v * q / 2^s) from the exact 64-bit product, rounded half toward
# +infinity (kernel_ir.mulshift), then shifted by the zero point and saturated. A float32 M
# whose exponent is within 7 of the largest multiplier's is represented exactly (q takes its
# 24-bit mantissa), so this differs from the float arithmetic above only where that rounds:
# the float product v * M itself (|v| > 2^24) and ties (half up here, half to even there).
FIXED_SHIFTS = (33, 58)  # (the tiles that sum 16 * w add 4 to the shift: at most 62)
FIXED_MIN_BITS = 15  # the least significant bits a channel's q keeps (else float is kept)


def fixed_point_multipliers(mult: np.ndarray, min_shift: int = FIXED_SHIFTS[0]
                            ) -> tuple[np.ndarray, int] | None:
    """(q int32, s) with q / 2^s = mult (float32 multipliers, one or per channel) to at
    least FIXED_MIN_BITS significant bits, one shift for all channels; None where that
    cannot be: a multiplier not finite, negative, >= 0.25 (s would be under 33, or under
    `min_shift` for an op whose sums are small enough to be shifted left first) or so small
    that s would pass 58, or channels whose multipliers span more than 2^16."""
    m = np.asarray(mult, np.float64).reshape(-1)
    if m.size == 0 or not np.isfinite(m).all() or (m < 0).any() or m.max() == 0:
        return None
    _, e = np.frexp(m.max())  # max = f * 2^e, 0.5 <= f < 1
    s = 31 - int(e)
    if not min_shift <= s <= FIXED_SHIFTS[1]:
        return None
    q = np.rint(np.ldexp(m, s))
    if q.max() >= 2**31 or ((q > 0) & (q < 2**FIXED_MIN_BITS)).any() or \
            ((m > 0) & (q == 0)).any():
        return None
    return q.astype(np.int32), s


def requantize_fixed(acc: np.ndarray, q, s: int, zp, dtype: DType) -> np.ndarray:
    """sat(round(acc * q / 2^s) + zp), rounded half toward +infinity from the exact product
    (q broadcasts against acc: one value or one per channel on its axis)."""
    v = (np.asarray(acc, np.int64) * np.asarray(q, np.int64) + (1 << (s - 1))) >> s
    lo, hi = QUANT_RANGES[dtype]
    return np.clip(v + np.asarray(zp, np.int64), lo, hi).astype(dtype.np)


# -- QuantizeLinear / DequantizeLinear ---------------------------------------------------------

def _quantize_dtype(opname: str, z: DType | None, output_dtype: int) -> DType:
    out = DType.U8
    if output_dtype:
        out = onnx_dtypes.from_onnx(output_dtype)
        if z is not None and z not in (out, out.storage):  # (an int2 zero point in its int8)
            _fail(opname, f"output_dtype {out} differs from the zero point's dtype {z}")
    elif z is not None:
        out = z
    if out not in QUANT_RANGES:
        _fail(opname, f"cannot quantize to {out}; edgec quantizes to "
                      f"{', '.join(map(str, QUANT_RANGES))}")
    return out


def typed_quant(scale, zero_point, axis: int | None = None) -> QuantParams | None:
    """The QuantParams of a value quantized with these scale and zero-point inputs (Values),
    when they are constants (None otherwise: the parameters are known only at run time)."""
    if scale is None or getattr(scale, "const", None) is None:
        return None
    if zero_point is not None and getattr(zero_point, "const", None) is None:
        return None
    return QuantParams.of(scale.const, None if zero_point is None else zero_point.const, axis)


def _infer_quantize(inputs, *, axis, block_size, output_dtype, saturate):
    x, s, z = inputs[0].type, inputs[1].type, _opt(inputs, 2)
    z = z.type if z is not None else None
    if x.dtype not in SCALE_TYPES:
        _fail("QuantizeLinear", f"input {x} must be float32 or float16")
    _check_scale("QuantizeLinear", "y_scale", s)
    out = _quantize_dtype("QuantizeLinear", z and z.dtype, output_dtype)
    quant_layout("QuantizeLinear", x, s, axis, block_size)
    _check_zero_point("QuantizeLinear", "y_zero_point", z, s)
    q = typed_quant(inputs[1], _opt(inputs, 2), axis % max(x.rank, 1)) if not block_size \
        else None
    return TensorType(x.shape, out, q)


@op("QuantizeLinear", inputs=(2, 3), infer=_infer_quantize, attrs={
    "axis": Attr.int(1), "block_size": Attr.int(0), "output_dtype": Attr.int(0),
    "saturate": Attr.int(1)})
def quantize_linear(x, y_scale, y_zero_point=None, *, axis, block_size, output_dtype,
                    saturate):
    """y = sat(rint(x / y_scale) + y_zero_point); `saturate` concerns float8 outputs only."""
    z = None if y_zero_point is None else DType.from_numpy(y_zero_point.dtype)
    out = _quantize_dtype("QuantizeLinear", z, output_dtype)
    lay = quant_layout("QuantizeLinear", TensorType(x.shape, DType.from_numpy(x.dtype)),
                       TensorType(y_scale.shape, DType.from_numpy(y_scale.dtype)), axis,
                       block_size)
    with np.errstate(all="ignore"):
        v = _f32(x) / lay.expand(_f32(y_scale), x.shape)
    zp = _zero_or(None) if y_zero_point is None else lay.expand(_i32(y_zero_point), x.shape)
    return round_saturate(v, zp, out)


def _infer_dequantize(inputs, *, axis, block_size, output_dtype):
    x, s, z = inputs[0].type, inputs[1].type, _opt(inputs, 2)
    if x.dtype not in DEQUANT_TYPES:
        _fail("DequantizeLinear", f"input {x} must be one of "
                                  f"{', '.join(map(str, DEQUANT_TYPES))}")
    _check_scale("DequantizeLinear", "x_scale", s)
    quant_layout("DequantizeLinear", x, s, axis, block_size)
    _check_zero_point("DequantizeLinear", "x_zero_point", z.type if z is not None else None, s,
                      x.dtype)
    out = onnx_dtypes.from_onnx(output_dtype) if output_dtype else s.dtype
    if out not in SCALE_TYPES:
        _fail("DequantizeLinear", f"output_dtype {out} must be float32 or float16")
    return TensorType(x.shape, out)


@op("DequantizeLinear", inputs=(2, 3), infer=_infer_dequantize, attrs={
    "axis": Attr.int(1), "block_size": Attr.int(0), "output_dtype": Attr.int(0)})
def dequantize_linear(x, x_scale, x_zero_point=None, *, axis, block_size, output_dtype):
    """y = (x - x_zero_point) * x_scale: the difference in int32, converted to float32."""
    lay = quant_layout("DequantizeLinear", TensorType(x.shape, DType.from_numpy(x.dtype)),
                       TensorType(x_scale.shape, DType.from_numpy(x_scale.dtype)), axis,
                       block_size)
    d = _i32(x)
    if x_zero_point is not None:
        d = d - lay.expand(_i32(x_zero_point), x.shape)
    y = d.astype(F32) * lay.expand(_f32(x_scale), x.shape)
    out = onnx_dtypes.from_onnx(output_dtype).np if output_dtype else x_scale.dtype
    return y.astype(out)


# -- DynamicQuantizeLinear ----------------------------------------------------------------------

def _infer_dynamic_quantize(inputs):
    x = inputs[0].type
    if x.dtype != DType.F32:
        _fail("DynamicQuantizeLinear", f"input {x} must be float32")
    return [TensorType(x.shape, DType.U8), TensorType((), DType.F32), TensorType((), DType.U8)]


def dynamic_range(x: np.ndarray) -> tuple[np.float32, np.float32]:
    """(min(0, min x), max(0, max x)), NaN ignored."""
    x = np.where(np.isnan(x), F32(0), x)
    return F32(min(F32(0), x.min(initial=0))), F32(max(F32(0), x.max(initial=0)))


@op("DynamicQuantizeLinear", outputs=3, infer=_infer_dynamic_quantize)
def dynamic_quantize_linear(x):
    """uint8 quantization over the range [min(0, min x), max(0, max x)]:
    scale = (hi - lo) / 255 (1 when hi == lo), zp = rint(clamp(-lo / scale, 0, 255))."""
    lo, hi = dynamic_range(x)
    scale = F32(1) if hi == lo else F32((hi - lo) / F32(255))
    zp_f = F32(0) - lo / scale
    zp = np.int32(np.rint(min(max(zp_f, F32(0)), F32(255))))
    with np.errstate(all="ignore"):
        y = round_saturate(x / scale, zp, DType.U8)
    return y, np.asarray(scale, F32), np.asarray(zp, np.uint8)


# -- matrix products ---------------------------------------------------------------------------

def matmul_param_shape(opname: str, what: str, p: TensorType | None, operand: tuple[int, ...],
                       rows: bool) -> tuple[int, ...]:
    """The shape, broadcastable against `operand`, of a scale or zero point given per tensor
    (one element), per row of A (`rows`: 1-D [M] or [..., M, 1]) or per column of B (1-D [N]
    or [..., 1, N])."""
    if p is None or p.numel == 1:
        return ()
    shape = p.shape
    if len(operand) >= 2 and p.rank == 1:
        n = operand[-2] if rows else operand[-1]
        if shape[0] == n:
            return (n, 1) if rows else (n,)
    elif len(operand) >= 2 and p.rank == len(operand) and shape[-1 if rows else -2] == 1:
        if broadcast_shapes(shape, operand) == tuple(operand):
            return shape
    kind = "row of A" if rows else "column of B"
    _fail(opname, f"{what} {p} must have one element or one per {kind} (operand "
                  f"{list(operand)})")


# -- encoded weights and fixed-point requantization of the integer GEMMs ---------------------
# MatMulInteger, QLinearMatMul and QGemm take `benc` and `bshape` (set by pack-weights: B is
# then its encoding, ir/encodings.py, of the int8 matrix [K, N] `bshape`; QGemm's transB is 0),
# QLinearMatMul and QGemm `rq_mult` and `rq_shift` (set by fixed-point: requantize_fixed with
# one multiplier or one per column of B)

_GEMM_ATTRS = {"benc": Attr.str(""), "bshape": Attr.ints([])}
_FIXED_ATTRS = {"rq_mult": Attr.ints([]), "rq_shift": Attr.int(0)}


class _Stand:
    """A stand-in input for shape inference: the matrix an encoded B holds."""

    def __init__(self, t: TensorType):
        self.type, self.const, self.shape, self.dtype = t, None, t.shape, t.dtype


def _decoded_inputs(opname: str, inputs, b_index: int, benc: str, bshape) -> list:
    inputs = list(inputs)
    if not benc:
        return inputs
    b = inputs[b_index].type
    enc = GemmWeights.parse(benc)
    if len(bshape) != 2 or b.rank != 1 or b.dtype is not DType.I8 or \
            b.numel != sum(enc.sizes(*bshape)):
        raise ShapeError(f"{opname}: B encoded as '{benc}' must be 1-D int8 of "
                         f"{sum(enc.sizes(*bshape)) if len(bshape) == 2 else '?'} bytes for "
                         f"bshape [K, N], not {b} with bshape {list(bshape)}")
    inputs[b_index] = _Stand(TensorType(tuple(bshape), DType.I8))
    return inputs


def _check_fixed(opname: str, n: int, rq_mult, rq_shift, a: TensorType | None = None) -> None:
    if rq_shift and a is not None and a.dtype in INT16:
        raise ShapeError(f"{opname}: fixed-point requantization (rq_shift) takes int32 sums: "
                         f"8-bit A only, not {a}")
    lo, hi = FIXED_SHIFTS
    if (rq_shift or rq_mult) and (not lo <= rq_shift <= hi or len(rq_mult) not in (1, n) or
                                  not all(0 <= q < 2**31 for q in rq_mult)):
        raise ShapeError(f"{opname}: fixed-point requantization needs rq_shift in [{lo}, {hi}] "
                         f"and rq_mult one or {n} values in [0, 2^31); got rq_shift={rq_shift} "
                         f"and {len(rq_mult)} values of rq_mult")


def _decoded_b(b: np.ndarray, benc: str, bshape) -> np.ndarray:
    return decode_gemm(b, GemmWeights.parse(benc), bshape) if benc else b


def _fixed_out(acc: np.ndarray, rq_mult, rq_shift: int, zy, fallback: np.ndarray) -> np.ndarray:
    """requantize_fixed of an int32 product [..., N] with one multiplier or one per column."""
    out = DType.from_numpy(zy.dtype if zy is not None else fallback.dtype)
    q = np.asarray(rq_mult, np.int64)
    return requantize_fixed(acc, q if q.size > 1 else q.reshape(()), rq_shift,
                            _zero_or(zy).reshape(()), out)


def _infer_matmul_integer(inputs):
    a, b = inputs[0].type, inputs[1].type
    az, bz = _opt(inputs, 2), _opt(inputs, 3)
    for t in (a, b):
        if t.dtype not in (DType.U8, DType.I8):
            _fail("MatMulInteger", f"operands must be uint8 or int8, got {t}")
    _check_zero_point("MatMulInteger", "a_zero_point", az and az.type, None, a.dtype)
    _check_zero_point("MatMulInteger", "b_zero_point", bz and bz.type, None, b.dtype)
    matmul_param_shape("MatMulInteger", "a_zero_point", az and az.type, a.shape, True)
    matmul_param_shape("MatMulInteger", "b_zero_point", bz and bz.type, b.shape, False)
    return TensorType(matmul_shape(a.shape, b.shape), DType.I32)


def _centered(opname: str, what: str, q: np.ndarray, z: np.ndarray | None, rows: bool,
              dtype: type = np.int32):
    """q - z in int32 (or `dtype`), z laid out per tensor, row or column."""
    if z is None:
        return np.asarray(q).astype(dtype)
    t = TensorType(z.shape, DType.from_numpy(z.dtype))
    return np.asarray(q).astype(dtype) - np.asarray(z).astype(dtype).reshape(
        matmul_param_shape(opname, what, t, q.shape, rows))


def _infer_matmul_integer_enc(inputs, *, benc, bshape):
    return _infer_matmul_integer(_decoded_inputs("MatMulInteger", inputs, 1, benc, bshape))


@op("MatMulInteger", inputs=(2, 4), infer=_infer_matmul_integer_enc, attrs=_GEMM_ATTRS)
def matmul_integer(a, b, a_zero_point=None, b_zero_point=None, *, benc="", bshape=()):
    """(a - a_zero_point) @ (b - b_zero_point) in int32, numpy matmul broadcasting."""
    b = _decoded_b(b, benc, bshape)
    return np.matmul(_centered("MatMulInteger", "a_zero_point", a, a_zero_point, True),
                     _centered("MatMulInteger", "b_zero_point", b, b_zero_point, False))


def _check_quantized(opname: str, pairs, wide: tuple[str, ...] = ()) -> None:
    """(what, tensor type, scale type or None, zero point type or None) per quantized operand;
    the operands named in `wide` may have 16 bits (activations of W8A16)."""
    for what, t, s, z in pairs:
        if t.dtype not in (ACTIVATION_TYPES if what in wide else INT8):
            _fail(opname, f"{what} {t} must be uint8 or int8" +
                  (" (or uint16/int16)" if what in wide else ""))
        if s is not None:
            _check_scale(opname, f"{what}_scale", s)
        _check_zero_point(opname, f"{what}_zero_point", z, None, t.dtype)


def _qlinear_out_dtype(z, fallback: TensorType) -> DType:
    return z.dtype if z is not None else fallback.dtype


def _types(inputs, *idx):
    return [None if _opt(inputs, i) is None else inputs[i].type for i in idx]


def _infer_qlinear_matmul(inputs):
    a, sa, za, b, sb, zb, sy, zy = _types(inputs, *range(8))
    _check_quantized("QLinearMatMul", [("a", a, sa, za), ("b", b, sb, zb)], ("a",))
    _check_scale("QLinearMatMul", "y_scale", sy)
    for what, p, t, rows in (("a_scale", sa, a, True), ("a_zero_point", za, a, True),
                             ("b_scale", sb, b, False), ("b_zero_point", zb, b, False)):
        matmul_param_shape("QLinearMatMul", what, p, t.shape, rows)
    _check_per_tensor("QLinearMatMul", [("y_scale", sy), ("y_zero_point", zy)])
    out = _qlinear_out_dtype(zy, a)
    if out not in ACTIVATION_TYPES:
        _fail("QLinearMatMul", f"y_zero_point {zy} must be uint8, int8, uint16 or int16")
    return TensorType(matmul_shape(a.shape, b.shape), out,
                      typed_quant(inputs[6], _opt(inputs, 7)))


def _check_per_tensor(opname: str, params) -> None:
    for what, t in params:
        if t is not None and t.numel != 1:
            _fail(opname, f"{what} {t} must have one element (per-tensor quantization)")


def _param(opname: str, what: str, p: np.ndarray | None, operand: np.ndarray, rows: bool,
           fill=None) -> np.ndarray:
    if p is None:
        return np.asarray(fill)
    t = TensorType(p.shape, DType.from_numpy(p.dtype))
    return p.reshape(matmul_param_shape(opname, what, t, operand.shape, rows))


def _infer_qlinear_matmul_enc(inputs, *, benc, bshape, rq_mult, rq_shift):
    out = _infer_qlinear_matmul(_decoded_inputs("QLinearMatMul", inputs, 3, benc, bshape))
    _check_fixed("QLinearMatMul", out.shape[-1] if out.shape else 1, rq_mult, rq_shift,
                 inputs[0].type)
    return out


@op("QLinearMatMul", inputs=8, infer=_infer_qlinear_matmul_enc,
    attrs=_GEMM_ATTRS | _FIXED_ATTRS)
def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point,
                   *, benc="", bshape=(), rq_mult=(), rq_shift=0):
    """y = sat(rint(((a - za) @ (b - zb)) * (sa * sb / sy)) + zy), scales per tensor, per row
    of a or per column of b (with `rq_shift`: requantize_fixed)."""
    n = "QLinearMatMul"
    b = _decoded_b(b, benc, bshape)
    t = sums_type(a, b)
    acc = np.matmul(_centered(n, "a_zero_point", a, a_zero_point, True, t),
                    _centered(n, "b_zero_point", b, b_zero_point, False, t))
    if rq_shift:
        return _fixed_out(acc, rq_mult, rq_shift, y_zero_point, a)
    mult = requantize_multiplier(_param(n, "a_scale", a_scale, a, True),
                                 _param(n, "b_scale", b_scale, b, False), y_scale.reshape(()))
    mult = _matmul_out_param(mult, a, b)
    out = DType.from_numpy(y_zero_point.dtype if y_zero_point is not None else a.dtype)
    return round_saturate(acc.astype(F32) * mult, _zero_or(y_zero_point).reshape(()), out)


def _matmul_out_param(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A per-row or per-column parameter aligned with the matmul result (1-D operands drop
    their unit dim from the result, so the parameter drops it too)."""
    if p.ndim == 0:
        return p
    if a.ndim == 1 or b.ndim == 1:
        return p.reshape(-1) if p.size > 1 else p.reshape(())
    return p


def _infer_qgemm(inputs, *, alpha, transA, transB):
    a, sa, za, b, sb, zb, c, sy, zy = _types(inputs, *range(9))
    _check_quantized("QGemm", [("a", a, sa, za), ("b", b, sb, zb)], ("a",))
    _check_scale("QGemm", "y_scale", sy)
    m, n = gemm_dims("QGemm", a, b, transA, transB)
    _check_per_tensor("QGemm", [("a_scale", sa), ("a_zero_point", za), ("y_scale", sy),
                                ("y_zero_point", zy)])
    for what, p in (("b_scale", sb), ("b_zero_point", zb)):
        if p is not None and p.numel != 1 and p.shape != (n,):
            _fail("QGemm", f"{what} {p} must have one element or one per output column ({n})")
    if c is not None and (c.dtype != DType.I32 or broadcast_shapes(c.shape, (m, n)) != (m, n)):
        _fail("QGemm", f"C {c} must be int32 and broadcast to [{m}, {n}]")
    out = _qlinear_out_dtype(zy, a)
    if out not in ACTIVATION_TYPES:
        _fail("QGemm", f"y_zero_point {zy} must be uint8, int8, uint16 or int16")
    return TensorType((m, n), out, typed_quant(_opt(inputs, 7), _opt(inputs, 8)))


def _infer_qgemm_enc(inputs, *, benc, bshape, rq_mult, rq_shift, **attrs):
    if benc and attrs["transB"]:
        raise ShapeError(f"QGemm: B encoded as '{benc}' holds [K, N]: transB must be 0")
    out = _infer_qgemm(_decoded_inputs("QGemm", inputs, 3, benc, bshape), **attrs)
    _check_fixed("QGemm", out.shape[1], rq_mult, rq_shift, inputs[0].type)
    return out


@op("QGemm", inputs=(8, 9), infer=_infer_qgemm_enc, attrs={
    "alpha": Attr.float(1.0), "transA": Attr.int(0), "transB": Attr.int(0)} | _GEMM_ATTRS
    | _FIXED_ATTRS)
def qgemm(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c=None, y_scale=None,
          y_zero_point=None, *, alpha, transA, transB, benc="", bshape=(), rq_mult=(),
          rq_shift=0):
    """y = sat(rint((A' @ B' + C) * (alpha * sa * sb / sy)) + zy), A' = a - za (transposed if
    transA), B' = b - zb (likewise); C is an int32 bias in units of sa * sb; b's scale and
    zero point per tensor or per output column (with `rq_shift`: requantize_fixed)."""
    b = _decoded_b(b, benc, bshape)
    t = sums_type(a, b)
    ac = np.asarray(a).astype(t) - _zero_or(a_zero_point).reshape(())
    bz = _zero_or(b_zero_point).reshape(-1)
    bc = np.asarray(b).astype(t) - (bz.reshape((-1, 1)) if transB and bz.size > 1 else bz
                                    if bz.size > 1 else bz.reshape(()))
    acc = np.matmul(ac.T if transA else ac, bc.T if transB else bc)
    if c is not None:
        acc = acc + np.asarray(c).astype(t)
    if rq_shift:
        return _fixed_out(acc, rq_mult, rq_shift, y_zero_point, a)
    mult = qgemm_multiplier(alpha, a_scale, b_scale, y_scale)
    out = DType.from_numpy(y_zero_point.dtype if y_zero_point is not None else a.dtype)
    return round_saturate(acc.astype(F32) * mult, _zero_or(y_zero_point).reshape(()), out)


def qgemm_multiplier(alpha: float, sa, sb, sy) -> np.ndarray:
    """alpha * sa * sb / sy in float32, per tensor or per output column."""
    sa = _f32(sa).reshape(())
    if alpha != 1.0:
        sa = F32(alpha) * sa
    m = requantize_multiplier(sa, _f32(sb).reshape(-1), _f32(sy).reshape(()))
    return m if m.size > 1 else m.reshape(())


# -- convolutions ------------------------------------------------------------------------------

_CONV_ATTRS = {
    "dilations": Attr.ints(),
    "group": Attr.int(1),
    "pads": Attr.ints(),
    "strides": Attr.ints(),
}


def _conv_shape(opname: str, x: TensorType, w: TensorType, *, dilations, group, pads,
                strides) -> tuple[int, ...]:
    nsp = x.rank - 2
    _check_spatial(opname, x, nsp, dilations=(dilations, nsp), pads=(pads, 2 * nsp),
                   strides=(strides, nsp))
    if w.rank != x.rank:
        _fail(opname, f"weight {w} must have the rank of input {x}")
    if group < 1 or x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        _fail(opname, f"input {x} with group={group} needs weight [M, C/group, ...] with M "
                      f"divisible by group; got weight {w}")
    out = [_window_out(opname, x.shape[2 + i], w.shape[2 + i], strides[i], dilations[i],
                       pads[i], pads[i + nsp]) for i in range(nsp)]
    return (x.shape[0], w.shape[0], *out)


def _per_channel(opname: str, what: str, p: TensorType | None, m: int) -> None:
    if p is not None and p.numel != 1 and p.shape != (m,):
        _fail(opname, f"{what} {p} must have one element or one per output channel ({m})")


def _infer_conv_integer(inputs, **attrs):
    x, w, xz, wz = _types(inputs, 0, 1, 2, 3)
    _check_quantized("ConvInteger", [("x", x, None, xz), ("w", w, None, wz)])
    _check_per_tensor("ConvInteger", [("x_zero_point", xz)])
    _per_channel("ConvInteger", "w_zero_point", wz, w.shape[0])
    return TensorType(_conv_shape("ConvInteger", x, w, **attrs), DType.I32)


def centred_conv_weights(w: np.ndarray, w_zero_point: np.ndarray | None) -> np.ndarray:
    """W - zw in int32 for a convolution weight [M, C/group, k...], zw per tensor or per
    output channel (the kernels store weights this way; the layout pass checks they fit
    int8)."""
    z = _zero_or(w_zero_point)
    z = z.reshape((-1,) + (1,) * (w.ndim - 1)) if z.size > 1 else z.reshape(())
    return _i32(w) - z


@op("ConvInteger", inputs=(2, 4), attrs=_CONV_ATTRS, infer=_infer_conv_integer)
def conv_integer(x, w, x_zero_point=None, w_zero_point=None, *, dilations, group, pads,
                 strides):
    """conv(x - x_zero_point, w - w_zero_point) in int32 (padding holds x_zero_point);
    w_zero_point per tensor or per output channel."""
    xc = _i32(x) - _zero_or(x_zero_point).reshape(())
    wc = centred_conv_weights(w, w_zero_point)
    return conv_nd(xc, wc, None, dilations=dilations, group=group, pads=pads, strides=strides)


def _infer_qlinear_conv(inputs, **attrs):
    x, sx, zx, w, sw, zw, sy, zy, b = _types(inputs, *range(9))
    _check_quantized("QLinearConv", [("x", x, sx, zx), ("w", w, sw, zw)], ("x",))
    _check_scale("QLinearConv", "y_scale", sy)
    _check_per_tensor("QLinearConv", [("x_scale", sx), ("x_zero_point", zx),
                                       ("y_scale", sy), ("y_zero_point", zy)])
    m = w.shape[0]
    _per_channel("QLinearConv", "w_scale", sw, m)
    _per_channel("QLinearConv", "w_zero_point", zw, m)
    if b is not None and (b.dtype != DType.I32 or b.shape != (m,)):
        _fail("QLinearConv", f"bias {b} must be int32 of shape [{m}]")
    out = _qlinear_out_dtype(zy, x)
    if out not in ACTIVATION_TYPES:
        _fail("QLinearConv", f"y_zero_point {zy} must be uint8, int8, uint16 or int16")
    _check_fixed("QLinearConv", m, attrs.pop("rq_mult", ()), attrs.pop("rq_shift", 0), x)
    return TensorType(_conv_shape("QLinearConv", x, w, **attrs), out,
                      typed_quant(inputs[6], inputs[7]))


def qconv_sums(x, x_zero_point, w, w_zero_point, b=None, **conv_attrs) -> np.ndarray:
    """The int32 sums of a quantized convolution: conv(x - zx, w - zw) + b (int64 for a 16-bit
    x)."""
    t = sums_type(x)
    xc = np.asarray(x).astype(t) - _zero_or(x_zero_point).reshape(())
    wc = centred_conv_weights(w, w_zero_point).astype(t)
    return conv_nd(xc, wc, None if b is None else np.asarray(b).astype(t), **conv_attrs)


# QLinearConv's `rq_mult` and `rq_shift` (set by fixed-point{scalar=1} for the plain NCHW
# kernels): requantize_fixed with one multiplier or one per output channel, as the blocked
# convolutions of the vector targets compute it
@op("QLinearConv", inputs=(8, 9), attrs=_CONV_ATTRS | _FIXED_ATTRS, infer=_infer_qlinear_conv)
def qlinear_conv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point,
                 b=None, *, dilations, group, pads, strides, rq_mult=(), rq_shift=0):
    """y = sat(rint((conv(x - zx, w - zw) + b) * (sx * sw / sy)) + zy), w's scale and zero
    point per tensor or per output channel (with `rq_shift`: requantize_fixed)."""
    nsp = x.ndim - 2
    acc = qconv_sums(x, x_zero_point, w, w_zero_point, b, dilations=dilations, group=group,
                     pads=pads, strides=strides)
    if rq_shift:
        q = np.asarray(rq_mult, np.int64)
        q = q.reshape((-1,) + (1,) * nsp) if q.size > 1 else q.reshape(())
        out = DType.from_numpy(y_zero_point.dtype if y_zero_point is not None else x.dtype)
        return requantize_fixed(acc, q, rq_shift, _zero_or(y_zero_point).reshape(()), out)
    mult = requantize_multiplier(x_scale.reshape(()), w_scale.reshape(-1), y_scale.reshape(()))
    mult = mult.reshape((-1,) + (1,) * nsp) if mult.size > 1 else mult.reshape(())
    out = DType.from_numpy(y_zero_point.dtype if y_zero_point is not None else x.dtype)
    return round_saturate(acc.astype(F32) * mult, _zero_or(y_zero_point).reshape(()), out)


# -- QLinearAdd --------------------------------------------------------------------------------

def _infer_qlinear_add(inputs):
    a, sa, za, b, sb, zb, sc, zc = _types(inputs, *range(8))
    _check_quantized("QLinearAdd", [("A", a, sa, za), ("B", b, sb, zb)], ("A", "B"))
    _check_scale("QLinearAdd", "C_scale", sc)
    _check_per_tensor("QLinearAdd", [("A_scale", sa), ("A_zero_point", za), ("B_scale", sb),
                                      ("B_zero_point", zb), ("C_scale", sc),
                                      ("C_zero_point", zc)])
    out = _qlinear_out_dtype(zc, a)
    if out not in ACTIVATION_TYPES:
        _fail("QLinearAdd", f"C_zero_point {zc} must be uint8, int8, uint16 or int16")
    return TensorType(broadcast_shapes(a.shape, b.shape), out,
                      typed_quant(inputs[6], _opt(inputs, 7)))


def add_ratios(sa, sb, sc) -> tuple[np.float32, np.float32]:
    """(sa / sc, sb / sc) in float32."""
    sc = _f32(sc).reshape(())
    return F32(_f32(sa).reshape(()) / sc), F32(_f32(sb).reshape(()) / sc)


# Fixed-point QLinearAdd (rq_mult = [qa, qb], rq_shift = s, set by the fixed-point pass; 8-bit
# operands only):
# C = sat(floor((qa (A - za) + qb (B - zb) + 2^(s-1)) / 2^s) + zc), qa / 2^s and qb / 2^s
# standing for sa / sc and sb / sc. With q < 2^21 and |A - za| <= 255 the sum and its rounding
# term stay inside int32 (s <= 30), so the kernel is 32-bit integer arithmetic throughout;
# each ratio is held to within 2^-(s+1), which moves the exact sum by at most 255 * 2^-s of a
# step (s >= 16: under 0.004).
ADD_FIXED_BITS, ADD_FIXED_SHIFTS = 21, (16, 30)


def add_fixed_point(ra, rb) -> tuple[list[int], int] | None:
    """([qa, qb], s) for the float32 ratios of a QLinearAdd, or None where they cannot be
    held so (not finite, negative, or the larger over 2^(21-16))."""
    r = np.array([ra, rb], np.float64)
    if not np.isfinite(r).all() or (r < 0).any() or r.max() == 0:
        return None
    _, e = np.frexp(r.max())  # max = f * 2^e, 0.5 <= f < 1: max * 2^s in [2^20, 2^21)
    s = ADD_FIXED_BITS - int(e)
    if not ADD_FIXED_SHIFTS[0] <= s <= ADD_FIXED_SHIFTS[1]:
        return None
    q = np.rint(np.ldexp(r, s))
    if q.max() >= 2**ADD_FIXED_BITS:
        return None
    return [int(v) for v in q], s


def _infer_qlinear_add_fixed(inputs, *, rq_mult, rq_shift):
    out = _infer_qlinear_add(inputs)
    if rq_shift and any(v.dtype in INT16 for v in (inputs[0].type, inputs[3].type, out)):
        _fail("QLinearAdd", "fixed-point addition (rq_shift) sums in 32 bits: 8-bit operands "
                            "and sum only")
    lo, hi = ADD_FIXED_SHIFTS
    if (rq_shift or rq_mult) and (not lo <= rq_shift <= hi or len(rq_mult) != 2 or
                                  not all(0 <= q < 2**ADD_FIXED_BITS for q in rq_mult)):
        _fail("QLinearAdd", f"fixed-point addition needs rq_shift in [{lo}, {hi}] and rq_mult "
                            f"two values in [0, 2^{ADD_FIXED_BITS}); got rq_shift={rq_shift} and "
                            f"rq_mult {list(rq_mult)}")
    return out


@op("QLinearAdd", inputs=(7, 8), infer=_infer_qlinear_add_fixed, attrs=_FIXED_ATTRS)
def qlinear_add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale,
                c_zero_point=None, *, rq_mult=(), rq_shift=0):
    """C = sat(rint((sa / sc) (A - za) + (sb / sc) (B - zb)) + zc), with numpy broadcasting:
    dequantize, add, quantize with the output's parameters, in float32 (with `rq_shift`: in
    fixed point, as above)."""
    out = DType.from_numpy(c_zero_point.dtype if c_zero_point is not None else a.dtype)
    if rq_shift:
        qa, qb = rq_mult
        v = qa * (_i32(a).astype(np.int64) - _zero_or(a_zero_point).reshape(())) + \
            qb * (_i32(b).astype(np.int64) - _zero_or(b_zero_point).reshape(()))
        lo, hi = QUANT_RANGES[out]
        v = ((v + (1 << (rq_shift - 1))) >> rq_shift) + _zero_or(c_zero_point).reshape(())
        return np.clip(v, lo, hi).astype(out.np)
    ra, rb = add_ratios(a_scale, b_scale, c_scale)
    va = ra * (_i32(a) - _zero_or(a_zero_point).reshape(())).astype(F32)
    vb = rb * (_i32(b) - _zero_or(b_zero_point).reshape(())).astype(F32)
    return round_saturate(va + vb, _zero_or(c_zero_point).reshape(()), out)



# -- QLinearGlobalAveragePool ------------------------------------------------------------------
# The mean over the spatial axes of an 8-bit NCHW tensor, on the integers (onnxruntime's
# com.microsoft op of that name, NCHW): acc = sum (x - zx) over the N = H x W positions in
# int32, y = sat(rint(acc * M) + zy) with M = (sx / sy) / N in float32, or with `rq_shift`
# (fixed-point) requantize_fixed(acc, rq_mult, rq_shift). fuse-qdq makes it of a QDQ model's
# DequantizeLinear -> GlobalAveragePool -> QuantizeLinear.

def _infer_qlinear_gap(inputs, *, rq_mult, rq_shift):
    x, sx, zx, sy, zy = _types(inputs, *range(5))
    _check_quantized("QLinearGlobalAveragePool", [("x", x, sx, zx)])
    _check_scale("QLinearGlobalAveragePool", "y_scale", sy)
    _check_per_tensor("QLinearGlobalAveragePool", [("x_scale", sx), ("x_zero_point", zx),
                                                    ("y_scale", sy), ("y_zero_point", zy)])
    if x.rank < 3 or x.dtype not in (DType.U8, DType.I8):
        _fail("QLinearGlobalAveragePool", f"x must be 8-bit [N, C, spatial...], got {x}")
    out = _qlinear_out_dtype(zy, x)
    positions = int(np.prod(x.shape[2:]))
    if (rq_shift or rq_mult) and (len(rq_mult) != 1 or not 0 <= rq_mult[0] < 2**31 or
                                  not gap_min_shift(positions) <= rq_shift <= FIXED_SHIFTS[1]):
        _fail("QLinearGlobalAveragePool", f"fixed-point requantization of a mean of {positions} "
                                          f"needs rq_shift in [{gap_min_shift(positions)}, "
                                          f"{FIXED_SHIFTS[1]}] and one rq_mult in [0, 2^31); got "
                                          f"rq_shift={rq_shift}, rq_mult {list(rq_mult)}")
    return TensorType((*x.shape[:2], *(1,) * (x.rank - 2)), out,
                      typed_quant(inputs[3], _opt(inputs, 4)))


def gap_min_shift(positions: int) -> int:
    """The least fixed-point shift of a mean of `positions` 8-bit values: where s < 33 the
    kernel shifts the sum left by 33 - s first (mulshift's shift is at least 33), which must
    keep |sum| <= 255 positions inside int32."""
    spare = 31 - int(255 * positions).bit_length()
    return max(1, 33 - spare)


def gap_multiplier(sx, sy, positions: int) -> np.ndarray:
    """M = (sx / sy) / N in float32, in that order."""
    return (_f32(sx).reshape(()) / _f32(sy).reshape(())) / F32(positions)


@op("QLinearGlobalAveragePool", inputs=(4, 5), infer=_infer_qlinear_gap, attrs=_FIXED_ATTRS)
def qlinear_global_average_pool(x, x_scale, x_zero_point, y_scale, y_zero_point=None, *,
                                rq_mult=(), rq_shift=0):
    """y[n, c] = sat(rint(sum_hw (x[n, c] - zx) * (sx / sy) / HW) + zy), the sums exact in
    int32 (with `rq_shift`: requantize_fixed)."""
    axes = tuple(range(2, x.ndim))
    positions = int(np.prod(x.shape[2:]))
    acc = (np.asarray(x, np.int64).sum(axis=axes, keepdims=True)
           - positions * _zero_or(x_zero_point).astype(np.int64).reshape(())).astype(np.int32)
    out = DType.from_numpy(y_zero_point.dtype if y_zero_point is not None else x.dtype)
    zy = _zero_or(y_zero_point).reshape(())
    if rq_shift:
        return requantize_fixed(acc, np.asarray(rq_mult, np.int64).reshape(()), rq_shift, zy,
                                out)
    return round_saturate(acc.astype(F32) * gap_multiplier(x_scale, y_scale, positions), zy,
                          out)


# -- QLinearResize -----------------------------------------------------------------------------
# QLinearResize(X, roi?, scales?, sizes?, x_scale, x_zero_point){Resize attrs}: the fuse-qdq
# form of Q(Resize(DQ(X))) with one per-tensor scale and zero point on both sides, for the
# interpolating modes (nearest Resize runs on the integers as it is): the uint8/int8 tensor is
# read and written as such, and each output is exactly what the QDQ graph computes, the
# interpolation in float32 on s * (x - z), then rounded half to even and saturated.

def _infer_qlinear_resize(inputs, **attrs):
    x, s, z = inputs[0].type, inputs[4].type, inputs[5].type
    if x.dtype not in (DType.U8, DType.I8) or s.numel != 1 or s.dtype not in SCALE_TYPES or \
            z.numel != 1 or z.dtype != x.dtype:
        _fail("QLinearResize", f"X {x} must be uint8 or int8 with one scale ({s}) and one zero "
                               f"point of its type ({z})")
    as_float = [_Stand(TensorType(x.shape, DType.F32)), *inputs[1:4]]
    out = get_op("Resize").infer(as_float, **attrs)
    return TensorType(out.shape, x.dtype, typed_quant(inputs[4], inputs[5]))


def _resize_attrs():
    return dict(get_op("Resize").attrs)


@op("QLinearResize", inputs=6, infer=_infer_qlinear_resize, attrs=_resize_attrs())
def qlinear_resize(x, roi, scales, sizes, x_scale, x_zero_point, **attrs):
    """Q(Resize(DQ(x))) with x's scale and zero point on both sides."""
    s, z = _f32(x_scale).reshape(()), _i32(x_zero_point).reshape(())
    v = get_op("Resize").reference((_i32(x) - z).astype(F32) * s, roi, scales, sizes, **attrs)
    return round_saturate(np.asarray(v, F32) / s, z, DType.from_numpy(x.dtype))
