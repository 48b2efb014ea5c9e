"""Checks one IR op against onnxruntime: the same one-node model built both ways.

`check(op, inputs, attrs)` builds an ONNX model (opset 21) and an edgec graph with one node,
runs onnxruntime and `edgec.ir.interpret`, and compares outputs (shape, dtype, values). It
also checks `verify`, the text round trip, and that the numpy reference itself returns the
inferred dtype and shape (the interpreter would otherwise silently cast).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from edgec.ir import DType, Graph, TensorType, get_op, interpret, parse, print_graph, verify

OPSET = 21


def run_onnxruntime(opname: str, inputs, attrs: dict, consts, n_outputs: int) -> list[np.ndarray]:
    names = [("" if a is None else f"x{i}") for i, a in enumerate(inputs)]
    while names and names[-1] == "":
        names.pop()
    graph_inputs, inits, feeds = [], [], {}
    for i, a in enumerate(inputs):
        if a is None:
            continue
        if i in consts:
            inits.append(numpy_helper.from_array(np.asarray(a), f"x{i}"))
        else:
            graph_inputs.append(helper.make_tensor_value_info(
                f"x{i}", helper.np_dtype_to_tensor_dtype(a.dtype), a.shape))
            feeds[f"x{i}"] = a
    onnx_attrs = {k: (numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v)
                  for k, v in attrs.items()}
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(opname, names, outs, **onnx_attrs)
    outputs = [onnx.ValueInfoProto(name=o) for o in outs]  # onnxruntime infers their types
    graph = helper.make_graph([node], "g", graph_inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              ir_version=10)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def build_graph(opname: str, inputs, attrs: dict, consts, n_outputs: int) -> Graph:
    g = Graph("one")
    vals = []
    for i, a in enumerate(inputs):
        if a is None:
            vals.append(None)
        elif i in consts:
            vals.append(g.const(a, f"c{i}", dtype=DType.from_numpy(a.dtype)))
        else:
            vals.append(g.add_input(f"x{i}", TensorType(a.shape, DType.from_numpy(a.dtype))))
    while vals and vals[-1] is None:
        vals.pop()
    node = g.add_node(opname, vals, attrs, name="n", num_outputs=n_outputs)
    g.outputs = list(node.outputs)
    return g


def check(opname: str, inputs, attrs: dict | None = None, *, consts=(), n_outputs: int = 1,
          rtol: float = 1e-5, atol: float = 1e-6) -> Graph:
    """Compare edgec's op with onnxruntime; `consts` lists the inputs that are constants."""
    attrs = dict(attrs or {})
    inputs = [None if a is None else np.asarray(a) for a in inputs]
    expected = run_onnxruntime(opname, inputs, attrs, set(consts), n_outputs)
    g = build_graph(opname, inputs, attrs, set(consts), n_outputs)
    verify(g)
    text = print_graph(g)
    assert print_graph(parse(text)) == text
    feeds = {v.name: inputs[int(v.name[1:])] for v in g.inputs}
    got = interpret(g, feeds)
    node = g.nodes[0]
    raw = get_op(opname).run([None if v is None else (v.const if v.is_const else
                                                       feeds[v.name]) for v in node.inputs],
                             node.attrs)
    for i, (v, exp) in enumerate(zip(g.outputs, expected, strict=True)):
        assert raw[i].dtype == v.dtype.np and raw[i].shape == v.shape, \
            f"output {i}: reference gives {raw[i].dtype}{raw[i].shape}, inference {v.type}"
        out = got[v.name]
        assert out.shape == exp.shape, f"output {i}: shape {out.shape}, onnxruntime {exp.shape}"
        assert out.dtype == exp.dtype, f"output {i}: dtype {out.dtype}, onnxruntime {exp.dtype}"
        if exp.dtype.kind in "fc":
            np.testing.assert_allclose(out, exp, rtol=rtol, atol=atol, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(out, exp, err_msg=f"output {i}")
    return g


def rand(*shape, dtype=np.float32, seed: int = 0, lo: float = -1.0, hi: float = 1.0):
    """Deterministic test data: uniform floats, or integers in [lo, hi]."""
    rng = np.random.default_rng(seed + 1000 * len(shape) + sum(shape))
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    return rng.uniform(lo, hi, size=shape).astype(dtype)
