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
from ..strategies import Kind
from .activation import activation_of
from .conv import build_conv
from .gemm import vector_gemm, vector_gemm_candidate
from .matmul import build_matmul, matmul_candidates


@kernel("FusedConv")
def fused_conv(kb: NodeKernelBuilder, node: Node) -> None:
    build_conv(kb, node, residual=node.input(3), activation=activation_of(node))


@kernel("FusedMatMul")
def fused_matmul(kb: NodeKernelBuilder, node: Node) -> None:
    a_v, b_v, y_v, bias_v, z_v = (node.inputs[0], node.inputs[1], node.output, node.input(2),
                                  node.input(3))
    c = kb.choose([vector_gemm_candidate(kb.target, a_v, b_v, y_v, bias_v, z_v, node),
                   *matmul_candidates(kb.target, a_v, b_v, y_v)])
    if c.kind is Kind.VECTOR_GEMM:
        vector_gemm(kb, c, a_v, b_v, y_v, bias_v, z_v, node)
        return
    addends = [(v, 1.0) for v in (bias_v, z_v) if v is not None]
    build_matmul(kb, a_v, b_v, y_v, addends=addends, activation=activation_of(node),
                 form=c.kind)
