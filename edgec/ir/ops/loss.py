"""Loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference forms).

Both read input [N, C, d1..dk] and integer targets [N, d1..dk]. With w_t = weight[t] (1 without
weights) and w_t = 0 where t == ignore_index:
    NLL   loss[n, d] = -input[n, t[n, d], d] * w_t
    SCE   the same on log_prob = log_softmax(scores, axis=1) (its optional second output)
and reduction "none" keeps the map, "sum" adds it up, "mean" divides the sum by sum(w_t) (the
number of counted elements without weights; 0 / 0 = NaN when every target is ignored).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import DType
from ..registry import Attr, op
from ..types import TensorType
from .nn import _fail

REDUCTIONS = ("none", "sum", "mean")
LOSS_ATTRS = {"ignore_index": Attr.int(None), "reduction": Attr.str("mean")}


def compute_dtype(dt: np.dtype) -> np.dtype:
    """float16 is computed in float32 (as onnxruntime does); float32 and float64 in themselves."""
    return np.dtype(np.float32) if dt == np.float16 else np.dtype(dt)


def _infer_loss(opname: str, inputs, reduction: str) -> list[TensorType]:
    x, t = inputs[0].type, inputs[1].type
    if not x.dtype.is_float:
        _fail(opname, f"input must be float, got {x}")
    if x.rank < 2:
        _fail(opname, f"input must be [N, C, d1...] of rank >= 2, got {x}")
    if t.dtype not in (DType.I32, DType.I64):
        _fail(opname, f"target must be int32 or int64, got {t}")
    if t.shape != x.shape[:1] + x.shape[2:]:
        _fail(opname, f"target {t} must have the input's shape without the class axis "
                      f"{list(x.shape[:1] + x.shape[2:])}")
    if t.numel and x.shape[1] == 0:
        _fail(opname, f"{t.numel} target(s) cannot pick a class from input {x}, which has "
                      f"no classes")
    w = inputs[2] if len(inputs) > 2 else None
    if w is not None and (w.shape != (x.shape[1],) or w.dtype != x.dtype):
        _fail(opname, f"weight must be {x.dtype}[{x.shape[1]}] (one per class), got {w.type}")
    if reduction not in REDUCTIONS:
        _fail(opname, f"reduction must be one of {REDUCTIONS}, got '{reduction}'")
    loss = TensorType(t.shape if reduction == "none" else (), x.dtype)
    return [loss, x]


def nll(logp: np.ndarray, target: np.ndarray, weight: np.ndarray | None,
        ignore_index: int | None, reduction: str) -> np.ndarray:
    """The loss of log-probabilities `logp` (already in the compute type)."""
    n, c = logp.shape[:2]
    lp = logp.reshape(n, c, -1)
    t = target.reshape(n, -1).astype(np.int64)
    keep = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    # A target outside [0, C) is a user error the C kernel cannot report: both clamp it.
    tc = np.clip(np.where(keep, t, 0), 0, c - 1)
    w = np.ones(t.shape, lp.dtype) if weight is None else weight.astype(lp.dtype)[tc]
    w = np.where(keep, w, 0).astype(lp.dtype)
    picked = np.take_along_axis(lp, tc[:, None, :], axis=1)[:, 0, :]
    loss = np.where(keep, -picked * w, 0).astype(lp.dtype)
    if reduction == "none":
        return loss.reshape(target.shape)
    total = loss.sum(dtype=lp.dtype)
    if reduction == "sum":
        return total
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(total / w.sum(dtype=lp.dtype), lp.dtype)


@op("NegativeLogLikelihoodLoss", inputs=(2, 3), attrs=LOSS_ATTRS, traits=("indices",),
    infer=lambda inputs, *, ignore_index, reduction: _infer_loss(
        "NegativeLogLikelihoodLoss", inputs, reduction)[:1])
def negative_log_likelihood_loss(x, target, weight=None, *, ignore_index, reduction):
    """-x[n, target[n, d], d] weighted by class, reduced as `reduction` says."""
    ct = compute_dtype(x.dtype)
    loss = nll(x.astype(ct), target, weight, ignore_index, reduction)
    return np.asarray(loss).astype(x.dtype)


def log_softmax_classes(x: np.ndarray) -> np.ndarray:
    """log_softmax along axis 1: (x - max) - log(sum(exp(x - max)))."""
    shifted = x - x.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


@op("SoftmaxCrossEntropyLoss", inputs=(2, 3), outputs=(1, 2), attrs=LOSS_ATTRS,
    traits=("indices",),
    infer=lambda inputs, *, ignore_index, reduction: _infer_loss(
        "SoftmaxCrossEntropyLoss", inputs, reduction))
def softmax_cross_entropy_loss(scores, labels, weights=None, *, ignore_index, reduction):
    """NLL of log_softmax(scores, axis=1); the log-probabilities are the second output."""
    ct = compute_dtype(scores.dtype)
    logp = log_softmax_classes(scores.astype(ct))
    loss = nll(logp, labels, weights, ignore_index, reduction)
    return np.asarray(loss).astype(scores.dtype), logp.astype(scores.dtype)
