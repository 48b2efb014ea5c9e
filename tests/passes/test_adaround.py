# ruff: noqa: E501  (golden IR lines are as long as the printer makes them)
"""AdaRound in `quantize{adaround=1}`: the layer's output error on the calibration samples,
worked out with numpy from the codes the pass wrote, is well below round-to-nearest's (a
Gemm and strided, padded, grouped convolutions); the columns it fits are the convolution's
(checked against the interpreter); text in, text out; no samples is an error."""

from __future__ import annotations

import io

import numpy as np
import pytest
from nets import Net
from passcheck import check_pass

from edgec.errors import PassError
from edgec.ir import Graph, TensorType, interpret
from edgec.ir.dtypes import DType
from edgec.passes import run_pipeline
from edgec.passes.adaround import columns
from edgec.passes.calibration import weight_params
from edgec.passes.manager import PipelineStep
from edgec.passes.quantize import Quantize


def quantize(graph, feeds, **opts):
    log = io.StringIO()
    run_pipeline(graph, [PipelineStep(Quantize(feeds=feeds, log=log, **opts))],
                 out=io.StringIO())
    return log.getvalue()


def dequantized(graph, node: str) -> np.ndarray:
    """The weight the pass gave `node`: its codes times their scales."""
    n = next(x for x in graph.nodes if x.name == node)
    dq = n.inputs[1].producer
    codes, scales = dq.inputs[0].const.astype(np.float64), dq.inputs[1].const
    shape = [-1 if d == dq.attrs["axis"] else 1 for d in range(codes.ndim)] \
        if scales.ndim else []
    return codes * scales.reshape(shape)


def gemm_inputs(n: int = 24, k: int = 48, seed: int = 1) -> np.ndarray:
    """Correlated, positive inputs (a Relu's after a layer): where rounding errors add up."""
    rng = np.random.default_rng(seed)
    return np.maximum(rng.standard_normal((n, 1, k)) + rng.standard_normal((n, 1, 1)),
                      0).astype(np.float32)


@pytest.mark.parametrize("bits", [8, 4])
def test_gemm_output_error_below_round_to_nearest(bits):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((32, 48)) * 0.1).astype(np.float32)
    n = Net("g", (1, 48))
    n.g.outputs = [n.g.add_node("Gemm", [n.x, n.const(w, "w")], {"transB": 1},
                                name="fc").output]
    x = gemm_inputs()
    log = quantize(n.g, {"input": x}, bits=bits, weights="minmax", adaround=True)
    codes, scales = weight_params(w, bits, 0, "minmax")
    nearest = codes * scales[:, None].astype(np.float64)
    ada = dequantized(n.g, "fc")
    xs = x.reshape(-1, 48).astype(np.float64)

    def error(wq: np.ndarray) -> float:
        return float(((xs @ (wq - w).T) ** 2).sum())

    assert np.abs(ada - w).max() <= scales.max() * (1 + 1e-6)  # up or down, never further
    assert error(ada) < 0.7 * error(nearest), (error(ada), error(nearest))
    row = n.g.record.quantization.layers[0]
    assert 0 < row["adarounded"] < 0.5 and n.g.record.quantization.adaround
    assert "adaround of 1 of 1 layers" in log


def conv_net(group: int, stride: int):
    n = Net("c", (1, 8, 9, 9))
    n.g.outputs = [n.conv(n.x, 8, 3, stride=stride, group=group, name="conv")]
    return n


@pytest.mark.parametrize("group, stride", [(1, 1), (2, 2), (8, 1)])
def test_conv_columns_are_the_convolution(group, stride):
    n = conv_net(group, stride)
    x = np.random.default_rng(2).standard_normal((3, 1, 8, 9, 9)).astype(np.float32)
    conv = n.g.nodes[0]
    cols = columns(conv, list(x), pixels=10**9)  # all of them: [g, K, N * OH * OW]
    w = conv.inputs[1].const
    rows = w.reshape(group, 8 // group, -1)
    got = rows @ cols  # [g, cout/g, N*OH*OW]
    want = np.stack([interpret(n.g, {"input": xi})[n.g.outputs[0].name][0] for xi in x])
    want = want.reshape(3, group, 8 // group, -1).transpose(1, 2, 0, 3).reshape(got.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("group, stride", [(1, 1), (2, 2), (8, 1)])
def test_conv_output_error_below_round_to_nearest(group, stride):
    n = conv_net(group, stride)
    w = n.g.nodes[0].inputs[1].const.copy()
    rng = np.random.default_rng(3)
    x = np.maximum(rng.standard_normal((8, 1, 8, 9, 9)) + rng.standard_normal((8, 1, 1, 9, 9)),
                   0).astype(np.float32)
    quantize(n.g, {"input": x}, bits=4, weights="minmax", adaround=True)
    codes, scales = weight_params(w, 4, 0, "minmax")

    def error(wq: np.ndarray) -> float:
        g = Graph("one")
        v = g.add_input("input", TensorType((1, 8, 9, 9), DType.F32))
        pads = [1, 1, 1, 1]
        g.outputs = [g.add_node("Conv", [v, g.const(wq.astype(np.float32), "w")], {
            "dilations": [1, 1], "group": group, "pads": pads,
            "strides": [stride, stride]}, name="c").output]
        g0 = Graph("ref")
        v0 = g0.add_input("input", TensorType((1, 8, 9, 9), DType.F32))
        g0.outputs = [g0.add_node("Conv", [v0, g0.const(w, "w")], {
            "dilations": [1, 1], "group": group, "pads": pads,
            "strides": [stride, stride]}, name="c").output]
        return sum(float(((interpret(g, {"input": xi})["c"] -
                           interpret(g0, {"input": xi})["c"]) ** 2).sum()) for xi in x)

    nearest = codes * scales[:, None, None, None]
    assert error(dequantized(n.g, "conv")) < 0.9 * error(nearest)


def test_text_in_text_out(tmp_path):
    """4-bit weights: round to nearest gives [7, -3, 2, 4, 3, 2, -7, 1] (w / s = [7, -3.3,
    1.5, 4.1, 3.2, 2.4, -7, 1]); AdaRound rounds 2.4 up, for the inputs' correlation."""
    x = gemm_inputs(16, 4, seed=4)
    np.savez(tmp_path / "calib.npz", x=x)
    # the check's random inputs leave the calibrated ranges: text only
    check_pass("""
        graph @ar(%x: f32[1,4]) {
          %w = const f32[2,4] dense<[0.7, -0.33, 0.15, 0.41, 0.32, 0.24, -0.7, 0.1]>
          %y = Gemm(%x, %w) {transA = 0, transB = 1} : f32[1,2]
          return %y
        }""", f"quantize{{bits=4,weights=minmax,samples={tmp_path / 'calib.npz'},adaround=1}}",
               """
        graph @ar(%x: f32[1,4]) {
          %x_scale = const f32[] dense<[0.013878353]>
          %x_zero_point = const u8[] dense<[0]>
          %w_quantized = const i8[2,4] quant<axis=0, scale=[0.1, 0.1], zp=[0, 0], bits=4> dense<[7, -3, 2, 4, 3, 3, -7, 1]>
          %w_scale = const f32[2] dense<[0.1, 0.1]>
          %w_zero_point = const i8[2] dense<[0, 0]>
          %y_scale = const f32[] dense<[0.016763719]>
          %y_zero_point = const u8[] dense<[65]>
          %x_QuantizeLinear = QuantizeLinear(%x, %x_scale, %x_zero_point) : u8[1,4] quant<scale=0.013878353, zp=0>
          %x_DequantizeLinear = DequantizeLinear(%x_QuantizeLinear, %x_scale, %x_zero_point) : f32[1,4]
          %w_DequantizeLinear = DequantizeLinear(%w_quantized, %w_scale, %w_zero_point) {axis = 0} : f32[2,4]
          %y_0 = Gemm(%x_DequantizeLinear, %w_DequantizeLinear) {transB = 1} : f32[1,2] #"y"
          %y_QuantizeLinear = QuantizeLinear(%y_0, %y_scale, %y_zero_point) : u8[1,2] quant<scale=0.016763719, zp=65>
          %y = DequantizeLinear(%y_QuantizeLinear, %y_scale, %y_zero_point) : f32[1,2] #"y_DequantizeLinear"
          return %y
        }""", tol=float("inf"))


def test_adaround_needs_samples():
    n = Net("g", (1, 4))
    n.g.outputs = [n.g.add_node("Gemm", [n.x, n.const(np.ones((2, 4)), "w")], {"transB": 1},
                                name="fc").output]
    with pytest.raises(PassError, match="adaround needs calibration samples"):
        run_pipeline(n.g, [PipelineStep(Quantize(adaround=True, log=io.StringIO()))],
                     out=io.StringIO())
