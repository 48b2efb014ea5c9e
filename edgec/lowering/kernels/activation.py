"""The activation of a fused Conv, MatMul or sparse kernel as a scalar (or lane-wise) formula:
each activation's formula is its elementwise op's (`SCALARS`), with the node's
`activation_params` as that op's attributes, so there is one formula per activation."""

from __future__ import annotations

from ...ir.graph import Node
from ...ir.ops.fused import ACTIVATION_PARAMS
from ...kernel_ir.kernel import Expr, const
from ..lower import SCALARS
from .common import Activation


def activation_of(node: Node) -> Activation | None:
    """The scalar formula of the node's `activation` (None for no activation)."""
    return activation_formula(node.attrs["activation"], node.attrs["activation_params"])


def activation_key(node: Node) -> str:
    """The node's activation with its parameters, as micro-kernels are specialised on it
    (Clip [0, 6] -> "Clip_0_6")."""
    return node.attrs["activation"] + "".join(f"_{p:g}" for p in node.attrs["activation_params"])


def activation_formula(name: str, params) -> Activation | None:
    """The scalar (or lane-wise) formula of activation `name` with `params`."""
    if not name:
        return None
    formula = SCALARS[name]
    if name == "Clip":  # Clip's bounds are inputs of the op, so its formula takes exprs
        lo, hi = params

        def clip(x: Expr) -> Expr:
            return formula(x, const(lo, x.dtype), const(hi, x.dtype))

        return clip
    attrs = dict(zip(ACTIVATION_PARAMS[name], params, strict=True))
    return lambda x: formula(x, **attrs)
