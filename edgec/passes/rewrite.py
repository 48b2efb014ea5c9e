"""Declarative rewrite patterns, and the driver that applies a table of them until nothing
changes.

A `Pattern` anchors on op names. `match(node)` inspects the neighbourhood and returns a match
object, or a string saying why it does not match (`require(cond, reason)` and the helpers
`producer`, `sole_user`, `constant` raise the same as `NoMatch`). `replace(graph, node, m)`
builds the replacement with `graph.add_node(..., before=node)` and redirects uses with
`replace_value`; the driver then erases the nodes left without users. Tables are lists, so
they compose with `+`; `PatternPass(name, table)` makes a pass of one.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PassError
from ..ir import Graph, Node, Value


class NoMatch(Exception):
    """Raised inside a match function: the pattern does not apply, for `reason`."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def require(cond: Any, reason: str) -> None:
    """Stop matching with `reason` unless `cond` holds."""
    if not cond:
        raise NoMatch(reason)


def producer(value: Value | None, *ops: str) -> Node:
    """The node computing `value`; it must be one of `ops` when any are given."""
    if value is None:
        raise NoMatch("the input is omitted")
    node = value.producer
    if node is None:
        kind = "a constant" if value.is_const else "a graph input"
        raise NoMatch(f"%{value.name} is {kind}, not computed by {' or '.join(ops) or 'a node'}")
    if ops and node.op not in ops:
        raise NoMatch(f"%{value.name} is computed by {node.op}, not {' or '.join(ops)}")
    return node


def sole_user(value: Value) -> Node:
    """The one node reading `value` (once); fails if others read it or it is a graph output."""
    graph = value.producer.graph if value.producer is not None else None
    if graph is not None and any(v is value for v in graph.outputs):
        raise NoMatch(f"%{value.name} is a graph output")
    if len(value.uses) != 1:
        raise NoMatch(f"%{value.name} has {len(value.uses)} uses, not exactly one")
    return value.uses[0][0]


def constant(value: Value | None, what: str = "") -> np.ndarray:
    """The array of a constant value; fails if it is computed at run time."""
    if value is None or value.const is None:
        name = "the omitted input" if value is None else f"%{value.name}"
        raise NoMatch(f"{what or name} is not a constant")
    return value.const


def can_replace(graph: Graph, old: Value, new: Value) -> bool:
    """Whether `replace_value(graph, old, new)` can keep every graph output's name."""
    if not any(v is old for v in graph.outputs):
        return True
    return not any(v is new for v in graph.inputs + graph.outputs)


def replace_value(graph: Graph, old: Value, new: Value) -> None:
    """Make every reader of `old` (graph outputs included) read `new`.

    The surviving value takes over `old`'s name (and its producer the node name), so the
    model's tensor names and the graph's output names survive rewrites. Graph inputs and
    outputs keep their own names; a graph output cannot be replaced by one of those.
    """
    if old is new:
        return
    if not can_replace(graph, old, new):
        raise PassError(f"cannot replace graph output %{old.name} by %{new.name}, which is a "
                        "graph input or another output (check `can_replace` when matching)")
    renamable = not any(v is new for v in graph.inputs + graph.outputs)
    graph.replace_all_uses(old, new)
    if not renamable:
        return
    old.name, new.name = new.name, old.name
    a, b = old.producer, new.producer
    if a is not None and b is not None and a is not b and a.name == new.name:
        a.name, b.name = b.name, a.name


# -- patterns -----------------------------------------------------------------------------

Match = Callable[[Node], Any]
Replace = Callable[[Graph, Node, Any], None]


@dataclass(frozen=True)
class Pattern:
    """Rewrite `anchor`-op nodes (any op when empty) for which `match` gives a match object
    (anything but a string or None) by calling `replace(graph, node, match_object)`."""

    name: str
    anchor: tuple[str, ...]
    match: Match
    replace: Replace

    def __init__(self, name: str, anchor: str | Sequence[str], match: Match | None,
                 replace: Replace):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "anchor", (anchor,) if isinstance(anchor, str) else
                           tuple(anchor))
        object.__setattr__(self, "match", match or (lambda node: node))
        object.__setattr__(self, "replace", replace)

    def try_match(self, node: Node) -> tuple[Any, str | None]:
        """(match object, None) or (None, reason it failed)."""
        try:
            m = self.match(node)
        except NoMatch as e:
            return None, e.reason
        if m is None:
            return None, "no match"
        if isinstance(m, str):
            return None, m
        return m, None


def pattern(anchor: str | Sequence[str], *, match: Match | None = None,
            name: str | None = None) -> Callable[[Replace], Pattern]:
    """Decorate a replace function into a Pattern (named after the function by default):

        @pattern("LeakyRelu", match=lambda n: n if n.attrs["alpha"] == 0 else "alpha != 0")
        def leaky_relu_0_is_relu(graph, node, m):
            relu = graph.add_node("Relu", node.inputs, before=node)
            replace_value(graph, node.output, relu.output)
    """

    def deco(fn: Replace) -> Pattern:
        return Pattern(name or re.sub(r"_+", "-", fn.__name__).strip("-"), anchor, match, fn)

    return deco


# -- the driver ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MatchFailure:
    node: str
    op: str
    pattern: str
    reason: str

    def __str__(self) -> str:
        return f"{self.node} ({self.op}): {self.pattern}: {self.reason}"


@dataclass
class RewriteResult:
    """What a driver run did: rewrites applied per pattern, sweeps over the graph and, with
    explain=True, why each pattern failed on each node of its anchor op in the final graph."""

    applied: Counter = field(default_factory=Counter)
    sweeps: int = 0
    failures: list[MatchFailure] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return sum(self.applied.values()) > 0

    def explain(self) -> str:
        done = ", ".join(f"{k} x{n}" for k, n in self.applied.items()) or "nothing"
        lines = [f"applied: {done} ({self.sweeps} sweeps)"]
        lines += [f"  no match: {f}" for f in self.failures]
        return "\n".join(lines)


def erase_dead(graph: Graph, nodes: Sequence[Node]) -> None:
    """Erase the given nodes if none of their outputs is used, then their producers likewise."""
    outputs = {id(v) for v in graph.outputs}
    work = list(nodes)
    while work:
        n = work.pop()
        if n.graph is not graph or any(v.uses or id(v) in outputs for v in n.outputs):
            continue
        work.extend(v.producer for v in n.inputs if v is not None and v.producer is not None)
        graph.remove_node(n)


def apply_patterns(graph: Graph, patterns: Sequence[Pattern], *, explain: bool = False,
                   max_sweeps: int = 64) -> RewriteResult:
    """Sweep the nodes in order, applying the first matching pattern (in table order) to each,
    until a sweep changes nothing. Nodes a rewrite leaves without users are erased."""
    by_op: dict[str, list[Pattern]] = {}

    def candidates(op: str) -> list[Pattern]:
        if op not in by_op:
            by_op[op] = [p for p in patterns if not p.anchor or op in p.anchor]
        return by_op[op]

    result = RewriteResult()
    while True:
        result.sweeps += 1
        changed = False
        failures: list[MatchFailure] = []
        for node in list(graph.nodes):
            if node.graph is not graph:  # erased by an earlier rewrite of this sweep
                continue
            for p in candidates(node.op):
                m, reason = p.try_match(node)
                if reason is not None:
                    if explain:
                        failures.append(MatchFailure(node.name, node.op, p.name, reason))
                    continue
                p.replace(graph, node, m)
                erase_dead(graph, [node])
                result.applied[p.name] += 1
                changed = True
                break
        if not changed:
            result.failures = failures
            return result
        if result.sweeps >= max_sweeps:
            raise PassError(f"rewrite patterns {sorted(result.applied)} still apply after "
                            f"{max_sweeps} sweeps; two of them probably undo each other")


@dataclass(frozen=True)
class PatternPass:
    """A pass that applies a table of rewrite patterns to a fixed point; `explain=true`
    prints why each pattern failed to match where it did not apply."""

    name: str = field(metadata={"option": False})
    patterns: tuple[Pattern, ...] = field(metadata={"option": False})
    explain: bool = False
    doc: str = field(default="", metadata={"option": False}, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "patterns", tuple(self.patterns))

    def run(self, graph: Graph) -> bool:
        result = apply_patterns(graph, self.patterns, explain=self.explain)
        if self.explain:
            print(f"// {self.name}: {result.explain()}", file=sys.stderr)
        return result.changed
