"""AdaRound for `quantize{adaround=1}` (Nagel et al., "Up or Down? Adaptive Rounding for
Post-Training Quantization", ICML 2020): each weight of a layer rounded up or down, whichever
keeps the layer's output on the calibration samples closest to float, instead of to the
nearest level.

With the scale s of each output channel fixed (calibration.py weight_params), the weight is
W~ = s clip(floor(W / s) + h(V), -qmax, qmax), h the rectified sigmoid

    h(V) = clip(sigmoid(V) (zeta - gamma) + gamma, 0, 1),   zeta = 1.1, gamma = -0.1,

and V minimises, by Adam, the layer's output error over its input columns X (the float
input on the samples, a subsample of the pixels; a grouped convolution per group) plus a
regulariser that drives every h to 0 or 1 as beta anneals from 20 to 2:

    ||W X - W~ X||^2 / ||W X - W_rtn X||^2 + lam sum_ij (1 - |2 h(V_ij) - 1|^beta) / size.

The error is a quadratic form in dW = W~ - W with G = X X^T, tr(dW G dW^T), so an iteration
costs a (Cout x K) by (K x K) product whatever the number of pixels. The first fifth of the
iterations run without the regulariser (the paper's warm-up); at the end h is rounded to 0 or
1, and a channel whose hard rounding reconstructs worse than round-to-nearest keeps the
latter, so the layer's error on the samples is never above round-to-nearest's.
"""

from __future__ import annotations

import numpy as np

from ..ir import Node

ZETA, GAMMA = 1.1, -0.1
ITERS = 400
PIXELS = 2048  # input columns kept per layer (random pixels over the samples)
LAMBDA = 5.0
LEARNING_RATE = 0.05


def columns(n: Node, xs: list[np.ndarray], pixels: int = PIXELS, seed: int = 0
            ) -> np.ndarray | None:
    """The input columns of `n` (Conv 2-D, Gemm or MatMul) on its inputs `xs`: [groups, K,
    P], K in the order of the weight's flattened reduction axes; None for another layout."""
    rng = np.random.default_rng(seed)
    if n.op == "Conv":
        if n.inputs[1].type.rank != 4:
            return None
        cols = np.concatenate([_im2col(n, np.asarray(x, np.float32)) for x in xs], axis=-1)
    else:
        x = np.concatenate([np.asarray(a, np.float32).reshape(-1, a.shape[-1]) for a in xs])
        cols = x.T[None]
    if cols.shape[-1] > pixels:
        cols = cols[..., rng.choice(cols.shape[-1], pixels, replace=False)]
    return cols


def _im2col(n: Node, x: np.ndarray) -> np.ndarray:
    """[groups, Cin/g * kh * kw, N * OH * OW] of a 2-D convolution's input."""
    g = n.attrs.get("group", 1)
    kh, kw = n.inputs[1].shape[2:]
    sh, sw = n.attrs["strides"]
    dh, dw = n.attrs["dilations"]
    t, left, b, r = n.attrs["pads"]
    x = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)))
    oh = (x.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[3] - dw * (kw - 1) - 1) // sw + 1
    taps = [x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            for i in range(kh) for j in range(kw)]
    p = np.stack(taps, axis=2)  # N, C, kh*kw, OH, OW
    nb, c = p.shape[:2]
    p = p.reshape(nb, g, c // g * kh * kw, oh * ow)
    return p.transpose(1, 2, 0, 3).reshape(g, c // g * kh * kw, nb * oh * ow)


def as_rows(n: Node, w: np.ndarray, groups: int) -> np.ndarray:
    """`n`'s weight as [groups, outputs per group, K] (rows: output channels)."""
    if n.op == "Conv":
        return w.reshape(groups, w.shape[0] // groups, -1)
    if n.op == "Gemm" and n.attrs["transB"]:
        return w[None]
    return w.T[None]


def from_rows(n: Node, rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if n.op == "Conv" or (n.op == "Gemm" and n.attrs["transB"]):
        return rows.reshape(shape)
    return rows[0].T.reshape(shape)


def adaround(w: np.ndarray, scale: np.ndarray, cols: np.ndarray, bits: int,
             iters: int = ITERS, lam: float = LAMBDA, seed: int = 0) -> np.ndarray:
    """Codes (int8) of `w` [groups, rows, K] with per-row `scale` [groups, rows, 1] (or a
    scalar) rounded adaptively for the inputs `cols` [groups, K, P] (module doc)."""
    qmax = 2 ** (bits - 1) - 1
    w = np.asarray(w, np.float64)
    s = np.broadcast_to(np.asarray(scale, np.float64), w.shape[:-1] + (1,))
    x = np.asarray(cols, np.float64)
    gram = x @ x.transpose(0, 2, 1) / max(x.shape[-1], 1)
    base = np.floor(w / s)
    nearest = np.clip(np.rint(w / s), -qmax, qmax)

    def error(q: np.ndarray) -> np.ndarray:  # per row: dW G dW^T
        d = q * s - w
        return ((d @ gram) * d).sum(axis=-1)

    ref = error(nearest)
    norm = max(float(ref.sum()), 1e-30)
    rest = np.clip(w / s - base, 0.01, 0.99)
    v = -np.log((ZETA - GAMMA) / (rest - GAMMA) - 1)  # h(v) = the remainder
    m1, m2 = np.zeros_like(v), np.zeros_like(v)
    b1, b2, eps = 0.9, 0.999, 1e-8
    warm = iters // 5
    for it in range(iters):
        sig = 1 / (1 + np.exp(-v))
        raw = sig * (ZETA - GAMMA) + GAMMA
        h = np.clip(raw, 0, 1)
        q = base + h
        inside = (raw > 0) & (raw < 1) & (q > -qmax) & (q < qmax)
        d = np.clip(q, -qmax, qmax) * s - w
        grad_w = 2 * (d @ gram) / norm
        grad_h = grad_w * s
        if it >= warm:
            beta = 20 + (2 - 20) * (it - warm) / max(iters - warm - 1, 1)
            t = 2 * h - 1
            grad_h = grad_h - lam * beta * np.abs(t) ** (beta - 1) * np.sign(t) * 2 / h.size
        grad = grad_h * inside * sig * (1 - sig) * (ZETA - GAMMA)
        m1 = b1 * m1 + (1 - b1) * grad
        m2 = b2 * m2 + (1 - b2) * grad * grad
        step = LEARNING_RATE * (m1 / (1 - b1 ** (it + 1))) / (
            np.sqrt(m2 / (1 - b2 ** (it + 1))) + eps)
        v = v - step
    sig = 1 / (1 + np.exp(-v))
    hard = np.clip(base + (sig * (ZETA - GAMMA) + GAMMA >= 0.5), -qmax, qmax)
    better = error(hard) <= ref
    return np.where(better[..., None], hard, nearest).astype(np.int8)


def round_layer(n: Node, w: np.ndarray, scales: np.ndarray, axis: int | None, bits: int,
                xs: list[np.ndarray]) -> np.ndarray | None:
    """AdaRound codes of `n`'s weight `w` with `scales` (per `axis`, None: one) for its input
    on the samples `xs`; None where the layer's layout is not handled (a convolution not
    2-D)."""
    cols = columns(n, xs)
    if cols is None:
        return None
    groups = cols.shape[0]
    rows = as_rows(n, np.asarray(w), groups)
    if axis is None:
        s = np.float64(scales)
    else:
        s = scales.astype(np.float64).reshape(groups, -1, 1)
    codes = adaround(rows, s, cols, bits)
    return from_rows(n, codes, w.shape)
