"""Kernel builders of the fused ops: the Conv and MatMul kernels with an epilogue.

    FusedConv(X, W, B?, Z?)      = act(Conv(X, W) + B[m] + Z)
    FusedMatMul(A, B, Bias?, Z?) = act(A @ B + Bias + Z)

The epilogue is applied to each accumulator before its final store (see `Epilogue` in
nn.py); each activation's formula is its elementwise op's scalar formula (`SCALARS`), with
`activation_params` passed as that op's attributes, so there is one formula per activation.
"""

from __future__ import annotations

from ...ir.graph import Node
from ..lower import NodeKernelBuilder, kernel
from .activation import activation_of
from .conv import build_conv
from .gemm import vector_gemm
from .matmul import build_matmul


@kernel("FusedConv")
def fused_conv(kb: NodeKernelBuilder, node: Node) -> None:
    build_conv(kb, node, residual=node.input(3), activation=activation_of(node))


@kernel("FusedMatMul")
def fused_matmul(kb: NodeKernelBuilder, node: Node) -> None:
    if vector_gemm(kb, node.inputs[0], node.inputs[1], node.output, node.input(2),
                   node.input(3), node):
        return
    addends = [(v, 1.0) for v in (node.input(2), node.input(3)) if v is not None]
    build_matmul(kb, node.inputs[0], node.inputs[1], node.output, addends=addends,
                 activation=activation_of(node))
