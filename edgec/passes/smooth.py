"""Activation smoothing for `quantize{smooth=ALPHA}` (SmoothQuant, Xiao et al., ICML 2023):
a MatMul's or Gemm's input X with a few channels of large magnitude (a transformer's
LayerNorm output) quantizes badly per tensor, its weight W per output channel well; moving a
per-channel scale from one to the other leaves the product unchanged,

    X W = (X diag(s)^-1) (diag(s) W),   s_j = max|X_j|^alpha / max|W_j|^(1 - alpha),

(max|X_j| over the calibration samples, max|W_j| over W's row j, the input channel) and
evens out X's channels at the cost of W's rows; alpha = 0.5 splits the range between them.

The 1/s goes into what produces X where it scales per channel: a LayerNormalization's scale
and bias, or the constant Mul (and Add after it) that ends a LayerNorm written out of
elementwise ops; elsewhere, only for an input whose largest channel is OUTLIER times its
median channel or more, into a Mul by 1/s inserted before the layer (a float op). Layers
that share an input share s (max|W_j| over all their rows). The float model computes the same
(up to rounding).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir import Graph, Node, Value
from ..ir.interpreter import interpret

OUTLIER = 8.0  # max over median of the channels' ranges that makes an input worth a Mul


def smooth(graph: Graph, feeds: list[dict], alpha: float,
           quantizable: Callable[[Node], bool]) -> list[dict]:
    """Smooth the inputs of `graph`'s constant-weight MatMuls and Gemms (those
    `quantizable`) on the samples `feeds`; a record per input smoothed."""
    groups: dict[int, list[Node]] = {}
    values: dict[int, Value] = {}
    for n in graph.nodes:
        if n.op in ("MatMul", "Gemm") and quantizable(n) and _rows(n) is not None:
            groups.setdefault(id(n.inputs[0]), []).append(n)
            values[id(n.inputs[0])] = n.inputs[0]
    if not groups:
        return []
    top = _channel_max(graph, feeds, values)
    done = []
    for key, layers in groups.items():
        x = values[key]
        ax = top[key]
        w = np.max([np.abs(_rows(n)).max(axis=1) for n in layers], axis=0)
        ok = (ax > 0) & (w > 0)
        s = np.where(ok, np.power(np.maximum(ax, 1e-30), alpha) /
                     np.power(np.maximum(w, 1e-30), 1 - alpha), 1.0)
        ratio = float(ax.max() / max(np.median(ax), 1e-30))
        how = _fold(graph, x, layers, 1 / s) if _reads_only(x, layers) else None
        if how is None:
            if ratio < OUTLIER:
                continue
            how = _insert_mul(graph, x, layers, 1 / s)
        for n in layers:
            _scale_rows(graph, n, s)
            n.meta["smoothed"] = True
        done.append({"input": x.name, "layers": [n.name for n in layers], "by": how,
                     "outlier_ratio": round(ratio, 2),
                     "range_before": round(float(ax.max()), 4),
                     "range_after": round(float((ax / s).max()), 4)})
    return done


def _rows(n: Node) -> np.ndarray | None:
    """`n`'s weight as [K, N]: a row per input channel (None: not a 2-D constant)."""
    w = n.inputs[1].const
    if w is None or w.ndim != 2:
        return None
    return w.T if n.op == "Gemm" and n.attrs.get("transB") else w


def _scale_rows(graph: Graph, n: Node, s: np.ndarray) -> None:
    w = n.inputs[1].const.astype(np.float64)
    w = w * s[None, :] if n.op == "Gemm" and n.attrs.get("transB") else w * s[:, None]
    graph.set_input(n, 1, graph.const(w.astype(np.float32), f"{n.inputs[1].name}_smoothed"))


def _reads_only(x: Value, layers: list[Node]) -> bool:
    return {id(u) for u in x.users()} <= {id(n) for n in layers}


def _per_channel(v: Value | None, k: int) -> bool:
    return v is not None and v.is_const and len(v.uses) == 1 and v.type.rank >= 1 and \
        v.shape[-1] == k and all(d == 1 for d in v.shape[:-1])


def _fold(graph: Graph, x: Value, layers: list[Node], inv: np.ndarray) -> str | None:
    """Fold the per-channel factor `inv` into what produces `x`; how, or None if it cannot."""
    p, k = x.producer, inv.size
    if p is None:
        return None
    if p.op == "LayerNormalization" and p.attrs.get("axis", -1) in (-1, x.type.rank - 1):
        consts = [i for i in (1, 2) if p.input(i) is not None]
        if all(_per_channel(p.inputs[i], k) or p.inputs[i].shape == (k,) for i in consts):
            for i in consts:
                _scale_const(graph, p, i, inv)
            return "layernorm"
        return None
    chain = []
    if p.op == "Add":  # y = u * gamma + beta
        c = _const_side(p, k)
        if c is None:
            return None
        chain.append((p, c))
        u = p.inputs[1 - c]
        p = u.producer if len(u.uses) == 1 else None
        if p is None or p.op != "Mul":
            return None
    if p.op == "Mul":
        c = _const_side(p, k)
        if c is None:
            return None
        chain.append((p, c))
        for node, i in chain:
            _scale_const(graph, node, i, inv)
        return "mul-add" if len(chain) == 2 else "mul"
    return None


def _const_side(n: Node, k: int) -> int | None:
    for i in (0, 1):
        if _per_channel(n.inputs[i], k) and not n.inputs[1 - i].is_const:
            return i
    return None


def _scale_const(graph: Graph, n: Node, i: int, inv: np.ndarray) -> None:
    c = n.inputs[i]
    new = (c.const.astype(np.float64) * inv).astype(c.const.dtype)
    graph.set_input(n, i, graph.const(new, f"{c.name}_smoothed"))


def _insert_mul(graph: Graph, x: Value, layers: list[Node], inv: np.ndarray) -> str:
    c = graph.const(inv.astype(np.float32), f"{x.name}_smooth")
    first = min(layers, key=graph.nodes.index)
    m = graph.add_node("Mul", [x, c], name=f"{x.name}_smooth_Mul", before=first)
    for n in layers:
        graph.set_input(n, 0, m.output)
    return "mul-inserted"


def _channel_max(graph: Graph, feeds: list[dict], values: dict[int, Value]
                 ) -> dict[int, np.ndarray]:
    """max |x_j| over the samples per last-axis channel of each of `values`."""
    top: dict[int, np.ndarray] = {}

    def see(key: int, a: np.ndarray) -> None:
        m = np.abs(np.asarray(a, np.float64)).reshape(-1, a.shape[-1]).max(axis=0)
        top[key] = np.maximum(top[key], m) if key in top else m

    def hook(node: Node, outs: list) -> None:
        for v, o in zip(node.outputs, outs):
            if id(v) in values:
                see(id(v), o)

    for feed in feeds:
        for v in graph.inputs:
            if id(v) in values:
                see(id(v), feed[v.name])
        interpret(graph, feed, hook=hook)
    return top
