"""The C renderer: prints kernel IR as C99, one `static` function per kernel.

It is a set of tables (C type names, operator spellings, math functions per float type, and
per vector ISA the intrinsics of each vector operation) and a small recursive printer; the
CUDA and HLS renderers of later targets override a few entries of the same tables.
`expressions` (scalars) and `vector_expressions` map each kernel-IR `Op` to the method that
prints it, called with the expression and its fields by name; `statements` maps statement
types. Expressions print with the fewest parentheses C precedence allows.

Vectors are printed with the ISA's intrinsics (`VECTOR_ISAS`); a target without one builds
its kernels with 1-lane vectors, which are plain scalars. A top-level parallel loop is
outlined into a function of (context, first, end) that the runtime's thread pool calls on
slices of the iteration space; the context is a struct of the kernel's parameters.

The vector ISAs' tables (intrinsics, and how int8 dot products are formed) are in c_isas.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ...ir.dtypes import SUB_BYTE, DType
from ...kernel_ir.kernel import (
    Alloc,
    Assign,
    AtomicAdd,
    Buffer,
    Call,
    Expr,
    If,
    Kernel,
    Local,
    Loop,
    LoopKind,
    Mma,
    Op,
    Pop,
    Prefetch,
    Ptr,
    Push,
    Role,
    Scalar,
    Store,
    Stream,
)
from ...kernel_ir.passes import ParallelFor, outline_parallel, split_barriers, used_params
from ..ctext import c_comment
from .c_isas import CMP_PREDICATES, Dispatch, Form, VectorISA

C_TYPES = {
    DType.F16: "_Float16", DType.F32: "float", DType.F64: "double",
    DType.I8: "int8_t", DType.I16: "int16_t", DType.I32: "int32_t", DType.I64: "int64_t",
    DType.U8: "uint8_t", DType.U16: "uint16_t", DType.U32: "uint32_t", DType.U64: "uint64_t",
    DType.BOOL: "bool", DType.INDEX: "ptrdiff_t",
} | {t: "int8_t" if t.is_signed else "uint8_t" for t in SUB_BYTE}  # one value per byte

# (C spelling, precedence): higher binds tighter.
INFIX = {
    Op.MUL: ("*", 13), Op.DIV: ("/", 13), Op.MOD: ("%", 13), Op.ADD: ("+", 12),
    Op.SUB: ("-", 12), Op.SHL: ("<<", 11), Op.SHR: (">>", 11),
    Op.LT: ("<", 10), Op.LE: ("<=", 10), Op.GT: (">", 10), Op.GE: (">=", 10),
    Op.EQ: ("==", 9), Op.NE: ("!=", 9), Op.BITAND: ("&", 8), Op.BITXOR: ("^", 7),
    Op.BITOR: ("|", 6), Op.AND: ("&&", 5), Op.OR: ("||", 4),
}

# Math functions by C float type; `None` marks functions spelled as expressions below.
MATH_F32 = {
    "exp": "expf", "log": "logf", "sqrt": "sqrtf", "tanh": "tanhf", "erf": "erff", "pow": "powf",
    "abs": "fabsf", "floor": "floorf", "ceil": "ceilf", "round": "nearbyintf", "sin": "sinf",
    "cos": "cosf", "tan": "tanf", "asin": "asinf", "acos": "acosf", "atan": "atanf",
    "sinh": "sinhf", "cosh": "coshf", "asinh": "asinhf", "acosh": "acoshf", "atanh": "atanhf",
    "fmod": "fmodf", "isnan": "isnan", "isinf": "isinf", "max": "fmaxf", "min": "fminf",
    "log1p": "log1pf", "expm1": "expm1f",
}
MATH_F64 = {k: (v[:-1] if v.endswith("f") and k != "isinf" else v) for k, v in MATH_F32.items()}
# float32 exp and tanh are the runtime's edgec_expf and edgec_tanhf (edgec_runtime.h, printed
# from their kernel-IR definition in mathlib.py): branch-free, so loops over them vectorize
MATH_F32 |= {"exp": "edgec_expf", "tanh": "edgec_tanhf"}


@dataclass
class _Verbatim:
    """Lines the renderer itself produced (a thread-pool call replacing a parallel loop)."""

    lines: list[str]


class CRenderer:
    types = C_TYPES
    infix = INFIX
    restrict = "restrict"
    function_prefix = "static void"

    def __init__(self, isa: VectorISA | None = None):
        self.isa = isa

    # -- expressions -------------------------------------------------------------------
    def type(self, dtype: DType, lanes: int = 1) -> str:
        if lanes == 1:
            return self.types[dtype]
        if _is_word(dtype, lanes):
            return self.types[DType.U32]
        self._vector_check(dtype, lanes)
        return self.isa.types[dtype]

    def _vector_check(self, dtype: DType, lanes: int) -> None:
        if self.isa is None or self.isa.lanes(dtype) != lanes:
            have = f"the {self.isa.name} ISA" if self.isa else "no vector ISA"
            raise ValueError(f"C renderer: {lanes}-lane {dtype} vector with {have}")

    def vop(self, op: Op | Form, dtype: DType, **operands: str) -> str:
        template = self.isa.ops.get((op, dtype)) if self.isa else None
        if template is None:
            raise ValueError(f"C renderer: no {op} of {dtype} vectors in "
                             f"{self.isa.name if self.isa else 'scalar'} code")
        return template.format(**operands)

    def _vector(self, e: Expr) -> str:
        """A vector expression: the ISA's intrinsics, by the entry of its op in
        `vector_expressions` (a 4-lane byte vector without such an ISA is a 32-bit word)."""
        if _is_word(e.dtype, e.lanes) and (self.isa is None or
                                             self.isa.lanes(e.dtype) != e.lanes):
            return self._word(e)
        self._vector_check(e.dtype, e.lanes)
        fn = self.vector_expressions.get(e.op)
        text = fn(self, e, **e.fields()) if fn else None
        if text is None:
            raise ValueError(f"C renderer: no vector form of kernel-IR op {e.op}")
        return text

    def _v_var(self, e: Expr, name: str) -> str:
        return name

    def _v_load(self, e: Expr, buf: Buffer, index: Expr, count: Expr | None) -> str:
        p = self.pointer(buf, index)
        if count is None:
            return self.vop("load", e.dtype, p=p)
        return self.vop("load_n", e.dtype, p=p, n=self.expr(count))

    def _v_gather(self, e: Expr, buf: Buffer, base: Expr, idx: Expr) -> str:
        return self.vop("gather", e.dtype, p=self.pointer(buf, base), a=self.expr(idx))

    def _v_broadcast(self, e: Expr, x: Expr) -> str:
        return self.vop("broadcast", e.dtype, a=self.expr(x))

    def _v_broadcast_group(self, e: Expr, buf: Buffer, index: Expr, group: int) -> str | None:
        if group * e.dtype.itemsize != 4:
            return None
        return self.vop("broadcast4", e.dtype, p=self.pointer(buf, index))

    def _v_mul16(self, e: Expr, a: Expr, b: Expr) -> str:
        op = "mul16" if ("mul16", DType.I32) in self.isa.ops else "mul"
        return self.vop(op, DType.I32, a=self.expr(a), b=self.expr(b))

    def _v_nibble(self, e: Expr, x: Expr, k: Expr) -> str:
        return self.vop("nibble_hi" if k.value else "nibble_lo", DType.I8, a=self.expr(x))

    def _v_recentre(self, e: Expr, x: Expr) -> str:
        return self.vop("recentre", DType.U8, a=self.expr(x))

    def _v_mulshift(self, e: Expr, x: Expr, m: Expr, s: Expr) -> str:
        return self.vop("mulshift", DType.I32, a=self.expr(x), b=self.expr(m), c=self.expr(s))

    def _v_dot4(self, e: Expr, acc: Expr, a: Expr, b: Expr) -> str:
        # dot4p (weight pairs that fit int16) has its own form only where it is cheaper
        op = e.op if (e.op, a.dtype) in self.isa.ops else Op.DOT4
        return self.vop(op, a.dtype, c=self.expr(acc), a=self.expr(a), b=self.expr(b))

    def _v_pairdot(self, e: Expr, acc: Expr, half: Expr, pairs: tuple[Expr, ...]) -> str:
        return self.vop("pairdot", DType.I8, c=self.expr(acc), n=len(pairs) // 2,
                        h=("lo", "hi")[half.value], a=", ".join(self.expr(x) for x in pairs))

    def _v_pairfold(self, e: Expr, lo: Expr, hi: Expr) -> str:
        return self.vop("pairfold", DType.I32, a=self.expr(lo), b=self.expr(hi))

    def _v_cast(self, e: Expr, x: Expr) -> str:
        if (x.op is Op.VLOAD and x.field("count") is None and x.dtype.itemsize in (1, 2)
                and e.dtype is DType.I32):  # L bytes or halfwords widened to L int32 lanes
            return self.vop("load_widen", x.dtype,
                            p=self.pointer(x.field("buf"), x.field("index")))
        if (e.dtype is DType.I32 and x.op is Op.CALL and x.field("fn") == "round"
                and ("round_to_i32", DType.F32) in self.isa.ops):
            # rounded to nearest even and converted in one instruction
            return self.vop("round_to_i32", DType.F32, a=self.expr(x.field("operands")[0]))
        return self.vop(f"to_{e.dtype.name.lower()}", x.dtype, a=self.expr(x))

    def _v_math(self, e: Expr, fn: str, operands: tuple[Expr, ...]) -> str | None:
        if fn not in ("round", "exp", "tanh", "abs"):
            return None
        return self.vop(fn, e.dtype, a=self.expr(operands[0]))

    def _v_neg(self, e: Expr, x: Expr) -> str:
        return self.vop("neg", e.dtype, a=self.expr(x))

    def _v_fma(self, e: Expr, a: Expr, b: Expr, c: Expr) -> str:
        return self.vop("fma", e.dtype, a=self.expr(a), b=self.expr(b), c=self.expr(c))

    def _v_binary(self, e: Expr, a: Expr, b: Expr) -> str:
        return self.vop(e.op, e.dtype, a=self.expr(a), b=self.expr(b))

    def _v_select(self, e: Expr, cond: Expr, a: Expr, b: Expr) -> str | None:
        if cond.op not in CMP_PREDICATES or cond.field("a").lanes == 1:
            return None
        return self.vop("select_cmp", e.dtype, a=self.expr(cond.field("a")),
                        b=self.expr(cond.field("b")),
                        pred=(self.isa.predicates or CMP_PREDICATES)[cond.op],
                        x=self.expr(a), y=self.expr(b))

    # vector kernel-IR ops -> the method printing them with the ISA's intrinsics, called
    # with the expression and its fields by name (a vector op missing here has no vector form)
    vector_expressions: dict[Op, Callable[..., str | None]] = {
        Op.VAR: _v_var, Op.VLOAD: _v_load, Op.BROADCAST: _v_broadcast,
        Op.VBROADCAST: _v_broadcast_group, Op.DOT4: _v_dot4, Op.DOT4P: _v_dot4,
        Op.VGATHER: _v_gather, Op.MUL16: _v_mul16, Op.NIBBLE: _v_nibble, Op.CAST: _v_cast,
        Op.RECENTRE: _v_recentre, Op.PAIRDOT: _v_pairdot, Op.PAIRFOLD: _v_pairfold,
        Op.MULSHIFT: _v_mulshift, Op.CALL: _v_math, Op.NEG: _v_neg, Op.FMA: _v_fma,
        **dict.fromkeys((Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAX, Op.MIN), _v_binary),
        Op.SELECT: _v_select}

    def _word(self, e: Expr) -> str:
        """A 4-lane 8-bit vector as a uint32_t, lane k in bits 8k..8k+7."""
        if e.op is Op.VAR:
            return e.field("name")
        if e.op is Op.VLOAD and e.field("count") is None:
            index = e.field("index")
            p = self.pointer(e.field("buf"), index)
            p = p if index.is_const and index.value == 0 else f"({p})"
            return " | ".join(f"(uint32_t)(uint8_t){p}[{k}]" + (f" << {8 * k}" if k else "")
                              for k in range(4))
        if e.op is Op.NIBBLE:  # the four bytes' fields at once, as the vector ISAs do
            w = self.expr(e.field("x"), 11)
            return f"({w} << 4 & 0xf0f0f0f0u)" if e.field("k").value == 0 else \
                f"({w} & 0xf0f0f0f0u)"
        if e.op is Op.RECENTRE:
            # the word in parentheses: a broadcast's is an OR of shifted bytes, which binds
            # looser than ^ (it once XORed only the top byte's term)
            return f"(({self.expr(e.field('x'))}) ^ 0x80808080u)"
        raise ValueError(f"C renderer: no scalar form of a 4-lane {e.dtype} {e.op}")

    def _byte(self, e: Expr, k: int) -> str:
        """Lane k of a 4-lane 8-bit vector as an int32_t."""
        if e.op is Op.VLOAD and e.field("count") is None:
            index = e.field("index")
            p = self.pointer(e.field("buf"), index)
            bare = index.is_const and index.value == 0
            return f"(int32_t){p if bare else f'({p})'}[{k}]"
        w = self.expr(e, 11)
        byte = f"({w} >> {8 * k} & 0xff)" if k else f"({w} & 0xff)"
        # sign-extended without an implementation-defined conversion
        return f"(int32_t){byte}" if e.dtype is DType.U8 else f"(((int32_t){byte} ^ 0x80) - 0x80)"

    def pointer(self, buf: Buffer, index: Expr) -> str:
        return buf.name if index.is_const and index.value == 0 else \
            f"{buf.name} + {self.expr(index, 12)}"

    def literal(self, value, dtype: DType) -> str:
        if dtype is DType.BOOL:
            return "true" if value else "false"
        if dtype.is_float:
            f = float(value)
            if math.isnan(f):
                return "NAN"
            if math.isinf(f):
                return "INFINITY" if f > 0 else "-INFINITY"
            text = repr(f) if dtype is DType.F64 else str(np.float32(f))
            if "e" not in text and "." not in text:
                text += ".0"
            return text if dtype is DType.F64 else text + "f"
        v = int(value)
        if v == -2**63 and dtype in (DType.I64, DType.INDEX):
            return "INT64_MIN"  # its magnitude is no int64_t literal
        if dtype in (DType.I64, DType.INDEX) and not -2**31 <= v < 2**31:
            return f"INT64_C({v})"
        if dtype is DType.U64 or (dtype is DType.U32 and v >= 2**31):
            return f"{v}u"
        if v == -2**31 and dtype is DType.I32:
            return "INT32_MIN"
        return str(v)

    def math_fn(self, fn: str, dtype: DType) -> str:
        table = MATH_F64 if dtype is DType.F64 else MATH_F32
        return table[fn]

    def expr(self, e: Expr, parent: int = 0) -> str:
        text, prec = self._expr(e)
        return f"({text})" if prec < parent else text

    def _expr(self, e: Expr) -> tuple[str, int]:
        """(text, precedence) of `e`, by the entry of its op in `expressions` (or, for a
        vector, `vector_expressions`)."""
        if e.lanes > 1:
            return self._vector(e), 16
        fn = self.expressions.get(e.op)
        if fn is None:
            raise ValueError(f"C renderer: no scalar form of kernel-IR op {e.op}")
        return fn(self, e, **e.fields())

    def _infix(self, e: Expr, a: Expr, b: Expr) -> tuple[str, int]:
        op = e.op
        sym, prec = self.infix[op]
        if op is Op.MOD and a.dtype.is_float:
            fmod = self.math_fn("fmod", a.dtype)
            return f"{fmod}({self.expr(a)}, {self.expr(b)})", 16
        # gcc's -Wparentheses wants (a && b) || c, (a < b) == (c < d) and (a + b) >> c
        # spelled out
        left = 6 if op is Op.OR else 11 if op in (Op.EQ, Op.NE) else \
            13 if op in (Op.SHL, Op.SHR) else prec
        return f"{self.expr(a, left)} {sym} {self.expr(b, max(left, prec + 1))}", prec

    def _hreduce(self, e: Expr, fold: Op, x: Expr) -> tuple[str, int]:
        return self.vop(f"hreduce_{fold}", e.dtype, a=self.expr(x)), 16

    def _dot4(self, e: Expr, acc: Expr, a: Expr, b: Expr) -> tuple[str, int]:
        # one int32 lane: the 4 byte products written out
        terms = " + ".join(f"{self._byte(a, k)} * {self._byte(b, k)}" for k in range(4))
        return f"{self.expr(acc, 12)} + {terms}", 12

    def _mul16(self, e: Expr, a: Expr, b: Expr) -> tuple[str, int]:
        return f"{self.expr(a, 13)} * {self.expr(b, 14)}", 13

    def _mulshift(self, e: Expr, x: Expr, m: Expr, s: Expr) -> tuple[str, int]:
        return f"edgec_mulshift({self.expr(x)}, {self.expr(m)}, {self.expr(s)})", 16

    def _shfl_xor(self, e: Expr, x: Expr, mask: int) -> tuple[str, int]:
        raise ValueError(f"{type(self).__name__}: shfl_xor exchanges values between a GPU "
                         "warp's threads and has no CPU form (build for --target cuda)")

    def _fma(self, e: Expr, a: Expr, b: Expr, c: Expr) -> tuple[str, int]:
        fn = "fma" if e.dtype is DType.F64 else "fmaf"
        return f"{fn}({', '.join(self.expr(t) for t in (a, b, c))})", 16

    def _const(self, e: Expr, value) -> tuple[str, int]:
        text = self.literal(value, e.dtype)
        return text, (16 if not text.startswith("-") else 14)

    def _var(self, e: Expr, name: str) -> tuple[str, int]:
        return name, 16

    def _load(self, e: Expr, buf: Buffer, index: Expr) -> tuple[str, int]:
        return f"{buf.name}[{self.expr(index)}]", 16

    def _minmax(self, e: Expr, a: Expr, b: Expr) -> tuple[str, int]:
        if e.dtype.is_float:
            return f"{self.math_fn(e.op, e.dtype)}({self.expr(a)}, {self.expr(b)})", 16
        cmp = ">" if e.op is Op.MAX else "<"
        xs, ys = self.expr(a, 11), self.expr(b, 11)  # operands of the comparison
        return f"{xs} {cmp} {ys} ? {xs} : {ys}", 3

    def _neg(self, e: Expr, x: Expr) -> tuple[str, int]:
        return f"-{self.expr(x, 15)}", 14  # parenthesized if negative: "--x" is a decrement

    def _not(self, e: Expr, x: Expr) -> tuple[str, int]:
        return f"!{self.expr(x, 14)}", 14

    def _select(self, e: Expr, cond: Expr, a: Expr, b: Expr) -> tuple[str, int]:
        return f"{self.expr(cond, 4)} ? {self.expr(a, 4)} : {self.expr(b, 3)}", 3

    def _cast(self, e: Expr, x: Expr) -> tuple[str, int]:
        return f"({self.type(e.dtype)}){self.expr(x, 14)}", 14

    def _bitcast(self, e: Expr, x: Expr) -> tuple[str, int]:
        # type punning through a union is defined in C99
        members = f"{self.type(x.dtype)} from; {self.type(e.dtype)} to;"
        return f"((union {{ {members} }}){{ .from = {self.expr(x)} }}).to", 16

    def _math(self, e: Expr, fn: str, operands: tuple[Expr, ...]) -> tuple[str, int]:
        return self._call(fn, e, operands), 16

    # scalar kernel-IR ops -> the method printing them, called with the expression and its
    # fields by name (a scalar op missing here has no scalar form)
    expressions: dict[Op, Callable[..., tuple[str, int]]] = {
        **dict.fromkeys(INFIX, _infix),
        Op.HREDUCE: _hreduce, Op.DOT4: _dot4, Op.DOT4P: _dot4, Op.MUL16: _mul16, Op.FMA: _fma,
        Op.MULSHIFT: _mulshift, Op.CONST: _const, Op.VAR: _var, Op.LOAD: _load,
        Op.MAX: _minmax, Op.MIN: _minmax, Op.NEG: _neg, Op.NOT: _not, Op.SELECT: _select,
        Op.CAST: _cast, Op.BITCAST: _bitcast, Op.CALL: _math, Op.SHFL_XOR: _shfl_xor}

    def _call(self, fn: str, e: Expr, args) -> str:
        dtype = args[0].dtype
        if fn == "sign":
            x = self.expr(args[0], 10)
            return f"(({x} > 0) - ({x} < 0))"
        if not dtype.is_float:
            x = self.expr(args[0], 3)
            if fn == "abs":
                return f"({x} < 0 ? -{self.expr(args[0], 15)} : {x})"
            if fn in ("floor", "ceil", "round"):
                return self.expr(args[0])
        return f"{self.math_fn(fn, dtype)}({', '.join(self.expr(x) for x in args)})"

    # -- statements --------------------------------------------------------------------
    def stmts(self, body: list, indent: str) -> list[str]:
        """The lines of `body`, each statement by the entry of its type in `statements`."""
        out: list[str] = []
        for s in body:
            fn = self.statements.get(type(s))
            if fn is None:
                raise ValueError(f"C renderer: unknown statement {type(s).__name__}")
            out += fn(self, s, indent)
        return out

    def _loop(self, s: Loop, indent: str) -> list[str]:
        v, n = s.var, self.expr(s.extent, 11)  # the right operand of <
        out = []
        if s.kind in (LoopKind.GRID, LoopKind.BLOCK, LoopKind.PIPELINE):  # for the reader
            out.append(f"{indent}/* {s.kind}{f' II={s.ii}' if s.ii else ''} */")
        if s.kind is LoopKind.UNROLL or s.unroll > 1:
            out.append(f"{indent}_Pragma(\"GCC unroll {s.unroll or 64}\")")
        return out + [f"{indent}for (ptrdiff_t {v} = 0; {v} < {n}; ++{v}) {{",
                      *self.stmts(s.body, indent + "    "), f"{indent}}}"]

    def _local(self, s: Local, indent: str) -> list[str]:
        return [f"{indent}{self.type(s.dtype, s.lanes)} {s.name} = {self.expr(s.init)};"]

    def _assign(self, s: Assign, indent: str) -> list[str]:
        return [f"{indent}{s.name} = {self.expr(s.value)};"]

    def _store(self, s: Store, indent: str) -> list[str]:
        if _narrowing(s, self.isa):  # int32 lanes stored as bytes (a full vector: count=lanes)
            p, v = self.pointer(s.buf, s.index), self.expr(s.value.field("x"))
            n = self.expr(s.count) if s.count is not None else str(s.value.lanes)
            return [f"{indent}{self.vop('store_narrow_n', s.buf.dtype, p=p, v=v, n=n)};"]
        if s.value.lanes > 1:
            p, v = self.pointer(s.buf, s.index), self.expr(s.value)
            if s.count is None:
                return [f"{indent}{self.vop('store', s.buf.dtype, p=p, v=v)};"]
            n = self.expr(s.count)
            return [f"{indent}{self.vop('store_n', s.buf.dtype, p=p, v=v, n=n)};"]
        return [f"{indent}{s.buf.name}[{self.expr(s.index)}] = {self.expr(s.value)};"]

    def _prefetch(self, s: Prefetch, indent: str) -> list[str]:
        return [f"{indent}EDGEC_PREFETCH({self.pointer(s.buf, s.index)});"]

    def _call_stmt(self, s: Call, indent: str) -> list[str]:
        args = ", ".join(self.pointer(a.buf, a.offset) if isinstance(a, Ptr)
                         else self.expr(a) for a in s.args)
        return [f"{indent}{s.fn.name}({args});"]

    def _alloc(self, s: Alloc, indent: str) -> list[str]:
        b = s.buf
        return [f"{indent}{self.type(b.dtype)} {b.name}[{b.numel}] EDGEC_ALIGNED; /* {b.space} */"]

    def _push(self, s: Push, indent: str) -> list[str]:
        t = self.type(s.stream.dtype)
        return [f"{indent}EDGEC_PUSH({s.stream.name}, {t}, {self.expr(s.value)});"]

    def _pop(self, s: Pop, indent: str) -> list[str]:
        t = self.type(s.stream.dtype)
        return [f"{indent}{t} {s.name} = EDGEC_POP({s.stream.name}, {t});"]

    def _if(self, s: If, indent: str) -> list[str]:
        out = [f"{indent}if ({self.expr(s.cond)}) {{", *self.stmts(s.then, indent + "    ")]
        if s.orelse:
            out += [f"{indent}}} else {{", *self.stmts(s.orelse, indent + "    ")]
        return out + [f"{indent}}}"]

    def _gpu_only(self, s: Mma | AtomicAdd, indent: str) -> list[str]:
        what = "an mma is a GPU warp's tensor-core multiply-add" if isinstance(s, Mma) else \
            "an atomic add is a GPU's (a split-K's partial sums)"
        raise ValueError(f"{type(self).__name__}: {what}: render it for --target cuda")

    def _verbatim(self, s: _Verbatim, indent: str) -> list[str]:
        return [indent + line for line in s.lines]

    # kernel-IR statement types -> the method printing them (the CUDA and HLS renderers of
    # later targets override entries: shared arrays, barriers, loop bindings, streams)
    statements: dict[type, Callable[..., list[str]]] = {
        Loop: _loop, Local: _local, Assign: _assign, Store: _store, Prefetch: _prefetch,
        Call: _call_stmt, Alloc: _alloc, Push: _push, Pop: _pop, If: _if, Mma: _gpu_only,
        AtomicAdd: _gpu_only,
        _Verbatim: _verbatim}

    def param(self, b: Buffer | Scalar | Stream, restrict: bool = True) -> str:
        if isinstance(b, Scalar):
            return f"{self.type(b.dtype)} {b.name}"
        if isinstance(b, Stream):
            return f"edgec_stream *{b.name}"
        const = "const " if b.role in (Role.IN, Role.CONST) else ""
        qual = f"{self.restrict} " if restrict else ""
        return f"{const}{self.type(b.dtype)} *{qual}{b.name}"

    def signature(self, k: Kernel) -> str:
        params = ", ".join(self.param(b) for b in k.params) or "void"
        opaque = "EDGEC_OPAQUE " if k.opaque else "EDGEC_NOINLINE " if k.outlined else ""
        return f"{opaque}{self.function_prefix} {k.name}({params})"

    def kernel(self, k: Kernel) -> str:
        """The C function of `k` (with the outlined bodies of its parallel loops first); a
        block of threads with barriers runs phase by phase (`split_barriers`)."""
        k = split_barriers(k)
        lines: list[str] = []
        body = k.body
        if any(isinstance(s, Loop) and s.kind is LoopKind.PARALLEL for s in body):
            body = self._outline(k, lines)
        if k.doc:
            lines.append("/* " + c_comment(k.doc) + " */")
        lines.append(self.signature(k))
        lines.append("{")
        used = used_params(Kernel(k.name, k.params, body))
        for b in k.params:
            if b.name not in used:
                lines.append(f"    (void){b.name};")
        lines += self.stmts(body, "    ")
        lines.append("}")
        return "\n".join(lines)

    def dispatched(self, k: Kernel, d: Dispatch) -> str | None:
        """`k` as K_<tag> (rendered for the extension `d.isa`), K_<base tag> (this renderer's)
        and K, which calls the first where `d.test` holds and the second elsewhere; None when
        `k` uses none of the extension's own operations (or has parallel loops, whose outlined
        tasks would not carry the attribute). The second is `k.fallback` where it has one."""
        fast = CRenderer(d.isa)
        base = k.fallback or k
        if any(isinstance(s, Loop) and s.kind is LoopKind.PARALLEL for s in k.body) or \
                fast.stmts(k.body, "") == self.stmts(base.body, ""):
            return None
        fast.function_prefix = f"{d.attribute} {self.function_prefix}"
        args = ", ".join(p.name for p in k.params)
        doc = c_comment(k.doc) or k.name
        return "\n".join([
            fast.kernel(replace(k, name=f"{k.name}_{d.tag}", doc=f"{k.doc} ({d.tag})")), "",
            self.kernel(replace(base, name=f"{k.name}_{d.base_tag}",
                                doc=f"{base.doc} ({d.base_tag})")),
            "", f"/* {doc}: the {d.tag} version where the CPU has it */", self.signature(k), "{",
            f"    if ({d.test})", f"        {k.name}_{d.tag}({args});", "    else",
            f"        {k.name}_{d.base_tag}({args});", "}"])

    def _outline(self, k: Kernel, lines: list[str]) -> list:
        """Print each task of `k`'s parallel loops (`outline_parallel`) as a function over a
        slice of the iterations, its context a struct of the kernel's parameters; returns the
        body with those loops replaced by thread-pool calls."""
        ctx = f"{k.name}_ctx"
        fields = " ".join(f"{self.param(p, restrict=False)};" for p in k.params)
        lines.append(f"struct {ctx} {{ {fields} }};" if k.params else
                     f"struct {ctx} {{ char unused; }};")
        tasks, body = outline_parallel(k)
        for t in tasks:
            unpack = [f"    {self.param(p)} = c->{p.name};" for p in k.params
                      if p.name in t.reads]
            v = t.loop.var
            lines += [f"static void {t.name}(void *ctx, ptrdiff_t first, ptrdiff_t end)", "{",
                      f"    const struct {ctx} *c = (const struct {ctx} *)ctx;", *unpack,
                      f"    for (ptrdiff_t {v} = first; {v} < end; ++{v}) {{",
                      *self.stmts(t.loop.body, "        "), "    }", "}", ""]
        init = ", ".join(p.name for p in k.params) or "0"
        return [_Verbatim([f"{{ struct {ctx} c = {{ {init} }};",
                           f"  edgec_parallel_for({s.task.name}, &c, {self.expr(s.extent)}); }}"])
                if isinstance(s, ParallelFor) else s for s in body]


def _narrowing(s: Store, isa: VectorISA | None = None) -> bool:
    """A vector store of int32 lanes into a byte buffer (the cast the builder added); 4 such
    lanes are a 32-bit word only without a 4-lane int32 vector (NEON has one)."""
    v = s.value
    return (v.lanes > 1 and v.op is Op.CAST and s.buf.dtype.itemsize == 1
            and v.field("x").dtype is DType.I32 and (not _is_word(v.dtype, v.lanes) or (
                isa is not None and isa.lanes(DType.I32) == v.lanes)))


def _is_word(dtype: DType, lanes: int) -> bool:
    return dtype.itemsize == 1 and lanes == 4 and dtype is not DType.BOOL
