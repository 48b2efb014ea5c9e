"""Fusion of a convolution or matrix product with its epilogue into one kernel node:

    act(Conv(X, W, B) + b + Z)  ->  FusedConv(X, W, B + b, Z) {activation}
    act(A @ B + b + Z)          ->  FusedMatMul(A, B, b, Z) {activation}
    Gemm(A, B, C) {alpha=1, transA=0} = A @ B' + beta*C  ->  FusedMatMul(A, B', beta*C)

b is a constant per output channel (Conv: broadcastable as [1,M,1,1]; MatMul: as [N] on the
last axis), Z a residual of the output's shape, act one of `ACTIVATIONS`. Each step absorbs
one Add or activation whose input is the op's only use, so chains grow one node at a time and
the order of bias and residual adds does not matter (addition commutes); nothing is absorbed
after the activation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node, Value
from ..ir.encodings import carry_codes
from ..ir.ops.fused import ACTIVATION_PARAMS
from .manager import register_pass
from .rewrite import (
    NoMatch,
    PatternPass,
    constant,
    pattern,
    producer,
    replace_value,
    require,
    sole_user,
)

_FUSED = {"Conv": "FusedConv", "FusedConv": "FusedConv",
          "MatMul": "FusedMatMul", "FusedMatMul": "FusedMatMul"}


@dataclass
class Fused:
    """A fused node under construction: op, inputs [x, w, bias, z] and attributes."""

    op: str
    inputs: list[Value | None]
    attrs: dict

    @property
    def bias(self) -> Value | None:
        return self.inputs[2]


def _as_fused(node: Node) -> Fused:
    """The fused form of a Conv/MatMul (nothing absorbed yet) or of a fused node."""
    ins = list(node.inputs) + [None] * (4 - len(node.inputs))
    attrs = dict(node.attrs)
    if node.op in ("Conv", "MatMul"):
        attrs.update(activation="", activation_params=[])
    return Fused(_FUSED[node.op], ins, attrs)


def _base(value: Value) -> tuple[Node, Fused]:
    """The conv/matmul computing `value`, if it can still absorb an epilogue step."""
    node = producer(value, *_FUSED)
    sole_user(value)
    require(value.dtype.is_float, f"%{value.name} is {value.dtype}, not a float")
    fused = _as_fused(node)
    require(fused.attrs["activation"] == "",
            f"{node.name} already ends in {fused.attrs['activation']}")
    return node, fused


def _emit(graph: Graph, anchor: Node, fused: Fused, base: Node) -> None:
    ins = list(fused.inputs)
    while ins and ins[-1] is None:
        ins.pop()
    new = graph.add_node(fused.op, ins, fused.attrs, name=fused.op.lower(), before=anchor)
    fresh = new.name
    replace_value(graph, anchor.output, new.output)
    # unless the node name came with the value, keep the model's name of the conv, which
    # goes with the anchor (its only user) right after this
    if new.name == fresh and base.name != base.output.name:
        new.name = base.name


def _per_channel(c: np.ndarray, out: Value, op: str) -> np.ndarray:
    """`c` as a vector over the output channels, if it broadcasts along channels only."""
    axis = 1 if op == "FusedConv" else out.type.rank - 1
    require(c.ndim <= out.type.rank, f"constant of rank {c.ndim} > output rank")
    shape = (1,) * (out.type.rank - c.ndim) + c.shape
    channels = out.shape[axis]
    require(all(d == 1 for i, d in enumerate(shape) if i != axis) and
            shape[axis] in (1, channels),
            f"constant {list(c.shape)} is not per-channel for output {out.type}")
    return np.broadcast_to(c.reshape(-1), (channels,)).astype(out.dtype.np)


# -- bias: Add(y, c), Add(c, y), Sub(y, c) ------------------------------------------------


def _match_bias(node: Node):
    sides = (0, 1) if node.op == "Add" else (0,)
    reasons = []
    for i in sides:
        try:
            base, fused = _base(node.inputs[i])
            c = constant(node.inputs[1 - i], "the other operand")
            require(node.output.type == base.output.type, "the add broadcasts the output")
            b = _per_channel(c, base.output, fused.op)
            if node.op == "Sub":
                b = -b
            if fused.bias is not None:
                b = constant(fused.bias, "the existing bias") + b
            return base, fused, b
        except NoMatch as e:
            reasons.append(e.reason)
    return "; ".join(reasons)


def _fuse_bias(graph: Graph, node: Node, m) -> None:
    base, fused, b = m
    fused.inputs[2] = graph.const(b, name=f"{base.name}_bias")
    _emit(graph, node, fused, base)


# -- residual: Add(y, z) with z of y's type -----------------------------------------------


def _match_residual(node: Node):
    found, reasons = [], []
    for i in (0, 1):
        try:
            base, fused = _base(node.inputs[i])
            require(fused.inputs[3] is None, f"{base.name} already adds a residual")
            z = node.inputs[1 - i]
            require(z.type == base.output.type == node.output.type,
                    f"residual {z.type} is not of the output's type {base.output.type}")
            found.append((base, fused, z))
        except NoMatch as e:
            reasons.append(e.reason)
    if not found:
        return "; ".join(reasons)
    # of two candidates, absorb into the later one: the other is then computed already
    order = {n: k for k, n in enumerate(node.graph.nodes)}
    return max(found, key=lambda m: order[m[0]])


def _fuse_residual(graph: Graph, node: Node, m) -> None:
    base, fused, z = m
    fused.inputs[3] = z
    _emit(graph, node, fused, base)


# -- activation ---------------------------------------------------------------------------


def _scalar(node: Node, i: int, default: float) -> float:
    if node.input(i) is None:
        return default
    c = constant(node.input(i), f"Clip's {'min' if i == 1 else 'max'}")
    require(c.size == 1, "Clip bound is not a scalar")
    return float(c.reshape(-1)[0])


def _activation_params(node: Node) -> list[float]:
    if node.op == "Clip":
        return [_scalar(node, 1, -np.inf), _scalar(node, 2, np.inf)]
    return [float(node.attrs[k]) for k in ACTIVATION_PARAMS[node.op]]


def _match_activation(node: Node):
    base, fused = _base(node.inputs[0])
    require(node.output.type == base.output.type, "the activation changes the type")
    return base, fused, _activation_params(node)


def _fuse_activation(graph: Graph, node: Node, m) -> None:
    base, fused, params = m
    fused.attrs.update(activation=node.op, activation_params=params)
    _emit(graph, node, fused, base)


# -- Gemm -> FusedMatMul ------------------------------------------------------------------


def _match_gemm(node: Node):
    b, c = node.inputs[1], node.input(2)
    at = node.attrs
    require(at["alpha"] == 1.0, f"alpha is {at['alpha']}, not 1")
    require(at["transA"] == 0, "A is transposed")
    require(node.output.dtype.is_float, "not a float Gemm")
    if at["transB"]:
        constant(b, "B (transposed)")
    m, n = node.output.shape
    bias = z = None
    if c is not None:
        if c.is_const:
            cc = c.const.astype(node.output.dtype.np) * node.output.dtype.np.type(at["beta"])
            shape = (1,) * (2 - cc.ndim) + cc.shape
            if shape[0] == 1:
                bias = np.broadcast_to(cc.reshape(-1), (n,))
            else:
                z = np.broadcast_to(cc.reshape(shape), (m, n))
        else:
            require(at["beta"] == 1.0 and c.shape == (m, n),
                    "C is computed at run time and is not a plain [M, N] residual")
            z = c
    return bias, z


def _fuse_gemm(graph: Graph, node: Node, m) -> None:
    bias, z = m
    b = node.inputs[1]
    if node.attrs["transB"]:
        src, b = b, graph.const(np.ascontiguousarray(b.const.T), name=f"{b.name}_t")
        carry_codes(src, b, lambda w: w.T, 1)  # int8 codes, one scale per column of B
    ins = [node.inputs[0], b,
           None if bias is None else graph.const(bias, name=f"{node.name}_bias"),
           graph.const(z, name=f"{node.name}_c") if isinstance(z, np.ndarray) else z]
    _emit(graph, node, Fused("FusedMatMul", ins, {"activation": "", "activation_params": []}),
          node)


FUSE_PATTERNS = [
    pattern("Gemm", match=_match_gemm, name="gemm-to-matmul")(_fuse_gemm),
    pattern(("Add", "Sub"), match=_match_bias, name="bias")(_fuse_bias),
    pattern("Add", match=_match_residual, name="residual")(_fuse_residual),
    pattern(tuple(a for a in ACTIVATION_PARAMS if a), match=_match_activation,
            name="activation")(_fuse_activation),
]

register_pass(PatternPass("fuse", FUSE_PATTERNS,
                          doc="Fuse conv/matmul with bias, residual and activation."))
