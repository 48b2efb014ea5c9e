"""The graph IR: SSA values, nodes and the graph that owns them and keeps their use-def links.

A `Value` is produced by exactly one node, or is a graph input, or is a constant (it then
holds a numpy array). `value.producer` and `value.uses` are maintained by the graph's edit
methods, so a pass never rebuilds them by hand. Arrays held by constants are never mutated
in place: a pass that changes a weight makes a new constant.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import VerificationError
from .dtypes import DType
from .records import CompileRecord, NodeRecord
from .types import TensorType


class Value:
    __slots__ = ("name", "type", "const", "producer", "uses", "meta")

    def __init__(self, name: str, type: TensorType, const: np.ndarray | None = None):
        self.name = name
        self.type = type
        self.const = const
        self.producer: Node | None = None
        self.uses: list[tuple[Node, int]] = []
        self.meta: dict[str, Any] = {}

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def is_const(self) -> bool:
        return self.const is not None

    def users(self) -> list[Node]:
        """The distinct nodes that read this value, in use order."""
        return list(dict.fromkeys(n for n, _ in self.uses))

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


class Node:
    __slots__ = ("op", "inputs", "outputs", "attrs", "name", "meta", "record", "graph")

    def __init__(self, op: str, inputs, outputs, attrs, name: str):
        self.op = op
        self.inputs: list[Value | None] = list(inputs)
        self.outputs: list[Value] = list(outputs)
        self.attrs: dict[str, Any] = dict(attrs)
        self.name = name
        self.meta: dict[str, Any] = {}
        self.record = NodeRecord()  # what passes leave on it for later stages
        self.graph: Graph | None = None

    @property
    def output(self) -> Value:
        if len(self.outputs) != 1:
            raise VerificationError(f"node {self.name} ({self.op}) has {len(self.outputs)} outputs")
        return self.outputs[0]

    def input(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def inherit(self, other: Node) -> None:
        """Take on `other`'s meta and record: this node replaces it."""
        self.meta.update(other.meta)
        self.record = dataclasses.replace(other.record)

    def __repr__(self) -> str:
        return f"<{self.op} {self.name}>"


_NAME_OK = re.compile(r"[A-Za-z0-9_.]+$")


class Graph:
    """A model: named inputs, outputs, and nodes kept in a valid topological order."""

    def __init__(self, name: str = "model"):
        self.name = name
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.nodes: list[Node] = []
        self.record = CompileRecord()  # what the passes leave for later stages
        self._names: set[str] = set()
        self._node_names: set[str] = set()
        self._counter = itertools.count()

    # -- names -------------------------------------------------------------------------
    def fresh_name(self, base: str = "v", *, node: bool = False) -> str:
        """A value (or node) name not yet used in this graph, derived from `base`."""
        taken = self._node_names if node else self._names
        cand = base
        while cand in taken:
            cand = f"{base}_{next(self._counter)}"
        taken.add(cand)
        return cand

    # -- building ----------------------------------------------------------------------
    def add_input(self, name: str, type: TensorType) -> Value:
        v = Value(self.fresh_name(name), type)
        self.inputs.append(v)
        return v

    def const(self, array, name: str = "c", dtype: DType | None = None) -> Value:
        """A new constant value holding `array` (copied to a read-only contiguous array)."""
        arr = np.array(array, dtype=dtype.np if dtype else None, copy=True, order="C")
        if dtype is None and arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        arr.setflags(write=False)
        return Value(self.fresh_name(name), TensorType(arr.shape, DType.from_numpy(arr.dtype)), arr)

    def add_node(
        self,
        op: str,
        inputs: Sequence[Value | None],
        attrs: dict[str, Any] | None = None,
        *,
        name: str | None = None,
        output_names: Sequence[str] | None = None,
        num_outputs: int | None = None,
        before: Node | None = None,
    ) -> Node:
        """Create a node, infer its output types from the op registry and insert it.

        The node goes at the end, or just before `before` (which keeps the order valid when
        a pass replaces `before` by new nodes).
        """
        from .registry import get_op

        opdef = get_op(op)
        attrs = opdef.complete_attrs(attrs or {}, where=name or op)
        node_name = self.fresh_name(name or op.lower(), node=True)
        types = opdef.infer_types(list(inputs), attrs, where=node_name)
        if num_outputs is not None:
            types = types[:num_outputs]
        if output_names is None:
            output_names = [node_name if len(types) == 1 else f"{node_name}_{i}"
                            for i in range(len(types))]
        outputs = [Value(self.fresh_name(n), t) for n, t in zip(output_names, types)]
        node = Node(op, inputs, outputs, attrs, node_name)
        self.insert(node, before=before)
        return node

    def insert(self, node: Node, before: Node | None = None) -> None:
        """Insert an already constructed node and link its uses."""
        node.graph = self
        self._node_names.add(node.name)
        for i, v in enumerate(node.inputs):
            if v is not None:
                v.uses.append((node, i))
        for v in node.outputs:
            v.producer = node
        if before is None:
            self.nodes.append(node)
        else:
            self.nodes.insert(self.nodes.index(before), node)

    # -- editing -----------------------------------------------------------------------
    def set_input(self, node: Node, i: int, value: Value | None) -> None:
        old = node.inputs[i]
        if old is not None:
            old.uses.remove((node, i))
        node.inputs[i] = value
        if value is not None:
            value.uses.append((node, i))

    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Make every reader of `old` (graph outputs included) read `new` instead."""
        for node, i in list(old.uses):
            self.set_input(node, i, new)
        self.outputs = [new if v is old else v for v in self.outputs]

    def remove_node(self, node: Node) -> None:
        """Remove a node whose outputs are no longer used."""
        for v in node.outputs:
            if v.uses or v in self.outputs:
                raise VerificationError(
                    f"cannot remove node {node.name} ({node.op}): "
                    f"its output %{v.name} is still used")
        for i in range(len(node.inputs)):
            self.set_input(node, i, None)
        self.nodes.remove(node)
        node.graph = None

    def replace_node(self, node: Node, new_outputs: Sequence[Value]) -> None:
        """Redirect the uses of `node`'s outputs to `new_outputs`, then remove `node`."""
        for old, new in zip(node.outputs, new_outputs):
            self.replace_all_uses(old, new)
        self.remove_node(node)

    # -- queries -----------------------------------------------------------------------
    def constants(self) -> list[Value]:
        """The constant values that nodes or graph outputs read, in first-use order."""
        seen: dict[int, Value] = {}
        for n in self.nodes:
            for v in n.inputs:
                if v is not None and v.is_const:
                    seen.setdefault(id(v), v)
        for v in self.outputs:
            if v.is_const:
                seen.setdefault(id(v), v)
        return list(seen.values())

    def values(self) -> Iterable[Value]:
        yield from self.inputs
        yield from self.constants()
        for n in self.nodes:
            yield from n.outputs

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def to_networkx(self):
        """A networkx DiGraph of the nodes (edges carry the value between them)."""
        import networkx as nx

        g = nx.DiGraph()
        for n in self.nodes:
            g.add_node(n)
        for n in self.nodes:
            for v in n.inputs:
                if v is not None and v.producer is not None:
                    g.add_edge(v.producer, n, value=v)
        return g

    def topo_sort(self) -> None:
        """Reorder `nodes` topologically, keeping the current order where it is free."""
        import networkx as nx

        pos = {n: i for i, n in enumerate(self.nodes)}
        self.nodes = list(nx.lexicographical_topological_sort(self.to_networkx(), key=pos.get))

    def copy(self) -> Graph:
        """A structural copy sharing the (immutable) constant arrays."""
        g = Graph(self.name)
        g._names = set(self._names)
        g._node_names = set(self._node_names)
        g.record = dataclasses.replace(self.record)
        vmap: dict[int, Value] = {}

        def cp(v: Value | None) -> Value | None:
            if v is None:
                return None
            if id(v) not in vmap:
                nv = Value(v.name, v.type, v.const)
                nv.meta = dict(v.meta)
                vmap[id(v)] = nv
            return vmap[id(v)]

        g.inputs = [cp(v) for v in self.inputs]
        for n in self.nodes:
            nn = Node(n.op, [cp(v) for v in n.inputs], [cp(v) for v in n.outputs], n.attrs, n.name)
            nn.meta = dict(n.meta)
            nn.record = dataclasses.replace(n.record)
            g.insert(nn)
        g.outputs = [cp(v) for v in self.outputs]
        return g

    def __str__(self) -> str:
        from .printer import print_graph

        return print_graph(self)


def is_plain_name(name: str) -> bool:
    return bool(_NAME_OK.match(name))
