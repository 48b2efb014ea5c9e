"""Scalar formulas of the elementwise ops; each also yields a broadcasting kernel.

A formula maps the input expressions (and the op's attributes as keywords) to the output
expression. The same formulas are the epilogues of fused kernels, e.g.
`SCALARS["Clip"](acc, const(0.0, F32), const(6.0, F32))`. They follow the numpy references in
`edgec/ir/ops/elementwise.py`, NaN handling included: Max/Min/Clip propagate NaN as
np.maximum/np.minimum do, and Sigmoid = 1/(1+e) or e/(1+e) with e = exp(-|x|), so exp never
overflows. Integer Div truncates toward zero like C; dividing by zero gives 0 (as numpy's
reference does) instead of a trap.
"""

from __future__ import annotations

import math

from ...ir.dtypes import DType
from ..kernel_ir import Expr, call, cast, const, select
from ..lowering import scalar


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

scalar("Add")(lambda a, b: a + b)
scalar("Sub")(lambda a, b: a - b)
scalar("Mul")(lambda a, b: a * b)


@scalar("Div")
def div(a: Expr, b: Expr) -> Expr:
    if a.dtype.is_float:
        return a / b
    if b.is_const and b.value != 0:
        return a / b
    return select(b.eq(0), _zero(a), a / b)


@scalar("Pow")
def pow_(x: Expr, y: Expr) -> Expr:
    if x.dtype.is_float:
        if y.is_const and float(y.value) == 2.0:
            return x * x  # exactly what a correctly rounded pow gives
        if y.is_const and float(y.value) == 1.0:
            return x
        return call("pow", x, cast(y, x.dtype))
    # integer base: the C pow of doubles truncated back, as the reference (and onnxruntime)
    f = call("pow", cast(x, DType.F64), cast(y, DType.F64))
    return cast(f, x.dtype)


def _fold(fn):
    def formula(*xs: Expr) -> Expr:
        acc = xs[0]
        for x in xs[1:]:
            acc = fn(acc, x)
        return acc

    return formula


scalar("Sum")(_fold(lambda a, b: a + b))
scalar("Max")(_fold(max_nan))
scalar("Min")(_fold(min_nan))


@scalar("Mean")
def mean(*xs: Expr) -> Expr:
    return _fold(lambda a, b: a + b)(*xs) / const(len(xs), xs[0].dtype)


# -- comparisons and logic ------------------------------------------------------------------

scalar("Equal")(lambda a, b: a.eq(b))
scalar("Less")(lambda a, b: a < b)
scalar("Greater")(lambda a, b: a > b)
scalar("LessOrEqual")(lambda a, b: a <= b)
scalar("GreaterOrEqual")(lambda a, b: a >= b)
scalar("And")(lambda a, b: a & b)
scalar("Or")(lambda a, b: a | b)
scalar("Not")(lambda x: ~x)
scalar("Where")(lambda c, x, y: select(c, x, y))


# -- unary math -----------------------------------------------------------------------------

for _op, _fn in [("Sqrt", "sqrt"), ("Exp", "exp"), ("Log", "log"), ("Floor", "floor"),
                 ("Ceil", "ceil"), ("Erf", "erf"), ("Tanh", "tanh")]:
    scalar(_op)(lambda x, _fn=_fn: call(_fn, x))

scalar("Reciprocal")(lambda x: const(1, x.dtype) / x)
scalar("Neg")(lambda x: -x)


@scalar("Abs")
def abs_(x: Expr) -> Expr:
    return x if x.dtype.is_int and not x.dtype.is_signed else call("abs", x)


# -- activations ----------------------------------------------------------------------------

@scalar("Relu")
def relu(x: Expr) -> Expr:
    return select(x < 0, _zero(x), x)  # keeps NaN, as numpy's maximum does


@scalar("LeakyRelu")
def leaky_relu(x: Expr, alpha: float = 0.01) -> Expr:
    return select(x < 0, x * const(alpha, x.dtype), x)


scalar("PRelu")(lambda x, slope: select(x < 0, x * slope, x))


@scalar("Clip")
def clip(x: Expr, lo=None, hi=None) -> Expr:
    """min(max(x, lo), hi); either bound may be None (absent), a number or an expression."""
    return _clamp(x, lo, hi)


@scalar("Sigmoid")
def sigmoid(x: Expr) -> Expr:
    e = call("exp", -call("abs", x))
    one = const(1, x.dtype)
    return select(x >= 0, one / (one + e), e / (one + e))


@scalar("HardSigmoid")
def hard_sigmoid(x: Expr, alpha: float = 0.2, beta: float = 0.5) -> Expr:
    y = const(alpha, x.dtype) * x + const(beta, x.dtype)
    return _clamp(y, _zero(x), const(1, x.dtype))


@scalar("HardSwish")
def hard_swish(x: Expr) -> Expr:
    return x * hard_sigmoid(x, 1 / 6, 0.5)


@scalar("Gelu")
def gelu(x: Expr, approximate: str = "none") -> Expr:
    """0.5 x (1 + erf(x / sqrt 2)); "tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    half, one = const(0.5, x.dtype), const(1, x.dtype)
    if approximate == "tanh":
        cube = const(0.044715, x.dtype) * x * x * x
        inner = const(math.sqrt(2 / math.pi), x.dtype) * (x + cube)
        return half * x * (one + call("tanh", inner))
    return half * x * (one + call("erf", x * const(math.sqrt(0.5), x.dtype)))
