"""Bias correction in `quantize{bias_correct}`: the bias loses (W_q - W) E[x], with E[x]
measured on the samples (empirical) or, without them, the mean of the folded batch norm's
N(beta, gamma^2) through the Relu after it (data-free). Checked against the same sums worked
out with numpy, and the mean shift of the output gone."""

from __future__ import annotations

import io
import math

import numpy as np
from nets import Net

from edgec.ir import interpret
from edgec.passes import run_pipeline
from edgec.passes.bias_correction import clipped_normal_mean
from edgec.passes.calibration import weight_params
from edgec.passes.manager import PipelineStep
from edgec.passes.quantize import Quantize


def gemm_net(seed: int = 0):
    """y = x W^T + b, 32 -> 16: one layer whose input has a mean far from 0."""
    n = Net("gemm", (1, 32), seed)
    w = n.const(n.rng.standard_normal((16, 32)) * 0.2, "fc.w")
    b = n.const(n.rng.uniform(-1, 1, 16), "fc.b")
    n.g.outputs = [n.op("Gemm", n.x, w, b, transB=1)]
    return n.g, w.const, b.const


def quantize(graph, log=None, **opts):
    run_pipeline(graph, [PipelineStep(Quantize(bits=4, weights="minmax",
                                               log=log or io.StringIO(), **opts))],
                 out=io.StringIO())
    return graph


def test_empirical_correction_is_the_shift_worked_out_by_hand():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.5, (32, 1, 32)).astype(np.float32)  # E[x] near 1.5
    g, w, b = gemm_net()
    quantize(g, feeds={"input": x}, bias_correct=True)
    codes, scales = weight_params(w, 4, 0, "minmax")
    wq = codes * scales[:, None]
    want = b - x.reshape(-1, 32).astype(np.float64).mean(0) @ (wq - w).T
    gemm = next(n for n in g.nodes if n.op == "Gemm")
    np.testing.assert_allclose(gemm.inputs[2].const, want, rtol=1e-5, atol=1e-6)
    row = g.record.quantization.layers[0]
    assert row["bias_correction"] == "empirical"
    assert row["bias_shift"] == round(float(np.abs(want - b).max()), 6)
    # the quantized graph's mean error per output over the samples (uint8 activations too):
    # the weights' shift was most of it, and is gone
    plain = quantize(gemm_net()[0], feeds={"input": x})
    ref = np.concatenate([x[i] @ w.T + b for i in range(len(x))])

    def mean_error(graph) -> float:
        got = np.concatenate([next(iter(interpret(graph, {"input": x[i]}).values()))
                              for i in range(len(x))])
        return float(np.abs((got - ref).mean(axis=0)).max())

    assert mean_error(g) < mean_error(plain) / 4, (mean_error(g), mean_error(plain))


def conv_bn_relu_conv(seed: int = 0):
    n = Net("cbrc", (1, 4, 8, 8), seed)
    h = n.op("Relu", n.bn(n.conv(n.x, 6, 3, name="c1"), "bn1"))
    n.g.outputs = [n.conv(h, 5, 3, name="c2")]
    return n.g


def test_data_free_correction_from_the_folded_batch_norm():
    g = conv_bn_relu_conv()
    bn = next(n for n in g.nodes if n.op == "BatchNormalization")
    gamma, beta = bn.inputs[1].const.astype(np.float64), bn.inputs[2].const.astype(np.float64)
    w2 = next(n for n in g.nodes if n.name == "c2").inputs[1].const
    run_pipeline(g, "fold-batchnorm", out=io.StringIO())
    log = io.StringIO()
    quantize(g, log=log, bias_correct=True)
    assert "bias correction (data-free, from batch norms) of 1 of 2 layers" in log.getvalue()
    # E[relu(y)], y ~ N(beta, gamma^2): beta Phi(beta / gamma) + gamma phi(beta / gamma)
    z = beta / gamma
    phi = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = np.array([0.5 * (1 + math.erf(t / math.sqrt(2))) for t in z])
    mean = beta * cdf + gamma * phi
    codes, scales = weight_params(w2, 4, 0, "minmax")
    dw = (codes * scales[:, None, None, None]).astype(np.float64) - w2
    want = -(dw.sum(axis=(2, 3)) @ mean)
    c2 = next(n for n in g.nodes if n.name == "c2")
    np.testing.assert_allclose(c2.inputs[2].const, want, rtol=1e-5, atol=1e-7)


def test_clipped_normal_mean_against_sampling():
    mu, sigma = np.array([-1.0, 0.5, 3.0]), np.array([1.0, 2.0, 4.0])
    y = np.random.default_rng(0).standard_normal((400_000, 1)) * sigma + mu
    for lo, hi in ((0.0, np.inf), (0.0, 6.0), (-np.inf, np.inf)):
        np.testing.assert_allclose(clipped_normal_mean(mu, sigma, lo, hi),
                                   np.clip(y, lo, hi).mean(axis=0), atol=0.02)
