"""Kernel builders of the loss family (edgec/ir/ops/loss.py): NegativeLogLikelihoodLoss and
SoftmaxCrossEntropyLoss.

One loop over the (n, d) positions of the target: the class t is read once, clamped into
[0, C) (a kernel cannot stop on a bad target) and given the weight w_t (0 where ignored);
SoftmaxCrossEntropyLoss first finds max and log(sum(exp(x - max))) along the C classes of
that position (writing log_prob when asked), so it needs no scratch buffer. The loss is stored
per position ("none") or summed with its weight; "mean" divides the two sums at the end.
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ...ir.graph import Node
from ...kernel_ir.kernel import INDEX, Expr, call, cast, const, maximum, minimum, select
from ..lower import NodeKernelBuilder, kernel


def _compute_type(dtype: DType) -> DType:
    return DType.F32 if dtype == DType.F16 else dtype


def _loss(kb: NodeKernelBuilder, node: Node, softmax: bool) -> None:
    x_v, t_v = node.inputs[0], node.inputs[1]
    w_v = node.input(2)
    n_, c_ = x_v.shape[:2]
    d_ = t_v.type.numel // n_ if n_ else 0
    at = node.attrs
    x, t = kb.bind(x_v, "x"), kb.bind(t_v, "target")
    w = kb.bind(w_v, "weight") if w_v is not None else None
    y = kb.bind(node.outputs[0], "loss")
    logp = kb.bind(node.outputs[1], "log_prob") if len(node.outputs) > 1 else None
    ct = _compute_type(x.dtype)
    zero, one = const(0, ct), const(1, ct)
    reduce = at["reduction"] != "none"
    if reduce:
        total = kb.local("total", zero)
        wsum = kb.local("wsum", zero)
    with kb.loops([n_, d_], ["n", "d"]) as (n, d):
        base = n * (c_ * d_) + d  # x[n, c, d] = x[base + c * d_]
        if softmax:
            mx = kb.local("mx", cast(x[base], ct))
            with kb.loop(c_ - 1, "c") as c:
                v = cast(x[base + (c + 1) * d_], ct)
                kb.assign(mx, select(v > mx, v, mx))
            s = kb.local("sum", zero)
            with kb.loop(c_, "c") as c:
                kb.assign(s, s + call("exp", cast(x[base + c * d_], ct) - mx))
            lse = kb.local("lse", call("log", s))
            if logp is not None:
                with kb.loop(c_, "c") as c:
                    kb.store(logp, base + c * d_, (cast(x[base + c * d_], ct) - mx) - lse)
        tv = kb.local("t", cast(t[n * d_ + d], INDEX))
        tc = kb.local("tc", minimum(maximum(tv, 0), c_ - 1))
        keep: Expr = const(True, DType.BOOL)
        if at["ignore_index"] is not None:
            keep = tv.ne(at["ignore_index"])
        wt = cast(w[tc], ct) if w is not None else one
        wt = kb.local("w", select(keep, wt, zero))
        picked = cast(x[base + tc * d_], ct)
        if softmax:
            picked = (picked - mx) - lse
        loss = select(keep, -picked * wt, zero)
        if reduce:
            kb.assign(total, total + loss)
            kb.assign(wsum, wsum + wt)
        else:
            kb.store(y, n * d_ + d, loss)
    if reduce:
        kb.store(y, 0, total / wsum if at["reduction"] == "mean" else total)


@kernel("NegativeLogLikelihoodLoss")
def negative_log_likelihood_loss(kb: NodeKernelBuilder, node: Node) -> None:
    _loss(kb, node, softmax=False)


@kernel("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(kb: NodeKernelBuilder, node: Node) -> None:
    _loss(kb, node, softmax=True)
