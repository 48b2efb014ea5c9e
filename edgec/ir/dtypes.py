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


def int_range_as_float(dtype: DType) -> tuple[float, float]:
    """[lo, top) of the floats that convert to integer `dtype` without saturating: its minimum
    and 2^(bits - sign), both exact in every float type from float32 up."""
    info = np.iinfo(dtype.np)
    return float(info.min), 2.0 ** (8 * dtype.itemsize - dtype.is_signed)


def convert(x: np.ndarray, dtype: DType) -> np.ndarray:
    """`x` as `dtype`, by edgec's value conversion, the same on every target and backend:

    - float to integer truncates toward zero and saturates: NaN gives 0, a value below the
      type's range its minimum, one above its maximum (as XLA's ConvertElementType, WebAssembly's
      trunc_sat, Rust's `as` and Arm's FCVTZS/FCVTZU; C leaves these cases undefined, and x86's
      SSE and AVX-512 conversions disagree on them);
    - integer to a narrower integer keeps the low bits (two's complement), as ONNX's Cast says;
    - float to a narrower float rounds to nearest even, overflowing to +-inf;
    - to bool: nonzero (NaN included) is true.
    """
    x = np.asarray(x)
    if x.dtype.kind != "f" or not dtype.is_int:
        with np.errstate(all="ignore"):
            return x.astype(dtype.np)
    lo, top = int_range_as_float(dtype)
    wide = x.astype(np.float64)  # exact for every float type
    inside = (wide >= lo) & (wide < top)  # NaN is neither
    y = np.where(inside, wide, 0.0).astype(dtype.np)
    info = np.iinfo(dtype.np)
    y[wide < lo] = info.min
    y[wide >= top] = info.max
    return y
