"""The ONNX frontend: reads an ONNX model (opsets 11 and later) into an edgec `Graph`.

Older opset forms are rewritten into the opset-21 forms the IR uses (see `onnx_ops`), model-local
functions are inlined, input shapes are fixed, and every node whose inputs are all constants
(`Shape` always is: shapes are static) is evaluated on the spot by the op's reference, so
shape-computation chains such as `Shape -> Gather -> Unsqueeze -> Concat -> Reshape` vanish.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import onnx
import onnx.inliner
from onnx import helper, numpy_helper

from ..errors import EdgecError, FrontendError, ShapeError, UnsupportedOpError
from ..ir import DType, Graph, Node, TensorType, Value, all_ops, get_op, has_op, onnx_dtypes
from ..ir.interpreter import run_node
from .onnx_checks import check_against_schema
from .onnx_ops import CONVERTERS, FRONTEND_OPS, NO_FOLD, REQUIRES
from .onnx_read import graphs, load_model, walk_nodes

# The IR's ops follow opset 21. Later opsets changed ops only by adding types and a few
# attributes (Cast round_mode, Range stash_type, ...); those must hold their defaults, which
# `clean_attrs` checks, so models of later opsets import too.
MIN_OPSET, MAX_OPSET = 11, onnx.defs.onnx_opset_version()
OLDEST_OPSET = 1  # opsets 1..10 are upgraded to MIN_OPSET on import (onnx.version_converter)
DEFAULT_DOMAINS = ("", "ai.onnx")
FOLD_LIMIT = 1 << 20  # elements: larger all-constant results stay nodes for the passes to fold

# Attributes that mean nothing at inference time: dropped whatever their value.
_INERT_ATTRS = {("BatchNormalization", "momentum"), ("BatchNormalization", "spatial"),
                ("Dropout", "seed")}


def import_onnx(model: str | Path | bytes | onnx.ModelProto,
                input_shapes: Mapping[str, Sequence[int]] | None = None,
                name: str | None = None) -> Graph:
    """Read an ONNX model (a path, its bytes or a ModelProto) into a graph with static shapes.

    `input_shapes` fixes inputs whose shapes have symbolic or unknown dims ({name: dims}).
    Raises FrontendError (unreadable model, unsupported opset or attribute),
    UnsupportedOpError (op types edgec lacks, all listed) or ShapeError (input shapes).
    """
    proto, source = load_model(model)
    opset = _default_opset(proto, source)
    # onnx's Scan 8 -> 9 adapter drops the batch axis: a model with opset-8 Scan imports as is
    scan8 = opset == 8 and any(n.op_type == "Scan" for n in walk_nodes(proto.graph))
    if opset < MIN_OPSET and not scan8:
        _check_before_upgrade(proto.graph)
        proto, opset = _upgrade(proto, source, opset)
    if proto.functions:
        try:
            proto = onnx.inliner.inline_local_functions(proto)
        except Exception as e:
            raise FrontendError(f"{source}: cannot inline the model's local functions: {e}") from e
    check_supported(proto.graph)
    return _Importer(proto, opset, name or proto.graph.name, input_shapes or {}).run()


# -- the opset, and upgrading old ones --------------------------------------------------------

def _default_opset(proto: onnx.ModelProto, source: str) -> int:
    versions = [o.version for o in proto.opset_import if o.domain in DEFAULT_DOMAINS]
    if not versions:
        raise FrontendError(f"{source} imports no ai.onnx opset")
    v = versions[0]
    if not OLDEST_OPSET <= v <= MAX_OPSET:
        raise FrontendError(
            f"{source} uses ONNX opset {v}; edgec imports opsets {OLDEST_OPSET}..{MAX_OPSET}")
    return v


# ONNX's version converter, run in a child process: its C++ assumes a well-formed graph and
# crashed on a graph output that no node makes, which would take the caller down with it
_CONVERT = ("import sys, onnx, onnx.version_converter as v; "
            "m = onnx.load_from_string(sys.stdin.buffer.read()); "
            "sys.stdout.buffer.write(v.convert_version(m, int(sys.argv[1])).SerializeToString())")


def _check_before_upgrade(graph: onnx.GraphProto) -> None:
    """What ONNX's version converter reports only as "unordered_map::at" (an op type ONNX does
    not define) or "Input q is undefined!", said in the importer's own words."""
    unknown: dict[str, int] = {}
    for node in walk_nodes(graph):
        if node.domain in DEFAULT_DOMAINS and not onnx.defs.has(node.op_type):
            unknown[node.op_type] = unknown.get(node.op_type, 0) + 1
    if unknown:
        listed = ", ".join(f"{k} (x{n})" for k, n in sorted(unknown.items()))
        raise UnsupportedOpError(f"unsupported ONNX ops: {listed}: ONNX defines no such op in "
                                 "its default domain; edgec supports: "
                                 + ", ".join(supported_ops()))
    known = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    known |= {o for node in graph.node for o in node.output if o}
    for node in graph.node:
        for name in node.input:
            if name and name not in known:
                who = node.name or next((o for o in node.output if o), node.op_type)
                raise FrontendError(f"node {who} ({node.op_type}) reads '{name}', which no "
                                    "node, input or initializer defines")
    for o in graph.output:
        if o.name not in known:
            raise FrontendError(f"graph output '{o.name}' is not produced by any node")


def _upgrade(proto: onnx.ModelProto, source: str, opset: int) -> tuple[onnx.ModelProto, int]:
    """Models older than MIN_OPSET are upgraded by ONNX's own version converter, whose
    adapters rewrite each op's old form (Upsample, attribute forms, ...) into the new one."""
    why = f"{source} uses ONNX opset {opset}; edgec imports opsets {MIN_OPSET}..{MAX_OPSET} " \
          "and ONNX's version converter could not upgrade it: "
    try:
        done = subprocess.run([sys.executable, "-c", _CONVERT, str(MIN_OPSET)],
                              input=proto.SerializeToString(), capture_output=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise FrontendError(why + "it ran for 10 minutes") from None
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        first = next((ln for ln in reversed(lines) if ln.strip()), "")
        if done.returncode < 0:
            raise FrontendError(why + f"it crashed (signal {-done.returncode}); is the graph "
                                "well formed?")
        raise FrontendError(why + first.split(": ", 1)[-1])  # the exception's message
    return onnx.load_from_string(done.stdout), MIN_OPSET


def _op_key(node: onnx.NodeProto) -> str:
    return node.op_type if node.domain in DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}"


def is_supported(op_type: str) -> bool:
    if op_type in FRONTEND_OPS:
        return True
    return all(has_op(o) for o in REQUIRES.get(op_type, (op_type,)))


def supported_ops() -> list[str]:
    """The ONNX (default domain) op types edgec imports."""
    ops = set(FRONTEND_OPS) | set(REQUIRES)
    ops |= {o for o in all_ops() if onnx.defs.has(o, "")}  # not the fused ops of the passes
    return sorted(o for o in ops if is_supported(o))


def check_supported(graph: onnx.GraphProto) -> None:
    """Raise one UnsupportedOpError listing every op type (with its count) edgec lacks."""
    counts: dict[str, int] = {}
    for node in walk_nodes(graph):
        key = _op_key(node)
        if key in CONVERTERS:  # the com.microsoft ops edgec imports
            continue
        if node.domain not in DEFAULT_DOMAINS or not is_supported(node.op_type):
            counts[key] = counts.get(key, 0) + 1
    if counts:
        listed = ", ".join(f"{k} (x{n})" for k, n in sorted(counts.items()))
        raise UnsupportedOpError(
            f"unsupported ONNX ops: {listed}; edgec supports: {', '.join(supported_ops())}")


def sanitize_name(name: str) -> str:
    """A C identifier derived from `name` (the generated library prefixes its API with it)."""
    s = re.sub(r"\W", "_", name.strip(), flags=re.ASCII).strip("_")
    if not s:
        return "model"
    return s if not s[0].isdigit() else "m_" + s


# -- tensors and types ------------------------------------------------------------------------

def _np_dtype(elem_type: int, what: str) -> DType:
    try:
        return onnx_dtypes.from_onnx(elem_type)
    except FrontendError as e:
        raise FrontendError(f"{what}: {e}") from None


def tensor_to_array(t: onnx.TensorProto | onnx.SparseTensorProto, what: str) -> np.ndarray:
    """The numpy array of an ONNX tensor (dense or sparse) with an edgec dtype."""
    if isinstance(t, onnx.SparseTensorProto):
        values = tensor_to_array(t.values, what)
        idx = numpy_helper.to_array(t.indices).astype(np.int64)
        dims = tuple(t.dims)
        dense = np.zeros(math.prod(dims), values.dtype)
        flat = idx if idx.ndim == 1 else np.ravel_multi_index(tuple(idx.T), dims)
        dense[flat] = values
        return dense.reshape(dims)
    dtype = _np_dtype(t.data_type, what)
    try:  # sub-byte ints come as ml_dtypes' int4 etc.: edgec holds them one to a byte
        return numpy_helper.to_array(t).astype(dtype.np, copy=False)
    except Exception as e:
        raise FrontendError(f"{what}: cannot read its data: {e}") from e


def attr_value(a: onnx.AttributeProto, where: str) -> Any:
    """A Python value for an ONNX attribute (strings decoded, tensors as arrays)."""
    what = f"{where}: attribute '{a.name}'"
    if a.ref_attr_name:
        raise FrontendError(f"{what} refers to function attribute '{a.ref_attr_name}' "
                            "outside a function")
    if a.type == onnx.AttributeProto.TENSOR:
        return tensor_to_array(a.t, what)
    if a.type == onnx.AttributeProto.SPARSE_TENSOR:
        return tensor_to_array(a.sparse_tensor, what)
    if a.type == onnx.AttributeProto.GRAPH:
        return a.g  # for the converters that inline subgraphs (If with a constant condition)
    A = onnx.AttributeProto
    if a.type in (A.GRAPHS, A.TENSORS, A.SPARSE_TENSORS, A.TYPE_PROTO, A.TYPE_PROTOS):
        raise FrontendError(f"{what} has a kind edgec does not support")
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [x.decode("utf-8", "replace") for x in v]
    return v


def _schema_default(op_type: str, opset: int, key: str) -> Any:
    try:
        a = onnx.defs.get_schema(op_type, opset, "").attributes[key]
    except Exception:
        return None
    if not a.default_value.type:
        return None
    return attr_value(a.default_value, op_type)


# -- the importer -----------------------------------------------------------------------------

class _Importer:
    """Walks the ONNX graph once, converting each node with the converter table."""

    def __init__(self, proto: onnx.ModelProto, opset: int, name: str,
                 input_shapes: Mapping[str, Sequence[int]]):
        self.proto = proto
        self.opset = opset
        self.graph = Graph(sanitize_name(name))
        self.input_shapes = input_shapes
        self.env: dict[str, Value] = {}
        self.parent: _Importer | None = None  # the enclosing importer, for subgraphs
        self.captured: list[Value] = []  # outer values a subgraph reads, as extra inputs
        self.initializers: dict[str, onnx.TensorProto | onnx.SparseTensorProto] = {}
        g = proto.graph
        for t in g.initializer:
            self.initializers[t.name] = t
        for st in g.sparse_initializer:
            self.initializers[st.values.name] = st
        self.output_names = {o.name for o in g.output}
        self.used = {o.name for sub in graphs(g) for o in sub.output}
        self.used |= {i for n in walk_nodes(g) for i in n.input}

    def run(self) -> Graph:
        g = self.proto.graph
        self._add_inputs()
        for node in _topological(g):
            self._convert(node)
        outs = []
        for o in g.output:
            if o.name not in self.env and o.name not in self.initializers:
                raise FrontendError(f"graph output '{o.name}' is not produced by any node")
            outs.append(self.value(o.name, "graph output"))
        self.graph.outputs = outs
        return self.graph

    # -- inputs ------------------------------------------------------------------------------
    def _add_inputs(self) -> None:
        inputs = [i for i in self.proto.graph.input if i.name not in self.initializers]
        names = [i.name for i in inputs]
        for key in self.input_shapes:
            if key not in names:
                const = " (it is an initializer, hence a constant)" if key in self.initializers \
                    else ""
                raise ShapeError(f"input_shapes names '{key}', which is not an input of the "
                                 f"model{const}; its inputs are {names}")
        for info in inputs:
            try:
                t = self._input_type(info)
            except ShapeError as e:
                if f"'{info.name}'" in str(e):
                    raise
                raise ShapeError(f"input '{info.name}': {e}") from None
            self.env[info.name] = self.graph.add_input(info.name, t)

    def _input_type(self, info: onnx.ValueInfoProto) -> TensorType:
        name = info.name
        if not info.type.HasField("tensor_type"):
            raise FrontendError(f"input '{name}' is not a tensor; edgec takes tensor inputs only")
        tt = info.type.tensor_type
        dtype = _np_dtype(tt.elem_type, f"input '{name}'")
        given = self.input_shapes.get(name)
        hint = "--input-shape {}={} (CLI) or input_shapes={{'{}': [...]}} (Python)"
        if not tt.HasField("shape"):
            if given is None:
                raise ShapeError(f"input '{name}' has no shape in the model; fix it with "
                                 + hint.format(name, "d0,d1,...", name))
            return TensorType(self._checked(name, given, None), dtype)
        dims: list[int | str | None] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value >= 0:
                dims.append(d.dim_value)
            else:
                dims.append(d.dim_param or None)
        if given is not None:
            return TensorType(self._checked(name, given, dims), dtype)
        for i, d in enumerate(dims):
            if not isinstance(d, int):
                template = ",".join(str(x) if isinstance(x, int) else f"d{j}"
                                    for j, x in enumerate(dims))
                sym = f"symbolic ('{d}')" if d else "unknown"
                raise ShapeError(f"input '{name}' dim {i} is {sym}; fix it with "
                                 + hint.format(name, template, name))
        return TensorType(tuple(dims), dtype)

    @staticmethod
    def _checked(name: str, given: Sequence[int], dims: list | None) -> tuple[int, ...]:
        try:
            shape = tuple(int(d) for d in given)
        except (TypeError, ValueError):
            raise ShapeError(f"input_shapes['{name}'] = {given!r} is not a list of ints") from None
        if any(d < 0 for d in shape):
            raise ShapeError(f"input_shapes['{name}'] = {list(shape)} has a negative dim")
        if dims is None:
            return shape
        model = [d if d is not None else "?" for d in dims]
        if len(shape) != len(dims):
            raise ShapeError(f"input_shapes['{name}'] = {list(shape)} has rank {len(shape)}, "
                             f"but the model's input '{name}' is {model} (rank {len(dims)})")
        for i, (g, d) in enumerate(zip(shape, dims, strict=True)):
            if isinstance(d, int) and g != d:
                raise ShapeError(f"input_shapes['{name}'] = {list(shape)} contradicts the model's "
                                 f"shape {model}: dim {i} is fixed to {d}")
        return shape

    # -- values ------------------------------------------------------------------------------
    def value(self, name: str, where: str) -> Value | None:
        if not name:
            return None
        v = self.env.get(name)
        if v is None:
            t = self.initializers.get(name)
            if t is None and self.parent is not None:
                v = self.env[name] = self._capture(name, where)
                return v
            if t is None:
                raise FrontendError(f"{where} reads '{name}', which no node, input or "
                                    "initializer defines")
            v = self.env[name] = self.const(tensor_to_array(t, f"initializer '{name}'"), name)
        return v

    def const(self, array, name: str, dtype: DType | None = None) -> Value:
        arr = np.asarray(array)
        return self.graph.const(arr, name, dtype or DType.from_numpy(arr.dtype))

    # -- nodes -------------------------------------------------------------------------------
    def _convert(self, node: onnx.NodeProto) -> None:
        name = node.name or next((o for o in node.output if o), node.op_type)
        where = f"node {name} ({node.op_type})"
        if node.domain in DEFAULT_DOMAINS:
            check_against_schema(node, self.opset, where)
        inputs = [self.value(i, where) for i in node.input]
        attrs = {a.name: attr_value(a, where) for a in node.attribute}
        outputs = list(node.output)
        while outputs and outputs[-1] not in self.used:  # unused optional outputs
            outputs.pop()
        if not outputs:
            return  # a dead node
        convert = CONVERTERS.get(_op_key(node))
        try:
            if convert is None:
                results = self.emit(node.op_type, inputs, attrs, outputs=outputs, name=name)
            else:
                results = convert(self, _NodeInfo(node, name, outputs), inputs, attrs)
        except EdgecError as e:
            if f"node {name}" in str(e):  # the message already says where
                raise
            raise type(e)(f"{where}: {e}") from e
        for oname, v in zip(outputs, results, strict=False):
            if oname and v is not None:
                self.env[oname] = v

    def inline(self, body: onnx.GraphProto, where: str) -> list[Value]:
        """Convert a subgraph that takes no inputs (an If branch) into this graph; ONNX names
        are unique model-wide, so its nodes read outer values by name. Returns its outputs."""
        if body.input:
            raise FrontendError(f"{where}: subgraph '{body.name}' takes inputs")
        for t in body.initializer:
            self.initializers[t.name] = t
        for node in _topological(body):
            self._convert(node)
        return [self.value(o.name, where) for o in body.output]

    def subgraph(self, body: onnx.GraphProto, input_types: Sequence[TensorType],
                 where: str) -> tuple[Graph, list[Value]]:
        """Import `body` as a closed graph whose declared inputs have `input_types`.

        Every value of the enclosing graphs that the body reads becomes an extra trailing
        input (constants are copied in instead); returns the graph and those captured outer
        values, in the order of the extra inputs.
        """
        if len(body.input) != len(input_types):
            raise FrontendError(f"{where}: subgraph '{body.name}' declares {len(body.input)} "
                                f"inputs, {len(input_types)} are passed")
        sub = _Importer.__new__(_Importer)
        sub.proto, sub.opset, sub.input_shapes = self.proto, self.opset, {}
        sub.graph = Graph(sanitize_name(body.name or "body"))
        sub.env, sub.parent, sub.captured = {}, self, []
        sub.initializers = dict(self.initializers)
        sub.initializers.update({t.name: t for t in body.initializer})
        sub.output_names = {o.name for o in body.output}
        sub.used = {o.name for g in graphs(body) for o in g.output}
        sub.used |= {i for n in walk_nodes(body) for i in n.input}
        for info, t in zip(body.input, input_types, strict=True):
            sub.env[info.name] = sub.graph.add_input(info.name, t)
        for node in _topological(body):
            sub._convert(node)
        sub.graph.outputs = [sub.value(o.name, f"{where}: subgraph output") for o in body.output]
        return sub.graph, sub.captured

    def _capture(self, name: str, where: str) -> Value | None:
        """An outer value read by this subgraph: a constant copy, or a new captured input."""
        outer = self.parent.value(name, where)
        if outer is None:
            return None
        if outer.is_const:
            return self.graph.const(outer.const, name, outer.dtype)
        self.captured.append(outer)
        return self.graph.add_input(name, outer.type)

    def clean_attrs(self, op: str, attrs: dict[str, Any], name: str) -> dict[str, Any]:
        """`attrs` restricted to the IR op's schema: inert or default-valued extras dropped."""
        spec = get_op(op).attrs
        out = {}
        for k, v in attrs.items():
            if isinstance(v, onnx.GraphProto) and k not in spec:
                raise FrontendError(f"node {name} ({op}): attribute '{k}' is a subgraph; edgec "
                                    "does not import subgraphs there")
            if k in spec:
                out[k] = v
            elif (op, k) in _INERT_ATTRS:
                continue
            elif _same(v, _schema_default(op, self.opset, k)):
                continue
            else:
                raise FrontendError(
                    f"node {name} ({op}): attribute {k}={v!r} is not supported by edgec's {op} "
                    f"(it takes {sorted(spec) or 'no attributes'}); edgec imports models for "
                    "inference only")
        return out

    def emit(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None,
             *, outputs: Sequence[str] = ("",), name: str = "") -> list[Value]:
        """Add IR node `op`, or the constants it computes when all its inputs are constants.

        `outputs` names the results ("" for an unused one, which gets a fresh name); it may
        be shorter than the op's outputs, never longer.
        """
        name = name or outputs[0] or op.lower()
        where = f"node {name} ({op})"
        opdef = get_op(op)
        attrs = opdef.complete_attrs(self.clean_attrs(op, attrs or {}, name), where=where)
        types = opdef.infer_types(list(inputs), attrs, where=where)
        if len(types) < len(outputs):
            raise FrontendError(f"{where}: the model uses output {len(outputs) - 1}, but edgec's "
                                f"{op} has {len(types)} output(s) (training-only outputs are not "
                                "supported)")
        lo, hi = opdef.num_outputs
        if len(types) == hi:  # trailing optional outputs the model does not use are left off
            types = types[:max(len(outputs), lo)]
        onames = [outputs[i] if i < len(outputs) and outputs[i] else f"{name}_{i}"
                  for i in range(len(types))]
        if self._foldable(op, inputs, types):
            outs = [Value(n, t) for n, t in zip(onames, types, strict=True)]
            arrays = run_node(Node(op, inputs, outs, attrs, name),
                              [v.const if v is not None else None for v in inputs])
            return [self.const(a, v.name, v.dtype) for a, v in zip(arrays, outs, strict=True)]
        values = [Value(self.graph.fresh_name(n), t) for n, t in zip(onames, types, strict=True)]
        node = Node(op, inputs, values, attrs, self.graph.fresh_name(name, node=True))
        self.graph.insert(node)
        return values

    @staticmethod
    def _foldable(op: str, inputs: Sequence[Value | None], types: list[TensorType]) -> bool:
        present = [v for v in inputs if v is not None]
        return (bool(present) and all(v.is_const for v in present) and op not in NO_FOLD
                and sum(t.numel for t in types) <= FOLD_LIMIT)


class _NodeInfo:
    """What a converter needs to know about the ONNX node it converts."""

    __slots__ = ("proto", "name", "outputs")

    def __init__(self, proto: onnx.NodeProto, name: str, outputs: list[str]):
        self.proto = proto
        self.name = name
        self.outputs = outputs

    @property
    def op_type(self) -> str:
        return self.proto.op_type


def _same(a: Any, b: Any) -> bool:
    if b is None:
        return False
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except Exception:
        return False


def _topological(g: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The nodes in a valid order: the file's order when it is one (ONNX requires it), else
    the order that keeps each node as early in the file as its inputs allow."""
    producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
    deps = nx.DiGraph()
    deps.add_nodes_from(range(len(g.node)))
    # names produced by no node (graph inputs, initializers, missing ones) add no edge: the
    # importer reports the missing
    deps.add_edges_from((producer[name], i) for i, n in enumerate(g.node)
                        for name in n.input if name in producer)
    try:
        return [g.node[i] for i in nx.lexicographical_topological_sort(deps)]
    except nx.NetworkXUnfeasible:
        first = g.node[nx.find_cycle(deps)[0][0]]
        raise FrontendError(f"the graph has a cycle through node "
                            f"{first.name or first.output[0]} ({first.op_type})") from None
