"""The CPU families' costs (targets/uarch.py) in sparsify's choice, and measured choices
overriding the model's (`sparsify{timings=FILE}`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edgec.errors import EdgecError, PassError
from edgec.ir import DType, Graph, TensorType
from edgec.ir.records import KernelTimes
from edgec.passes import run_pipeline
from edgec.passes.sparsify import matmul_plan, tuning_key
from edgec.targets.target import get_target
from edgec.targets.uarch import MICROARCHS, REFERENCE, identify, microarch


def gemv(zeros: float, k: int = 512, n: int = 512, seed: int = 0) -> Graph:
    """y = x @ B for one row x [1, k], B with `zeros` of its entries zero."""
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((k, n)).astype(np.float32)
    b[rng.random(b.shape) < zeros] = 0
    g = Graph("gemv")
    x = g.add_input("x", TensorType((1, k), DType.F32))
    g.outputs = [g.add_node("MatMul", [x, g.const(b, "B")], name="mm").output]
    return g


def ops_after(g: Graph, sparsify: str) -> list[str]:
    run_pipeline(g, sparsify)
    return [n.op for n in g.nodes]


@pytest.mark.parametrize("vendor,family,model,name", [
    ("AuthenticAMD", 23, 1, "zen1"), ("AuthenticAMD", 23, 0x18, "zen1"),
    ("AuthenticAMD", 23, 0x31, "unknown"),  # Zen 2: not measured
    ("AuthenticAMD", 25, 0x01, "zen3"), ("AuthenticAMD", 25, 0x21, "zen3"),
    ("AuthenticAMD", 25, 0x50, "zen3"),
    ("AuthenticAMD", 25, 17, "zen4"), ("AuthenticAMD", 25, 0x61, "zen4"),
    ("AuthenticAMD", 26, 2, "zen5"), ("AuthenticAMD", 26, 0x44, "zen5"),
    ("GenuineIntel", 6, 207, "emerald-rapids"), ("GenuineIntel", 6, 143, "emerald-rapids"),
    ("GenuineIntel", 6, 85, "unknown"),  # Skylake-SP / Cascade Lake
])
def test_cpu_families_from_cpuinfo(vendor, family, model, name):
    assert identify(vendor, family, model) == name


def test_a_gathering_product_is_chosen_by_the_cpu_family():
    """[1, 512] x [512, 512] at 70% zeros: 16-lane slices store 0.33-0.35 of B's entries
    (slices pad to their longest row). On the Xeon the gathers cost 0.34 / 0.032 = 10.6
    per entry against 1 / 0.076 = 13.2 dense: sparse. On Zen 4 the dense product streams
    at 0.29 of the peak: 1 / 0.29 = 3.4 against 10.6: dense."""
    g = gemv(0.7)
    plan = matmul_plan(g.nodes[0], 16, "emerald-rapids")
    slots = plan.block_density
    assert 0.3 < slots < 0.4
    assert plan.sparse_cost == pytest.approx(slots * 512 * 512 / 0.032, rel=1e-3)
    assert plan.dense_cost == pytest.approx(512 * 512 / 0.076)
    assert "SparseMatMul" in ops_after(gemv(0.7), "sparsify{lanes=16,uarch=emerald-rapids}")
    assert ops_after(gemv(0.7), "sparsify{lanes=16,uarch=zen4}") == ["MatMul"]
    # at 97% zeros the gathers win on Zen 4 too (0.03 x 31 = 0.9 < 3.4)
    assert "SparseMatMul" in ops_after(gemv(0.97), "sparsify{lanes=16,uarch=zen4}")


def test_close_estimates_are_marked_and_measured_answers_win(tmp_path):
    g = gemv(0.7)
    node = g.nodes[0]
    key = tuning_key(node, 16, "zen4")
    plan = matmul_plan(node, 16, "zen4")
    assert plan.dense_cost < plan.sparse_cost  # the model: dense, by about 3x
    run_pipeline(g, "sparsify{lanes=16,uarch=zen4}")
    assert not g.nodes[0].record.sparse.close  # 3x apart: the model can tell
    # a CPU without figures: every estimate is a tie, to be timed
    g = gemv(0.7)
    run_pipeline(g, "sparsify{lanes=16,uarch=unknown}")
    p = g.nodes[0].record.sparse
    assert p.close and p.key == tuning_key(gemv(0.7).nodes[0], 16, "unknown")
    # a measured answer overrides the model's, for that layer only
    timings = tmp_path / "t.json"
    timings.write_text(json.dumps({key: {"sparse": 5.0, "dense": 9.0}}))
    g = gemv(0.7)
    assert "SparseMatMul" in ops_after(g, f'sparsify{{lanes=16,uarch=zen4,timings="{timings}"}}')
    assert next(n for n in g.nodes if n.op == "SparseMatMul").record.sparse.measured_us \
        == KernelTimes(sparse=5.0, dense=9.0)
    other = gemv(0.7, seed=1)  # other weights: another key, the model's choice
    assert ops_after(other, f'sparsify{{lanes=16,uarch=zen4,timings="{timings}"}}') == \
        ["MatMul"]


def test_bad_families_and_timings_are_named(tmp_path):
    with pytest.raises(PassError, match="unknown CPU family 'zen9'.*zen4"):
        run_pipeline(gemv(0.7), "sparsify{lanes=16,uarch=zen9}")
    with pytest.raises(EdgecError, match="unknown CPU family 'zen9' \\(--cpu\\)"):
        get_target("x86-avx2", "zen9")
    bad = tmp_path / "t.json"
    bad.write_text("{not json")
    with pytest.raises(PassError, match="cannot read the timings in .*t.json"):
        run_pipeline(gemv(0.7), f'sparsify{{lanes=16,timings="{bad}"}}')
    assert get_target("arm64", "zen1").uarch == "zen1"


def test_every_family_says_where_its_figures_come_from():
    assert microarch("") is REFERENCE
    for m in MICROARCHS.values():
        assert m.source and 0 < m.gemv_share < 1 and all(0 < r < 1 for r in
                                                           m.gather_share.values())


def pruned_mlp(zeros: float):
    """bench_sparse.py's MLP (the zoo's 784-512-256-10) pruned by magnitude, unstructured."""
    from onnx import numpy_helper

    from edgec import zoo
    from edgec.passes.prune import prune_weight

    m = zoo.MODELS["mlp"]()
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim == 2:
            w = prune_weight(w, zeros, "unstructured").astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(w, init.name))
    return m


@pytest.mark.parametrize("cpu,lanes,zeros,kernels", [
    # measured (targets/uarch.py's sources): the gathering build 1.44x and 3.09x faster than
    # the dense one on the Xeon; 0.38x and 0.77x on Zen 4 (AVX-512), 0.39x and 1.10x with
    # AVX2 there; 0.78x at 90% on Zen 1; on Zen 3 the 784x512 product's gathers 0.38x the
    # dense one at 70%
    ("emerald-rapids", 16, 0.7, ["SparseMatMul", "SparseMatMul", "FusedMatMul"]),
    ("emerald-rapids", 16, 0.9, ["SparseMatMul"] * 3),
    ("zen4", 16, 0.7, ["FusedMatMul"] * 3),
    ("zen4", 16, 0.9, ["FusedMatMul"] * 3),
    ("zen4", 8, 0.7, ["FusedMatMul"] * 3),
    ("zen4", 8, 0.9, ["SparseMatMul", "SparseMatMul", "FusedMatMul"]),
    ("zen1", 8, 0.9, ["FusedMatMul"] * 3),
    # Zen 3 (timed there, each product alone): gathers 2.6x slower at 70%, level at 90%
    ("zen3", 8, 0.7, ["FusedMatMul"] * 3),
    # Zen 5 (timed there, each product alone): gathers 2.7-3.6x slower at 70%, AVX-512 and
    # AVX2; at 90% level (784x512) or slower (512x256): dense
    ("zen5", 16, 0.7, ["FusedMatMul"] * 3),
    ("zen5", 8, 0.7, ["FusedMatMul"] * 3),
    ("zen5", 16, 0.9, ["FusedMatMul"] * 3),
])
def test_the_benchmark_mlp_takes_the_faster_kernels_of_each_family(cpu, lanes, zeros, kernels):
    from edgec.frontends.onnx import import_onnx

    g = import_onnx(pruned_mlp(zeros))
    run_pipeline(g, f"fold-constants,remove-identity,dce,fuse,dce,"
                    f"sparsify{{lanes={lanes},uarch={cpu}}}")
    assert [n.op for n in g.nodes if "MatMul" in n.op] == kernels


def conv3x3(zeros: float, c: int = 256, hw: int = 14, seed: int = 0) -> Graph:
    """y = conv(x, W) 3x3, pads 1, c -> c channels at hw x hw, W with `zeros` of it zero."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((c, c, 3, 3)).astype(np.float32)
    w[rng.random(w.shape) < zeros] = 0
    g = Graph("conv")
    x = g.add_input("x", TensorType((1, c, hw, hw), DType.F32))
    g.outputs = [g.add_node("Conv", [x, g.const(w, "W")], {
        "pads": [1, 1, 1, 1], "strides": [1, 1], "dilations": [1, 1], "group": 1},
        name="conv").output]
    return g


def test_a_sparse_convolution_is_chosen_by_the_cpu_familys_tile_rates():
    """Zen 5's AVX-512 tile runs csr blocks at 0.26 of the FMA peak where SPARSE_RATE has
    0.35 (measured per layer of the pruned ResNet-18: a 256-channel 3x3 layer at 14 x 14
    and 70% zeros ran 1.00-1.03x the dense one's time there, where the reference rates
    model 0.78x): the tile's term of the estimate grows by 0.35 / 0.26, the staging copies'
    stay, and the layer stays dense on Zen 5 with AVX-512, sparse with AVX2 and on Zen 4."""
    from edgec.passes.sparsify import COPY_COST, conv_rates, sparse_plan

    node = conv3x3(0.7).nodes[0]
    ref, z5 = (sparse_plan(node, rates=conv_rates(u, 16)) for u in ("zen4", "zen5"))
    assert (ref.blocks.rows, ref.blocks.cols) == (z5.blocks.rows, z5.blocks.cols) == (1, 1)
    copies = COPY_COST * (256 * 14 * 14 + 256 * 14 * 16)  # the input staged, rows of 16
    assert (z5.sparse_cost - copies) * 0.26 == pytest.approx((ref.sparse_cost - copies) * 0.35)
    assert z5.dense_cost == ref.dense_cost
    assert ref.runs_sparse and not z5.runs_sparse
    assert conv_rates("zen5", 8) == conv_rates("zen4", 16)  # AVX2 on Zen 5: the reference's
    for u, lanes, sparse in (("zen4", 16, True), ("zen5", 16, False), ("zen5", 8, True)):
        ops = ops_after(conv3x3(0.7), f"sparsify{{lanes={lanes},uarch={u}}}")
        assert ("SparseConv" in ops) == sparse, (u, lanes, ops)


def pruned_zoo(name: str, zeros: float, pattern: str):
    """A zoo model with its convolutions' weights (group 1) pruned by magnitude, as
    bench_sparse.py prunes them: the graph sparsify sees, before it."""
    from onnx import numpy_helper

    from edgec import zoo
    from edgec.frontends.onnx import import_onnx
    from edgec.passes.prune import prune_weight

    m = zoo.MODELS[name]()
    weights = {n.input[1] for n in m.graph.node if n.op_type == "Conv" and
               next((a.i for a in n.attribute if a.name == "group"), 1) == 1}
    for init in m.graph.initializer:
        if init.name in weights:
            w = numpy_helper.to_array(init)
            taps = int(np.prod(w.shape[2:]))
            w = prune_weight(w.reshape(w.shape[0], -1), zeros, pattern, taps).reshape(w.shape)
            init.CopyFrom(numpy_helper.from_array(w.astype(np.float32), init.name))
    g = import_onnx(m)
    run_pipeline(g, "fold-constants,remove-identity,dce,fold-batchnorm,fold-constants,fuse,dce")
    return g


@pytest.mark.parametrize("name,zeros,pattern,cpu,lanes,sparse", [
    # measured (BENCHMARKS.md, Zen 5): ResNet-18 at 70% unstructured with all 20 layers
    # sparse 0.97x the dense build, with 13 1.05x; 1.49x all sparse on Zen 4
    ("resnet18", 0.7, "unstructured", "zen5", 16, 13),
    ("resnet18", 0.7, "unstructured", "zen4", 16, 20),
    ("resnet18", 0.7, "unstructured", "zen5", 8, 20),
    # MobileNetV2: its 35 1x1 layers sparse 0.74x (unstructured) and 0.95x (4x1) on Zen 5;
    # with the layout conversions beside its depthwise layers counted 0.99x and 1.20x
    ("mobilenet_v2", 0.7, "unstructured", "zen5", 16, 1),
    ("mobilenet_v2", 0.7, "4x1", "zen5", 16, 22),
])
def test_the_benchmark_convnets_take_the_faster_kernels_of_each_family(name, zeros, pattern,
                                                                       cpu, lanes, sparse):
    g = pruned_zoo(name, zeros, pattern)
    run_pipeline(g, f"sparsify{{lanes={lanes},uarch={cpu}}}")
    assert sum(n.op == "SparseConv" for n in g.nodes) == sparse
