"""ONNX element-type codes (TensorProto.DataType) and edgec's DType, both ways.

Kept free of any onnx import: the IR needs only these integers (Cast's `to`, tensor attributes).
"""

from __future__ import annotations

from ..errors import FrontendError
from .dtypes import DType

TO_ONNX: dict[DType, int] = {
    DType.F32: 1, DType.U8: 2, DType.I8: 3, DType.U16: 4, DType.I16: 5, DType.I32: 6,
    DType.I64: 7, DType.BOOL: 9, DType.F16: 10, DType.F64: 11, DType.U32: 12, DType.U64: 13,
    DType.U4: 21, DType.I4: 22, DType.U2: 25, DType.I2: 26,
}
FROM_ONNX: dict[int, DType] = {code: dt for dt, code in TO_ONNX.items()}

# ONNX types edgec has no DType for, named for error messages
_UNSUPPORTED = {
    0: "UNDEFINED", 8: "STRING", 14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16",
    17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ",
    23: "FLOAT4E2M1", 24: "FLOAT8E8M0",
}


def from_onnx(code: int) -> DType:
    """The DType of ONNX element type `code`; FrontendError for types edgec lacks."""
    try:
        return FROM_ONNX[int(code)]
    except KeyError:
        name = _UNSUPPORTED.get(int(code), "unknown")
        raise FrontendError(
            f"ONNX element type {code} ({name}) is not supported by edgec; supported: "
            + ", ".join(f"{c} ({d})" for c, d in sorted(FROM_ONNX.items()))) from None


def to_onnx(dtype: DType) -> int:
    """The ONNX element-type code of `dtype`."""
    try:
        return TO_ONNX[dtype]
    except KeyError:
        raise FrontendError(f"dtype {dtype} has no ONNX element type") from None
