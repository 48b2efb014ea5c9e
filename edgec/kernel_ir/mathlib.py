"""The math helpers of the kernels, each defined once, in the kernel IR: float32 exp and tanh.

The kernel IR's `call("exp")` and `call("tanh")` on float32 mean these functions. The C
renderer prints them into the runtime header (`edgec_runtime.h`, between the markers of
codegen/mathlib_c.py: `python -m edgec.codegen.mathlib_c --write` regenerates it, and a test
fails when it is stale),
the LLVM renderer builds the same operations in the same order, inlined, and the kernel
interpreter runs them, so all three give the same bits.

exp: x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, the first exact in 9 bits), exp(r) by
Cephes' polynomial, times 2^n built as 2^a 2^b with a + b = n, so that results in the denormal
range and past FLT_MAX round and overflow as libm's do; no branches, so loops over it
vectorize. Within 1.4 ulp of exp over all floats (1.5e-45 absolute below FLT_MIN); NaN stays
NaN. tanh: Cephes' tanhf without its branches: 1 - 2 / (exp(2|x|) + 1) with the sign of x for
|x| > 0.625 (1 once exp overflows), an odd polynomial below; within 1 ulp; tanh(-0) is -0.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.dtypes import DType
from .kernel import (
    Expr,
    KernelBuilder,
    Op,
    binary,
    bitcast,
    broadcast,
    call,
    cast,
    const,
    select,
)

F32, I32 = DType.F32, DType.I32


@dataclass(frozen=True)
class MathFunction:
    """result = f(x) after `body` (Locals and Assigns) for x a float32 vector of `lanes`
    (a scalar at 1); `name` is its C name."""

    name: str
    lanes: int
    body: tuple
    result: Expr


def _start(name: str, lanes: int):
    x = Expr(Op.VAR, F32, ("x",), lanes)

    def f(v: float) -> Expr:
        return broadcast(const(v, F32), lanes)

    def i(v: int) -> Expr:
        return broadcast(const(v, I32), lanes)

    return KernelBuilder(name), x, f, i


def expf(lanes: int = 1) -> MathFunction:
    kb, x, f, i = _start("edgec_expf", lanes)
    c = kb.local("c", select(x < f(-104.0), f(-104.0), select(x > f(89.0), f(89.0), x)))
    kb.assign(c, select(c.eq(c), c, f(0.0)))
    n = kb.local("n", call("floor", c * f(1.44269504088896341) + f(0.5)))
    r = kb.local("r", c - n * f(0.693359375))
    kb.assign(r, r - n * f(-2.12194440e-4))
    p = kb.local("p", f(1.9875691500e-4))
    for coef in (1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
                 5.0000001201e-1):
        kb.assign(p, p * r + f(coef))
    kb.assign(p, p * (r * r) + r + f(1.0))
    k = kb.local("k", cast(n, I32) + i(256))  # k > 0: a shift, not a division
    a = kb.local("a", binary("shr", k, i(1)))
    b = kb.local("b", k - a)
    sa = kb.local("sa", bitcast((a - i(1)) * i(8388608), F32))
    sb = kb.local("sb", bitcast((b - i(1)) * i(8388608), F32))
    y = kb.local("y", p * sa * sb)
    return MathFunction("edgec_expf", lanes, tuple(kb.build().body), select(x.eq(x), y, x))


def tanhf(lanes: int = 1) -> MathFunction:
    kb, x, f, _ = _start("edgec_tanhf", lanes)
    a = kb.local("a", call("abs", x))
    e = kb.local("e", call("exp", a + a))
    big = kb.local("big", f(1.0) - f(2.0) / (e + f(1.0)))
    kb.assign(big, select(x < f(0.0), -big, big))
    z = kb.local("z", x * x)
    p = kb.local("p", f(-5.70498872745e-3))
    for coef in (2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1):
        kb.assign(p, p * z + f(coef))
    small = kb.local("small", p * z * x + x)
    kb.assign(small, select(a.eq(f(0.0)), x, small))
    return MathFunction("edgec_tanhf", lanes, tuple(kb.build().body),
                        select(a > f(0.625), big, small))


FUNCTIONS = {"exp": expf, "tanh": tanhf}
