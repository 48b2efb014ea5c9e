"""If, Loop and Scan through generated C, against onnxruntime: a run-time If compiles to a real
branch, a constant If folds away, fixed-count Loop and Scan run as C loops."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from harness import rel_error
from onnx import TensorProto as T
from onnx import helper

import edgec
from edgec.errors import EdgecError, ShapeError
from edgec.frontends.onnx import import_onnx
from edgec.ir import parse, print_graph


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "cf", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(m)
    return m


def control_flow_model() -> onnx.ModelProto:
    """If on the sign of sum(x) (branches read outer x, y), a Loop accumulating x with a scan
    output, a reverse-output Scan, and an If nested inside the Loop body."""
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t_out"])], "then", [],
                               [vi("t_out", T.FLOAT, [2, 3])],
                               initializer=[helper.make_tensor("two", T.FLOAT, [], [2.0])])
    else_g = helper.make_graph([helper.make_node("Neg", ["y"], ["e_out"])], "else", [],
                               [vi("e_out", T.FLOAT, [2, 3])])
    odd_g = helper.make_graph([helper.make_node("Sub", ["acc_out", "x"], ["o"])], "odd", [],
                              [vi("o", T.FLOAT, [2, 3])])
    even_g = helper.make_graph([helper.make_node("Identity", ["acc_out"], ["e"])], "even", [],
                               [vi("e", T.FLOAT, [2, 3])])
    body = helper.make_graph([
        helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Cast", ["i"], ["i_f"], to=T.FLOAT),
        helper.make_node("Greater", ["i_f", "one_f"], ["big"]),
        helper.make_node("If", ["big"], ["picked"], then_branch=odd_g, else_branch=even_g),
        helper.make_node("Mul", ["picked", "i_f"], ["scan_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc_in", T.FLOAT, [2, 3])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [2, 3]),
         vi("scan_out", T.FLOAT, [2, 3])],
        initializer=[helper.make_tensor("one_f", T.FLOAT, [], [1.0])])
    scan_body = helper.make_graph([helper.make_node("Add", ["s_in", "xt"], ["s_out"]),
                                   helper.make_node("Mul", ["s_out", "xt"], ["yt"])], "sbody",
                                  [vi("s_in", T.FLOAT, [3]), vi("xt", T.FLOAT, [3])],
                                  [vi("s_out", T.FLOAT, [3]), vi("yt", T.FLOAT, [3])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["r"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Loop", ["M", "", "x"], ["acc", "scans"], body=body),
             helper.make_node("Scan", ["s0", "x"], ["sf", "ys"], body=scan_body,
                              num_scan_inputs=1, scan_output_directions=[1])]
    return model(nodes, [vi("x", T.FLOAT, [2, 3]), vi("y", T.FLOAT, [2, 3])],
                 [vi("r", T.FLOAT, [2, 3]), vi("acc", T.FLOAT, [2, 3]),
                  vi("scans", T.FLOAT, [4, 2, 3]), vi("sf", T.FLOAT, [3]),
                  vi("ys", T.FLOAT, [2, 3])],
                 [helper.make_tensor("zero", T.FLOAT, [], [0.0]),
                  helper.make_tensor("M", T.INT64, [], [4]),
                  helper.make_tensor("s0", T.FLOAT, [3], [0, 1, 2])])


def test_control_flow_matches_onnxruntime(tmp_path):
    m = control_flow_model()
    graph = import_onnx(m)
    assert {"If", "Loop", "Scan"} <= set(graph.op_counts())
    assert print_graph(parse(print_graph(graph))) == print_graph(graph)
    art = edgec.compile(m, tmp_path / "out", name="cf", verify_each=True)
    assert "if (" in (tmp_path / "out/cf.c").read_text()  # a real branch in C
    lib = edgec.load(art.out_dir)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for sign in (1.0, -1.0):  # both branches of the run-time If
        x = (sign * np.abs(rng.standard_normal((2, 3)))).astype(np.float32)
        y = rng.standard_normal((2, 3)).astype(np.float32)
        want = sess.run(None, {"x": x, "y": y})
        got = lib.run({"x": x, "y": y})
        for w, name in zip(want, ["r", "acc", "scans", "sf", "ys"]):
            assert rel_error(got[name], w) < 1e-6, name


def test_constant_condition_folds_away():
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"])], "t", [],
                               [vi("a", T.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "e", [],
                               [vi("b", T.FLOAT, [2])])
    nodes = [helper.make_node("Shape", ["x"], ["sh"]),
             helper.make_node("ReduceSum", ["sh"], ["n"], keepdims=0),
             helper.make_node("Equal", ["n", "two"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    m = model(nodes, [vi("x", T.FLOAT, [2])], [vi("y", T.FLOAT, [2])],
              [helper.make_tensor("two", T.INT64, [], [2])])
    g = import_onnx(m)
    assert "If" not in g.op_counts() and g.op_counts()["Relu"] == 1


def test_branches_of_different_shapes_are_refused():
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"])], "t", [],
                               [vi("a", T.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["b"], axis=0)], "e", [],
                               [vi("b", T.FLOAT, [4])])
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
              [vi("c", T.BOOL, []), vi("x", T.FLOAT, [2])], [vi("y", T.FLOAT, [2])])
    with pytest.raises(ShapeError, match="same shapes"):
        import_onnx(m)


def loop_model() -> onnx.ModelProto:
    """y = x + min(5, steps until x + k >= limit): a Loop whose condition may turn false early,
    which edgec reports at run time as a status (it compiles fixed-count loops only)."""
    body = helper.make_graph([
        helper.make_node("Add", ["acc_in", "one"], ["acc_out"]),
        helper.make_node("Less", ["acc_out", "limit"], ["cond_out"])], "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc_in", T.FLOAT, [1])],
        [vi("cond_out", T.BOOL, [1]), vi("acc_out", T.FLOAT, [1])],
        initializer=[helper.make_tensor("one", T.FLOAT, [], [1.0])])
    return model([helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)],
                 [vi("x", T.FLOAT, [1]), vi("limit", T.FLOAT, [1])], [vi("y", T.FLOAT, [1])],
                 [helper.make_tensor("M", T.INT64, [], [5])])


def test_loop_exiting_early_is_a_run_time_error(tmp_path):
    lib = edgec.load(edgec.compile(loop_model(), tmp_path / "out", name="loop").out_dir)
    got = lib.run({"x": np.zeros(1, np.float32), "limit": np.full(1, 100, np.float32)})
    assert got["y"][0] == 5.0
    with pytest.raises(EdgecError, match="trip count"):
        lib.run({"x": np.zeros(1, np.float32), "limit": np.full(1, 2, np.float32)})


def test_opset8_batched_scan(tmp_path):
    body = helper.make_graph([helper.make_node("Add", ["s_in", "xt"], ["s_out"]),
                              helper.make_node("Mul", ["s_out", "xt"], ["yt"])], "body",
                             [vi("s_in", T.FLOAT, [3]), vi("xt", T.FLOAT, [3])],
                             [vi("s_out", T.FLOAT, [3]), vi("yt", T.FLOAT, [3])])
    node = helper.make_node("Scan", ["", "s0", "x"], ["sf", "ys"], body=body,
                            num_scan_inputs=1, directions=[1])
    g = helper.make_graph([node], "scan8", [vi("s0", T.FLOAT, [2, 3]), vi("x", T.FLOAT, [2, 4, 3])],
                          [vi("sf", T.FLOAT, [2, 3]), vi("ys", T.FLOAT, [2, 4, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 8)], ir_version=4)
    rng = np.random.default_rng(5)
    feeds = {"s0": rng.standard_normal((2, 3)).astype(np.float32),
             "x": rng.standard_normal((2, 4, 3)).astype(np.float32)}
    want = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    lib = edgec.load(edgec.compile(m, tmp_path / "out", name="scan8").out_dir)
    got = lib.run(feeds)
    for w, name in zip(want, ["sf", "ys"]):
        assert rel_error(got[name], w) < 1e-6, name
