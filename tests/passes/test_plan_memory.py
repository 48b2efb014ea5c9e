"""plan-memory: arena offsets for activations, checked against liveness computed here."""

from __future__ import annotations

import numpy as np
import pytest
from nets import mobilenet_v2_like, resnet_like

from edgec.ir import DType, Graph, TensorType, get_op, parse
from edgec.passes import DEFAULT_PIPELINE, MemoryPlan, run_pipeline
from edgec.passes.plan_memory import plan


def check_plan(g: Graph, p: MemoryPlan) -> None:
    """The invariants, from an independent liveness analysis of `g`."""
    by_name = {v.name: v for v in g.values()}
    outputs = {v.name for v in g.outputs}
    root = {}
    for node in g.nodes:  # every alias is a view's output, resolved to its storage owner
        for k, v in enumerate(node.outputs):
            if v.name in p.aliases:
                assert k == 0 and "view" in get_op(node.op).traits and v.name not in outputs
                src = node.inputs[0].name
                assert p.aliases[v.name] == root.get(src, src)
                root[v.name] = p.aliases[v.name]
    produced = [v for n in g.nodes for v in n.outputs]
    planned = {v.name for v in produced if v.name not in outputs and v.name not in root}
    assert set(p.offsets) == planned
    first, last = {}, {}
    for i, node in enumerate(g.nodes):
        for v in node.inputs:
            if v is not None and root.get(v.name, v.name) in planned:
                last[root.get(v.name, v.name)] = i
        for v in node.outputs:
            if v.name in planned:
                first[v.name] = last.setdefault(v.name, i)
    size = {n: by_name[n].type.nbytes for n in planned}
    names = sorted(planned)
    for i, a in enumerate(names):
        assert p.offsets[a] % p.alignment == 0
        assert p.offsets[a] + size[a] <= p.arena_bytes
        for b in names[i + 1:]:
            live_together = first[a] <= last[b] and first[b] <= last[a]
            disjoint = (p.offsets[a] + size[a] <= p.offsets[b] or
                        p.offsets[b] + size[b] <= p.offsets[a])
            assert not live_together or disjoint or 0 in (size[a], size[b]), (a, b)
    bound = max([sum(size[n] for n in names if first[n] <= t <= last[n])
                 for t in range(len(g.nodes))], default=0)
    assert p.lower_bound_bytes == bound
    assert p.total_bytes == sum(size.values())
    assert p.arena_bytes >= bound


def test_views_alias_their_input_and_extend_its_life():
    g = parse("""
        graph @g(%x: f32[2,8]) {
          %shape = const i64[2] dense<[4, 4]>
          %a = Relu(%x) : f32[2,8]
          %v = Reshape(%a, %shape) : f32[4,4]
          %w = Flatten(%v) : f32[4,4]
          %b = Neg(%x) : f32[2,8]
          %c = Add(%a, %b) : f32[2,8]
          %d = Relu(%w) : f32[4,4]
          %xv = Reshape(%x, %shape) : f32[4,4]
          %e = Add(%d, %xv) : f32[4,4]
          %out = Identity(%e) : f32[4,4]
          return %c, %out
        }""")
    run_pipeline(g, "plan-memory")
    p = g.record.memory_plan
    # views of %a and of the input alias them; the Identity making a graph output does not
    assert p.aliases == {"v": "a", "w": "a", "xv": "x"}
    assert p.lifetimes == {"a": (0, 5), "b": (3, 4), "d": (5, 7), "e": (7, 8)}
    assert p.sizes == {"a": 64, "b": 64, "d": 64, "e": 64}
    # a lives with b and then with d; e reuses a's bytes once d is being read
    assert p.offsets["a"] != p.offsets["b"] == p.offsets["d"] != p.offsets["e"]
    assert (p.arena_bytes, p.lower_bound_bytes, p.total_bytes) == (128, 128, 256)
    check_plan(g, p)
    report = p.report().splitlines()
    assert report[0].startswith("memory plan: 4 activations in a 0.1 KiB arena (100.0% of")
    assert report[-3:] == ["  v      -> %a", "  w      -> %a", "  xv     -> %x"]


def test_unused_outputs_still_get_bytes_and_offsets_are_aligned():
    g = parse("""
        graph @g(%x: f32[3,5]) {
          %lo, %mid, %hi = Split(%x) {num_outputs = 3} : f32[1,5], f32[1,5], f32[1,5]
          %y = Relu(%mid) : f32[1,5]
          return %y
        }""")
    p = plan(g)
    assert sorted(p.offsets) == ["hi", "lo", "mid"] and p.lifetimes["lo"] == (0, 0)
    assert sorted(p.offsets.values()) == [0, 64, 128] and p.arena_bytes == 192
    check_plan(g, p)
    assert plan(g, alignment=16).arena_bytes == 96  # 20-byte values at 0, 32, 64


@pytest.mark.parametrize("build", [resnet_like, mobilenet_v2_like])
@pytest.mark.parametrize("pipeline", ["plan-memory", DEFAULT_PIPELINE])
def test_plans_of_real_networks_keep_the_invariants(build, pipeline):
    g = build(seed=0)
    run_pipeline(g, pipeline)
    p = g.record.memory_plan
    check_plan(g, p)
    assert p.arena_bytes < p.total_bytes / 1.5  # reuse pays off


def test_resnet_like_chain_with_residuals_is_within_5_percent_of_the_bound():
    g = resnet_like(seed=0, width=16, size=32, blocks=6)
    run_pipeline(g, DEFAULT_PIPELINE)
    p = g.record.memory_plan
    check_plan(g, p)
    assert p.lower_bound_bytes <= p.arena_bytes <= 1.05 * p.lower_bound_bytes


def random_dag(seed: int, n: int = 40) -> Graph:
    """Random elementwise/matmul DAG with random widths and long skip connections."""
    rng = np.random.default_rng(seed)
    g = Graph(f"random{seed}")
    values = [g.add_input("x", TensorType((4, 16), DType.F32))]
    for _ in range(n):
        a = values[int(rng.integers(max(0, len(values) - 6), len(values)))]
        kind = rng.integers(0, 4)
        if kind == 0:
            w = g.const(rng.standard_normal((a.shape[1], int(rng.choice([4, 16, 48])))))
            values.append(g.add_node("MatMul", [a, w]).output)
        elif kind == 1:
            b = [v for v in values if v.shape == a.shape]
            values.append(g.add_node("Add", [a, b[int(rng.integers(len(b)))]]).output)
        elif kind == 2:
            shape = g.const(np.array([a.shape[1], a.shape[0]], np.int64))
            values.append(g.add_node("Reshape", [a, shape]).output)
        else:
            values.append(g.add_node("Relu", [a]).output)
    g.outputs = [values[-1], values[len(values) // 2]]
    return g


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_keep_the_invariants(seed):
    g = random_dag(seed)
    p = plan(g)
    check_plan(g, p)
    assert p.arena_bytes <= p.total_bytes
