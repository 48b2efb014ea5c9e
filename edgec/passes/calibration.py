"""Calibration for the `quantize` pass: ranges of activations observed on sample inputs, and
the quantization of weights.

Activation ranges, per tensor, from every value the tensor took over the samples:

- `minmax`: the smallest and largest value seen (always containing 0, so that zero is exact);
- `percentile`: the range that keeps `percentile`% of the magnitudes seen, clipping rare
  outliers (from a histogram, so that the samples need not be kept);
- `kl`: the entropy calibration of TensorRT and MNN: a histogram of |x| over 2048 bins; for
  each candidate threshold t (from 128 bins up) the clipped distribution P (outliers folded
  into the last bin) is compared with Q, P merged into 128 levels and expanded back over its
  non-empty bins; the threshold with the least KL(P || Q) wins.

A tensor seen through fewer than MIN_VALUES values (a classifier's logits over a few
samples) is too sparse to clip by a histogram, and one of fewer distinct magnitudes than
KL_LEVELS (an image of 17 grey levels) is no distribution entropy calibration can fit (it
would clip at the first level): both get their min-max range.

Weights are quantized symmetrically (zero point 0) to `bits`, per output channel or per
tensor, to the narrow range [-(2^(b-1) - 1), 2^(b-1) - 1]:

- `minmax`: scale = max |w| / qmax;
- `admm`: the projection step of Leng et al.'s ADMM ("Extremely Low Bit Neural Network:
  Squeeze the Last Bit Out with ADMM", AAAI 2018) without retraining: from the best of a
  few clipping ratios of max |w|, alternately the codes q = clip(round(w / s)) and the scale
  s = <w, q> / <q, q> that best fits them, which minimises ||w - s q|| per channel; it moves
  the scale below max |w| / qmax where clipping the largest weights buys finer steps for
  the rest, which matters at 4 bits and below.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import PassError

BINS = 2048
KL_LEVELS = 128
# fewer values than this make too sparse a histogram to clip by: min-max instead
MIN_VALUES = 4096
ACT_METHODS = ("minmax", "percentile", "kl")


@dataclass
class Observer:
    """What the samples showed of one tensor: its extremes and a histogram of |x| over
    [0, `edge`) (re-binned, doubling the edge, when a larger magnitude arrives)."""

    lo: float = np.inf
    hi: float = -np.inf
    edge: float = 0.0
    hist: np.ndarray = field(default_factory=lambda: np.zeros(BINS, np.float64))

    def update(self, x: np.ndarray) -> None:
        x = np.asarray(x, np.float32)
        if x.size == 0:
            return
        finite = x[np.isfinite(x)]
        if finite.size == 0:
            return
        self.lo = min(self.lo, float(finite.min()))
        self.hi = max(self.hi, float(finite.max()))
        mag = np.abs(finite)
        top = float(mag.max())
        if self.edge == 0.0:
            self.edge = top if top > 0 else 1.0
        while top > self.edge:  # double the edge: pairs of bins merge
            self.hist = self.hist.reshape(-1, 2).sum(axis=1)
            self.hist = np.concatenate([self.hist, np.zeros(BINS // 2)])
            self.edge *= 2
        # exact zeros (half of a ReLU's output) say nothing about where to clip, and their
        # spike in the first bin would draw the entropy threshold towards 0
        h, _ = np.histogram(mag[mag > 0], bins=BINS, range=(0.0, self.edge))
        self.hist += h

    def range(self, method: str, percentile: float = 99.99) -> tuple[float, float]:
        """(lo, hi) of the tensor's quantization, containing 0."""
        if not np.isfinite(self.lo):
            return 0.0, 0.0
        lo, hi = min(self.lo, 0.0), max(self.hi, 0.0)
        if method == "minmax" or self.hist.sum() < MIN_VALUES:
            return lo, hi
        if method == "percentile":
            t = self._threshold_at(percentile / 100.0)
        elif method == "kl":
            if np.count_nonzero(self.hist) < KL_LEVELS:
                return lo, hi  # a few distinct values (pixels k/16): nothing to clip
            t = self._kl_threshold()
        else:
            raise PassError(f"quantize: unknown calibration {method!r}; choose from "
                            f"{', '.join(ACT_METHODS)} (or admm for the weights)")
        return max(lo, -t), min(hi, t)

    def _threshold_at(self, q: float) -> float:
        total = self.hist.sum()
        if total == 0:
            return self.edge
        k = int(np.searchsorted(np.cumsum(self.hist), q * total))
        return self.edge * min(k + 1, BINS) / BINS

    def _kl_threshold(self) -> float:
        hist = self.hist
        if hist.sum() == 0:
            return self.edge
        best, best_i = np.inf, BINS
        for i in range(KL_LEVELS, BINS + 1, 16):
            p = hist[:i].copy()
            p[-1] += hist[i:].sum()  # the outliers clip into the last bin
            nz = p > 0
            # Q: the first i bins merged into KL_LEVELS levels, each level's mass spread
            # evenly over its non-empty bins
            q = np.zeros(i)
            edges = np.linspace(0, i, KL_LEVELS + 1).astype(int)
            for a, b in zip(edges[:-1], edges[1:]):
                part = hist[a:b]
                used = part > 0
                if used.any():
                    q[a:b][used] = part.sum() / used.sum()
            # the clipped mass is in P only; where Q has none, a little (as TensorRT smooths)
            ps, qs = p[nz] / p.sum(), np.maximum(q[nz], 1e-4 * max(q.max(), 1.0))
            qs = qs / qs.sum()
            kl = float(np.sum(ps * np.log(ps / qs)))
            if kl < best:
                best, best_i = kl, i
        return self.edge * best_i / BINS


def activation_params(lo: float, hi: float, symmetric: bool) -> tuple[np.float32, np.uint8]:
    """(scale, zero point) of a uint8 tensor covering [lo, hi] (lo <= 0 <= hi); symmetric:
    zero point 128 and a range symmetric about 0."""
    if symmetric:
        a = max(-lo, hi)
        scale = 2 * a / 255 if a > 0 else 1.0
        return np.float32(scale), np.uint8(128)
    scale = (hi - lo) / 255 if hi > lo else 1.0
    zp = int(np.clip(np.rint(-lo / scale), 0, 255))
    return np.float32(scale), np.uint8(zp)


def activation_params16(lo: float, hi: float) -> tuple[np.float32, np.int16]:
    """(scale, zero point) of an int16 tensor covering [lo, hi] (lo <= 0 <= hi): the steps of
    uint8's over [lo, hi] divided by 257 (65535 steps instead of 255)."""
    scale = (hi - lo) / 65535 if hi > lo else 1.0
    zp = int(np.clip(np.rint(-32768 - lo / scale), -32768, 32767))
    return np.float32(scale), np.int16(zp)


def weight_params(w: np.ndarray, bits: int, axis: int | None, method: str,
                  iters: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """(codes int8, scales float32) of `w` quantized symmetrically to `bits`, per slice along
    `axis` (None: per tensor), by min-max or by the ADMM projection (module doc)."""
    qmax = 2 ** (bits - 1) - 1
    w = np.asarray(w, np.float32)
    axes = tuple(a for a in range(w.ndim) if a != axis) if axis is not None else None
    top = np.abs(w).max(axis=axes, keepdims=True) if w.size else np.zeros(())
    # an all-zero slice (a pruned channel) codes zeros at any scale: it takes the others'
    # median, so that its bias (in units of its scale) and its requantization multiplier
    # stay in the others' range (at 1.0, fixed point could not hold the multiplier)
    live = top[top > 0]
    fill = float(np.median(live)) / qmax if live.size else 1.0
    scale = np.where(top > 0, top / qmax, fill).astype(np.float64)
    wd = w.astype(np.float64)
    if method == "admm":
        # start from the best of a few clipping ratios (alternation alone stays near its
        # start), then alternate codes and scale
        best = None
        for r in np.linspace(0.3, 1.0, 15):
            s = scale * r
            err = ((wd - s * np.clip(np.rint(wd / s), -qmax, qmax)) ** 2).sum(axis=axes,
                                                                             keepdims=True)
            if best is None:
                best, scale0 = err, s
            else:
                scale0 = np.where(err < best, s, scale0)
                best = np.minimum(err, best)
        scale = scale0
        for _ in range(iters):
            q = np.clip(np.rint(wd / scale), -qmax, qmax)
            num = (wd * q).sum(axis=axes, keepdims=True)
            den = (q * q).sum(axis=axes, keepdims=True)
            new = np.where(den > 0, num / np.maximum(den, 1e-30), scale)
            new = np.where(new > 0, new, scale)
            if np.allclose(new, scale, rtol=1e-7, atol=0):
                break
            scale = new
    elif method != "minmax":
        raise PassError(f"quantize: unknown weight quantization {method!r}; choose minmax or "
                        "admm")
    scale32 = scale.astype(np.float32)
    codes = np.clip(np.rint(wd / scale32), -qmax, qmax).astype(np.int8)
    return codes, scale32.reshape(-1) if axis is not None else scale32.reshape(())


PAIR_LIMIT = 128  # 255 * 128 <= 32767: vpmaddubsw's int16 sum of a byte pair cannot saturate


def fit_pairs(w: np.ndarray, scales: np.ndarray, axis: int | None, kaxis: int
              ) -> tuple[np.ndarray, np.ndarray, int]:
    """8-bit codes of `w` whose byte pairs along the reduction axis `kaxis` (entries 2j and
    2j+1: the pairs of the int8 kernels' dot4 groups) sum to at most 128 over their positive
    codes and at least -128 over their negative ones, what x86's vpmaddubsw adds exactly
    against uint8 inputs (kernel_ir/kernel.py pairs_fit16).

    Each slice along `axis` (per output channel; None: the whole tensor) keeps its scale
    where its pairs fit and else takes the least one that makes them fit: with P the largest
    pair sum of one sign in w, s = P / 127 keeps every rounded pair within 127 + 1. So a
    channel whose largest weights sit apart keeps all 8 bits, and one whose two largest share
    a pair loses at most the one bit that 7-bit codes lose everywhere. Returns (codes,
    scales, the number of slices whose scale grew)."""
    wd = np.asarray(w, np.float64)
    m = np.moveaxis(wd, kaxis, 0)
    k = m.shape[0] - m.shape[0] % 2
    pos = np.maximum(m[0:k:2], 0) + np.maximum(m[1:k:2], 0)
    neg = -(np.minimum(m[0:k:2], 0) + np.minimum(m[1:k:2], 0))
    sums = np.moveaxis(np.maximum(pos, neg), 0, kaxis)  # kaxis now counts the pairs
    axes = tuple(d for d in range(w.ndim) if d != axis) if axis is not None else None
    top = sums.max(axis=axes, keepdims=True) if sums.size else np.zeros(())
    old = scales.astype(np.float64).reshape(top.shape if axis is not None else ())
    need = top / (PAIR_LIMIT - 1)
    new = np.where(need > old * (1 + 1e-6), need, old)  # old: float32, rounded either way
    scale32 = new.astype(np.float32)
    codes = np.clip(np.rint(wd / scale32), -127, 127).astype(np.int8)
    grew = int((new > old).sum())
    return codes, scale32.reshape(-1) if axis is not None else scale32.reshape(()), grew


def sqnr_db(ref: np.ndarray, got: np.ndarray) -> float:
    """Signal to quantization noise, in dB: 10 log10(sum ref^2 / sum (ref - got)^2)."""
    ref = np.asarray(ref, np.float64)
    noise = float(((ref - np.asarray(got, np.float64)) ** 2).sum())
    signal = float((ref ** 2).sum())
    if noise == 0:
        return float("inf")
    return 10 * np.log10(max(signal, 1e-300) / noise)


def relative_error(ref: np.ndarray, got: np.ndarray) -> float:
    """max |ref - got| / max |ref| (the absolute error where ref is all zero): the figure
    `edgec run --check` and `edgec bench --vs` hold against their tolerance."""
    ref = np.asarray(ref, np.float64)
    if not ref.size:
        return 0.0
    err = float(np.abs(ref - np.asarray(got, np.float64)).max())
    scale = float(np.abs(ref).max())
    return err / scale if scale else err
