"""Batch-norm folding: an inference BatchNormalization is an affine map per channel c,

    BN(y)[c] = (y[c] - mean[c]) * s[c] + beta[c],    s = gamma / sqrt(var + eps),

so after y = Conv(x, W, b) it folds into the weights: W'[c] = W[c] * s[c] (per output
channel), b' = (b - mean) * s + beta. After Gemm (Y = alpha*A@B + beta_g*C) the columns of B
scale and C' = (beta_g*C - mean) * s + beta; after MatMul with a constant [K, N] weight the
columns scale and an Add of (beta - mean * s) follows. The producer's output must have no
other user. A BatchNormalization with nothing to fold into becomes Mul(x, s) + (beta - mean*s).
The arithmetic runs in float64 and is rounded once to the tensor's dtype. The folded value
keeps what the batch norm said of its output, N(beta, gamma^2) per channel, in
value.meta["batchnorm"] (mean, std), for the data-free bias correction of `quantize`.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Value
from .manager import register_pass
from .rewrite import PatternPass, constant, pattern, producer, replace_value, require, sole_user


def _affine(bn: Node) -> tuple[np.ndarray, np.ndarray]:
    """(s, t) with BN(y) = y * s + t per channel, in float64."""
    gamma, beta, mean, var = (constant(bn.inputs[i], what).astype(np.float64) for i, what in
                              enumerate(("scale", "B", "input_mean", "input_var"), start=1))
    s = gamma / np.sqrt(var + float(bn.attrs["epsilon"]))
    return s, beta - mean * s


def _stands_for(graph: Graph, bn: Node, new: Value) -> None:
    """`new` replaces the batch norm's output and keeps its statistics."""
    beta, gamma = (constant(bn.inputs[i], what).astype(np.float64) for i, what in
                   ((2, "B"), (1, "scale")))
    replace_value(graph, bn.output, new)
    new.meta["batchnorm"] = {"mean": beta, "std": np.abs(gamma)}


def _replace(graph: Graph, bn: Node, new: Node, old: Node) -> None:
    """`new` stands in for `old` followed by `bn`. Unless it takes over the batch norm's
    name with its value, it keeps the model's name of `old`, which goes with `bn`."""
    fresh = new.name
    _stands_for(graph, bn, new.output)
    if new.name == fresh and old.name != old.output.name:
        new.name = old.name


def _const(graph: Graph, arr: np.ndarray, like, name: str):
    return graph.const(arr.astype(like.dtype.np), name=name)


# -- into Conv (or a FusedConv that has absorbed nothing but a bias) ----------------------


def _match_conv(bn: Node):
    conv = producer(bn.inputs[0], "Conv", "FusedConv")
    require(sole_user(conv.output) is bn, "the conv output has other users")
    if conv.op == "FusedConv":
        require(conv.attrs["activation"] == "" and conv.input(3) is None,
                f"{conv.name} already has an activation or residual")
    w = constant(conv.inputs[1], "the conv weight")
    b = None if conv.input(2) is None else constant(conv.input(2), "the conv bias")
    return conv, w, b, _affine(bn)


def _fold_conv(graph: Graph, bn: Node, m) -> None:
    conv, w, b, (s, t) = m
    w2 = w.astype(np.float64) * s.reshape((-1,) + (1,) * (w.ndim - 1))
    b2 = (0.0 if b is None else b.astype(np.float64)) * s + t
    ins = list(conv.inputs)
    ins[1] = _const(graph, w2, conv.inputs[1], f"{conv.name}_w")
    ins += [None] * (3 - len(ins))
    ins[2] = _const(graph, b2, conv.inputs[1], f"{conv.name}_b")
    new = graph.add_node(conv.op, ins, conv.attrs, name=conv.name, before=bn)
    _replace(graph, bn, new, conv)


# -- into Gemm ----------------------------------------------------------------------------


def _match_gemm(bn: Node):
    gemm = producer(bn.inputs[0], "Gemm")
    require(sole_user(gemm.output) is bn, "the Gemm output has other users")
    b = constant(gemm.inputs[1], "the Gemm weight B")
    c = None if gemm.input(2) is None else constant(gemm.input(2), "the Gemm bias C")
    return gemm, b, c, _affine(bn)


def _fold_gemm(graph: Graph, bn: Node, m) -> None:
    gemm, b, c, (s, t) = m
    at = gemm.attrs
    b2 = b.astype(np.float64) * (s[:, None] if at["transB"] else s[None, :])
    c2 = (0.0 if c is None else at["beta"] * c.astype(np.float64)) * s + t
    ins = [gemm.inputs[0], _const(graph, b2, gemm.inputs[1], f"{gemm.name}_b"),
           _const(graph, np.asarray(c2), gemm.inputs[1], f"{gemm.name}_c")]
    new = graph.add_node("Gemm", ins, {**at, "beta": 1.0}, name=gemm.name, before=bn)
    _replace(graph, bn, new, gemm)


# -- into MatMul [M, K] @ [K, N] ----------------------------------------------------------


def _match_matmul(bn: Node):
    mm = producer(bn.inputs[0], "MatMul")
    require(sole_user(mm.output) is bn, "the MatMul output has other users")
    require(mm.output.type.rank == 2, "BatchNormalization's channel axis 1 is not the "
                                      "MatMul's output column axis")
    w = constant(mm.inputs[1], "the MatMul weight")
    require(w.ndim == 2, "the MatMul weight is not 2-D")
    return mm, w, _affine(bn)


def _fold_matmul(graph: Graph, bn: Node, m) -> None:
    mm, w, (s, t) = m
    w2 = _const(graph, w.astype(np.float64) * s[None, :], mm.inputs[1], f"{mm.name}_w")
    new = graph.add_node("MatMul", [mm.inputs[0], w2], name=mm.name, before=bn)
    add = graph.add_node("Add", [new.output, _const(graph, t, mm.inputs[1], f"{mm.name}_b")],
                         before=bn)
    _stands_for(graph, bn, add.output)
    if mm.name != mm.output.name:  # a model's node name (not its output's): keep it
        new.name = mm.name


# -- standalone ---------------------------------------------------------------------------


def _match_standalone(bn: Node):
    require(bn.inputs[0].dtype.is_float, "the input is not a float tensor")
    return _affine(bn)


def _to_mul_add(graph: Graph, bn: Node, m) -> None:
    s, t = m
    x = bn.inputs[0]
    shape = (-1,) + (1,) * (x.type.rank - 2)
    mul = graph.add_node("Mul", [x, _const(graph, s.reshape(shape), x, f"{bn.name}_scale")],
                         before=bn)
    add = graph.add_node("Add", [mul.output, _const(graph, t.reshape(shape), x,
                                                     f"{bn.name}_shift")], before=bn)
    _stands_for(graph, bn, add.output)


BATCHNORM_PATTERNS = [
    pattern("BatchNormalization", match=_match_conv, name="into-conv")(_fold_conv),
    pattern("BatchNormalization", match=_match_gemm, name="into-gemm")(_fold_gemm),
    pattern("BatchNormalization", match=_match_matmul, name="into-matmul")(_fold_matmul),
    pattern("BatchNormalization", match=_match_standalone, name="to-mul-add")(_to_mul_add),
]

register_pass(PatternPass("fold-batchnorm", BATCHNORM_PATTERNS,
                          doc="Fold inference batch norms into the preceding weights."))
