"""Malformed models the fuzzer (scripts/fuzz.py) turned up, each refused with an EdgecError
that names the problem: attributes of the wrong type, nodes with too few or too many inputs,
huge or negative dims, names that are not UTF-8, a graph that crashed ONNX's version
converter, external data outside the model's folder. Each had ended in a raw Python
exception (or a segfault) before."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import edgec
from edgec.errors import (
    EdgecError,
    FrontendError,
    ShapeError,
    UnsupportedOpError,
    VerificationError,
)
from edgec.frontends.onnx import import_onnx
from edgec.ir import DType, TensorType, get_op, interpret


def conv_model(x_shape=(1, 3, 8, 8), attrs=None, inputs=("x", "w"), opset=17, **kw):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    node = helper.make_node("Conv", list(inputs), ["y"], name="conv", **(attrs or {}))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                      list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8,
                             **kw)


def test_the_valid_model_imports():
    g = import_onnx(conv_model(attrs={"pads": [1, 1, 1, 1]}))
    assert g.outputs[0].shape == (1, 4, 8, 8)


@pytest.mark.parametrize("attr, match", [
    (helper.make_attribute("pads", 1), "attribute 'pads' is of type INT; ONNX's Conv .* INTS"),
    (helper.make_attribute("group", [1, 2]), "attribute 'group' is of type INTS.* takes INT"),
    (helper.make_attribute("auto_pad", 2.5), "attribute 'auto_pad' is of type FLOAT.* STRING"),
    (helper.make_attribute("strides", "SAME"), "attribute 'strides' is of type STRING"),
])
def test_attribute_of_the_wrong_type(attr, match):
    m = conv_model()
    m.graph.node[0].attribute.append(attr)
    with pytest.raises(FrontendError, match="node conv \\(Conv\\): " + match):
        import_onnx(m)


def test_attribute_of_undefined_type():
    m = conv_model()
    a = m.graph.node[0].attribute.add()
    a.name, a.type = "pads", onnx.AttributeProto.UNDEFINED
    with pytest.raises(FrontendError, match="'pads' is of type UNDEFINED"):
        import_onnx(m)


@pytest.mark.parametrize("inputs, match", [
    (["x"], "has 1 inputs; ONNX's Conv \\(opset 11\\) takes 2 to 3"),
    (["x", "w", "w", "w"], "has 4 inputs"),
    (["x", ""], "input 1 \\('W'\\) is required"),
])
def test_inputs_that_do_not_fit_the_op(inputs, match):
    with pytest.raises(FrontendError, match=match):
        import_onnx(conv_model(inputs=inputs))


def test_required_attribute_missing():
    node = helper.make_node("Cast", ["x"], ["y"], name="cast")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [2])],
                          [helper.make_tensor_value_info("y", 1, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(FrontendError, match="needs attribute 'to'"):
        import_onnx(m)


def test_ir_attribute_coercion_names_the_attribute():
    # the Python API's path to the registry: a wrong value is a VerificationError
    with pytest.raises(VerificationError, match="attribute 'axis' takes an int, not list"):
        get_op("Softmax").complete_attrs({"axis": [1, 2]}, where="node s")
    with pytest.raises(VerificationError, match="attribute 'perm' takes a list of ints"):
        get_op("Transpose").complete_attrs({"perm": 3.5}, where="node t")


@pytest.mark.parametrize("dim", [1 << 40, 1 << 31, 65536 * 65536])
def test_huge_declared_dim_is_refused_up_front(dim):
    with pytest.raises(ShapeError, match="input 'x'.* bytes; edgec's libraries hold at most"):
        import_onnx(conv_model(x_shape=(1, 3, dim, 8)))


def test_huge_result_of_an_op_is_refused():
    # a constant shape asks Expand for 2^42 elements
    shape = numpy_helper.from_array(np.array([1 << 21, 1 << 21], np.int64), "shape")
    node = helper.make_node("Expand", ["x", "shape"], ["y"], name="big")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [1, 1])],
                          [helper.make_tensor_value_info("y", 1, None)], [shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(ShapeError, match="node big \\(Expand\\).*bytes"):
        import_onnx(m)


def test_tensor_types_refuse_negative_and_oversized_shapes():
    with pytest.raises(ShapeError, match="negative dim"):
        TensorType((2, -1), DType.F32)
    TensorType(((1 << 31) - 1,), DType.U8)  # the largest
    with pytest.raises(ShapeError, match="a f64\\[268435456\\] tensor holds 2147483648 bytes"):
        TensorType((1 << 28,), DType.F64)


def test_names_that_are_not_utf8(tmp_path):
    data = bytearray(conv_model().SerializeToString())
    at = data.index(b"conv")  # the node's name
    data[at:at + 4] = b"\xff\xfe\xc3\x28"
    path = tmp_path / "m.onnx"
    path.write_bytes(bytes(data))
    with pytest.raises(FrontendError, match="model.graph.node.name is not UTF-8 text"):
        import_onnx(str(path))


def test_old_opset_graph_that_crashed_the_version_converter():
    # opset 9 with a graph output no node makes: onnx's converter segfaulted in-process
    m = conv_model(opset=9)
    del m.graph.node[:]
    with pytest.raises(FrontendError, match="graph output 'y' is not produced by any node"):
        import_onnx(m)


def test_a_crash_of_the_version_converter_is_an_error(monkeypatch):
    # the converter runs in a child process so that its crash cannot take the caller down
    import edgec.frontends.onnx as frontend
    monkeypatch.setattr(frontend, "_CONVERT", "import os, signal; os.kill(os.getpid(), "
                        "signal.SIGSEGV)")
    with pytest.raises(FrontendError, match="opset 9.*could not upgrade it: it crashed "
                       "\\(signal 11\\)"):
        import_onnx(conv_model(opset=9))


@pytest.mark.parametrize("change, error, match", [
    # ONNX's converter said "unordered_map::at" and "Input q is undefined!" for these
    (lambda m: setattr(m.graph.node[0], "op_type", "Frobnicate"), UnsupportedOpError,
     "unsupported ONNX ops: Frobnicate \\(x1\\): ONNX defines no such op"),
    (lambda m: m.graph.node[0].input.__setitem__(1, "q"), FrontendError,
     "node conv \\(Conv\\) reads 'q', which no node, input or initializer defines"),
])
def test_old_opset_models_are_checked_before_the_upgrade(change, error, match):
    m = conv_model(opset=9)
    change(m)
    with pytest.raises(error, match=match):
        import_onnx(m)


def _external(tmp_path, location):
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    m = conv_model()
    t = m.graph.initializer[0]
    (tmp_path / "outside.bin").write_bytes(t.raw_data)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", location
    onnx.save(m, str(folder / "m.onnx"))
    return folder / "m.onnx"


@pytest.mark.parametrize("location", ["../outside.bin", "{tmp}/outside.bin", "link.bin",
                                      "sub/outside.bin", "/proc/self/environ", "."])
def test_external_data_outside_the_model_folder_is_not_read(tmp_path, location):
    location = location.format(tmp=tmp_path)
    path = _external(tmp_path, location)
    (path.parent / "link.bin").symlink_to(tmp_path / "outside.bin")
    (path.parent / "sub").symlink_to(tmp_path)
    with pytest.raises(FrontendError, match="tensor 'w' keeps its data in .*not a file inside "
                                            "the model's folder"):
        import_onnx(str(path))


def test_external_data_inside_the_folder_is_read(tmp_path):
    path = _external(tmp_path, "sub/w.bin")
    os.makedirs(path.parent / "sub")
    (tmp_path / "outside.bin").rename(path.parent / "sub" / "w.bin")
    assert import_onnx(str(path)).outputs[0].shape == (1, 4, 6, 6)


def test_compile_of_a_malformed_model_keeps_the_output_folder_untouched(tmp_path):
    m = conv_model()
    m.graph.node[0].attribute.append(helper.make_attribute("pads", 1))
    out = tmp_path / "out"
    with pytest.raises(EdgecError):
        edgec.compile(m, out)
    assert not out.exists()


def _one_node(node, x_shape, opset=17, inits=()):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, list(x_shape))],
                          [helper.make_tensor_value_info(o, 1, None) for o in node.output],
                          list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize("model, match", [
    (_one_node(helper.make_node("Split", ["x"], ["a", "b"], name="s", axis=5), [2, 4]),
     "node s \\(Split\\): axis 5 is out of range for an input of rank 2"),
    (_one_node(helper.make_node("Softmax", ["x"], ["y"], name="s", axis=-3), [2, 4], opset=11),
     "node s \\(Softmax\\): axis -3 is out of range"),
    (_one_node(helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct",
                                output_padding=[1]), [1, 1, 4, 4],
               inits=[numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")]),
     "node ct \\(ConvTranspose\\): output_padding \\[1\\] .* does not fit 2 spatial dims"),
])
def test_axes_and_lists_that_do_not_fit_the_input(model, match):
    with pytest.raises(FrontendError, match=match):
        import_onnx(model)


@pytest.mark.parametrize("op", ["Conv", "AveragePool", "MaxPool", "ConvTranspose", "LpPool"])
def test_negative_pads_are_refused(op):
    """The sanitized fuzzer's find (mutant 675): a Conv with pads [1, -1, 1, 1] compiled, and
    its blocked kernel stored past the end of its output. ONNX's shape inference refuses
    negative pads of these ops (only Pad crops), and so does edgec now."""
    w = np.ones((3, 3, 3, 3), np.float32)
    conv = op.startswith("Conv")
    node = helper.make_node(op, ["x", "w"] if conv else ["x"], ["y"], name="n",
                            kernel_shape=[3, 3], pads=[1, -1, 1, 1])
    model = _one_node(node, [1, 3, 8, 8], inits=[numpy_helper.from_array(w, "w")] if conv
                      else ())
    with pytest.raises(EdgecError, match=rf"{op}: pads \[1, -1, 1, 1\] must not be negative"):
        import_onnx(model)


@pytest.mark.parametrize("op", ["AveragePool", "MaxPool", "LpPool"])
@pytest.mark.parametrize("kernel", [[0, 3], [-1, 3]])
def test_empty_or_negative_windows_are_refused(op, kernel):
    """LpPool compiled a window of 0 or -1 pixels (the other pools refused it, naming the
    pads)."""
    model = _one_node(helper.make_node(op, ["x"], ["y"], name="n", kernel_shape=kernel),
                      [1, 3, 8, 8])
    with pytest.raises(EdgecError, match=rf"{op}: kernel_shape must be >= 1"):
        import_onnx(model)


def chain(order: list[int], cycle: bool = False) -> onnx.ModelProto:
    """x -> Relu a -> Neg b -> Abs c -> y, the nodes written in `order`; `cycle`: Relu reads
    c's output instead of x."""
    nodes = [helper.make_node("Relu", ["c" if cycle else "x"], ["a"], name="relu"),
             helper.make_node("Neg", ["a"], ["b"], name="neg"),
             helper.make_node("Abs", ["b"], ["c"], name="abs"),
             helper.make_node("Identity", ["c"], ["y"], name="out")]
    g = helper.make_graph([nodes[i] for i in order], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_nodes_out_of_order_are_put_in_order():
    g = import_onnx(chain([3, 2, 1, 0]))  # written backwards
    assert [n.op for n in g.nodes] == [n.op for n in import_onnx(chain([0, 1, 2, 3])).nodes]
    seen = set(v.name for v in g.inputs)
    for n in g.nodes:  # each node after the producers of its inputs
        assert all(v.is_const or v.name in seen for v in n.inputs if v is not None), n
        seen.update(v.name for v in n.outputs)
    x = np.array([1.5, -2.0], np.float32)
    np.testing.assert_array_equal(interpret(g, {"x": x})["y"], np.abs(-np.maximum(x, 0)))


def test_a_cycle_is_named():
    with pytest.raises(FrontendError, match=r"cycle through node \w+ \((Relu|Neg|Abs)\)"):
        import_onnx(chain([0, 1, 2, 3], cycle=True))
