"""What the kernel builders of the quantized ops share: one-element parameters as literals or
loaded scalars, compile-time tables derived from constants, and the float requantization
`Requant` (equal to `round_saturate` in `edgec/ir/ops/quant.py`: see quant.py), and the type
the sums of a node with 16-bit activations accumulate in (`accumulator_type`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...ir.ops.quant import INT16, QUANT_RANGES
from ...ir.types import TensorType
from ...kernel_ir.kernel import (
    Buffer,
    Expr,
    call,
    cast,
    const,
    maximum,
    minimum,
    mulshift,
    pairs_fit16,
    select,
)
from ...targets.uarch import microarch
from ..lower import NodeKernelBuilder
from .common import named

F32, I32, I64 = DType.F32, DType.I32, DType.I64


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


def fixed_point(node: Node) -> tuple[np.ndarray, int] | None:
    """(int32 multipliers, () or per output channel or column; shift) of a node the
    fixed-point pass marked (`rq_mult`, `rq_shift`), else None."""
    if not node.attrs.get("rq_shift"):
        return None
    q = np.asarray(node.attrs["rq_mult"], np.int32)
    return (q if q.size > 1 else q.reshape(())), node.attrs["rq_shift"]


def fixed_finish(kb: NodeKernelBuilder, node: Node, fixed: tuple[np.ndarray, int],
                 zy: Expr | None, source: Value):
    """(bi, i, j, acc) -> sat(mulshift(acc, q[j], s) + zy): the scalar kernels' fixed-point
    requantization (ir/ops/quant.py requantize_fixed) of int32 sums, q[j] the multiplier of
    output channel or column j (a table derived from `source` where there are several)."""
    q, shift = fixed
    table = constant_table(kb, q, "rq", source) if q.size > 1 else None
    qmin, qmax = QUANT_RANGES[node.output.dtype]
    zp = const(0, I32) if zy is None else zy

    def finish(bi, i, j, acc):
        m = table[j] if table is not None else const(int(q), I32)
        v = named(kb, "v", mulshift(acc, m, const(shift, I32)) + zp)
        return cast(maximum(minimum(v, const(qmax, I32)), const(qmin, I32)), node.output.dtype)

    return finish


def zero_point(kb: NodeKernelBuilder, v: Value | None, name: str) -> Expr | None:
    return scalar(kb, v, name, I32)


def accumulator_type(x_v: Value, xz_v: Value | None, weight_l1: int,
                     bias: Value | None) -> DType:
    """int32 for the sums b + sum_k (x - zx)(w - zw) of a node whose every sum provably fits
    it, else int64. 8-bit x always fits (|x - zx| <= 255 against 8-bit weights: K < 2^15 at
    the worst, and the int8 kernels have always summed in int32); a 16-bit x is bounded by
    |x - zx| <= max(qmax - zx, zx - qmin) (65535 where zx is read at run time) times
    `weight_l1`, the largest sum of |w - zw| of an output (K * 255 where the weights are read
    at run time), plus the largest |b| (any int32 where b is read at run time)."""
    if x_v.dtype not in INT16:
        return I32
    qmin, qmax = QUANT_RANGES[x_v.dtype]
    if xz_v is None or xz_v.is_const:  # (one zero point, or one per row of A)
        z = np.zeros(1, np.int64) if xz_v is None else xz_v.const.astype(np.int64).reshape(-1)
        span = int(max(qmax - z.min(), z.max() - qmin))
    else:
        span = qmax - qmin
    b = 0 if bias is None else int(np.abs(bias.const.astype(np.int64)).max(initial=0)) \
        if bias.is_const else 2**31
    return I32 if span * int(weight_l1) + b < 2**31 else I64


def dot4_recentre(kb: NodeKernelBuilder) -> bool:
    """Whether the int8 tiles of a node re-centre their uint8 rows (microkernels_int8: int8 x
    int8 dot4s of A - 128, the 128 colsum in the node's tables), where the target's vector
    unit has the cheaper int8 x int8 dot4 (NEON's)."""
    unit = kb.target.vector
    return unit is not None and unit.dot4_recentre


# the vector units whose int8 tiles sum two k-groups' products in int16 (kernel IR pairdot:
# NEON without dotprod), and its instructions; a fact of the unit (target.VectorUnit's place)
PAIRDOT = {"neon": "smull+smlal+sadalp", "neon-armv7": "vmull+vmlal+vpadal"}


def dot4_pairdot(kb: NodeKernelBuilder, weights: np.ndarray, mb: int) -> tuple[int, str]:
    """The pixels per pass of a re-centred int8 conv tile of `mb` output vectors that sums
    two k-groups in int16 (microkernels_int8.qconv_tile `pairs`; 0: the plain dot4), where
    the target's vector unit has that form and every weight lies in [-127, 127] (|a b| for
    int8 a at most 128 * 127, two of them within int16); and the report's words on it. On
    a dotprod target it is the version for CPUs without dotprod."""
    unit = kb.target.vector
    form = PAIRDOT.get(unit.name) if unit is not None and unit.dot4_recentre else None
    if form is None:
        return 0, ""
    sdot = "dotprod" in kb.target.features
    if np.asarray(weights).min(initial=0) < -127:
        return 0, (f", dot4 {'as sdot, else ' if sdot else ''}widened ({unit.dot4}: a weight "
                   "of -128; two k-groups' products sum in int16 only within +-127)")
    # two accumulators per output vector, the 2 * mb weight vectors, a broadcast and the
    # 16-bit sum (and a spare register)
    pixels = max(1, (unit.registers - 6 - 2 * mb) // (2 * mb))
    return pixels, (f", dot4 as {'sdot, else ' if sdot else ''}{form} (two k-groups summed "
                    "in int16: weights within +-127)")


def dot4_sign(kb: NodeKernelBuilder, w: np.ndarray) -> bool:
    """Whether the AVX2 int8 tiles of weights `w` (whose pairs do not fit int16) fall back
    to the sign trick (kernel IR dot4p of re-centred bytes) where the CPU has no AVX-VNNI:
    every weight within [-127, 127], an AVX2 library, and a CPU family where the trick was
    measured faster than the widening (targets/uarch.py int8_sign)."""
    unit = kb.target.vector
    return (unit is not None and unit.name == "avx2" and bool(w.size)
            and int(w.min()) >= -127 and int(w.max()) <= 127
            and microarch(kb.target.uarch).int8_sign)


def dot4_pairs16(kb: NodeKernelBuilder, pairs: np.ndarray) -> tuple[bool, str]:
    """Whether the int8 tiles of a node write their dot4s as dot4p (kernel_ir: the weights'
    byte pairs `pairs` [..., 2], as the tiles pair them, fit int16 for any uint8 input),
    where the target's vector unit has a cheaper form for them (AVX2: vpmaddubsw instead of
    the widening); and the report's words on the choice ("" where there is none)."""
    unit = kb.target.vector
    if unit is None or not unit.dot4_pairs16:
        return False, ""
    if pairs_fit16(pairs):
        return True, f", dot4 as {unit.dot4_pairs16} (weight pairs within int16)"
    p = np.asarray(pairs, np.int64)
    hi, lo = int(np.maximum(p, 0).sum(-1).max()), int(np.minimum(p, 0).sum(-1).min())
    return False, (f", dot4 widened ({unit.dot4}: the weights of a pair sum to "
                   f"{hi if hi > 128 else lo}, past the +-128 a 16-bit pair sum allows)")
