"""Kernel builders, one module per op family (mirroring edgec/ir/ops). Importing registers them."""

from . import elementwise, fused, nn, reduce, tensor  # noqa: F401
