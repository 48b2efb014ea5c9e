"""Static memory planning: every intermediate activation gets a byte offset in one arena.

A value lives from its producer's position in `graph.nodes` to its last use. Values are
placed one by one, each at the tightest gap (best fit, 64-byte aligned) between the values
already placed whose lifetimes overlap its own; the order is largest first (TFLite's greedy by
size) or three other orders (by size and lifetime, by the breadth of the busiest position,
program order), whichever gives the smallest arena. The lower bound it is measured against is
max_t sum{size(v) : v live at t}. A view op's output
(Reshape, Flatten, Identity, ...: the "view" trait) aliases its input's bytes, whose lifetime
then extends over the view's uses. Graph inputs, outputs and constants live outside the arena.
"""

from __future__ import annotations

from ..ir import Graph, Value, get_op
from ..ir.records import MemoryPlan
from .manager import register_pass


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def _place(spans: list[tuple[int, int, int]], order: list[int],
           alignment: int) -> tuple[list[int], int]:
    """Offsets for values given as (bytes, first, last), placed in `order`, each in the
    tightest gap between the placed values it overlaps in time (else above them all)."""
    placed: list[tuple[int, int, int, int]] = []  # (offset, end offset, first, last)
    offsets = [0] * len(spans)
    arena = 0
    for i in order:
        size, a, b = spans[i]
        busy = sorted((o, e) for o, e, s, t in placed if s <= b and a <= t and e > o)
        best, best_gap, cursor = None, None, 0
        for o, e in busy:
            gap = o - cursor
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, _align(e, alignment))
        offsets[i] = off = best if best is not None else cursor
        placed.append((off, off + size, a, b))
        arena = max(arena, off + size)
    return offsets, arena


def plan(graph: Graph, alignment: int = 64) -> MemoryPlan:
    """Compute the memory plan of `graph` (see the module docstring)."""
    outputs = {id(v) for v in graph.outputs}
    root: dict[int, Value] = {}  # view value -> the value owning its bytes

    def owner(v: Value) -> Value:
        return root.get(id(v), v)

    aliases: dict[str, str] = {}
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    planned: list[Value] = []
    for i, node in enumerate(graph.nodes):
        for v in node.inputs:
            if v is not None and id(owner(v)) in start:
                end[id(owner(v))] = max(end[id(owner(v))], i)
        for k, v in enumerate(node.outputs):
            src = node.inputs[0] if node.inputs else None
            if k == 0 and "view" in get_op(node.op).traits and src is not None \
                    and id(v) not in outputs and src.type.nbytes == v.type.nbytes:
                root[id(v)] = owner(src)
                aliases[v.name] = owner(src).name
            elif id(v) not in outputs:
                start[id(v)] = end[id(v)] = i
                planned.append(v)

    sizes = {id(v): v.type.nbytes for v in planned}
    live = [0] * (len(graph.nodes) + 1)
    for v in planned:
        for t in range(start[id(v)], end[id(v)] + 1):
            live[t] += sizes[id(v)]
    spans = [(sizes[id(v)], start[id(v)], end[id(v)]) for v in planned]
    # the busiest position a value spans: greedy-by-breadth places those values first
    breadth = [max(live[a:b + 1]) for _, a, b in spans]
    orders = {  # sort keys over value indices; the smallest arena wins, ties to the first
        "greedy by size": lambda i: (-spans[i][0], spans[i][1]),
        "by size, longest life first": lambda i: (-spans[i][0], spans[i][1] - spans[i][2]),
        "greedy by breadth": lambda i: (-breadth[i], -spans[i][0], spans[i][1]),
        "program order": lambda i: (spans[i][1], -spans[i][0]),
    }
    best = None
    for strategy, key in orders.items():
        offs, arena = _place(spans, sorted(range(len(spans)), key=key), alignment)
        if best is None or arena < best[1]:
            best = (offs, arena, strategy)
    offs, arena, strategy = best
    offsets = {v.name: offs[i] for i, v in enumerate(planned)}

    return MemoryPlan(
        offsets=offsets, aliases=aliases, arena_bytes=_align(arena, alignment),
        total_bytes=sum(sizes.values()), lower_bound_bytes=max(live), alignment=alignment,
        lifetimes={v.name: (start[id(v)], end[id(v)]) for v in planned},
        sizes={v.name: sizes[id(v)] for v in planned}, strategy=strategy)


@register_pass("plan-memory", writes=("memory_plan",), invalidates=())
def plan_memory(graph: Graph, *, alignment: int = 64) -> bool:
    """Assign arena offsets to activations; the plan goes to graph.record.memory_plan."""
    graph.record.memory_plan = plan(graph, alignment)
    return False
