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
follow it, each once.
"""

from __future__ import annotations

from ..ir.dtypes import DType
from .kernel import (
    INDEX,
    Alloc,
    Assign,
    Barrier,
    Buffer,
    Call,
    Expr,
    If,
    Kernel,
    Local,
    Loop,
    Pop,
    Prefetch,
    Push,
    Scalar,
    Store,
    Stream,
)

# (spelling, precedence); higher binds tighter
_INFIX = {"mul": ("*", 13), "div": ("/", 13), "mod": ("%", 13), "add": ("+", 12),
          "sub": ("-", 12), "shl": ("<<", 11), "shr": (">>", 11), "lt": ("<", 10),
          "le": ("<=", 10), "gt": (">", 10), "ge": (">=", 10), "eq": ("==", 9), "ne": ("!=", 9),
          "bitand": ("&", 8), "bitxor": ("^", 7), "bitor": ("|", 6), "and": ("&&", 5),
          "or": ("||", 4)}


def type_name(dtype: DType, lanes: int = 1) -> str:
    return dtype.value + (f"x{lanes}" if lanes > 1 else "")


def _const(e: Expr) -> str:
    v = e.value
    if e.dtype is DType.BOOL:
        return "true" if v else "false"
    text = repr(float(v)) if e.dtype.is_float else str(v)
    return text if e.dtype in (INDEX, DType.F32, DType.BOOL) else f"{text}:{e.dtype.value}"


def expr(e: Expr, outer: int = 0) -> str:
    """`e` as text, parenthesized if its operator binds looser than `outer`."""
    op, a = e.op, e.args
    if op == "const":
        return _const(e)
    if op == "var":
        return a[0]
    if op == "load":
        return f"{a[0].name}[{expr(a[1])}]"
    if op in _INFIX:
        sym, prec = _INFIX[op]
        text = f"{expr(a[0], prec)} {sym} {expr(a[1], prec + 1)}"
        return f"({text})" if prec < outer else text
    if op in ("neg", "not"):
        text = ("-" if op == "neg" else "!") + expr(a[0], 15)
        return f"({text})" if 14 < outer else text
    if op == "vload":
        tail = "" if a[2] is None else f" < {expr(a[2])}"
        return f"{a[0].name}[{expr(a[1])}:+{e.lanes}{tail}]"
    if op == "vgather":
        return f"{a[0].name}[{expr(a[1])} + {expr(a[2])}]"
    if op == "vbroadcast":
        return f"{a[0].name}[{expr(a[1])}:+{a[2]}]*{e.lanes // a[2]}"
    if op == "broadcast":
        return f"broadcast({expr(a[0])}, {e.lanes})"
    if op in ("cast", "bitcast"):
        return f"{op}<{type_name(e.dtype, e.lanes)}>({expr(a[0])})"
    if op == "call":
        return f"{a[0]}({', '.join(expr(x) for x in a[1:])})"
    if op == "hreduce":
        return f"hreduce.{a[0]}({expr(a[1])})"
    if op in ("max", "min"):
        return f"{op}({expr(a[0])}, {expr(a[1])})"
    return f"{op}({', '.join(expr(x) for x in a)})"  # select, fma, dot4, mul16


def _param(p: Buffer | Scalar | Stream) -> str:
    if isinstance(p, Scalar):
        return f"{p.name}: {type_name(p.dtype)}"
    if isinstance(p, Stream):
        return f"{p.role} {p.name}: stream<{type_name(p.dtype)}, {p.depth}>"
    shape = f"[{', '.join(map(str, p.shape))}]" if p.sized else "*"
    space = "" if p.space == "global" else f" {p.space}"
    return f"{p.role} {p.name}: {type_name(p.dtype)}{shape}{space}"


def _stmts(stmts: list, ind: str) -> list[str]:
    out: list[str] = []
    for s in stmts:
        if isinstance(s, Loop):
            kind = "" if s.kind == "serial" else f" {s.kind}"
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
                       f"[{', '.join(map(str, b.shape))}] {b.space}")
        elif isinstance(s, Barrier):
            out.append(f"{ind}barrier")
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
