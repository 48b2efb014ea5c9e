"""The built-in ops, one module per family. Importing this package registers them all."""

from . import (  # noqa: F401
    attention,
    control,
    elementwise,
    fused,
    layout,
    loss,
    nn,
    normalization,
    quant,
    recurrent,
    reduce,
    signal,
    sparse,
    tensor,
)
