"""Canonicalization: constant folding, identity removal and dead code elimination, repeated
until none of them changes the graph (each can expose work for the others: a removed
Identity makes a node's inputs constant, a fold leaves its inputs' producers dead).
"""

from __future__ import annotations

from ..errors import PassError
from ..ir import Graph
from .dce import dce
from .fold_constants import fold_constants
from .manager import make_pass, register_pass


@register_pass("canonicalize")
def canonicalize(graph: Graph, *, max_iterations: int = 16) -> bool:
    """fold-constants, remove-identity and dce, repeated to a fixed point."""
    remove_identity = make_pass("remove-identity")
    changed = False
    for _ in range(max_iterations):
        step = fold_constants(graph)
        step |= remove_identity.run(graph)
        step |= dce(graph)
        if not step:
            return changed
        changed = True
    raise PassError(f"canonicalize still changes the graph after {max_iterations} rounds")
