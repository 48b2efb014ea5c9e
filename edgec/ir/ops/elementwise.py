"""Elementwise ops: arithmetic with numpy broadcasting, math functions, activations."""

from __future__ import annotations

import numpy as np

from ..registry import broadcast, op, same_as


def _binary(name: str, fn):
    op(name, inputs=2, infer=broadcast(), traits=("elementwise",))(
        lambda a, b: fn(a, b).astype(a.dtype))


_binary("Add", np.add)
_binary("Sub", np.subtract)
_binary("Mul", np.multiply)


@op("Relu", infer=same_as(0), traits=("elementwise", "activation"))
def relu(x):
    return np.maximum(x, 0).astype(x.dtype)
