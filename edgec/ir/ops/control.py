"""Control flow: If, Loop and Scan with closed subgraphs.

A subgraph reads nothing from the enclosing graph: every outer value it needs is passed as a
trailing node input ("captured") and arrives as one of its own inputs, so the references
below are pure functions, use-def links never cross graphs, and a backend can plan a body as
a graph of its own. Shapes are static: an If's branches give equal types, a Loop runs a fixed
trip count (M constant, condition never false), a Scan iterates over axis 0 of its inputs.

    If(cond, c...)              {then_branch(c...), else_branch(c...)}
    Loop(M, cond, v..., c...)   {body(i, cond, v..., c...) -> (cond, v..., scan...)}
    Scan(s..., x..., c...)      {body(s..., x_t..., c...) -> (s..., y_t...), num_scan_inputs}
"""

from __future__ import annotations

import numpy as np

from ...errors import ShapeError
from ..registry import Attr, const_input, op
from ..types import TensorType


def _run(graph, arrays) -> list[np.ndarray]:
    from ..interpreter import interpret

    feeds = {v.name: np.asarray(a) for v, a in zip(graph.inputs, arrays)}
    out = interpret(graph, feeds)
    return [out[v.name] for v in graph.outputs]


def _check_signature(graph, types, what: str) -> None:
    got = [v.type for v in graph.inputs]
    if got != list(types):
        raise ShapeError(f"{what} takes ({', '.join(map(str, got))}) but is given "
                         f"({', '.join(map(str, types))})")


def _infer_if(inputs, *, then_branch, else_branch):
    captured = [v.type for v in inputs[1:]]
    _check_signature(then_branch, captured, "then_branch")
    _check_signature(else_branch, captured, "else_branch")
    t = [v.type for v in then_branch.outputs]
    e = [v.type for v in else_branch.outputs]
    if t != e:
        raise ShapeError(
            f"If branches give different types (then: {', '.join(map(str, t))}; else: "
            f"{', '.join(map(str, e))}); edgec compiles a run-time If only when both branches "
            "give the same shapes and dtypes")
    if inputs[0].type.numel != 1:
        raise ShapeError(f"If condition must hold one element, it is {inputs[0].type}")
    return t


@op("If", inputs=(1, 1 << 16), outputs=(1, 1 << 16), infer=_infer_if,
    attrs={"then_branch": Attr.graph(), "else_branch": Attr.graph()})
def if_(cond, *captured, then_branch, else_branch):
    branch = then_branch if bool(np.asarray(cond).reshape(-1)[0]) else else_branch
    return tuple(_run(branch, captured))


def loop_layout(node_inputs, body, captured: int) -> tuple[int, int]:
    """(number of carried values, number of scan outputs) of a Loop."""
    carried = len(node_inputs) - 2 - captured
    scans = len(body.outputs) - 1 - carried
    if carried < 0 or scans < 0 or len(body.inputs) != 2 + carried + captured:
        raise ShapeError("Loop body signature does not match the node's inputs")
    return carried, scans


def trip_count(inputs) -> int:
    m = const_input(inputs, 0, "Loop trip count M")
    if m is None:
        raise ShapeError("Loop needs a constant trip count M (edgec compiles fixed-count loops)")
    return int(np.asarray(m).reshape(-1)[0])


def _infer_loop(inputs, *, body, captured):
    n, k = loop_layout(inputs, body, captured)
    m = trip_count(inputs)
    carried = [v.type for v in inputs[2:2 + n]]
    types = [TensorType((), inputs[0].dtype), TensorType((), body.inputs[1].dtype)] + carried
    _check_signature(body, types + [v.type for v in inputs[2 + n:]], "Loop body")
    outs = [v.type for v in body.outputs]
    if outs[1:1 + n] != carried:
        raise ShapeError("Loop body changes the type of a loop-carried value; edgec needs "
                         "static shapes")
    return carried + [TensorType((m, *t.shape), t.dtype) for t in outs[1 + n:]]


@op("Loop", inputs=(2, 1 << 16), outputs=(1, 1 << 16), infer=_infer_loop,
    attrs={"body": Attr.graph(), "captured": Attr.int(0)})
def loop(m, cond, *rest, body, captured):
    n = len(rest) - captured
    state, extra = list(rest[:n]), list(rest[n:])
    scans: list[list[np.ndarray]] = []
    keep_going = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
    count = int(np.asarray(m).reshape(-1)[0])
    for i in range(count):
        if not keep_going:
            raise ShapeError("Loop condition became false before the trip count; edgec "
                             "compiles fixed-count loops only")
        out = _run(body, [np.array(i, np.int64), np.array(keep_going), *state, *extra])
        keep_going = bool(np.asarray(out[0]).reshape(-1)[0])
        state = out[1:1 + n]
        scans.append(out[1 + n:])
    k = len(body.outputs) - 1 - n
    stacked = [np.stack([s[j] for s in scans]) if scans else
               np.zeros((0, *body.outputs[1 + n + j].shape), body.outputs[1 + n + j].dtype.np)
               for j in range(k)]
    return tuple(state + stacked)


def scan_layout(node_inputs, body, num_scan_inputs: int, captured: int) -> tuple[int, int]:
    """(number of state values, number of scan outputs) of a Scan."""
    states = len(node_inputs) - num_scan_inputs - captured
    scans = len(body.outputs) - states
    if states < 0 or scans < 0:
        raise ShapeError("Scan body signature does not match the node's inputs")
    return states, scans


def _infer_scan(inputs, *, body, num_scan_inputs, scan_input_directions, scan_output_directions,
                captured):
    n, k = scan_layout(inputs, body, num_scan_inputs, captured)
    xs = inputs[n:n + num_scan_inputs]
    lengths = {v.shape[0] for v in xs if v.shape}
    if len(lengths) != 1:
        raise ShapeError("Scan inputs must share their (axis 0) length")
    length = lengths.pop()
    slices = [TensorType(v.shape[1:], v.dtype) for v in xs]
    _check_signature(body, [v.type for v in inputs[:n]] + slices +
                     [v.type for v in inputs[n + num_scan_inputs:]], "Scan body")
    outs = [v.type for v in body.outputs]
    if outs[:n] != [v.type for v in inputs[:n]]:
        raise ShapeError("Scan body changes the type of a state value; edgec needs static shapes")
    return outs[:n] + [TensorType((length, *t.shape), t.dtype) for t in outs[n:]]


@op("Scan", inputs=(1, 1 << 16), outputs=(1, 1 << 16), infer=_infer_scan,
    attrs={"body": Attr.graph(), "num_scan_inputs": Attr.int(),
           "scan_input_directions": Attr.ints([]), "scan_output_directions": Attr.ints([]),
           "captured": Attr.int(0)})
def scan(*inputs, body, num_scan_inputs, scan_input_directions, scan_output_directions, captured):
    n = len(inputs) - num_scan_inputs - captured
    state = list(inputs[:n])
    xs = inputs[n:n + num_scan_inputs]
    extra = list(inputs[n + num_scan_inputs:])
    length = xs[0].shape[0]
    in_dirs = scan_input_directions or [0] * len(xs)
    outs_t: list[list[np.ndarray]] = []
    for t in range(length):
        slices = [x[length - 1 - t] if d else x[t] for x, d in zip(xs, in_dirs)]
        out = _run(body, [*state, *slices, *extra])
        state = out[:n]
        outs_t.append(out[n:])
    k = len(body.outputs) - n
    out_dirs = scan_output_directions or [0] * k
    stacked = []
    for j in range(k):
        seq = [o[j] for o in outs_t]
        stacked.append(np.stack(seq[::-1] if out_dirs[j] else seq))
    return tuple(state + stacked)
