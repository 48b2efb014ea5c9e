# ruff: noqa: E501  (golden IR lines are as long as the printer makes them)
"""Activation smoothing in `quantize{smooth=ALPHA}` (SmoothQuant): s_j = max|X_j|^a /
max|W_j|^(1-a) worked out with numpy, folded into the LayerNorm's scale and bias (written out
as Mul and Add) and the weight's rows, the float model unchanged, the outlier channel's
range evened out and the quantized outputs closer to float; a Mul inserted where nothing
folds it; text in, text out; the option's errors."""

from __future__ import annotations

import io

import numpy as np
import pytest
from nets import Net
from passcheck import check_pass

from edgec.errors import PassError
from edgec.ir import interpret
from edgec.passes import run_pipeline
from edgec.passes.manager import PipelineStep
from edgec.passes.quantize import Quantize


def layer_norm_tail(seed: int = 0, producer: str = "layernorm"):
    """x [1, 6, 8] -> * gamma + beta (a LayerNorm's end) -> MatMul W [8, 4]; gamma makes
    channel 2 thirty times the others. `producer` "relu": a Relu instead of the Mul/Add
    (nothing to fold into), channel 2's range from the input."""
    n = Net("ln", (1, 6, 8), seed)
    gamma = np.ones(8)
    gamma[2] = 30.0
    if producer == "layernorm":
        h = n.op("Add", n.op("Mul", n.x, n.const(gamma, "gamma")),
                 n.const(n.rng.uniform(-0.1, 0.1, 8), "beta"))
    else:
        h = n.op("Relu", n.x)
    w = n.rng.standard_normal((8, 4)) * 0.3
    n.g.outputs = [n.g.add_node("MatMul", [h, n.const(w, "w")], name="fc").output]
    return n.g, gamma, w


def samples(producer: str = "layernorm", count: int = 16) -> np.ndarray:
    x = np.random.default_rng(7).standard_normal((count, 1, 6, 8)).astype(np.float32)
    if producer == "relu":
        x[..., 2] *= 30
    return x


def run(graph, x, **opts):
    log = io.StringIO()
    run_pipeline(graph, [PipelineStep(Quantize(feeds={"input": x}, log=log,
                                               granularity="channel", **opts))],
                 out=io.StringIO())
    return graph.record.quantization.to_json(), log.getvalue()


@pytest.mark.parametrize("producer", ["layernorm", "relu"])
def test_smoothing_by_hand_and_closer_to_float(producer):
    g, gamma, w = layer_norm_tail(producer=producer)
    ref = layer_norm_tail(producer=producer)[0]
    x = samples(producer)
    # the input's channel maxima, worked out with numpy on the float graph
    pre = ref.nodes[-2].output if producer == "layernorm" else ref.nodes[0].output
    ax = np.zeros(8)
    for xi in x:
        vals = {}
        interpret(ref, {"input": xi}, hook=lambda nd, outs, vals=vals: vals.update(
            {v.name: o for v, o in zip(nd.outputs, outs)}))
        ax = np.maximum(ax, np.abs(vals[pre.name]).reshape(-1, 8).max(axis=0))
    s = np.sqrt(ax) / np.sqrt(np.abs(w).max(axis=1))
    q, log = run(g, x, smooth=0.5)
    fc = next(n for n in g.nodes if n.name == "fc")
    ws = fc.inputs[1].producer.inputs  # DequantizeLinear(codes, scales, zero points)
    wq = ws[0].const * ws[1].const[None, :]
    np.testing.assert_allclose(wq, w * s[:, None], rtol=0.02, atol=0.02 * np.abs(w * s[:, None]).max())
    row = q["smoothed"][0]
    assert row["layers"] == ["fc"] and row["by"] == ("mul-add" if producer == "layernorm"
                                                    else "mul-inserted")
    assert abs(row["range_before"] - ax.max()) < 1e-3 * ax.max()
    assert row["range_after"] < row["range_before"] / 3
    if producer == "layernorm":
        mul = next(n for n in g.nodes if n.op == "Mul")
        np.testing.assert_allclose(mul.inputs[1].const, gamma / s, rtol=1e-6)
    else:
        assert any(n.name.endswith("_smooth_Mul") for n in g.nodes)
    assert "activation smoothing (alpha 0.5) of 1 inputs of 1 layers" in log
    plain, _ = run(layer_norm_tail(producer=producer)[0], x)
    assert q["output_sqnr_db"] > plain["output_sqnr_db"] + 3, (q["output_sqnr_db"],
                                                               plain["output_sqnr_db"])


def test_text_in_text_out(tmp_path):
    """s = sqrt(max|h_j|) / sqrt(max|w_j|) = [sqrt(1/4), sqrt(16/1)] = [0.5, 4]: gamma over
    s ([2, 4]), W's rows times s ([[2, 0.5], [2, -4]], then quantized per output column:
    [127, 16, 127, -127])."""
    x = np.array([[[1.0, 1.0]], [[-1.0, -0.5]]], np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    check_pass("""
        graph @sq(%x: f32[1,2]) {
          %gamma = const f32[2] dense<[1.0, 16.0]>
          %w = const f32[2,2] dense<[4.0, 1.0, 0.5, -1.0]>
          %h = Mul(%x, %gamma) : f32[1,2]
          %y = MatMul(%h, %w) : f32[1,2]
          return %y
        }""", f"quantize{{samples={tmp_path / 'calib.npz'},smooth=0.5}}", """
        graph @sq(%x: f32[1,2]) {
          %gamma_smoothed = const f32[2] dense<[2.0, 4.0]>
          %h_scale = const f32[] dense<[0.023529412]>
          %h_zero_point = const u8[] dense<[85]>
          %w_smoothed_quantized = const i8[2,2] quant<axis=1, scale=[0.015748031, 0.031496063], zp=[0, 0]> dense<[127, 16, 127, -127]>
          %w_smoothed_scale = const f32[2] dense<[0.015748031, 0.031496063]>
          %w_smoothed_zero_point = const i8[2] dense<[0, 0]>
          %y_scale = const f32[] dense<[0.105882354]>
          %y_zero_point = const u8[] dense<[142]>
          %h = Mul(%x, %gamma_smoothed) : f32[1,2]
          %h_QuantizeLinear = QuantizeLinear(%h, %h_scale, %h_zero_point) : u8[1,2] quant<scale=0.023529412, zp=85>
          %h_DequantizeLinear = DequantizeLinear(%h_QuantizeLinear, %h_scale, %h_zero_point) : f32[1,2]
          %w_smoothed_DequantizeLinear = DequantizeLinear(%w_smoothed_quantized, %w_smoothed_scale, %w_smoothed_zero_point) : f32[2,2]
          %y_0 = MatMul(%h_DequantizeLinear, %w_smoothed_DequantizeLinear) : f32[1,2] #"y"
          %y_QuantizeLinear = QuantizeLinear(%y_0, %y_scale, %y_zero_point) : u8[1,2] quant<scale=0.105882354, zp=142>
          %y = DequantizeLinear(%y_QuantizeLinear, %y_scale, %y_zero_point) : f32[1,2] #"y_DequantizeLinear"
          return %y
        }""", tol=float("inf"))  # the check's random inputs leave the calibrated ranges


def test_smooth_is_checked():
    g = layer_norm_tail()[0]
    with pytest.raises(PassError, match=r"smooth=1.5 must be SmoothQuant's alpha in \(0, 1\]"):
        run(g, samples(), smooth=1.5)
    with pytest.raises(PassError, match="smooth needs calibration samples"):
        run_pipeline(layer_norm_tail()[0], [PipelineStep(Quantize(smooth=0.5,
                                                                  log=io.StringIO()))],
                     out=io.StringIO())


def test_python_method_reaches_the_pass(tmp_path):
    from edgec.compiler.driver import compile_graph

    g = layer_norm_tail()[0]
    log = io.StringIO()
    art = compile_graph(g, tmp_path, quantize="int8", calib={"input": samples()},
                        quantize_methods=["smooth"], log=log)
    assert "activation smoothing (alpha 0.5) of 1 inputs" in log.getvalue()
    import json

    q = json.loads((tmp_path / "quantization.json").read_text())
    assert q["smoothed"][0]["by"] == "mul-add" and art.manifest["quantization"]["bits"] == 8
