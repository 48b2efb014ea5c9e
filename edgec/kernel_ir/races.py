"""Data races of a GPU kernel, found by running it on the interpreter.

A bound kernel (kernel_ir/gpu.py) runs launch by launch, block by block; the interpreter
records every element each thread loads and stores (interpreter.TRACE), with the thread's
block, its coordinates in the block and how many barriers it has passed (its phase). Within
one launch, two accesses to one element race where one of them writes and

- two threads of one block make them in the same phase (no barrier orders them), or
- two blocks make them (blocks are not ordered at all).

Atomic adds (`AtomicAdd`) to an element race with no other atomic add, but with any plain
load or store of it in the launch. A thread's own accesses never race, and neither do a
callee's (a micro-kernel runs in the thread that calls it). Launches run in order, so
accesses in two of them never race. Loads and stores of the kernel's buffers and of its
shared arrays are checked alike; what one run touches is all that is checked, so a race the
inputs do not reach is not found.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from . import interpreter
from .gpu import launches
from .interpreter import compile_expr, compiled
from .kernel import Buffer, Kernel, Stream

Who = tuple  # (block coordinates, thread coordinates, phase)


@dataclass(frozen=True)
class Race:
    """Two accesses to `buffer[index]` in launch `launch` that nothing orders, the first a
    write: each as (block, thread, phase, whether it writes)."""

    launch: int
    buffer: str
    index: int
    first: tuple[tuple, tuple, int, bool]
    second: tuple[tuple, tuple, int, bool]

    def __str__(self) -> str:
        def say(a):
            block, thread, phase, write = a
            return (f"{'write' if write else 'read'} by block {block} thread {thread} "
                    f"(after {phase} barriers)")
        return (f"launch {self.launch}: {self.buffer}[{self.index}]: {say(self.first)} and "
                f"{say(self.second)}")


class _Trace:
    """The accesses of one launch: element address -> {(block, thread): {phase: wrote}}, and
    the names the arrays were accessed by."""

    def __init__(self, grid: list[str], block: list[str], buffers: list[tuple[int, int]]):
        self.grid, self.block = grid, block
        self.buffers = buffers  # the kernel's buffers: (first, end address)
        self.seen: dict[tuple, dict[tuple, dict[int, bool]]] = {}
        self.arrays: dict[int, tuple[str, int, int]] = {}  # base -> (name, itemsize, size)
        # every array seen, held so that no other takes its addresses while the launch runs
        # (a thread's own array, freed, would otherwise come back as another thread's)
        self.held: dict[int, np.ndarray] = {}
        self.atomics: dict[tuple, tuple] = {}  # element -> its first atomic add's (who)

    def who(self, env) -> Who:
        if "#who" in env:  # a callee: its caller's
            return env["#who"]
        return (tuple(env[v] for v in self.grid), tuple(env.get(v, 0) for v in self.block),
                env.get("#phase", 0))

    def __call__(self, env, name: str, arr: np.ndarray, first: int, n: int,
                 write: bool, atomic: bool = False) -> None:
        block, thread, phase = self.who(env)
        base = arr.__array_interface__["data"][0]
        if base not in self.arrays:
            self.arrays[base] = (name, arr.itemsize, arr.size)
            self.held[base] = arr
        # a block's shared array is its own: another block's may reuse its addresses
        own = None if any(a <= base < b for a, b in self.buffers) else block
        if atomic:  # atomic adds race with no other, only with plain accesses
            for j in range(first, first + n):
                self.atomics.setdefault((own, base + j * arr.itemsize), (block, thread, phase))
            return
        for j in range(first, first + n):
            phases = self.seen.setdefault((own, base + j * arr.itemsize), {}).setdefault(
                (block, thread), {})
            phases[phase] = phases.get(phase, False) or write

    def races(self) -> list[tuple[int, tuple, tuple]]:
        """(address, access, access) of each element's first race, each access as (block,
        thread, phase, whether it writes)."""
        out = []
        for (own, addr), threads in self.seen.items():
            atomic = self.atomics.get((own, addr))
            if atomic is not None:  # a plain access beside atomic adds
                (block, thread), phases = next(iter(threads.items()))
                phase = next(iter(phases))
                out.append((addr, (*atomic, True), (block, thread, phase, phases[phase])))
                continue
            if len(threads) < 2:
                continue
            hit = _first_race(threads)
            if hit is not None:
                out.append((addr, *hit))
        return out


def _first_race(threads: dict[tuple, dict[int, bool]]):
    items = list(threads.items())
    for (a, pa), (b, pb) in itertools.combinations(items, 2):
        if not (any(pa.values()) or any(pb.values())):
            continue
        if a[0] != b[0]:  # two blocks: nothing orders them
            wa = next((p for p, w in pa.items() if w), None)
            if wa is not None:
                pb0 = next(iter(pb))
                return (*a, wa, True), (*b, pb0, pb[pb0])
            wb = next(p for p, w in pb.items() if w)  # the write first
            pa0 = next(iter(pa))
            return (*b, wb, True), (*a, pa0, pa[pa0])
        for phase in sorted(pa.keys() & pb.keys()):  # one block: the same phase
            if pa[phase] or pb[phase]:  # the write first
                first, second = ((a, pa), (b, pb)) if pa[phase] else ((b, pb), (a, pa))
                return (*first[0], phase, True), (*second[0], phase, second[1][phase])
    return None


def find_races(k: Kernel, *args) -> list[Race]:
    """The races of bound kernel `k` on `args` (as run_kernel takes them; outputs are
    written), each element's first; [] where none. The kernel runs launch by launch and
    block by block, each block's threads as the interpreter runs them."""
    bufs = {p.name: np.asarray(a).reshape(-1) for p, a in zip(k.params, args, strict=True)
            if isinstance(p, Buffer)}
    scalars = {p.name: a for p, a in zip(k.params, args, strict=True)
               if not isinstance(p, Buffer | Stream)}
    names = {arr.__array_interface__["data"][0]: (name, arr.itemsize, arr.size)
             for name, arr in bufs.items()}
    found: list[Race] = []
    for n, launch in enumerate(launches(k)):
        grid = [g.var for g in launch.grid]
        extents = [compile_expr(g.extent)(dict(scalars)) for g in launch.grid]
        block = Kernel(f"{k.name}_block", k.params, [*launch.prologue, launch.grid[-1].body[-1]])
        trace = _Trace(grid, [t.var for t in launch.block],
                       [(a, a + size * count) for a, (_, size, count) in names.items()])
        run = compiled(block)
        interpreter.TRACE = trace
        try:
            for coords in itertools.product(*(range(e) for e in extents)):
                run(bufs, {**scalars, **dict(zip(grid, coords)), "#streams": {}})
        finally:
            interpreter.TRACE = None
        for addr, a, b in trace.races():
            found.append(Race(n, *_element({**trace.arrays, **names}, addr), a, b))
    return found


def _element(arrays: dict, addr: int) -> tuple[str, int]:
    """The array and element at `addr`: a kernel buffer's name, else the name it was
    accessed by (a shared array, a callee's parameter)."""
    for base, (name, size, count) in arrays.items():
        if base <= addr < base + size * count:
            return name, (addr - base) // size
    return "?", addr
