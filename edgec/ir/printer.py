"""The text form of the graph IR (MLIR-like); `parser.parse` reads it back to an identical graph.

    graph @mlp(%x: f32[1,784]) {
      %w = const f32[784,512] dense<0x...>
      %b = const f32[3] dense<[0.5, -1.0, 2.0]>
      %h = MatMul(%x, %w) : f32[1,512]
      %lo, %hi = Split(%h) {axis = 1} : f32[1,256], f32[1,256]
      return %lo, %hi
    }

Constants of up to `MAX_LITERAL` elements print as a list of numbers, larger ones as the hex
of their little-endian bytes (`elide=True` shortens those for reading). Attributes equal to
their default are not printed. An omitted optional input prints as `none`.
"""

from __future__ import annotations

import json
import math

import numpy as np

from .graph import Graph, Value, is_plain_name
from .registry import get_op, has_op

MAX_LITERAL = 16


def fmt_name(sigil: str, name: str) -> str:
    return sigil + (name if is_plain_name(name) else json.dumps(name))


def fmt_scalar(x, dtype) -> str:
    if dtype == np.bool_:
        return "true" if x else "false"
    if np.issubdtype(dtype, np.floating):
        f = float(x)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        if dtype == np.float64:
            return repr(f)
        return str(np.float32(f)) if dtype != np.float16 else str(np.float16(f))
    return str(int(x))


def fmt_array(arr: np.ndarray, elide: bool = False) -> str:
    if arr.size <= MAX_LITERAL:
        return "dense<[" + ", ".join(fmt_scalar(x, arr.dtype) for x in arr.reshape(-1)) + "]>"
    if elide:
        return f"dense<...{arr.nbytes} bytes...>"
    data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
    return "dense<0x" + data.hex() + ">"


def fmt_attr(value, kind: str, elide: bool, indent: str) -> str:
    if kind in ("int", "float"):
        return fmt_scalar(value, np.dtype(np.float32) if kind == "float" else np.dtype(np.int64))
    if kind == "str":
        return json.dumps(value)
    if kind in ("ints", "floats"):
        dt = np.dtype(np.float32) if kind == "floats" else np.dtype(np.int64)
        return "[" + ", ".join(fmt_scalar(v, dt) for v in value) + "]"
    if kind == "strs":
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    if kind == "tensor":
        from .dtypes import DType
        from .types import TensorType

        t = TensorType(value.shape, DType.from_numpy(value.dtype))
        return f"tensor<{t} {fmt_array(value, elide)}>"
    if kind == "graph":
        return print_graph(value, elide=elide, indent=indent)
    if kind == "graphs":
        return "[" + ", ".join(print_graph(g, elide=elide, indent=indent) for g in value) + "]"
    raise ValueError(f"unknown attribute kind {kind}")


def _attr_kind(op: str, key: str, value) -> str:
    if has_op(op) and key in get_op(op).attrs:
        return get_op(op).attrs[key].kind
    raise ValueError(f"op {op} has no attribute {key}")


def print_graph(graph: Graph, elide: bool = False, indent: str = "") -> str:
    ind = indent + "  "
    v = lambda x: "none" if x is None else fmt_name("%", x.name)  # noqa: E731
    args = ", ".join(f"{v(x)}: {x.type}" for x in graph.inputs)
    lines = [f"graph {fmt_name('@', graph.name)}({args}) {{"]
    for c in graph.constants():
        lines.append(f"{ind}{v(c)} = const {c.type} {fmt_array(c.const, elide)}")
    for n in graph.nodes:
        outs = ", ".join(v(o) for o in n.outputs)
        ins = ", ".join(v(i) for i in n.inputs)
        defaults = get_op(n.op).attrs
        shown = [(k, val) for k, val in n.attrs.items()
                 if not _is_default(val, defaults[k].default)]
        attrs = ""
        if shown:
            attrs = " {" + ", ".join(f"{k} = {fmt_attr(val, _attr_kind(n.op, k, val), elide, ind)}"
                                     for k, val in shown) + "}"
        types = ", ".join(str(o.type) for o in n.outputs)
        label = "" if n.name == n.outputs[0].name else f" #{json.dumps(n.name)}"
        lines.append(f"{ind}{outs} = {n.op}({ins}){attrs} : {types}{label}")
    lines.append(f"{ind}return " + ", ".join(v(o) for o in graph.outputs))
    lines.append(indent + "}")
    return "\n".join(lines)


def _is_default(value, default) -> bool:
    if isinstance(value, np.ndarray) or isinstance(default, np.ndarray):
        return False
    if isinstance(default, tuple):
        default = list(default)
    try:
        return bool(value == default)
    except Exception:
        return False


def print_value(v: Value) -> str:
    return f"{fmt_name('%', v.name)}: {v.type}"
