"""Trigonometric, rounding, bitwise, remainder and exponential-family ops (and Hardmax) against
onnxruntime, in every dtype onnxruntime's CPU provider runs them in; where onnxruntime has no
answer (a zero divisor, a shift past the bit width) against hand-computed values."""

import numpy as np
import opcheck
import pytest
from opcheck import check, rand

from edgec.errors import ShapeError
from edgec.ir import DType, Graph, TensorType, get_op
from edgec.ir.onnx_dtypes import to_onnx

F16, F32, F64 = np.float16, np.float32, np.float64
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
SPECIALS = np.array([-np.inf, -1e4, -20.5, -2.5, -1.5, -0.5, -0.0, 0.0, 1e-30, 0.5, 1.5, 2.5,
                     3.5, 20.5, 1e4, np.inf, np.nan], F32)

# (op, lo, hi): the domain each function is defined on
TRIG = [("Sin", -7, 7), ("Cos", -7, 7), ("Tan", -1.5, 1.5), ("Asin", -1, 1), ("Acos", -1, 1),
        ("Atan", -9, 9), ("Sinh", -9, 9), ("Cosh", -9, 9), ("Asinh", -9, 9), ("Acosh", 1, 9),
        ("Atanh", -0.99, 0.99)]


@pytest.mark.parametrize("opname,lo,hi", TRIG)
def test_trigonometric(opname, lo, hi):
    check(opname, [rand(3, 4, 5, lo=lo, hi=hi)])
    check(opname, [rand(7, lo=lo, hi=hi).astype(F16)], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("opname", ["Sin", "Cos"])
def test_trigonometric_double(opname):
    check(opname, [rand(3, 4, lo=-7, hi=7, dtype=F64)])


def test_trigonometric_out_of_domain_is_nan():
    check("Asin", [np.array([-2, 2, np.inf], F32)])
    check("Acosh", [np.array([0.5, -1], F32)])
    check("Atanh", [np.array([-1, 1, 2], F32)])


@pytest.mark.parametrize("dtype", [F16, F32, F64])
def test_round_halves_to_even(dtype):
    check("Round", [SPECIALS.astype(dtype)])


@pytest.mark.parametrize("dtype", [F16, F32, F64, np.int8, np.int32, np.int64, np.uint8])
def test_sign(dtype):
    x = SPECIALS if np.dtype(dtype).kind == "f" else rand(4, 5, dtype=dtype, lo=-3, hi=3)
    if dtype == F16:  # onnxruntime's float16 Sign maps NaN to 0, its float32 Sign keeps NaN
        x = x[~np.isnan(x)]
    if np.dtype(dtype).kind == "u":
        x = rand(4, 5, dtype=dtype, lo=0, hi=3)
    check("Sign", [x.astype(dtype)])


@pytest.mark.parametrize("dtype", [F16, F32, F64])
@pytest.mark.parametrize("attrs", [{}, {"detect_positive": 0}, {"detect_negative": 0},
                                   {"detect_positive": 0, "detect_negative": 0}])
def test_isinf(dtype, attrs):
    check("IsInf", [SPECIALS.astype(dtype)], attrs)


@pytest.mark.parametrize("dtype", [F16, F32, F64])
def test_isnan(dtype):
    check("IsNaN", [SPECIALS.astype(dtype)])


# -- Mod ------------------------------------------------------------------------------------

def _dividends(dtype, n: int = 12) -> np.ndarray:
    lo = 0 if np.dtype(dtype).kind == "u" else -20
    return rand(n, dtype=dtype, lo=lo, hi=20)


def _divisors(dtype, n: int = 12) -> np.ndarray:
    """Nonzero divisors of both signs (onnxruntime stops on a zero integer divisor)."""
    d = rand(n, dtype=dtype, seed=3, lo=1, hi=7)
    if np.dtype(dtype).kind == "i":
        d = d * np.where(np.arange(n) % 2 == 0, 1, -1).astype(dtype)
    return d


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_integers(dtype, fmod):
    check("Mod", [_dividends(dtype), _divisors(dtype)], {"fmod": fmod})


@pytest.mark.parametrize("dtype", [F16, F32, F64])
def test_mod_floats_take_the_dividends_sign(dtype):
    a = np.array([-4.5, 4.5, -4.5, 4.5, 0.0, -0.0, 7.25, -7.25, 6e4], dtype)
    b = np.array([2, -2, -2, 2, 3, 3, 0.5, 0.75, 3], dtype)
    check("Mod", [a, b], {"fmod": 1})


def test_mod_broadcasts():
    check("Mod", [rand(3, 2, 5, dtype=np.int32, lo=-30, hi=30), np.array([7], np.int32)])
    check("Mod", [rand(3, 4, lo=-5, hi=5), rand(4, seed=1, lo=0.5, hi=2)], {"fmod": 1})


def test_mod_zero_divisor_and_minus_one():
    """onnxruntime stops on a zero divisor; edgec gives 0, as numpy does. x % -1 is 0 even
    for the most negative x (whose C remainder would trap)."""
    ref = get_op("Mod").reference
    a = np.array([7, -7, -128, -128, 5], np.int8)
    b = np.array([0, 0, -1, 3, -1], np.int8)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ref(a, b, fmod=0), [0, 0, 0, 1, 0])
        np.testing.assert_array_equal(ref(a, b, fmod=1), [0, 0, 0, -2, 0])


def test_mod_float_needs_fmod():
    g = Graph()
    a = g.add_input("a", TensorType((2,), DType.F32))
    with pytest.raises(ShapeError, match="fmod=1"):
        g.add_node("Mod", [a, a])


# -- bits -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift(dtype, direction):
    bits = 8 * np.dtype(dtype).itemsize
    x = np.array([1, 255, 16, 7, 200, 3], dtype)
    n = np.array([0, 1, 3, bits - 1, 2, bits // 2], dtype)
    check("BitShift", [x, n], {"direction": direction})
    check("BitShift", [rand(2, 3, dtype=dtype, hi=200), np.array([2], dtype)],
          {"direction": direction})


def test_bit_shift_past_the_width_is_zero():
    """C leaves it undefined (x86 masks the count); edgec defines it as numpy: all bits out."""
    ref = get_op("BitShift").reference
    x = np.array([1, 255, 65535], np.uint16)
    n = np.array([16, 17, 15], np.uint16)
    np.testing.assert_array_equal(ref(x, n, direction="LEFT"), [0, 0, 32768])
    np.testing.assert_array_equal(ref(x, n, direction="RIGHT"), [0, 0, 1])


def test_bit_shift_direction_is_checked():
    g = Graph()
    a = g.add_input("a", TensorType((2,), DType.U8))
    with pytest.raises(ShapeError, match="direction"):
        g.add_node("BitShift", [a, a], {"direction": "UP"})


@pytest.mark.parametrize("opname", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_binary(opname, dtype):
    info = np.iinfo(dtype)
    a = rand(3, 4, 5, dtype=np.int64, lo=0, hi=2**20).astype(dtype)
    b = rand(4, 5, dtype=np.int64, seed=1, lo=0, hi=2**20).astype(dtype)
    a[0, 0, :2] = info.min, info.max
    check(opname, [a, b])


@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_not(dtype):
    info = np.iinfo(dtype)
    check("BitwiseNot", [np.array([info.min, info.max, 0, 1, 100], dtype)])


def test_xor():
    check("Xor", [rand(3, 4, 5, dtype=np.bool_), rand(4, 5, dtype=np.bool_, seed=1)])
    check("Xor", [rand(1, 4, 1, 6, dtype=np.bool_), rand(3, 1, 5, 6, dtype=np.bool_, seed=2)])


def test_bitwise_ops_refuse_other_kinds():
    g = Graph()
    f = g.add_input("f", TensorType((2,), DType.F32))
    b = g.add_input("b", TensorType((2,), DType.BOOL))
    with pytest.raises(ShapeError, match="int"):
        g.add_node("BitwiseAnd", [f, f])
    with pytest.raises(ShapeError, match="unsigned"):
        g.add_node("BitShift", [b, b], {"direction": "LEFT"})
    with pytest.raises(ShapeError, match="bool"):
        g.add_node("Xor", [f, f])


# -- activations ----------------------------------------------------------------------------

ACTIVATIONS = [
    ("Elu", {}), ("Elu", {"alpha": 2.0}), ("Selu", {}), ("Selu", {"alpha": 2.0, "gamma": 3.0}),
    ("Celu", {}), ("Celu", {"alpha": 2.0}), ("Softplus", {}), ("Softsign", {}),
    ("ThresholdedRelu", {}), ("ThresholdedRelu", {"alpha": 0.5}), ("Mish", {}),
    ("Shrink", {}), ("Shrink", {"lambd": 1.5}), ("Shrink", {"bias": 1.5, "lambd": 1.5}),
]


@pytest.mark.parametrize("opname,attrs", ACTIVATIONS)
def test_activation(opname, attrs):
    check(opname, [rand(4, 5, 3, lo=-6, hi=6)], attrs)
    finite = SPECIALS[np.isfinite(SPECIALS)]
    check(opname, [finite], attrs)
    if opname != "Celu":  # onnxruntime runs Celu in float32 only
        check(opname, [rand(9, lo=-4, hi=4).astype(F16)], attrs, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("opname", ["Elu", "Selu", "Softplus", "Softsign", "ThresholdedRelu",
                                    "Shrink"])
def test_activation_infinities(opname):
    check(opname, [np.array([-np.inf, np.inf, np.nan, -1e30, 1e30], F32)])


def test_mish_infinities():
    """onnxruntime computes x tanh(softplus(x)), so Mish(-inf) = -inf * 0 = NaN, as here."""
    check("Mish", [np.array([-np.inf, np.inf, np.nan, -100, 100], F32)])


def test_softplus_keeps_tiny_values():
    """log(1 + e^x) for x << 0 is e^x, not the 0 a plain log(1 + exp(x)) rounds it to."""
    x = np.array([-10, -17, -30, -80, -100], F32)
    check("Softplus", [x], rtol=1e-6, atol=0)
    check("Mish", [x[:-1]], rtol=1e-6, atol=0)  # Mish(-100) is subnormal: onnxruntime flushes it


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
def test_shrink_integers(dtype):
    x = rand(3, 7, dtype=dtype, lo=0 if np.dtype(dtype).kind == "u" else -9, hi=9)
    check("Shrink", [x], {"bias": 1.0, "lambd": 2.5})


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_swish(monkeypatch, alpha):
    monkeypatch.setattr(opcheck, "OPSET", 24)  # Swish is an opset-24 op
    check("Swish", [rand(4, 6, lo=-8, hi=8)], {"alpha": alpha})
    check("Swish", [np.array([-1e30, -100, 0, 100, 1e30, np.inf, -np.inf], F32)], {"alpha": alpha})


def test_activation_traits():
    for name in ["Elu", "Selu", "Celu", "Softplus", "Softsign", "ThresholdedRelu", "Mish",
                 "Shrink", "Swish"]:
        assert {"elementwise", "activation"} <= get_op(name).traits, name
    assert "elementwise" not in get_op("Hardmax").traits


# -- Hardmax --------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_hardmax(axis):
    check("Hardmax", [rand(3, 4, 5)], {"axis": axis})


def test_hardmax_ties_and_nan_follow_onnxruntime():
    """The first maximum wins; a NaN is skipped, and a row starting with NaN is all 0."""
    x = np.array([[1, 1, 1, 1], [2, 3, 3, 1], [np.nan, 1, 5, 2], [1, np.nan, 5, 2],
                  [-np.inf, -np.inf, -np.inf, -np.inf], [0, np.nan, np.nan, -1],
                  [np.nan] * 4, [5, 1, np.nan, 7]], F32)
    check("Hardmax", [x])
    check("Hardmax", [x.astype(F16)])
    check("Hardmax", [x.T.copy()], {"axis": 0})


# -- BitCast --------------------------------------------------------------------------------

BIT_PAIRS = [(F32, np.int32), (F32, np.uint32), (np.int32, F32), (F64, np.int64),
             (np.uint64, F64), (F16, np.int16), (np.uint16, F16), (np.int8, np.uint8),
             (np.bool_, np.uint8), (np.uint16, np.int16)]


@pytest.mark.parametrize("src,dst", BIT_PAIRS)
def test_bit_cast(monkeypatch, src, dst):
    """The bits survive, NaN payloads and signed zeros included."""
    monkeypatch.setattr(opcheck, "OPSET", 26)  # BitCast is an opset-26 op
    if np.dtype(src) == np.bool_:
        x = rand(3, 4, dtype=np.bool_)
    elif np.dtype(src).kind == "f":
        x = np.array([1.0, -2.5, -0.0, np.inf, np.nan, 65504, 1e-7], src)
    else:
        info = np.iinfo(src)
        x = np.array([0, 1, info.max, info.min, 100], src)
    to = to_onnx(DType.from_numpy(dst))
    if np.dtype(src) != np.bool_:  # onnxruntime has no BitCast from bool
        check("BitCast", [x], {"to": to}, rtol=0, atol=0)
    got = get_op("BitCast").reference(x, to=to)
    assert got.dtype == dst and got.tobytes() == x.tobytes()


def test_bit_cast_needs_equal_widths():
    g = Graph()
    a = g.add_input("a", TensorType((2,), DType.F32))
    with pytest.raises(ShapeError, match="same width"):
        g.add_node("BitCast", [a], {"to": 7})


def test_sub_byte_ints_hold_one_value_per_byte():
    from edgec.ir.dtypes import DType, convert, int_range

    assert (DType.I4.bits, DType.I4.np, DType.I4.storage) == (4, np.int8, DType.I8)
    assert DType.from_numpy(np.uint8) is DType.U8 and int_range(DType.U2) == (0, 3)
    assert to_onnx(DType.I4) == 22  # TensorProto.INT4
    # ONNX's Cast: to int32, then the low bits (two's complement)
    np.testing.assert_array_equal(convert(np.array([-9.0, 7.9, -3.5]), DType.I4), [7, 7, -3])
    np.testing.assert_array_equal(convert(np.array([-3.0, 5.0]), DType.U2), [1, 1])
    np.testing.assert_array_equal(convert(np.array([200], np.int32), DType.I3), [0])
