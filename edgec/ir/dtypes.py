"""Element types shared by the graph IR and the kernel IR.

`INDEX` is the kernel IR's type for loop variables and index arithmetic (rendered as
`ptrdiff_t` in C); it is never the dtype of a tensor.
"""

from __future__ import annotations

import enum

import numpy as np


class DType(enum.Enum):
    F16 = "f16"
    F32 = "f32"
    F64 = "f64"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    BOOL = "bool"
    INDEX = "index"

    @property
    def np(self) -> np.dtype:
        if self is DType.INDEX:
            return np.dtype(np.int64)
        return np.dtype(_TO_NUMPY[self])

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    @property
    def is_float(self) -> bool:
        return self in (DType.F16, DType.F32, DType.F64)

    @property
    def is_int(self) -> bool:
        return not self.is_float and self is not DType.BOOL

    @property
    def is_signed(self) -> bool:
        return self.is_float or self.value.startswith("i")

    @staticmethod
    def from_numpy(dt) -> DType:
        dt = np.dtype(dt)
        for d, name in _TO_NUMPY.items():
            if np.dtype(name) == dt:
                return d
        raise ValueError(f"numpy dtype {dt} has no edgec dtype")

    @staticmethod
    def parse(text: str) -> DType:
        return DType(text)

    def __str__(self) -> str:
        return self.value


_TO_NUMPY = {
    DType.F16: "float16",
    DType.F32: "float32",
    DType.F64: "float64",
    DType.I8: "int8",
    DType.I16: "int16",
    DType.I32: "int32",
    DType.I64: "int64",
    DType.U8: "uint8",
    DType.U16: "uint16",
    DType.U32: "uint32",
    DType.U64: "uint64",
    DType.BOOL: "bool",
}
