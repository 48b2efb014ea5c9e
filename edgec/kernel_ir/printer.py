"""The kernel IR as readable text, for debugging and golden tests (`print_kernel`).

    // Relu r: (f32[2, 3]) -> f32[2, 3]
    kernel k0_r(in x: f32[2, 3], out y: f32[2, 3]) {
      for i < 6 {
        y[i] = max(x[i], 0.0)
      }
    }

Types are written `f32`, `i8`, ..., `index`, vectors `f32x8`; constants of a type other than
index, f32 or bool carry it (`3:i32`). A vector store reads `y[i:+8] = v` (`y[i:+8 < n]` for
a masked tail), a vector load `x[i:+8]`, a 4-element group broadcast `x[i:+4]*4`. Operators
print with C's precedence and no more parentheses than it needs. A kernel's micro-kernels
follow it, each once. Expressions print by `EXPRESSIONS`, a table from each `Op` to a function
of the expression, the precedence around it and the op's fields by name.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.dtypes import DType
from .kernel import (
    INDEX,
    Alloc,
    Assign,
    AtomicAdd,
    Barrier,
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
    Push,
    Scalar,
    Space,
    Store,
    Stream,
)

# (spelling, precedence); higher binds tighter
_INFIX = {Op.MUL: ("*", 13), Op.DIV: ("/", 13), Op.MOD: ("%", 13), Op.ADD: ("+", 12),
          Op.SUB: ("-", 12), Op.SHL: ("<<", 11), Op.SHR: (">>", 11), Op.LT: ("<", 10),
          Op.LE: ("<=", 10), Op.GT: (">", 10), Op.GE: (">=", 10), Op.EQ: ("==", 9),
          Op.NE: ("!=", 9), Op.BITAND: ("&", 8), Op.BITXOR: ("^", 7), Op.BITOR: ("|", 6),
          Op.AND: ("&&", 5), Op.OR: ("||", 4)}


def type_name(dtype: DType, lanes: int = 1) -> str:
    return dtype.value + (f"x{lanes}" if lanes > 1 else "")


def _const(e: Expr, outer: int, value) -> str:
    if e.dtype is DType.BOOL:
        return "true" if value else "false"
    text = repr(float(value)) if e.dtype.is_float else str(value)
    return text if e.dtype in (INDEX, DType.F32, DType.BOOL) else f"{text}:{e.dtype.value}"


def _infix(e: Expr, outer: int, a: Expr, b: Expr) -> str:
    sym, prec = _INFIX[e.op]
    text = f"{expr(a, prec)} {sym} {expr(b, prec + 1)}"
    return f"({text})" if prec < outer else text


def _prefix(e: Expr, outer: int, x: Expr) -> str:
    text = ("-" if e.op is Op.NEG else "!") + expr(x, 15)
    return f"({text})" if 14 < outer else text


def _vload(e: Expr, outer: int, buf: Buffer, index: Expr, count: Expr | None) -> str:
    tail = "" if count is None else f" < {expr(count)}"
    return f"{buf.name}[{expr(index)}:+{e.lanes}{tail}]"


def _vbroadcast(e: Expr, outer: int, buf: Buffer, index: Expr, group: int) -> str:
    return f"{buf.name}[{expr(index)}:+{group}]*{e.lanes // group}"


def _typed(e: Expr, outer: int, x: Expr) -> str:
    return f"{e.op}<{type_name(e.dtype, e.lanes)}>({expr(x)})"


def _call(e: Expr, outer: int, fn: str, operands: tuple[Expr, ...]) -> str:
    return f"{fn}({', '.join(expr(x) for x in operands)})"


def _function(e: Expr, outer: int, **fields) -> str:
    """The op as a function of its expression fields, in order (max, select, fma, dot4, ...)."""
    args = [x for v in fields.values() for x in (v if isinstance(v, tuple) else (v,))]
    return f"{e.op}({', '.join(expr(x) for x in args)})"


# op -> the function printing it, called with the expression, the precedence around it and
# the op's fields by name
EXPRESSIONS: dict[Op, Callable[..., str]] = {
    Op.CONST: _const,
    Op.VAR: lambda e, outer, name: name,
    Op.LOAD: lambda e, outer, buf, index: f"{buf.name}[{expr(index)}]",
    **{op: _infix for op in _INFIX},
    Op.NEG: _prefix, Op.NOT: _prefix,
    Op.VLOAD: _vload,
    Op.VGATHER: lambda e, outer, buf, base, idx: f"{buf.name}[{expr(base)} + {expr(idx)}]",
    Op.VBROADCAST: _vbroadcast,
    Op.BROADCAST: lambda e, outer, x: f"broadcast({expr(x)}, {e.lanes})",
    Op.CAST: _typed, Op.BITCAST: _typed,
    Op.CALL: _call,
    Op.HREDUCE: lambda e, outer, fold, x: f"hreduce.{fold}({expr(x)})",
    Op.SHFL_XOR: lambda e, outer, x, mask: f"shfl_xor({expr(x)}, {mask})",
    **{op: _function for op in (Op.MAX, Op.MIN, Op.SELECT, Op.FMA, Op.DOT4, Op.DOT4P,
                                Op.RECENTRE, Op.PAIRDOT, Op.PAIRFOLD, Op.MUL16, Op.NIBBLE,
                                Op.MULSHIFT)},
}


def expr(e: Expr, outer: int = 0) -> str:
    """`e` as text, parenthesized if its operator binds looser than `outer`."""
    return EXPRESSIONS[e.op](e, outer, **e.fields())


def _param(p: Buffer | Scalar | Stream) -> str:
    if isinstance(p, Scalar):
        return f"{p.name}: {type_name(p.dtype)}"
    if isinstance(p, Stream):
        return f"{p.role} {p.name}: stream<{type_name(p.dtype)}, {p.depth}>"
    shape = f"[{', '.join(map(str, p.shape))}]" if p.sized else "*"
    space = "" if p.space is Space.GLOBAL else f" {p.space}"
    return f"{p.role} {p.name}: {type_name(p.dtype)}{shape}{space}"


def _stmts(stmts: list, ind: str) -> list[str]:
    out: list[str] = []
    for s in stmts:
        if isinstance(s, Loop):
            kind = "" if s.kind is LoopKind.SERIAL else f" {s.kind}"
            kind += f" unroll {s.unroll}" if s.unroll > 1 else ""
            kind += f" ii {s.ii}" if s.ii else ""
            out += [f"{ind}for {s.var} < {expr(s.extent)}{kind} {{",
                    *_stmts(s.body, ind + "  "), f"{ind}}}"]
        elif isinstance(s, Local):
            out.append(f"{ind}let {s.name}: {type_name(s.dtype, s.lanes)} = {expr(s.init)}")
        elif isinstance(s, Assign):
            out.append(f"{ind}{s.name} = {expr(s.value)}")
        elif isinstance(s, Store):
            lanes = s.value.lanes
            where = expr(s.index) if lanes == 1 else f"{expr(s.index)}:+{lanes}" + (
                "" if s.count is None else f" < {expr(s.count)}")
            out.append(f"{ind}{s.buf.name}[{where}] = {expr(s.value)}")
        elif isinstance(s, Prefetch):
            out.append(f"{ind}prefetch {s.buf.name}[{expr(s.index)}]")
        elif isinstance(s, Alloc):
            b = s.buf
            out.append(f"{ind}alloc {b.name}: {type_name(b.dtype)}"
                       f"[{', '.join(map(str, b.shape))}] {b.space}"
                       + (f" partition cyclic {s.partition}" if s.partition > 1 else "")
                       + (f" counts {s.counts}" if s.counts else ""))
        elif isinstance(s, Barrier):
            out.append(f"{ind}barrier")
        elif isinstance(s, AtomicAdd):
            out.append(f"{ind}atomic {s.buf.name}[{expr(s.index)}] += {expr(s.value)}")
        elif isinstance(s, Mma):
            out.append(f"{ind}mma {s.acc.name}[{expr(s.acc_at)}:+4] += "
                       f"{s.a.name}[{expr(s.a_at)}; ld {s.a_ld}] * "
                       f"{s.b.name}[{expr(s.b_at)}; ld {s.b_ld}]")
        elif isinstance(s, Push):
            out.append(f"{ind}push {s.stream.name}, {expr(s.value)}")
        elif isinstance(s, Pop):
            out.append(f"{ind}let {s.name}: {type_name(s.stream.dtype)} = pop {s.stream.name}")
        elif isinstance(s, Call):
            args = [(a.buf.name if a.offset.is_const and a.offset.value == 0
                     else f"{a.buf.name} + {expr(a.offset, 12)}") if hasattr(a, "buf")
                    else expr(a) for a in s.args]
            out.append(f"{ind}call {s.fn.name}({', '.join(args)})")
        elif isinstance(s, If):
            out += [f"{ind}if {expr(s.cond)} {{", *_stmts(s.then, ind + "  ")]
            if s.orelse:
                out += [f"{ind}}} else {{", *_stmts(s.orelse, ind + "  ")]
            out.append(f"{ind}}}")
        else:
            raise ValueError(f"kernel printer: unknown statement {type(s).__name__}")
    return out


def print_kernel(k: Kernel, callees: bool = True) -> str:
    """`k` as text, followed (unless `callees` is False) by the micro-kernels it calls."""
    head = [f"// {k.doc}"] if k.doc else []
    head.append(f"kernel {k.name}({', '.join(_param(p) for p in k.params)}) {{")
    parts = ["\n".join(head + _stmts(k.body, "  ") + ["}"])]
    parts += [print_kernel(c, False).rstrip("\n") for c in k.callees()] if callees else []
    return "\n\n".join(parts) + "\n"
