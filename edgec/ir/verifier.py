"""`verify(graph)`: the invariants every pass must keep.

SSA (each value defined once, before its uses), use-def links that match the inputs, ops known
to the registry with valid attributes, output types equal to what inference gives, and graph
outputs that are defined.
"""

from __future__ import annotations

from ..errors import VerificationError
from .graph import Graph
from .registry import get_op


def verify(graph: Graph, outer: set[int] | None = None) -> None:
    """Raise VerificationError naming the first broken invariant."""
    defined: set[int] = set(outer or ())
    names: dict[str, str] = {}

    def define(v, what):
        if id(v) in defined:
            raise VerificationError(f"value %{v.name} is defined twice ({what})")
        if v.name in names:
            raise VerificationError(f"value name %{v.name} is used by two values")
        names[v.name] = what
        defined.add(id(v))

    for v in graph.inputs:
        if v.is_const or v.producer is not None:
            raise VerificationError(f"graph input %{v.name} must not be a constant or produced")
        define(v, "graph input")
    for c in graph.constants():
        if c.producer is not None:
            raise VerificationError(f"constant %{c.name} has a producer")
        if tuple(c.const.shape) != c.shape or c.const.dtype != c.dtype.np:
            raise VerificationError(
                f"constant %{c.name}: array {c.const.dtype}{list(c.const.shape)} "
                f"does not match its type {c.type}")
        define(c, "constant")

    for node in graph.nodes:
        where = f"node {node.name} ({node.op})"
        if node.graph is not graph:
            raise VerificationError(f"{where} does not belong to graph {graph.name}")
        opdef = get_op(node.op)
        for i, v in enumerate(node.inputs):
            if v is None:
                continue
            if id(v) not in defined:
                raise VerificationError(f"{where} reads %{v.name} before it is defined")
            if (node, i) not in v.uses:
                raise VerificationError(f"{where}: use-def link of input {i} (%{v.name}) missing")
        attrs = opdef.complete_attrs(node.attrs, where=where)
        for key, spec in opdef.attrs.items():
            if spec.kind == "graph":  # subgraphs are closed: verified on their own
                verify(node.attrs[key])
        if attrs.keys() != node.attrs.keys():
            raise VerificationError(f"{where}: attributes not completed with their defaults")
        expected = opdef.infer_types(node.inputs, node.attrs, where=where)
        lo, hi = opdef.num_outputs
        if lo <= len(node.outputs) < len(expected) == hi:  # trailing optional outputs left off
            expected = expected[:len(node.outputs)]
        if len(expected) != len(node.outputs):
            raise VerificationError(
                f"{where} has {len(node.outputs)} outputs; inference gives {len(expected)}")
        for v, t in zip(node.outputs, expected):
            if v.type != t:
                raise VerificationError(
                    f"{where}: output %{v.name} is {v.type}, inference gives {t}")
            if v.producer is not node:
                raise VerificationError(f"{where}: output %{v.name} has a wrong producer link")
            define(v, where)
        for v in node.outputs:
            for user, i in v.uses:
                if user.graph is not graph and user.graph is not None:
                    continue
                if user.inputs[i] is not v:
                    raise VerificationError(f"%{v.name}: stale use by {user.name} input {i}")
    for v in graph.outputs:
        if id(v) not in defined:
            raise VerificationError(f"graph output %{v.name} is not defined")
