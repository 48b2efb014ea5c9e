"""Graphs and programs run kernel by kernel on the kernel interpreter (`kernel_interp`).

`run_program` runs a `Program` (program.py) as the library's NAME_run runs it: the same
launches, copies and control flow, on one byte array for the workspace, so the memory plan's
reuse of bytes, views and the regions of control-flow bodies are exercised as in C.
`run_graph` runs a graph after its pipeline, each value in an array of its own (no memory
plan needed); its control-flow nodes run through the ops' references.
"""

from __future__ import annotations

import numpy as np

from ..errors import EdgecError
from ..ir.dtypes import DType
from .kernel_interp import KernelError, run_kernel
from .program import Branch, ExitUnless, Launch, Program, Ref, Repeat, SetScalar


def run_program(prog: Program, feeds: dict) -> dict[str, np.ndarray]:
    """{output name: array} of `prog` run on `feeds` ({input name: array})."""
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
                run_kernel(op.kernel, *(array(r) for r in op.args))
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


def _fresh_array(v) -> np.ndarray:
    """Storage for a value a kernel writes, filled with NaN (90 for integers) so that an
    element the kernel forgets shows."""
    return np.full(v.shape, np.nan if v.dtype.is_float else v.dtype is not DType.BOOL and 90,
                   v.dtype.np)


def run_graph(graph, feeds, target=None, kernels: set[str] | None = None) -> dict:
    """Run `graph` (after its pass pipeline) as its library runs it, on the interpreter: each
    node's kernel, lowered for `target` (c-generic if None), in order, each value in an array of
    its own. A node the memory plan makes a view of its input (Reshape and the like, when
    planned) reads that input's array reshaped, as the library reads the same bytes; control
    flow (If, Loop, Scan), which the library runs as C control flow, runs through the ops'
    references. `kernels`, if given, collects the ops whose kernels ran."""
    from ..ir.interpreter import check_feeds, run_node
    from .lowering import CONTROL_OPS, lower_node

    check_feeds(graph, feeds)
    plan = graph.record.memory_plan
    aliases = plan.aliases if plan is not None else {}
    # (not np.ascontiguousarray, which makes a 0-d array 1-d)
    env: dict[int, np.ndarray] = {id(v): np.array(feeds[v.name], order="C")
                                  for v in graph.inputs}
    by_name = {v.name: v for v in graph.values()}

    def array(v) -> np.ndarray:
        return np.array(v.const, order="C") if v.is_const else env[id(v)]

    for i, node in enumerate(graph.nodes):
        if node.op in CONTROL_OPS:
            outs = run_node(node, [None if v is None else array(v) for v in node.inputs])
            env.update({id(v): o for v, o in zip(node.outputs, outs)})
            continue
        if node.outputs and all(o.name in aliases for o in node.outputs):
            for o in node.outputs:
                root = array(by_name[aliases[o.name]])
                env[id(o)] = root.reshape(-1).view(o.dtype.np)[:o.type.numel].reshape(o.shape)
            continue
        ln = lower_node(node, i, target)
        for v in node.outputs:
            env[id(v)] = _fresh_array(v)
        run_kernel(ln.kernel, *[array(v) for v in ln.bindings])
        if kernels is not None:
            kernels.add(node.op)
    return {v.name: array(v) for v in graph.outputs}
