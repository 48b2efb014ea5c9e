"""The pattern rewriter: matching with reasons, the fixed-point driver, name hand-over."""

from __future__ import annotations

import io
from contextlib import redirect_stderr

import pytest
from passcheck import check_pass, ir

from edgec.errors import PassError
from edgec.ir import print_graph
from edgec.passes import (
    NoMatch,
    Pattern,
    PatternPass,
    apply_patterns,
    can_replace,
    constant,
    pattern,
    producer,
    register_pass,
    replace_value,
    require,
    sole_user,
)


def neg_input(node):
    return producer(node.inputs[0], "Neg")


@pattern("Neg", match=neg_input)
def double_negation(graph, node, inner):
    replace_value(graph, node.output, inner.inputs[0])


@pattern("Sub", match=lambda n: n if constant(n.inputs[0]).tolist() == [0.0] else "not 0 - x")
def zero_minus_is_neg(graph, node, _):
    neg = graph.add_node("Neg", [node.inputs[1]], before=node)
    replace_value(graph, node.output, neg.output)


register_pass(PatternPass("test-negations", [zero_minus_is_neg, double_negation]))

SRC = """
    graph @g(%x: f32[3]) {
      %zero = const f32[1] dense<[0.0]>
      %a = Sub(%zero, %x) : f32[3]
      %b = Neg(%a) : f32[3]
      %c = Relu(%b) : f32[3]
      %d = Sub(%zero, %c) : f32[3]
      %e = Sub(%zero, %d) : f32[3]
      return %e
    }"""


def test_table_applies_to_a_fixed_point_and_dead_nodes_go():
    # 0 - x becomes Neg; then Neg(Neg(x)) = x: the chain collapses to Relu(x)
    g = ir(SRC)
    result = apply_patterns(g, [zero_minus_is_neg, double_negation])
    assert result.applied == {"zero-minus-is-neg": 3, "double-negation": 2}
    assert print_graph(g) == "graph @g(%x: f32[3]) {\n  %e = Relu(%x) : f32[3]\n  return %e\n}"
    check_pass(SRC, "test-negations", "graph @g(%x: f32[3]) {\n  %e = Relu(%x) : f32[3]\n"
                                      "  return %e\n}")


def test_explain_lists_why_each_pattern_failed_on_the_final_graph():
    g = ir(SRC)
    result = apply_patterns(g, [double_negation], explain=True)
    assert not result.changed and result.sweeps == 1
    assert [str(f) for f in result.failures] == [
        "b (Neg): double-negation: %a is computed by Sub, not Neg"]
    assert "no match: b (Neg): double-negation" in result.explain()


def test_explain_option_of_a_pattern_pass_prints_the_failures():
    err = io.StringIO()
    with redirect_stderr(err):
        PatternPass("p", [double_negation], explain=True).run(ir(SRC))
    assert err.getvalue().startswith("// p: applied: nothing (1 sweeps)\n  no match: b (Neg)")


def test_match_helpers_raise_no_match_with_reasons():
    g = ir(SRC)
    a, b, c = g.nodes[0], g.nodes[1], g.nodes[2]
    with pytest.raises(NoMatch, match="%x is a graph input, not computed by Neg"):
        producer(a.inputs[1], "Neg")
    with pytest.raises(NoMatch, match="%zero is a constant"):
        producer(a.inputs[0])
    assert producer(b.inputs[0], "Sub", "Neg") is a and sole_user(a.output) is b
    with pytest.raises(NoMatch, match="%e is a graph output"):
        sole_user(g.outputs[0])
    with pytest.raises(NoMatch, match="the divisor is not a constant"):
        constant(c.inputs[0], "the divisor")
    with pytest.raises(NoMatch, match="nope"):
        require(False, "nope")
    assert Pattern("p", "Neg", lambda n: None, lambda *a: None).try_match(b) == (None, "no match")


def test_replace_value_keeps_graph_output_names_and_never_renames_inputs():
    g = ir("""
        graph @g(%x: f32[2]) {
          %r = Relu(%x) : f32[2]
          %y = Neg(%r) : f32[2]
          %z = Identity(%x) : f32[2]
          return %y, %z
        }""")
    r, y, z = g.nodes
    replace_value(g, y.output, r.output)  # the Relu now produces the output %y
    assert g.outputs[0] is r.output and r.output.name == "y" and r.name == "y"
    assert not can_replace(g, z.output, g.inputs[0])
    with pytest.raises(PassError, match="cannot replace graph output %z by %x"):
        replace_value(g, z.output, g.inputs[0])
    replace_value(g, r.inputs[0], g.inputs[0])  # same value: nothing happens
    assert g.inputs[0].name == "x"


def test_patterns_that_undo_each_other_are_reported():
    @pattern("Relu")
    def relu_to_max(graph, node, _):
        zero = graph.const([0.0], "zero")
        replace_value(graph, node.output, graph.add_node("Max", [node.inputs[0], zero],
                                                         before=node).output)

    @pattern("Max")
    def max_to_relu(graph, node, _):
        replace_value(graph, node.output, graph.add_node("Relu", [node.inputs[0]],
                                                         before=node).output)

    g = ir("graph @g(%x: f32[2]) {\n  %y = Relu(%x) : f32[2]\n  return %y\n}")
    with pytest.raises(PassError, match="still apply after 64 sweeps"):
        apply_patterns(g, [relu_to_max] + [max_to_relu])

