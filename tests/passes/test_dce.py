"""dce: nodes whose outputs nobody reads go, whole dead chains in one run."""

from __future__ import annotations

from passcheck import check_pass

from edgec.ir import parse
from edgec.passes import run_pipeline


def test_dead_chain_is_removed_and_used_values_stay():
    check_pass("""
        graph @g(%x: f32[2,3]) {
          %a = Relu(%x) : f32[2,3]
          %dead1 = Neg(%a) : f32[2,3]
          %dead2 = Mul(%dead1, %dead1) : f32[2,3]
          %y = Add(%a, %x) : f32[2,3]
          return %y
        }""", "dce", """
        graph @g(%x: f32[2,3]) {
          %a = Relu(%x) : f32[2,3]
          %y = Add(%a, %x) : f32[2,3]
          return %y
        }""")


def test_a_node_with_one_used_output_stays():
    g = check_pass("""
        graph @g(%x: f32[4,2]) {
          %lo, %hi = Split(%x) {num_outputs = 2} : f32[2,2], f32[2,2]
          %y = Relu(%hi) : f32[2,2]
          return %y
        }""", "dce")
    assert [n.op for n in g.nodes] == ["Split", "Relu"]


def test_reports_whether_it_changed_the_graph():
    g = parse("graph @g(%x: f32[2]) {\n  %y = Relu(%x) : f32[2]\n  return %y\n}")
    assert not run_pipeline(g, "dce").changed
