"""Elementwise ops: arithmetic with numpy broadcasting, comparisons, logic, bitwise ops,
math (trigonometric, rounding, IsNaN/IsInf), integer remainder, activations.

Every op here carries the "elementwise" trait (output element i reads only element i of each
broadcast input); the unary activations the fusion pass can fold into a producer also carry
"activation". References compute in the input dtype (IEEE semantics: 1/0 = inf, log(0) = -inf),
float16 in float32 rounded once, and return the input dtype; integer Div truncates toward zero,
like C and onnxruntime, and an integer division or remainder by zero gives 0.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import ShapeError
from .. import onnx_dtypes
from ..dtypes import DType, convert
from ..registry import Attr, broadcast_shapes, op
from ..types import TensorType

VARIADIC = (1, 2**31 - 1)
EW = ("elementwise",)
ACT = ("elementwise", "activation")
FLOAT, NUMBER, ANY = "f", "fiu", "fiub"


def _check(opname: str, types: list[TensorType], kinds: str, same: bool = True) -> None:
    for t in types:
        if t.dtype.np.kind not in kinds:
            names = {"f": "float", "i": "signed int", "u": "unsigned int", "b": "bool"}
            allowed = " or ".join(names[k] for k in kinds)
            raise ShapeError(f"{opname}: input {t} must be {allowed}")
    if same and len({t.dtype for t in types}) > 1:
        raise ShapeError(f"{opname}: inputs {', '.join(map(str, types))} must have one dtype")


def _infer(opname: str, kinds: str, out: DType | None = None):
    """Broadcast all inputs (checked to be of one dtype in `kinds`); output dtype `out` or
    that of the inputs."""

    def infer(inputs, **_):
        ts = [v.type for v in inputs if v is not None]
        _check(opname, ts, kinds)
        return TensorType(broadcast_shapes(*[t.shape for t in ts]), out or ts[0].dtype)

    return infer


def _ieee(fn):
    """Run `fn` with numpy's floating-point warnings off: inf and nan are results here."""

    def ref(*args, **kw):
        with np.errstate(all="ignore"):
            return fn(*args, **kw)

    ref.__doc__ = fn.__doc__
    return ref


def _declare(name: str, fn, *, kinds: str, inputs=1, out: DType | None = None,
             traits=EW, attrs=None, infer=None) -> None:
    """Declare an op whose reference is `fn` cast back to the inputs' dtype (or `out`);
    float16 inputs are computed in float32 and the result rounded once, as the kernels do."""

    def ref(*xs, **kw):
        wide = [x.astype(np.float32) if x.dtype == np.float16 else x for x in xs]
        res = np.asarray(fn(*wide, **kw))
        return convert(res, out or DType.from_numpy(xs[0].dtype))

    op(name, inputs=inputs, infer=infer or _infer(name, kinds, out), traits=traits,
       attrs=attrs)(_ieee(ref))


# -- arithmetic -----------------------------------------------------------------------------

_declare("Add", np.add, kinds=NUMBER, inputs=2)
_declare("Sub", np.subtract, kinds=NUMBER, inputs=2)
_declare("Mul", np.multiply, kinds=NUMBER, inputs=2)


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; integers truncate toward zero (C semantics, as onnxruntime), unlike numpy's //."""
    if a.dtype.kind == "f":
        return a / b
    if a.dtype.kind == "u":
        return np.floor_divide(a, b)
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))


_declare("Div", divide, kinds=NUMBER, inputs=2)


def _infer_pow(inputs):
    x, y = inputs[0].type, inputs[1].type
    _check("Pow", [x], NUMBER)
    _check("Pow", [y], NUMBER)
    return x.with_shape(broadcast_shapes(x.shape, y.shape))


@op("Pow", inputs=2, infer=_infer_pow, traits=EW)
@_ieee
def pow_(x, y):
    """x ** y in x's dtype; y may have another numeric dtype (ONNX T1). An integer base takes
    the C pow of doubles, as onnxruntime, converted back (saturating: `dtypes.convert`)."""
    if x.dtype.kind in "iu":
        return convert(np.power(x.astype(np.float64), y.astype(np.float64)),
                       DType.from_numpy(x.dtype))
    return np.power(x, y.astype(x.dtype, copy=False))


def _variadic(name: str, fn, kinds: str) -> None:
    def ref(*xs):
        acc = xs[0]
        for x in xs[1:]:
            acc = fn(acc, x)
        return np.broadcast_to(acc, broadcast_shapes(*[x.shape for x in xs]))

    _declare(name, ref, kinds=kinds, inputs=VARIADIC)


_variadic("Sum", np.add, FLOAT)
_variadic("Min", np.minimum, NUMBER)
_variadic("Max", np.maximum, NUMBER)


@op("Mean", inputs=VARIADIC, infer=_infer("Mean", FLOAT), traits=EW)
@_ieee
def mean(*xs):
    acc = xs[0]
    for x in xs[1:]:
        acc = acc + x
    acc = np.broadcast_to(acc, broadcast_shapes(*[x.shape for x in xs]))
    return (acc / np.asarray(len(xs), dtype=xs[0].dtype)).astype(xs[0].dtype)


# -- comparisons and logic ------------------------------------------------------------------

for _name, _fn in [("Equal", np.equal), ("Less", np.less), ("Greater", np.greater),
                   ("LessOrEqual", np.less_equal), ("GreaterOrEqual", np.greater_equal)]:
    _declare(_name, _fn, kinds=ANY, inputs=2, out=DType.BOOL)
_declare("And", np.logical_and, kinds="b", inputs=2)
_declare("Or", np.logical_or, kinds="b", inputs=2)
_declare("Not", np.logical_not, kinds="b")


def _infer_where(inputs):
    c, x, y = (v.type for v in inputs)
    _check("Where", [c], "b")
    _check("Where", [x, y], ANY)
    return x.with_shape(broadcast_shapes(c.shape, x.shape, y.shape))


@op("Where", inputs=3, infer=_infer_where, traits=EW)
def where(cond, x, y):
    return np.where(cond, x, y)


# -- unary math -----------------------------------------------------------------------------

_erf64 = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, exact to double precision (numpy has none), in x's dtype."""
    return _erf64(x.astype(np.float64)).astype(x.dtype)


for _name, _fn, _kinds in [
    ("Sqrt", np.sqrt, FLOAT), ("Exp", np.exp, FLOAT), ("Log", np.log, FLOAT),
    ("Reciprocal", np.reciprocal, FLOAT), ("Floor", np.floor, FLOAT), ("Ceil", np.ceil, FLOAT),
    ("Erf", erf, FLOAT), ("Neg", np.negative, "fi"), ("Abs", np.abs, NUMBER),
]:
    _declare(_name, _fn, kinds=_kinds)


for _name, _fn in [
    ("Sin", np.sin), ("Cos", np.cos), ("Tan", np.tan), ("Asin", np.arcsin),
    ("Acos", np.arccos), ("Atan", np.arctan), ("Sinh", np.sinh), ("Cosh", np.cosh),
    ("Asinh", np.arcsinh), ("Acosh", np.arccosh), ("Atanh", np.arctanh),
    ("Round", np.round),  # halves to even, like C's nearbyint in the default rounding mode
]:
    _declare(_name, _fn, kinds=FLOAT)
_declare("Sign", np.sign, kinds=NUMBER)  # NaN stays NaN, as in onnxruntime
_declare("IsNaN", np.isnan, kinds=FLOAT, out=DType.BOOL)


def is_inf(x: np.ndarray, *, detect_positive: int, detect_negative: int) -> np.ndarray:
    """x == +inf (if detect_positive) or x == -inf (if detect_negative)."""
    return ((x == np.inf) & bool(detect_positive)) | ((x == -np.inf) & bool(detect_negative))


_declare("IsInf", is_inf, kinds=FLOAT, out=DType.BOOL,
         attrs={"detect_positive": Attr.int(1), "detect_negative": Attr.int(1)})


# -- integer remainder and bits -------------------------------------------------------------

def mod(a: np.ndarray, b: np.ndarray, *, fmod: int) -> np.ndarray:
    """fmod=1: C's fmod / %, the sign of the dividend; fmod=0 (integers only): the sign of the
    divisor, as Python's %. A zero divisor gives 0 (onnxruntime stops with an error)."""
    return np.fmod(a, b) if fmod else np.mod(a, b)


def _infer_mod(inputs, *, fmod):
    t = _infer("Mod", NUMBER)(inputs)
    if t.dtype.is_float and not fmod:
        raise ShapeError(f"Mod: float inputs ({t.dtype}) need fmod=1 (ONNX defines fmod=0 "
                         "for integers only)")
    return t


_declare("Mod", mod, kinds=NUMBER, inputs=2, attrs={"fmod": Attr.int(0)}, infer=_infer_mod)


def bit_shift(x: np.ndarray, n: np.ndarray, *, direction: str) -> np.ndarray:
    """x << n or x >> n; shifting by the bit width or more gives 0 (C leaves it undefined)."""
    bits = 8 * x.dtype.itemsize
    shift = np.left_shift if direction == "LEFT" else np.right_shift
    res = shift(x, np.minimum(n, bits - 1).astype(x.dtype))
    return np.where(n < bits, res, np.zeros((), x.dtype))


def _infer_bit_shift(inputs, *, direction):
    if direction not in ("LEFT", "RIGHT"):
        raise ShapeError(f"BitShift: direction must be 'LEFT' or 'RIGHT', not {direction!r}")
    return _infer("BitShift", "u")(inputs)


_declare("BitShift", bit_shift, kinds="u", inputs=2, attrs={"direction": Attr.str()},
         infer=_infer_bit_shift)
_declare("BitwiseAnd", np.bitwise_and, kinds="iu", inputs=2)
_declare("BitwiseOr", np.bitwise_or, kinds="iu", inputs=2)
_declare("BitwiseXor", np.bitwise_xor, kinds="iu", inputs=2)
_declare("BitwiseNot", np.invert, kinds="iu")
_declare("Xor", np.logical_xor, kinds="b", inputs=2)



def _infer_bit_cast(inputs, *, to):
    x = inputs[0].type
    dst = onnx_dtypes.from_onnx(to)
    if dst.itemsize != x.dtype.itemsize:
        raise ShapeError(f"BitCast: {x.dtype} and {dst} differ in size; BitCast keeps the bits, "
                         "so both types must have the same width (Cast converts values)")
    return x.with_dtype(dst)


@op("BitCast", attrs={"to": Attr.int()}, infer=_infer_bit_cast, traits=EW)
def bit_cast(x, *, to):
    """The same bytes read as ONNX type `to` (little endian, as on every edgec target)."""
    return np.ascontiguousarray(x).view(onnx_dtypes.from_onnx(to).np)

# -- activations ----------------------------------------------------------------------------

_declare("Relu", lambda x: np.maximum(x, np.zeros((), x.dtype)), kinds="fi", traits=ACT)
_declare("Tanh", np.tanh, kinds=FLOAT, traits=ACT)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), written so that exp never overflows."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


_declare("Sigmoid", sigmoid, kinds=FLOAT, traits=ACT)
_declare("LeakyRelu", lambda x, *, alpha: np.where(x >= 0, x, x * np.asarray(alpha, x.dtype)),
         kinds=FLOAT, traits=ACT, attrs={"alpha": Attr.float(0.01)})


def hard_sigmoid(x: np.ndarray, *, alpha: float, beta: float) -> np.ndarray:
    """max(0, min(1, alpha * x + beta))."""
    a, b = np.asarray(alpha, x.dtype), np.asarray(beta, x.dtype)
    return np.clip(a * x + b, 0, 1)


_declare("HardSigmoid", hard_sigmoid, kinds=FLOAT, traits=ACT,
         attrs={"alpha": Attr.float(0.2), "beta": Attr.float(0.5)})
_declare("HardSwish", lambda x: x * hard_sigmoid(x, alpha=1 / 6, beta=0.5),
         kinds=FLOAT, traits=ACT)


def gelu(x: np.ndarray, *, approximate: str) -> np.ndarray:
    """x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); "tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x +
    0.044715 x^3)))."""
    if approximate == "tanh":
        inner = np.asarray(math.sqrt(2 / math.pi), x.dtype) * (x + np.asarray(0.044715, x.dtype)
                                                                * x * x * x)
        return np.asarray(0.5, x.dtype) * x * (1 + np.tanh(inner))
    if approximate != "none":
        raise ShapeError(f"Gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    xd = x.astype(np.float64)
    return (0.5 * xd * (1 + _erf64(xd / math.sqrt(2)).astype(np.float64))).astype(x.dtype)


def _infer_gelu(inputs, *, approximate):
    if approximate not in ("none", "tanh"):
        raise ShapeError(f"Gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    _check("Gelu", [inputs[0].type], FLOAT)
    return inputs[0].type


op("Gelu", infer=_infer_gelu, traits=ACT, attrs={"approximate": Attr.str("none")})(_ieee(gelu))


def _infer_prelu(inputs):
    x, s = inputs[0].type, inputs[1].type
    _check("PRelu", [x, s], "fi")
    if broadcast_shapes(x.shape, s.shape) != x.shape:
        raise ShapeError(f"PRelu: slope {s} must broadcast to X {x}")
    return x


@op("PRelu", inputs=2, infer=_infer_prelu, traits=EW)
def prelu(x, slope):
    return np.where(x >= 0, x, x * slope).astype(x.dtype)


def _infer_clip(inputs):
    x = inputs[0].type
    _check("Clip", [x], NUMBER)
    for v in inputs[1:]:
        if v is not None and (v.type.numel != 1 or v.dtype != x.dtype or v.type.rank > 1):
            raise ShapeError(f"Clip: min and max must be scalars of X's dtype {x.dtype}, "
                             f"got {v.type}")
    return x


@op("Clip", inputs=(1, 3), infer=_infer_clip, traits=ACT)
def clip(x, lo=None, hi=None):
    """min(max(x, lo), hi): when lo > hi every element becomes hi, as ONNX specifies."""
    y = x if lo is None else np.maximum(x, lo.reshape(()))
    y = y if hi is None else np.minimum(y, hi.reshape(()))
    return y.astype(x.dtype, copy=False)


# -- exponential-family activations ---------------------------------------------------------

def _f(v: float, x: np.ndarray) -> np.ndarray:
    return np.asarray(v, x.dtype)


def elu(x: np.ndarray, *, alpha: float) -> np.ndarray:
    """x if x >= 0 else alpha (e^x - 1)."""
    return np.where(x >= 0, x, _f(alpha, x) * np.expm1(x))


def selu(x: np.ndarray, *, alpha: float, gamma: float) -> np.ndarray:
    """gamma x if x > 0 else gamma alpha (e^x - 1)."""
    return np.where(x > 0, x, _f(alpha, x) * np.expm1(x)) * _f(gamma, x)


def celu(x: np.ndarray, *, alpha: float) -> np.ndarray:
    """max(0, x) + min(0, alpha (e^(x/alpha) - 1)), i.e. x if x > 0 else alpha (e^(x/alpha) - 1)."""
    a = _f(alpha, x)
    return np.where(x > 0, x, a * np.expm1(x / a))


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow, and exact where e^x is tiny."""
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


_declare("Elu", elu, kinds=FLOAT, traits=ACT, attrs={"alpha": Attr.float(1.0)})
_declare("Selu", selu, kinds=FLOAT, traits=ACT,
         attrs={"alpha": Attr.float(1.67326319217681884765625),
                "gamma": Attr.float(1.05070102214813232421875)})
_declare("Celu", celu, kinds=FLOAT, traits=ACT, attrs={"alpha": Attr.float(1.0)})
_declare("Softplus", softplus, kinds=FLOAT, traits=ACT)
_declare("Softsign", lambda x: x / (1 + np.abs(x)), kinds=FLOAT, traits=ACT)
_declare("Mish", lambda x: x * np.tanh(softplus(x)), kinds=FLOAT, traits=ACT)
_declare("Swish", lambda x, *, alpha: x * sigmoid(_f(alpha, x) * x), kinds=FLOAT, traits=ACT,
         attrs={"alpha": Attr.float(1.0)})
_declare("ThresholdedRelu", lambda x, *, alpha: np.where(x > alpha, x, np.zeros((), x.dtype)),
         kinds=FLOAT, traits=ACT, attrs={"alpha": Attr.float(1.0)})


def shrink(x: np.ndarray, *, bias: float, lambd: float) -> np.ndarray:
    """x + bias if x < -lambd, x - bias if x > lambd, else 0. Integers compare and add in
    float32, as onnxruntime does, and convert back (truncated, saturating: `dtypes.convert`)."""
    xf = x.astype(np.float32) if x.dtype.kind != "f" else x
    b = _f(bias, xf)
    y = np.where(xf < -lambd, xf + b, np.where(xf > lambd, xf - b, np.zeros((), xf.dtype)))
    return convert(y, DType.from_numpy(x.dtype))


_declare("Shrink", shrink, kinds=NUMBER, traits=ACT,
         attrs={"bias": Attr.float(0.0), "lambd": Attr.float(0.5)})
