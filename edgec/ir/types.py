"""Tensor types: a static shape and an element type. Every shape is known at compile time.

A quantized tensor's type also carries its quantization parameters (`QuantParams`): real =
scale * (q - zero_point), per tensor or per slice along `axis`, with `bits` significant bits
of the integer type (4 for int4 codes held in int8). The text IR prints them after the shape,
`u8[1,16,8,8] quant<scale=0.02, zp=128>`; they describe the value and take no part in type
equality (two values of one shape and dtype are interchangeable to shape inference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ShapeError
from .dtypes import DType

# The most bytes one tensor may hold: generated code indexes with ptrdiff_t, 32 bits on the
# 32-bit ARM targets. A model declaring more (a huge or corrupt dim) is refused on import.
MAX_TENSOR_BYTES = (1 << 31) - 1


@dataclass(frozen=True)
class QuantParams:
    """real = scale * (q - zero_point); per tensor (one scale) or per slice along `axis`."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None
    bits: int = 8

    @staticmethod
    def of(scale, zero_point=None, axis: int | None = None, bits: int = 8) -> QuantParams:
        s = tuple(float(np.float32(x)) for x in np.asarray(scale).reshape(-1))
        z = (0,) * len(s) if zero_point is None else \
            tuple(int(x) for x in np.asarray(zero_point).reshape(-1))
        return QuantParams(s, z, axis if len(s) > 1 else None, bits)

    def __str__(self) -> str:
        def fmt(vals, as_float):
            text = [str(np.float32(v)) if as_float else str(v) for v in vals]
            return text[0] if len(text) == 1 and self.axis is None else f"[{', '.join(text)}]"

        parts = [] if self.axis is None else [f"axis={self.axis}"]
        parts += [f"scale={fmt(self.scale, True)}", f"zp={fmt(self.zero_point, False)}"]
        parts += [] if self.bits == 8 else [f"bits={self.bits}"]
        return f"quant<{', '.join(parts)}>"


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: DType
    quant: QuantParams | None = field(default=None, compare=False)

    def __post_init__(self):
        shape = tuple(int(d) for d in self.shape)
        object.__setattr__(self, "shape", shape)
        if any(d < 0 for d in shape):
            raise ShapeError(f"shape {list(shape)} has a negative dim")
        if math.prod(shape) * self.dtype.itemsize > MAX_TENSOR_BYTES:
            raise ShapeError(f"a {self.dtype.value}{list(shape)} tensor holds "
                             f"{math.prod(shape) * self.dtype.itemsize} bytes; edgec's libraries "
                             f"hold at most {MAX_TENSOR_BYTES} bytes per tensor (2 GiB: 32-bit "
                             "targets index memory with 32 bits)")

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

    def with_quant(self, quant: QuantParams | None) -> TensorType:
        return TensorType(self.shape, self.dtype, quant)

    def __str__(self) -> str:
        text = f"{self.dtype}[{','.join(map(str, self.shape))}]"
        return text if self.quant is None else f"{text} {self.quant}"
