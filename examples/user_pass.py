"""A pass written by a user: two rewrite patterns, registered by name, run in a pipeline.

LeakyRelu with alpha = 0 is Relu, and Relu(Relu(x)) = Relu(x). A match function looks at a
node and returns what the rewrite needs (or says why it does not apply); a replace function
builds the new nodes before the old one and hands over the old value's uses and name.

    python examples/user_pass.py
"""

from __future__ import annotations

from edgec.ir import Graph, Node, parse, print_graph
from edgec.passes import (
    PatternPass,
    can_replace,
    pattern,
    producer,
    register_pass,
    replace_value,
    require,
    run_pipeline,
)


def zero_slope(node: Node):
    require(node.attrs["alpha"] == 0.0, f"alpha is {node.attrs['alpha']:g}, not 0")
    return node.inputs[0]


@pattern("LeakyRelu", match=zero_slope)
def leaky_relu_to_relu(graph: Graph, node: Node, x) -> None:
    relu = graph.add_node("Relu", [x], before=node)
    replace_value(graph, node.output, relu.output)


def relu_input(node: Node):
    inner = producer(node.inputs[0], "Relu")  # no match unless a Relu computes the input
    require(can_replace(node.graph, node.output, inner.output), "both are graph outputs")
    return inner


@pattern("Relu", match=relu_input)
def relu_of_relu(graph: Graph, node: Node, inner: Node) -> None:
    replace_value(graph, node.output, inner.output)


SIMPLIFY_ACTIVATIONS = register_pass(
    PatternPass("simplify-activations", [leaky_relu_to_relu, relu_of_relu],
                doc="LeakyRelu(alpha=0) -> Relu; Relu(Relu(x)) -> Relu(x)."))

EXAMPLE = """
graph @example(%x: f32[2,8]) {
  %a = LeakyRelu(%x) {alpha = 0.0} : f32[2,8]
  %b = Relu(%a) : f32[2,8]
  %c = Relu(%b) : f32[2,8]
  %y = LeakyRelu(%c) {alpha = 0.1} : f32[2,8]
  return %y
}
"""


def main() -> None:
    graph = parse(EXAMPLE)
    print(print_graph(graph))
    # check_numerics runs the interpreter before and after every pass on random inputs
    report = run_pipeline(graph, "simplify-activations{explain},dce", check_numerics=True,
                          verify_each=True)
    print(print_graph(graph))
    print(report.timing_table())


if __name__ == "__main__":
    main()
