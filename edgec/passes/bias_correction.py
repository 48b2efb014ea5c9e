"""Bias correction for `quantize` (Nagel et al., "Data-Free Quantization Through Weight
Equalization and Bias Correction", ICCV 2019, section 4.2): weights W quantized to W_q shift
the expectation of a layer's output, per output channel, by

    E[W_q x] - E[W x] = (W_q - W) E[x]

(a convolution's E[x] per input channel, summed over the kernel window; borders ignored),
and that shift is taken off the bias. E[x] is measured on the calibration samples
(empirical: node.meta["input_mean"]) or, without samples, follows from the batch norm that
fold-batchnorm folded before the layer (data-free: its output is N(beta, gamma^2) per
channel, value.meta["batchnorm"]) through the Relu or Clip(a, b) between, as the mean of a
clipped normal (mu, sigma; alpha = (a - mu) / sigma, beta = (b - mu) / sigma):

    E[clip(y, a, b)] = a Phi(alpha) + mu (Phi(beta) - Phi(alpha))
                       + sigma (phi(alpha) - phi(beta)) + b (1 - Phi(beta)).

A layer with neither, or whose bias is not a constant per output channel (a MatMul has its
bias in the constant Add after it), keeps its bias.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node, Value


def input_axis(n: Node) -> int:
    """The channel axis of a Conv's, Gemm's or MatMul's input activations."""
    return 1 if n.op == "Conv" else -1


def channel_mean(n: Node, values: list[np.ndarray]) -> np.ndarray:
    """E[x] per input channel of `n` over `values` (its input on each sample)."""
    axis = input_axis(n)
    total, count = 0.0, 0
    for a in values:
        a = np.moveaxis(np.asarray(a, np.float64), axis, -1)
        total = total + a.reshape(-1, a.shape[-1]).sum(axis=0)
        count += a.size // a.shape[-1]
    return total / max(count, 1)


def expected_input(n: Node) -> np.ndarray | None:
    """E[x] per input channel of `n` from the batch norm before it (data-free), or None."""
    x = n.inputs[0]
    lo, hi, y = -np.inf, np.inf, x
    p = x.producer
    if p is not None and p.op == "Relu":
        lo, y = 0.0, p.inputs[0]
    elif p is not None and p.op == "Clip" and all(v is None or v.is_const
                                                   for v in p.inputs[1:]):
        lo = float(p.inputs[1].const) if p.input(1) is not None else -np.inf
        hi = float(p.inputs[2].const) if p.input(2) is not None else np.inf
        y = p.inputs[0]
    stats = y.meta.get("batchnorm")
    channels = x.shape[input_axis(n)]
    if stats is None or stats["mean"].size != channels:
        return None
    return clipped_normal_mean(stats["mean"], stats["std"], lo, hi)


def clipped_normal_mean(mu: np.ndarray, sigma: np.ndarray, lo: float, hi: float
                        ) -> np.ndarray:
    """E[clip(y, lo, hi)] for y ~ N(mu, sigma^2), elementwise (lo, hi may be infinite)."""
    mu = np.asarray(mu, np.float64)
    sigma = np.maximum(np.asarray(sigma, np.float64), 1e-12)
    cdf = np.vectorize(lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2))))
    pdf = np.vectorize(lambda z: math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
                       if np.isfinite(z) else 0.0)
    a, b = (lo - mu) / sigma, (hi - mu) / sigma
    out = mu * (cdf(b) - cdf(a)) + sigma * (pdf(a) - pdf(b))
    if np.isfinite(lo):
        out = out + lo * cdf(a)
    if np.isfinite(hi):
        out = out + hi * (1 - cdf(b))
    return out


def output_shift(n: Node, dw: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """(W_q - W) E[x] per output channel of the Conv, Gemm or MatMul `n`."""
    if n.op == "Conv":
        g = n.attrs["group"]
        cout, cin_g = dw.shape[:2]
        d = dw.reshape(g, cout // g, cin_g, -1).sum(axis=-1)
        return np.einsum("goc,gc->go", d, mean.reshape(g, cin_g)).reshape(cout)
    if n.op == "Gemm":
        return float(n.attrs["alpha"]) * (mean @ (dw.T if n.attrs["transB"] else dw))
    return mean @ dw


def correct_bias(graph: Graph, n: Node, w: np.ndarray, wq: np.ndarray) -> dict:
    """Take the shift that quantizing `n`'s weight `w` to `wq` causes off its bias; what was
    done, for the quantization record (the method, the largest shift removed)."""
    mean = n.meta.get("input_mean")
    kind = "empirical" if mean is not None else "data-free"
    if mean is None:
        mean = expected_input(n)
    target = _bias(n)
    if mean is None or target is None:
        return {"bias_correction": None}
    shift = output_shift(n, wq.astype(np.float64) - w.astype(np.float64), mean)
    node, i, old = target
    dtype = n.inputs[1].dtype.np
    if n.op == "Gemm":
        shift = shift / float(n.attrs["beta"])
    if old is None:
        new = -shift
    else:
        new = old.const.astype(np.float64) - shift.reshape(
            [1] * (old.type.rank - 1) + [-1] if old.type.rank else [-1])
    while len(node.inputs) <= i:
        node.inputs.append(None)
    graph.set_input(node, i, graph.const(new.astype(dtype), f"{n.name}_bias_corrected"))
    return {"bias_correction": kind, "bias_shift": round(float(np.abs(shift).max()), 6)}


def _bias(n: Node) -> tuple[Node, int, Value | None] | None:
    """(node, input index, constant or None) of the bias added to `n`'s output channels."""
    if n.op in ("Conv", "Gemm"):
        b = n.input(2)
        if b is None:
            return n, 2, None
        channels = n.output.shape[1]
        ok = b.is_const and len(b.uses) == 1 and (b.type.rank == 0 or b.shape[-1] in
                                                   (1, channels))
        return (n, 2, b) if ok else None
    users = n.output.users()
    if len(n.output.uses) != 1 or users[0].op != "Add":
        return None
    add = users[0]
    i = 1 if add.inputs[0] is n.output else 0
    c = add.inputs[i]
    channels = n.output.shape[-1]
    ok = c is not None and c.is_const and len(c.uses) == 1 and c.type.rank >= 1 and \
        c.shape[-1] == channels and all(d == 1 for d in c.shape[:-1])
    return (add, i, c) if ok else None
