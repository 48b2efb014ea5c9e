"""The built-in ops, one module per family. Importing this package registers them all."""

from . import control, elementwise, fused, nn, reduce, tensor  # noqa: F401
