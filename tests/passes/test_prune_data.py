"""Data-aware pruning (passes/prune_data.py) and channel pruning (passes/prune_channels.py).

- the OBS update on a case worked out by hand (two identical inputs: the pruned weight moves
  onto the kept one), and against magnitude pruning on correlated inputs: lower output error
  at the same sparsity and pattern;
- a convolution's input patches (im2col) times its weight give what the reference
  interpreter computes, for strides, pads and dilations;
- channel pruning: shapes shrink, and the graph computes what the original computes with the
  removed channels' weights and biases set to zero; outputs a residual or a graph output
  reads keep their channels;
- both from the CLI (`--prune ... --calib`, `--prune-pattern channel`) against onnxruntime.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from edgec.ir import DType, Graph, TensorType, interpret, verify
from edgec.ir.records import PruneNote
from edgec.passes import run_pipeline
from edgec.passes.prune import Prune, prune_weight
from edgec.passes.prune_data import layer_inputs, obs_prune


def test_obs_moves_a_pruned_weight_onto_its_twin_input():
    # x2 == x1: y = 1 x1 + 0.9 x2 = 1.9 x1, so one weight can go at no cost, the other
    # becoming 1.9; magnitude pruning would keep 1 and lose a third of y
    x = np.random.default_rng(0).standard_normal((500, 1))
    xx = np.hstack([x, x])
    got = obs_prune(np.array([[1.0, 0.9]]), xx.T @ xx / 500, 0.5, "unstructured", 1, 0,
                    damp=1e-8)
    assert sorted(np.round(got[0], 5).tolist()) == [0.0, 1.9]


@pytest.mark.parametrize("pattern,kind,a,b", [("unstructured", "unstructured", 1, 0),
                                              ("4x1", "rows", 4, 0), ("2:4", "nm", 2, 4)])
def test_obs_beats_magnitude_on_correlated_inputs(pattern, kind, a, b):
    # inputs of scales from 0.1 to 10 (as activations have), correlated: magnitude alone
    # misjudges what a weight is worth
    rng = np.random.default_rng(1)
    n = 96
    scale = np.exp(rng.uniform(np.log(0.1), np.log(10), n))
    x = (rng.standard_normal((3000, n)) @ rng.standard_normal((n, n)) * 0.3 +
         rng.standard_normal((3000, n))) * scale
    w = rng.standard_normal((32, n))
    h = x.T @ x / len(x)
    got = obs_prune(w, h, 0.6, kind, a, b, damp=0.01)
    mag = prune_weight(w, 0.6, pattern)
    err = lambda v: np.linalg.norm(x @ (v - w).T) / np.linalg.norm(x @ w.T)  # noqa: E731
    assert err(got) < 0.5 * err(mag), (err(got), err(mag))
    # and near the best the kept weights can do: each row's least-squares refit on its mask
    best = np.zeros_like(w)
    for r in range(32):
        keep = got[r] != 0
        best[r, keep] = np.linalg.solve(h[np.ix_(keep, keep)], h[keep] @ w[r])
    assert err(got) < 1.25 * err(best), (err(got), err(best))
    zero = got == 0
    if kind == "rows":
        blocks = zero.reshape(8, 4, n)
        assert (blocks.all(axis=1) == blocks.any(axis=1)).all()  # whole 4x1 blocks
        assert abs(blocks.all(axis=1).mean() - 0.6) < 0.01
    elif kind == "nm":
        assert (zero.reshape(32, -1, 4).sum(axis=2) == 2).all()
    else:
        assert abs(zero.mean() - 0.6) < 0.01


@pytest.mark.parametrize("strides,pads,dil", [([1, 1], [1, 1, 1, 1], [1, 1]),
                                              ([2, 1], [0, 2, 1, 0], [1, 1]),
                                              ([1, 2], [2, 2, 2, 2], [2, 1])])
def test_conv_patches_times_weight_is_the_convolution(strides, pads, dil):
    rng = np.random.default_rng(2)
    g = Graph("g")
    x = g.add_input("x", TensorType((2, 3, 9, 8), DType.F32))
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    node = g.add_node("Conv", [x, g.const(w, "w")], {"strides": strides, "pads": pads,
                                                     "dilations": dil}, name="c")
    g.outputs.append(node.output)
    xv = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    want = interpret(g, {"x": xv})[node.output.name]
    p = layer_inputs(node, xv.astype(np.float64))
    got = (p @ w.reshape(5, -1).T).reshape(2, *want.shape[2:], 5).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def mlp_graph(rng) -> Graph:
    g = Graph("g")
    x = g.add_input("x", TensorType((1, 32), DType.F32))
    h = g.add_node("Gemm", [x, g.const(rng.standard_normal((48, 32)).astype(np.float32), "a"),
                            g.const(rng.standard_normal(48).astype(np.float32), "ab")],
                   {"transB": 1}, name="fc1").output
    h = g.add_node("Relu", [h], name="relu").output
    y = g.add_node("MatMul", [h, g.const(rng.standard_normal((48, 10)).astype(np.float32),
                                         "b")], name="fc2").output
    g.outputs.append(y)
    return g


def test_pass_with_samples_is_data_aware_and_loses_less():
    rng = np.random.default_rng(3)
    mix = rng.standard_normal((32, 32)) * np.exp(rng.uniform(-2, 2, 32))
    xs = (rng.standard_normal((64, 1, 32)) @ mix * 0.5).astype(np.float32)
    gm, gd, g0 = mlp_graph(np.random.default_rng(4)), mlp_graph(np.random.default_rng(4)), \
        mlp_graph(np.random.default_rng(4))
    run_pipeline(gm, "prune{sparsity=0.7}")
    run_pipeline(gd, [Prune(sparsity=0.7, feeds={"x": xs})])
    verify(gd)
    assert all(n.record.pruned.data_aware for n in gd.nodes if n.op != "Relu")
    for g in (gm, gd):
        w = [n.inputs[1].const for n in g.nodes if n.op != "Relu"]
        assert all(abs((v == 0).mean() - 0.7) < 0.01 for v in w)

    def err(g):
        got = np.concatenate([interpret(g, {"x": x})[g.outputs[0].name] for x in xs])
        want = np.concatenate([interpret(g0, {"x": x})[g0.outputs[0].name] for x in xs])
        return np.linalg.norm(got - want) / np.linalg.norm(want)

    assert err(gd) < 0.8 * err(gm), (err(gd), err(gm))


def conv_chain(rng, tiny=(1, 3)) -> Graph:
    """conv(4->6) -> Relu -> MaxPool -> conv(6->5) -> Gemm-free output; channels `tiny` of
    the first conv have weights and bias 100x smaller than the others."""
    g = Graph("g")
    x = g.add_input("x", TensorType((1, 4, 8, 8), DType.F32))
    w1 = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    b1 = rng.standard_normal(6).astype(np.float32)
    w1[list(tiny)] *= 0.01
    b1[list(tiny)] *= 0.01
    c1 = g.add_node("Conv", [x, g.const(w1, "w1"), g.const(b1, "b1")],
                    {"pads": [1, 1, 1, 1], "dilations": [1, 1], "strides": [1, 1]},
                    name="c1").output
    r = g.add_node("Relu", [c1], name="r").output
    p = g.add_node("MaxPool", [r], {"kernel_shape": [2, 2], "strides": [2, 2],
                                    "pads": [0, 0, 0, 0], "dilations": [1, 1], "ceil_mode": 0,
                                    "storage_order": 0}, name="p", num_outputs=1).output
    w2 = rng.standard_normal((5, 6, 3, 3)).astype(np.float32)
    y = g.add_node("Conv", [p, g.const(w2, "w2")],
                   {"pads": [1, 1, 1, 1], "dilations": [1, 1], "strides": [1, 1]},
                   name="c2").output
    g.outputs.append(y)
    return g


def test_channel_pruning_shrinks_and_rewires():
    rng = np.random.default_rng(5)
    g = conv_chain(rng)
    ref = conv_chain(np.random.default_rng(5))
    # the oracle: the original with channels 1 and 3 of c1 zeroed (c2 is an output: kept)
    c1 = ref.nodes[0]
    for k in (1, 2):
        a = c1.inputs[k].const.copy()
        a[[1, 3]] = 0
        ref.set_input(c1, k, ref.const(a, f"z{k}"))
    run_pipeline(g, "prune{sparsity=0.34,pattern=channel}")
    verify(g)
    convs = {n.name: n for n in g.nodes if n.op == "Conv"}
    assert convs["c1"].inputs[1].shape == (4, 4, 3, 3) and convs["c1"].inputs[2].shape == (4,)
    assert convs["c2"].inputs[1].shape == (5, 4, 3, 3)
    assert convs["c1"].record.pruned == PruneNote("channel", channels=(6, 4))
    assert "graph output" in convs["c2"].record.pruned.kept
    xv = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(interpret(g, {"x": xv})[g.outputs[0].name],
                               interpret(ref, {"x": xv})[ref.outputs[0].name],
                               rtol=1e-5, atol=1e-5)


def test_channel_pruning_keeps_what_a_residual_reads():
    g = Graph("g")
    x = g.add_input("x", TensorType((1, 4, 5, 5), DType.F32))
    rng = np.random.default_rng(6)
    c = g.add_node("Conv", [x, g.const(rng.standard_normal((4, 4, 1, 1)).astype(np.float32),
                                       "w")], {"dilations": [1, 1], "pads": [0] * 4,
                                               "strides": [1, 1]}, name="c").output
    y = g.add_node("Add", [c, x], name="res").output
    g.outputs.append(y)
    run_pipeline(g, "prune{sparsity=0.5,pattern=channel}")
    node = next(n for n in g.nodes if n.op == "Conv")
    assert node.inputs[1].shape == (4, 4, 1, 1)
    assert "read by Add res" in node.record.pruned.kept


CLI = [sys.executable, "-m", "edgec.compiler.cli", "compile"]


def onnx_mlp(path, rng):
    a = rng.standard_normal((40, 20)).astype(np.float32)
    b = rng.standard_normal((10, 40)).astype(np.float32)
    a[::3] *= 0.01  # every third neuron of fc1 matters little
    nodes = [helper.make_node("Gemm", ["x", "a", "ab"], ["h"], "fc1", transB=1),
             helper.make_node("Relu", ["h"], ["r"], "relu"),
             helper.make_node("Gemm", ["r", "b"], ["y"], "fc2", transB=1)]
    inits = [numpy_helper.from_array(a, "a"),
             numpy_helper.from_array(np.full(40, 0.1, np.float32) * (np.arange(40) % 3 != 0),
                                     "ab"),
             numpy_helper.from_array(b, "b")]
    m = helper.make_model(helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", T.FLOAT, [1, 20])],
        [helper.make_tensor_value_info("y", T.FLOAT, [1, 10])], inits),
        opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    onnx.save(m, path)
    return m


def test_cli_channel_and_data_aware_pruning_against_onnxruntime(tmp_path):
    import onnxruntime as ort

    import edgec

    rng = np.random.default_rng(7)
    m = onnx_mlp(tmp_path / "m.onnx", rng)
    xs = rng.standard_normal((32, 1, 20)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=xs)
    # channel: every third neuron of fc1 goes (14 of 40), fc2 loses those inputs
    out = tmp_path / "ch"
    subprocess.run([*CLI, str(tmp_path / "m.onnx"), "-o", str(out), "--name", "m", "--prune",
                    "0.35", "--prune-pattern", "channel"], check=True)
    zeroed = onnx.load(tmp_path / "m.onnx")
    for init in zeroed.graph.initializer:
        if init.name in ("a", "ab"):
            v = numpy_helper.to_array(init).copy()
            v[::3] = 0
            init.CopyFrom(numpy_helper.from_array(v, init.name))
    sess = ort.InferenceSession(zeroed.SerializeToString())
    lib = edgec.load(out)
    for x in xs[:4]:
        np.testing.assert_allclose(lib.run({"x": x})["y"], sess.run(None, {"x": x})[0],
                                   rtol=1e-4, atol=1e-4)
    # data-aware from the CLI: runs, and loses less on the samples than magnitude
    errs = {}
    for name, extra in (("mag", []), ("obs", ["--calib", str(tmp_path / "calib.npz")])):
        d = tmp_path / name
        subprocess.run([*CLI, str(tmp_path / "m.onnx"), "-o", str(d), "--name", "m", "--prune",
                        "0.6", *extra], check=True)
        lib = edgec.load(d)
        full = ort.InferenceSession(m.SerializeToString())
        got = np.concatenate([lib.run({"x": x})["y"] for x in xs])
        want = np.concatenate([full.run(None, {"x": x})[0] for x in xs])
        errs[name] = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert errs["obs"] < 0.8 * errs["mag"], errs


def test_groups_with_samples_prune_by_magnitude_and_say_so():
    # samples given to calibrate a quantization do not stop an Rx4 pruning: it is by
    # magnitude (the same weights as without samples) and the layers' note says why
    rng = np.random.default_rng(9)
    gs = [mlp_graph(np.random.default_rng(4)) for _ in range(2)]
    run_pipeline(gs[0], [Prune(sparsity=0.5, pattern="4x4",
                               feeds={"x": rng.standard_normal((8, 1, 32)).astype(np.float32)})])
    run_pipeline(gs[1], "prune{sparsity=0.5,pattern=4x4}")
    for a, b in zip(gs[0].nodes, gs[1].nodes):
        if a.op != "Relu":
            np.testing.assert_array_equal(a.inputs[1].const, b.inputs[1].const)
            assert not a.record.pruned.data_aware
            assert "magnitude" in a.record.pruned.by_magnitude
