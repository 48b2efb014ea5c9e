"""fold-batchnorm: s = gamma / sqrt(var + eps); W' = W * s, b' = (b - mean) * s + beta.

The constants are chosen so that s = [0.5, 2] and every folded value is exact in float32:
the expected IR is computed by hand."""

from __future__ import annotations

import numpy as np
from nets import resnet_like
from passcheck import assert_same_numerics, check_pass

from edgec.ir import DType, Graph, TensorType
from edgec.passes import run_pipeline

BN_PARAMS = """
          %gamma = const f32[2] dense<[1.0, 2.0]>
          %beta = const f32[2] dense<[0.25, 0.5]>
          %mean = const f32[2] dense<[1.0, 1.0]>
          %var = const f32[2] dense<[3.0, 0.0]>"""


def test_folds_into_the_conv_weights_and_bias():
    # W' = [1, 2] * 0.5, [3, 4] * 2; b' = (3 - 1) * 0.5 + 0.25, (-1 - 1) * 2 + 0.5
    check_pass("""
        graph @g(%x: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %b = const f32[2] dense<[3.0, -1.0]>""" + BN_PARAMS + """
          %c = Conv(%x, %w, %b) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          %y = BatchNormalization(%c, %gamma, %beta, %mean, %var) {epsilon = 1.0} : f32[1,2,3]
          return %y
        }""", "fold-batchnorm", """
        graph @g(%x: f32[1,2,3]) {
          %c_w = const f32[2,2,1] dense<[0.5, 1.0, 6.0, 8.0]>
          %c_b = const f32[2] dense<[1.25, -3.5]>
          %y = Conv(%x, %c_w, %c_b) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          return %y
        }""")


def test_folds_into_gemm_and_matmul_and_rewrites_a_lone_one_as_mul_add():
    # MatMul: columns of W scale, then + (beta - mean * s) = [-0.25, -1.5].
    # Gemm (transB): rows of B scale; C' = (2 * C - mean) * s + beta = [0.75, 6.5].
    # A batch norm of a graph input becomes x * s + (beta - mean * s) per channel.
    check_pass("""
        graph @g(%a: f32[2,3], %x: f32[1,2,2,2]) {
          %w = const f32[3,2] dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]>
          %wt = const f32[2,3] dense<[1.0, 3.0, 5.0, 2.0, 4.0, 6.0]>
          %c = const f32[2] dense<[1.0, 2.0]>""" + BN_PARAMS + """
          %mm = MatMul(%a, %w) : f32[2,2]
          %y1 = BatchNormalization(%mm, %gamma, %beta, %mean, %var) {epsilon = 1.0} : f32[2,2]
          %gm = Gemm(%a, %wt, %c) {beta = 2.0, transB = 1} : f32[2,2]
          %y2 = BatchNormalization(%gm, %gamma, %beta, %mean, %var) {epsilon = 1.0} : f32[2,2]
          %y3 = BatchNormalization(%x, %gamma, %beta, %mean, %var) {epsilon = 1.0} : f32[1,2,2,2]
          return %y1, %y2, %y3
        }""", "fold-batchnorm", """
        graph @g(%a: f32[2,3], %x: f32[1,2,2,2]) {
          %mm_w = const f32[3,2] dense<[0.5, 4.0, 1.5, 8.0, 2.5, 12.0]>
          %mm_b = const f32[2] dense<[-0.25, -1.5]>
          %gm_b = const f32[2,3] dense<[0.5, 1.5, 2.5, 4.0, 8.0, 12.0]>
          %gm_c = const f32[2] dense<[0.75, 6.5]>
          %y3_scale = const f32[2,1,1] dense<[0.5, 2.0]>
          %y3_shift = const f32[2,1,1] dense<[-0.25, -1.5]>
          %mm_0 = MatMul(%a, %mm_w) : f32[2,2]
          %y1 = Add(%mm_0, %mm_b) : f32[2,2]
          %y2 = Gemm(%a, %gm_b, %gm_c) {transB = 1} : f32[2,2]
          %mul = Mul(%x, %y3_scale) : f32[1,2,2,2]
          %y3 = Add(%mul, %y3_shift) : f32[1,2,2,2]
          return %y1, %y2, %y3
        }""")


def test_a_conv_output_with_other_users_is_not_folded_into():
    g = check_pass("""
        graph @g(%x: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>""" + BN_PARAMS + """
          %c = Conv(%x, %w) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          %y = BatchNormalization(%c, %gamma, %beta, %mean, %var) {epsilon = 1.0} : f32[1,2,3]
          return %y, %c
        }""", "fold-batchnorm")
    assert [n.op for n in g.nodes] == ["Conv", "Mul", "Add"]
    assert g.nodes[0].inputs[1].name == "w"


def test_resnet_like_loses_every_batchnorm_with_the_same_outputs():
    before = resnet_like(seed=3)
    after = resnet_like(seed=3)
    run_pipeline(after, "fold-batchnorm", verify_each=True)
    assert "BatchNormalization" not in after.op_counts()
    assert after.op_counts()["Conv"] == before.op_counts()["Conv"]
    assert not any(n.op in ("Mul", "Add") and n.inputs[1].is_const for n in after.nodes)
    assert_same_numerics(before, after, tol=1e-5)


def test_realistic_statistics_fold_within_float_rounding():
    # eps = 1e-5 with tiny variances makes s large: the fold must still match to ~1e-6
    rng = np.random.default_rng(0)
    before = Graph("g")
    x = before.add_input("x", TensorType((1, 4, 5, 5), DType.F32))
    f32 = lambda a: before.const(np.asarray(a, np.float32))  # noqa: E731
    conv = before.add_node("Conv", [x, f32(rng.standard_normal((4, 4, 3, 3)))], {
        "dilations": [1, 1], "pads": [1, 1, 1, 1], "strides": [1, 1]})
    bn = before.add_node("BatchNormalization", [conv.output, f32(rng.uniform(0.5, 2, 4)),
                                                f32(rng.standard_normal(4)),
                                                f32(rng.standard_normal(4)),
                                                f32(rng.uniform(1e-4, 1e-2, 4))])
    before.outputs = [bn.output]
    after = before.copy()
    run_pipeline(after, "fold-batchnorm", verify_each=True)
    assert [n.op for n in after.nodes] == ["Conv"]
    assert_same_numerics(before, after, tol=1e-5)
