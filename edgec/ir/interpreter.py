"""The reference interpreter: runs each node's numpy reference in order.

It frees every value after its last use, and calls an optional `hook(node, outputs)` after each
node, so the same loop serves as oracle, calibration observer and numerics checker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..errors import EdgecError, ShapeError
from .dtypes import SUB_BYTE
from .graph import Graph, Node
from .onnx_dtypes import to_onnx
from .registry import get_op


def check_feeds(graph: Graph, feeds: Mapping[str, np.ndarray]) -> None:
    """Raise ShapeError unless `feeds` gives every input with its exact shape and dtype."""
    names = [v.name for v in graph.inputs]
    missing = [n for n in names if n not in feeds]
    extra = [n for n in feeds if n not in names]
    if missing or extra:
        raise ShapeError(f"model {graph.name} takes inputs {names}; "
                         f"missing {missing}, unknown {extra}")
    for v in graph.inputs:
        a = np.asarray(feeds[v.name])
        if tuple(a.shape) != v.shape or a.dtype != v.dtype.np:
            raise ShapeError(
                f"input '{v.name}' must be {v.dtype.np}{list(v.shape)}, "
                f"got {a.dtype}{list(a.shape)}")


def run_node(node: Node, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    attrs = node.attrs
    if node.op == "QuantizeLinear" and node.output.dtype in SUB_BYTE:
        # its reference takes the output type from the zero point's array, which holds an
        # int2 in an int8: the node's type says which range to saturate to
        attrs = attrs | {"output_dtype": to_onnx(node.output.dtype)}
    try:
        outs = get_op(node.op).run(inputs, attrs)
    except EdgecError:
        raise
    except Exception as e:
        raise EdgecError(f"reference of node {node.name} ({node.op}) failed: {e}") from e
    return [np.asarray(o, dtype=v.dtype.np).reshape(v.shape) for o, v in zip(outs, node.outputs)]


def interpret(graph: Graph, feeds: Mapping[str, np.ndarray],
              hook: Callable[[Node, list[np.ndarray]], None] | None = None,
              outer: Mapping[int, np.ndarray] | None = None,
              values: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Run `graph` on `feeds` ({input name: array}); returns {output name: array}. Where
    `values` is given, every value the run computes (the inputs too) is kept in it by name,
    as well as the outputs returned."""
    check_feeds(graph, feeds)
    env: dict[int, np.ndarray] = dict(outer or {})
    for v in graph.inputs:
        env[id(v)] = np.asarray(feeds[v.name])
        if values is not None:
            values[v.name] = env[id(v)]
    last_use: dict[int, int] = {}
    for i, n in enumerate(graph.nodes):
        for v in n.inputs:
            if v is not None:
                last_use[id(v)] = i
    keep = {id(v) for v in graph.outputs}
    for i, node in enumerate(graph.nodes):
        args = [None if v is None else (v.const if v.is_const else env[id(v)]) for v in node.inputs]
        outs = run_node(node, args)
        for v, o in zip(node.outputs, outs):
            env[id(v)] = o
            if values is not None:
                values[v.name] = o
        if hook is not None:
            hook(node, outs)
        for v in node.inputs:
            if v is not None and last_use.get(id(v)) == i and id(v) not in keep:
                env.pop(id(v), None)
    return {v.name: (v.const if v.is_const else env[id(v)]) for v in graph.outputs}
