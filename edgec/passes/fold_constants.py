"""Constant folding: a node whose inputs are all constants is evaluated once, at compile
time, with its op's numpy reference (the interpreter's `run_node`), and its outputs become
constants. Shape needs only its input's static type, so it folds whatever computes that input.
Outputs above `max_elements` elements are left to run time.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, get_op
from ..ir.interpreter import run_node
from .manager import register_pass
from .rewrite import erase_dead, replace_value

# ops whose result depends only on their input's (static) type, not its values
_TYPE_ONLY = {"Shape", "Size"}


def _arg(v):
    if v is None or v.is_const:
        return None if v is None else v.const
    # a type-only op's input: a zero-stride array of the right shape and dtype, no storage
    return np.broadcast_to(np.zeros((), v.dtype.np), v.shape)


def _foldable(node, max_elements: int, keep_dequantize: bool) -> bool:
    if node.op not in _TYPE_ONLY and any(v is not None and not v.is_const for v in node.inputs):
        return False
    if any(o.type.numel > max_elements for o in node.outputs):
        return False
    # subgraph attributes may read values of the enclosing graph at run time
    if any(a.kind in ("graph", "graphs") for a in get_op(node.op).attrs.values()):
        return False
    # a dequantized integer weight is the quantized model's storage format: keep it
    if keep_dequantize and node.op == "DequantizeLinear" and not node.inputs[0].dtype.is_float:
        return False
    return "random" not in get_op(node.op).traits


@register_pass("fold-constants")
def fold_constants(graph: Graph, *, max_elements: int = 1 << 24,
                   keep_dequantize: bool = True) -> bool:
    """Evaluate nodes whose inputs are all constants and replace them by constants."""
    changed = False
    for node in list(graph.nodes):
        if node.graph is not graph or not _foldable(node, max_elements, keep_dequantize):
            continue
        arrays = run_node(node, [_arg(v) for v in node.inputs])
        for out, arr in zip(node.outputs, arrays, strict=True):
            replace_value(graph, out, graph.const(arr, name=out.name, dtype=out.dtype))
        erase_dead(graph, [node])
        changed = True
    return changed
