"""Tensor types: a static shape and an element type. Every shape is known at compile time."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .dtypes import DType


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: DType

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def with_shape(self, shape) -> TensorType:
        return TensorType(tuple(shape), self.dtype)

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(self.shape, dtype)

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"
