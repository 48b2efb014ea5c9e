"""Kernel builders of the fused ops: the Conv and MatMul kernels with an epilogue.

    FusedConv(X, W, B?, Z?)      = act(Conv(X, W) + B[m] + Z)
    FusedMatMul(A, B, Bias?, Z?) = act(A @ B + Bias + Z)

The epilogue is applied to each accumulator before its final store (see `Epilogue` in
nn.py); each activation's formula is its elementwise op's scalar formula (`SCALARS`), with
`activation_params` passed as that op's attributes, so there is one formula per activation.
"""

from __future__ import annotations

from ...ir.graph import Node
from ...ir.ops.fused import ACTIVATION_PARAMS
from ..kernel_ir import Expr, const
from ..lowering import SCALARS, NodeKernelBuilder, kernel
from .common import Activation
from .conv import build_conv
from .matmul import build_matmul


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


@kernel("FusedConv")
def fused_conv(kb: NodeKernelBuilder, node: Node) -> None:
    build_conv(kb, node, residual=node.input(3), activation=activation_of(node))


@kernel("FusedMatMul")
def fused_matmul(kb: NodeKernelBuilder, node: Node) -> None:
    from .gemm import vector_gemm

    if vector_gemm(kb, node.inputs[0], node.inputs[1], node.output, node.input(2),
                   node.input(3), node):
        return
    addends = [(v, 1.0) for v in (node.input(2), node.input(3)) if v is not None]
    build_matmul(kb, node.inputs[0], node.inputs[1], node.output, addends=addends,
                 activation=activation_of(node))
