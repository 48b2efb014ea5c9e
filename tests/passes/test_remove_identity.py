"""remove-identity: ops that return their input unchanged are bypassed."""

from __future__ import annotations

from passcheck import check_pass


def test_every_kind_of_identity_goes():
    check_pass("""
        graph @g(%x: f32[2,3]) {
          %zero = const f32[1] dense<[0.0]>
          %ones = const f32[2,3] dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]>
          %shape = const i64[2] dense<[2, 3]>
          %pads = const i64[4] dense<[0, 0, 0, 0]>
          %i = Identity(%x) : f32[2,3]
          %d = Dropout(%i) : f32[2,3]
          %r = Reshape(%d, %shape) : f32[2,3]
          %t = Transpose(%r) {perm = [0, 1]} : f32[2,3]
          %c = Cast(%t) {to = 1} : f32[2,3]
          %a = Add(%zero, %c) : f32[2,3]
          %s = Sub(%a, %zero) : f32[2,3]
          %m = Mul(%ones, %s) : f32[2,3]
          %q = Div(%m, %ones) : f32[2,3]
          %p = Pad(%q, %pads) : f32[2,3]
          %k = Concat(%p) {axis = 0} : f32[2,3]
          %y = Relu(%k) : f32[2,3]
          return %y
        }""", "remove-identity", """
        graph @g(%x: f32[2,3]) {
          %y = Relu(%x) : f32[2,3]
          return %y
        }""")


def test_look_alikes_that_change_the_value_stay():
    # 0 - x negates; a neutral constant that grows the shape broadcasts; perm [1, 0]
    # transposes; the Identity from input to output must keep the output's name
    check_pass("""
        graph @g(%x: f32[2,3]) {
          %zero = const f32[2,3] dense<[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]>
          %ones = const f32[1,2,3] dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]>
          %neg = Sub(%zero, %x) : f32[2,3]
          %grow = Mul(%neg, %ones) : f32[1,2,3]
          %t = Transpose(%x) {perm = [1, 0]} : f32[3,2]
          %out = Identity(%x) : f32[2,3]
          return %grow, %t, %out
        }""", "remove-identity", """
        graph @g(%x: f32[2,3]) {
          %zero = const f32[2,3] dense<[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]>
          %ones = const f32[1,2,3] dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]>
          %neg = Sub(%zero, %x) : f32[2,3]
          %grow = Mul(%neg, %ones) : f32[1,2,3]
          %t = Transpose(%x) {perm = [1, 0]} : f32[3,2]
          %out = Identity(%x) : f32[2,3]
          return %grow, %t, %out
        }""")


def test_identity_producing_a_graph_output_hands_its_name_to_the_producer():
    check_pass("""
        graph @g(%x: f32[4]) {
          %r = Relu(%x) : f32[4]
          %y = Identity(%r) : f32[4]
          return %y
        }""", "remove-identity", """
        graph @g(%x: f32[4]) {
          %y = Relu(%x) : f32[4]
          return %y
        }""")


def test_dropout_whose_mask_is_used_stays():
    g = check_pass("""
        graph @g(%x: f32[4]) {
          %d, %mask = Dropout(%x) : f32[4], bool[4]
          %y = Relu(%d) : f32[4]
          return %y, %mask
        }""", "remove-identity")
    assert [n.op for n in g.nodes] == ["Dropout", "Relu"]
