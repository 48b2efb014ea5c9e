"""Kernel builders, one module per op family (mirroring edgec/ir/ops). Importing registers them."""

from . import (  # noqa: F401
    attention,
    blocked,
    elementwise,
    fused,
    gemm,
    loss,
    nn,
    normalization,
    quant,
    recurrent,
    reduce,
    signal,
    tensor,
)
