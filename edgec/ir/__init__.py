"""edgec's graph IR: values, nodes, graphs, the op registry, text form, verifier, interpreter."""

from .dtypes import DType
from .graph import Graph, Node, Value
from .interpreter import interpret
from .parser import parse
from .printer import print_graph
from .registry import Attr, OpDef, all_ops, get_op, has_op, op
from .types import QuantParams, TensorType
from .verifier import verify

__all__ = [
    "Attr", "DType", "Graph", "Node", "OpDef", "QuantParams", "TensorType", "Value", "all_ops",
    "get_op",
    "has_op", "interpret", "op", "parse", "print_graph", "verify",
]
