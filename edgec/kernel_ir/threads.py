"""The kernel interpreter's threads of a block: one Python thread per thread of a block whose
body waits at barriers or exchanges values within a warp, meeting at each barrier, and with
the other threads of its warp at each `shfl_xor` and `Mma` (kernel_interp.py runs everything
else)."""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable

import numpy as np

from ..errors import KernelError
from .kernel import Loop
from .passes import thread_nest


class _Divergence(Exception):
    pass


class _BlockBarrier:
    """The barrier of `n` threads that also knows when one has left the block: a thread
    that waits after another finished, or that waits while another finishes, waits for a
    barrier some thread skipped (a CUDA program's undefined behaviour), which both of them
    are told at once instead of hanging."""

    def __init__(self, n: int):
        self.n, self.arrived, self.generation, self.broken = n, 0, 0, False
        self.finished = 0
        self.cond = threading.Condition()

    def wait(self) -> None:
        with self.cond:
            if self.finished or self.broken:
                self._break()
            self.arrived += 1
            if self.arrived == self.n:
                self.arrived, self.generation = 0, self.generation + 1
                self.cond.notify_all()
                return
            gen = self.generation
            while gen == self.generation and not self.broken:
                self.cond.wait()
            if self.broken:
                raise _Divergence()

    def leave(self, failed: bool = False) -> None:
        with self.cond:
            self.finished += 1
            if self.arrived or failed:
                self.broken = True
                self.cond.notify_all()

    def _break(self):
        self.broken = True
        self.cond.notify_all()
        raise _Divergence()


WARP = 32  # threads of a warp: consecutive in the block's linear order (x fastest)


class _Warp:
    """The exchange of one warp's threads: each `shfl_xor` deposits its thread's value, waits
    for the warp, and reads its partner's; a partner past the block's threads is an error (on
    a GPU, an inactive lane: undefined)."""

    def __init__(self, n: int):
        self.barrier = _BlockBarrier(n)
        self.slots: dict[tuple[int, int], object] = {}

    def lane(self, lane: int) -> _Lane:
        return _Lane(self, lane)


class _Lane:
    def __init__(self, warp: _Warp, lane: int):
        self.warp, self.index, self.count = warp, lane, 0

    @property
    def size(self) -> int:
        """The threads of this lane's warp."""
        return self.warp.barrier.n

    def _meet(self, value) -> int:
        """Deposit `value` for this round of the warp's exchanges and wait for the others;
        returns the round. (Past the meeting every lane has read the round before: its own
        value of that round is dropped.)"""
        k, self.count = self.count, self.count + 1
        self.warp.slots[(k, self.index)] = value
        self.warp.barrier.wait()
        self.warp.slots.pop((k - 1, self.index), None)
        return k

    def gather(self, value) -> list:
        """Every lane's `value`, in lane order (a tensor core's pooling of fragments)."""
        k = self._meet(value)
        return [self.warp.slots[(k, i)] for i in range(self.size)]

    def exchange(self, value, mask: int):
        k = self._meet(value)
        partner = self.index ^ mask
        if (k, partner) not in self.warp.slots:
            raise KernelError(f"shfl_xor from lane {self.index} reads lane {partner}, which "
                              "is past the block's threads (an inactive lane)")
        return self.warp.slots[(k, partner)]

    def leave(self, failed: bool = False) -> None:
        self.warp.barrier.leave(failed)


def threaded_block(s: Loop, compile_block: Callable, compile_expr: Callable) -> Callable:
    """The threads of a block (its directly nested block loops), one Python thread each,
    meeting at every Barrier of their body; `compile_block` and `compile_expr` are the
    interpreter's."""
    nest, inner = thread_nest(s)
    names = [t.var for t in nest]
    extents = [compile_expr(t.extent) for t in nest]
    body = compile_block(inner)

    def block(env):
        dims = [e(env) for e in extents]
        total = math.prod(dims)
        barrier = _BlockBarrier(total)
        warps = [_Warp(min(WARP, total - w)) for w in range(0, total, WARP)]
        errors: list[BaseException] = []

        def thread(linear, coords):
            own = {**env, **dict(zip(names, coords))}
            own["#bufs"] = dict(env["#bufs"])  # its own allocations; the shared arrays alike
            own["#barrier"] = barrier
            lane = own["#warp"] = warps[linear // WARP].lane(linear % WARP)
            try:
                with np.errstate(all="ignore"):
                    body(own)
                barrier.leave()
                lane.leave()
            except BaseException as e:  # re-raised below, in the caller's thread
                errors.append(e)
                barrier.leave(failed=True)
                lane.leave(failed=True)

        threads = [threading.Thread(target=thread, args=(i, c)) for i, c in
                   enumerate(itertools.product(*(range(d) for d in dims)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        real = [e for e in errors if not isinstance(e, _Divergence)]
        if real:
            raise real[0]
        if errors:
            raise KernelError(f"the threads of block {', '.join(names)} did not all reach "
                              "the same barriers or warp exchanges (one on a path some "
                              "threads skip)")

    return block


def wait_at_barrier(env) -> None:
    b = env.get("#barrier")
    if b is None:
        raise KernelError("a barrier outside the threads of a block loop")
    b.wait()
    env["#phase"] = env.get("#phase", 0) + 1  # the thread's barriers passed (races.py)
