"""The kernel IR's vocabulary, declared once: every expression op (`Op`) with its named fields
and result type (`OPS`), and the enums of loop bindings (`LoopKind`), memory spaces (`Space`)
and parameter roles (`Role`).

An `Expr`'s `args` hold its fields in the order `OPS[op].fields` names them; a field written
`*name` takes the remaining args as a tuple (a math call's operands, pairdot's byte vectors).
The printer, the interpreter and each renderer keep a table keyed by `Op`, and
`tests/kernel_ir/test_op_coverage.py` fails when one of them misses an op of `OPS`
(`uncovered`). The enums are `StrEnum`s: `Op.ADD == "add"`, and they print as their text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from ..ir.dtypes import DType


class Op(StrEnum):
    CONST = "const"
    VAR = "var"
    LOAD = "load"
    VLOAD = "vload"
    VGATHER = "vgather"
    VBROADCAST = "vbroadcast"
    BROADCAST = "broadcast"
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    MOD = "mod"
    MAX = "max"
    MIN = "min"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    EQ = "eq"
    NE = "ne"
    AND = "and"
    OR = "or"
    BITAND = "bitand"
    BITOR = "bitor"
    BITXOR = "bitxor"
    SHL = "shl"
    SHR = "shr"
    NEG = "neg"
    NOT = "not"
    CALL = "call"
    SELECT = "select"
    CAST = "cast"
    BITCAST = "bitcast"
    FMA = "fma"
    HREDUCE = "hreduce"
    DOT4 = "dot4"
    DOT4P = "dot4p"
    RECENTRE = "recentre"
    PAIRDOT = "pairdot"
    PAIRFOLD = "pairfold"
    MUL16 = "mul16"
    NIBBLE = "nibble"
    MULSHIFT = "mulshift"
    SHFL_XOR = "shfl_xor"  # a GPU warp's exchange: x of the lane whose index is this one's ^ mask


class LoopKind(StrEnum):
    """A loop's binding (kernel.py's doc says what each means)."""

    SERIAL = "serial"
    UNROLL = "unroll"
    PARALLEL = "parallel"
    GRID = "grid"
    BLOCK = "block"
    PIPELINE = "pipeline"


class Space(StrEnum):
    """Where a buffer lives: the kernel's parameters, a block's shared memory, a thread's own."""

    GLOBAL = "global"
    SHARED = "shared"
    LOCAL = "local"


class Role(StrEnum):
    """What a kernel does with a buffer or stream parameter."""

    IN = "in"
    OUT = "out"
    CONST = "const"  # weights
    SCRATCH = "scratch"  # a kernel-local array (`Alloc`)


COMPARE = (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE)
BINARY = (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MOD, Op.MAX, Op.MIN, *COMPARE, Op.AND, Op.OR,
          Op.BITAND, Op.BITOR, Op.BITXOR, Op.SHL, Op.SHR)
UNARY = (Op.NEG, Op.NOT)
HREDUCE = (Op.ADD, Op.MAX, Op.MIN)  # the folds of hreduce


class Kind(StrEnum):
    """What a field holds."""

    EXPR = "an expression"
    OPTIONAL = "an expression or None"
    BUFFER = "a Buffer"
    INT = "an int"
    NAME = "a str"
    VALUE = "a number"
    FOLD = "add, max or min"


@dataclass(frozen=True)
class Like:
    """A result type rule: the type of field `field` (a buffer's: its element type)."""

    field: str


@dataclass(frozen=True)
class OpSpec:
    """An op's fields (name and kind, in the order of `Expr.args`), how many args it takes
    (a `*` field takes the rest: between `arity[0]` and `arity[1]` args in all), and its
    result type: a fixed DType, `Like` a field, or None (the constructor gives it: a cast's
    target, a variable's declared type)."""

    fields: tuple[tuple[str, Kind], ...]
    dtype: DType | Like | None
    arity: tuple[int, int]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n.lstrip("*") for n, _ in self.fields)

    @cached_property
    def index(self) -> dict[str, int]:
        """Each field's position in `Expr.args`."""
        return {n: i for i, n in enumerate(self.names)}

    @property
    def rest(self) -> bool:
        """Whether the last field takes the remaining args."""
        return bool(self.fields) and self.fields[-1][0].startswith("*")


def _spec(fields: str, dtype: DType | Like | None, rest: tuple[int, int] | None = None
          ) -> OpSpec:
    """`fields` as "name:kind ...", kind one of e (expression, the default), e? (or None),
    buf, int, name, value, fold; a `*name` field takes `rest` (least, most) args."""
    kinds = {"e": Kind.EXPR, "e?": Kind.OPTIONAL, "buf": Kind.BUFFER, "int": Kind.INT,
             "name": Kind.NAME, "value": Kind.VALUE, "fold": Kind.FOLD}
    parsed = tuple((name, kinds[kind or "e"]) for name, _, kind in
                   (f.partition(":") for f in fields.split()))
    fixed = len(parsed) - (rest is not None)
    arity = (fixed + rest[0], fixed + rest[1]) if rest else (fixed, fixed)
    return OpSpec(parsed, dtype, arity)


I32, I8, BOOL = DType.I32, DType.I8, DType.BOOL

# Every expression op: its fields and result type. The builders in kernel.py check the
# finer rules (lanes, operand types); the table is what every consumer of the IR must cover.
OPS: dict[Op, OpSpec] = {
    Op.CONST: _spec("value:value", None),
    Op.VAR: _spec("name:name", None),
    Op.LOAD: _spec("buf:buf index", Like("buf")),
    Op.VLOAD: _spec("buf:buf index count:e?", Like("buf")),  # count: a masked tail
    Op.VGATHER: _spec("buf:buf base idx", Like("buf")),
    Op.VBROADCAST: _spec("buf:buf index group:int", Like("buf")),
    Op.BROADCAST: _spec("x", Like("x")),
    **{op: _spec("a b", BOOL if op in COMPARE else Like("a")) for op in BINARY},
    **{op: _spec("x", Like("x")) for op in UNARY},
    Op.CALL: _spec("fn:name *operands", None, rest=(1, 2)),  # fn: one of kernel.MATH
    Op.SELECT: _spec("cond a b", Like("a")),
    Op.CAST: _spec("x", None),
    Op.BITCAST: _spec("x", None),
    Op.FMA: _spec("a b c", Like("a")),
    Op.HREDUCE: _spec("fold:fold x", Like("x")),
    Op.DOT4: _spec("acc a b", I32),
    Op.DOT4P: _spec("acc a b", I32),
    Op.RECENTRE: _spec("x", I8),
    Op.PAIRDOT: _spec("acc half *pairs", I32, rest=(2, 4)),  # pairs: a0, b0[, a1, b1]
    Op.PAIRFOLD: _spec("lo hi", I32),
    Op.MUL16: _spec("a b", I32),
    Op.NIBBLE: _spec("x k", I8),  # k: a constant, 0 or 1
    Op.MULSHIFT: _spec("x m s", I32),
    Op.SHFL_XOR: _spec("x mask:int", Like("x")),  # mask: 1 .. warp size / 2
}


def uncovered(tables: Iterable[Mapping]) -> list[Op]:
    """The ops of `OPS` that no table of `tables` has as a key (a consumer of the IR together
    covers the op when any of its tables does)."""
    tables = list(tables)
    return [op for op in OPS if not any(op in t for t in tables)]
