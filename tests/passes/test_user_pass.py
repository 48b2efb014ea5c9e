"""examples/user_pass.py: a user's pattern pass, registered and run from a pipeline string."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from passcheck import assert_same_numerics, check_pass

from edgec.ir import parse, print_graph
from edgec.passes import registered_passes, run_pipeline

_path = Path(__file__).resolve().parents[2] / "examples" / "user_pass.py"
_spec = importlib.util.spec_from_file_location("user_pass", _path)
user_pass = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(user_pass)


def test_the_example_pass_is_registered_and_simplifies_the_example():
    assert registered_passes()["simplify-activations"].doc.startswith("LeakyRelu(alpha=0)")
    before, after = parse(user_pass.EXAMPLE), parse(user_pass.EXAMPLE)
    report = run_pipeline(after, "simplify-activations,dce", check_numerics=True,
                          verify_each=True)
    assert report.records[0].changed and report.records[0].drift == 0.0
    assert print_graph(after) == (
        "graph @example(%x: f32[2,8]) {\n"
        "  %c = Relu(%x) : f32[2,8]\n"
        "  %y = LeakyRelu(%c) {alpha = 0.1} : f32[2,8]\n"
        "  return %y\n"
        "}")
    assert_same_numerics(before, after, tol=0.0)


def test_relu_chain_ending_in_two_graph_outputs_keeps_both():
    # %c = Relu(%a) stays: both are graph outputs, so neither may take the other's place
    check_pass("""
        graph @g(%x: f32[5]) {
          %a = Relu(%x) : f32[5]
          %b = Relu(%a) : f32[5]
          %c = LeakyRelu(%b) {alpha = 0.0} : f32[5]
          return %a, %c
        }""", "simplify-activations", """
        graph @g(%x: f32[5]) {
          %a = Relu(%x) : f32[5]
          %c = Relu(%a) : f32[5]
          return %a, %c
        }""", tol=0.0)


def test_main_prints_the_ir_before_and_after(capsys):
    user_pass.main()
    out = capsys.readouterr()
    assert out.out.count("graph @example") == 2 and "simplify-activations" in out.out
    assert "no match: y (LeakyRelu): leaky-relu-to-relu: alpha is 0.1, not 0" in out.err
