"""The graph IR core: use-def links, editing, the verifier, text round-trip, the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from edgec.errors import ShapeError, VerificationError
from edgec.ir import DType, Graph, TensorType, interpret, parse, print_graph, verify

F32 = DType.F32


def small_graph() -> Graph:
    g = Graph("small")
    x = g.add_input("x", TensorType((2, 3), F32))
    b = g.const(np.array([1.0, -2.0, 0.5], np.float32), "b")
    add = g.add_node("Add", [x, b], name="onnx::Add_1")
    relu = g.add_node("Relu", [add.output])
    g.outputs = [relu.output]
    return g


def test_use_def_links_follow_edits():
    g = small_graph()
    add, relu = g.nodes
    x, b = add.inputs
    assert x.uses == [(add, 0)] and b.uses == [(add, 1)] and add.output.producer is add
    mul = g.add_node("Mul", [x, b], before=relu)
    g.replace_all_uses(add.output, mul.output)
    assert relu.inputs[0] is mul.output and not add.output.uses
    g.remove_node(add)
    assert x.uses == [(mul, 0)] and [n.op for n in g.nodes] == ["Mul", "Relu"]
    verify(g)


def test_remove_used_node_is_refused():
    g = small_graph()
    with pytest.raises(VerificationError, match="still used"):
        g.remove_node(g.nodes[0])


def test_text_round_trip_is_exact():
    g = small_graph()
    text = print_graph(g)
    assert '%"onnx::Add_1" = Add(%x, %b) : f32[2,3]' in text
    assert "dense<[1.0, -2.0, 0.5]>" in text
    again = parse(text)
    verify(again)
    assert print_graph(again) == text


def test_round_trip_large_constant_and_attrs():
    g = Graph("big")
    x = g.add_input("x", TensorType((1, 40), F32))
    w = g.const(np.random.default_rng(0).standard_normal((40, 3)).astype(np.float32), "w")
    mm = g.add_node("MatMul", [x, w])
    lr = g.add_node("LeakyRelu", [mm.output], {"alpha": 0.1})
    g.outputs = [lr.output]
    text = print_graph(g)
    assert "alpha = 0.1" in text and "dense<0x" in text
    g2 = parse(text)
    assert print_graph(g2) == text
    np.testing.assert_array_equal(g2.constants()[0].const, w.const)


def test_parse_errors_are_clear():
    with pytest.raises(VerificationError, match="used before it is defined"):
        parse("graph @g(%x: f32[2]) {\n  %y = Relu(%z) : f32[2]\n  return %y\n}")
    with pytest.raises(VerificationError, match="unknown op"):
        parse("graph @g(%x: f32[2]) {\n  %y = Frobnicate(%x) : f32[2]\n  return %y\n}")


def test_verifier_catches_wrong_type_and_stale_links():
    g = small_graph()
    g.nodes[1].outputs[0].type = TensorType((3, 2), F32)
    with pytest.raises(VerificationError, match="inference gives"):
        verify(g)
    g = small_graph()
    g.nodes[1].inputs[0] = g.inputs[0]  # bypassing set_input leaves the links stale
    with pytest.raises(VerificationError, match="use-def|stale use"):
        verify(g)


def test_interpreter_matches_numpy_and_checks_feeds():
    g = small_graph()
    x = np.array([[1, 2, 3], [-4, 5, -6]], np.float32)
    out = interpret(g, {"x": x})["relu"]
    np.testing.assert_array_equal(out, np.maximum(x + [1.0, -2.0, 0.5], 0))
    with pytest.raises(ShapeError, match="must be float32"):
        interpret(g, {"x": x.astype(np.float64)})
    with pytest.raises(ShapeError, match="missing"):
        interpret(g, {})


def test_shape_errors_name_the_node():
    g = Graph("bad")
    a = g.add_input("a", TensorType((2, 3), F32))
    b = g.add_input("b", TensorType((4,), F32))
    with pytest.raises(ShapeError, match="do not broadcast"):
        g.add_node("Add", [a, b], name="plus")


def test_copy_is_independent():
    g = small_graph()
    c = g.copy()
    c.outputs = [c.nodes[0].output]
    c.remove_node(c.nodes[1])
    verify(c)
    verify(g)
    assert len(g.nodes) == 2 and len(c.nodes) == 1


def test_quantization_parameters_print_parse_and_leave_equality_alone():
    from edgec.ir import QuantParams, TensorType

    src = """graph @q(%x: u8[1,2] quant<scale=0.5, zp=3>) {
  %s = const f32[] dense<[0.5]>
  %z = const u8[] dense<[3]>
  %w = const i8[2,2] quant<axis=0, scale=[0.25, 0.125], zp=[0, 0], bits=4> dense<[1, -7, 7, 2]>
  %ws = const f32[2] dense<[0.25, 0.125]>
  %y = DequantizeLinear(%x, %s, %z) : f32[1,2]
  %v = DequantizeLinear(%w, %ws) {axis = 0} : f32[2,2]
  return %y, %v
}"""
    g = parse(src)
    assert print_graph(g) == src
    w = g.constants()[2]
    assert w.type.quant == QuantParams((0.25, 0.125), (0, 0), 0, 4)
    assert g.inputs[0].type.quant == QuantParams((0.5,), (3,), None, 8)
    # the parameters describe a value; shape inference compares shape and dtype only
    assert TensorType((1, 2), DType.U8) == g.inputs[0].type
    with pytest.raises(Exception, match="quant<...> takes scale, zp"):
        parse(src.replace("zp=3>", "offset=3>"))
