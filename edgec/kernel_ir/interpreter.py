"""A numpy interpreter of the kernel IR: runs a `Kernel` on arrays, with no C compiler.

It gives every kernel the meaning its renderers must give it, so kernels can be tested on
small shapes against the ops' numpy references (`run_graph` executes a lowered graph kernel
by kernel) and a renderer's output against the interpreter's. The semantics are C's, as the
renderers print them:

- integer arithmetic wraps in the type's width; `div` and `mod` truncate toward zero (C's `/`
  and `%`); shifts are C's; comparisons give bool; `and`/`or`/`not` are logical;
- float `max`/`min` are C's fmaxf/fminf (a NaN operand loses to a number); float `mod` is fmod;
  float32 `exp` and `tanh` are mathlib's definitions (the renderers' own, to the bit), the
  other math functions numpy's, correctly rounded;
- a float converted to an integer type must fit it (C leaves the rest undefined): the
  interpreter raises `KernelError` where C would be undefined, so a builder that relies on it
  is caught here; `kernel_ir.convert` is the saturating conversion for values that may not fit;
- `select` of scalars evaluates only the chosen operand (C's `?:`); of vectors, both;
- `fma` rounds once: float32 as fma32 (the float64 sum, and where rounding it again could
  differ, the exact sum), other float types in float64;
- every load, store and prefetch is bounds-checked against the buffer it names;
- the threads of a block whose body has barriers or warp exchanges run as Python threads that
  wait for each other at every `Barrier` (so the interpreter checks
  `kernel_passes.split_barriers`, which the CPU renderers use, instead of sharing its
  assumptions) and for the other threads of their warp (32 consecutive threads, x fastest) at
  every `shfl_xor` and tensor-core `Mma` (kernel_ir/mma.py); arrays `Alloc`ed before the
  block are shared by its threads, those a thread allocates are its own; every other loop
  binding runs as a plain loop;
- a `Stream` is a queue of at most `depth` values; pushing into a full one or popping an
  empty one is an error (kernels run one after the other here, as on a CPU).

Values are numpy scalars (INDEX values are Python ints) and, for vectors, 1-D arrays of
`lanes` elements. Each expression is compiled once into a Python closure over an environment
of locals (`COMPILERS`, a table from each `Op` to its closure builder, as the renderers are
tables from op to text).
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable

import numpy as np

from ..errors import KernelError
from ..ir.dtypes import DType
from . import mathlib
from .fma import fma32
from .kernel import (
    BINARY,
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
    Store,
    Stream,
    pairs_fit16,
)
from .mma import compile_mma
from .passes import has_barrier, has_warp_op
from .threads import threaded_block, wait_at_barrier

Env = dict
# what a race check (kernel_ir/races.py) records each load and store with: None except while
# one runs, called with (env, buffer name, array, first element, elements, whether it writes)
TRACE = None

Eval = Callable[[Env], object]


def _np(dtype: DType) -> np.dtype:
    return np.dtype(np.int64) if dtype is INDEX else dtype.np


def _value(x, dtype: DType, lanes: int = 1):
    """x as a value of `dtype`: a Python int for INDEX scalars, else numpy."""
    if lanes > 1:
        return np.asarray(x).astype(_np(dtype))
    if dtype is INDEX:
        return int(x)
    return _np(dtype).type(x)


# -- expressions ----------------------------------------------------------------------------

def _c_div(a, b, dtype: DType):
    if dtype.is_float:
        return a / b
    if dtype is INDEX:
        if b == 0:
            raise KernelError("an index expression divides by 0")
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    b_ = np.where(b == 0, 1, b)  # C leaves x / 0 undefined; builders guard it with a select
    q = np.abs(np.asarray(a, np.int64)) // np.abs(np.asarray(b_, np.int64))
    return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)


def _c_mod(a, b, dtype: DType):
    if dtype.is_float:
        return np.fmod(a, b)
    if dtype is INDEX:
        if b == 0:
            raise KernelError("an index expression takes a remainder by 0")
        return a - b * _c_div(a, b, INDEX)
    b_ = np.where(b == 0, 1, b)
    return np.asarray(a, np.int64) - np.asarray(b_, np.int64) * _c_div(a, b_, dtype)


def _fmax(a, b):
    return np.fmax(a, b)


def _fmin(a, b):
    return np.fmin(a, b)


_ARITH = {Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b,
          Op.MUL: lambda a, b: a * b, Op.LT: lambda a, b: a < b, Op.LE: lambda a, b: a <= b,
          Op.GT: lambda a, b: a > b, Op.GE: lambda a, b: a >= b, Op.EQ: lambda a, b: a == b,
          Op.NE: lambda a, b: a != b, Op.BITAND: lambda a, b: a & b,
          Op.BITOR: lambda a, b: a | b, Op.BITXOR: lambda a, b: a ^ b}

_MATH: dict[str, Callable] = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "isnan": np.isnan, "isinf": np.isinf, "sign": np.sign, "log1p": np.log1p,
    "expm1": np.expm1, "pow": np.power, "fmod": np.fmod,
    "erf": np.frompyfunc(math.erf, 1, 1),
}


def _binary(e: Expr, a: Eval, b: Eval) -> Eval:
    op, dtype = e.op, e.field("a").dtype
    out = _np(e.dtype)
    if op in (Op.AND, Op.OR):
        if op is Op.AND:
            return lambda env: _value(bool(a(env)) and bool(b(env)), DType.BOOL) if e.lanes == 1 \
                else np.logical_and(a(env), b(env))
        return lambda env: _value(bool(a(env)) or bool(b(env)), DType.BOOL) if e.lanes == 1 \
            else np.logical_or(a(env), b(env))
    if op is Op.DIV:
        return lambda env: _value(_c_div(a(env), b(env), dtype), e.dtype, e.lanes)
    if op is Op.MOD:
        return lambda env: _value(_c_mod(a(env), b(env), dtype), e.dtype, e.lanes)
    if op in (Op.MAX, Op.MIN):
        if dtype.is_float:
            fn = _fmax if op is Op.MAX else _fmin
            return lambda env: fn(a(env), b(env))
        cmp = np.greater if op is Op.MAX else np.less

        def pick(env):
            x, y = a(env), b(env)
            return _value(np.where(cmp(x, y), x, y), e.dtype, e.lanes)

        return pick
    if op in (Op.SHL, Op.SHR):
        bits = 8 * out.itemsize

        def shift(env):
            x, n = a(env), b(env)
            if np.any(np.asarray(n) < 0) or np.any(np.asarray(n) >= bits):
                raise KernelError(f"a shift by {n} of a {bits}-bit value is undefined in C")
            if dtype is INDEX:
                return x << n if op is Op.SHL else x >> n
            xs = np.asarray(x, out)
            r = np.left_shift(xs, np.asarray(n, out)) if op is Op.SHL else \
                np.right_shift(xs, np.asarray(n, out))
            return _value(r, e.dtype, e.lanes)

        return shift
    fn = _ARITH[op]
    if dtype is INDEX:
        return lambda env: fn(a(env), b(env))
    return lambda env: _value(fn(a(env), b(env)), e.dtype, e.lanes)


def _cast(e: Expr, x: Eval) -> Eval:
    src, dst = e.field("x").dtype, e.dtype
    if src.is_float and not dst.is_float and dst is not DType.BOOL:
        info = np.iinfo(_np(dst))

        def to_int(env):
            v = np.asarray(x(env), np.float64)
            if np.any(np.isnan(v)) or np.any(np.trunc(v) < info.min) or \
                    np.any(np.trunc(v) > info.max):
                raise KernelError(f"a {src} value {v} converted to {dst} does not fit it "
                                  "(undefined in C; kernel_ir.convert saturates)")
            return _value(np.trunc(v).astype(_np(dst)), dst, e.lanes)

        return to_int
    return lambda env: _value(np.asarray(x(env)).astype(_np(dst)), dst, e.lanes)


@functools.cache
def _math_function(name: str, lanes: int) -> Callable:
    """mathlib's float32 `name` for `lanes`, as a function of the argument's value."""
    mf = mathlib.FUNCTIONS[name](lanes)
    body, result = _block(list(mf.body)), compile_expr(mf.result)

    def run(x):
        env = {"x": x}
        body(env)
        return result(env)

    return run


def _call(e: Expr, args: list[Eval]) -> Eval:
    fn_name, dtype = e.field("fn"), e.field("operands")[0].dtype
    if fn_name in mathlib.FUNCTIONS and dtype is DType.F32:  # the renderers' own, bit for bit
        fn = _math_function(fn_name, e.lanes)
        return lambda env: fn(args[0](env))
    if fn_name in ("max", "min"):
        fn = _fmax if fn_name == "max" else _fmin
    else:
        fn = _MATH[fn_name]

    def run(env):
        with np.errstate(all="ignore"):
            vals = [np.asarray(a(env)) for a in args]
            if not dtype.is_float:  # abs, sign, floor... of integers: exact in their type
                r = fn(*vals)
            else:
                r = fn(*[v.astype(np.float64) for v in vals])
        return _value(np.asarray(r).astype(np.float64) if fn_name == "erf" else r, e.dtype,
                      e.lanes)

    return run


def _select(e: Expr, c: Eval, a: Eval, b: Eval) -> Eval:
    if e.lanes == 1:
        return lambda env: a(env) if c(env) else b(env)
    return lambda env: _value(np.where(c(env), a(env), b(env)), e.dtype, e.lanes)


def _load(e: Expr, idx: Eval) -> Eval:
    buf: Buffer = e.field("buf")

    def load(env):
        arr, i = env["#bufs"][buf.name], idx(env)
        if not 0 <= i < arr.size:
            raise KernelError(f"load {buf.name}[{i}] outside its {arr.size} elements")
        if TRACE is not None:
            TRACE(env, buf.name, arr, i, 1, False)
        v = arr[i]
        return int(v) if e.dtype is INDEX else v

    return load


def _vload(e: Expr, idx: Eval, count: Eval | None) -> Eval:
    buf: Buffer = e.field("buf")
    lanes = e.lanes

    def vload(env):
        arr, i = env["#bufs"][buf.name], idx(env)
        n = lanes if count is None else max(0, min(lanes, count(env)))
        if i < 0 or i + n > arr.size:
            raise KernelError(f"vector load {buf.name}[{i}:{i + n}] outside its {arr.size} "
                              "elements")
        if TRACE is not None:
            TRACE(env, buf.name, arr, i, n, False)
        out = np.zeros(lanes, arr.dtype)
        out[:n] = arr[i:i + n]
        return out

    return vload


def _vgather(e: Expr, base: Eval, idx: Eval) -> Eval:
    buf: Buffer = e.field("buf")

    def vgather(env):
        arr = env["#bufs"][buf.name]
        at = base(env) + np.asarray(idx(env), np.int64)
        if at.min() < 0 or at.max() >= arr.size:
            raise KernelError(f"gather of {buf.name}[{at.min()}..{at.max()}] outside its "
                              f"{arr.size} elements")
        if TRACE is not None:
            for j in at:
                TRACE(env, buf.name, arr, int(j), 1, False)
        return arr[at]

    return vgather


def _vbroadcast(e: Expr, idx: Eval) -> Eval:
    buf: Buffer = e.field("buf")
    group = e.field("group")

    def vbroadcast(env):
        arr, i = env["#bufs"][buf.name], idx(env)
        if i < 0 or i + group > arr.size:
            raise KernelError(f"broadcast of {buf.name}[{i}:{i + group}] outside its "
                              f"{arr.size} elements")
        if TRACE is not None:
            TRACE(env, buf.name, arr, i, group, False)
        return np.tile(arr[i:i + group], e.lanes // group)

    return vbroadcast


def _dot4(e: Expr, acc: Eval, a: Eval, b: Eval) -> Eval:
    def dot4(env):
        bv = np.asarray(b(env), np.int64)
        if e.op is Op.DOT4P and e.field("a").dtype is DType.I8:
            if (bv == -128).any():
                raise KernelError("dot4 with pairs16 of int8 a: a weight of -128, which the "
                                  "sign trick cannot negate")
        elif e.op is Op.DOT4P and not pairs_fit16(bv.reshape(-1, 2)):
            raise KernelError("dot4 with pairs16: a pair of weights would saturate a 16-bit "
                              f"sum ({bv.reshape(-1, 2).tolist()})")
        prod = np.asarray(a(env), np.int64) * bv
        s = np.asarray(acc(env), np.int64) + prod.reshape(-1, 4).sum(axis=1)
        return _value(s.astype(np.int32) if e.lanes > 1 else s[0].astype(np.int32), DType.I32,
                      e.lanes)

    return dot4


def _pairdot(e: Expr, acc: Eval, *ab: Eval) -> Eval:
    half = e.field("half").value

    def pairdot(env):
        vs = [np.asarray(f(env), np.int64) for f in ab]
        bytes16 = sum(a * b for a, b in zip(vs[::2], vs[1::2]))
        if len(vs) == 4 and ((vs[1] == -128).any() or (vs[3] == -128).any()):
            raise KernelError("pairdot of two k-groups with a weight of -128: their byte "
                              "products could leave int16 (weights must lie in [-127, 127])")
        n = e.lanes
        s = np.asarray(acc(env), np.int64) + bytes16[2 * n * half:2 * n * (half + 1)] \
            .reshape(n, 2).sum(axis=1)
        return _value(s.astype(np.int32), DType.I32, n)

    return pairdot


def _pairfold(e: Expr, lo: Eval, hi: Eval) -> Eval:
    def pairfold(env):
        v = np.concatenate([np.asarray(lo(env), np.int64), np.asarray(hi(env), np.int64)])
        return _value(v.reshape(-1, 2).sum(axis=1).astype(np.int32), DType.I32, e.lanes)

    return pairfold


def _nibble(e: Expr, a: Eval) -> Eval:
    k = e.field("k").value

    def nibble(env):
        u = np.asarray(a(env), np.int8).view(np.uint8)
        r = (u << np.uint8(4)) if k == 0 else (u & np.uint8(0xF0))
        return _value(r.astype(np.uint8).view(np.int8), DType.I8, e.lanes)

    return nibble


def _recentre(e: Expr, a: Eval) -> Eval:
    def recentre(env):
        u = np.asarray(a(env), np.int16) - 128
        return _value(u.astype(np.int8), DType.I8, e.lanes)

    return recentre


def _mul16(e: Expr, a: Eval, b: Eval) -> Eval:
    def mul16(env):
        x, y = np.asarray(a(env), np.int64), np.asarray(b(env), np.int64)
        if (x < 0).any() or (x >= 2**15).any() or (y < -2**15).any() or (y >= 2**15).any():
            raise KernelError("mul16 of operands outside 16 bits (a in [0, 2^15), b in "
                              f"[-2^15, 2^15)): {x.min()}..{x.max()} and {y.min()}..{y.max()}")
        return _value((x * y).astype(np.int32), DType.I32, e.lanes)

    return mul16


def _mulshift(e: Expr, a: Eval, m: Eval, s: Eval) -> Eval:
    def mulshift(env):
        n = int(s(env))
        if not 33 <= n <= 62:
            raise KernelError(f"mulshift by 2^{n}; the shift must be in [33, 62]")
        p = np.asarray(a(env), np.int64) * np.asarray(m(env), np.int64) + (1 << (n - 1))
        return _value((p >> n).astype(np.int32), DType.I32, e.lanes)

    return mulshift


def _fma(e: Expr, a: Eval, b: Eval, c: Eval) -> Eval:
    def fma(env):
        x, y, z = (np.asarray(v(env), np.float64) for v in (a, b, c))
        if e.dtype is DType.F32:
            return _value(fma32(x, y, z), e.dtype, e.lanes)
        return _value(x * y + z, e.dtype, e.lanes)

    return fma


def _hreduce(e: Expr, v: Eval) -> Eval:
    fn = {Op.ADD: np.sum, Op.MAX: np.max, Op.MIN: np.min}[e.field("fold")]
    return lambda env: _value(fn(v(env)), e.dtype)


def _shfl_xor(e: Expr, x: Eval) -> Eval:
    mask = e.field("mask")

    def shfl(env):
        warp = env.get("#warp")
        if warp is None:
            raise KernelError("shfl_xor outside the threads of a block loop (a GPU warp op)")
        return warp.exchange(x(env), mask)

    return shfl


def _bitcast(e: Expr, x: Eval) -> Eval:
    src = _np(e.field("x").dtype)

    def bitcast(env):
        v = np.ascontiguousarray(np.asarray(x(env), src)).view(_np(e.dtype))
        return v if e.lanes > 1 else _value(v.reshape(())[()], e.dtype)

    return bitcast


def _compiled(*names: str) -> Callable[[Callable[..., Eval]], Callable[[Expr], Eval]]:
    """An entry of COMPILERS from a closure builder taking the expression and its fields
    `names` compiled (a `*` field's tuple compiled item by item; None stays None)."""
    def entry(build: Callable[..., Eval]) -> Callable[[Expr], Eval]:
        def compile_fields(e: Expr) -> Eval:
            args = []
            for n in names:
                v = e.field(n)
                args += [compile_expr(x) for x in v] if isinstance(v, tuple) else \
                    [None if v is None else compile_expr(v)]
            return build(e, *args)
        return compile_fields
    return entry


def _const(e: Expr) -> Eval:
    v = _value(e.field("value"), e.dtype)
    return lambda env: v


def _var(e: Expr) -> Eval:
    name = e.field("name")
    return lambda env: env[name]


def _broadcast(e: Expr, x: Eval) -> Eval:
    return lambda env: np.full(e.lanes, x(env), _np(e.dtype))


def _neg(e: Expr, x: Eval) -> Eval:
    if e.dtype is INDEX:
        return lambda env: -x(env)
    return lambda env: _value(np.negative(x(env)), e.dtype, e.lanes)


def _not(e: Expr, x: Eval) -> Eval:
    return lambda env: np.logical_not(x(env)) if e.lanes > 1 else _value(not x(env), DType.BOOL)


# op -> a function of the expression giving its closure
COMPILERS: dict[Op, Callable[[Expr], Eval]] = {
    Op.CONST: _const,
    Op.VAR: _var,
    Op.LOAD: _compiled("index")(_load),
    Op.VLOAD: _compiled("index", "count")(_vload),
    Op.VBROADCAST: _compiled("index")(_vbroadcast),
    Op.VGATHER: _compiled("base", "idx")(_vgather),
    Op.BROADCAST: _compiled("x")(_broadcast),
    Op.SELECT: _compiled("cond", "a", "b")(_select),
    Op.CAST: _compiled("x")(_cast),
    Op.BITCAST: _compiled("x")(_bitcast),
    Op.CALL: _compiled("operands")(lambda e, *args: _call(e, list(args))),
    Op.DOT4: _compiled("acc", "a", "b")(_dot4),
    Op.DOT4P: _compiled("acc", "a", "b")(_dot4),
    Op.PAIRDOT: _compiled("acc", "pairs")(_pairdot),
    Op.PAIRFOLD: _compiled("lo", "hi")(_pairfold),
    Op.MUL16: _compiled("a", "b")(_mul16),
    Op.NIBBLE: _compiled("x")(_nibble),
    Op.RECENTRE: _compiled("x")(_recentre),
    Op.MULSHIFT: _compiled("x", "m", "s")(_mulshift),
    Op.FMA: _compiled("a", "b", "c")(_fma),
    Op.HREDUCE: _compiled("x")(_hreduce),
    Op.SHFL_XOR: _compiled("x")(_shfl_xor),
    Op.NEG: _compiled("x")(_neg),
    Op.NOT: _compiled("x")(_not),
    **{op: _compiled("a", "b")(_binary) for op in BINARY},
}


def compile_expr(e: Expr) -> Eval:
    """A closure that evaluates `e` in an environment of locals (and '#bufs': the arrays)."""
    return COMPILERS[e.op](e)


# -- statements -----------------------------------------------------------------------------

Exec = Callable[[Env], None]


def _block(stmts: list) -> Exec:
    parts = [_stmt(s) for s in stmts]

    def block(env):
        for p in parts:
            p(env)

    return block


def _store(s: Store) -> Exec:
    idx, val = compile_expr(s.index), compile_expr(s.value)
    count = None if s.count is None else compile_expr(s.count)
    name, lanes = s.buf.name, s.value.lanes

    def store(env):
        arr, i, v = env["#bufs"][name], idx(env), val(env)
        n = lanes if count is None else max(0, min(lanes, count(env)))
        if i < 0 or i + n > arr.size:
            raise KernelError(f"store {name}[{i}:{i + n}] outside its {arr.size} elements")
        if TRACE is not None:
            TRACE(env, name, arr, i, n, True)
        if lanes == 1:
            arr[i] = v
        else:
            arr[i:i + n] = np.asarray(v)[:n]

    return store


def _atomic_add(s: AtomicAdd) -> Exec:
    idx, val, name = compile_expr(s.index), compile_expr(s.value), s.buf.name

    def atomic(env):
        arr, i, v = env["#bufs"][name], idx(env), val(env)
        if not 0 <= i < arr.size:
            raise KernelError(f"atomic add to {name}[{i}] outside its {arr.size} elements")
        if TRACE is not None:
            TRACE(env, name, arr, i, 1, True, atomic=True)
        arr[i] = _value(arr[i] + v, s.buf.dtype)  # (int32 wraps: numpy's errors are off)

    return atomic


def _stream_op(s: Push | Pop) -> Exec:
    name, depth = s.stream.name, s.stream.depth
    if isinstance(s, Push):
        value = compile_expr(s.value)

        def push(env):
            q = env["#streams"][name]
            if len(q) >= depth:
                raise KernelError(f"push into stream {name}, full with {depth} values")
            q.append(value(env))

        return push

    def pop(env):
        q = env["#streams"][name]
        if not q:
            raise KernelError(f"pop from stream {name}, which is empty")
        env[s.name] = q.popleft()

    return pop


def _stmt(s) -> Exec:
    if isinstance(s, Loop) and s.kind is LoopKind.BLOCK and \
            (has_barrier(s.body) or has_warp_op(s.body)):  # threads that meet
        return threaded_block(s, _block, compile_expr)
    if isinstance(s, Barrier):
        return wait_at_barrier
    if isinstance(s, Push | Pop):
        return _stream_op(s)
    if isinstance(s, Alloc):
        buf = s.buf
        fill = np.nan if buf.dtype.is_float else 0

        def alloc(env):  # uninitialised, as on every target: NaN shows a read before a write
            env["#bufs"][buf.name] = np.full(buf.numel, fill, _np(buf.dtype))

        return alloc
    if isinstance(s, Loop):
        extent, body, var = compile_expr(s.extent), _block(s.body), s.var

        def loop(env):
            for i in range(extent(env)):
                env[var] = i
                body(env)

        return loop
    if isinstance(s, Local | Assign):
        value, name = compile_expr(s.init if isinstance(s, Local) else s.value), s.name

        def assign(env):
            v = value(env)
            env[name] = v.copy() if isinstance(v, np.ndarray) else v

        return assign
    if isinstance(s, Store):
        return _store(s)
    if isinstance(s, Prefetch):
        idx, name = compile_expr(s.index), s.buf.name

        def prefetch(env):
            i, arr = idx(env), env["#bufs"][name]
            if not 0 <= i < arr.size:
                raise KernelError(f"prefetch of {name}[{i}] outside its {arr.size} elements")

        return prefetch
    if isinstance(s, If):
        cond, then, orelse = compile_expr(s.cond), _block(s.then), _block(s.orelse)
        return lambda env: then(env) if cond(env) else orelse(env)
    if isinstance(s, Call):
        return _call_stmt(s)
    if isinstance(s, Mma):
        return compile_mma(s, compile_expr, lambda: TRACE)
    if isinstance(s, AtomicAdd):
        return _atomic_add(s)
    raise ValueError(f"kernel interpreter: unknown statement {type(s).__name__}")


def _call_stmt(s: Call) -> Exec:
    callee = compiled(s.fn)
    args = []
    for p, a in zip(s.fn.params, s.args, strict=True):
        if isinstance(p, Buffer):
            args.append((p.name, a.buf.name, compile_expr(a.offset)))
        else:
            args.append((p.name, None, compile_expr(a)))

    def call(env):
        bufs, scalars = {}, {}
        if TRACE is not None:  # whose accesses the callee makes
            scalars["#who"] = TRACE.who(env)
        for pname, bname, off in args:
            if bname is None:
                scalars[pname] = off(env)
                continue
            arr, o = env["#bufs"][bname], off(env)
            if o < 0:
                raise KernelError(f"pointer {bname} {o} before the start of the buffer")
            bufs[pname] = arr[o:]  # past the end: empty, so any access through it fails
        callee(bufs, scalars)

    return call


def compiled(k: Kernel) -> Callable[[dict, dict], None]:
    """`k` compiled once (kept on the kernel): a function of (arrays by parameter name,
    scalars by name)."""
    hit = k.__dict__.get("_interpreted")
    if hit is not None:
        return hit
    body = _block(k.body)

    def run(bufs: dict, scalars: dict) -> None:
        env = dict(scalars)
        env["#bufs"] = bufs
        with np.errstate(all="ignore"):
            body(env)

    k.__dict__["_interpreted"] = run
    return run


def run_kernel(k: Kernel, *args) -> None:
    """Run kernel `k` on `args`, one per parameter in order: a numpy array for a `Buffer`
    (flattened in place: a C-contiguous array, written through for outputs), a number for a
    `Scalar`, a `collections.deque` for a `Stream` (popped from or pushed to)."""
    if len(args) != len(k.params):
        raise TypeError(f"{k.name} takes {len(k.params)} arguments, got {len(args)}")
    bufs, scalars, streams = {}, {}, {}
    for p, a in zip(k.params, args):
        if isinstance(p, Stream):
            if not isinstance(a, deque):
                raise TypeError(f"{k.name}: argument {p.name} is a stream: pass a deque")
            streams[p.name] = a
            continue
        if isinstance(p, Buffer):
            arr = np.asarray(a)
            if not arr.flags.c_contiguous:
                raise TypeError(f"{k.name}: argument {p.name} is not C-contiguous")
            if arr.dtype != _np(p.dtype):
                raise TypeError(f"{k.name}: argument {p.name} is {arr.dtype}, not {p.dtype}")
            if p.sized and arr.size < p.numel:
                raise TypeError(f"{k.name}: argument {p.name} has {arr.size} elements, "
                                f"the kernel reads {p.numel}")
            bufs[p.name] = arr.reshape(-1)
        elif isinstance(p, Scalar):
            scalars[p.name] = _value(a, p.dtype)
    scalars["#streams"] = streams
    compiled(k)(bufs, scalars)
