# ruff: noqa: E501  (golden IR lines are as long as the printer makes them)
"""fuse: conv/matmul + bias + residual + activation become one FusedConv / FusedMatMul."""

from __future__ import annotations

import numpy as np
import pytest
from nets import mobilenet_v2_like, resnet_like
from passcheck import assert_same_numerics, check_pass, ir

from edgec.errors import ShapeError
from edgec.ir import DType, Graph, TensorType
from edgec.ir.ops.fused import ACTIVATIONS
from edgec.passes import DEFAULT_PIPELINE, apply_patterns, run_pipeline
from edgec.passes.fuse import FUSE_PATTERNS

CONV = "{dilations = [1], pads = [0, 0], strides = [1]}"


def test_conv_bias_residual_relu_become_one_node():
    check_pass("""
        graph @block(%x: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %bias = const f32[1,2,1] dense<[0.5, -0.5]>
          %c = Conv(%x, %w) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          %b = Add(%c, %bias) : f32[1,2,3]
          %r = Add(%x, %b) : f32[1,2,3]
          %y = Relu(%r) : f32[1,2,3]
          return %y
        }""", "fuse", """
        graph @block(%x: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %c_bias = const f32[2] dense<[0.5, -0.5]>
          %y = FusedConv(%x, %w, %c_bias, %x) {dilations = [1], pads = [0, 0], strides = [1], activation = "Relu"} : f32[1,2,3]
          return %y
        }""")


def test_residual_first_then_bias_and_conv_bias_adds_up():
    # conv bias [1, 2] + added [1, 1] (a broadcast scalar) - subtracted [0.5, 0.5]
    check_pass("""
        graph @block(%x: f32[1,2,3], %z: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %b0 = const f32[2] dense<[1.0, 2.0]>
          %one = const f32[] dense<[1.0]>
          %half = const f32[2,1] dense<[0.5, 0.5]>
          %c = Conv(%x, %w, %b0) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          %r = Add(%c, %z) : f32[1,2,3]
          %b = Add(%one, %r) : f32[1,2,3]
          %y = Sub(%b, %half) : f32[1,2,3]
          return %y
        }""", "fuse", """
        graph @block(%x: f32[1,2,3], %z: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %b_bias = const f32[2] dense<[1.5, 2.5]>
          %y = FusedConv(%x, %w, %b_bias, %z) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          return %y
        }""")


def test_gemm_and_matmul_chains_become_fused_matmuls():
    # Gemm: B transposed as a constant, bias = beta * C = 2 * [0.5, -0.5]
    check_pass("""
        graph @mlp(%a: f32[4,3]) {
          %w = const f32[2,3] dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]>
          %c = const f32[1,2] dense<[0.5, -0.5]>
          %w2 = const f32[2,2] dense<[1.0, 0.0, 0.0, 1.0]>
          %b2 = const f32[2] dense<[1.0, 2.0]>
          %h = Gemm(%a, %w, %c) {beta = 2.0, transB = 1} : f32[4,2]
          %r = Relu(%h) : f32[4,2]
          %m = MatMul(%r, %w2) : f32[4,2]
          %mb = Add(%b2, %m) : f32[4,2]
          %y = LeakyRelu(%mb) {alpha = 0.5} : f32[4,2]
          return %y
        }""", "fuse", """
        graph @mlp(%a: f32[4,3]) {
          %w_t = const f32[3,2] dense<[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]>
          %h_bias = const f32[2] dense<[1.0, -1.0]>
          %w2 = const f32[2,2] dense<[1.0, 0.0, 0.0, 1.0]>
          %m_bias = const f32[2] dense<[1.0, 2.0]>
          %r = FusedMatMul(%a, %w_t, %h_bias) {activation = "Relu"} : f32[4,2]
          %y = FusedMatMul(%r, %w2, %m_bias) {activation = "LeakyRelu", activation_params = [0.5]} : f32[4,2]
          return %y
        }""")


def test_batched_matmul_takes_a_bias_on_the_last_axis_and_a_residual():
    check_pass("""
        graph @attn(%q: f32[2,3,4], %k: f32[2,4,3], %z: f32[2,3,3]) {
          %b = const f32[1,1,3] dense<[1.0, 2.0, 3.0]>
          %s = MatMul(%q, %k) : f32[2,3,3]
          %sb = Add(%s, %b) : f32[2,3,3]
          %r = Add(%z, %sb) : f32[2,3,3]
          %y = Sigmoid(%r) : f32[2,3,3]
          return %y
        }""", "fuse", """
        graph @attn(%q: f32[2,3,4], %k: f32[2,4,3], %z: f32[2,3,3]) {
          %s_bias = const f32[3] dense<[1.0, 2.0, 3.0]>
          %y = FusedMatMul(%q, %k, %s_bias, %z) {activation = "Sigmoid"} : f32[2,3,3]
          return %y
        }""")


def test_what_must_not_fuse_stays_and_says_why():
    g = ir(f"""
        graph @g(%x: f32[1,2,3], %lo: f32[]) {{
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %wide = const f32[3] dense<[1.0, 2.0, 3.0]>
          %c1 = Conv(%x, %w) {CONV} : f32[1,2,3]
          %r1 = Relu(%c1) : f32[1,2,3]
          %shared = Conv(%x, %w) {CONV} : f32[1,2,3]
          %t1 = Tanh(%shared) : f32[1,2,3]
          %t2 = Sigmoid(%shared) : f32[1,2,3]
          %c3 = Conv(%x, %w) {CONV} : f32[1,2,3]
          %a3 = Add(%c3, %wide) : f32[1,2,3]
          %c4 = Conv(%x, %w) {CONV} : f32[1,2,3]
          %k4 = Clip(%c4, %lo) : f32[1,2,3]
          %y = Add(%r1, %t1) : f32[1,2,3]
          return %y, %t2, %a3, %k4
        }}""")
    result = apply_patterns(g, FUSE_PATTERNS, explain=True)
    assert result.applied == {"activation": 1}
    reasons = {(f.node, f.pattern): f.reason for f in result.failures}
    assert reasons[("y", "residual")] == ("r1 already ends in Relu; %t1 is computed by Tanh, "
                                          "not Conv or FusedConv or MatMul or FusedMatMul")
    assert reasons[("t1", "activation")] == "%shared has 2 uses, not exactly one"
    assert "constant [3] is not per-channel" in reasons[("a3", "bias")]
    assert reasons[("k4", "activation")] == "Clip's min is not a constant"
    assert "y (Add): residual: r1 already ends in Relu" in result.explain()


@pytest.mark.parametrize("act", [a for a in ACTIVATIONS if a])
def test_each_activation_fuses_and_matches_the_unfused_ops(act):
    attrs = {"LeakyRelu": " {alpha = 0.25}", "HardSigmoid": " {alpha = 0.3, beta = 0.4}"}
    bounds = ", %lo, %hi" if act == "Clip" else ""
    src = f"""
        graph @g(%x: f32[2,3,5,5]) {{
          %w = const f32[4,3,1,1] dense<[{", ".join(str(v / 4) for v in range(-6, 6))}]>
          %lo = const f32[] dense<[-0.5]>
          %hi = const f32[] dense<[1.5]>
          %c = Conv(%x, %w) {{dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]}} : f32[2,4,5,5]
          %y = {act}(%c{bounds}){attrs.get(act, "")} : f32[2,4,5,5]
          return %y
        }}"""
    g = check_pass(src, "fuse", tol=1e-6)
    (node,) = g.nodes
    assert node.op == "FusedConv" and node.attrs["activation"] == act
    params = {"LeakyRelu": [0.25], "Clip": [-0.5, 1.5], "HardSigmoid": [0.3, 0.4]}
    np.testing.assert_allclose(node.attrs["activation_params"], params.get(act, []), rtol=1e-7)


def test_fused_ops_reject_bad_epilogues():
    g = Graph("g")
    x = g.add_input("x", TensorType((1, 2, 3), DType.F32))
    w = g.const(np.ones((2, 2, 1), np.float32), "w")
    conv = {"dilations": [1], "pads": [0, 0], "strides": [1]}
    with pytest.raises(ShapeError, match=r"LeakyRelu takes 1 parameters \['alpha'\], got \[\]"):
        g.add_node("FusedConv", [x, w], {**conv, "activation": "LeakyRelu"})
    with pytest.raises(ShapeError, match="unknown activation 'Swish'"):
        g.add_node("FusedConv", [x, w], {**conv, "activation": "Swish"})
    z = g.add_input("z", TensorType((1, 2, 1), DType.F32))
    with pytest.raises(ShapeError, match="residual f32.1,2,1. must have the output's type"):
        g.add_node("FusedConv", [x, w, None, z], conv)
    with pytest.raises(ShapeError, match="bias f32.2. must be 1-D, one value per last-axis"):
        g.add_node("FusedMatMul", [g.add_input("a", TensorType((2, 3), DType.F32)),
                                   g.const(np.ones((3, 4), np.float32)),
                                   g.const(np.ones(2, np.float32))])


def test_resnet_blocks_become_one_fused_conv_each_with_residual_and_relu():
    before, after = resnet_like(seed=1), resnet_like(seed=1)
    run_pipeline(after, DEFAULT_PIPELINE, verify_each=True, check_numerics=True)
    counts = after.op_counts()
    # 11 convs: stem, 4 blocks x 2, 2 shortcuts; nothing else is left of the conv stacks
    assert counts == {"FusedConv": 9, "Conv": 2, "ReduceMean": 1, "Flatten": 1,
                      "FusedMatMul": 1}
    residual = [n for n in after.nodes if n.op == "FusedConv" and n.input(3) is not None]
    assert len(residual) == 4
    assert all(n.attrs["activation"] == "Relu" for n in after.nodes if n.op == "FusedConv")
    assert_same_numerics(before, after, tol=1e-5)


def test_mobilenet_v2_blocks_fuse_relu6_and_the_projection_residual():
    before, after = mobilenet_v2_like(seed=2), mobilenet_v2_like(seed=2)
    run_pipeline(after, DEFAULT_PIPELINE, verify_each=True, check_numerics=True)
    fused = [n for n in after.nodes if n.op == "FusedConv"]
    clip6 = [n for n in fused if n.attrs["activation"] == "Clip"]
    assert len(clip6) == 7 and all(n.attrs["activation_params"] == [0.0, 6.0] for n in clip6)
    projections = [n for n in fused if n.input(3) is not None]
    assert len(projections) == 2 and all(n.attrs["activation"] == "" for n in projections)
    assert after.op_counts() == {"FusedConv": 9, "Conv": 1}
    assert_same_numerics(before, after, tol=1e-5)


def test_model_names_survive_the_output_value_and_conv_node_names():
    check_pass("""
        graph @g(%x: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %"/conv/Conv_output_0" = Conv(%x, %w) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3] #"/conv/Conv"
          %y = Relu(%"/conv/Conv_output_0") : f32[1,2,3] #"/relu/Relu"
          return %y
        }""", "fuse", """
        graph @g(%x: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %y = FusedConv(%x, %w) {dilations = [1], pads = [0, 0], strides = [1], activation = "Relu"} : f32[1,2,3] #"/conv/Conv"
          return %y
        }""")
