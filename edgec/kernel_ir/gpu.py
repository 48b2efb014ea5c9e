"""Kernels on a GPU: a grid of blocks of threads.

A GPU launch in the kernel IR is a top-level nest of `grid` loops (the blocks, at most 3
deep) around the block's shared `Alloc`s, `Local`s that every thread of the block computes
alike, and a nest of `block` loops (the threads, at most 3 deep) whose body each thread runs,
waiting for the others at `Barrier`s. A kernel is a sequence of launches, run in order.

`bind_threads` makes such a kernel of any kernel the CPU lowerings write: each top-level
`parallel` loop becomes a grid of ceil(n / T) blocks of T threads, thread t of block b running
iteration b T + t where it is below n (n <= T: one block of n threads); each run of other
top-level statements becomes a launch of one thread, which runs them as the CPU does.
`launches` reads a bound kernel back as its launches and checks the form above, with an
EdgecError that names what breaks it.

    for i < 1000 parallel:          for b < 4 grid:
      y[i] = x[i] * 2                 for t < 256 block:
                                        let i = b * 256 + t
                                        if i < 1000: y[i] = x[i] * 2
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import EdgecError
from .kernel import (
    Alloc,
    Assign,
    AtomicAdd,
    Call,
    Expr,
    If,
    Kernel,
    Local,
    Loop,
    LoopKind,
    Mma,
    Op,
    Ptr,
    Store,
    const,
    var,
    walk,
)
from .passes import names, thread_nest
from .program import Branch, Repeat, walk_ops
from .program import Launch as Run

# the most threads a block may have, and per dimension (CUDA's limits, compute capability
# 5.0 and later); the grid's y and z dimensions are bounded too
MAX_BLOCK_THREADS = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)  # x, y, z
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)


@dataclass
class Launch:
    """One launch of a bound kernel: its grid and block loops, outermost first (CUDA's
    dimensions: the innermost loop is x), what each block declares before its threads
    (shared `Alloc`s, `Local`s), and the threads' body."""

    grid: list[Loop]
    prologue: list
    block: list[Loop]
    body: list


def bind_threads(k: Kernel, threads: int = 256) -> Kernel:
    """`k` with each top-level parallel loop a grid of blocks of `threads` threads and each
    run of other top-level statements a launch of one thread (module doc); grid loops the
    lowering wrote stay as they are. A top-level scalar `Local` that only reads the kernel's
    inputs (never stored to) and such locals, and is never assigned again (a zero point or
    scale read at run time), is computed by every launch that reads it, in its blocks'
    prologue, rather than being a launch of its own whose result the others cannot see."""
    written = {s.buf.name for s in walk(k.body) if isinstance(s, Store | AtomicAdd)} | \
        {s.acc.name for s in walk(k.body) if isinstance(s, Mma)} | \
        {a.buf.name for s in walk(k.body) if isinstance(s, Call) for a in s.args
         if isinstance(a, Ptr)}  # (a callee may write any buffer it is given)
    assigned = {s.name for s in walk(k.body) if isinstance(s, Assign)}
    params = {p.name for p in k.params}
    uniform: dict[str, Local] = {}
    body: list = []
    serial: list = []
    for s in k.body:
        if isinstance(s, Local) and s.name not in assigned and \
                _reads(s.init) <= (params - written) | set(uniform):
            uniform[s.name] = s
        elif isinstance(s, Loop) and s.kind in (LoopKind.PARALLEL, LoopKind.GRID):
            if serial:
                body.append(_one_thread(serial, len(body)))
                serial = []
            body.append(s if s.kind is LoopKind.GRID else _grid_of(s, threads, len(body)))
        else:
            serial.append(s)
    if serial:
        body.append(_one_thread(serial, len(body)))
    body = [_with_prologue(launch, uniform) for launch in body]
    for launch in body:
        _closed(k, launch)
    return Kernel(k.name, k.params, body, k.doc, k.opaque, outlined=k.outlined)


def _reads(e: Expr) -> set[str]:
    """The buffers and variables expression `e` reads."""
    return names(Kernel("e", [], [Local("_", e.dtype, e)]))[0]


def _with_prologue(launch: Loop, uniform: dict[str, Local]) -> Loop:
    """`launch` (a grid nest) with the uniform locals it reads, and those they read, first in
    its innermost grid loop's body, in their order of definition."""
    used, defined = names(Kernel("l", [], [launch]))
    need: set[str] = set()
    todo = [n for n in used - defined if n in uniform]
    while todo:
        n = todo.pop()
        if n not in need:
            need.add(n)
            todo += [m for m in _reads(uniform[n].init) if m in uniform]
    if not need:
        return launch
    prologue = [dataclasses.replace(loc) for n, loc in uniform.items() if n in need]

    def with_prologue(loop: Loop) -> Loop:  # a copy: the kernel given stays as it was
        inner = loop.body[0] if len(loop.body) == 1 else None
        if isinstance(inner, Loop) and inner.kind is LoopKind.GRID:
            return dataclasses.replace(loop, body=[with_prologue(inner)])
        return dataclasses.replace(loop, body=[*prologue, *loop.body])
    return with_prologue(launch)


def _grid_of(loop: Loop, threads: int, n: int) -> Loop:
    b, t = f"_b{n}", f"_t{n}"
    extent = loop.extent
    if extent.op is Op.CONST and extent.field("value") <= threads:
        inner = [Local(loop.var, extent.dtype, var(t)), *loop.body]
        return Loop(b, const(1), [Loop(t, extent, inner, LoopKind.BLOCK)], LoopKind.GRID)
    blocks = (extent + (threads - 1)) // threads
    i = var(b) * threads + var(t)
    inner = [Local(loop.var, extent.dtype, i), If(var(loop.var) < extent, list(loop.body))]
    return Loop(b, blocks, [Loop(t, const(threads), inner, LoopKind.BLOCK)], LoopKind.GRID)


def _one_thread(stmts: list, n: int) -> Loop:
    return Loop(f"_b{n}", const(1), [Loop(f"_t{n}", const(1), list(stmts), LoopKind.BLOCK)],
                LoopKind.GRID)


def _closed(k: Kernel, launch: Loop) -> None:
    """A launch may read only the kernel's parameters and what it defines itself: its
    threads share nothing else with the launches before it."""
    used, defined = names(Kernel(k.name, k.params, [launch]))
    free = used - defined - {p.name for p in k.params}
    if free:
        raise EdgecError(f"kernel {k.name}: launch {launch.var} reads {', '.join(sorted(free))}"
                         ", defined in another launch; a GPU launch shares only the kernel's "
                         "buffers")


def launches(k: Kernel) -> list[Launch]:
    """The launches of a bound kernel (`bind_threads`), checked: every top-level statement a
    grid nest of at most 3 loops, a block nest of at most 3 loops and MAX_BLOCK_THREADS
    threads of constant extents, and nothing but Allocs and Locals between them."""
    out = []
    for s in k.body:
        if not (isinstance(s, Loop) and s.kind is LoopKind.GRID):
            raise EdgecError(f"kernel {k.name}: a {type(s).__name__} outside the grid loops; "
                             "a GPU kernel is a sequence of grid nests (kernel_ir/gpu.py "
                             "bind_threads makes one)")
        grid = [s]
        while len(grid[-1].body) == 1 and isinstance(grid[-1].body[0], Loop) \
                and grid[-1].body[0].kind is LoopKind.GRID:
            grid.append(grid[-1].body[0])
        inner = grid[-1].body
        nests = [x for x in inner if isinstance(x, Loop) and x.kind is LoopKind.BLOCK]
        other = [x for x in inner if not isinstance(x, (Alloc, Local)) and x not in nests]
        if len(nests) != 1 or other or inner.index(nests[0]) != len(inner) - 1:
            raise EdgecError(f"kernel {k.name}: grid loop {grid[-1].var} must hold Allocs and "
                             "Locals, then one nest of block loops, and nothing after it")
        block, body = thread_nest(nests[0])
        _check_dims(k, grid, block)
        out.append(Launch(grid, inner[:-1], block, body))
    return out


def _check_dims(k: Kernel, grid: list[Loop], block: list[Loop]) -> None:
    for what, loops, limits in (("grid", grid, MAX_GRID_DIMS), ("block", block, MAX_BLOCK_DIMS)):
        if len(loops) > 3:
            raise EdgecError(f"kernel {k.name}: {len(loops)} {what} loops; a GPU has 3 "
                             f"{what} dimensions")
        for loop, limit in zip(reversed(loops), limits, strict=False):
            n = _constant(loop.extent)
            if n is not None and n > limit:
                raise EdgecError(f"kernel {k.name}: {what} loop {loop.var} of {n}; at most "
                                 f"{limit} in its dimension")
    sizes = [_constant(loop.extent) for loop in block]
    if any(n is None for n in sizes):
        raise EdgecError(f"kernel {k.name}: a block loop of run-time extent; a block's "
                         "threads are fixed at the launch")
    total = 1
    for n in sizes:
        total *= n
    if total > MAX_BLOCK_THREADS:
        raise EdgecError(f"kernel {k.name}: {total} threads in a block; at most "
                         f"{MAX_BLOCK_THREADS}")


def _constant(e: Expr) -> int | None:
    return int(e.field("value")) if e.op is Op.CONST else None


def bind_program(ops: list, threads: int = 256) -> list:
    """A program's ops (kernel_ir/program.py) with every launched kernel bound
    (`bind_threads`), through its branches and repeats."""
    out = []
    for op in ops:
        if isinstance(op, Run):
            op = Run(bind_threads(op.kernel, threads), op.args)
        elif isinstance(op, Branch):
            op = Branch(op.cond, bind_program(op.then, threads), bind_program(op.orelse, threads))
        elif isinstance(op, Repeat):
            op = Repeat(op.var, op.count, bind_program(op.body, threads))
        out.append(op)
    return out


def kernels_of(ops: list) -> list[Kernel]:
    """The kernels a program's ops launch, each once, in order."""
    seen: dict[str, Kernel] = {}
    for op in walk_ops(ops):
        if isinstance(op, Run):
            seen.setdefault(op.kernel.name, op.kernel)
    return list(seen.values())
