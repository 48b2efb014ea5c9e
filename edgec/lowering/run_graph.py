"""`run_graph`: a graph after its pipeline run as its library runs it, each node's kernel
lowered for the target and run on the kernel interpreter, each value in an array of its own (no
memory plan needed); its control-flow nodes run through the ops' references."""

from __future__ import annotations

import numpy as np

from ..ir.interpreter import check_feeds, run_node
from ..kernel_ir.interpreter import run_kernel
from ..kernel_ir.program_interp import fresh_array
from .lower import CONTROL_OPS, lower_node


def run_graph(graph, feeds, target=None, kernels: set[str] | None = None) -> dict:
    """Run `graph` (after its pass pipeline) as its library runs it, on the interpreter: each
    node's kernel, lowered for `target` (c-generic if None), in order, each value in an array of
    its own. A node the memory plan makes a view of its input (Reshape and the like, when
    planned) reads that input's array reshaped, as the library reads the same bytes; control
    flow (If, Loop, Scan), which the library runs as C control flow, runs through the ops'
    references. `kernels`, if given, collects the ops whose kernels ran."""
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
            env[id(v)] = fresh_array(v)
        run_kernel(ln.kernel, *[array(v) for v in ln.bindings])
        if kernels is not None:
            kernels.add(node.op)
    return {v.name: array(v) for v in graph.outputs}
