"""Element types shared by the graph IR and the kernel IR.

`INDEX` is the kernel IR's type for loop variables and index arithmetic (rendered as
`ptrdiff_t` in C); it is never the dtype of a tensor.

Sub-byte integers (int4, int3, int2 and their unsigned forms; ONNX's INT4/UINT4/INT2/UINT2)
hold one value per byte in tensors, as int8/uint8 with the type's range (`bits`): numpy,
the C renderer and the runtime see their 8-bit storage. Packed forms (two 4-bit weights to a
byte) are weight encodings (ir/encodings.py), made by a pass where a kernel reads them.
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np


class DType(enum.Enum):
    F16 = "f16"
    BF16 = "bf16"  # bfloat16 (ml_dtypes' numpy type): a GPU's tensor-core operand
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
    I4 = "i4"
    I3 = "i3"
    I2 = "i2"
    U4 = "u4"
    U3 = "u3"
    U2 = "u2"
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
    def bits(self) -> int:
        """Significant bits: 4 for int4 (stored in a byte), 8 * itemsize otherwise."""
        return SUB_BYTE.get(self, 8 * self.itemsize)

    @property
    def storage(self) -> DType:
        """The type whose bytes hold this one's values: int8/uint8 for the sub-byte ints."""
        return (DType.I8 if self.is_signed else DType.U8) if self in SUB_BYTE else self

    @property
    def is_float(self) -> bool:
        return self in (DType.F16, DType.BF16, DType.F32, DType.F64)

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
    DType.BF16: ml_dtypes.bfloat16,
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
    # after the 8-bit types: numpy's int8 and uint8 map back to those
    DType.I4: "int8", DType.I3: "int8", DType.I2: "int8",
    DType.U4: "uint8", DType.U3: "uint8", DType.U2: "uint8",
}
SUB_BYTE = {DType.I4: 4, DType.I3: 3, DType.I2: 2, DType.U4: 4, DType.U3: 3, DType.U2: 2}


def int_range(dtype: DType) -> tuple[int, int]:
    """The least and greatest value of integer `dtype` (of its bits, for sub-byte types)."""
    if dtype.is_signed:
        return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
    return 0, (1 << dtype.bits) - 1


def wrap_sub_byte(x: np.ndarray, dtype: DType) -> np.ndarray:
    """Integers `x` with only the low `dtype.bits` bits kept (two's complement), stored in
    `dtype`'s byte: the narrowing an integer takes to a sub-byte type."""
    m = (1 << dtype.bits) - 1
    v = np.asarray(x).astype(np.int64) & m
    if dtype.is_signed:
        v = (v ^ (1 << (dtype.bits - 1))) - (1 << (dtype.bits - 1))
    return v.astype(dtype.np)


def int_range_as_float(dtype: DType) -> tuple[float, float]:
    """[lo, top) of the floats that convert to integer `dtype` without saturating: its minimum
    and 2^(bits - sign), both exact in every float type from float32 up."""
    return float(int_range(dtype)[0]), 2.0 ** (dtype.bits - dtype.is_signed)


def convert(x: np.ndarray, dtype: DType) -> np.ndarray:
    """`x` as `dtype`, by edgec's value conversion, the same on every target and backend:

    - float to integer truncates toward zero and saturates: NaN gives 0, a value below the
      type's range its minimum, one above its maximum (as XLA's ConvertElementType, WebAssembly's
      trunc_sat, Rust's `as` and Arm's FCVTZS/FCVTZU; C leaves these cases undefined, and x86's
      SSE and AVX-512 conversions disagree on them);
    - integer to a narrower integer keeps the low bits (two's complement), as ONNX's Cast says;
    - float to a narrower float rounds to nearest even, overflowing to +-inf;
    - to bool: nonzero (NaN included) is true;
    - to a sub-byte integer: as to int32, then the low bits kept (two's complement; float -9
      is int4 7 and -3 is uint2 1), as ONNX's Cast and ml_dtypes do.
    """
    x = np.asarray(x)
    if dtype in SUB_BYTE:
        return wrap_sub_byte(convert(x, DType.I32) if x.dtype.kind == "f" else x, dtype)
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
