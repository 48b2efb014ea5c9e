"""The C renderer: prints kernel IR as C99, one `static` function per kernel.

It is a set of tables (C type names, operator spellings, math functions per float type) and
a small recursive printer; the CUDA and HLS renderers of later targets override a few entries
of the same tables. Expressions print with the fewest parentheses C precedence allows.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.dtypes import DType
from ..kernel_ir import Assign, Buffer, Expr, If, Kernel, Local, Loop, Store

C_TYPES = {
    DType.F16: "_Float16", DType.F32: "float", DType.F64: "double",
    DType.I8: "int8_t", DType.I16: "int16_t", DType.I32: "int32_t", DType.I64: "int64_t",
    DType.U8: "uint8_t", DType.U16: "uint16_t", DType.U32: "uint32_t", DType.U64: "uint64_t",
    DType.BOOL: "bool", DType.INDEX: "ptrdiff_t",
}

# (C spelling, precedence): higher binds tighter.
INFIX = {
    "mul": ("*", 13), "div": ("/", 13), "mod": ("%", 13), "add": ("+", 12), "sub": ("-", 12),
    "shl": ("<<", 11), "shr": (">>", 11),
    "lt": ("<", 10), "le": ("<=", 10), "gt": (">", 10), "ge": (">=", 10),
    "eq": ("==", 9), "ne": ("!=", 9), "bitand": ("&", 8), "bitxor": ("^", 7), "bitor": ("|", 6),
    "and": ("&&", 5), "or": ("||", 4),
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


class CRenderer:
    types = C_TYPES
    infix = INFIX
    restrict = "restrict"
    function_prefix = "static void"

    # -- expressions -------------------------------------------------------------------
    def type(self, dtype: DType) -> str:
        return self.types[dtype]

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
        op, a = e.op, e.args
        if op == "const":
            text = self.literal(a[0], e.dtype)
            return text, (16 if not text.startswith("-") else 14)
        if op == "var":
            return a[0], 16
        if op == "load":
            return f"{a[0].name}[{self.expr(a[1])}]", 16
        if op in self.infix:
            sym, prec = self.infix[op]
            if op == "mod" and a[0].dtype.is_float:
                fmod = self.math_fn("fmod", a[0].dtype)
                return f"{fmod}({self.expr(a[0])}, {self.expr(a[1])})", 16
            # gcc's -Wparentheses wants (a && b) || c and (a < b) == (c < d) spelled out
            left = 6 if op == "or" else 11 if op in ("eq", "ne") else prec
            return f"{self.expr(a[0], left)} {sym} {self.expr(a[1], max(left, prec + 1))}", prec
        if op in ("max", "min"):
            if e.dtype.is_float:
                return f"{self.math_fn(op, e.dtype)}({self.expr(a[0])}, {self.expr(a[1])})", 16
            cmp = ">" if op == "max" else "<"
            x, y = self.expr(a[0], 11), self.expr(a[1], 11)  # operands of the comparison
            return f"{x} {cmp} {y} ? {x} : {y}", 3
        if op == "neg":  # parenthesize a negative operand: "--x" would be a decrement
            return f"-{self.expr(a[0], 15)}", 14
        if op == "not":
            return f"!{self.expr(a[0], 14)}", 14
        if op == "select":
            return f"{self.expr(a[0], 4)} ? {self.expr(a[1], 4)} : {self.expr(a[2], 3)}", 3
        if op == "cast":
            return f"({self.type(e.dtype)}){self.expr(a[0], 14)}", 14
        if op == "bitcast":  # type punning through a union is defined in C99
            members = f"{self.type(a[0].dtype)} from; {self.type(e.dtype)} to;"
            return f"((union {{ {members} }}){{ .from = {self.expr(a[0])} }}).to", 16
        if op == "call":
            return self._call(a[0], e, a[1:]), 16
        raise ValueError(f"C renderer: unknown kernel-IR op {op}")

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
        out: list[str] = []
        for s in body:
            if isinstance(s, Loop):
                v, n = s.var, self.expr(s.extent)
                out.append(f"{indent}for (ptrdiff_t {v} = 0; {v} < {n}; ++{v}) {{")
                out += self.stmts(s.body, indent + "    ")
                out.append(f"{indent}}}")
            elif isinstance(s, Local):
                out.append(f"{indent}{self.type(s.dtype)} {s.name} = {self.expr(s.init)};")
            elif isinstance(s, Assign):
                out.append(f"{indent}{s.name} = {self.expr(s.value)};")
            elif isinstance(s, Store):
                out.append(f"{indent}{s.buf.name}[{self.expr(s.index)}] = {self.expr(s.value)};")
            elif isinstance(s, If):
                out.append(f"{indent}if ({self.expr(s.cond)}) {{")
                out += self.stmts(s.then, indent + "    ")
                if s.orelse:
                    out.append(f"{indent}}} else {{")
                    out += self.stmts(s.orelse, indent + "    ")
                out.append(f"{indent}}}")
            else:
                raise ValueError(f"C renderer: unknown statement {type(s).__name__}")
        return out

    def param(self, b: Buffer) -> str:
        const = "const " if b.role in ("in", "const") else ""
        return f"{const}{self.type(b.dtype)} *{self.restrict} {b.name}"

    def signature(self, k: Kernel) -> str:
        params = ", ".join(self.param(b) for b in k.params) or "void"
        return f"{self.function_prefix} {k.name}({params})"

    def kernel(self, k: Kernel) -> str:
        lines = []
        if k.doc:
            lines.append("/* " + k.doc.replace("*/", "* /") + " */")
        lines.append(self.signature(k))
        lines.append("{")
        used = _used_params(k)
        for b in k.params:
            if b.name not in used:
                lines.append(f"    (void){b.name};")
        lines += self.stmts(k.body, "    ")
        lines.append("}")
        return "\n".join(lines)


def _used_params(k: Kernel) -> set[str]:
    from ..kernel_ir import walk

    used: set[str] = set()

    def visit(e: Expr):
        if e.op == "load":
            used.add(e.args[0].name)
        for a in e.args:
            if isinstance(a, Expr):
                visit(a)

    for s in walk(k.body):
        if isinstance(s, Store):
            used.add(s.buf.name)
            visit(s.index)
            visit(s.value)
        elif isinstance(s, Local):
            visit(s.init)
        elif isinstance(s, Assign):
            visit(s.value)
        elif isinstance(s, If):
            visit(s.cond)
        elif isinstance(s, Loop):
            visit(s.extent)
    return used
