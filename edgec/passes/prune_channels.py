"""Neuron (channel) pruning: whole output channels of convolutions and neurons of matrix
products removed, and their readers rewired, so that the shapes really shrink
(`prune{pattern=channel}`, `--prune-pattern channel`).

A layer's output channel j can go when every path from it ends in the channel axis of
layers that take it as input, through ops that act on each channel alone and map 0 to 0
(Relu, LeakyRelu, Identity, Dropout, MaxPool): then removing it is setting its weights and
bias to zero, as pruning does, and the readers' weights for that input go too. Per layer, the
`sparsity` share of its channels with the least L2 norm of weights and bias goes (one channel
stays at least). Layers whose output reaches anything else (a graph output, a residual Add,
a Flatten into a Gemm, a Concat) keep their channels; node.record.pruned says why.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Value
from ..ir.records import PruneNote
from .rewrite import replace_value

# ops that act on each channel alone and give 0 for 0: a removed channel stays removed
_PER_CHANNEL = ("Relu", "LeakyRelu", "Identity", "Dropout", "MaxPool")
_LAYERS = ("Conv", "Gemm", "MatMul")


def _channel_axis(node: Node) -> int:
    return 1 if node.op == "Conv" else node.output.type.rank - 1


def _producer_ok(node: Node) -> bool:
    w = node.inputs[1] if len(node.inputs) > 1 else None
    if node.op not in _LAYERS or w is None or not w.is_const:
        return False
    if node.op == "Conv":
        return node.attrs["group"] == 1
    if node.op == "Gemm":
        c = node.input(2)
        return c is None or (c.is_const and c.type.rank == 1)  # a bias per neuron, or none
    return w.type.rank == 2


def _readers(graph: Graph, node: Node) -> tuple[list[Node], list[Node]] | str:
    """(the per-channel ops between `node` and its readers, the reading layers), or why the
    channels of `node` cannot be removed."""
    chain, readers, todo = [], [], [node.output]
    while todo:
        v = todo.pop()
        if v in graph.outputs:
            return f"{v.name} is a graph output"
        for u in v.users():
            if u.op in _PER_CHANNEL and u.inputs[0] is v and \
                    not any(o.users() or o in graph.outputs for o in u.outputs[1:]) and \
                    (u.op != "MaxPool" or node.op == "Conv"):
                chain.append(u)  # (a MaxPool's unused indices may come along)
                todo.append(u.outputs[0])
            elif u.op in _LAYERS and u.inputs[0] is v and u.inputs[1].is_const and \
                    not any(x is v for x in u.inputs[1:]) and \
                    (u.op != "Conv" or u.attrs["group"] == 1) and \
                    (u.op == "Conv") == (node.op == "Conv") and \
                    (u.op != "Gemm" or not u.attrs.get("transA")):
                readers.append(u)
            else:
                return f"{v.name} is read by {u.op} {u.name}"
    return (chain, readers) if readers else "no layer reads it"


def _out_major(node: Node) -> np.ndarray:
    w = node.inputs[1].const
    if node.op == "Conv":
        return w.reshape(w.shape[0], -1)
    return w if node.op == "Gemm" and node.attrs.get("transB") else w.T


def _take(node: Node, keep: np.ndarray, as_output: bool) -> np.ndarray:
    """`node`'s weight with only the kept output channels (`as_output`) or input features."""
    w = node.inputs[1].const
    if node.op == "Conv":
        return w[keep] if as_output else w[:, keep]
    out_first = node.op == "Gemm" and node.attrs.get("transB")
    axis = (0 if out_first else 1) if as_output else (1 if out_first else 0)
    return np.take(w, keep, axis=axis)


def prune_channels(graph: Graph, sparsity: float, skip: set[str]) -> bool:
    """Remove `sparsity` of the channels of every layer whose readers can be rewired."""
    changed = False
    for name in [n.name for n in graph.nodes]:
        # (a layer rewired as the reader of an earlier one is a new node by the same name)
        node = next((n for n in graph.nodes if n.name == name), None)
        if node is None or name in skip or not _producer_ok(node):
            continue
        found = _readers(graph, node)
        if isinstance(found, str):
            node.record.pruned = PruneNote("channel", kept=f"all channels: {found}")
            continue
        chain, readers = found
        wo = _out_major(node)
        bias = node.input(2)
        score = (wo.astype(np.float64) ** 2).sum(axis=1)
        if bias is not None:
            score = score + bias.const.astype(np.float64) ** 2
        m = wo.shape[0]
        cut = min(int(round(sparsity * m)), m - 1)
        if cut <= 0:
            continue
        keep = np.sort(np.argsort(-score, kind="stable")[:m - cut])
        new = _rewire(graph, node, chain, readers, keep)
        new.record.pruned = PruneNote("channel", channels=(m, int(keep.size)))
        changed = True
    return changed


def _rebuild(graph: Graph, node: Node, inputs: list[Value | None]) -> Node:
    """`node` made again from `inputs` (its types inferred anew), in its place."""
    while inputs and inputs[-1] is None:
        inputs.pop()
    new = graph.add_node(node.op, inputs, dict(node.attrs), name=node.name, before=node,
                         num_outputs=len(node.outputs))
    new.inherit(node)
    for old, v in zip(node.outputs, new.outputs):
        replace_value(graph, old, v)
    graph.remove_node(node)
    return new


def _rewire(graph: Graph, node: Node, chain: list[Node], readers: list[Node],
            keep: np.ndarray) -> Node:
    """Rebuild the producer with the kept channels, then the ops between (each reads the
    rebuilt value already: replace_value moved its readers), then the readers with the kept
    input features; returns the new producer."""
    w = node.inputs[1]
    ins = [node.inputs[0], graph.const(_take(node, keep, True), f"{w.name}_channels"),
           *node.inputs[2:]]
    if node.input(2) is not None:
        b = node.inputs[2]
        ins[2] = graph.const(b.const[keep], f"{b.name}_channels")
    new = _rebuild(graph, node, ins)
    for u in chain:  # in discovery order: each after the op it reads
        _rebuild(graph, u, list(u.inputs))
    for r in readers:
        rw = r.inputs[1]
        _rebuild(graph, r, [r.inputs[0], graph.const(_take(r, keep, False), f"{rw.name}_inputs"),
                            *r.inputs[2:]])
    return new
