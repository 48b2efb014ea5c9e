"""The loop-level kernel IR: what every renderer (C now; LLVM, CUDA, HLS later) prints.

A `Kernel` is a function over `Buffer`s (flat, typed, with a logical shape) whose body is a
list of statements: counted `Loop`s from 0 to an extent, scalar `Local`s, `Assign`, `Store`,
`If` and `Prefetch` (a hint that some memory is read soon; it changes no value). Values are
`Expr` trees, immutable and hashable, built with Python operators (`x[i] * w[j] + acc`) and
the functions below; index arithmetic uses the `INDEX` dtype. Builders fold constants
(`i * 1 -> i`, `0 + i -> i`) so the generated code reads like code a person would write.
An Expr's `op` is an `Op` and its `args` are that op's fields, declared once with their kinds
and its result type in ops.py's table `OPS`: construction checks them, and consumers read
them by name (`e.field("count")`), never by position. The printer, the interpreter and the
renderers are tables keyed by `Op` that must cover `OPS` (tests/kernel_ir/test_op_coverage.py).
A loop's `kind` is its binding, a `LoopKind`: "serial"; "unroll" (fully unrolled by the
renderer's compiler); "parallel" (its iterations split over the runtime's thread pool; such a
loop stands at the top of a kernel and reads only the kernel's parameters); "grid"
(independent blocks of work: a GPU's grid); "block" (the threads of one block, which may wait
for each other at a `Barrier` and share `Alloc`ed arrays in "shared" memory; directly nested
block loops form one block of threads); "pipeline" (a hardware pipeline starting an
iteration every `ii` cycles). A CPU renders every binding but "parallel" as a plain loop
(block loops split at their barriers: `kernel_passes.split_barriers`). A serial loop's
`unroll` > 1 asks the renderer's compiler to unroll it by that factor (a hint).

Memory: a `Buffer` has a `Role` (in, out, const: weights, scratch: `Alloc`ed) and lives in a
memory `space`, a `Space`: "global" (the kernel's parameters), "shared"
(on-chip memory shared by a block's threads: GPU shared memory, FPGA block RAM) or "local"
(private to a thread: registers). `Alloc` declares a kernel-local array in shared or local
memory, uninitialised. A `Stream` parameter is a FIFO between kernels (an FPGA stream, a GPU
queue): `Push` appends a value, `Pop` takes the oldest into a local.

Vectors: an expression has `lanes` (1 for a scalar). `vload`/vector `Store` move `lanes`
consecutive elements, optionally only the first `count` (a masked tail); `broadcast` splats
a scalar; `vgather(buf, base, idx)` reads buf[base + idx[l]] into lane l (idx an int32
vector: the columns of a sparse row); arithmetic, `fma` and comparisons work lane by lane,
and `hreduce` folds the lanes to a scalar. Every renderer maps (dtype, lanes) to its ISA's
vector registers.

Integer dot products (int8 inputs, int32 accumulators): `dot4(acc, a, b)` with acc an int32
vector of N lanes and a (uint8 or int8), b (int8) 8-bit vectors of 4N lanes is
acc[i] + sum_{k<4} a[4i+k] * b[4i+k] per lane i, exact in int32 (no saturation; the
intermediate products never overflow). Its 8-bit operands come from `vload` of a uint8/int8
buffer (4N consecutive bytes) and `vbroadcast(buf, index, 4N, 4)`, the 4 bytes at buf[index]
repeated in every group of 4 lanes (one row's k-group against N columns). Renderers map it to
VNNI `vpdpbusd`, an exact 16-bit widening on AVX2, `sdot`/`udot` on Armv8.2; without a vector
ISA (N = 1) a 4-lane 8-bit vector is one 32-bit word, lane k in bits 8k..8k+7.
`dot4(acc, a, b, pairs16=True)` (op "dot4p") is the same sum for uint8 a, stating that b's
byte pairs (4i, 4i+1) and (4i+2, 4i+3) keep every pair sum a[j] b[j] + a[j+1] b[j+1] in
int16 for any uint8 a (`pairs_fit16`: the positive weights of a pair sum to at most 128, the
negative to at least -128; 7-bit weights always do): AVX2 then sums it with `vpmaddubsw`
and `vpmaddwd` by ones, exactly (the interpreter checks the claim); the other ISAs as dot4.
For int8 a, dot4p states that every weight of b lies in [-127, 127]: AVX2 then sums it by the
sign trick (`vpsignb` moves a's signs onto b, `vpmaddubsw` of |a| by them, `vpmaddwd` by
ones: |2 x 128 x 127| fits int16), exactly; the other ISAs as the int8 x int8 dot4.
`recentre(a)` is a uint8 vector's bytes as int8 a - 128 (a ^ 0x80): the NEON tiles sum
int8 x int8 dot4s of it, the 128 sum b they lack folded into their compile-time tables.
`pairdot(acc, ((a0, b0), (a1, b1)), half)` sums int8 x int8 dot4s of one or two k-groups
in a "pairs" layout, NEON's without dotprod: the products of bytes j summed over the k-groups
in int16 (exact: a in [-128, 127] and b in [-127, 127] for two, which the interpreter checks),
then added pairwise into acc's N int32 lanes, lane m taking bytes 2m, 2m + 1 of the `half`
(0: bytes 0 .. 2N-1, 1: the rest); `pairfold(lo, hi)` adds the lane pairs of both halves,
giving dot4's lanes: dot4(0, a, b) = pairfold(pairdot(0, ((a, b),), 0), pairdot(.., 1)).

Tensor cores: `Mma` is a GPU warp's matrix multiply-add (PTX mma.sync) on fragments each
lane reads from shared memory, summing into four elements of a thread's local array; float16,
bfloat16 (`DType.BF16`), float32 taken as TF32, and 8-bit integers (kernel_ir/mma.py).
`AtomicAdd` adds into an element indivisibly (the partial sums of a GPU's split-K).

Functions: a kernel may `Call` another kernel (a micro-kernel, the hot inner loops shared by
many nodes) with pointers into its buffers (`Ptr`) and scalar arguments (`Scalar` params).
Sparse iteration (CSR and block-CSR weights) is a loop whose bounds are loaded from the row
pointer array: see `KernelBuilder.csr`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from ..ir.dtypes import SUB_BYTE, DType, int_range_as_float
from .ops import (  # noqa: F401  (re-exported: the IR's names, importable from here)
    BINARY,
    COMPARE,
    HREDUCE,
    OPS,
    UNARY,
    Kind,
    Like,
    LoopKind,
    Op,
    Role,
    Space,
)

E = TypeVar("E", LoopKind, Space, Role)

INDEX = DType.INDEX

# Math functions of "call" (its field `fn`).
MATH = ("exp", "log", "sqrt", "tanh", "erf", "pow", "abs", "floor", "ceil", "round", "sin",
        "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "fmod",
        "isnan", "isinf", "sign", "log1p", "expm1")


def as_enum(cls: type[E], value, what: str) -> E:
    """`value` as a member of the StrEnum `cls` (its text accepted), or a ValueError naming
    `what` and the choices."""
    try:
        return cls(value)
    except ValueError:
        raise ValueError(f"kernel IR: unknown {what} {value}; one of "
                         f"{', '.join(m.value for m in cls)}") from None


@functools.cache
def _checks(op: Op, n: int) -> tuple[tuple[str, Kind, tuple[type, ...]], ...]:
    """(field name, kind, the Python types it takes) for each of an `op`'s `n` args, worked out
    once: every Expr built is checked against them, and builders build many."""
    types = {Kind.EXPR: (Expr,), Kind.OPTIONAL: (Expr, type(None)), Kind.BUFFER: (Buffer,),
             Kind.INT: (int,), Kind.NAME: (str,), Kind.VALUE: (bool, int, float),
             Kind.FOLD: (str,)}
    fields = OPS[op].fields
    return tuple((name.lstrip("*"), kind, types[kind])
                 for name, kind in (fields[min(i, len(fields) - 1)] for i in range(n)))


@dataclass(frozen=True, eq=True)
class Expr:
    """An expression: `op` (an `Op`; its text is accepted) over `args`, the op's fields in the
    order `OPS[op]` names them (read them by name with `field`), giving `lanes` values of
    `dtype`. Construction checks the op, its number of args, each field's kind and the
    result type against `OPS`; the builder functions below check the rest."""

    op: Op
    dtype: DType
    args: tuple
    lanes: int = 1

    def __post_init__(self):
        spec = OPS.get(self.op)
        if spec is None:
            raise TypeError(f"kernel IR: unknown op {self.op!r}; the ops are kernel_ir.ops.Op's "
                            "(each declared in its table OPS)")
        if type(self.op) is not Op:
            object.__setattr__(self, "op", Op(self.op))
        lo, hi = spec.arity
        if not lo <= len(self.args) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise TypeError(f"kernel IR: {self.op} takes {want} args ({', '.join(spec.names)}), "
                            f"got {len(self.args)}")
        for i, (v, (name, kind, types)) in enumerate(zip(self.args,
                                                        _checks(self.op, len(self.args)))):
            if not isinstance(v, types) or (kind is Kind.FOLD and v not in HREDUCE) or (
                    kind is Kind.INT and isinstance(v, bool)):
                raise TypeError(f"kernel IR: {self.op}'s field {name} takes {kind.value}, "
                                f"not {v!r}")
            if kind is Kind.FOLD and type(v) is not Op:  # consumers compare folds with `is`
                object.__setattr__(self, "args", self.args[:i] + (Op(v),) + self.args[i + 1:])
        rule = spec.dtype
        want = self.args[spec.index[rule.field]].dtype if isinstance(rule, Like) else rule
        if want is not None and self.dtype != want:
            raise TypeError(f"kernel IR: {self.op} gives {want}, not {self.dtype}")

    def field(self, name: str):
        """The arg named `name` in `OPS[self.op]` (a `*` field: the tuple of the rest)."""
        spec = OPS[self.op]
        i = spec.index.get(name)
        if i is None:
            raise TypeError(f"kernel IR: {self.op} has no field {name}; its fields are "
                            f"{', '.join(spec.names)}")
        return self.args[i:] if spec.rest and i == len(spec.fields) - 1 else self.args[i]

    def fields(self) -> dict:
        """Every field by name (what the renderers' and the printer's entries take)."""
        return {name: self.field(name) for name in OPS[self.op].names}

    # -- arithmetic sugar: operands may be Python numbers ---------------------------------
    def __add__(self, o):
        return binary(Op.ADD, self, o)

    def __radd__(self, o):
        return binary(Op.ADD, o, self)

    def __sub__(self, o):
        return binary(Op.SUB, self, o)

    def __rsub__(self, o):
        return binary(Op.SUB, o, self)

    def __mul__(self, o):
        return binary(Op.MUL, self, o)

    def __rmul__(self, o):
        return binary(Op.MUL, o, self)

    def __truediv__(self, o):
        return binary(Op.DIV, self, o)

    def __rtruediv__(self, o):
        return binary(Op.DIV, o, self)

    def __floordiv__(self, o):  # integer division of non-negative index expressions
        return binary(Op.DIV, self, o)

    def __mod__(self, o):
        return binary(Op.MOD, self, o)

    def __neg__(self):
        return unary(Op.NEG, self)

    def __lt__(self, o):
        return binary(Op.LT, self, o)

    def __le__(self, o):
        return binary(Op.LE, self, o)

    def __gt__(self, o):
        return binary(Op.GT, self, o)

    def __ge__(self, o):
        return binary(Op.GE, self, o)

    def eq(self, o) -> Expr:
        return binary(Op.EQ, self, o)

    def ne(self, o) -> Expr:
        return binary(Op.NE, self, o)

    def __and__(self, o):
        return binary(Op.AND, self, o)

    def __or__(self, o):
        return binary(Op.OR, self, o)

    def __invert__(self):
        return unary(Op.NOT, self)

    def __bool__(self):
        raise TypeError("a kernel-IR expression has no truth value; use select() or If")

    def cast(self, dtype: DType) -> Expr:
        return cast(self, dtype)

    @property
    def is_const(self) -> bool:
        return self.op == "const"

    @property
    def value(self):
        """A constant's value (its field `value`; read after `is_const`)."""
        return self.args[0]


def const(value, dtype: DType = INDEX) -> Expr:
    if dtype is DType.BOOL:
        value = bool(value)
    elif dtype.is_float:
        value = float(value)
    else:
        value = int(value)
    return Expr(Op.CONST, dtype, (value,))


def var(name: str, dtype: DType = INDEX) -> Expr:
    return Expr(Op.VAR, dtype, (name,))


def _lift(x, like: DType) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool | np.bool_):
        return const(x, DType.BOOL)
    if isinstance(x, int | np.integer) and not like.is_float:
        return const(x, like)
    if isinstance(x, float | int | np.floating | np.integer):
        return const(x, like if like.is_float else DType.F32)
    raise TypeError(f"cannot use {x!r} in a kernel expression")


def _cdiv(a: int, b: int) -> int:
    """a / b as C divides integers: exact, rounded toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _fold(op: str, a, b):
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b if isinstance(a, float) or isinstance(b, float) else _cdiv(a, b)
    if op == "mod":
        return math.fmod(a, b) if isinstance(a, float) else a - b * _cdiv(a, b)
    if op == "max":
        return max(a, b)
    if op == "min":
        return min(a, b)
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b,
            "ne": a != b}.get(op)


def binary(op: Op | str, a, b) -> Expr:
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        raise TypeError("binary() needs at least one expression operand")
    like = a.dtype if isinstance(a, Expr) else b.dtype
    a, b = _lift(a, like), _lift(b, like)
    if a.dtype != b.dtype and op not in ("shl", "shr"):
        raise TypeError(f"kernel IR: {op} of {a.dtype} and {b.dtype}; cast one side first")
    dtype = DType.BOOL if op in COMPARE else a.dtype
    if a.lanes != b.lanes:  # a scalar operand of a vector op is splat across the lanes
        if min(a.lanes, b.lanes) != 1:
            raise TypeError(f"kernel IR: {op} of {a.lanes}- and {b.lanes}-lane vectors")
        lanes = max(a.lanes, b.lanes)
        a, b = broadcast(a, lanes), broadcast(b, lanes)
    if a.lanes > 1:
        return Expr(op, dtype, (a, b), a.lanes)
    if a.is_const and b.is_const and op in COMPARE + ("add", "sub", "mul", "max", "min") + (
            ("div", "mod") if a.dtype.is_int and b.value != 0 else ()):
        return const(_fold(op, a.value, b.value), dtype)
    if op == "add" and a.is_const and a.value == 0 and not a.dtype.is_float:
        return b
    if op in ("add", "sub") and b.is_const and b.value == 0 and not b.dtype.is_float:
        return a
    if op == "mul" and not a.dtype.is_float:
        if (a.is_const and a.value == 0) or (b.is_const and b.value == 0):
            return const(0, dtype)
        if a.is_const and a.value == 1:
            return b
        if b.is_const and b.value == 1:
            return a
    if op == "div" and b.is_const and b.value == 1 and not a.dtype.is_float:
        return a
    if op == "mod" and b.is_const and b.value == 1 and not a.dtype.is_float:
        return const(0, dtype)
    if op in ("and", "or") and a.is_const:
        return b if (a.value if op == "and" else not a.value) else a
    return Expr(op, dtype, (a, b))


def unary(op: Op | str, a: Expr) -> Expr:
    if a.lanes > 1:
        return Expr(op, a.dtype, (a,), a.lanes)
    if a.is_const and op == "neg":
        return const(-a.value, a.dtype)
    if a.is_const and op == "not":
        return const(not a.value, DType.BOOL)
    return Expr(op, a.dtype, (a,))


def call(fn: str, *args, dtype: DType | None = None) -> Expr:
    """A math function (see MATH) applied elementwise, computed in the operand's type."""
    if fn not in MATH:
        raise ValueError(f"kernel IR has no math function {fn}")
    like = next(a.dtype for a in args if isinstance(a, Expr))
    lifted = tuple(_lift(a, like) for a in args)
    out = dtype or (DType.BOOL if fn in ("isnan", "isinf") else like)
    lanes = max(a.lanes for a in lifted)
    if lanes > 1:
        lifted = tuple(broadcast(a, lanes) for a in lifted)
    return Expr(Op.CALL, out, (fn,) + lifted, lanes)


def select(cond: Expr, a, b) -> Expr:
    like = a.dtype if isinstance(a, Expr) else b.dtype if isinstance(b, Expr) else DType.F32
    a, b = _lift(a, like), _lift(b, like)
    if cond.is_const:
        return a if cond.value else b
    lanes = max(cond.lanes, a.lanes, b.lanes)
    if lanes > 1:
        cond, a, b = (broadcast(e, lanes) for e in (cond, a, b))
    return Expr(Op.SELECT, a.dtype, (cond, a, b), lanes)


def maximum(a, b) -> Expr:
    return binary(Op.MAX, a, b)


def minimum(a, b) -> Expr:
    return binary(Op.MIN, a, b)


def cast(x: Expr, dtype: DType) -> Expr:
    if x.dtype == dtype:
        return x
    if x.lanes > 1:
        return Expr(Op.CAST, dtype, (x,), x.lanes)
    if x.is_const and (dtype.is_float or not isinstance(x.value, float)):
        return const(x.value, dtype)
    return Expr(Op.CAST, dtype, (x,))


def convert(x: Expr, dtype: DType) -> Expr:
    """`x` as `dtype` by edgec's value conversion (`ir.dtypes.convert`, which says why): a float
    outside an integer type's range saturates to it and NaN gives 0, where `cast`, as C's
    conversion, assumes the value fits."""
    if dtype in SUB_BYTE:  # via int32, the low bits kept (two's complement)
        v = binary(Op.BITAND, convert(x, DType.I32), const((1 << dtype.bits) - 1, DType.I32))
        if dtype.is_signed:
            sign = const(1 << (dtype.bits - 1), DType.I32)
            v = binary(Op.BITXOR, v, sign) - sign
        return cast(v, dtype)
    if not (x.dtype.is_float and dtype.is_int):
        return cast(x, dtype)
    x = cast(x, DType.F32) if x.dtype is DType.F16 else x
    lo, top = int_range_as_float(dtype)
    info = np.iinfo(dtype.np)
    inside = select(call("isnan", x), const(0, dtype), cast(x, dtype))
    return select(x < lo, const(info.min, dtype), select(x >= top, const(info.max, dtype), inside))


def bitcast(x: Expr, dtype: DType) -> Expr:
    """x's bits read as `dtype`, a type of the same size (no value conversion)."""
    if x.dtype.itemsize != dtype.itemsize:
        raise TypeError(f"kernel IR: bitcast of {x.dtype} to {dtype} changes the size")
    return x if x.dtype == dtype else Expr(Op.BITCAST, dtype, (x,), x.lanes)


# -- vectors ------------------------------------------------------------------------------

def broadcast(x, lanes: int, dtype: DType = DType.F32) -> Expr:
    """`x` (a scalar expression or number) in every one of `lanes` lanes."""
    x = _lift(x, dtype)
    if lanes == 1 or x.lanes == lanes:
        return x
    if x.lanes != 1:
        raise TypeError(f"kernel IR: cannot broadcast a {x.lanes}-lane vector to {lanes}")
    return Expr(Op.BROADCAST, x.dtype, (x,), lanes)


def vload(buf: Buffer, index, lanes: int, count=None) -> Expr:
    """buf[index : index + lanes] as a vector; with `count`, only the first `count` lanes are
    read (the others are 0), for the tail of a row."""
    if lanes == 1:  # a 1-lane tail reads its one element only when the count is not 0
        return buf[index] if count is None else select(_lift(count, INDEX) > 0, buf[index],
                                                       const(0, buf.dtype))
    cnt = None if count is None else _lift(count, INDEX)
    return Expr(Op.VLOAD, buf.dtype, (buf, _lift(index, INDEX), cnt), lanes)


def vgather(buf: Buffer, base, idx: Expr) -> Expr:
    """buf[base + idx[l]] in lane l, for an int32 index vector `idx` (a scalar index: one
    element)."""
    if idx.lanes == 1:
        return buf[_lift(base, INDEX) + cast(idx, INDEX)]
    if idx.dtype is not DType.I32:
        raise TypeError(f"kernel IR: a gather takes int32 indices, not {idx.dtype}")
    return Expr(Op.VGATHER, buf.dtype, (buf, _lift(base, INDEX), idx), idx.lanes)


def vbroadcast(buf: Buffer, index, lanes: int, group: int) -> Expr:
    """buf[index : index + group] repeated lanes / group times: a broadcast of a group of
    elements (4 bytes: one k-group of a row for `dot4`) read straight from memory."""
    if lanes % group:
        raise TypeError(f"kernel IR: {lanes} lanes are no whole number of groups of {group}")
    if lanes == group:
        return vload(buf, index, lanes)
    return Expr(Op.VBROADCAST, buf.dtype, (buf, _lift(index, INDEX), group), lanes)


DOT4_TYPES = ((DType.U8, DType.I8), (DType.I8, DType.I8))


def pairs_fit16(b: np.ndarray) -> bool:
    """Whether the int8 weights `b` [..., 2] (the last axis a byte pair of a dot4: bytes
    4i, 4i+1 or 4i+2, 4i+3) keep a[0] b[0] + a[1] b[1] within int16 for every uint8 a: the
    sum of the positive weights of each pair at most 128 (255 * 128 <= 32767) and of the
    negative at least -128, so that x86's vpmaddubsw never saturates."""
    b = np.asarray(b, np.int32)
    return bool((np.maximum(b, 0).sum(-1) <= 128).all() and
                (np.minimum(b, 0).sum(-1) >= -128).all())


def dot4(acc, a: Expr, b: Expr, pairs16: bool = False) -> Expr:
    """acc[i] + sum_{k<4} a[4i+k] * b[4i+k] for each of acc's N int32 lanes, exactly; a is
    uint8 or int8 and b int8, each with 4N lanes (see the module doc). `pairs16` (op
    "dot4p"): for uint8 a, b's byte pairs fit `pairs_fit16`; for int8 a, every weight of b
    lies in [-127, 127]."""
    if (a.dtype, b.dtype) not in DOT4_TYPES:
        raise TypeError(f"kernel IR: dot4 of {a.dtype} and {b.dtype}; it takes uint8 or int8 "
                        "times int8")
    if a.lanes != b.lanes or a.lanes % 4:
        raise TypeError(f"kernel IR: dot4 of {a.lanes}- and {b.lanes}-lane vectors")
    acc = _lift(acc, DType.I32)
    acc = broadcast(acc, a.lanes // 4) if acc.lanes == 1 else acc
    if acc.dtype is not DType.I32 or acc.lanes != a.lanes // 4:
        raise TypeError(f"kernel IR: dot4 accumulates {a.lanes} bytes into {a.lanes // 4} "
                        f"int32 lanes, not {acc.lanes} of {acc.dtype}")
    return Expr(Op.DOT4P if pairs16 else Op.DOT4, DType.I32, (acc, a, b), acc.lanes)


def recentre(a: Expr) -> Expr:
    """The uint8 vector `a` as the int8 vector a - 128, byte by byte (a ^ 0x80 read as int8:
    one XOR), so that sum a b = sum (a - 128) b + 128 sum b: a uint8 x int8 dot4 becomes an
    int8 x int8 one plus a correction that depends on b only (NEON's cheaper forms)."""
    if a.dtype is not DType.U8 or a.lanes % 4:
        raise TypeError(f"kernel IR: recentre of a {a.lanes}-lane {a.dtype} vector; it takes "
                        "uint8 vectors of whole 4-byte groups")
    return Expr(Op.RECENTRE, DType.I8, (a,), a.lanes)


def pairdot(acc, pairs: Sequence[tuple[Expr, Expr]], half: int) -> Expr:
    """acc[m] + sum over j in (2m, 2m + 1) + 2N half of sum_p a_p[j] b_p[j], for acc's N int32
    lanes and one or two pairs (a_p, b_p) of int8 vectors of 4N lanes (see the module doc:
    with two pairs the weights b_p must lie in [-127, 127], so that the byte sums fit int16)."""
    if not 1 <= len(pairs) <= 2 or half not in (0, 1):
        raise TypeError(f"kernel IR: pairdot of {len(pairs)} pairs, half {half}; it takes 1 "
                        "or 2 pairs and half 0 or 1")
    lanes = pairs[0][0].lanes
    for a, b in pairs:
        if a.dtype is not DType.I8 or b.dtype is not DType.I8 or a.lanes != lanes or \
                b.lanes != lanes or lanes % 4:
            raise TypeError(f"kernel IR: pairdot of {a.lanes}-lane {a.dtype} and {b.lanes}-lane "
                            f"{b.dtype}; it takes int8 vectors of {lanes} lanes, whole dot4s")
    acc = _lift(acc, DType.I32)
    acc = broadcast(acc, lanes // 4) if acc.lanes == 1 else acc
    if acc.dtype is not DType.I32 or acc.lanes != lanes // 4:
        raise TypeError(f"kernel IR: pairdot sums {lanes} bytes into {lanes // 4} int32 lanes")
    return Expr(Op.PAIRDOT, DType.I32, (acc, const(half, INDEX), *(x for p in pairs for x in p)),
                acc.lanes)


def pairfold(lo: Expr, hi: Expr) -> Expr:
    """[lo0 + lo1, lo2 + lo3, .., hi0 + hi1, ..]: the two halves of `pairdot`'s sums folded
    into dot4's lanes (int32 vectors of N lanes each)."""
    if lo.dtype is not DType.I32 or hi.dtype is not DType.I32 or lo.lanes != hi.lanes or \
            lo.lanes % 2:
        raise TypeError(f"kernel IR: pairfold of {lo.lanes}-lane {lo.dtype} and {hi.lanes}-lane "
                        f"{hi.dtype}; it takes int32 vectors of one even width")
    return Expr(Op.PAIRFOLD, DType.I32, (lo, hi), lo.lanes)


def mul16(a: Expr, b: Expr) -> Expr:
    """a * b on int32 lanes whose values fit 16 bits: 0 <= a < 2^15 (bytes widened, say) and
    -2^15 <= b < 2^15, exactly; x86 computes it with one 16-bit multiply-add (`vpmaddwd`,
    a's high halves being 0) instead of the two-uop 32-bit multiply."""
    if a.dtype is not DType.I32 or b.dtype is not DType.I32 or a.lanes != b.lanes:
        raise TypeError(f"kernel IR: mul16 of {a.lanes}-lane {a.dtype} and {b.lanes}-lane "
                        f"{b.dtype}; it takes int32 lanes of one width")
    return Expr(Op.MUL16, DType.I32, (a, b), a.lanes)


def nibble(v: Expr, k: int) -> Expr:
    """The 4-bit field k (0: bits 0-3, 1: bits 4-7) of each byte of the int8 vector v, as a
    signed 4-bit value times 16, an int8: k = 0 is v << 4 and k = 1 is v & 0xF0, byte by byte.
    Two int4 weights packed in a byte come out in the range dot4 takes, scaled by 16 (the
    requantization divides it out exactly); one shift and one AND on every ISA."""
    if v.dtype is not DType.I8 or k not in (0, 1):
        raise TypeError(f"kernel IR: nibble {k} of {v.lanes}-lane {v.dtype}; it takes int8 "
                        "vectors and field 0 or 1")
    return Expr(Op.NIBBLE, DType.I8, (v, const(k, DType.I32)), v.lanes)


def mulshift(v: Expr, m, s) -> Expr:
    """round(v * m / 2^s) on int32 lanes, from the exact 64-bit product, rounded half toward
    +infinity: floor((v * m + 2^(s-1)) / 2^s). `s` is a scalar int32 in [33, 62] (a kernel
    parameter or a constant); the result is exact in int32 for any int32 v and m (|v * m| <
    2^62). This is fixed-point requantization: m / 2^s stands for the real multiplier. Every
    ISA takes the high word h of the 64-bit product and computes floor((h + 2^(s-33)) /
    2^(s-32)) in 32 bits (floor((h * 2^32 + l) / 2^k) = floor(h / 2^(k-32)) for 0 <= l < 2^32,
    and the rounding term 2^(s-1) has no bits in the low word): x86 vpmuldq on even and odd
    lanes, NEON vmull_s32 and vaddhn_s64."""
    m, s = _lift(m, DType.I32), _lift(s, DType.I32)
    m = broadcast(m, v.lanes) if m.lanes == 1 else m
    if v.dtype is not DType.I32 or m.dtype is not DType.I32 or m.lanes != v.lanes or \
            s.dtype is not DType.I32 or s.lanes != 1:
        raise TypeError(f"kernel IR: mulshift of {v.lanes}-lane {v.dtype} by {m.lanes}-lane "
                        f"{m.dtype} >> {s.dtype}; it takes int32 lanes and a scalar int32 shift")
    if s.is_const and not 33 <= s.value <= 62:
        raise TypeError(f"kernel IR: mulshift by 2^{s.value}; the shift must be in [33, 62]")
    return Expr(Op.MULSHIFT, DType.I32, (v, m, s), v.lanes)


def fma(a, b, c) -> Expr:
    """a * b + c rounded once (a fused multiply-add), lane by lane."""
    like = next(x.dtype for x in (a, b, c) if isinstance(x, Expr))
    a, b, c = (_lift(x, like) for x in (a, b, c))
    lanes = max(a.lanes, b.lanes, c.lanes)
    a, b, c = (broadcast(x, lanes) for x in (a, b, c))
    if len({a.dtype, b.dtype, c.dtype}) != 1 or not like.is_float:
        raise TypeError("kernel IR: fma takes three operands of one float type")
    return Expr(Op.FMA, like, (a, b, c), lanes)


def hreduce(op: str, v: Expr) -> Expr:
    """The lanes of `v` folded with `op` (add, max or min) into a scalar. A float add's order
    is the backend's (a shuffle tree in C, numpy's pairwise sum in the interpreter), so its
    bits differ between them: a kernel that must give the same bits everywhere adds the lanes
    in lane order instead (lowering/kernels/nn.py, _lane_order_sum)."""
    if op not in HREDUCE:
        raise ValueError(f"kernel IR: no horizontal {op}")
    return v if v.lanes == 1 else Expr(Op.HREDUCE, v.dtype, (Op(op), v), 1)


def shfl_xor(x: Expr, mask: int) -> Expr:
    """On a GPU, the value of scalar `x` in the thread of this one's warp whose lane is this
    lane ^ `mask` (CUDA's __shfl_xor_sync over the whole warp): every thread of the warp must
    evaluate it together, as at a barrier."""
    if x.lanes != 1:
        raise ValueError("kernel IR: shfl_xor takes a scalar (a thread's value)")
    if mask < 1 or mask & (mask - 1):
        raise ValueError(f"kernel IR: shfl_xor's mask {mask} is not a power of two")
    return Expr(Op.SHFL_XOR, x.dtype, (x, int(mask)))


# -- buffers and statements ---------------------------------------------------------------

@dataclass(frozen=True)
class Buffer:
    """A flat array parameter of a kernel; `shape` is its logical row-major shape."""

    name: str
    dtype: DType
    shape: tuple[int, ...]
    role: Role = Role.IN
    # a micro-kernel's pointer parameter has no fixed size: shape () and sized=False
    sized: bool = True
    space: Space = Space.GLOBAL

    def __post_init__(self):  # the enums' text is accepted
        object.__setattr__(self, "role", as_enum(Role, self.role, "buffer role"))
        object.__setattr__(self, "space", as_enum(Space, self.space, "memory space"))

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def __getitem__(self, index) -> Expr:
        return Expr(Op.LOAD, self.dtype, (self, _lift(index, INDEX)))

    def at(self, *coords) -> Expr:
        """The element at row-major coordinates `coords`."""
        return self[self.offset(*coords)]

    def offset(self, *coords) -> Expr:
        """The linear index of row-major coordinates (extent-1 dims contribute nothing)."""
        if len(coords) != len(self.shape):
            raise ValueError(
                f"buffer {self.name} has rank {len(self.shape)}, got {len(coords)} coords")
        return linear_index(coords, self.shape)


@dataclass(frozen=True)
class Ptr:
    """A pointer argument of a `Call`: `buf` advanced by `offset` elements."""

    buf: Buffer
    offset: Expr


@dataclass(frozen=True)
class Scalar:
    """A scalar parameter of a kernel (micro-kernels take sizes and strides as these)."""

    name: str
    dtype: DType

    @property
    def expr(self) -> Expr:
        return var(self.name, self.dtype)


def linear_index(coords: Sequence, shape: Sequence[int]) -> Expr:
    idx: Expr = const(0)
    for c, d in zip(coords, shape):
        idx = idx * d + (const(0) if d == 1 else _lift(c, INDEX))
    return idx


@dataclass
class Loop:
    var: str
    extent: Expr
    body: list
    kind: LoopKind = LoopKind.SERIAL
    unroll: int = 0  # a serial loop's partial unroll factor for the compiler (0: its choice)
    ii: int = 0  # a pipeline loop's initiation interval in cycles (0: the tool's choice)

    def __post_init__(self):
        self.kind = as_enum(LoopKind, self.kind, "loop kind")


@dataclass
class Local:
    """Declares a mutable scalar or vector (an accumulator) initialised to `init`."""

    name: str
    dtype: DType
    init: Expr

    @property
    def lanes(self) -> int:
        return self.init.lanes


@dataclass
class Assign:
    name: str
    value: Expr


@dataclass
class Store:
    buf: Buffer
    index: Expr
    value: Expr
    count: Expr | None = None  # a vector store of only the first `count` lanes


@dataclass
class AtomicAdd:
    """buf[index] += value as one indivisible update (a GPU's atomicAdd; float32 or int32):
    the threads and blocks of a launch may add to one element in any order, and nothing else
    of that launch may read or write it (the race check says so). Float sums then depend on
    the order; integer sums wrap and do not."""

    buf: Buffer
    index: Expr
    value: Expr

    def __post_init__(self):
        if self.buf.dtype not in (DType.F32, DType.I32) or self.value.dtype != self.buf.dtype \
                or self.value.lanes != 1:
            raise ValueError(f"kernel IR: an atomic add of a {self.value.dtype} into "
                             f"{self.buf.dtype} {self.buf.name}: it takes a float32 or int32 "
                             "scalar of the buffer's type")


@dataclass
class Prefetch:
    """A hint that buf[index] will be read soon: the renderer's prefetch instruction (the
    line comes into every cache level), or nothing where it has none. It computes and
    changes nothing, and index must lie inside the buffer."""

    buf: Buffer
    index: Expr


@dataclass
class Alloc:
    """Declares `buf` (role "scratch", space "shared" or "local"), a kernel-local array.
    `partition` > 1 asks an FPGA to spread it cyclically over that many memories, so that
    as many consecutive elements are read in one cycle (HLS ARRAY_PARTITION cyclic); other
    targets ignore it. `counts` names counters: an FPGA's C-simulation adds the array's
    values at the kernel's end to its counts of that name (a sparse unit's work per PE;
    codegen/hls/edgec_stream.h), which nothing else reads."""

    buf: Buffer
    partition: int = 0
    counts: str = ""


@dataclass
class Barrier:
    """Every thread of the enclosing block loops reaches this point before any goes on."""


MMA_ACC = {DType.F16: DType.F32, DType.BF16: DType.F32, DType.F32: DType.F32,
           DType.I8: DType.I32, DType.U8: DType.I32}  # an mma's operand type: its sums'


@dataclass
class Mma:
    """A GPU warp's tensor-core multiply-add (PTX `mma.sync` m16n8kK, A row-major, B
    column-major): C[16 x 8] += A[16 x K] B[K x 8], where A[i, k] = a[a_at + i a_ld + k] and
    B[k, j] = b[b_at + j b_ld + k] (both K-contiguous, in shared or global memory) and C is
    spread over the warp's 32 lanes, lane l holding C[l / 4 + 8 (r / 2), 2 (l % 4) + r % 2]
    in acc[acc_at + r], r < 4 (its local array). The operand type fixes K and the sums':
    float16 and bfloat16, K 16, float32 sums; float32 taken as TF32 (each operand rounded to
    10 mantissa bits, to nearest with ties away from zero), K 8, float32 sums; int8 or uint8 A
    by int8 or uint8 B, K 32, int32 sums (wrapping). A statement, not an expression: its
    result is spread over the registers of a whole warp, every thread of which must reach it
    with the same a_at, b_at (the interpreter checks both). Each lane reads its fragment as
    32-bit words: a_at, b_at, a_ld and b_ld are multiples of 4 / the operand's size."""

    acc: Buffer
    acc_at: Expr
    a: Buffer
    a_at: Expr
    a_ld: int
    b: Buffer
    b_at: Expr
    b_ld: int

    def __post_init__(self):
        at, bt = self.a.dtype, self.b.dtype
        if at not in MMA_ACC or (bt != at and {at, bt} != {DType.I8, DType.U8}):
            raise ValueError(f"kernel IR: mma of {at} by {bt}; it takes float16, bfloat16 "
                             "or float32 (TF32) pairs, or 8-bit integers")
        if self.acc.dtype is not MMA_ACC[at] or self.acc.space is not Space.LOCAL:
            raise ValueError(f"kernel IR: mma of {at} sums into a local {MMA_ACC[at]} array, "
                             f"not {self.acc.space} {self.acc.dtype} {self.acc.name}")
        per = self.per_word
        if self.a_ld % per or self.b_ld % per:
            raise ValueError(f"kernel IR: mma's leading dimensions ({self.a_ld}, {self.b_ld})"
                             f" are not multiples of {per} (a 32-bit word of {at})")

    @property
    def per_word(self) -> int:
        """Operand elements per 32-bit register of a fragment."""
        return 4 // self.a.dtype.itemsize

    @property
    def k(self) -> int:
        return 8 * self.per_word


@dataclass(frozen=True)
class Stream:
    """A FIFO parameter of `dtype` values, at most `depth` of them held at once; `role` "in"
    (the kernel pops) or "out" (it pushes)."""

    name: str
    dtype: DType
    depth: int
    role: Role = Role.IN

    def __post_init__(self):
        role = as_enum(Role, self.role, "stream role")
        if role not in (Role.IN, Role.OUT):
            raise ValueError(f"kernel IR: stream {self.name} has role {role}; a stream is in "
                             "or out")
        object.__setattr__(self, "role", role)


@dataclass
class Push:
    stream: Stream
    value: Expr


@dataclass
class Pop:
    """Takes the oldest value of `stream` into a new local `name`."""

    stream: Stream
    name: str


@dataclass
class Call:
    """A call of another kernel (a micro-kernel); args match its params: a `Ptr` for a
    Buffer param, an Expr for a `Scalar` param."""

    fn: Kernel
    args: list


@dataclass
class If:
    cond: Expr
    then: list
    orelse: list = field(default_factory=list)


@dataclass
class Kernel:
    name: str
    params: list  # Buffer and Scalar
    body: list
    doc: str = ""
    # opaque: compiled as called through its parameters only, never specialised on a call
    # site's constants (a micro-kernel whose unrolled specialisations would spill its
    # accumulators)
    opaque: bool = False
    # a run-time dispatched kernel's version for CPUs without the extension, where it is
    # another schedule of the same sums (NEON's pairdot beside sdot's dot4); same parameters
    fallback: Kernel | None = None
    # outlined: never inlined into a caller, though a compiler may still specialise it on a
    # call site's constants (a register tile whose caller's loop nest, inlined beside it,
    # would crowd the registers: gcc inlining ResNet-18's downsampling tile into its only
    # driver made that layer 1.4x slower)
    outlined: bool = False

    def callees(self) -> list[Kernel]:
        """The kernels this one calls, directly or not, callees first, each once."""
        out: dict[str, Kernel] = {}
        for s in walk(self.body):
            if isinstance(s, Call) and s.fn.name not in out:
                for k in s.fn.callees() + [s.fn]:
                    out.setdefault(k.name, k)
        return list(out.values())


def walk(stmts: list) -> Iterator:
    """Every statement, depth first."""
    for s in stmts:
        yield s
        if isinstance(s, Loop):
            yield from walk(s.body)
        elif isinstance(s, If):
            yield from walk(s.then)
            yield from walk(s.orelse)


# the builder the op kernels are written with (kernel_builder.py), importable from here too
from .builder import KernelBuilder  # noqa: E402, F401
