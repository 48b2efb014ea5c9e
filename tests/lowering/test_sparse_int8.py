"""Sparse int8 convolution: an int8 model whose weights are mostly zero in the int8 tile's
dot4 groups (L output channels x 4 input channels at one tap) runs on the sparse dot4-group
tile, bit for bit what the dense tile computes on the same weights (the dense tile is checked
against onnxruntime in test_int8.py); x86 AVX-512 and AVX2, the LLVM backend, arm64 under
qemu, 1 and 2 threads. The pruned int8 ResNet-18 of the benchmark stays on the sparse tile.
The int8 GEMM likewise ("gemm lL vV sparse": each vector of L columns over its stored
k-groups), and the pruned int8 MLP of the benchmark stays on it.
"""

from __future__ import annotations

import io
import re

import numpy as np
import onnx
import pytest
from convnets import OnnxNet, random_feeds
from harness import runs_here
from onnx import numpy_helper

import edgec
from edgec import zoo
from edgec.compiler.driver import load_graph
from edgec.errors import EdgecError
from edgec.ir import DType
from edgec.ir.encodings import (
    GemmWeights,
    QConvWeights,
    gemm_encoding,
    gemm_groups,
    qconv_encoding,
    qconv_group_share,
)
from edgec.passes import default_pipeline, run_pipeline
from edgec.passes.prune import prune_weight
from edgec.targets.target import get_target


def prune_groups_of(model, sparsity: float, pattern: str):
    for init in model.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim == 4:
            taps = w.shape[2] * w.shape[3]
            w = prune_weight(w.reshape(w.shape[0], -1), sparsity, pattern, taps).reshape(w.shape)
            init.CopyFrom(numpy_helper.from_array(w.astype(np.float32), init.name))
    return model


def net():
    """20 input channels (two blocks of 16, the second partly padding), 3x3 stride 1 and 2,
    a 1x1 stride-2 shortcut with a residual add, 48 outputs (three blocks)."""
    n = OnnxNet("q", seed=3)
    x = n.input("input", [1, 20, 13, 11])
    a = n.node("Relu", [n.conv(x, 20, 32, 3)])
    b = n.conv(a, 32, 32, 3, stride=2)
    c = n.node("Relu", [n.node("Add", [b, n.conv(a, 32, 32, 1, stride=2,
                                                 pads=[0, 0, 0, 0])])])
    n.output(n.conv(c, 32, 48, 3))
    return n.model()


def dense_pipeline(target) -> str:
    t = get_target(target)
    pl = default_pipeline(t.lanes(DType.F32), t.registers)
    return re.sub(r"pack-weights\{([^}]*)\}", r"pack-weights{\1,sparse=0}", pl)


@pytest.mark.parametrize("target,backend", [("x86-avx512", "c"), ("x86-avx2", "c"),
                                            ("x86", "llvm"), ("arm64", "c")])
def test_sparse_groups_compute_what_the_dense_tile_does(target, backend, tmp_path):
    lanes = get_target(target).lanes(DType.I32)
    arts = sparse_and_dense(prune_groups_of(net(), 0.8, f"{lanes}x4"), target, backend,
                            tmp_path)
    convs = [[k["strategy"] for k in a.manifest["kernel_strategies"]
              if k["op"] == "BlockedQLinearConv"] for a in arts]
    assert len(convs[0]) == 4 and all(s.startswith("sparse int8 conv dot4 groups") for s in
                                      convs[0]), convs[0]
    assert all(s.startswith("blocked int8 conv dot4") for s in convs[1]), convs[1]


def sparse_and_dense(m, target: str, backend: str, tmp_path):
    """The float model `m` QDQ-quantized and compiled with the kernels' choice and with the
    dense tiles only; where the target runs here, both builds' outputs are checked equal bit
    for bit at 1 and 2 threads. Returns the two artifacts."""
    qm = onnx.load(zoo.quantize_qdq(m, tmp_path))
    arts = [edgec.compile(qm, tmp_path / k, target=target, name="q", backend=backend,
                          pipeline=p, log=io.StringIO())
            for k, p in (("sparse", None), ("dense", dense_pipeline(target)))]
    if runs_here(target):
        feeds = random_feeds(m)
        want = edgec.load(arts[1].out_dir).run(feeds)
        lib = edgec.load(arts[0].out_dir)
        for t in (1, 2):
            lib.set_num_threads(t)
            got = lib.run(feeds)
            for k in want:
                np.testing.assert_array_equal(got[k], want[k])
    return arts


def test_dense_groups_stay_on_the_dense_tile(tmp_path):
    # 16x1 blocks at 30%: nearly every group of 4 input channels keeps a weight
    m = prune_groups_of(net(), 0.3, "16x1")
    qm = onnx.load(zoo.quantize_qdq(m, tmp_path))
    art = edgec.compile(qm, tmp_path / "out", target="x86-avx512", name="q", log=io.StringIO())
    convs = [k["strategy"] for k in art.manifest["kernel_strategies"]
             if k["op"] == "BlockedQLinearConv"]
    assert convs and all(s.startswith("blocked int8 conv dot4") for s in convs), convs


def test_pruned_int8_resnet18_stays_on_the_sparse_tile(tmp_path):
    # the int8 sparse benchmark model (bench_sparse.py --int8 --patterns 16x4): all 20
    # convolutions of the 90%-pruned, QDQ-quantized ResNet-18 run the sparse tile
    qm = onnx.load(zoo.quantize_qdq(prune_groups_of(zoo.resnet18(), 0.9, "16x4"), tmp_path,
                                    samples=1))
    art = edgec.compile(qm, tmp_path / "out", target="x86-avx512", name="r18",
                        log=io.StringIO())
    convs = [k["strategy"] for k in art.manifest["kernel_strategies"]
             if k["op"] == "BlockedQLinearConv"]
    assert len(convs) == 20 and all(s.startswith("sparse int8 conv dot4 groups, density 0.1")
                                    for s in convs), convs


def mlp_net(lanes: int, sparsity: float = 0.8):
    """A Gemm (transB) 50 -> 40 and a MatMul 40 -> 23, batch 3: K % 4 = 2 (a tail group),
    columns that fill no whole panel; weights pruned in groups of `lanes` outputs x 4
    inputs (the int8 GEMM's dot4 groups)."""
    n = OnnxNet("qmlp", seed=4)
    x = n.input("input", [3, 50])
    h = n.node("Relu", [n.node("Gemm", [x, n.weight((40, 50)), n.weight((40,), 0.1)],
                               transB=1)])
    n.output(n.node("MatMul", [h, n.weight((40, 23))]))
    m = n.model()
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim == 2:
            out_major = w if w.shape == (40, 50) else w.T
            p = prune_weight(out_major, sparsity, f"{lanes}x4")
            init.CopyFrom(numpy_helper.from_array(
                (p if w.shape == (40, 50) else p.T).astype(np.float32), init.name))
    return m


def test_gemm_groups_and_encoding():
    # B [K=9, N=5] at 2 lanes, 2 vectors a panel: panels of 4 columns, 2 whole k-groups
    b = np.zeros((9, 5), np.int8)
    b[1, 0] = 3  # group 0 of vector 0 (columns 0-1)
    b[6, 3] = -2  # group 1 of vector 1 (columns 2-3)
    b[8, 4] = 1  # the tail row: not a group
    got = gemm_groups(b, 2, 2)
    assert got.tolist() == [[True, False], [False, True], [False, False], [False, False]]
    enc = GemmWeights(16, 4, sparse=True)
    assert str(enc) == "gemm l16 v4 sparse" and GemmWeights.parse(str(enc)) == enc
    with pytest.raises(EdgecError, match="not 'gemm"):
        GemmWeights.parse("gemm l16 v4 nib sparse")
    # half the real groups stored: sparse; more: dense; int4 weights stay two to a byte
    b = np.ones((64, 32), np.int8) * 9
    b[:32, :] = 0
    assert gemm_encoding(16, b).sparse and not gemm_encoding(16, b, 0).sparse
    b[:28, :16] = 9
    assert not gemm_encoding(16, b).sparse and gemm_encoding(16, b, 1).sparse
    assert gemm_encoding(16, np.ones((64, 32), np.int8)).nibbles


def test_conv_group_share_and_encoding(tmp_path):
    # wc [M=3, C=6, 1, 2] at 2 lanes: output blocks {0, 1}, {2, pad}; input groups {0-3},
    # {4, 5, pad}; 2 taps: 8 groups, of which 2 hold a weight
    wc = np.zeros((3, 6, 1, 2), np.int8)
    wc[1, 2, 0, 0] = 20  # block 0, group 0, tap 0
    wc[2, 5, 0, 1] = -20  # block 1, group 1, tap 1
    assert qconv_group_share(wc, 2) == 2 / 8
    enc = QConvWeights("dot4", 16, 16, 2, sparse=True)
    assert str(enc) == "dot4 l16 x16 m2 sparse" and QConvWeights.parse(str(enc)) == enc
    with pytest.raises(EdgecError, match="not one of"):
        QConvWeights.parse("dot4 l16 x16 m2 nib sparse")
    assert qconv_encoding(2, False, 8, 2, 5, wc, 32).sparse
    assert not qconv_encoding(2, False, 8, 2, 5, wc, 32, sparse=0).sparse
    wc[:, :, :, :] = 20
    assert not qconv_encoding(2, False, 8, 2, 5, wc, 32, sparse=1).sparse  # nothing to skip
    wc[0, 0, 0, 0] = 0
    assert qconv_encoding(2, False, 8, 2, 5, wc, 32).nibbles is False
    # in the graph: the pruned net's convolutions name the sparse tile in their encoding,
    # pack-weights{sparse=0} the dense one (same bytes), and the kernels follow it
    qm = onnx.load(zoo.quantize_qdq(prune_groups_of(net(), 0.8, "16x4"), tmp_path))
    for pipe, sparse in ((None, True), (dense_pipeline("x86-avx512"), False)):
        g = load_graph(qm)
        run_pipeline(g, pipe or default_pipeline(16, 32))
        encs = [QConvWeights.parse(n.attrs["wenc"]) for n in g.nodes
                if n.op == "BlockedQLinearConv"]
        assert len(encs) == 4 and all(e.sparse is sparse for e in encs), encs
    run_pipeline(g, "pack-weights{sparse=1,lanes=16,registers=32}")  # switched back
    assert all(QConvWeights.parse(n.attrs["wenc"]).sparse for n in g.nodes
               if n.op == "BlockedQLinearConv")


@pytest.mark.parametrize("target,backend", [("x86-avx512", "c"), ("x86-avx2", "c"),
                                            ("x86", "llvm"), ("arm64", "c")])
def test_sparse_int8_gemm_computes_what_the_dense_tile_does(target, backend, tmp_path):
    lanes = get_target(target).lanes(DType.I32)
    arts = sparse_and_dense(mlp_net(lanes), target, backend, tmp_path)
    gemms = [[k["strategy"] for k in a.manifest["kernel_strategies"]
              if "GEMM" in k["strategy"]] for a in arts]
    assert len(gemms[0]) == 2 and all("sparse dot4 groups" in s for s in gemms[0]), gemms[0]
    assert len(gemms[1]) == 2 and not any("sparse" in s for s in gemms[1]), gemms[1]


def test_pruned_int8_mlp_stays_on_the_sparse_gemm(tmp_path):
    # the int8 sparse benchmark MLP (bench_sparse.py --int8 --models mlp --patterns 16x4)
    m = zoo.mlp()
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim == 2:  # Gemm weights [outputs, inputs] (transB)
            init.CopyFrom(numpy_helper.from_array(prune_weight(w, 0.9, "16x4"), init.name))
    qm = onnx.load(zoo.quantize_qdq(m, tmp_path, samples=1))
    art = edgec.compile(qm, tmp_path / "out", target="x86-avx512", name="mlp",
                        log=io.StringIO())
    gemms = [k["strategy"] for k in art.manifest["kernel_strategies"] if "GEMM" in k["strategy"]]
    assert len(gemms) == 3 and all("sparse dot4 groups, density 0.1" in s or
                                   "sparse dot4 groups, density 0.0" in s for s in gemms), gemms
