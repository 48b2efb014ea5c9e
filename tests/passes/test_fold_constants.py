"""fold-constants: constant subgraphs become constants, computed by the op references."""

from __future__ import annotations

from passcheck import check_pass


def test_constant_chain_folds_into_one_constant():
    # (a + b)^2 = [1.5, 2.5, 3.5]^2, by hand
    check_pass("""
        graph @g(%x: f32[2,3]) {
          %a = const f32[3] dense<[1.0, 2.0, 3.0]>
          %b = const f32[3] dense<[0.5, 0.5, 0.5]>
          %s = Add(%a, %b) : f32[3]
          %m = Mul(%s, %s) : f32[3]
          %y = Add(%x, %m) : f32[2,3]
          return %y
        }""", "fold-constants", """
        graph @g(%x: f32[2,3]) {
          %m = const f32[3] dense<[2.25, 6.25, 12.25]>
          %y = Add(%x, %m) : f32[2,3]
          return %y
        }""")


def test_shape_of_a_runtime_value_folds_from_its_static_type():
    check_pass("""
        graph @shapes(%x: f32[2,3,4]) {
          %one = const i64[1] dense<[1]>
          %shape = Shape(%x) : i64[3]
          %dims = Gather(%shape, %one) {axis = 0} : i64[1]
          %y = Relu(%x) : f32[2,3,4]
          return %y, %dims
        }""", "fold-constants", """
        graph @shapes(%x: f32[2,3,4]) {
          %dims = const i64[1] dense<[3]>
          %y = Relu(%x) : f32[2,3,4]
          return %y, %dims
        }""")


def test_graph_output_computed_from_constants_keeps_its_name():
    check_pass("""
        graph @g(%x: f32[2]) {
          %a = const f32[2] dense<[1.0, -1.0]>
          %r = Relu(%a) : f32[2]
          %y = Mul(%x, %a) : f32[2]
          return %y, %r
        }""", "fold-constants", """
        graph @g(%x: f32[2]) {
          %a = const f32[2] dense<[1.0, -1.0]>
          %r = const f32[2] dense<[1.0, 0.0]>
          %y = Mul(%x, %a) : f32[2]
          return %y, %r
        }""")


def test_outputs_above_the_size_limit_stay_computed_at_run_time():
    src = """
        graph @g(%x: f32[4]) {
          %a = const f32[4] dense<[1.0, 2.0, 3.0, 4.0]>
          %n = Neg(%a) : f32[4]
          %y = Add(%x, %n) : f32[4]
          return %y
        }"""
    g = check_pass(src, "fold-constants{max_elements=3}")
    assert [n.op for n in g.nodes] == ["Neg", "Add"]
    g = check_pass(src, "fold-constants{max_elements=4}")
    assert [n.op for n in g.nodes] == ["Add"]


def test_canonicalize_folds_then_removes_the_identities_folding_exposed():
    # c0 + c1 = 1 makes the Mul an identity, and the Neg is left dead
    check_pass("""
        graph @g(%x: f32[2,2]) {
          %c0 = const f32[2] dense<[0.25, 0.5]>
          %c1 = const f32[2] dense<[0.75, 0.5]>
          %one = Add(%c0, %c1) : f32[2]
          %m = Mul(%x, %one) : f32[2,2]
          %dead = Neg(%m) : f32[2,2]
          %y = Relu(%m) : f32[2,2]
          return %y
        }""", "canonicalize", """
        graph @g(%x: f32[2,2]) {
          %y = Relu(%x) : f32[2,2]
          return %y
        }""")
