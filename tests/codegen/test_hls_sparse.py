"""Sparse PEs on the HLS target (issue 34, point 5): a matrix product whose weights are mostly
zeros runs on PEs that each walk a table of their non-zeros, one a cycle, all in step; the
output channels are dealt to the PEs by the reorder pass's interleaved mode (PE p: stored
rows p, p + P, ...) so that their work is even; the C-simulation counts each PE's work
(EDGEC_CSIM_TRACE's .counts), and the busiest PE's count is the cycle model's."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from convnets import cpu_twin, samples

import edgec
from edgec import zoo
from edgec.compiler.driver import compile_graph, load_graph
from edgec.errors import EdgecError
from edgec.ir import interpret
from edgec.ir.sparse_pe import interleaved_pe_order, pe_loads
from edgec.passes import parse_pipeline, run_pipeline

PART = "xcu250-figd2104-2L-e"


def test_the_interleaved_order_deals_heaviest_first_to_the_least_loaded_pe():
    # worked by hand: 5 -> PE0, 4 -> PE1, 3 -> PE1 (4 < 5), 3 -> PE0 (5 < 7), 1 -> PE1
    # (7 < 8), 0 -> PE0 (8 = 8: the first; PE1 has its 3 rows); PE p's rows are p, p + 2, ...
    work = np.array([5, 4, 3, 3, 1, 0])
    order = interleaved_pe_order(work, 2)
    assert order.tolist() == [0, 1, 3, 2, 5, 4]
    assert pe_loads(work, order, 2).tolist() == [8, 8]
    # past the channels: -1 rows, no work
    assert interleaved_pe_order(np.array([2, 1, 1]), 2).tolist() == [0, 1, -1, 2]
    # the greedy deal of 5, 5, 4, 3, 3 on 2 PEs of 3 rows: {5, 4, -} 9 and {5, 3, 3} 11;
    # swapping the 5 and the 4 gives 10 and 10
    work = np.array([5, 5, 4, 3, 3])
    assert pe_loads(work, interleaved_pe_order(work, 2), 2).tolist() == [10, 10]


@pytest.fixture(scope="module")
def pruned_mlp(tmp_path_factory):
    """The zoo's MLP pruned to 90% and quantized to int8: its HLS design and x86 library."""
    folder = tmp_path_factory.mktemp("sparse")
    model = zoo.mlp()
    path = folder / "mlp.onnx"
    onnx.save(model, path)
    opts = {"quantize": "int8", "calib": samples(model, 8, 3), "prune": 0.9, "name": "mlp"}
    h = edgec.compile(path, folder / "hls", target="hls", fpga_part=PART, **opts)
    c = edgec.compile(path, folder / "x86", target=cpu_twin(), **opts)
    return model, h, c


def test_a_pruned_mlp_runs_on_balanced_sparse_pes_bit_for_bit(pruned_mlp, tmp_path,
                                                                monkeypatch):
    model, h, c = pruned_mlp
    kinds = [s["strategy"] for s in h.manifest["kernel_strategies"]]
    assert len(kinds) == 3 and all(k.startswith("sparse matrix-vector unit") for k in kinds)
    monkeypatch.setenv("EDGEC_CSIM_TRACE", str(tmp_path))
    x = {k: v[:1] for k, v in samples(model, 1, 4).items()}
    np.testing.assert_array_equal(edgec.load(h.out_dir).run(x)["output"],
                                  edgec.load(c.out_dir).run(x)["output"])
    layers = {x["process"]: x for x in h.manifest["hls"]["estimate"]["layers"]}
    kernels = [s["kernel"] for s in h.manifest["kernel_strategies"]]
    for proc, k in zip(h.manifest["hls"]["processes"], kernels, strict=True):
        counts = np.loadtxt(tmp_path / f"{k}_pe_work.counts", dtype=np.int64, ndmin=1)
        layer = layers[proc]
        assert counts.size == layer["pe"]
        # the busiest PE's work is the cycle model's (one row of A: batch 1)
        assert counts.max() == layer["compute_cycles"], proc
        assert counts.max() / counts.mean() <= 1.05, (proc, counts)


def test_the_reorder_pass_deals_the_channels_over_pes(tmp_path):
    """reorder{pes=4} on a QGemm of mostly zero weights whose non-zeros are in channels 0, 1,
    4 and 8 (three of them PE 0's, were the channels dealt in their order): its record has
    the interleaved order (a permutation of the channels) and the imbalance before and
    after; the HLS design at 4 PEs runs the recorded order and computes the interpreter's
    outputs."""
    g, node = sparse_qgemm(skewed=True)
    run_pipeline(g, parse_pipeline("reorder{pes=4}"))
    rec = node.record.reorder
    assert rec.threads == 4 and sorted(rec.pe_order) == [-1, -1, *range(10)]
    before, after = rec.imbalance
    assert before > 2.5 and after <= 1.05, rec.imbalance  # (one dense channel a PE)
    art = compile_graph(g, tmp_path / "r", target="hls", fpga_part=PART, name="r",
                        strategy={node.name: "hls-sparse-mvau{pe=4}"})
    assert f"max / mean {after:.3f}" in art.manifest["kernel_strategies"][-1]["strategy"]
    f = {"x": np.random.default_rng(1).integers(0, 256, (1, 24)).astype(np.uint8)}
    np.testing.assert_array_equal(edgec.load(art.out_dir).run(f)[node.output.name],
                                  interpret(g, f)[node.output.name])


def sparse_qgemm(skewed: bool = False):
    """x [1, 24] uint8 -> QGemm by 24 x 10 int8 weights, about 70% zeros but the last
    channel's (with `skewed`: the non-zeros only in the first 5 channels), a bias,
    per-channel scales."""
    from edgec.ir import Graph, TensorType
    from edgec.ir.dtypes import DType

    rng = np.random.default_rng(4)
    b = rng.integers(-127, 128, (24, 10)).astype(np.int8)
    b[rng.random(b.shape) < 0.7] = 0
    if skewed:  # (channels 0, 4 and 8: all PE 0's, dealt in their order)
        b[:] = 0
        b[:, [0, 1, 4, 8]] = rng.integers(1, 100, (24, 4))
    else:
        b[:, 9] = rng.integers(1, 100, 24)
    g = Graph("sp")
    x = g.add_input("x", TensorType((1, 24), DType.U8))
    c = lambda v, n, t: g.const(np.asarray(v, t), n)  # noqa: E731
    ins = [x, c(0.05, "sa", np.float32), c(3, "za", np.uint8), c(b, "b", np.int8),
           c(rng.uniform(0.002, 0.01, 10), "sb", np.float32), c(np.zeros(10), "zb", np.int8),
           c(rng.integers(-500, 500, 10), "c", np.int32), c(0.3, "sy", np.float32),
           c(7, "zy", np.uint8)]
    node = g.add_node("QGemm", ins)
    g.outputs = [node.output]
    return g, node


def test_a_given_fold_takes_the_interleaved_order_and_refuses_dense_weights(tmp_path):
    """`--strategy NODE=hls-sparse-mvau{pe=3}` on a QGemm of 24 x 10 weights, about 70% zero
    in each column but the last (none zero): 3 PEs, two stored rows past the 10 channels;
    bit for bit with the interpreter. A QGemm with dense weights refuses the sparse unit with
    its reason."""
    g, node = sparse_qgemm()
    art = compile_graph(g, tmp_path / "sp", target="hls", fpga_part=PART, name="sp",
                        strategy={node.name: "hls-sparse-mvau{pe=3}"})
    chosen = art.manifest["kernel_strategies"][-1]["strategy"]
    assert chosen.startswith("sparse matrix-vector unit, 3 PE"), chosen
    model = edgec.load(art.out_dir)
    for seed in range(3):
        f = {"x": np.random.default_rng(seed).integers(0, 256, (1, 24)).astype(np.uint8)}
        np.testing.assert_array_equal(model.run(f)[node.output.name],
                                      interpret(g, f)[node.output.name])
    dense = graph_with_dense_weights()
    with pytest.raises(EdgecError, match="weights under 50% zeros"):
        compile_graph(dense, tmp_path / "d", target="hls", fpga_part=PART, name="d",
                      strategy={dense.nodes[-1].name: "hls-sparse-mvau{pe=2}"})


def graph_with_dense_weights():
    from edgec.ir import Graph, TensorType
    from edgec.ir.dtypes import DType

    rng = np.random.default_rng(5)
    g = Graph("dn")
    x = g.add_input("x", TensorType((1, 8), DType.U8))
    c = lambda v, n, t: g.const(np.asarray(v, t), n)  # noqa: E731
    ins = [x, c(0.05, "sa", np.float32), c(3, "za", np.uint8),
           c(rng.integers(1, 100, (8, 4)), "b", np.int8), c(0.004, "sb", np.float32),
           c(0, "zb", np.int8), None, c(0.3, "sy", np.float32), c(7, "zy", np.uint8)]
    node = g.add_node("QGemm", ins)
    g.outputs = [node.output]
    return g


def _qconv(w: np.ndarray, stride: int, dil: int, pad: int, rng) -> tuple:
    """A graph of one QLinearConv of weights `w` on a 9 x 10 uint8 input, and its node."""
    from edgec.ir import Graph, TensorType
    from edgec.ir.dtypes import DType

    m, c = w.shape[:2]
    g = Graph("sc")
    x = g.add_input("x", TensorType((1, c, 9, 10), DType.U8))
    cst = lambda v, n, t: g.const(np.asarray(v, t), n)  # noqa: E731
    ins = [x, cst(0.05, "sx", np.float32), cst(7, "zx", np.uint8), cst(w, "w", np.int8),
           cst(rng.uniform(0.002, 0.01, m), "sw", np.float32), None,
           cst(0.2, "sy", np.float32), cst(rng.integers(0, 256), "zy", np.uint8),
           cst(rng.integers(-500, 500, m), "b", np.int32)]
    node = g.add_node("QLinearConv", ins, {"group": 1, "strides": [stride, stride],
                                           "pads": [pad] * 4, "dilations": [dil, dil]})
    g.outputs = [node.output]
    return g, node


@pytest.mark.parametrize("c,m,k,stride,dil,pad,pe,simd", [
    (5, 7, 3, 2, 2, 1, 3, 2), (8, 6, 3, 1, 1, 1, 4, 8), (3, 4, 1, 1, 1, 0, 4, 1)],
    ids=["padded-strided-dilated", "whole", "pointwise"])
def test_sparse_convolutions_equal_the_interpreter(c, m, k, stride, dil, pad, pe, simd,
                                                   tmp_path):
    """hls-sparse-conv: the window loaded SIMD channels a cycle from the HWC frame (zero in
    the padding), the PEs' entries index it; 60% of the weights zero and one channel all
    zero (its outputs the bias, requantized); bit for bit with the interpreter."""
    rng = np.random.default_rng(c * 10 + m)
    w = rng.integers(-127, 128, (m, c, k, k)).astype(np.int8)
    w[rng.random(w.shape) < 0.6] = 0
    w[1] = 0
    g, node = _qconv(w, stride, dil, pad, rng)
    art = compile_graph(g, tmp_path / "sc", target="hls", fpga_part=PART, name="sc",
                        strategy={node.name: f"hls-sparse-conv{{pe={pe},simd={simd}}}"})
    chosen = art.manifest["kernel_strategies"][-1]["strategy"]
    assert chosen.startswith(f"sparse convolution unit, {pe} PE x {simd} SIMD"), chosen
    model = edgec.load(art.out_dir)
    for seed in range(2):
        f = {"x": np.random.default_rng(seed).integers(0, 256, (1, c, 9, 10)).astype(np.uint8)}
        np.testing.assert_array_equal(model.run(f)[node.output.name],
                                      interpret(g, f)[node.output.name])


@pytest.mark.parametrize("heavy", [False, True], ids=["even-channels", "one-heavy-channel"])
def test_folding_keeps_sparse_pes_evenly_busy_or_takes_the_dense_unit(heavy, tmp_path):
    """8 output channels of 3 x 3 x 3 weights on 3 x 9 x 10 (90 pixels), folded to 66,000
    frames/s at 200 MHz: 3030 cycles. A unit's cycles: 270 reads + 720 writes + 270 to copy
    the frame + per pixel, sparse, the busiest PE's entries + 9 window loads, dense,
    216 MACs / (PE x SIMD). 4 non-zeros a channel: the interleaved order evens 2 and 4 PEs
    out exactly; the sparse unit folds to 4 PEs (1 PE 4950, 2 PEs 3510, 4 PEs 2790), its
    busiest PE at the mean. One channel all 27 non-zero and the others 1 each (34): at 2 PEs
    or more the busiest PE has 27 or more against a mean of 17 or less (1.6x), so the sparse
    unit stays at 1 PE, 5130; the dense unit folds past that (2 PE x 3 SIMD 4500, 4 PE x 3
    SIMD 2880), and folding takes it. Either way, bit for bit with the interpreter."""
    import re

    rng = np.random.default_rng(5)
    w = np.zeros((8, 3, 3, 3), np.int8)
    flat = w.reshape(8, -1)
    for ch in range(8):
        flat[ch, rng.choice(27, 1 if heavy else 4, replace=False)] = rng.integers(1, 100)
    if heavy:
        flat[0] = rng.integers(1, 100, 27)
    g, node = _qconv(w, 1, 1, 1, rng)
    art = compile_graph(g, tmp_path / "f", target="hls", fpga_part=PART, name="f",
                        target_fps=66000)
    chosen = art.manifest["kernel_strategies"][-1]["strategy"]
    if heavy:
        assert chosen.startswith("convolution as a matrix-vector unit, 4 PE x 3 SIMD"), chosen
    else:
        pe, spread = re.search(r"sparse convolution unit, (\d+) PE.*max / mean ([\d.]+)",
                               chosen).groups()
        assert (int(pe), float(spread)) == (4, 1.0), chosen
    model = edgec.load(art.out_dir)
    f = {"x": rng.integers(0, 256, (1, 3, 9, 10)).astype(np.uint8)}
    np.testing.assert_array_equal(model.run(f)[node.output.name],
                                  interpret(g, f)[node.output.name])


def test_a_pruned_resnet_runs_on_sparse_pes_bit_for_bit_and_counts_its_work(tmp_path,
                                                                           monkeypatch):
    """ResNet-18's topology at width 8 on 32 x 32, pruned to 80% (unstructured) and
    quantized: every convolution and the classifier on sparse PEs; bit for bit with the x86
    build; in the C-simulation each unit's PEs ran, for each output pixel, exactly the
    entries its weights give (a non-zero each, one for a channel of none), and the busiest
    PE's count is the strategy's cycles a pixel (a row) times the pixels."""
    import re

    model = zoo.resnet18(width=8, size=32, classes=10)
    path = tmp_path / "r.onnx"
    onnx.save(model, path)
    opts = {"quantize": "int8", "calib": samples(model, 4, 3), "prune": 0.8,
            "prune_pattern": "unstructured", "name": "r"}
    graph = load_graph(str(path))
    h = compile_graph(graph, tmp_path / "hls", target="hls", fpga_part=PART, **opts)
    c = edgec.compile(path, tmp_path / "x86", target=cpu_twin(), **opts)
    monkeypatch.setenv("EDGEC_CSIM_TRACE", str(tmp_path))
    x = {k: v[:1] for k, v in samples(model, 1, 4).items()}
    np.testing.assert_array_equal(edgec.load(h.out_dir).run(x)["output"],
                                  edgec.load(c.out_dir).run(x)["output"])
    units = [s for s in h.manifest["kernel_strategies"] if s["op"] in ("QLinearConv", "QGemm")]
    # (the stem, 8 channels, cannot keep its PEs evenly busy: the dense unit folds past it)
    units = [s for s in units if s["strategy"].startswith("sparse")]
    assert len(units) >= 20
    nodes = {n.name: n for n in graph.nodes}
    for s in units:
        node = nodes[s["node"]]
        w = node.inputs[3].const
        rows = w.reshape(w.shape[0], -1) if node.op == "QLinearConv" else \
            (w if node.attrs.get("transB") else w.T)
        entries = np.maximum(np.count_nonzero(rows, axis=1), 1).sum()  # per pixel (row)
        pixels = node.output.type.numel // rows.shape[0]
        counts = np.loadtxt(tmp_path / f"{s['kernel']}_pe_work.counts", ndmin=1)
        assert counts.sum() == pixels * entries, s["node"]
        per = int(re.search(r"(\d+) cycles a (pixel|row)", s["strategy"]).group(1))
        assert counts.max() == pixels * per, s["node"]
