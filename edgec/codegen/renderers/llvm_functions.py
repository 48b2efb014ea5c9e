"""The LLVM renderer's function bodies: kernel-IR statements and expressions emitted into an
LLVM function (`_FunctionBuilder`, whose `expressions` maps each kernel-IR `Op` to the function
emitting it), with the type and operation tables they use. The module,
the kernels' functions, outlining and compilation are in llvm.py, whose doc gives the
semantics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import llvmlite.ir as ir
import numpy as np

from ...ir.dtypes import SUB_BYTE, DType
from ...kernel_ir import mathlib
from ...kernel_ir.kernel import (
    BINARY,
    Alloc,
    Assign,
    AtomicAdd,
    Buffer,
    Call,
    Expr,
    If,
    Local,
    Loop,
    LoopKind,
    Mma,
    Op,
    Pop,
    Prefetch,
    Ptr,
    Push,
    Scalar,
    Store,
)

if TYPE_CHECKING:
    from .llvm import LLVMRenderer

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
FLOAT = ir.FloatType()
PTR = ir.PointerType()
VOID = ir.VoidType()

SCALAR_TYPES: dict[DType, ir.Type] = {
    DType.F16: ir.HalfType(), DType.F32: ir.FloatType(), DType.F64: ir.DoubleType(),
    DType.I8: I8, DType.I16: ir.IntType(16), DType.I32: I32, DType.I64: I64,
    DType.U8: I8, DType.U16: ir.IntType(16), DType.U32: I32, DType.U64: I64,
    DType.BOOL: I1, DType.INDEX: I64,
} | {t: I8 for t in SUB_BYTE}  # one value per byte
UNSIGNED = (DType.U8, DType.U16, DType.U32, DType.U64, DType.BOOL, DType.U4, DType.U3, DType.U2)
BITS = {DType.I8: 8, DType.I16: 16, DType.I32: 32, DType.I64: 64, DType.U8: 8, DType.U16: 16,
        DType.U32: 32, DType.U64: 64, DType.BOOL: 1, DType.INDEX: 64} | {t: 8 for t in SUB_BYTE}

# kernel-IR op -> the llvmlite IRBuilder method emitting its instruction
_B = ir.IRBuilder
FLOAT_BINARY = {Op.ADD: _B.fadd, Op.SUB: _B.fsub, Op.MUL: _B.fmul, Op.DIV: _B.fdiv,
                Op.MOD: _B.frem}
INT_BINARY = {Op.ADD: _B.add, Op.SUB: _B.sub, Op.MUL: _B.mul, Op.BITAND: _B.and_,
              Op.BITOR: _B.or_, Op.BITXOR: _B.xor, Op.SHL: _B.shl}
# (signed, unsigned) integer instructions
INT_SIGNED = {Op.DIV: (_B.sdiv, _B.udiv), Op.MOD: (_B.srem, _B.urem), Op.SHR: (_B.ashr, _B.lshr)}
CMP = {Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">=", Op.EQ: "==", Op.NE: "!="}

# math functions that are exact LLVM intrinsics (they lower to the instruction or the libm
# call C makes); the others are libm calls by name, F32 with the "f" suffix
INTRINSICS = {"exp": "exp", "log": "log", "sqrt": "sqrt", "pow": "pow", "abs": "fabs",
              "floor": "floor", "ceil": "ceil", "round": "nearbyint", "sin": "sin", "cos": "cos",
              "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh",
              "cosh": "cosh", "tanh": "tanh"}
LIBM = ("erf", "asinh", "acosh", "atanh", "log1p", "expm1")
MAX_UNROLL = 64  # as the C renderer's `#pragma GCC unroll 64`


def ll_type(dtype: DType, lanes: int = 1) -> ir.Type:
    t = SCALAR_TYPES[dtype]
    return t if lanes == 1 else ir.VectorType(t, lanes)


def mem_type(dtype: DType, lanes: int = 1) -> ir.Type:
    """The type of `dtype` in memory (a C bool is a byte)."""
    return ll_type(DType.U8 if dtype is DType.BOOL else dtype, lanes)


def _mangle(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_mangle(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return {"half": "f16", "float": "f32", "double": "f64"}[str(t)]


def _constant(value, dtype: DType) -> ir.Constant:
    if dtype.is_float:  # rounded to the type as C rounds its float literal
        v = float(value)
        if dtype is DType.F32:
            v = float(np.float32(v))
        elif dtype is DType.F16:
            v = float(np.float16(np.float32(v)))
        return ir.Constant(SCALAR_TYPES[dtype], v)
    bits = BITS[dtype]
    v = int(value) & ((1 << bits) - 1)  # two's complement of the stored bits
    if bits > 1 and v >= 1 << (bits - 1):
        v -= 1 << bits
    return ir.Constant(SCALAR_TYPES[dtype], v)


def _faults(e: Expr) -> bool:
    """Whether evaluating `e` may touch memory or trap (so C's lazy operators must guard it)."""
    if e.op in (Op.LOAD, Op.VLOAD, Op.VGATHER) or (e.op in (Op.DIV, Op.MOD) and
                                                   not e.dtype.is_float):
        return True
    return any(isinstance(a, Expr) and _faults(a) for a in e.args)


class _Freeze(ir.instructions.Instruction):
    """`freeze`: an out-of-range float-to-int conversion gives some value (as C on x86 and
    ARM does) instead of poison that would spread into branches."""

    def descr(self, buf):
        op = self.operands[0]
        buf.append(f"freeze {op.type} {op.get_reference()}{self._stringify_metadata(True)}\n")


@dataclass
class _Slot:
    """A mutable local: its stack slot (promoted to registers by LLVM) and register type."""

    ptr: ir.Value
    type: ir.Type


class _FunctionBuilder:
    """Emits the statements of one kernel (or outlined task) into an LLVM function."""

    def __init__(self, r: LLVMRenderer, fn: ir.Function, env: dict):
        self.r, self.fn, self.env = r, fn, env
        self.entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)

    # -- expressions -------------------------------------------------------------------
    def expr(self, e: Expr) -> ir.Value:
        """`e`'s value, by the entry of its op in `expressions`."""
        return self.expressions[e.op](self, e)

    def _var(self, e: Expr) -> ir.Value:
        v = self.env[e.field("name")]
        return self.b.load(v.ptr, typ=v.type) if isinstance(v, _Slot) else v

    def _vbroadcast(self, e: Expr) -> ir.Value:
        """A group of 4 bytes repeated: one 32-bit load, splat."""
        word = self.b.load(self.pointer(e.field("buf"), e.field("index")), typ=I32, align=1)
        return self.b.bitcast(self.splat(word, e.lanes // e.field("group")),
                              mem_type(e.dtype, e.lanes))

    def _nibble(self, e: Expr) -> ir.Value:
        """v << 4 or v & 0xF0, byte by byte."""
        v, k = self.expr(e.field("x")), e.field("k").value
        f = self.b.shl if k == 0 else self.b.and_
        return f(v, self.splat(ir.Constant(I8, 4 if k == 0 else -16), e.lanes))

    def _gpu_only(self, e: Expr) -> ir.Value:
        raise ValueError(f"LLVM renderer: {e.op} exchanges values between a GPU warp's "
                         "threads and has no CPU form (build for --target cuda)")

    def _fma(self, e: Expr) -> ir.Value:
        args = [self.expr(e.field(n)) for n in ("a", "b", "c")]
        return self.b.call(self.r.intrinsic("fma", args[0].type), args)

    def _logic(self, e: Expr) -> ir.Value:
        a, b = e.field("a"), e.field("b")
        if e.lanes == 1 and _faults(b):
            return self.lazy_logic(e.op, a, b)
        x, y = self.expr(a), self.expr(b)
        return self.b.and_(x, y) if e.op is Op.AND else self.b.or_(x, y)

    def _binary(self, e: Expr) -> ir.Value:
        a, b = e.field("a"), e.field("b")
        return self.binary(e.op, a.dtype, self.expr(a), self.expr(b), e.lanes)

    def _neg(self, e: Expr) -> ir.Value:
        x = self.expr(e.field("x"))
        return self.b.fneg(x) if e.dtype.is_float else self.b.sub(ir.Constant(x.type, None), x)

    def _not(self, e: Expr) -> ir.Value:
        x = self.expr(e.field("x"))
        if e.dtype is DType.BOOL:
            return self.b.not_(x)
        return self.convert(self.is_zero(x, e.dtype), DType.BOOL, e.dtype, e.lanes)

    def _bitcast(self, e: Expr) -> ir.Value:
        """Through the bytes in memory, as C's union does (bool: a byte)."""
        b, src = self.b, e.field("x")
        x = self.expr(src)
        if src.dtype is DType.BOOL:
            x = b.zext(x, mem_type(DType.BOOL, e.lanes))
        x = b.bitcast(x, mem_type(e.dtype, e.lanes))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, None)) \
            if e.dtype is DType.BOOL else x

    # op -> the function emitting it, called with the builder and the expression
    expressions: dict[Op, Callable[[_FunctionBuilder, Expr], ir.Value]] = {
        Op.CONST: lambda fb, e: _constant(e.field("value"), e.dtype),
        Op.VAR: _var,
        Op.LOAD: lambda fb, e: fb.load(e.field("buf"), e.field("index"), 1),
        Op.VLOAD: lambda fb, e: fb.load(e.field("buf"), e.field("index"), e.lanes,
                                        e.field("count")),
        Op.BROADCAST: lambda fb, e: fb.splat(fb.expr(e.field("x")), e.lanes),
        # lane by lane (LLVM may make it one gather instruction)
        Op.VGATHER: lambda fb, e: fb.gather(e),
        Op.VBROADCAST: _vbroadcast,
        Op.DOT4: lambda fb, e: fb.dot4(e),
        Op.DOT4P: lambda fb, e: fb.dot4(e),
        Op.PAIRDOT: lambda fb, e: fb.pairs(e),
        Op.PAIRFOLD: lambda fb, e: fb.pairs(e),
        # the product, exact in 32 bits; LLVM picks the instruction
        Op.MUL16: lambda fb, e: fb.b.mul(fb.expr(e.field("a")), fb.expr(e.field("b"))),
        Op.NIBBLE: _nibble,
        # a ^ 0x80, byte by byte (LLVM's i8 has no sign)
        Op.RECENTRE: lambda fb, e: fb.b.xor(fb.expr(e.field("x")),
                                            fb.splat(ir.Constant(I8, -128), e.lanes)),
        Op.MULSHIFT: lambda fb, e: fb.mulshift(e),
        Op.FMA: _fma,
        Op.HREDUCE: lambda fb, e: fb.hreduce(e.field("fold"), e.field("x")),
        Op.SHFL_XOR: _gpu_only,
        Op.AND: _logic, Op.OR: _logic,
        **dict.fromkeys((op for op in BINARY if op not in (Op.AND, Op.OR)), _binary),
        Op.NEG: _neg,
        Op.NOT: _not,
        Op.SELECT: lambda fb, e: fb.select(e),
        Op.CAST: lambda fb, e: fb.convert(fb.expr(e.field("x")), e.field("x").dtype, e.dtype,
                                          e.lanes),
        Op.BITCAST: _bitcast,
        Op.CALL: lambda fb, e: fb.math(e.field("fn"), e, e.field("operands")),
    }

    def mulshift(self, e: Expr) -> ir.Value:
        """round(v * m / 2^s) half up from the 64-bit product (kernel IR mulshift); LLVM
        picks the instructions (vpmuldq, smull)."""
        b, n = self.b, e.lanes
        i64 = ir.IntType(64)
        wide = i64 if n == 1 else ir.VectorType(i64, n)
        v, m = (b.sext(self.expr(e.field(n)), wide) for n in ("x", "m"))
        s = b.sext(self.expr(e.field("s")), i64)
        r = b.shl(ir.Constant(i64, 1), b.sub(s, ir.Constant(i64, 1)))
        p = b.ashr(b.add(b.mul(v, m), self.splat(r, n)), self.splat(s, n))
        return b.trunc(p, I32 if n == 1 else ir.VectorType(I32, n))

    def dot4(self, e: Expr) -> ir.Value:
        """acc[i] + sum_k<4 a[4i+k] * b[4i+k], exactly: uint8 x int8 on AVX-512 is VNNI's
        vpdpbusd; elsewhere, and for int8 x int8, the bytes are widened to 32 bits and the
        products summed by lane group. (int8 x int8 as vpdpbusd(a ^ 0x80) - vpdpbusd(0x80),
        the C renderer's form, sent LLVM 22's x86 back end into a loop that did not end
        within minutes on a QLinearMatMul.) dot4p on AVX2 is the C renderer's: of uint8 a
        vpmaddubsw + vpmaddwd by ones (edgec_avx2.h edgec_dot4p_u8i8), of int8 a (weights
        within +-127) the sign trick (edgec_dot4s_i8i8)."""
        b, acc, x, y = self.b, e.field("acc"), e.field("a"), e.field("b")
        n = e.lanes
        if self.r.target.isa == "avx512" and n == 16 and x.dtype is DType.U8:
            vt, bt = ir.VectorType(I32, 16), ir.VectorType(I8, 64)
            fn = self.r.declare("llvm.x86.avx512.vpdpbusd.512", vt, [vt, bt, bt])
            return b.call(fn, [self.splat(self.expr(acc), 16), self.expr(x), self.expr(y)])
        if self.r.target.isa == "avx2" and n == 8 and e.op is Op.DOT4P:
            bt, ht, vt = ir.VectorType(I8, 32), ir.VectorType(ir.IntType(16), 16), \
                ir.VectorType(I32, 8)
            xv, yv = self.expr(x), self.expr(y)
            if x.dtype is DType.I8:  # the sign trick: |x| times y with x's signs
                yv = b.call(self.r.declare("llvm.x86.avx2.psign.b", bt, [bt, bt]), [yv, xv])
                xv = b.call(self.r.declare("llvm.abs.v32i8", bt, [bt, ir.IntType(1)]),
                            [xv, ir.Constant(ir.IntType(1), 0)])
            pairs = b.call(self.r.declare("llvm.x86.avx2.pmadd.ub.sw", ht, [bt, bt]),
                           [xv, yv])
            quads = b.call(self.r.declare("llvm.x86.avx2.pmadd.wd", vt, [ht, ht]),
                           [pairs, ir.Constant(ht, [1] * 16)])
            return b.add(self.splat(self.expr(acc), 8), quads)
        wide = ir.VectorType(I32, 4 * n)
        xs = (b.zext if x.dtype is DType.U8 else b.sext)(self.expr(x), wide)
        prod = b.mul(xs, b.sext(self.expr(y), wide))
        total = None
        for k in range(4):
            part = b.shuffle_vector(prod, prod, ir.Constant(ir.VectorType(I32, n),
                                                            [4 * i + k for i in range(n)]))
            total = part if total is None else b.add(total, part)
        if n == 1:
            total = b.extract_element(total, ir.Constant(I32, 0))
        return b.add(self.splat(self.expr(acc), n), total)

    def pairs(self, e: Expr) -> ir.Value:
        """kernel IR pairdot (the bytes of one half widened to 32 bits, their products summed
        over the k-groups and by lane pairs: the same value as NEON's int16 sums, which the
        weights' range keeps exact) and pairfold (the lane pairs of both halves added)."""
        b, n = self.b, e.lanes
        if e.op is Op.PAIRFOLD:
            both = b.shuffle_vector(self.expr(e.field("lo")), self.expr(e.field("hi")),
                                    ir.Constant(ir.VectorType(I32, 2 * n), list(range(2 * n))))
            even, odd = ([2 * i + k for i in range(n)] for k in (0, 1))
            return b.add(*(b.shuffle_vector(both, both, ir.Constant(ir.VectorType(I32, n), idx))
                           for idx in (even, odd)))
        acc, half, ab = e.field("acc"), e.field("half"), e.field("pairs")
        wide = ir.VectorType(I32, 2 * n)
        sel = ir.Constant(wide, [2 * n * half.value + j for j in range(2 * n)])
        total = None
        for x, y in zip(ab[::2], ab[1::2]):
            xs, ys = (b.shuffle_vector(self.expr(v), self.expr(v), sel) for v in (x, y))
            prod = b.mul(b.sext(xs, wide), b.sext(ys, wide))
            total = prod if total is None else b.add(total, prod)
        even, odd = ([2 * i + k for i in range(n)] for k in (0, 1))
        folded = b.add(*(b.shuffle_vector(total, total, ir.Constant(ir.VectorType(I32, n), idx))
                         for idx in (even, odd)))
        return b.add(self.expr(acc), folded)

    def pointer(self, buf: Buffer, index: Expr) -> ir.Value:
        base = self.env[buf.name]
        if index.is_const and index.value == 0:
            return base
        return self.b.gep(base, [self.expr(index)], inbounds=True,
                          source_etype=mem_type(buf.dtype))

    def load(self, buf: Buffer, index: Expr, lanes: int, count: Expr | None = None):
        p, t = self.pointer(buf, index), mem_type(buf.dtype, lanes)
        if count is None:
            v = self.b.load(p, typ=t, align=buf.dtype.itemsize)
        else:
            fn = self.r.declare(f"llvm.masked.load.{_mangle(t)}.p0", t, [PTR, I32, _mask(lanes), t])
            v = self.b.call(fn, [p, ir.Constant(I32, buf.dtype.itemsize), self.mask(count, lanes),
                                 ir.Constant(t, None)])
        return self.b.icmp_unsigned("!=", v, ir.Constant(t, None)) \
            if buf.dtype is DType.BOOL else v

    def gather(self, e: Expr) -> ir.Value:
        buf, base, idx = e.field("buf"), e.field("base"), e.field("idx")
        p, t = self.pointer(buf, base), mem_type(buf.dtype)
        iv = self.expr(idx)
        v = ir.Constant(mem_type(buf.dtype, e.lanes), ir.Undefined)
        for lane in range(e.lanes):
            i = self.b.sext(self.b.extract_element(iv, ir.Constant(I32, lane)), I64)
            x = self.b.load(self.b.gep(p, [i], inbounds=True, source_etype=t), typ=t,
                            align=buf.dtype.itemsize)
            v = self.b.insert_element(v, x, ir.Constant(I32, lane))
        return v

    def mask(self, count: Expr, lanes: int) -> ir.Value:
        """Lanes 0 .. count-1 on."""
        iota = ir.Constant(ir.VectorType(I64, lanes), list(range(lanes)))
        return self.b.icmp_signed("<", iota, self.splat(self.expr(count), lanes))

    def splat(self, x: ir.Value, lanes: int) -> ir.Value:
        if lanes == 1 or isinstance(x.type, ir.VectorType):
            return x
        vt = ir.VectorType(x.type, lanes)
        if isinstance(x, ir.Constant):
            return ir.Constant(vt, [x] * lanes)
        v = self.b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(I32, 0))
        return self.b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))

    def binary(self, op: Op, dtype: DType, x, y, lanes: int) -> ir.Value:
        b = self.b
        if dtype.is_float:
            if op in CMP:  # ordered, as C's comparisons; != is true on NaN
                return b.fcmp_unordered("!=", x, y) if op is Op.NE else \
                    b.fcmp_ordered(CMP[op], x, y)
            if op in (Op.MAX, Op.MIN):
                if lanes == 1:  # fmaxf / fminf
                    return b.call(self.r.intrinsic("maxnum" if op is Op.MAX else "minnum",
                                                   x.type), [x, y])
                # maxps / minps: the second operand unless the first compares greater (less)
                return b.select(b.fcmp_ordered(">" if op is Op.MAX else "<", x, y), x, y)
            return FLOAT_BINARY[op](b, x, y)
        signed = dtype not in UNSIGNED
        if op in CMP:
            return (b.icmp_signed if signed else b.icmp_unsigned)(CMP[op], x, y)
        if op in (Op.MAX, Op.MIN):
            cmp = b.icmp_signed if signed else b.icmp_unsigned
            return b.select(cmp(">" if op is Op.MAX else "<", x, y), x, y)
        if op in (Op.SHL, Op.SHR) and y.type != x.type:  # a count of another (int) type
            y = b.trunc(y, x.type) if _width(y.type) > _width(x.type) else b.zext(y, x.type)
        if op in INT_SIGNED:
            inst = INT_SIGNED[op][0 if signed else 1]
            if BITS[dtype] < 32 and op is not Op.SHR:
                # C computes narrow integers in int: no overflow of INT8_MIN / -1
                wide = ir.VectorType(I32, lanes) if lanes > 1 else I32
                ext = b.sext if signed else b.zext
                return b.trunc(inst(b, ext(x, wide), ext(y, wide)), x.type)
            return inst(b, x, y)
        return INT_BINARY[op](b, x, y)

    def is_zero(self, x: ir.Value, dtype: DType) -> ir.Value:
        zero = ir.Constant(x.type, None)
        return self.b.fcmp_ordered("==", x, zero) if dtype.is_float else \
            self.b.icmp_unsigned("==", x, zero)

    def convert(self, x: ir.Value, src: DType, dst: DType, lanes: int) -> ir.Value:
        """C's conversion of `x` from `src` to `dst`."""
        b, t = self.b, ll_type(dst, lanes)
        if src == dst:
            return x
        if dst is DType.BOOL:  # nonzero is true (NaN too)
            zero = ir.Constant(x.type, None)
            return b.fcmp_unordered("!=", x, zero) if src.is_float else \
                b.icmp_unsigned("!=", x, zero)
        if src.is_float and dst.is_float:
            return b.fpext(x, t) if dst.itemsize > src.itemsize else b.fptrunc(x, t)
        if src.is_float:
            v = b.fptoui(x, t) if dst in UNSIGNED else b.fptosi(x, t)
            frozen = _Freeze(b.block, t, "freeze", [v])
            b._insert(frozen)
            return frozen
        if dst.is_float:
            return b.uitofp(x, t) if src in UNSIGNED else b.sitofp(x, t)
        if BITS[dst] < BITS[src]:
            return b.trunc(x, t)
        if BITS[dst] > BITS[src]:
            return b.zext(x, t) if src in UNSIGNED else b.sext(x, t)
        return x

    def select(self, e: Expr) -> ir.Value:
        c, x, y = e.field("cond"), e.field("a"), e.field("b")
        if e.lanes > 1 or not (_faults(x) or _faults(y)):
            return self.b.select(self.expr(c), self.expr(x), self.expr(y))
        # C's ?: evaluates one side only (a guarded load of a tail, a division by a nonzero)
        cond = self.expr(c)
        then, other, done = (self.fn.append_basic_block(n) for n in ("sel.t", "sel.f", "sel"))
        self.b.cbranch(cond, then, other)
        incoming = []
        for block, v in ((then, x), (other, y)):
            self.b.position_at_end(block)
            val = self.expr(v)
            incoming.append((val, self.b.block))
            self.b.branch(done)
        self.b.position_at_end(done)
        phi = self.b.phi(incoming[0][0].type)
        for val, block in incoming:
            phi.add_incoming(val, block)
        return phi

    def lazy_logic(self, op: Op, x: Expr, y: Expr) -> ir.Value:
        """x && y, x || y: y is evaluated only when x does not decide."""
        first = self.expr(x)
        start = self.b.block
        rhs, done = self.fn.append_basic_block("rhs"), self.fn.append_basic_block("logic")
        if op is Op.AND:
            self.b.cbranch(first, rhs, done)
        else:
            self.b.cbranch(first, done, rhs)
        self.b.position_at_end(rhs)
        second = self.expr(y)
        end = self.b.block
        self.b.branch(done)
        self.b.position_at_end(done)
        phi = self.b.phi(I1)
        phi.add_incoming(ir.Constant(I1, op is Op.OR), start)
        phi.add_incoming(second, end)
        return phi

    def hreduce(self, op: Op, v: Expr) -> ir.Value:
        x = self.expr(v)
        if not v.dtype.is_float:  # exact in any order
            name = {Op.ADD: "add", Op.MAX: "smax", Op.MIN: "smin"}[op]
            if v.dtype in UNSIGNED and op is not Op.ADD:
                name = "u" + name[1:]
            fn = self.r.declare(f"llvm.vector.reduce.{name}.{_mangle(x.type)}", x.type.element,
                                [x.type])
            return self.b.call(fn, [x])
        # halves folded as the C helpers do: lane i with lane i + n/2, until one is left
        n = v.lanes
        while n > 1:
            n //= 2
            lo = self.b.shuffle_vector(x, x, ir.Constant(ir.VectorType(I32, n), list(range(n))))
            hi = self.b.shuffle_vector(x, x, ir.Constant(ir.VectorType(I32, n),
                                                         list(range(n, 2 * n))))
            x = self.b.fadd(lo, hi) if op is Op.ADD else self.b.select(
                self.b.fcmp_ordered(">" if op is Op.MAX else "<", lo, hi), lo, hi)
        return self.b.extract_element(x, ir.Constant(I32, 0))

    def math(self, fn: str, e: Expr, args) -> ir.Value:
        b, dtype, lanes = self.b, args[0].dtype, e.lanes
        if fn == "sign":  # ((x > 0) - (x < 0)) in int, converted to the result type
            x = self.expr(args[0])
            zero = ir.Constant(x.type, None)
            cmp = (lambda o: b.fcmp_ordered(o, x, zero)) if dtype.is_float else \
                (lambda o: (b.icmp_unsigned if dtype in UNSIGNED else b.icmp_signed)(o, x, zero))
            wide = ir.VectorType(I32, lanes) if lanes > 1 else I32
            s = b.sub(b.zext(cmp(">"), wide), b.zext(cmp("<"), wide))
            return self.convert(s, DType.I32, e.dtype, lanes)
        if not dtype.is_float:
            x = self.expr(args[0])
            if fn == "abs":
                neg = b.sub(ir.Constant(x.type, None), x)
                return b.select(b.icmp_signed("<", x, ir.Constant(x.type, None)), neg, x) \
                    if dtype not in UNSIGNED else x
            if fn in ("floor", "ceil", "round"):
                return x
            if fn in ("isnan", "isinf"):
                return ir.Constant(ll_type(DType.BOOL, lanes), None)
            # C converts the integer argument of a float function to float
            xs = [self.convert(self.expr(a), a.dtype, DType.F32, lanes) for a in args]
            return self.convert(self.float_math(fn, DType.F32, xs, lanes), DType.F32, e.dtype,
                                lanes)
        xs = [self.expr(a) for a in args]
        if dtype is DType.F16:  # C calls the float function on the promoted half
            xs = [b.fpext(x, ll_type(DType.F32, lanes)) for x in xs]
            y = self.float_math(fn, DType.F32, xs, lanes)
            return y if e.dtype is DType.BOOL else b.fptrunc(y, ll_type(DType.F16, lanes))
        return self.float_math(fn, dtype, xs, lanes)

    def float_math(self, fn: str, dtype: DType, xs: list, lanes: int) -> ir.Value:
        b = self.b
        if fn == "isnan":
            return b.fcmp_unordered("uno", xs[0], xs[0])
        if fn == "isinf":
            mag = b.call(self.r.intrinsic("fabs", xs[0].type), xs)
            return b.fcmp_ordered("==", mag, self.splat(_constant(float("inf"), dtype), lanes))
        if fn == "fmod":
            return b.frem(xs[0], xs[1])
        if fn in mathlib.FUNCTIONS and dtype is DType.F32:
            return b.call(self.r.math_function(fn, xs[0].type), xs)
        if fn in INTRINSICS:
            return b.call(self.r.intrinsic(INTRINSICS[fn], xs[0].type), xs)
        if fn not in LIBM:
            raise ValueError(f"LLVM renderer: no math function {fn}")
        name = fn + ("f" if dtype is DType.F32 else "")
        t = ll_type(dtype)
        libm = self.r.declare(name, t, [t] * len(xs))
        if lanes == 1:
            return b.call(libm, xs)
        out = ir.Constant(ll_type(dtype, lanes), ir.Undefined)
        for i in range(lanes):  # libm has no vector forms: lane by lane
            lane = ir.Constant(I32, i)
            y = b.call(libm, [b.extract_element(x, lane) for x in xs])
            out = b.insert_element(out, y, lane)
        return out

    # -- statements --------------------------------------------------------------------
    def slot(self, name: str, t: ir.Type) -> _Slot:
        """A stack slot in the entry block (so that LLVM promotes it to a register)."""
        here = self.b.block
        self.b.position_at_start(self.entry)
        ptr = self.b.alloca(t, name=name)
        ptr.type = PTR  # opaque, as LLVM's own pointers are
        self.b.position_at_end(here)
        return _Slot(ptr, t)

    def stmts(self, body: list) -> None:
        for s in body:
            if isinstance(s, Loop):
                self.loop(s.var, s.extent, s.body, s.kind)
            elif isinstance(s, Local):
                slot = self.slot(s.name, ll_type(s.dtype, s.lanes))
                self.env[s.name] = slot
                self.b.store(self.expr(s.init), slot.ptr)
            elif isinstance(s, Assign):
                self.b.store(self.expr(s.value), self.env[s.name].ptr)
            elif isinstance(s, Store):
                self.store(s)
            elif isinstance(s, Prefetch):  # read, keep in every cache level, data cache
                fn = self.r.declare("llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
                self.b.call(fn, [self.pointer(s.buf, s.index), ir.Constant(I32, 0),
                                 ir.Constant(I32, 3), ir.Constant(I32, 1)])
            elif isinstance(s, Call):
                args = [self.pointer(a.buf, a.offset) if isinstance(a, Ptr) else self.expr(a)
                        for a in s.args]
                self.b.call(self.r.function(s.fn), args)
            elif isinstance(s, If):
                self.if_(s)
            elif isinstance(s, _ParallelFor):
                self.parallel_for(s)
            elif isinstance(s, Alloc):  # an array on the stack, in the entry block
                t = ir.ArrayType(mem_type(s.buf.dtype), s.buf.numel)
                slot = self.slot(s.buf.name, t)
                slot.ptr.align = 64  # a cache line, as the C renderer's EDGEC_ALIGNED
                self.env[s.buf.name] = slot.ptr
            elif isinstance(s, Mma | AtomicAdd):
                raise ValueError("LLVM renderer: an mma or atomic add is a GPU's: render it "
                                 "for --target cuda")
            elif isinstance(s, Push | Pop):
                raise ValueError("LLVM renderer: streams are not rendered for CPUs by LLVM; "
                                 "use the C backend")
            else:
                raise ValueError(f"LLVM renderer: unknown statement {type(s).__name__}")

    def store(self, s: Store) -> None:
        b, lanes = self.b, s.value.lanes
        p, v = self.pointer(s.buf, s.index), self.expr(s.value)
        if s.buf.dtype is DType.BOOL:
            v = b.zext(v, mem_type(DType.BOOL, lanes))
        if s.count is None or lanes == 1:
            b.store(v, p, align=s.buf.dtype.itemsize)
            return
        fn = self.r.declare(f"llvm.masked.store.{_mangle(v.type)}.p0", VOID,
                            [v.type, PTR, I32, _mask(lanes)])
        b.call(fn, [v, p, ir.Constant(I32, s.buf.dtype.itemsize), self.mask(s.count, lanes)])

    def loop(self, var: str, extent: Expr | ir.Value, body: list, kind: LoopKind,
             start: ir.Value | None = None) -> None:
        """for var in [start (0), extent): body; `extent` is kernel IR or an LLVM value."""
        if kind is LoopKind.UNROLL and extent.is_const and extent.value <= MAX_UNROLL:
            for i in range(extent.value):  # unrolled here, as gcc does under its pragma
                self.env[var] = ir.Constant(I64, i)
                self.stmts(body)
            return
        b = self.b
        end = self.expr(extent) if isinstance(extent, Expr) else extent
        pre = b.block
        head, inner, done = (self.fn.append_basic_block(f"{var}.{n}")
                             for n in ("head", "body", "end"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name=var)
        i.add_incoming(start if start is not None else ir.Constant(I64, 0), pre)
        b.cbranch(b.icmp_signed("<", i, end), inner, done)
        b.position_at_end(inner)
        self.env[var] = i
        self.stmts(body)
        i.add_incoming(b.add(i, ir.Constant(I64, 1), flags=["nsw"]), b.block)
        b.branch(head)
        b.position_at_end(done)

    def if_(self, s: If) -> None:
        b = self.b
        cond = self.expr(s.cond)
        then, done = self.fn.append_basic_block("then"), self.fn.append_basic_block("endif")
        other = self.fn.append_basic_block("else") if s.orelse else done
        b.cbranch(cond, then, other)
        b.position_at_end(then)
        self.stmts(s.then)
        b.branch(done)
        if s.orelse:
            b.position_at_end(other)
            self.stmts(s.orelse)
            b.branch(done)
        b.position_at_end(done)

    def parallel_for(self, s: _ParallelFor) -> None:
        """Pack the kernel's parameters into the context and run the task on the pool."""
        b = self.b
        ctx = self.slot("ctx", s.ctx_type)
        for i, arg in enumerate(self.fn.args):
            b.store(arg, _field(b, ctx.ptr, s.ctx_type, i))
        b.call(self.r.pool, [s.task, ctx.ptr, self.expr(s.extent)])


@dataclass
class _ParallelFor:
    """A parallel loop replaced by its outlined task (the statement the kernel keeps)."""

    task: ir.Function
    ctx_type: ir.Type
    extent: Expr


def _field(b: ir.IRBuilder, base: ir.Value, struct: ir.Type, i: int) -> ir.Value:
    """The address of field `i` of the struct at `base` (an opaque pointer)."""
    p = b.gep(base, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True,
              source_etype=struct)
    p.type = PTR  # llvmlite types the result as a pointer to the struct
    return p


def _width(t: ir.Type) -> int:
    return (t.element if isinstance(t, ir.VectorType) else t).width


def _mask(lanes: int) -> ir.Type:
    return ir.VectorType(I1, lanes)


def _param_type(p: Buffer | Scalar) -> ir.Type:
    return PTR if isinstance(p, Buffer) else ll_type(p.dtype)
