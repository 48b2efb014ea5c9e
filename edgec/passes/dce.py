"""Dead code elimination: a node none of whose outputs is read (by a node or as a graph
output) is removed. Nodes are visited last to first, so a whole dead chain goes in one run.
"""

from __future__ import annotations

from ..ir import Graph
from .manager import register_pass


@register_pass("dce")
def dce(graph: Graph) -> bool:
    """Remove nodes whose outputs are unused and are not graph outputs."""
    outputs = {id(v) for v in graph.outputs}
    removed = False
    for node in reversed(list(graph.nodes)):
        if not any(v.uses or id(v) in outputs for v in node.outputs):
            graph.remove_node(node)
            removed = True
    return removed
