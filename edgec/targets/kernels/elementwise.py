"""Scalar formulas of the elementwise ops (each also yields a broadcasting kernel)."""

from __future__ import annotations

from ..kernel_ir import select
from ..lowering import scalar

scalar("Add")(lambda a, b: a + b)
scalar("Sub")(lambda a, b: a - b)
scalar("Mul")(lambda a, b: a * b)


@scalar("Relu")
def relu(x):
    return select(x < 0, 0.0, x)  # keeps NaN, as numpy's maximum does
