"""Programs run kernel by kernel on the kernel interpreter (interpreter.py).

`run_program` runs a `Program` (program.py) as the library's NAME_run runs it: the same
launches, copies and control flow, on one byte array for the workspace, so the memory plan's
reuse of bytes, views and the regions of control-flow bodies are exercised as in C.
"""

from __future__ import annotations

import numpy as np

from ..errors import EdgecError
from ..ir.dtypes import DType
from .interpreter import KernelError, run_kernel
from .program import Branch, ExitUnless, Launch, Program, Ref, Repeat, SetScalar


def run_program(prog: Program, feeds: dict, launch=run_kernel) -> dict[str, np.ndarray]:
    """{output name: array} of `prog` run on `feeds` ({input name: array}); `launch` runs
    each kernel on its arrays (races.find_races to look for data races on the way)."""
    for v in prog.inputs:
        a = np.asarray(feeds.get(v.name))
        if a.dtype != v.dtype.np or a.size != v.type.numel:
            raise EdgecError(f"input '{v.name}' must be {v.dtype.np}{list(v.shape)}, "
                             f"got {a.dtype}{list(a.shape)}")
    # 0xff bytes: NaN in every float, so that a read before a write shows
    ws = np.full(prog.workspace_bytes, 0xFF, np.uint8)
    inputs = [np.array(feeds[v.name], order="C").reshape(-1) for v in prog.inputs]
    outputs = [np.full(v.type.numel, np.nan if v.dtype.is_float else 0, v.dtype.np)
               for v in prog.outputs]
    weights = {sym: np.array(v.const, order="C").reshape(-1) for sym, v in prog.weights}
    counters: dict[str, int] = {}

    def array(r: Ref) -> np.ndarray:
        dt = r.dtype.np
        if r.space == "input":
            a = inputs[r.where]
        elif r.space == "output":
            a = outputs[r.where]
        elif r.space == "weight":
            a = weights[r.where]
        elif r.space == "workspace":
            raw = ws[r.where:]
            a = raw[:raw.size // dt.itemsize * dt.itemsize].view(dt)
        else:
            a = np.zeros(0, dt)
        if a.dtype != dt:  # a view read as another type, as the C pointer cast reads it
            a = a.view(np.uint8)
            a = a[:a.size // dt.itemsize * dt.itemsize].view(dt)
        if r.step is not None:
            at = counters[r.step.var]
            a = a[(at if r.step.last is None else r.step.last - at) * r.step.per:]
        return a

    def run(ops: list) -> None:
        for op in ops:
            if isinstance(op, Launch):
                launch(op.kernel, *(array(r) for r in op.args))
            elif isinstance(op, Branch):
                run(op.then if array(op.cond)[0] else op.orelse)
            elif isinstance(op, Repeat):
                for i in range(op.count):
                    counters[op.var] = i
                    run(op.body)
            elif isinstance(op, SetScalar):
                value = counters[op.value] if isinstance(op.value, str) else op.value
                array(op.dst)[0] = value
            elif isinstance(op, ExitUnless):
                if not array(op.cond)[0]:
                    raise KernelError(f"{op.status}: a Loop ended before its trip count")
            else:
                raise ValueError(f"program interpreter: unknown op {type(op).__name__}")

    run(prog.body)
    return {v.name: o.reshape(v.shape) for v, o in zip(prog.outputs, outputs, strict=True)}


def fresh_array(v) -> np.ndarray:
    """Storage for a value a kernel writes, filled with NaN (90 for integers) so that an
    element the kernel forgets shows."""
    return np.full(v.shape, np.nan if v.dtype.is_float else v.dtype is not DType.BOOL and 90,
                   v.dtype.np)
