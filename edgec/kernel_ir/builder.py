"""`KernelBuilder`: how op kernels and micro-kernels are written in the kernel IR (kernel_ir.py),
statement by statement, with Python's `with` blocks for loops and branches."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

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
    Ptr,
    Push,
    Role,
    Scalar,
    Space,
    Store,
    Stream,
    _lift,
    as_enum,
    binary,
    broadcast,
    cast,
    const,
    minimum,
    shfl_xor,
    var,
)

# `rows`: a loop of less work than this many elements stays on the calling thread (handing
# tasks to the pool and waiting for them costs microseconds); a task does about TASK_ELEMENTS
PARALLEL_ELEMENTS = 1 << 16
TASK_ELEMENTS = 1 << 14


class KernelBuilder:
    """Builds a Kernel statement by statement:

        kb = KernelBuilder("relu_3", doc)
        x, y = kb.input("x", F32, (n,)), kb.output("y", F32, (n,))
        with kb.loop(n) as i:
            kb.store(y, i, maximum(x[i], 0.0))
    """

    def __init__(self, name: str, doc: str = "", opaque: bool = False,
                 outlined: bool = False):
        self.name = name
        self.doc = doc
        self.opaque = opaque
        self.outlined = outlined
        self.params: list[Buffer] = []
        self._stack: list[list] = [[]]
        self._used: dict[str, int] = {}
        self._issued: set[str] = set()
        self.gpu_rows = False  # rows() makes a parallel loop of every row (a GPU's threads)

    def _fresh(self, base: str) -> str:
        """`base`, or `base` with a number appended, never a name issued before."""
        n = self._used.get(base, 0)
        name = base if n == 0 else f"{base}{n}"
        while name in self._issued:
            n += 1
            name = f"{base}{n}"
        self._used[base] = n + 1
        self._issued.add(name)
        return name

    def param(self, name: str, dtype: DType, shape: Sequence[int], role: Role | str
              ) -> Buffer:
        buf = Buffer(self._fresh(name), dtype, tuple(int(d) for d in shape), role)
        self.params.append(buf)
        return buf

    def input(self, name: str, dtype: DType, shape: Sequence[int]) -> Buffer:
        return self.param(name, dtype, shape, Role.IN)

    def pointer(self, name: str, dtype: DType, role: Role | str = Role.IN) -> Buffer:
        """An unsized pointer parameter (of a micro-kernel), read-only unless role is out."""
        buf = Buffer(self._fresh(name), dtype, (), role, sized=False)
        self.params.append(buf)
        return buf

    def scalar(self, name: str, dtype: DType = INDEX) -> Expr:
        """A scalar parameter; returns the expression that reads it."""
        p = Scalar(self._fresh(name), dtype)
        self.params.append(p)
        return p.expr

    def call(self, fn: Kernel, *args) -> None:
        """Call micro-kernel `fn`: a (buffer, offset) pair or Ptr per pointer parameter, an
        expression or number per scalar parameter."""
        if len(args) != len(fn.params):
            raise TypeError(f"{fn.name} takes {len(fn.params)} arguments, got {len(args)}")
        out = []
        for p, a in zip(fn.params, args):
            if isinstance(p, Buffer):
                if isinstance(a, Buffer):
                    a = Ptr(a, const(0))
                elif isinstance(a, tuple):
                    a = Ptr(a[0], _lift(a[1], INDEX))
                if not isinstance(a, Ptr) or a.buf.dtype != p.dtype:
                    raise TypeError(f"{fn.name}: parameter {p.name} needs a {p.dtype} pointer")
                out.append(a)
            else:
                out.append(cast(_lift(a, p.dtype), p.dtype))
        self.emit(Call(fn, out))

    def output(self, name: str, dtype: DType, shape: Sequence[int]) -> Buffer:
        return self.param(name, dtype, shape, Role.OUT)

    def emit(self, stmt) -> None:
        self._stack[-1].append(stmt)

    @contextmanager
    def loop(self, extent, name: str = "i", kind: LoopKind | str = LoopKind.SERIAL,
             unroll: int = 0, ii: int = 0):
        """A counted loop 0 <= var < extent; an extent of 1 emits no loop (var is 0), but for
        a grid or block loop, whose extent is its number of blocks or threads."""
        kind = as_enum(LoopKind, kind, "loop kind")
        extent = _lift(extent, INDEX)
        if kind is LoopKind.PARALLEL and len(self._stack) != 1:
            raise ValueError("kernel IR: a parallel loop must be a top-level statement")
        if extent.is_const and extent.value == 1 and kind not in (LoopKind.GRID, LoopKind.BLOCK):
            yield const(0)
            return
        if extent.is_const and extent.value <= 0:
            self._stack.append([])  # body is dead code
            try:
                yield const(0)
            finally:
                self._stack.pop()
            return
        v = self._fresh(name)
        body: list = []
        self._stack.append(body)
        try:
            yield var(v)
        finally:
            self._stack.pop()
        self.emit(Loop(v, extent, body, kind, unroll if kind is LoopKind.SERIAL else 0,
                       ii if kind is LoopKind.PIPELINE else 0))

    @contextmanager
    def rows(self, count: int, per_row: int, name: str = "r"):
        """A loop over `count` independent rows of `per_row` elements of work each, handed to
        the thread pool in tasks of about TASK_ELEMENTS elements when the whole is at least
        PARALLEL_ELEMENTS and the loop is a top-level statement (an op in a Loop's body is
        not); yields the row index. With `gpu_rows` (a GPU target's builder) every row of a
        top-level loop is an iteration of its own parallel loop: a GPU thread each
        (kernel_ir/gpu.py bind_threads)."""
        if self.gpu_rows and count >= 2 and len(self._stack) == 1:
            with self.loop(count, name, kind=LoopKind.PARALLEL) as r:  # a GPU thread a row
                yield r
            return
        chunk = max(1, TASK_ELEMENTS // max(per_row, 1))
        tasks = -(-count // chunk)
        if count * per_row < PARALLEL_ELEMENTS or tasks < 2 or len(self._stack) != 1:
            with self.loop(count, name) as r:
                yield r
            return
        with self.loop(tasks, "t", kind=LoopKind.PARALLEL) as t:
            extent = minimum(count - t * chunk, chunk) if count % chunk else chunk
            with self.loop(extent, name) as r:
                yield t * chunk + r

    @contextmanager
    def loops(self, extents: Sequence, names: Sequence[str] | None = None,
              kind: LoopKind | str = LoopKind.SERIAL):
        """Nested loops over `extents` (outermost first); yields the list of loop variables."""
        names = list(names) if names else [f"i{k}" for k in range(len(extents))]
        with _nest(self, list(extents), names, kind) as vs:
            yield vs

    def local(self, name: str, init) -> Expr:
        """A mutable local (a scalar, or a vector when `init` is one) set to `init`."""
        init = _lift(init, DType.F32)
        n = self._fresh(name)
        self.emit(Local(n, init.dtype, init))
        return Expr(Op.VAR, init.dtype, (n,), init.lanes)

    def warp_reduce(self, target: Expr, fold, width: int = 32) -> None:
        """Fold local `target` over the threads of each warp of `width`, in place: every
        thread ends with the warp's result (a butterfly of shfl_xor). `fold`: add, max, min,
        or a function of two expressions (an associative, commutative combine)."""
        if isinstance(fold, str):
            if fold not in ("add", "max", "min"):
                raise ValueError(f"kernel IR: no warp reduction {fold}")
            op = fold

            def fold(a, b):
                return binary(op, a, b)
        mask = width // 2
        while mask:
            self.assign(target, fold(target, shfl_xor(target, mask)))
            mask //= 2

    def assign(self, target: Expr, value) -> None:
        if target.op is not Op.VAR:
            raise TypeError("assign() targets a local declared with local()")
        value = broadcast(_lift(value, target.dtype), target.lanes)
        if value.lanes != target.lanes:
            raise TypeError(f"assign(): {value.lanes} lanes into a {target.lanes}-lane local")
        self.emit(Assign(target.field("name"), value))

    def store(self, buf: Buffer, index, value, count=None) -> None:
        """buf[index] = value; a vector value stores its lanes (only `count` if given)."""
        value = _lift(value, buf.dtype)
        if value.dtype != buf.dtype:
            value = cast(value, buf.dtype)
        cnt = None if count is None else _lift(count, INDEX)
        if cnt is not None and value.lanes == 1:  # a 1-lane tail: store when count is not 0
            with self.if_(cnt > 0):
                self.emit(Store(buf, _lift(index, INDEX), value))
            return
        self.emit(Store(buf, _lift(index, INDEX), value, cnt))

    def alloc(self, name: str, dtype: DType, shape: Sequence[int],
              space: Space | str = Space.LOCAL, partition: int = 0, counts: str = ""
              ) -> Buffer:
        """A kernel-local array in `space` (shared or local), declared here (`partition`,
        `counts`: see `Alloc`)."""
        if space not in (Space.SHARED, Space.LOCAL):
            raise ValueError(f"kernel IR: a local array lives in shared or local memory, "
                             f"not {space}")
        buf = Buffer(self._fresh(name), dtype, tuple(int(d) for d in shape), Role.SCRATCH,
                     space=space)
        self.emit(Alloc(buf, partition, counts))
        return buf

    def barrier(self) -> None:
        self.emit(Barrier())

    def atomic_add(self, buf: Buffer, index, value) -> None:
        """buf[index] += value, indivisibly (see `AtomicAdd`)."""
        value = _lift(value, buf.dtype)
        self.emit(AtomicAdd(buf, _lift(index, INDEX), value if value.dtype == buf.dtype
                            else cast(value, buf.dtype)))

    def mma(self, acc: Buffer, acc_at, a: Buffer, a_at, a_ld: int, b: Buffer, b_at,
            b_ld: int) -> None:
        """A warp's tensor-core multiply-add into `acc[acc_at:+4]` (see `Mma`)."""
        self.emit(Mma(acc, _lift(acc_at, INDEX), a, _lift(a_at, INDEX), int(a_ld), b,
                      _lift(b_at, INDEX), int(b_ld)))

    def stream(self, name: str, dtype: DType, depth: int, role: Role | str = Role.IN
               ) -> Stream:
        """A FIFO parameter (see `Stream`)."""
        s = Stream(self._fresh(name), dtype, int(depth), role)
        self.params.append(s)
        return s

    def push(self, stream: Stream, value) -> None:
        value = _lift(value, stream.dtype)
        self.emit(Push(stream, value if value.dtype == stream.dtype else
                       cast(value, stream.dtype)))

    def pop(self, stream: Stream, name: str = "v") -> Expr:
        n = self._fresh(name)
        self.emit(Pop(stream, n))
        return var(n, stream.dtype)

    def prefetch(self, buf: Buffer, index) -> None:
        """Ask for the cache line of buf[index] ahead of its use (see `Prefetch`)."""
        self.emit(Prefetch(buf, _lift(index, INDEX)))

    @contextmanager
    def csr(self, rowptr: Buffer, colidx: Buffer, row, name: str = "k"):
        """Sparse iteration over row `row` of a CSR matrix: yields (k, col) for each stored
        entry, k indexing the values array (or its blocks, for block-CSR) and col the
        column (block) index; the bounds are rowptr[row] and rowptr[row + 1]."""
        start = self.local(f"{name}_lo", cast(rowptr[row], INDEX))
        n = self.local(f"{name}_n", cast(rowptr[_lift(row, INDEX) + 1], INDEX) - start)
        with self.loop(n, name) as j:
            k = start + j
            yield k, cast(colidx[k], INDEX)

    @contextmanager
    def if_(self, cond: Expr):
        body: list = []
        self._stack.append(body)
        try:
            yield
        finally:
            self._stack.pop()
        if cond.is_const:
            if cond.value:
                self._stack[-1].extend(body)
            return
        self.emit(If(cond, body))

    @contextmanager
    def else_(self):
        """The else branch of the If emitted just before."""
        last = self._stack[-1][-1] if self._stack[-1] else None
        if not isinstance(last, If) or last.orelse:
            raise ValueError("else_() must follow an if_() block")
        self._stack.append(last.orelse)
        try:
            yield
        finally:
            self._stack.pop()

    def build(self) -> Kernel:
        return Kernel(self.name, self.params, self._stack[0], self.doc, self.opaque,
                      outlined=self.outlined)


@contextmanager
def _nest(kb: KernelBuilder, extents: list, names: list, kind: LoopKind | str):
    if not extents:
        yield []
        return
    with kb.loop(extents[0], names[0], kind) as v, _nest(kb, extents[1:], names[1:], kind) as rest:
        yield [v, *rest]
