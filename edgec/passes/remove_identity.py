"""Identity removal: ops that return their input unchanged are bypassed.

    Identity(x) = Dropout(x) (inference) = x
    Reshape/Flatten/Squeeze/Unsqueeze/Expand(x) = x          when the shape does not change
    Transpose(x, perm=[0, 1, ..., r-1]) = x;  Cast(x, to=dtype(x)) = x;  Pad(x, pads=0) = x
    x + 0 = 0 + x = x - 0 = x * 1 = 1 * x = x / 1 = x         when the constant broadcasts
                                                              to x's shape without growing it
    Concat(x) = x
"""

from __future__ import annotations

import numpy as np

from ..ir import Node, Value
from .manager import register_pass
from .rewrite import NoMatch, PatternPass, can_replace, constant, pattern, replace_value, require


def _keep(node: Node, value: Value | None) -> Value:
    """`value` may stand in for the node's output: same type, and output names survive."""
    require(value is not None, "the data input is omitted")
    out = node.outputs[0]
    require(value.type == out.type, f"output {out.type} differs from input {value.type}")
    require(can_replace(node.graph, out, value),
            f"%{out.name} is a graph output and %{value.name} a graph input or output")
    return value


def _bypass(graph, node, kept: Value) -> None:
    replace_value(graph, node.outputs[0], kept)


def _match_passthrough(node: Node) -> Value:
    outputs = node.graph.outputs
    require(all(not v.uses and not any(v is o for o in outputs) for v in node.outputs[1:]),
            "its mask output is used")
    if node.op == "Dropout" and node.input(2) is not None:
        require(not bool(np.any(constant(node.input(2), "training_mode"))),
                "training_mode is on")
    return _keep(node, node.inputs[0])


def _match_same_shape(node: Node) -> Value:
    return _keep(node, node.inputs[0])


def _match_transpose(node: Node) -> Value:
    rank = node.inputs[0].type.rank
    perm = node.attrs.get("perm") or list(reversed(range(rank)))
    require([p % rank for p in perm] == list(range(rank)), f"perm {list(perm)} moves axes")
    return _keep(node, node.inputs[0])


def _match_pad(node: Node) -> Value:
    require(not np.any(constant(node.input(1), "pads")), "pads are not all zero")
    return _keep(node, node.inputs[0])


# (neutral element, operand positions that may hold it)
_NEUTRAL = {"Add": (0, (0, 1)), "Sub": (0, (1,)), "Mul": (1, (0, 1)), "Div": (1, (1,))}


def _match_neutral(node: Node) -> Value:
    neutral, positions = _NEUTRAL[node.op]
    for i in positions:
        c = node.inputs[i].const
        if c is not None and c.size and np.all(c == neutral):
            try:
                return _keep(node, node.inputs[1 - i])
            except NoMatch:
                continue
    raise NoMatch(f"no operand in position {'/'.join(map(str, positions))} is a constant "
                  f"{neutral} that leaves the other operand's type unchanged")


def _match_concat(node: Node) -> Value:
    require(len(node.inputs) == 1, f"{len(node.inputs)} inputs are concatenated")
    return _keep(node, node.inputs[0])


_VIEWS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand")

IDENTITY_PATTERNS = [
    pattern(("Identity", "Dropout"), match=_match_passthrough, name="identity")(_bypass),
    pattern(_VIEWS, match=_match_same_shape, name="same-shape")(_bypass),
    pattern("Transpose", match=_match_transpose, name="identity-transpose")(_bypass),
    pattern(("Cast", "CastLike"), match=_match_same_shape, name="same-type-cast")(_bypass),
    pattern(("Add", "Sub", "Mul", "Div"), match=_match_neutral, name="neutral-operand")(_bypass),
    pattern("Pad", match=_match_pad, name="zero-pad")(_bypass),
    pattern("Concat", match=_match_concat, name="single-concat")(_bypass),
]

register_pass(PatternPass("remove-identity", IDENTITY_PATTERNS,
                          doc="Bypass ops that return their input unchanged."))
