"""What passes leave on a node for later stages arrives typed on the nodes a pipeline ends with
(node.record): sparsify's plan through the nodes that replace the layer (its sparse kernel, or
the blocked one layout-nchwc makes of a layer that stays dense), reorder's figures, and the
nodes a fused kernel does the work of."""

from __future__ import annotations

import numpy as np
from test_every_pass import GOLDEN

from edgec.ir import DType, Graph, TensorType, parse
from edgec.ir.records import BlockPlan, ReorderRecord, SparsePlan
from edgec.passes import run_pipeline

CONV = {"dilations": [1, 1], "pads": [1, 1, 1, 1], "strides": [1, 1]}


def with_nonzeros(shape: tuple[int, ...], kept: int, seed: int) -> np.ndarray:
    """Weights of `shape` of which exactly `kept` are not zero."""
    rng = np.random.default_rng(seed)
    w = np.zeros(int(np.prod(shape)), np.float32)
    w[rng.permutation(w.size)[:kept]] = rng.uniform(0.5, 1.5, kept)
    return w.reshape(shape)


def test_sparse_and_reorder_facts_arrive_typed_on_the_final_nodes():
    """x [1, 8, 6, 6] -> Conv sc (16 x 8 x 3 x 3, 115 of 1152 weights kept: sparse) -> Conv dc
    (16 x 16 x 3 x 3, all but 2 of 2304 kept: dense) -> [1, 576] -> MatMul mm (576 x 32, 1000
    of 18432 kept: sparse, gathered)."""
    g = Graph("records")
    x = g.add_input("x", TensorType((1, 8, 6, 6), DType.F32))
    w_sc = with_nonzeros((16, 8, 3, 3), 115, 0)
    w_dc = with_nonzeros((16, 16, 3, 3), 2302, 1)
    b_mm = with_nonzeros((576, 32), 1000, 2)
    y = g.add_node("Conv", [x, g.const(w_sc, "w_sc")], CONV, name="sc").output
    y = g.add_node("Conv", [y, g.const(w_dc, "w_dc")], CONV, name="dc").output
    y = g.add_node("Reshape", [y, g.const(np.array([1, 576], np.int64), "rows")]).output
    g.outputs = [g.add_node("MatMul", [y, g.const(b_mm, "b_mm")], name="mm").output]
    run_pipeline(g, "sparsify{lanes=8},reorder{lanes=8},layout-nchwc{block=8}")
    nodes = {n.name: n for n in g.nodes}
    assert (nodes["sc"].op, nodes["dc_nchwc"].op, nodes["mm"].op) == \
        ("SparseConv", "BlockedConv", "SparseMatMul")
    sc, dc, mm = (nodes[k].record.sparse for k in ("sc", "dc_nchwc", "mm"))
    assert all(isinstance(p, SparsePlan) for p in (sc, dc, mm))
    assert (sc.layer, dc.layer, mm.layer) == ("sc", "dc", "mm")
    assert sc.density == round(115 / 1152, 4) and dc.density == round(2302 / 2304, 4)
    assert mm.density == round(1000 / 18432, 4)
    assert sc.runs_sparse and not dc.runs_sparse and mm.runs_sparse
    assert isinstance(sc.blocks, BlockPlan) and mm.blocks is None  # one row: gathered
    ro = nodes["sc"].record.reorder, nodes["mm"].record.reorder
    assert all(isinstance(r, ReorderRecord) and r.threads == 2 for r in ro)
    assert ro[0].padding is None and ro[1].padding is not None  # slices pad, blocks do not
    assert nodes["dc_nchwc"].record.reorder is None


def test_the_fused_nodes_arrive_typed():
    g = parse(GOLDEN["fuse-residual"][1])
    run_pipeline(g, "fuse-residual,dce")
    (conv,) = [n for n in g.nodes if n.op == "BlockedQLinearConv"]
    assert conv.record.fused == ("y", "z")
