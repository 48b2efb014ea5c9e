"""The kernel interpreter's threads of a block: one Python thread per thread of a block whose
body waits at barriers, meeting at each (kernel_interp.py runs everything else)."""

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
        barrier = _BlockBarrier(math.prod(dims))
        errors: list[BaseException] = []

        def thread(coords):
            own = {**env, **dict(zip(names, coords))}
            own["#bufs"] = dict(env["#bufs"])  # its own allocations; the shared arrays alike
            own["#barrier"] = barrier
            try:
                with np.errstate(all="ignore"):
                    body(own)
                barrier.leave()
            except BaseException as e:  # re-raised below, in the caller's thread
                errors.append(e)
                barrier.leave(failed=True)

        threads = [threading.Thread(target=thread, args=(c,))
                   for c in itertools.product(*(range(d) for d in dims))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        real = [e for e in errors if not isinstance(e, _Divergence)]
        if real:
            raise real[0]
        if errors:
            raise KernelError(f"the threads of block {', '.join(names)} did not all reach "
                              "the same barriers (a barrier on a path some threads skip)")

    return block


def wait_at_barrier(env) -> None:
    b = env.get("#barrier")
    if b is None:
        raise KernelError("a barrier outside the threads of a block loop")
    b.wait()
    env["#phase"] = env.get("#phase", 0) + 1  # the thread's barriers passed (races.py)
