"""Cross-layer equalization (Nagel et al., "Data-Free Quantization Through Weight Equalization
and Bias Correction", ICCV 2019): balance the weight ranges of consecutive layers before
quantization, without changing what the float model computes.

For y = W1 x + b1 and z = W2 f(y), f positively homogeneous per channel (f(s y) = s f(y) for
s > 0: Relu, LeakyRelu, PRelu, MaxPool, or none), channel i of y scaled by 1/s_i (W1's output
channel i and b1_i by 1/s_i, and a constant added per channel on the way) and W2's input
channel i by s_i leave z unchanged. With r1_i = max |W1[i]| and r2_i = max |W2[:, i]|,

    s_i = sqrt(r1_i * r2_i) / r2_i,

after which both ranges are sqrt(r1_i * r2_i). W1's bias (and a constant added per channel
on the way) counts in r1_i as one more weight of its channel, on an input of 1: a channel
whose output is mostly its bias (a dead filter after a batch norm) would otherwise be scaled
up by 1/s_i, and its activation's range with it, for every channel of that uint8 tensor to
share (the paper moves such biases into the next layer instead, "high bias absorption",
which needs the batch norms' statistics).

A depthwise convolution between two layers is the second layer of one pair and the first
of the next (its channel i reads input channel i and writes output channel i), as the paper
does for MobileNet's inverted residuals. The pairs of a chain are equalized in turn until no
scale moves by more than `tol` (at most `iters` sweeps), in float64, and each changed weight
is rounded once. Channels whose range is 0 in either layer keep s_i = 1. The batch-norm
statistics that fold-batchnorm left on a value (value.meta["batchnorm"], the per-channel
mean and std of a folded layer's output) scale with it, for the data-free bias correction of
`quantize`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node, Value
from .manager import register_pass

# ops per channel with f(s y) = s f(y) for s > 0: scaling a channel passes through them
HOMOGENEOUS = ("Relu", "LeakyRelu", "PRelu", "MaxPool", "Identity")


@dataclass
class _Pair:
    first: Node
    second: Node
    biases: list[tuple[Value, int]]  # constants scaled with the first's outputs (channel axis)
    stats: list[Value]  # values whose meta["batchnorm"] scales with them
    scale: np.ndarray | None = None  # the product of the sweeps' s


@dataclass(frozen=True)
class Equalize:
    """Balance the weight ranges of consecutive layers (cross-layer equalization)."""

    iters: int = 20
    tol: float = 1e-4

    def run(self, graph: Graph) -> bool:
        return bool(equalize(graph, self.iters, self.tol))


register_pass("equalize")(Equalize)


def equalize(graph: Graph, iters: int = 20, tol: float = 1e-4) -> list[dict]:
    """Equalize every pair of consecutive layers of `graph` in place; a record per pair
    (first, second, the least and largest s)."""
    pairs = [p for n in graph.nodes if (p := _pair(graph, n)) is not None]
    if not pairs:
        return []
    arrays: dict[int, np.ndarray] = {}  # id(value) -> its float64 array, scaled so far
    for p in pairs:
        for v in [p.first.inputs[1], p.second.inputs[1], *(b for b, _ in p.biases)]:
            arrays.setdefault(id(v), v.const.astype(np.float64))
    for _ in range(iters):
        moved = 0.0
        for p in pairs:
            w1, w2 = arrays[id(p.first.inputs[1])], arrays[id(p.second.inputs[1])]
            r1 = _out_ranges(p.first, w1)
            for bias, axis in p.biases:
                r1 = np.maximum(r1, np.abs(np.moveaxis(arrays[id(bias)], axis, -1))
                                .reshape(-1, r1.size).max(axis=0))
            r2 = _in_ranges(p.second, w2)
            ok = (r1 > 0) & (r2 > 0)
            s = np.where(ok, np.sqrt(np.where(ok, r1 * r2, 1.0)) / np.where(ok, r2, 1.0), 1.0)
            arrays[id(p.first.inputs[1])] = _scale_out(p.first, w1, 1 / s)
            arrays[id(p.second.inputs[1])] = _scale_in(p.second, w2, s)
            for b, axis in p.biases:
                arrays[id(b)] = arrays[id(b)] / _along(s, axis, arrays[id(b)].ndim)
            p.scale = s if p.scale is None else p.scale * s
            moved = max(moved, float(np.abs(np.log(s)).max()))
        if moved < tol:
            break
    uses = {id(v): (v, v.uses[0]) for p in pairs  # each a constant read once (_layer)
            for v in [p.first.inputs[1], p.second.inputs[1], *(b for b, _ in p.biases)]}
    for v, (node, i) in uses.values():
        graph.set_input(node, i, graph.const(arrays[id(v)].astype(v.dtype.np), f"{v.name}_eq"))
    for p in pairs:
        for v in p.stats:
            st = v.meta["batchnorm"]
            v.meta["batchnorm"] = {"mean": st["mean"] / p.scale, "std": st["std"] / p.scale}
        p.first.meta["equalized"] = p.second.meta["equalized"] = True
    return [{"first": p.first.name, "second": p.second.name,
             "scale_min": float(p.scale.min()), "scale_max": float(p.scale.max())}
            for p in pairs]


# -- what pairs --------------------------------------------------------------------------

def _layer(n: Node) -> bool:
    """A Conv, Gemm (A not transposed) or MatMul with a constant weight read only by it, and
    a constant bias (or none) read only by it."""
    if n.op not in ("Conv", "Gemm", "MatMul") or len(n.inputs) < 2:
        return False
    w = n.inputs[1]
    if w is None or not w.is_const or len(w.uses) != 1 or not w.dtype.is_float:
        return False
    if n.op == "Conv":
        ok = n.inputs[0].type.rank >= 3
    elif n.op == "Gemm":
        ok = not n.attrs["transA"]
    else:
        ok = w.type.rank == 2
    b = n.input(2)
    return ok and (b is None or (b.is_const and len(b.uses) == 1))


def _channel_axis(n: Node) -> int:
    """The channel axis of the layer's activations, from the end (-rank + 1 for Conv's NC...)."""
    return -(n.output.type.rank - 1) if n.op == "Conv" else -1


def _pair(graph: Graph, n: Node) -> _Pair | None:
    """The layer that reads `n`'s output through per-channel homogeneous ops (and constant
    additions per channel) alone, with the channel axes matching; else None."""
    if not _layer(n):
        return None
    axis = _channel_axis(n)
    channels = n.output.shape[axis]
    biases: list[tuple[Value, int]] = []
    if n.input(2) is not None:
        b = n.input(2)
        if b.type.rank not in (1, 2) or b.shape[-1] != channels:
            return None
        biases.append((b, -1))
    stats = []
    v = n.output
    while True:
        if any(o is v for o in graph.outputs) or len(v.uses) != 1:
            return None
        if "batchnorm" in v.meta:
            stats.append(v)
        u, i = v.uses[0]
        if u.op in HOMOGENEOUS and i == 0 and (u.op != "MaxPool" or n.op == "Conv") and \
                not any(o.uses or any(o is g for g in graph.outputs) for o in u.outputs[1:]):
            if u.op == "PRelu" and not u.inputs[1].is_const:
                return None
            v = u.outputs[0]
            continue
        if u.op == "Add" and u.inputs[1 - i] is not None and u.inputs[1 - i].is_const:
            c = u.inputs[1 - i]
            if not _per_channel_const(c, axis, channels) or len(c.uses) != 1:
                return None
            biases.append((c, axis))
            v = u.output
            continue
        ok = _layer(u) and i == 0 and (u.op == "Conv") == (n.op == "Conv") and \
            _channel_axis(u) == axis
        return _Pair(n, u, biases, stats) if ok else None


def _per_channel_const(c: Value, axis: int, channels: int) -> bool:
    """A constant that adds one number per channel (channels along `axis`, from the end)."""
    shape = c.shape
    if len(shape) < -axis:
        return False
    return shape[axis] == channels and all(d == 1 for k, d in enumerate(shape)
                                           if k != len(shape) + axis)


# -- ranges and scaling ------------------------------------------------------------------

def _out_axis(n: Node) -> int:
    if n.op == "Conv":
        return 0
    if n.op == "Gemm":
        return 0 if n.attrs["transB"] else 1
    return 1


def _along(s: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = s.size
    return s.reshape(shape)


def _out_ranges(n: Node, w: np.ndarray) -> np.ndarray:
    a = _out_axis(n)
    return np.abs(w).max(axis=tuple(k for k in range(w.ndim) if k != a))


def _scale_out(n: Node, w: np.ndarray, s: np.ndarray) -> np.ndarray:
    return w * _along(s, _out_axis(n), w.ndim)


def _grouped(n: Node, w: np.ndarray) -> np.ndarray:
    """A Conv weight [Cout, Cin/g, k...] as [g, Cout/g, Cin/g, k...]."""
    g = n.attrs["group"]
    return w.reshape(g, w.shape[0] // g, *w.shape[1:])


def _in_ranges(n: Node, w: np.ndarray) -> np.ndarray:
    """max |w| over the weights that read each input channel."""
    if n.op == "Conv":
        a = np.abs(_grouped(n, w))
        return a.reshape(*a.shape[:3], -1).max(axis=(1, 3)).reshape(-1)
    return np.abs(w).max(axis=_out_axis(n))


def _scale_in(n: Node, w: np.ndarray, s: np.ndarray) -> np.ndarray:
    if n.op == "Conv":
        g = _grouped(n, w)
        shape = [g.shape[0], 1, g.shape[2]] + [1] * (g.ndim - 3)
        return (g * s.reshape(shape)).reshape(w.shape)
    return w * _along(s, 1 - _out_axis(n), 2)
