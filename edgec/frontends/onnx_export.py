"""The IR graph written back as ONNX, to look at (Netron) what the passes made of a model.

Each node becomes an ONNX node: an op ONNX defines keeps its type in the standard domain
(with the attributes the ONNX schema has; edgec's own additions left out), the ops the passes
introduce (FusedConv, SparseConv, BlockedConv, QGemm ...) and control flow (whose bodies take
the outer values they read as inputs) go in the `edgec` domain with all their attributes, so
that a viewer shows the fused graph as it is. Constants become
initializers, every value gets its type (value_info), subgraphs (If, Loop, Scan) are written
the same way. A graph of standard ops only runs on onnxruntime as the model did.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import EdgecError
from ..ir import Graph, Value
from ..ir.onnx_dtypes import to_onnx

EDGEC_DOMAIN = "edgec"
# control flow whose bodies take what they read from outside as inputs (ir/ops/control.py),
# where ONNX's read the enclosing scope: written in the edgec domain, as the IR has them
CAPTURING = frozenset({"If", "Loop", "Scan"})
OPSET = 17
IR_VERSION = 10  # what onnxruntime 1.31 reads


def export_onnx(graph: Graph, opset: int = OPSET) -> onnx.ModelProto:
    """`graph` as an ONNX model (see the module doc)."""
    g = _graph_proto(graph, opset, top=True)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                                helper.make_opsetid(EDGEC_DOMAIN, 1)],
                              ir_version=IR_VERSION, producer_name="edgec")
    return model


def _value_info(v: Value) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(v.name, to_onnx(v.dtype), list(v.shape))


def _graph_proto(graph: Graph, opset: int, top: bool = False) -> onnx.GraphProto:
    nodes, inits, seen = [], [], set()
    infos = {}
    for node in graph.nodes:
        for v in node.inputs:
            if v is not None and v.is_const and v.name not in seen:
                seen.add(v.name)
                inits.append(numpy_helper.from_array(np.asarray(v.const), v.name))
        standard = onnx.defs.has(node.op, "") and node.op not in CAPTURING
        attrs = _attributes(node.op, node.attrs, standard, opset)
        nodes.append(helper.make_node(
            node.op, [v.name if v is not None else "" for v in node.inputs],
            [v.name for v in node.outputs], name=node.name,
            domain="" if standard else EDGEC_DOMAIN, **attrs))
        for v in node.outputs:
            infos[v.name] = _value_info(v)
    for v in graph.outputs:  # an output may be a constant or an input
        if v.is_const and v.name not in seen:
            seen.add(v.name)
            inits.append(numpy_helper.from_array(np.asarray(v.const), v.name))
    outputs = {v.name for v in graph.outputs}
    return helper.make_graph(
        nodes, graph.name, [_value_info(v) for v in graph.inputs],
        [_value_info(v) for v in graph.outputs], inits,
        value_info=[vi for name, vi in infos.items() if name not in outputs])


def _attributes(op: str, attrs: dict[str, Any], standard: bool, opset: int) -> dict[str, Any]:
    known = None
    if standard:
        try:
            known = set(onnx.defs.get_schema(op, opset, "").attributes)
        except onnx.defs.SchemaError:
            known = None
    out = {}
    for key, value in attrs.items():
        if value is None or (known is not None and key not in known) or \
                (isinstance(value, list | tuple) and not len(value)):
            continue  # (an empty list has no ONNX type to write it with)
        out[key] = _attribute(value, opset, f"{op}.{key}")
    return out


def _attribute(value: Any, opset: int, where: str) -> Any:
    if isinstance(value, Graph):
        return _graph_proto(value, opset)
    if isinstance(value, np.ndarray):
        return numpy_helper.from_array(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float | str | bytes | list):
        return value
    raise EdgecError(f"--emit-onnx: attribute {where} of type {type(value).__name__} has no "
                     "ONNX form")
