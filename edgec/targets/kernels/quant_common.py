"""What the kernel builders of the quantized ops share: one-element parameters as literals or
loaded scalars, compile-time tables derived from constants, and the float requantization
`Requant` (equal to `round_saturate` in `edgec/ir/ops/quant.py`: see quant.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Value
from ...ir.ops.quant import QUANT_RANGES
from ...ir.types import TensorType
from ..kernel_ir import Buffer, Expr, call, cast, const, select
from ..lowering import NodeKernelBuilder
from .common import named

F32, I32 = DType.F32, DType.I32


def scalar(kb: NodeKernelBuilder, v: Value | None, name: str, dtype: DType) -> Expr | None:
    """A one-element value in `dtype`: a literal when constant, else its element 0 loaded once
    into a local."""
    if v is None:
        return None
    if v.is_const:
        return cast(const(v.const.reshape(-1)[0].item(), v.dtype), dtype)
    return named(kb, name, cast(kb.bind(v, name)[0], dtype))


def constant_table(kb: NodeKernelBuilder, arr: np.ndarray, name: str, source: Value) -> Buffer:
    """A buffer for a compile-time table derived from `source` (a weight with its zero point
    subtracted, a per-channel multiplier); the same table is shared by the nodes that ask."""
    cache = source.meta.setdefault("derived_constants", {})
    key = (name, arr.dtype.str, arr.shape, arr.tobytes())
    if key not in cache:
        arr = np.ascontiguousarray(arr)
        arr.setflags(write=False)
        cache[key] = Value(f"{source.name}_{name}", TensorType(arr.shape,
                                                             DType.from_numpy(arr.dtype)), arr)
    return kb.bind(cache[key], name)


def narrow(arr: np.ndarray) -> np.ndarray:
    """An int32 array stored as int16 when its values fit (weights minus zero points do)."""
    info = np.iinfo(np.int16)
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        return arr.astype(np.int32)
    return arr.astype(np.int16)


@dataclass
class Requant:
    """y = sat(rint(acc * M) + zp) for one output dtype and zero point: the bounds of v are
    computed once, outside the loops."""

    dtype: DType
    zp: Expr
    lo: Expr
    hi: Expr

    @staticmethod
    def make(kb: NodeKernelBuilder, dtype: DType, zp: Expr | None) -> Requant:
        zp = const(0, I32) if zp is None else zp
        qmin, qmax = QUANT_RANGES[dtype]
        lo = named(kb, "lo", cast(const(qmin, I32) - zp, F32))
        hi = named(kb, "hi", cast(const(qmax, I32) - zp, F32))
        return Requant(dtype, zp, lo, hi)

    def __call__(self, kb: NodeKernelBuilder, v: Expr) -> Expr:
        """`v` (float32, already scaled) saturated, rounded and shifted by the zero point."""
        v = named(kb, "v", v)
        v = named(kb, "v", select(v > self.lo, v, self.lo))  # NaN goes to lo
        v = select(v < self.hi, v, self.hi)
        return cast(cast(call("round", v), I32) + self.zp, self.dtype)


def zero_point(kb: NodeKernelBuilder, v: Value | None, name: str) -> Expr | None:
    return scalar(kb, v, name, I32)
