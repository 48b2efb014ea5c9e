"""Transformations of the kernel IR that renderers share.

`split_barriers` turns the threads of a block (directly nested "block" loops whose body waits at
`Barrier`s) into code one CPU thread runs: the body is cut at each barrier into phases, and each
phase runs for every thread before the next starts, which is what the barrier guarantees. A
barrier may sit inside a serial loop or an `If` only when every thread takes the same path (its
bounds or condition read no thread index nor thread-private value); that loop or If then runs
once, around its own phases. A thread's locals that one phase sets and a later one reads become
arrays with an element per thread (kernel-local arrays in local memory).

    for ty, tx block:                 let acc_t: f32[T*T] (local)
      let acc = 0                      for kt < K/T:
      for kt < K/T:                      for ty, tx block: As[..] = ..; acc_t[t] = ..
        As[..] = ..                      for ty, tx block: for k: acc_t[t] += As[..] * Bs[..]
        barrier                        for ty, tx block: C[..] = acc_t[t]
        for k: acc += As[..] * Bs[..]
        barrier
      C[..] = acc
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace

from ..errors import EdgecError
from .kernel import (
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
    Space,
    Store,
    linear_index,
    var,
    walk,
)


def has_barrier(stmts: list) -> bool:
    return any(isinstance(s, Barrier) for s in walk(stmts))


def has_warp_op(stmts: list) -> bool:
    """Whether `stmts` exchange values between a warp's threads (`shfl_xor`, `Mma`)."""
    return any(isinstance(s, Mma) or any(e.op is Op.SHFL_XOR for e in _exprs_of(s))
               for s in walk(stmts))


def _exprs_of(s) -> Iterator[Expr]:
    """Every expression statement `s` holds itself (not its nested statements'), and theirs."""
    stack = [getattr(s, f.name) for f in fields(s)]
    stack = [e for e in stack if isinstance(e, Expr)]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(a for a in e.args if isinstance(a, Expr))


def thread_nest(loop: Loop) -> tuple[list[Loop], list]:
    """The directly nested block loops starting at `loop` (the block's thread dimensions,
    outermost first) and the innermost body."""
    nest = [loop]
    while len(nest[-1].body) == 1 and isinstance(nest[-1].body[0], Loop) \
            and nest[-1].body[0].kind is LoopKind.BLOCK:
        nest.append(nest[-1].body[0])
    return nest, nest[-1].body


def split_barriers(k: Kernel) -> Kernel:
    """`k` with each block of threads that has barriers split into phases (module doc)."""
    if not has_barrier(k.body):
        return k
    return replace(k, body=_split_in(k.body, k.name))


def _split_in(stmts: list, name: str) -> list:
    out: list = []
    for s in stmts:
        if isinstance(s, Loop) and s.kind is LoopKind.BLOCK and has_barrier(s.body):
            out += _Splitter(name, *thread_nest(s)).run()
        elif isinstance(s, Loop):
            out.append(replace(s, body=_split_in(s.body, name)))
        elif isinstance(s, If):
            out.append(replace(s, then=_split_in(s.then, name),
                               orelse=_split_in(s.orelse, name)))
        elif isinstance(s, Barrier):
            raise EdgecError(f"kernel {name}: a barrier outside any block loop")
        else:
            out.append(s)
    return out


@dataclass
class _Phase:
    """Statements every thread runs, one after the other, between two barriers."""

    body: list


class _Splitter:
    def __init__(self, kernel: str, nest: list[Loop], body: list):
        self.kernel, self.nest, self.body = kernel, nest, body
        if any(not t.extent.is_const for t in nest):
            raise EdgecError(f"kernel {kernel}: a block with barriers needs a constant number "
                             "of threads")
        self.threads = [t.var for t in nest]
        self.count = math.prod(t.extent.value for t in nest)
        self.tid = linear_index([var(t.var) for t in nest], [t.extent.value for t in nest])

    def run(self) -> list:
        tree = self.phases(self.body)
        phases = [p for p in _phases_of(tree)]
        defined = [_defined(p.body) for p in phases]
        used = [_read(p.body) for p in phases]
        shared = {n for i, d in enumerate(defined) for n in d
                  if any(n in u for j, u in enumerate(used) if j != i)}
        locals_ = {s.name: s for p in phases for s in walk(p.body) if isinstance(s, Local)}
        arrays = {n: (Buffer(f"{n}_t", locals_[n].dtype, (self.count * locals_[n].lanes,),
                             Role.SCRATCH, space=Space.LOCAL), locals_[n].lanes)
                  for n in sorted(shared)}
        return [Alloc(b) for b, _ in arrays.values()] + self.emit(tree, arrays)

    def phases(self, stmts: list) -> list:
        """`stmts` as a list of _Phase and uniform Loops/Ifs (whose bodies are such lists)."""
        out: list = []
        current: list = []
        for s in stmts:
            if not has_barrier([s]):
                current.append(s)
                continue
            if current:
                out.append(_Phase(current))
                current = []
            if isinstance(s, Barrier):
                continue
            if isinstance(s, Loop) and s.kind not in (LoopKind.BLOCK, LoopKind.PARALLEL):
                self.uniform(s.extent, f"loop {s.var}")
                out.append(replace(s, body=self.phases(s.body)))
            elif isinstance(s, If):
                self.uniform(s.cond, "an If")
                out.append(replace(s, then=self.phases(s.then), orelse=self.phases(s.orelse)))
            else:
                raise EdgecError(f"kernel {self.kernel}: a barrier inside a {type(s).__name__}"
                                 f" {getattr(s, 'kind', '')} of a block".rstrip())
        if current:
            out.append(_Phase(current))
        return out

    def uniform(self, e: Expr, what: str) -> None:
        names = _vars(e)
        private = names & (set(self.threads) | _defined(self.body))
        if private:
            raise EdgecError(f"kernel {self.kernel}: {what} holds a barrier but depends on "
                             f"{sorted(private)}, which differ between the block's threads")

    def emit(self, tree: list, arrays: dict[str, tuple[Buffer, int]]) -> list:
        out: list = []
        for s in tree:
            if isinstance(s, _Phase):
                body = [_promote(x, arrays, self.tid) for x in s.body]
                for t in reversed(self.nest):
                    body = [replace(t, body=body)]
                out += body
            elif isinstance(s, Loop):
                out.append(replace(s, body=self.emit(s.body, arrays)))
            else:
                out.append(replace(s, then=self.emit(s.then, arrays),
                                   orelse=self.emit(s.orelse, arrays)))
        return out


def _phases_of(tree: list):
    for s in tree:
        if isinstance(s, _Phase):
            yield s
        elif isinstance(s, Loop):
            yield from _phases_of(s.body)
        elif isinstance(s, If):
            yield from _phases_of(s.then)
            yield from _phases_of(s.orelse)


def _vars(e) -> set[str]:
    if not isinstance(e, Expr):
        return set()
    own = {e.field("name")} if e.op is Op.VAR else set()
    return own.union(*(_vars(a) for a in e.args))


def _defined(stmts: list) -> set[str]:
    return {s.name for s in walk(stmts) if isinstance(s, Local | Pop)}


def _read(stmts: list) -> set[str]:
    names: set[str] = set()
    for s in walk(stmts):
        for v in vars(s).values():
            names |= _vars(v)
            if isinstance(v, list) and isinstance(s, Call):
                names |= set().union(*(_vars(getattr(a, "offset", a)) for a in v))
        if isinstance(s, Assign):
            names.add(s.name)
    return names


def _promote(s, arrays: dict[str, tuple[Buffer, int]], tid: Expr):
    """Statement `s` with each local in `arrays` (its array and lanes) read from and written
    to the thread's own element of that array."""

    def at(name: str) -> tuple[Buffer, Expr, int]:
        buf, lanes = arrays[name]
        return buf, tid * lanes if lanes > 1 else tid, lanes

    def ex(e):
        if not isinstance(e, Expr):
            return e
        if e.op is Op.VAR and e.field("name") in arrays:
            buf, i, lanes = at(e.field("name"))
            return Expr(Op.VLOAD, buf.dtype, (buf, i, None), lanes) if lanes > 1 else buf[i]
        if not any(isinstance(a, Expr) for a in e.args):
            return e
        return Expr(e.op, e.dtype, tuple(ex(a) for a in e.args), e.lanes)

    if isinstance(s, Local | Assign) and s.name in arrays:
        buf, i, _ = at(s.name)
        return Store(buf, i, ex(s.init if isinstance(s, Local) else s.value))
    if isinstance(s, Loop):
        return replace(s, extent=ex(s.extent), body=[_promote(x, arrays, tid) for x in s.body])
    if isinstance(s, If):
        return replace(s, cond=ex(s.cond), then=[_promote(x, arrays, tid) for x in s.then],
                       orelse=[_promote(x, arrays, tid) for x in s.orelse])
    if isinstance(s, Local):
        return replace(s, init=ex(s.init))
    if isinstance(s, Assign):
        return replace(s, value=ex(s.value))
    if isinstance(s, Store):
        return replace(s, index=ex(s.index), value=ex(s.value), count=ex(s.count))
    if isinstance(s, Prefetch):
        return replace(s, index=ex(s.index))
    if isinstance(s, Push):
        return replace(s, value=ex(s.value))
    if isinstance(s, Call):
        return replace(s, args=[replace(a, offset=ex(a.offset)) if hasattr(a, "offset")
                                else ex(a) for a in s.args])
    if isinstance(s, Pop) and s.name in arrays:
        raise EdgecError(f"a value popped in one phase of a block ({s.name}) and read in "
                         "another: pop it into a local array instead")
    return s


# -- analyses and outlining --------------------------------------------------------------

def names(k: Kernel) -> tuple[set[str], set[str]]:
    """(names read: buffers and variables; names defined: locals and loop variables)."""
    used: set[str] = set()
    defined: set[str] = set()

    def visit(e: Expr):
        if e.op in (Op.LOAD, Op.VLOAD, Op.VBROADCAST, Op.VGATHER):
            used.add(e.field("buf").name)
        elif e.op is Op.VAR:
            used.add(e.field("name"))
        for a in e.args:
            if isinstance(a, Expr):
                visit(a)

    for s in walk(k.body):
        if isinstance(s, Prefetch):
            used.add(s.buf.name)
            visit(s.index)
        elif isinstance(s, Store):
            used.add(s.buf.name)
            for e in (s.index, s.value, s.count):
                if e is not None:
                    visit(e)
        elif isinstance(s, AtomicAdd):
            used.add(s.buf.name)
            visit(s.index)
            visit(s.value)
        elif isinstance(s, Mma):
            used.update((s.acc.name, s.a.name, s.b.name))
            for e in (s.acc_at, s.a_at, s.b_at):
                visit(e)
        elif isinstance(s, Local):
            defined.add(s.name)
            visit(s.init)
        elif isinstance(s, Alloc):
            defined.add(s.buf.name)
        elif isinstance(s, Pop):
            defined.add(s.name)
            used.add(s.stream.name)
        elif isinstance(s, Push):
            used.add(s.stream.name)
            visit(s.value)
        elif isinstance(s, Assign):
            visit(s.value)
        elif isinstance(s, If):
            visit(s.cond)
        elif isinstance(s, Loop):
            defined.add(s.var)
            visit(s.extent)
        elif isinstance(s, Call):
            for a in s.args:
                if isinstance(a, Ptr):
                    used.add(a.buf.name)
                    visit(a.offset)
                else:
                    visit(a)
    return used, defined


def used_params(k: Kernel) -> set[str]:
    return names(k)[0]


def check_closed(k: Kernel, loop: Loop) -> None:
    """A parallel loop's body may read only the kernel's parameters and its own names."""
    used, defined = names(Kernel(k.name, k.params, [loop]))
    free = used - defined - {p.name for p in k.params}
    if free:
        raise ValueError(f"kernel {k.name}: parallel loop {loop.var} reads {sorted(free)}, "
                         "defined outside it; compute them inside the loop")


@dataclass
class Task:
    """A top-level parallel loop outlined: a function that runs iterations [first, end) of
    `loop` over the kernel's parameters (its context), of which it reads `reads`."""

    name: str
    loop: Loop
    reads: set[str]


@dataclass
class ParallelFor:
    """What replaces an outlined loop in its kernel: run `task` over `extent` iterations on
    the thread pool."""

    task: Task
    extent: Expr


def outline_parallel(k: Kernel) -> tuple[list[Task], list]:
    """The tasks of `k`'s top-level parallel loops (named K_task<position>) and `k`'s body
    with each of those loops replaced by a ParallelFor. A parallel loop may read only the
    kernel's parameters and what it defines itself."""
    tasks, body = [], []
    for n, s in enumerate(k.body):
        if not (isinstance(s, Loop) and s.kind is LoopKind.PARALLEL):
            body.append(s)
            continue
        check_closed(k, s)
        task = Task(f"{k.name}_task{n}", s,
                    used_params(Kernel(k.name, k.params, [replace(s, kind=LoopKind.SERIAL)])))
        tasks.append(task)
        body.append(ParallelFor(task, s.extent))
    return tasks, body
