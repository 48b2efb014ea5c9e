"""The ONNX frontend against onnxruntime: zoo models, old-opset forms, functions, external
data, and the errors a user sees for bad models and missing shapes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgec import zoo
from edgec.errors import FrontendError, ShapeError, UnsupportedOpError
from edgec.frontends.onnx import import_onnx
from edgec.ir import interpret, parse, print_graph, verify

RNG = np.random.default_rng(0)


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    scale = float(np.abs(b).max()) if b.size else 0.0
    return float(np.abs(a.astype(np.float64) - b).max()) / (scale or 1.0) if b.size else 0.0


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray] | None = None, tol: float = 1e-4,
          **kw):
    """Import, verify, round-trip the text form, and compare the interpreter with onnxruntime."""
    g = import_onnx(model, **kw)
    verify(g)
    text = print_graph(g)
    assert print_graph(parse(text)) == text
    if feeds is None:
        feeds = {v.name: RNG.standard_normal(v.shape).astype(v.dtype.np) for v in g.inputs}
    got = interpret(g, feeds)
    want = ort_run(model, feeds)
    assert [v.name for v in g.outputs] == [o.name for o in model.graph.output]
    for (name, a), b in zip(got.items(), want, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, name
        assert rel_err(a, b) < tol, (name, rel_err(a, b))
    return g


def make_model(nodes, inputs, outputs, inits=(), opset=13, **kw) -> onnx.ModelProto:
    def info(spec):
        name, *rest = spec
        shape = rest[0] if rest else None
        dtype = rest[1] if len(rest) > 1 else TensorProto.FLOAT
        return helper.make_tensor_value_info(name, dtype, shape)

    graph = helper.make_graph(nodes, "test_graph", [info(i) for i in inputs],
                              [info(o) for o in outputs],
                              [numpy_helper.from_array(a, n) for n, a in inits])
    kw.setdefault("opset_imports", [helper.make_opsetid("", opset)])
    m = helper.make_model(graph, **kw)
    m.ir_version = 8
    return m


def weights(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# -- the zoo ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mlp", "tiny_cnn", "mobilenet_v2"])
def test_zoo_model_matches_onnxruntime(name):
    g = check(zoo.MODELS[name]())
    assert g.name == "main_graph"


def test_resnet18_matches_onnxruntime():
    g = check(zoo.resnet18())
    counts = g.op_counts()
    assert counts["Conv"] == 20 and counts["BatchNormalization"] == 20 and counts["Add"] == 8
    assert g.outputs[0].shape == (1, 1000)


def test_mobilenet_shape_chain_folds_away():
    g = import_onnx(zoo.mobilenet_v2(opset=11))  # Unsqueeze with its `axes` attribute
    counts = g.op_counts()
    assert not {"Shape", "Gather", "Unsqueeze", "Concat", "Constant"} & set(counts)
    reshape = next(n for n in g.nodes if n.op == "Reshape")
    assert reshape.inputs[1].const.tolist() == [1, -1]
    assert counts["Clip"] == 35 and counts["Conv"] == 52
    assert all(n.inputs[1].is_const for n in g.nodes if n.op == "Clip")


@pytest.mark.parametrize("opset", [11, 14, 17])
def test_zoo_other_opsets(opset):
    check(zoo.tiny_cnn(opset=opset))


def test_names_are_kept():
    g = import_onnx(zoo.tiny_cnn())
    names = {v.name for v in g.values()}
    assert {"input", "output", "conv1.weight", "bn1.running_var",
            "/conv1/Conv_output_0", "/relu/Relu_output_0"} <= names
    assert any(n.name == "/conv1/Conv" for n in g.nodes)
    assert import_onnx(zoo.tiny_cnn(), name="my-net 2").name == "my_net_2"


def test_zoo_cli(tmp_path):
    out = tmp_path / "m.onnx"
    assert zoo.main(["tiny_cnn", "-o", str(out)]) == 0
    onnx.checker.check_model(onnx.load(str(out)))
    assert out.stat().st_size < 16_000


# -- older opset forms -------------------------------------------------------------------------

def test_split_attribute_form_opset11():
    m = make_model([helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, split=[2, 3, 1]),
                    helper.make_node("Split", ["x"], ["d", "e"], axis=0)],
                   [("x", [4, 6])], [("a",), ("b",), ("c",), ("d",), ("e",)], opset=11)
    g = check(m)
    assert all(n.inputs[1].is_const for n in g.nodes)


def test_split_num_outputs_opset18():
    m = make_model([helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
                   [("x", [2, 7])], [("a",), ("b",), ("c",)], opset=18)
    g = check(m)
    assert [v.shape for v in g.outputs] == [(2, 3), (2, 3), (2, 1)]


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [1, 2, -1, 0])
def test_softmax_opset11_coerces_to_2d(op, axis):
    m = make_model([helper.make_node(op, ["x"], ["y"], axis=axis)], [("x", [2, 3, 4])], [("y",)],
                   opset=11)
    g = check(m)
    last = axis in (2, -1)
    assert ("Reshape" in g.op_counts()) is not last


def test_squeeze_unsqueeze_reduce_attribute_forms():
    nodes = [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, 3]),
             helper.make_node("Squeeze", ["u"], ["s"], axes=[0]),
             helper.make_node("ReduceSum", ["s"], ["r"], axes=[1], keepdims=0),
             helper.make_node("ReduceMean", ["s"], ["m"], axes=[-1])]
    check(make_model(nodes, [("x", [3, 4])], [("r",), ("m",)], opset=11))


def test_reduce_mean_axes_attribute_until_opset18():
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[1, 2], keepdims=1),
             helper.make_node("ReduceMax", ["x"], ["mx"], axes=[0], keepdims=0)]
    check(make_model(nodes, [("x", [2, 3, 4])], [("m",), ("mx",)], opset=17))


def test_clip_with_one_bound():
    nodes = [helper.make_node("Clip", ["x", "lo"], ["y"])]
    check(make_model(nodes, [("x", [2, 5])], [("y",)], [("lo", np.float32(-0.5))], opset=11))


def test_clip_and_pad_attribute_forms_of_opset10_are_tolerated():
    # such nodes reach the importer from functions declared against old opsets; numpy is
    # the oracle since onnxruntime rejects them in an opset-13 model
    nodes = [helper.make_node("Clip", ["x"], ["c"], min=-0.5, max=0.25),
             helper.make_node("Pad", ["c"], ["y"], pads=[0, 1, 1, 2], value=3.0)]
    g = import_onnx(make_model(nodes, [("x", [2, 3])], [("y",)]))
    verify(g)
    x = weights(2, 3)
    want = np.pad(np.clip(x, -0.5, 0.25), [(0, 1), (1, 2)], constant_values=3.0)
    np.testing.assert_array_equal(interpret(g, {"x": x})["y"], want)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_conv_auto_pad(auto_pad):
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], auto_pad=auto_pad, strides=[2, 2],
                              kernel_shape=[4, 3])]
    m = make_model(nodes, [("x", [1, 3, 9, 8])], [("y",)],
                   [("w", weights(4, 3, 4, 3)), ("b", weights(4))])
    g = check(m)
    conv = g.nodes[0]
    assert "kernel_shape" not in conv.attrs and conv.attrs["dilations"] == [1, 1]
    assert conv.attrs["strides"] == [2, 2]
    if auto_pad == "SAME_UPPER":  # out = ceil(9/2) = 5: total pad 4+4-9 = 3 rows, 1 at the top
        assert conv.attrs["pads"] == [1, 0, 2, 1]


@pytest.mark.parametrize("attrs", [
    {"strides": [2, 2], "output_shape": [10, 13]},
    {"strides": [2, 2], "output_shape": [12, 14]},  # larger than the full result
    {"strides": [2, 3], "auto_pad": "SAME_UPPER", "dilations": [2, 1]},
    {"strides": [2, 2], "auto_pad": "SAME_LOWER", "group": 2},
    {"strides": [2, 2], "output_padding": [1, 0]},
])
def test_conv_transpose_output_shape_and_auto_pad(attrs):
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)]
    m = make_model(nodes, [("x", [1, 4, 5, 6])], [("y",)], [("w", weights(4, 3, 3, 3))])
    g = check(m)
    assert "output_shape" not in g.nodes[0].attrs and "output_padding" in g.nodes[0].attrs


@pytest.mark.parametrize("op, attrs", [
    ("MaxPool", {"auto_pad": "SAME_UPPER", "strides": [2, 2], "kernel_shape": [3, 2]}),
    ("MaxPool", {"auto_pad": "SAME_LOWER", "strides": [2, 1], "kernel_shape": [2, 2],
                 "dilations": [2, 1]}),
    ("AveragePool", {"auto_pad": "SAME_LOWER", "strides": [2, 2], "kernel_shape": [3, 3]}),
    ("AveragePool", {"auto_pad": "VALID", "strides": [2, 2], "kernel_shape": [2, 3]}),
    ("AveragePool", {"pads": [1, 0, 1, 1], "kernel_shape": [3, 3], "strides": [2, 2],
                     "ceil_mode": 1, "count_include_pad": 1}),
])
def test_pool_auto_pad(op, attrs):
    g = check(make_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", [1, 2, 7, 6])],
                         [("y",)], opset=12))
    assert {"strides", "pads", "dilations", "kernel_shape"} <= set(g.nodes[0].attrs)


@pytest.mark.parametrize("opset, attrs, roi, scales, sizes", [
    (11, {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
     [], [1, 1, 2, 1.5], None),
    (11, {"mode": "nearest", "nearest_mode": "floor"}, [], [], [1, 2, 6, 8]),
    (13, {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
     None, [1, 1, 0.5, 2], None),
    (13, {"mode": "cubic"}, None, None, [1, 2, 5, 3]),
])
def test_resize_opset11_13_forms(opset, attrs, roi, scales, sizes):
    inits, names = [], ["x"]
    for n, v in (("roi", roi), ("scales", scales), ("sizes", sizes)):
        if v is None:
            names.append("")
        else:
            inits.append((n, np.array(v, np.int64 if n == "sizes" else np.float32)))
            names.append(n)
    while names[-1] == "":
        names.pop()
    m = make_model([helper.make_node("Resize", names, ["y"], **attrs)], [("x", [1, 2, 4, 4])],
                   [("y",)], inits, opset=opset)
    g = check(m)
    inputs = g.nodes[0].inputs
    assert all(v is None or v.const.size for v in inputs[1:])  # empty roi/scales are gone


def test_pad_dropout_identity_constant_forms():
    nodes = [
        helper.make_node("Constant", [], ["pads"], value_ints=[0, 1, 0, 2]),
        helper.make_node("Constant", [], ["v"], value_float=0.5),
        helper.make_node("Pad", ["x", "pads", "v"], ["p"]),
        helper.make_node("Dropout", ["p", "ratio"], ["d", "mask"]),
        helper.make_node("Identity", ["d"], ["y"]),
        helper.make_node("Constant", [], ["sp"], sparse_value=helper.make_sparse_tensor(
            numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "sv"),
            numpy_helper.from_array(np.array([1, 5], np.int64), "si"), [2, 4])),
        helper.make_node("Add", ["x", "sp"], ["z"]),
    ]
    # (onnxruntime's Dropout before opset 12 returns an all-false mask, against the spec)
    m = make_model(nodes, [("x", [2, 4])], [("y",), ("mask", None, TensorProto.BOOL), ("z",)],
                   [("ratio", np.float32(0.3))], opset=13)
    g = check(m)
    assert "Dropout" not in g.op_counts()
    assert g.outputs[1].is_const and g.outputs[1].const.all()


def test_shape_with_start_end_is_constant():
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1, end=-1),
             helper.make_node("Size", ["x"], ["n"]),
             helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["x", "ax"], ["r"], keepdims=0),
             helper.make_node("Mul", ["r", "nf"], ["rn"]),
             helper.make_node("Concat", ["f", "rn"], ["y"], axis=0)]
    m = make_model(nodes, [("x", [2, 3, 5, 7])], [("y",)],
                   [("ax", np.array([0, 1, 2], np.int64))], opset=15)
    g = check(m)
    assert not {"Shape", "Size", "Cast"} & set(g.op_counts())


def test_constant_inputs_fold_but_large_results_stay():
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["big_shape"], ["big"],
                              value=numpy_helper.from_array(np.array([1.0], np.float32))),
             helper.make_node("ReduceSum", ["big"], ["t"], keepdims=0),
             helper.make_node("Reshape", ["x", "s"], ["xs"]),
             helper.make_node("Add", ["xs", "t"], ["y"])]
    m = make_model(nodes, [("x", [2, 3])], [("y",)],
                   [("big_shape", np.array([2048, 1024], np.int64))])
    g = check(m)
    assert g.op_counts() == {"ConstantOfShape": 1, "ReduceSum": 1, "Reshape": 1, "Add": 1}


def test_graph_input_that_is_an_initializer_is_a_constant():
    m = make_model([helper.make_node("Add", ["x", "b"], ["y"])], [("x", [2, 3]), ("b", [3])],
                   [("y",)], [("b", weights(3))])
    g = check(m)
    assert [v.name for v in g.inputs] == ["x"] and g.nodes[0].inputs[1].is_const


def test_nodes_out_of_order_are_sorted():
    nodes = [helper.make_node("Relu", ["a"], ["y"]), helper.make_node("Neg", ["x"], ["a"])]
    check(make_model(nodes, [("x", [4])], [("y",)]))


def test_unused_optional_outputs_are_left_off():
    nodes = [helper.make_node("MaxPool", ["x"], ["y", "unused_indices"], kernel_shape=[2]),
             helper.make_node("Dropout", ["y"], ["z", "unused_mask"])]
    m = make_model(nodes, [("x", [2, 3, 4])], [("z",)], opset=11)
    g = check(m)
    # the graph output keeps its name through an Identity
    assert [(n.op, len(n.outputs)) for n in g.nodes] == [("MaxPool", 1), ("Identity", 1)]


def _if_model(cond_from_shape: bool) -> onnx.ModelProto:
    then_g = helper.make_graph([helper.make_node("Add", ["x", "bias"], ["t_out"])], "then", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)],
                               [numpy_helper.from_array(weights(3), "bias")])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e_out"])], "else", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Equal", ["n", "two"] if cond_from_shape else ["x0", "x0"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Relu", ["y"], ["z"])]
    inputs = [("x", [2, 3])] + ([] if cond_from_shape else [("x0", [], TensorProto.INT64)])
    return make_model(nodes, inputs, [("y",), ("z",)],
                      [("zero", np.array(0, np.int64)), ("two", np.array(2, np.int64))])


def test_if_on_a_shape_condition_is_inlined():
    g = check(_if_model(True))
    assert g.op_counts() == {"Add": 1, "Identity": 1, "Relu": 1}
    # a condition computed from data stays a run-time If (compiled to a C branch)
    assert "If" in check(_if_model(False)).op_counts()


# -- model-local functions, external data ----------------------------------------------------

def _scaled_relu_function() -> onnx.FunctionProto:
    c = helper.make_node("Constant", [], ["a"])
    c.attribute.append(helper.make_attribute_ref("value_float", onnx.AttributeProto.FLOAT,
                                                 ref_attr_name="alpha"))
    return helper.make_function(
        "local", "ScaledRelu", ["x"], ["y"],
        [c, helper.make_node("Mul", ["x", "a"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
        [helper.make_opsetid("", 13)], attributes=["alpha"])


def test_local_function_is_inlined():
    nodes = [helper.make_node("ScaledRelu", ["x"], ["t"], domain="local", alpha=2.0),
             helper.make_node("ScaledRelu", ["t"], ["y"], domain="local", alpha=-0.5)]
    m = make_model(nodes, [("x", [3, 4])], [("y",)],
                   opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1)])
    m.functions.append(_scaled_relu_function())
    g = check(m)
    assert g.op_counts() == {"Mul": 2, "Relu": 2}
    assert sorted(float(n.inputs[1].const) for n in g.nodes if n.op == "Mul") == [-0.5, 2.0]


def test_external_data(tmp_path):
    path = tmp_path / "sub" / "tiny.onnx"
    path.parent.mkdir()
    onnx.save(zoo.tiny_cnn(), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location="tiny.weights", size_threshold=0)
    g = import_onnx(path)
    ref = import_onnx(zoo.tiny_cnn())
    assert print_graph(g) == print_graph(ref)
    with pytest.raises(FrontendError, match="tensor 'conv1.weight'.*external"):
        import_onnx(path.read_bytes())
    with pytest.raises(FrontendError, match="external"):
        import_onnx(onnx.load(str(path), load_external_data=False))
    (tmp_path / "sub" / "tiny.weights").unlink()
    with pytest.raises(FrontendError, match="external data of tensor"):
        import_onnx(str(path))


# -- input shapes ----------------------------------------------------------------------------

def _symbolic_model() -> onnx.ModelProto:
    nodes = [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)]
    return make_model(nodes, [("x", ["batch", 8])], [("y", ["batch", 4])], [("w", weights(4, 8))])


def test_symbolic_dim_fixed_by_input_shapes():
    g = check(_symbolic_model(), input_shapes={"x": [3, 8]})
    assert g.inputs[0].shape == (3, 8)


def test_missing_symbolic_dim_names_input_dim_and_symbol():
    with pytest.raises(ShapeError) as e:
        import_onnx(_symbolic_model())
    msg = str(e.value)
    assert all(s in msg for s in ("'x'", "dim 0", "'batch'", "--input-shape x=d0,8",
                                  "input_shapes="))


def test_unknown_dim_and_rank():
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", None)], [("y",)])
    with pytest.raises(ShapeError, match="'x' has no shape"):
        import_onnx(m)
    check(m, input_shapes={"x": (2, 2)})


@pytest.mark.parametrize("shapes, match", [
    ({"x": [3, 9]}, r"contradicts .* dim 1 is fixed to 8"),
    ({"x": [3]}, "rank 1"),
    ({"x": [-1, 8]}, "negative"),
    ({"w": [4, 8]}, "'w'.*initializer"),
    ({"nope": [1]}, r"'nope'.*inputs are \['x'\]"),
])
def test_bad_input_shapes(shapes, match):
    with pytest.raises(ShapeError, match=match):
        import_onnx(_symbolic_model(), input_shapes=shapes)


# -- errors ------------------------------------------------------------------------------------

def test_not_an_onnx_file(tmp_path):
    p = tmp_path / "model.onnx"
    p.write_text("this is plainly not a protobuf\n" * 10)
    with pytest.raises(FrontendError, match=r"model.onnx is not an ONNX model"):
        import_onnx(p)


def test_truncated_and_empty_files(tmp_path):
    data = zoo.tiny_cnn().SerializeToString()
    p = tmp_path / "cut.onnx"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(FrontendError, match="cut.onnx is not an ONNX model"):
        import_onnx(p)
    p.write_bytes(b"")
    with pytest.raises(FrontendError, match="not an ONNX model: it is empty"):
        import_onnx(p)
    with pytest.raises(FrontendError, match="<bytes> is not an ONNX model"):
        import_onnx(data[:100])
    with pytest.raises(FrontendError, match="ModelProto is not an ONNX model"):
        import_onnx(onnx.ModelProto())


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FrontendError, match="nope.onnx: no such file"):
        import_onnx(tmp_path / "nope.onnx")
    with pytest.raises(FrontendError, match="is not a file"):
        import_onnx(tmp_path)
    with pytest.raises(FrontendError, match="takes a path, bytes or an onnx.ModelProto"):
        import_onnx(42)


def test_unsupported_ops_are_listed_with_counts():
    nodes = [helper.make_node("NonMaxSuppression", ["b", "s"], ["i1"]),
             helper.make_node("NonMaxSuppression", ["b", "s"], ["i2"]),
             helper.make_node("StringNormalizer", ["x"], ["r"]),
             helper.make_node("FusedGemm", ["x", "x"], ["g"], domain="com.microsoft")]
    m = make_model(nodes, [("x", [1, 1, 4, 4]), ("b", [1, 2, 4]), ("s", [1, 1, 2]),
                           ("bi", [2], TensorProto.INT64)],
                   [("i1",), ("i2",), ("r",), ("g",)],
                   opset_imports=[helper.make_opsetid("", 13),
                                  helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(UnsupportedOpError) as e:
        import_onnx(m)
    msg = str(e.value)
    assert msg.startswith("unsupported ONNX ops: NonMaxSuppression (x2), StringNormalizer (x1), "
                          "com.microsoft.FusedGemm (x1); edgec supports: ")
    assert "Conv" in msg.split("supports:")[1]


def test_old_opsets_are_upgraded():
    # opset 9: Upsample (gone in 10) and the attribute form of Slice, upgraded on import
    nodes = [helper.make_node("Upsample", ["x", "scales"], ["u"], mode="nearest"),
             helper.make_node("Slice", ["u"], ["y"], starts=[0, 1], ends=[2, 7], axes=[0, 1])]
    m = make_model(nodes, [("x", [2, 4])], [("y",)],
                   [("scales", np.array([1.0, 2.0], np.float32))], opset=9)
    g = check(m)
    assert "Resize" in g.op_counts() and g.outputs[0].shape == (2, 6)


def test_opset_out_of_range():
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [2])], [("y",)], opset=99)
    with pytest.raises(FrontendError, match="opset 99.*1..2[0-9]"):
        import_onnx(m)


def test_later_opsets_import_when_new_attributes_hold_defaults():
    nodes = [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.INT32, round_mode="up"),
             helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT)]
    check(make_model(nodes, [("x", [5])], [("y",)], opset=25))
    nodes[0] = helper.make_node("Cast", ["x"], ["c"], to=TensorProto.INT32, round_mode="nearest")
    with pytest.raises(FrontendError, match="round_mode='nearest' is not supported"):
        import_onnx(make_model(nodes, [("x", [5])], [("y",)], opset=25))


def test_unknown_attribute_is_an_error_but_defaults_are_dropped():
    relu = helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)
    relu.attribute.append(helper.make_attribute("fancy", 3))
    m = make_model([relu], [("x", [2, 3])], [("y",)], [("w", weights(4, 3))])
    with pytest.raises(FrontendError, match=r"Gemm.*fancy=3 is not supported"):
        import_onnx(m)
    bn = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                          training_mode=1)
    m = make_model([bn], [("x", [2, 3])], [("y",)], [(n, weights(3)) for n in "sbmv"], opset=15)
    with pytest.raises(FrontendError, match="training mode"):
        import_onnx(m)


def test_undefined_value_and_output():
    m = make_model([helper.make_node("Relu", ["ghost"], ["y"])], [("x", [2])], [("y",)])
    with pytest.raises(FrontendError, match="reads 'ghost'"):
        import_onnx(m)
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [2])], [("z",)])
    with pytest.raises(FrontendError, match="output 'z' is not produced"):
        import_onnx(m)


def test_unsupported_input_dtype():
    m = make_model([helper.make_node("Identity", ["x"], ["y"])], [("x", [2], TensorProto.STRING)],
                   [("y", [2], TensorProto.STRING)])
    with pytest.raises(FrontendError, match="input 'x'.*STRING"):
        import_onnx(m)
