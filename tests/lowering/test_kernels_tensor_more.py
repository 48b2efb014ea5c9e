"""Indexing, scatter, rearrangement, scan and contraction kernels, compiled to C and run, against
the interpreter (the ops' numpy references, themselves checked against onnxruntime).

As in test_kernels_tensor.py, each test builds one graph of many independent nodes, so one C
compile covers many attribute combinations, and the build must be free of gcc warnings.
"""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from edgec.codegen.renderers.c import CRenderer
from edgec.compiler.driver import compile as compile_model
from edgec.frontends import onnx as frontend
from edgec.ir import DType, Graph, TensorType
from edgec.lowering.lower import lower_node
from edgec.runtime.loader import load

F32, F16, I32, I64 = DType.F32, DType.F16, DType.I32, DType.I64


def i64(*v) -> np.ndarray:
    return np.array(v, dtype=np.int64)


def _outputs(g: Graph, nodes) -> None:
    g.outputs = [o for n in nodes for o in n.outputs]


def _kernel_c(node) -> str:
    return CRenderer().kernel(lower_node(node, 0).kernel)


def _signs(rng, shape) -> np.ndarray:
    return rng.choice([-1, 1], shape).astype(np.float32)


# -- reductions and scans -------------------------------------------------------------------

MORE = ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
AXES = [None, [0], [1], [3], [-1, 0], [1, 3], [0, 1, 3]]


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_more(check, keepdims):
    g = Graph("reduce")
    x = g.add_input("x", TensorType((3, 4, 1, 5), F32))
    w = g.add_input("w", TensorType((2, 37), F32))
    e = g.add_input("e", TensorType((2, 0, 3), F32))
    nodes = []
    for op in MORE:
        src = g.add_node("Abs", [x]).output if op == "ReduceLogSum" else x
        for k, axes in enumerate(AXES):
            ins = [src] if axes is None else [src, g.const(i64(*axes), f"a{k}")]
            nodes.append(g.add_node(op, ins, {"keepdims": keepdims}))
        nodes.append(g.add_node(op, [w, g.const(i64(1), "wa")], {"keepdims": keepdims}))
        nodes.append(g.add_node(op, [e, g.const(i64(1), "ea")], {"keepdims": keepdims}))
    _outputs(g, nodes)
    rng = np.random.default_rng(1)
    check(g, {"x": rng.uniform(0.5, 1.5, (3, 4, 1, 5)).astype(np.float32) *
              _signs(rng, (3, 4, 1, 5)),
              "w": rng.uniform(-3, 3, (2, 37)).astype(np.float32),
              "e": np.zeros((2, 0, 3), np.float32)})


def test_reduce_more_integer_and_float16(check):
    g = Graph("reducei")
    xi = g.add_input("xi", TensorType((3, 4), I32))
    xh = g.add_input("xh", TensorType((2, 40), F16))
    nodes = [g.add_node(op, [xi, g.const(i64(a), f"a{a}")], {"keepdims": 0})
             for op in ("ReduceL1", "ReduceL2", "ReduceSumSquare") for a in (0, 1)]
    nodes += [g.add_node(op, [xh, g.const(i64(a), f"h{a}")])
              for op in MORE + ["ReduceSum", "ReduceMean"] for a in (0, 1)
              if op != "ReduceLogSum"]
    _outputs(g, nodes)
    rng = np.random.default_rng(2)
    xhv = rng.uniform(-4, 4, (2, 40)).astype(np.float16)
    xhv[0, :3] = [60000, 60000, -60000]  # a float16 running sum would overflow
    check(g, {"xi": rng.integers(-7, 8, (3, 4)).astype(np.int32), "xh": xhv}, tol=1e-3)


def test_log_sum_exp_extremes(check):
    g = Graph("lse")
    x = g.add_input("x", TensorType((4, 3), F32))
    _outputs(g, [g.add_node("ReduceLogSumExp", [x, g.const(i64(1), "a")])])
    check(g, {"x": np.array([[1000, 1000, 999], [-1000, -np.inf, -1000],
                             [-np.inf, -np.inf, -np.inf], [np.inf, 1, 2]], np.float32)})


def test_argmin(check):
    g = Graph("argmin")
    x = g.add_input("x", TensorType((3, 4, 5), F32))
    t = g.add_input("t", TensorType((2, 6), I32))
    nodes = [g.add_node(op, [v], {"axis": a, "keepdims": k, "select_last_index": s})
             for op in ("ArgMin", "ArgMax")
             for v, axes in ((x, (0, 1, -1)), (t, (0, 1))) for a in axes for k in (0, 1)
             for s in (0, 1)]
    _outputs(g, nodes)
    xv = np.random.default_rng(6).integers(-3, 3, (3, 4, 5)).astype(np.float32)  # ties
    xv[0, 0, :2] = np.nan
    xv[1, :, 1] = np.nan
    check(g, {"x": xv, "t": np.array([[1, 5, 5, 2, 0, 5], [-1, -1, -3, -1, -2, -1]], np.int32)})


def test_topk(check):
    g = Graph("topk")
    x = g.add_input("x", TensorType((3, 4, 7), F32))
    u = g.add_input("u", TensorType((2, 9), DType.U64))
    nodes = []
    for k, (axis, largest, kk) in enumerate([(-1, 1, 3), (-1, 0, 7), (1, 1, 2), (0, 0, 3),
                                             (2, 1, 1), (1, 0, 0), (0, 1, 1)]):
        nodes.append(g.add_node("TopK", [x, g.const(i64(kk), f"k{k}")],
                                {"axis": axis, "largest": largest}))
    nodes += [g.add_node("TopK", [u, g.const(i64(4), f"u{lg}")], {"largest": lg})
              for lg in (0, 1)]
    _outputs(g, nodes)
    rng = np.random.default_rng(3)
    xv = rng.integers(0, 5, (3, 4, 7)).astype(np.float32)  # many ties
    xv[0, 0, 2] = np.nan
    uv = rng.integers(0, 9, (2, 9)).astype(np.uint64)
    uv[0, 1] = 2**64 - 1
    check(g, {"x": xv, "u": uv})


def test_topk_values_only():
    """With the indices output unused the kernel writes the values alone."""
    g = Graph("topv")
    x = g.add_input("x", TensorType((8,), F32))
    n = g.add_node("TopK", [x, g.const(i64(3), "k")], num_outputs=1)
    assert "indices" not in _kernel_c(n)


def test_cumulative(check):
    g = Graph("cum")
    x = g.add_input("x", TensorType((2, 3, 4), F32))
    xi = g.add_input("xi", TensorType((5,), I32))
    xh = g.add_input("xh", TensorType((3, 4), F16))
    nodes = []
    for op in ("CumSum", "CumProd"):
        for axis in (0, 1, -1):
            for excl in (0, 1):
                for rev in (0, 1):
                    attrs = {"exclusive": excl, "reverse": rev}
                    nodes.append(g.add_node(op, [x, g.const(np.int32(axis), "ax")], attrs))
                    nodes.append(g.add_node(op, [xh, g.const(i64(axis % 2), "ah")], attrs))
                    if axis == 0:
                        nodes.append(g.add_node(op, [xi, g.const(i64(0), "ai")], attrs))
    _outputs(g, nodes)
    rng = np.random.default_rng(4)
    check(g, {"x": rng.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32),
              "xi": np.array([1, -2, 3, 4, -5], np.int32),
              "xh": rng.uniform(0.5, 1.5, (3, 4)).astype(np.float16)}, tol=1e-3)


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]), ("ii->i", [(4, 4)]), ("...ii->...i", [(2, 3, 3)]),
    ("i,i", [(5,), (5,)]), ("ij->", [(3, 4)]), ("ba", [(3, 4)]), ("ij,kj->ik", [(2, 3), (4, 3)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]), ("i,j->ij", [(3,), (4,)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ijk,ikl,il->jl", [(2, 3, 4), (2, 4, 5), (2, 5)]), ("...->...", [(2, 3)]), ("ii", [(3, 3)]),
]


def test_einsum(check):
    g = Graph("einsum")
    nodes = []
    for k, (eq, shapes) in enumerate(EINSUMS):
        xs = [g.add_input(f"x{k}_{j}", TensorType(s, F32)) for j, s in enumerate(shapes)]
        nodes.append(g.add_node("Einsum", xs, {"equation": eq}))
    a = g.add_input("a", TensorType((3, 4), I64))
    nodes.append(g.add_node("Einsum", [a, a], {"equation": "ij,kj->ik"}))
    _outputs(g, nodes)
    check(g)


def test_einsum_loop_order():
    """ij,jk->ik accumulates rows of y (inner loop unit stride in x1 and y); ij,kj->ik keeps
    one accumulator over j, already unit stride in both operands."""
    g = Graph("order")
    a = g.add_input("a", TensorType((3, 7), F32))
    b = g.add_input("b", TensorType((7, 5), F32))
    text = _kernel_c(g.add_node("Einsum", [a, b], {"equation": "ij,jk->ik"}))
    assert "y[ii * 5 + ik] = y[ii * 5 + ik] + x0[ii * 7 + ij] * x1[ij * 5 + ik];" in text
    text = _kernel_c(g.add_node("Einsum", [a, a], {"equation": "ij,kj->ik"}))
    assert "acc = acc + x0[ii * 7 + ij] * x0[ik * 7 + ij];" in text


# -- gathers and scatters -------------------------------------------------------------------

def test_gather_scatter_elements(check):
    g = Graph("elements")
    x = g.add_input("x", TensorType((3, 4), F32))
    xi = g.add_input("xi", TensorType((3, 4), I32))
    idx0 = g.add_input("idx0", TensorType((2, 4), I64))
    idx1 = g.add_input("idx1", TensorType((3, 2), DType.I32))
    u0 = g.add_input("u0", TensorType((2, 4), F32))
    u1 = g.add_input("u1", TensorType((3, 2), F32))
    u1i = g.add_input("u1i", TensorType((3, 2), I32))
    nodes = [g.add_node("GatherElements", [x, idx0], {"axis": 0}),
             g.add_node("GatherElements", [x, idx1], {"axis": -1}),
             g.add_node("GatherElements", [x, g.const(i64([2], [-1]), "ci")], {"axis": 1})]
    for red in ("none", "add", "mul", "max", "min"):
        nodes += [g.add_node("ScatterElements", [x, idx0, u0], {"axis": 0, "reduction": red}),
                  g.add_node("ScatterElements", [x, idx1, u1], {"axis": 1, "reduction": red}),
                  g.add_node("ScatterElements", [xi, idx1, u1i], {"axis": 1,
                                                                   "reduction": red})]
    _outputs(g, nodes)
    rng = np.random.default_rng(7)
    feeds = {"x": rng.standard_normal((3, 4)).astype(np.float32),
             "xi": rng.integers(-9, 9, (3, 4)).astype(np.int32),
             "idx0": i64([0, 2, -1, 1], [0, 0, 2, -3]),  # repeats: last write / reduce in order
             "idx1": np.array([[1, 1], [-1, 0], [3, 3]], np.int32),
             "u0": rng.standard_normal((2, 4)).astype(np.float32),
             "u1": rng.standard_normal((3, 2)).astype(np.float32),
             "u1i": rng.integers(-9, 9, (3, 2)).astype(np.int32)}
    check(g, feeds)


def test_gather_scatter_nd(check):
    g = Graph("nd")
    x = g.add_input("x", TensorType((2, 3, 4), F32))
    i1 = g.add_input("i1", TensorType((2, 2), I64))
    i2 = g.add_input("i2", TensorType((2, 1, 1), I64))
    i3 = g.add_input("i3", TensorType((2, 3, 1), I64))
    u = g.add_input("u", TensorType((2, 4), F32))
    u3 = g.add_input("u3", TensorType((3, 1, 3, 4), F32))
    nodes = [g.add_node("GatherND", [x, i1]), g.add_node("GatherND", [x, i2]),
             g.add_node("GatherND", [x, i2], {"batch_dims": 1}),
             g.add_node("GatherND", [x, i3], {"batch_dims": 2}),
             g.add_node("GatherND", [x, g.const(i64([1, 2, 3], [0, -1, 0]), "full")])]
    for red in ("none", "add", "mul", "max", "min"):
        nodes += [g.add_node("ScatterND", [x, i1, u], {"reduction": red}),
                  g.add_node("ScatterND", [x, g.const(i64([[0]], [[1]], [[0]]), "i0"), u3],
                             {"reduction": red})]
    _outputs(g, nodes)
    rng = np.random.default_rng(8)
    check(g, {"x": rng.standard_normal((2, 3, 4)).astype(np.float32),
              "i1": i64([1, 2], [-2, -1]), "i2": i64([[1]], [[0]]),
              "i3": i64([[3], [0], [-1]], [[2], [2], [1]]),
              "u": rng.standard_normal((2, 4)).astype(np.float32),
              "u3": rng.standard_normal((3, 1, 3, 4)).astype(np.float32)})


def test_tensor_scatter_and_one_hot(check):
    g = Graph("cache")
    cache = g.add_input("cache", TensorType((2, 3, 6, 4), F32))
    upd = g.add_input("upd", TensorType((2, 3, 3, 4), F32))
    w = g.add_input("w", TensorType((2,), I64))
    idx = g.add_input("idx", TensorType((2, 3), I64))
    fidx = g.add_input("fidx", TensorType((4,), F32))
    vals = g.add_input("vals", TensorType((2,), F32))
    nodes = [g.add_node("TensorScatter", [cache, upd, w], {"mode": m}) for m in
             ("linear", "circular")]
    nodes.append(g.add_node("TensorScatter", [cache, upd]))
    nodes += [g.add_node("OneHot", [idx, g.const(i64(5), "d"), vals], {"axis": a})
              for a in (-1, 0, 1)]
    nodes.append(g.add_node("OneHot", [fidx, g.const(np.float32(3), "d3"),
                                       g.const(i64(-1, 7), "v3")]))
    _outputs(g, nodes)
    rng = np.random.default_rng(9)
    check(g, {"cache": rng.standard_normal((2, 3, 6, 4)).astype(np.float32),
              "upd": rng.standard_normal((2, 3, 3, 4)).astype(np.float32),
              "w": i64(1, 3), "idx": i64([0, 4, -1], [9, -5, 2]),
              "fidx": np.array([0.7, 2.2, -1.5, 3.0], np.float32),
              "vals": np.array([-2, 3], np.float32)})


# -- rearrangements and masks ---------------------------------------------------------------

def test_rearrangements(check):
    g = Graph("rearr")
    x = g.add_input("x", TensorType((2, 8, 3, 2), F32))
    s = g.add_input("s", TensorType((2, 3, 4, 6), F32))
    seq = g.add_input("seq", TensorType((4, 3, 2), F32))
    lens = g.add_input("lens", TensorType((3,), I64))
    bt = g.add_input("bt", TensorType((3, 5), I32))
    nodes = [g.add_node("DepthToSpace", [x], {"blocksize": 2, "mode": m}) for m in ("DCR", "CRD")]
    nodes += [g.add_node("SpaceToDepth", [s], {"blocksize": b}) for b in (1, 2)]
    nodes += [g.add_node("ReverseSequence", [seq, lens]),
              g.add_node("ReverseSequence", [bt, g.const(np.array([5, 0, 2], np.int32), "l2")],
                         {"batch_axis": 0, "time_axis": 1})]
    _outputs(g, nodes)
    rng = np.random.default_rng(10)
    check(g, {"x": rng.standard_normal((2, 8, 3, 2)).astype(np.float32),
              "s": rng.standard_normal((2, 3, 4, 6)).astype(np.float32),
              "seq": rng.standard_normal((4, 3, 2)).astype(np.float32),
              "lens": i64(4, 1, 9), "bt": rng.integers(-9, 9, (3, 5)).astype(np.int32)})


def test_trilu_and_eye_like(check):
    g = Graph("masks")
    x = g.add_input("x", TensorType((2, 3, 5), F32))
    k = g.add_input("k", TensorType((), I64))
    xi = g.add_input("xi", TensorType((4, 4), DType.U8))
    nodes = [g.add_node("Trilu", [x] if kk is None else [x, g.const(np.int64(kk), f"k{kk}")],
                        {"upper": up}) for up in (0, 1) for kk in (None, 1, -2, 9)]
    nodes += [g.add_node("Trilu", [x, k], {"upper": up}) for up in (0, 1)]
    nodes += [g.add_node("Trilu", [xi])]
    nodes += [g.add_node("EyeLike", [x2], {"k": kk} | ({"dtype": dt} if dt else {}))
              for x2 in (xi,) for kk in (0, 1, -3, 5) for dt in (None, 1, 9)]
    _outputs(g, nodes)
    rng = np.random.default_rng(11)
    check(g, {"x": rng.standard_normal((2, 3, 5)).astype(np.float32), "k": np.int64(-1),
              "xi": rng.integers(1, 9, (4, 4)).astype(np.uint8)})


def test_compress_nonzero_col2im(check):
    g = Graph("select")
    x = g.add_input("x", TensorType((3, 4), F32))
    nodes = [g.add_node("Compress", [x, g.const(np.array([1, 0, 1], bool), "c0")], {"axis": 0}),
             g.add_node("Compress", [x, g.const(np.array([0, 1, 1, 0], bool), "c1")],
                        {"axis": -1}),
             g.add_node("Compress", [x, g.const(np.array([0, 1, 0, 0, 1, 1], bool), "c2")]),
             g.add_node("Compress", [x, g.const(np.array([0, 0], bool), "c3")], {"axis": 1}),
             g.add_node("NonZero", [g.const(np.array([[0, 2, 0], [1, 0, 3]], np.int32), "nz")])]
    cols = g.add_input("cols", TensorType((2, 8, 6), F32))
    nodes += [g.add_node("Col2Im", [cols, g.const(i64(4, 4), "im"), g.const(i64(2, 2), "bl")],
                         {"strides": [2, 1], "pads": [0, 0, 1, 1], "dilations": [1, 2]}),
              g.add_node("Col2Im", [cols, g.const(i64(3, 4), "im2"), g.const(i64(2, 2), "bl2")])]
    _outputs(g, nodes)
    check(g)


def test_unique(check):
    """Unique of a constant (folded away in a real pipeline; here its kernel writes it)."""
    g = Graph("unique")
    c = g.const(np.array([[2, 1, 2], [0, 1, 0], [2, 1, 2]], np.int64), "c")
    nodes = [g.add_node("Unique", [c], {"sorted": s} | ({} if a is None else {"axis": a}))
             for a in (None, 1) for s in (0, 1)]
    _outputs(g, nodes)
    check(g)


# -- ONNX forms the frontend converts ---------------------------------------------------------

def _onnx_model(node, inputs: dict, inits: dict, opset: int) -> onnx.ModelProto:
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
          for n, a in inputs.items()]
    out = [onnx.ValueInfoProto(name=o) for o in node.output]  # onnxruntime infers the types
    graph = helper.make_graph([node], "g", vi, out,
                              [numpy_helper.from_array(a, n) for n, a in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _against_onnxruntime(model, feeds: dict, out_dir) -> None:
    """Compile `model` to C, run it and compare with onnxruntime on `feeds`."""
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    compile_model(model, out_dir, name="m", log=io.StringIO())
    got = load(out_dir).run(feeds)
    for w, o in zip(want, model.graph.output, strict=True):
        np.testing.assert_allclose(got[o.name], w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,axes", [([3, 2], None), ([5, 1, 2], [1, 0, 2]),
                                        ([2, 7], [-2, -1]), ([4], [1])])
def test_center_crop_pad(tmp_path, shape, axes):
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"],
                            **({} if axes is None else {"axes": axes}))
    shape = shape if axes is not None else [3] + shape
    model = _onnx_model(node, {"x": x}, {"s": np.array(shape, np.int64)}, 18)
    _against_onnxruntime(model, {"x": x}, tmp_path)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample(tmp_path, monkeypatch, mode):
    """Upsample exists up to opset 9, where onnxruntime still runs it."""
    monkeypatch.setattr(frontend, "MIN_OPSET", 9)
    x = np.random.default_rng(12).standard_normal((1, 2, 3, 4)).astype(np.float32)
    node = helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)
    model = _onnx_model(node, {"x": x}, {"s": np.array([1, 1, 2, 3], np.float32)}, 9)
    _against_onnxruntime(model, {"x": x}, tmp_path)


# -- every dtype through the data-movement ops ------------------------------------------------

DTYPES = [DType.F16, DType.F64, DType.I8, DType.U8, DType.I16, DType.U16, DType.I32, DType.U32,
          DType.I64, DType.U64, DType.BOOL]


def test_data_movement_dtypes(check):
    """One graph: each dtype through the ops that move data without arithmetic."""
    g = Graph("dtypes")
    nodes, feeds = [], {}
    rng = np.random.default_rng(13)
    idx = g.const(i64([1, 0, 2], [2, 2, 0]), "idx")
    cond = g.add_input("cond", TensorType((3, 4), DType.BOOL))
    feeds["cond"] = rng.random((3, 4)) < 0.5
    for dt in DTYPES:
        x = g.add_input(f"x_{dt}", TensorType((3, 4), dt))
        y = g.add_input(f"y_{dt}", TensorType((2, 3), dt))
        feeds[x.name] = (rng.random((3, 4)) < 0.5 if dt is DType.BOOL else
                         rng.integers(0, 100, (3, 4)).astype(dt.np))
        feeds[y.name] = (rng.random((2, 3)) < 0.5 if dt is DType.BOOL else
                         rng.integers(0, 100, (2, 3)).astype(dt.np))
        c = lambda v, n, dt=dt: g.const(v, f"{n}_{dt}")  # noqa: E731
        nodes += [
            g.add_node("Transpose", [x]), g.add_node("Concat", [x, x], {"axis": 0}),
            g.add_node("Slice", [x, c(i64(1, 3), "s"), c(i64(3, 0), "e"), c(i64(0, 1), "a"),
                                 c(i64(1, -1), "st")]),
            g.add_node("Pad", [x, c(i64(1, 0, 0, 2), "p")], {"mode": "edge"}),
            g.add_node("Expand", [y, c(i64(2, 2, 3), "sh")]),
            g.add_node("Tile", [y, c(i64(2, 1), "r")]),
            g.add_node("Gather", [x, c(i64(2, 0), "gi")], {"axis": 0}),
            g.add_node("Where", [cond, x, x]),
            g.add_node("GatherElements", [x, idx], {"axis": 0}),
            g.add_node("ScatterElements", [x, idx, y]),
            g.add_node("GatherND", [x, c(i64([1, 2], [0, 0]), "nd")]),
            g.add_node("Trilu", [x]), g.add_node("Compress", [x, c(np.array([1, 0, 1], bool),
                                                                     "cm")], {"axis": 0}),
            g.add_node("ReverseSequence", [x, c(i64(3, 1, 0, 2), "ln")]),
            g.add_node("Split", [x, c(i64(1, 3), "sp")], {"axis": 1}, num_outputs=2),
        ]
    _outputs(g, nodes)
    check(g, feeds)


def test_opset9_attribute_forms(tmp_path, monkeypatch):
    """Before opset 10 TopK's k and Slice's starts/ends/axes are attributes."""
    monkeypatch.setattr(frontend, "MIN_OPSET", 9)
    x = np.random.default_rng(14).standard_normal((3, 5)).astype(np.float32)
    topk = helper.make_node("TopK", ["x"], ["v", "i"], k=2, axis=1)
    _against_onnxruntime(_onnx_model(topk, {"x": x}, {}, 9), {"x": x}, tmp_path / "topk")
    sl = helper.make_node("Slice", ["x"], ["y"], starts=[1, -4], ends=[3, 100], axes=[0, 1])
    _against_onnxruntime(_onnx_model(sl, {"x": x}, {}, 9), {"x": x}, tmp_path / "slice")
