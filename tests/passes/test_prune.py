"""The prune pass: which weights it zeroes (worked out by hand on small weights), its
patterns and scopes, its refusals; and a model pruned by it from the CLI runs sparse and
computes what onnxruntime computes on the same pruned weights."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from edgec.errors import PassError
from edgec.ir import DType, Graph, TensorType, interpret, print_graph, verify
from edgec.ir.records import PruneNote
from edgec.passes import run_pipeline


def gemm_graph(w: np.ndarray, trans_b: int = 1) -> Graph:
    g = Graph("g")
    x = g.add_input("x", TensorType((1, w.shape[1] if trans_b else w.shape[0]), DType.F32))
    node = g.add_node("Gemm", [x, g.const(w, "w")], {"transB": trans_b}, name="fc")
    g.outputs.append(node.output)
    return g


def weight_after(g: Graph, pipeline: str) -> np.ndarray:
    run_pipeline(g, pipeline)
    verify(g)
    return g.nodes[0].inputs[1].const


def test_unstructured_zeroes_the_smallest_magnitudes():
    w = np.array([[1.0, -0.1, 3.0, 0.2], [-2.0, 0.3, -0.05, 4.0]], np.float32)
    got = weight_after(gemm_graph(w), "prune{sparsity=0.5}")
    np.testing.assert_array_equal(got, [[1.0, 0, 3.0, 0], [-2.0, 0, 0, 4.0]])


def test_4x1_blocks_span_four_outputs_at_one_input():
    # outputs are B's rows (transB=1): blocks of outputs 0-3 at each of the 3 inputs; the
    # block norms are 4, 0.4 and 2: the 0.4 block goes at 1/3 sparsity
    w = np.array([[2, 0.2, 1]] * 4, np.float32)
    got = weight_after(gemm_graph(w), "prune{sparsity=0.34,pattern=4x1}")
    np.testing.assert_array_equal(got, [[2, 0, 1]] * 4)
    # the same weight as MatMul's [K, N]: outputs are the columns
    g = Graph("g")
    x = g.add_input("x", TensorType((1, 3), DType.F32))
    node = g.add_node("MatMul", [x, g.const(w.T.copy(), "w")], name="mm")
    g.outputs.append(node.output)
    np.testing.assert_array_equal(weight_after(g, "prune{sparsity=0.34,pattern=4x1}"),
                                  np.array([[2, 0, 1]] * 4, np.float32).T)


def test_rx4_groups_are_4_input_channels_at_one_tap():
    # a conv weight [2 outputs, 8 channels, 1 x 2 taps]: blocks of 2 outputs x channels
    # 0-3 or 4-7 at tap 0 or 1; their norms: channels 0-3 weigh 1 (tap 0) and 3 (tap 1),
    # channels 4-7 weigh 2 and 0.5: at 50% the groups (0-3, tap 0) and (4-7, tap 1) go
    g = Graph("g")
    x = g.add_input("x", TensorType((1, 8, 3, 3), DType.F32))
    w = np.zeros((2, 8, 1, 2), np.float32)
    w[:, :4, 0, 0], w[:, :4, 0, 1], w[:, 4:, 0, 0], w[:, 4:, 0, 1] = 1, 3, 2, 0.5
    node = g.add_node("Conv", [x, g.const(w, "w")], {"dilations": [1, 1], "pads": [0] * 4,
                                                     "strides": [1, 1]}, name="c")
    g.outputs.append(node.output)
    got = weight_after(g, "prune{sparsity=0.5,pattern=2x4}")
    want = w.copy()
    want[:, :4, 0, 0] = 0
    want[:, 4:, 0, 1] = 0
    np.testing.assert_array_equal(got, want)


def test_2_of_4_keeps_the_two_largest_of_each_group():
    w = np.array([[1, -5, 2, 0.5, 7, 6, -8, 1]], np.float32)
    got = weight_after(gemm_graph(w), "prune{pattern=2:4}")
    np.testing.assert_array_equal(got, [[0, -5, 2, 0, 7, 0, -8, 0]])


def test_2_of_4_groups_a_convolutions_channels_at_one_tap():
    # conv weight [1 output, 4 channels, 1 x 2 taps]: the group is channels 0-3 at a tap (as
    # N:M hardware and the `nm` kernels take them), not the 4 consecutive C-major entries
    g = Graph("g")
    x = g.add_input("x", TensorType((1, 4, 3, 3), DType.F32))
    w = np.array([[[[1, 8]], [[-5, 7]], [[2, 6]], [[0.5, -9]]]], np.float32)  # [1, 4, 1, 2]
    node = g.add_node("Conv", [x, g.const(w, "w")], {"dilations": [1, 1], "pads": [0] * 4,
                                                     "strides": [1, 1]}, name="c")
    g.outputs.append(node.output)
    got = weight_after(g, "prune{pattern=2:4}")
    want = np.array([[[[0, 8]], [[-5, 0]], [[2, 0]], [[0, -9]]]], np.float32)
    np.testing.assert_array_equal(got, want)


def test_global_scope_prunes_the_layer_that_matters_less_more():
    rng = np.random.default_rng(0)
    g = Graph("g")
    x = g.add_input("x", TensorType((1, 64), DType.F32))
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    b[:, :32] *= 0.01  # half of b's inputs are nearly unused
    h = g.add_node("Gemm", [x, g.const(a, "a")], {"transB": 1}, name="fc1").output
    y = g.add_node("Gemm", [h, g.const(b, "b")], {"transB": 1}, name="fc2").output
    g.outputs.append(y)
    run_pipeline(g, "prune{sparsity=0.4,scope=global}")
    za, zb = (float((n.inputs[1].const == 0).mean()) for n in g.nodes)
    assert zb > 0.45 and za < 0.35 and abs((za + zb) / 2 - 0.4) < 0.01, (za, zb)


def test_conv_weights_and_exclusions():
    g = Graph("g")
    x = g.add_input("x", TensorType((1, 4, 6, 6), DType.F32))
    attrs = {"dilations": [1, 1], "pads": [0] * 4, "strides": [1, 1]}
    w1 = np.arange(1, 145, dtype=np.float32).reshape(4, 4, 3, 3)
    y = g.add_node("Conv", [x, g.const(w1, "w1")], {**attrs, "pads": [1] * 4}, name="y").output
    d = g.add_node("Conv", [y, g.const(np.ones((4, 1, 1, 1), np.float32), "w2")],
                   {**attrs, "group": 4}, name="d").output
    z = g.add_node("Conv", [d, g.const(np.ones((2, 4, 1, 1), np.float32), "w3")], attrs,
                   name="z").output
    g.outputs.append(z)
    run_pipeline(g, "prune{sparsity=0.75,exclude=z}")
    verify(g)
    got1, got2, got3 = (n.inputs[1].const for n in g.nodes)
    # the 108 smallest of 1..144 go; the depthwise conv and the excluded one stay dense
    np.testing.assert_array_equal(got1.reshape(-1), np.where(np.arange(1, 145) > 108,
                                                             np.arange(1, 145), 0))
    assert (got2 != 0).all() and (got3 != 0).all()
    assert g.nodes[0].record.pruned == PruneNote("unstructured", 0.75)
    assert "w1_pruned" in print_graph(g)


@pytest.mark.parametrize("options,match", [
    ("pattern=3x1", "pattern"), ("pattern=4:2", "pattern"), ("sparsity=1.0", "sparsity"),
    ("scope=net", "scope"), ("exclude=nosuch", "nosuch")])
def test_bad_options_are_refused(options, match):
    g = gemm_graph(np.ones((4, 4), np.float32))
    with pytest.raises(PassError, match=match):
        run_pipeline(g, f"prune{{{options}}}")


def conv_model(path) -> None:
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((32, 8, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((16, 32, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1] * 4, name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["y"], pads=[1] * 4, strides=[2, 2],
                              name="conv2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT,
                                                                     [1, 8, 20, 20])],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10),
              path)


def test_cli_prune_runs_sparse_and_matches_onnxruntime_on_the_pruned_weights(tmp_path):
    import onnxruntime as ort

    import edgec

    src = tmp_path / "m.onnx"
    conv_model(src)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "edgec.compiler.cli", "compile", str(src), "-o",
                        str(out), "--prune", "0.9", "--prune-pattern", "4x1"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert "prune{sparsity=0.9,pattern=4x1}" in manifest["pipeline"]
    sparse = [k for k in manifest["kernel_strategies"] if k["op"] == "SparseConv"]
    assert [k["strategy"].split(",")[0] for k in sparse] == ["sparse bcsr 4x1"] * 2
    # the same pruning by the pass, written back to ONNX weights, for onnxruntime
    m = onnx.load(src)
    g = edgec.compiler.driver.load_graph(str(src), None, "m")
    run_pipeline(g, "prune{sparsity=0.9,pattern=4x1}")
    pruned = {n.name: n.inputs[1].const for n in g.nodes if n.op == "Conv"}
    for init, name in zip(m.graph.initializer, ("conv1", "conv2")):
        init.CopyFrom(numpy_helper.from_array(pruned[name], init.name))
        assert abs((pruned[name] == 0).mean() - 0.9) < 0.01
    x = np.random.default_rng(0).standard_normal((1, 8, 20, 20)).astype(np.float32)
    (want,) = ort.InferenceSession(m.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = edgec.load(out).run({"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # and the interpreter agrees with the compiled library on the pruned graph
    np.testing.assert_allclose(interpret(g, {"x": x})["y"], want, rtol=1e-4, atol=1e-4)
