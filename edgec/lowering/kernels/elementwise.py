"""Scalar formulas of the elementwise ops; each also yields a broadcasting kernel.

A formula maps the input expressions (and the op's attributes as keywords) to the output
expression. The same formulas are the epilogues of fused kernels, e.g.
`SCALARS["Clip"](acc, const(0.0, F32), const(6.0, F32))`. They follow the numpy references in
`edgec/ir/ops/elementwise.py`, NaN handling included: Max/Min/Clip propagate NaN as
np.maximum/np.minimum do, and Sigmoid = 1/(1+e) or e/(1+e) with e = exp(-|x|), so exp never
overflows. Integer Div and Mod truncate like C; a zero divisor gives 0 (as numpy's reference
does) instead of a trap, and Mod with fmod=0 adds the divisor to a remainder of the other sign.
float16 operands are computed in float32 and rounded once. Hardmax, the one kernel here that
is not elementwise, sits at the end.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ...ir import onnx_dtypes
from ...ir.dtypes import DType
from ...ir.graph import Node
from ...kernel_ir.kernel import Expr, binary, bitcast, call, cast, const, convert, select
from ..lower import NodeKernelBuilder, kernel, scalar

F16, F32 = DType.F16, DType.F32


def _in_f32(fn: Callable[..., Expr]) -> Callable[..., Expr]:
    """`fn` with float16 operands widened to float32 and a float16 result rounded once at the
    end, so a chain like Selu's gamma * alpha * expm1(x) never rounds to half precision midway (C
    compilers may evaluate _Float16 arithmetic in either precision)."""

    def formula(*xs, **attrs) -> Expr:
        if not any(isinstance(x, Expr) and x.dtype is F16 for x in xs):
            return fn(*xs, **attrs)
        y = fn(*[cast(x, F32) if isinstance(x, Expr) and x.dtype is F16 else x for x in xs],
               **attrs)
        return cast(y, F16) if xs[0].dtype is F16 and y.dtype is F32 else y

    return formula


def ew(op: str):
    """Register the scalar formula of `op` (see `lowering.scalar`), float16 computed in float32;
    the function itself stays undecorated, for other formulas to call."""

    def deco(fn: Callable[..., Expr]) -> Callable[..., Expr]:
        scalar(op)(_in_f32(fn))
        return fn

    return deco


def _zero(x: Expr) -> Expr:
    return const(0, x.dtype)


def _is_nan(x: Expr) -> Expr:
    return call("isnan", x)


def max_nan(a: Expr, b: Expr) -> Expr:
    """np.maximum: the larger operand, NaN if either is NaN (C's fmaxf drops NaN)."""
    if not a.dtype.is_float:
        return select(b > a, b, a)
    return select((b > a) | _is_nan(b), b, a)


def min_nan(a: Expr, b: Expr) -> Expr:
    """np.minimum: the smaller operand, NaN if either is NaN."""
    if not a.dtype.is_float:
        return select(b < a, b, a)
    return select((b < a) | _is_nan(b), b, a)


def _like(x: Expr, v) -> Expr | None:
    """Bound `v` (None, a number or an expression) in x's dtype: epilogues may pass const(0.0)."""
    if v is None:
        return None
    if not isinstance(v, Expr) or v.is_const:
        return const(v.value if isinstance(v, Expr) else v, x.dtype)
    return cast(v, x.dtype)


def _clamp(x: Expr, lo, hi) -> Expr:
    # `x < lo ? lo : x` keeps a NaN x (as np.clip does) and maps onto maxps/minps
    lo, hi = _like(x, lo), _like(x, hi)
    y = x if lo is None else select(x < lo, lo, x)
    return y if hi is None else select(y > hi, hi, y)


# -- arithmetic -----------------------------------------------------------------------------

ew("Add")(lambda a, b: a + b)
ew("Sub")(lambda a, b: a - b)
ew("Mul")(lambda a, b: a * b)


@ew("Div")
def div(a: Expr, b: Expr) -> Expr:
    if a.dtype.is_float:
        return a / b
    if b.is_const and b.value != 0:
        return a / b
    return select(b.eq(0), _zero(a), a / b)


@ew("Pow")
def pow_(x: Expr, y: Expr) -> Expr:
    if x.dtype.is_float:
        if y.is_const and float(y.value) == 2.0:
            return x * x  # exactly what a correctly rounded pow gives
        if y.is_const and float(y.value) == 1.0:
            return x
        return call("pow", x, cast(y, x.dtype))
    # integer base: the C pow of doubles converted back (saturating), as the reference does
    f = call("pow", cast(x, DType.F64), cast(y, DType.F64))
    return convert(f, x.dtype)


def _fold(fn):
    def formula(*xs: Expr) -> Expr:
        acc = xs[0]
        for x in xs[1:]:
            acc = fn(acc, x)
        return acc

    return formula


ew("Sum")(_fold(lambda a, b: a + b))
ew("Max")(_fold(max_nan))
ew("Min")(_fold(min_nan))


@ew("Mean")
def mean(*xs: Expr) -> Expr:
    return _fold(lambda a, b: a + b)(*xs) / const(len(xs), xs[0].dtype)


# -- comparisons and logic ------------------------------------------------------------------

ew("Equal")(lambda a, b: a.eq(b))
ew("Less")(lambda a, b: a < b)
ew("Greater")(lambda a, b: a > b)
ew("LessOrEqual")(lambda a, b: a <= b)
ew("GreaterOrEqual")(lambda a, b: a >= b)
ew("And")(lambda a, b: a & b)
ew("Or")(lambda a, b: a | b)
ew("Not")(lambda x: ~x)
ew("Where")(lambda c, x, y: select(c, x, y))


# -- unary math -----------------------------------------------------------------------------

for _op, _fn in [("Sqrt", "sqrt"), ("Exp", "exp"), ("Log", "log"), ("Floor", "floor"),
                 ("Ceil", "ceil"), ("Erf", "erf"), ("Tanh", "tanh")]:
    ew(_op)(lambda x, _fn=_fn: call(_fn, x))

ew("Reciprocal")(lambda x: const(1, x.dtype) / x)
ew("Neg")(lambda x: -x)


@ew("Abs")
def abs_(x: Expr) -> Expr:
    return x if x.dtype.is_int and not x.dtype.is_signed else call("abs", x)


for _op, _fn in [("Sin", "sin"), ("Cos", "cos"), ("Tan", "tan"), ("Asin", "asin"),
                 ("Acos", "acos"), ("Atan", "atan"), ("Sinh", "sinh"), ("Cosh", "cosh"),
                 ("Asinh", "asinh"), ("Acosh", "acosh"), ("Atanh", "atanh"),
                 ("Round", "round"), ("IsNaN", "isnan")]:
    ew(_op)(lambda x, _fn=_fn: call(_fn, x))


@ew("Sign")
def sign(x: Expr) -> Expr:
    one = const(1, x.dtype)
    if not x.dtype.is_signed:
        return select(x > 0, one, _zero(x))
    rest = x if x.dtype.is_float else _zero(x)  # a float zero or NaN is its own sign
    return select(x > 0, one, select(x < 0, -one, rest))


@ew("IsInf")
def is_inf(x: Expr, detect_positive: int = 1, detect_negative: int = 1) -> Expr:
    inf = const(math.inf, x.dtype)
    if detect_positive and detect_negative:
        return call("isinf", x)
    if detect_positive:
        return x.eq(inf)
    return x.eq(-inf) if detect_negative else const(False, DType.BOOL)


# -- integer remainder and bits -------------------------------------------------------------

def _rem(a: Expr, b: Expr) -> Expr:
    """C's truncated a % b, guarded: 0 for b == 0 (the reference's value, not a trap) and for
    b == -1 (the right answer, where INT_MIN % -1 would trap)."""
    if b.is_const and b.value not in (0, -1):
        return a % b
    bad = b.eq(0) | b.eq(-1) if a.dtype.is_signed else b.eq(0)
    return select(bad, _zero(a), a % b)


@ew("Mod")
def mod(a: Expr, b: Expr, fmod: int = 0) -> Expr:
    """fmod=1: the sign of the dividend (C's fmod and %); fmod=0: the sign of the divisor,
    so a nonzero remainder of the other sign moves by one divisor. (Float inputs always have
    fmod=1: inference refuses the other.)"""
    if a.dtype.is_float:
        return a % b  # the renderer spells a float remainder fmod
    r = _rem(a, b)
    if fmod or not a.dtype.is_signed:
        return r
    if b.is_const:
        return select(r < 0 if b.value > 0 else r > 0, r + b, r)
    return r + select(((r < 0) & (b > 0)) | ((r > 0) & (b < 0)), b, _zero(a))


@ew("BitShift")
def bit_shift(x: Expr, n: Expr, direction: str = "LEFT") -> Expr:
    """x << n or x >> n, 0 once n reaches the bit width (undefined in C). uint8 and uint16 are
    shifted as uint32: C would promote them to a signed int, which a left shift can overflow."""
    bits = 8 * x.dtype.itemsize
    wide = x.dtype if bits >= 32 else DType.U32
    shifted = binary("shl" if direction == "LEFT" else "shr", cast(x, wide), cast(n, wide))
    return select(n < bits, cast(shifted, x.dtype), _zero(x))


ew("BitwiseAnd")(lambda a, b: binary("bitand", a, b))
ew("BitwiseOr")(lambda a, b: binary("bitor", a, b))
ew("BitwiseXor")(lambda a, b: binary("bitxor", a, b))
ew("Xor")(lambda a, b: a.ne(b))


@scalar("BitCast")  # bits, not values: no float16 widening
def bit_cast(x: Expr, to: int) -> Expr:
    return bitcast(x, onnx_dtypes.from_onnx(to))


@ew("BitwiseNot")
def bitwise_not(x: Expr) -> Expr:
    ones = -1 if x.dtype.is_signed else (1 << (8 * x.dtype.itemsize)) - 1
    return binary("bitxor", x, const(ones, x.dtype))


# -- activations ----------------------------------------------------------------------------

@ew("Relu")
def relu(x: Expr) -> Expr:
    return select(x < 0, _zero(x), x)  # keeps NaN, as numpy's maximum does


@ew("LeakyRelu")
def leaky_relu(x: Expr, alpha: float = 0.01) -> Expr:
    return select(x < 0, x * const(alpha, x.dtype), x)


ew("PRelu")(lambda x, slope: select(x < 0, x * slope, x))


@ew("Clip")
def clip(x: Expr, lo=None, hi=None) -> Expr:
    """min(max(x, lo), hi); either bound may be None (absent), a number or an expression."""
    return _clamp(x, lo, hi)


@ew("Sigmoid")
def sigmoid(x: Expr) -> Expr:
    e = call("exp", -call("abs", x))
    one = const(1, x.dtype)
    return select(x >= 0, one / (one + e), e / (one + e))


@ew("HardSigmoid")
def hard_sigmoid(x: Expr, alpha: float = 0.2, beta: float = 0.5) -> Expr:
    y = const(alpha, x.dtype) * x + const(beta, x.dtype)
    return _clamp(y, _zero(x), const(1, x.dtype))


@ew("HardSwish")
def hard_swish(x: Expr) -> Expr:
    return x * hard_sigmoid(x, 1 / 6, 0.5)


@ew("Gelu")
def gelu(x: Expr, approximate: str = "none") -> Expr:
    """0.5 x (1 + erf(x / sqrt 2)); "tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    half, one = const(0.5, x.dtype), const(1, x.dtype)
    if approximate == "tanh":
        cube = const(0.044715, x.dtype) * x * x * x
        inner = const(math.sqrt(2 / math.pi), x.dtype) * (x + cube)
        return half * x * (one + call("tanh", inner))
    return half * x * (one + call("erf", x * const(math.sqrt(0.5), x.dtype)))


@ew("Swish")
def swish(x: Expr, alpha: float = 1.0) -> Expr:
    return x * sigmoid(const(alpha, x.dtype) * x)


def _expm1_scaled(x: Expr, alpha: float) -> Expr:
    return const(alpha, x.dtype) * call("expm1", x)


@ew("Elu")
def elu(x: Expr, alpha: float = 1.0) -> Expr:
    return select(x < 0, _expm1_scaled(x, alpha), x)


@ew("Selu")
def selu(x: Expr, alpha: float = 1.67326319217681884765625,
         gamma: float = 1.05070102214813232421875) -> Expr:
    return select(x > 0, x, _expm1_scaled(x, alpha)) * const(gamma, x.dtype)


@ew("Celu")
def celu(x: Expr, alpha: float = 1.0) -> Expr:
    return select(x > 0, x, _expm1_scaled(x / const(alpha, x.dtype), alpha))


@ew("Softplus")
def softplus(x: Expr) -> Expr:
    """max(x, 0) + log1p(exp(-|x|)): exp never overflows, and a tiny e^x is kept exactly."""
    return select(x > 0, x, _zero(x)) + call("log1p", call("exp", -call("abs", x)))


ew("Softsign")(lambda x: x / (const(1, x.dtype) + call("abs", x)))
ew("Mish")(lambda x: x * call("tanh", softplus(x)))


@ew("ThresholdedRelu")
def thresholded_relu(x: Expr, alpha: float = 1.0) -> Expr:
    return select(x > const(alpha, x.dtype), x, _zero(x))


@ew("Shrink")
def shrink(x: Expr, bias: float = 0.0, lambd: float = 0.5) -> Expr:
    """Integers compare and add in float32 and convert back (truncated, saturating), as the
    reference does."""
    xf = x if x.dtype.is_float else cast(x, F32)
    b, lam = const(bias, xf.dtype), const(lambd, xf.dtype)
    y = select(xf < -lam, xf + b, select(xf > lam, xf - b, _zero(xf)))
    return convert(y, x.dtype)


# -- Hardmax (not elementwise: the one-hot of each row's first maximum) -----------------------

@kernel("Hardmax")
def hardmax(kb: NodeKernelBuilder, node: Node) -> None:
    """Scan each row along the axis with `v > best`, as onnxruntime does, then write 1 at the
    winner and 0 elsewhere: a NaN is skipped, and a row starting with NaN is all 0."""
    x_v = node.inputs[0]
    rank = len(x_v.shape)
    axis = node.attrs["axis"] + (rank if node.attrs["axis"] < 0 else 0)
    outer, n = math.prod(x_v.shape[:axis]), x_v.shape[axis]
    inner = math.prod(x_v.shape[axis + 1:])
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    one, zero = const(1, y.dtype), const(0, y.dtype)
    with kb.loops([outer, inner], ["o", "i"]) as (o, i):
        base = o * (n * inner) + i
        best = kb.local("best", x[base])
        arg = kb.local("arg", const(0))
        with kb.loop(n - 1, "a") as a:
            v = x[base + (a + 1) * inner]
            with kb.if_(v > best):
                kb.assign(best, v)
                kb.assign(arg, a + 1)
        won = ~call("isnan", best) if x.dtype.is_float else const(True, DType.BOOL)
        with kb.loop(n, "a") as a:
            kb.store(y, base + a * inner, select(a.eq(arg) & won, one, zero))
