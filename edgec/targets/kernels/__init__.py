"""Kernel builders, one module per op family (mirroring edgec/ir/ops). Importing registers them."""

from . import (  # noqa: F401
    attention,
    blocked,
    blocked_quant,
    conv,
    elementwise,
    fused,
    gemm,
    index,
    loss,
    matmul,
    nn,
    normalization,
    pool,
    quant,
    quant_conv,
    recurrent,
    reduce,
    signal,
    sparse,
    tensor,
)
