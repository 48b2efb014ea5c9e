"""Sparse convolution: weights with zeros in them (a model pruned in training, exported with
the zeros) run on the sparse kernels without any flag, and compute what onnxruntime computes
on the same model.

- the staging and the block-CSR encoding (ir/sparse.py) against a direct numpy convolution;
- pruned networks (3x3 stride 1 and 2, 1x1 stride 1 and 2, a 7x7 stride-2 stem, asymmetric
  pads, non-square planes, a 5x3 window, batch 2, a residual with ReLU, no bias, planes
  narrower than a vector and wider than a tile band), pruned unstructured and in 4x1 blocks,
  through every x86 build, the LLVM backend and arm64 under qemu, 1 and 2 threads;
- the report names the sparse kernel of each sparse layer; dense weights stay dense.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from convnets import OnnxNet, onnxruntime_outputs, random_feeds
from harness import X86_TARGETS, rel_error, runs_here
from onnx import numpy_helper

import edgec
from edgec.errors import EdgecError
from edgec.ir.sparse import (
    NMWeights,
    SparseWeights,
    Staging,
    decode_nm,
    decode_sparse,
    encode_nm,
    encode_sparse,
)


def prune(model, sparsity: float, rows: int = 1, seed: int = 0):
    """The model with `sparsity` of each conv weight's blocks of `rows` output channels set
    to zero (random blocks: what a pruned model looks like to the compiler)."""
    rng = np.random.default_rng(seed)
    for init in model.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim != 4 or w.shape[0] % rows:
            continue
        keep = rng.random((w.shape[0] // rows, 1, *w.shape[1:])) >= sparsity
        w = w * np.repeat(keep, rows, axis=1).reshape(w.shape)
        init.CopyFrom(numpy_helper.from_array(w.astype(np.float32), init.name))
    return model


def pruned_net(sparsity: float = 0.85, rows: int = 1, batch: int = 1, size=(30, 26)):
    n = OnnxNet("pruned", seed=5)
    x = n.input("input", [batch, 3, *size])
    stem = n.node("Relu", [n.conv(x, 3, 16, 7, stride=2, pads=[3, 2, 3, 3])])  # 15 x 13
    a = n.node("Relu", [n.conv(stem, 16, 24, 3)])
    b = n.conv(a, 24, 16, 3, bias=False)
    r = n.node("Relu", [n.node("Add", [b, stem])])  # a residual
    d = n.node("Relu", [n.conv(r, 16, 32, 3, stride=2)])  # 8 x 7: planes under a vector
    p = n.conv(r, 16, 32, 1, stride=2, pads=[0, 0, 0, 0])
    e = n.node("Add", [d, p])
    f = n.conv(e, 32, 40, (5, 3), pads=[2, 1, 1, 0])
    g = n.conv(e, 32, 8, 1)
    n.output(f, g)
    return prune(n.model(), sparsity, rows)


def check_against_onnxruntime(model, art, threads=(1, 2)) -> None:
    """The artifact's outputs against onnxruntime's on the same model, at each thread count."""
    feeds = random_feeds(model)
    want = onnxruntime_outputs(model, feeds)
    lib = edgec.load(art.out_dir)
    for t in threads:
        lib.set_num_threads(t)
        got = lib.run(feeds)
        for k, w in want.items():
            assert rel_error(got[k], w) < 1e-5, (k, t)


def sparse_layers(art) -> dict[str, str]:
    with open(art.out_dir / "manifest.json") as fh:
        kernels = json.load(fh)["kernel_strategies"]
    return {k["node"]: k["strategy"] for k in kernels if k["op"] == "SparseConv"}


@pytest.mark.parametrize("stride,pads,k", [(1, [1, 1, 1, 1], 3), (2, [1, 1, 1, 1], 3),
                                           (2, [3, 2, 3, 1], 7), (2, [0, 0, 0, 0], 1),
                                           (3, [0, 1, 2, 0], 4)])
def test_staging_and_encoding_give_the_convolution(stride, pads, k):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 13, 11)).astype(np.float32)
    w = rng.standard_normal((8, 3, k, k)).astype(np.float32)
    w[rng.random(w.shape) < 0.7] = 0
    xp = np.pad(x, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    oh, ow = (xp.shape[2] - k) // stride + 1, (xp.shape[3] - k) // stride + 1
    want = np.zeros((2, 8, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride:i * stride + k, j * stride:j * stride + k]
            want[:, :, i, j] = np.einsum("nchw,mchw->nm", win, w)
    st = Staging.of((k, k), pads, (stride, stride), (oh, ow))
    xs, ws = st.stage(x, pads), st.weights(w)
    for rows in (1, 2, 4, 8):
        enc = SparseWeights(rows)
        parts = encode_sparse(ws, enc, st.hq, st.wq)
        assert np.array_equal(decode_sparse(*parts, enc, ws.shape, st.hq, st.wq), ws)
    khq, kwq = ws.shape[2:]
    got = np.zeros_like(want)
    for i in range(khq):
        for j in range(kwq):
            got += np.einsum("nghw,mg->nmhw", xs[:, :, i:i + oh, j:j + ow], ws[:, :, i, j])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def odd_channels_net(rows: int):
    """Convolutions of 30 and 255 output channels (a detector head's 3 x (80 + 5)), one with
    a residual, pruned by magnitude in blocks of `rows` output channels (the last block of
    each holds fewer channels)."""
    from edgec.passes.prune import prune_weight

    n = OnnxNet("odd", seed=7)
    x = n.input("input", [1, 16, 12, 10])
    a = n.node("Relu", [n.conv(x, 16, 30, 3)])
    b = n.node("Relu", [n.node("Add", [n.conv(a, 30, 30, 3, bias=False), a])])
    n.output(n.conv(b, 30, 255, 1, pads=[0, 0, 0, 0]))
    m = n.model()
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim == 4:
            taps = w.shape[2] * w.shape[3]
            w = prune_weight(w.reshape(w.shape[0], -1), 0.85, f"{rows}x1", taps)
            init.CopyFrom(numpy_helper.from_array(w.reshape(init.dims).astype(np.float32),
                                                  init.name))
    return m


def test_channels_pad_to_a_multiple_of_the_block():
    rng = np.random.default_rng(3)
    ws = rng.standard_normal((30, 4, 3, 3)).astype(np.float32)
    ws[rng.random(ws.shape) < 0.8] = 0
    for rows in (4, 8):
        enc = SparseWeights(rows)
        v, o, p = encode_sparse(ws, enc, 6, 6)
        assert p.size == -(-30 // rows) + 1 and v.size == o.size * rows
        got = decode_sparse(v, o, p, enc, ws.shape, 6, 6)
        assert got.shape[0] == 32 and np.array_equal(got[:30], ws) and not got[30:].any()


@pytest.mark.parametrize("target,backend", [("x86", "c"), ("x86", "llvm"), ("arm64", "c")])
@pytest.mark.parametrize("rows", [4, 8])
def test_odd_channel_counts_run_padded_blocks(rows, target, backend, tmp_path):
    m = odd_channels_net(rows)
    art = edgec.compile(m, tmp_path / "out", target=target, name="odd", backend=backend)
    layers = sparse_layers(art)
    assert len(layers) == 3, layers
    assert all(f"bcsr {rows}x1" in t for t in layers.values()), layers
    assert sum("channels padded 30 -> 32" in t for t in layers.values()) == 2, layers
    assert sum("channels padded 255 -> 256" in t for t in layers.values()) == 1, layers
    if runs_here(target):
        check_against_onnxruntime(m, art)
    if (target, backend, rows) == ("x86", "c", 4):  # without padding: no block height fits
        pipe = art.manifest["pipeline"].replace("sparsify{", "sparsify{pad_channels=0,")
        art = edgec.compile(m, tmp_path / "unpadded", name="odd", pipeline=pipe)
        assert all(t.startswith("sparse csr") for t in sparse_layers(art).values())


def test_input_channel_blocks_round_trip():
    # blocks of 4 input channels at one tap: a 3 x 3 stride-2 layer's staged planes are the
    # channels' 4 stride phases, so a block's planes lie 4 apart (`step 4`)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((12, 8, 3, 3)).astype(np.float32)
    st = Staging.of((3, 3), [1, 1, 1, 1], (2, 2), (5, 5))
    for rows, cols, step in [(1, 4, 1), (4, 4, 1), (1, 4, 4), (8, 4, 4)]:
        ws = st.weights(w) if step == 4 else w.copy()
        keep = rng.random((ws.shape[0], ws.shape[1] // (4 * step), 1, step, *ws.shape[2:]))
        ws = ws * np.repeat(keep >= 0.7, 4, axis=2).reshape(ws.shape)
        enc = SparseWeights(rows, cols, step)
        assert SparseWeights.parse(str(enc)) == enc
        assert str(enc).endswith(f"{rows}x4" + (" step 4" if step == 4 else ""))
        v, o, p = encode_sparse(ws, enc, st.hq, st.wq)
        assert v.size == o.size * rows * cols
        if (rows, step) == (1, 1):  # pruned in these blocks: as many stored as kept
            assert o.size == np.count_nonzero(keep >= 0.7)
        got = decode_sparse(v, o, p, enc, ws.shape, st.hq, st.wq)
        assert np.array_equal(got[:12], ws)
    with pytest.raises(EdgecError, match="whole blocks"):
        encode_sparse(np.ones((4, 6, 1, 1), np.float32), SparseWeights(1, 4), 3, 3)


def test_nm_groups_round_trip():
    # 2:8 along input channels at each tap of a 3 x 3 stride-2 window (channels 4 planes
    # apart); the stride phases' taps past the window are no channel's group: left out
    from edgec.passes.prune import prune_weight

    rng = np.random.default_rng(6)
    w = rng.standard_normal((6, 16, 3, 3)).astype(np.float32)
    w = prune_weight(w.reshape(6, -1), 0.0, "2:8", 9).reshape(w.shape)
    w[2] = 0  # a channel without weights: all its entries are padding
    st = Staging.of((3, 3), [1, 1, 1, 1], (2, 2), (5, 5))
    ws = st.weights(w)
    enc = NMWeights(2, 8, 4)
    assert NMWeights.parse(str(enc)) == enc and str(enc) == "nm 2:8 step 4"
    assert enc.fits(ws) and not NMWeights(1, 8, 4).fits(ws)
    v, i, base = encode_nm(ws, enc, st.hq, st.wq)
    assert base.size == 2 * 9 and v.size == 6 * base.size * 2  # 2 channel groups x 9 taps
    assert i.dtype == np.uint8 and np.all(np.diff(base) > 0)
    assert np.array_equal(decode_nm(v, i, base, enc, ws.shape, st.hq, st.wq), ws)
    with pytest.raises(EdgecError, match="more than 1"):
        encode_nm(ws, NMWeights(1, 8, 4), st.hq, st.wq)
    with pytest.raises(EdgecError, match="not a group's"):
        decode_nm(v, i, base + 1, enc, ws.shape, st.hq, st.wq)
    with pytest.raises(EdgecError, match="outside its group"):
        decode_nm(v, i + 8, base, enc, ws.shape, st.hq, st.wq)
    with pytest.raises(EdgecError, match="do not fit"):
        decode_nm(v[:-1], i, base, enc, ws.shape, st.hq, st.wq)


def test_bad_encodings_are_refused():
    for text in ("csr r2", "bcsr 3x1", "bcsr 4x2", "bcsr 1x4 step 0", "bcsr 1x", "", "nm 4:4",
                 "nm 0:4", "nm 2:32", "nm 2-4"):
        with pytest.raises(EdgecError, match="sparse weight encoding"):
            SparseWeights.parse(text)
    ws = np.zeros((4, 2, 3, 3), np.float32)
    ws[1, 0, 2, 2] = 1
    v, o, p = encode_sparse(ws, SparseWeights(1), 5, 5)
    with pytest.raises(EdgecError, match="outside"):
        decode_sparse(v, o + 100, p, SparseWeights(1), ws.shape, 5, 5)
    with pytest.raises(EdgecError, match="do not fit"):
        decode_sparse(v, o, p[:-1], SparseWeights(1), ws.shape, 5, 5)


def input_block_net(size=(30, 26), pattern: str = "1x4"):
    """pruned_net's layers pruned by magnitude in blocks of 1 output x 4 input channels at
    one tap (the `1x4` pattern), or N:M along the input channels at a tap (`pattern` "2:8"
    and the like); the stem (3 inputs) stays dense."""
    from edgec.passes.prune import prune_weight

    m = pruned_net(sparsity=0.0, size=size)
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim == 4 and w.shape[1] % 4 == 0:
            wo = prune_weight(w.reshape(w.shape[0], -1), 0.85, pattern, w.shape[2] * w.shape[3])
            init.CopyFrom(numpy_helper.from_array(wo.reshape(w.shape).astype(np.float32),
                                                  init.name))
    return m


@pytest.mark.parametrize("target,backend", [("x86", "c"), ("x86", "llvm"), ("arm64", "c")])
def test_input_channel_blocks_match_onnxruntime(target, backend, tmp_path):
    m = input_block_net()
    art = edgec.compile(m, tmp_path / "out", target=target, name="net", backend=backend)
    layers = sparse_layers(art)
    assert len(layers) == 6 and all("bcsr 1x4" in t for t in layers.values()), layers
    assert sum("bcsr 1x4 step 4," in t for t in layers.values()) == 1, layers  # 3x3 stride 2
    if runs_here(target):
        check_against_onnxruntime(m, art)
    if (target, backend) == ("x86", "c"):  # held to one input channel a block: csr
        pipe = art.manifest["pipeline"].replace("sparsify{", "sparsify{cols=1,")
        art = edgec.compile(m, tmp_path / "one", name="net", pipeline=pipe)
        assert all(t.startswith("sparse csr") for t in sparse_layers(art).values())


@pytest.mark.parametrize("target,backend", [("x86", "c"), ("x86", "llvm"), ("arm64", "c")])
@pytest.mark.parametrize("pattern", ["1:4", "2:8"])
def test_nm_pruned_layers_match_onnxruntime(pattern, target, backend, tmp_path):
    m = input_block_net(pattern=pattern)
    # the reference family's rates: on Zen 5's AVX-512 one of the six stays dense
    art = edgec.compile(m, tmp_path / "out", target=target, name="net", backend=backend,
                        cpu="emerald-rapids")
    layers = sparse_layers(art)
    assert len(layers) == 6 and all(f"nm {pattern}" in t for t in layers.values()), layers
    assert sum(f"nm {pattern} step 4," in t for t in layers.values()) == 1, layers
    if runs_here(target):
        check_against_onnxruntime(m, art)
    if (target, backend, pattern) == ("x86", "c", "1:4"):  # N:M turned off: csr
        pipe = art.manifest["pipeline"].replace("sparsify{", "sparsify{nm=0,")
        art = edgec.compile(m, tmp_path / "csr", name="net", pipeline=pipe)
        assert all(t.startswith("sparse csr") for t in sparse_layers(art).values())


def short_map_net():
    """Maps of 3 rows (a text recognizer's): one band of rows, the threads split 120 and 60
    channels in groups of block rows that do not divide them evenly (6 or 7 a group)."""
    n = OnnxNet("short", seed=8)
    x = n.input("input", [1, 32, 3, 20])
    a = n.node("Relu", [n.conv(x, 32, 120, 1, pads=[0, 0, 0, 0])])
    n.output(n.conv(a, 120, 60, 3))
    return prune(n.model(), 0.85)


@pytest.mark.parametrize("target,backend", [("x86", "c"), ("x86", "llvm"), ("arm64", "c")])
def test_short_maps_split_channels_in_even_groups(target, backend, tmp_path):
    m = short_map_net()
    art = edgec.compile(m, tmp_path / "out", target=target, name="short", backend=backend)
    assert len(sparse_layers(art)) == 2
    if runs_here(target):
        check_against_onnxruntime(m, art)


@pytest.fixture(scope="module")
def nets():
    return {(rows, batch): pruned_net(rows=rows, batch=batch) for rows in (1, 4)
            for batch in (1, 2)}


@pytest.mark.parametrize("target", X86_TARGETS)
@pytest.mark.parametrize("rows,batch", [(1, 1), (4, 2)])
def test_pruned_net_matches_onnxruntime(nets, target, rows, batch, tmp_path):
    m = nets[(rows, batch)]
    art = edgec.compile(m, tmp_path / "out", target=target, name="net")
    layers = sparse_layers(art)
    # every conv is sparse enough for the sparse kernel; 4x1-pruned ones take 4-row blocks
    assert len(layers) == 7, layers
    want_enc = "bcsr 4x1" if rows == 4 else "csr"
    assert sum(want_enc in s for s in layers.values()) >= 6, layers
    if runs_here(target):
        check_against_onnxruntime(m, art)


@pytest.mark.parametrize("target,backend", [("x86", "llvm"), ("arm64", "c"), ("arm64", "llvm")])
def test_pruned_net_other_backends(nets, target, backend, tmp_path):
    m = nets[(1, 1)]
    art = edgec.compile(m, tmp_path / "out", target=target, name="net", backend=backend)
    assert len(sparse_layers(art)) == 7
    check_against_onnxruntime(m, art, threads=(1,))


def test_dense_weights_stay_dense(tmp_path):
    m = pruned_net(sparsity=0.2)
    art = edgec.compile(m, tmp_path / "out", name="net")
    assert sparse_layers(art) == {}
    report = (art.out_dir / "report.txt").read_text()
    assert "SparseConv" not in report


def pruned_mlp(sparsity: float = 0.9, batch: int = 1, inputs: int = 50):
    """50-200-30-10 at 90% zeros: bias + Relu, MatMul without bias, N not a multiple
    of any vector (30, 10), a batch of rows. More inputs: a first layer whose weights
    outgrow the L1 (the kernel prefetches them)."""
    n = OnnxNet("mlp", seed=2)
    x = n.input("input", [batch, inputs])
    h = n.node("Relu", [n.node("Gemm", [x, n.weight((200, inputs)), n.weight((200,), 0.1)],
                               transB=1)])
    g = n.node("MatMul", [h, n.weight((200, 30))])
    n.output(n.node("Gemm", [n.node("Tanh", [g]), n.weight((10, 30)), n.weight((10,), 0.1)],
                    transB=1))
    m = n.model()
    rng = np.random.default_rng(1)
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim == 2:
            w = np.where(rng.random(w.shape) < sparsity, 0, w).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(w, init.name))
    return m


@pytest.mark.parametrize("target,backend", [(t, "c") for t in X86_TARGETS] +
                         [("x86", "llvm"), ("arm64", "c"), ("arm64", "llvm"), ("armv7", "c")])
def test_sparse_matmul_matches_onnxruntime(target, backend, tmp_path):
    for batch in (1, 3):
        m = pruned_mlp(batch=batch)
        art = edgec.compile(m, tmp_path / f"out{batch}", target=target, name="mlp",
                            backend=backend, cpu="emerald-rapids")
        ops = [k["op"] for k in art.manifest["kernel_strategies"]]
        assert ops.count("SparseMatMul") == 3, ops
        if runs_here(target):
            check_against_onnxruntime(m, art)


def sequence_mlp(rows: int = 40, sparsity: float = 0.92):
    """A sequence's projections: [40, 256] through Gemm (transB, bias, Relu) to 200, then
    MatMul to 300 and a residual add of a third MatMul's product; at 92% zeros. With 40 rows
    the first two run as convolutions over the rows; the one whose sum takes a residual
    stays a matrix product."""
    n = OnnxNet("seq", seed=11)
    x = n.input("input", [rows, 256])
    h = n.node("Relu", [n.node("Gemm", [x, n.weight((200, 256)), n.weight((200,), 0.1)],
                               transB=1)])
    g = n.node("MatMul", [h, n.weight((200, 300))])
    n.output(n.node("Add", [n.node("MatMul", [g, n.weight((300, 300))]), g]))
    m = n.model()
    rng = np.random.default_rng(5)
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim == 2:
            init.CopyFrom(numpy_helper.from_array(
                np.where(rng.random(w.shape) < sparsity, 0, w).astype(np.float32), init.name))
    return m


@pytest.mark.parametrize("target,backend", [("x86", "c"), ("x86", "llvm"), ("arm64", "c")])
def test_matrix_products_of_many_rows_run_as_convolutions(target, backend, tmp_path):
    m = sequence_mlp()
    art = edgec.compile(m, tmp_path / "out", target=target, name="seq", backend=backend)
    ops = [k["op"] for k in art.manifest["kernel_strategies"]]
    # A transposed, the product as a 1x1 convolution over its 40 rows, the result transposed
    # (the second product reads the first's result before its transpose: 2 transposes)
    assert ops.count("SparseConv") == 2 and ops.count("Transpose") == 2, ops
    if runs_here(target):
        check_against_onnxruntime(m, art)


@pytest.mark.parametrize("steps", [40, 2])
def test_products_of_a_sequence_flatten_its_rows(steps, tmp_path):
    # A [1, steps, 256] (a sequence, as exported): its leading dimensions are the rows; 40
    # of them run as a convolution, 2 on the gathering kernel; a residual of the same shape
    n = OnnxNet("seq3", seed=12)
    x = n.input("input", [1, steps, 256])
    h = n.node("MatMul", [x, n.weight((256, 200))])
    n.output(n.node("Add", [n.node("MatMul", [n.node("Relu", [h]), n.weight((200, 200))]), h]))
    m = n.model()
    rng = np.random.default_rng(6)
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        init.CopyFrom(numpy_helper.from_array(
            np.where(rng.random(w.shape) < 0.95, 0, w).astype(np.float32), init.name))
    art = edgec.compile(m, tmp_path / "out", name="seq3")
    ops = [k["op"] for k in art.manifest["kernel_strategies"]]
    if steps == 40:  # (the second takes a residual: no convolution; gathers lose to dense)
        assert ops[:3] == ["Transpose", "SparseConv", "Transpose"], ops
    else:
        assert ops.count("SparseMatMul") == 2, ops
    check_against_onnxruntime(m, art)


def test_sequence_projection_benchmark_stays_on_the_convolution(tmp_path):
    # bench_sparse.py's seq512 ([40, 512] x [512, 512] + b) pruned to 90%: a convolution
    # over the 40 rows (the gathers ran it 0.5x dense), bias fused
    n = OnnxNet("seq512", seed=13)
    x = n.input("input", [40, 512])
    n.output(n.node("Add", [n.node("MatMul", [x, n.weight((512, 512))]),
                            n.weight((512,), 0.1)]))
    m = n.model()
    w = m.graph.initializer[0]
    b = numpy_helper.to_array(w)
    from edgec.passes.prune import prune_weight
    w.CopyFrom(numpy_helper.from_array(prune_weight(np.ascontiguousarray(b.T), 0.9).T
                                       .astype(np.float32), w.name))
    art = edgec.compile(m, tmp_path / "out", name="seq512")
    kinds = [(k["op"], k["strategy"]) for k in art.manifest["kernel_strategies"]]
    assert [op for op, _ in kinds] == ["Transpose", "SparseConv", "Transpose"], kinds
    assert kinds[1][1].startswith("sparse csr"), kinds


@pytest.mark.parametrize("k,cols", [(784, "u16"), (70000, "i32")])
def test_sparse_matmul_columns_widen_to_int32(k, cols, tmp_path):
    # input columns are stored as uint16 up to 65536 inputs (half the index bytes), int32
    # past that; both gather the right inputs
    n = OnnxNet("wide", seed=3)
    x = n.input("input", [1, k])
    n.output(n.node("MatMul", [x, n.weight((k, 20))]))
    m = n.model()
    rng = np.random.default_rng(4)
    w = m.graph.initializer[0]
    b = numpy_helper.to_array(w)
    b = np.where(rng.random(b.shape) < 0.95, 0, b).astype(np.float32)
    w.CopyFrom(numpy_helper.from_array(b, w.name))
    art = edgec.compile(m, tmp_path / "out", name="wide")
    sig = re.search(r"SparseMatMul \S+: \(f32\[1,\d+\], f32\[\d+\], (\w+)\[",
                    (art.out_dir / "wide.c").read_text())
    assert sig and sig.group(1) == cols
    check_against_onnxruntime(m, art, threads=(1,))


@pytest.mark.parametrize("pattern", ["unstructured", "4x1", "1x4", "1:4"])
def test_pruned_resnet18_stays_on_the_sparse_kernels(pattern, tmp_path):
    # the sparse benchmark model (benchmarks/bench_sparse.py): every convolution and the
    # classifier of ResNet-18 pruned to 90% run sparse, in the blocks the pattern made
    from edgec import zoo

    art = edgec.compile(zoo.resnet18(), tmp_path / "out", name="r18", prune=0.9,
                        prune_pattern=pattern, cpu="emerald-rapids")
    kinds = [(k["op"], k["strategy"]) for k in art.manifest["kernel_strategies"]]
    convs = [s for op, s in kinds if op == "SparseConv"]
    assert len(convs) == 20 and [op for op, _ in kinds].count("SparseMatMul") == 1, kinds
    assert not any(op in ("BlockedConv", "FusedConv", "FusedMatMul") for op, _ in kinds), kinds
    want = {"4x1": "sparse bcsr 4x1", "1x4": "sparse bcsr 1x4",
            "1:4": "sparse nm 1:4"}.get(pattern, "sparse csr")
    # (the stem's 3 input channels make no block or group of 4: it runs as csr)
    assert sum(s.startswith(want) for s in convs) == 20 - (pattern in ("1x4", "1:4")), convs


def test_a_depthwise_neighbour_charges_the_layout_conversion():
    """A 1x1 convolution beside a depthwise one runs sparse in plain rows where its neighbour
    runs blocked (NCHWc), so the tensor between them is converted: sparsify's estimate adds
    LAYOUT_COST per element of it, for the input a depthwise convolution writes and the
    output one reads (MobileNetV2 at 70% unstructured zeros on Zen 5, its 1x1 layers sparse,
    ran at 0.74x the dense build's speed: 1.7 ms of its 4.3 were conversions)."""
    from edgec.ir import DType, Graph, TensorType
    from edgec.passes.sparsify import LAYOUT_COST, sparse_plan

    rng = np.random.default_rng(0)

    def weight(*shape):
        w = rng.standard_normal(shape).astype(np.float32)
        w[rng.random(shape) < 0.7] = 0
        return w

    conv = {"strides": [1, 1], "dilations": [1, 1], "group": 1, "pads": [0, 0, 0, 0]}
    g = Graph("block")
    x = g.add_input("x", TensorType((1, 16, 28, 28), DType.F32))
    expand = g.add_node("Conv", [x, g.const(weight(96, 16, 1, 1), "We")], conv, name="expand")
    dw = g.add_node("Conv", [expand.output, g.const(weight(96, 1, 3, 3), "Wd")],
                    {**conv, "group": 96, "pads": [1, 1, 1, 1]}, name="dw")
    project = g.add_node("Conv", [dw.output, g.const(weight(24, 96, 1, 1), "Wp")], conv,
                         name="project")
    g.outputs = [project.output]
    alone = Graph("alone")  # the same two layers with no depthwise neighbour
    xa = alone.add_input("x", TensorType((1, 16, 28, 28), DType.F32))
    e2 = alone.add_node("Conv", [xa, alone.const(expand.inputs[1].const, "We")], conv,
                        name="e")
    ya = alone.add_input("y", TensorType((1, 96, 28, 28), DType.F32))
    p2 = alone.add_node("Conv", [ya, alone.const(project.inputs[1].const, "Wp")], conv,
                        name="p")
    alone.outputs = [e2.output, p2.output]
    assert sparse_plan(expand).sparse_cost == pytest.approx(
        sparse_plan(e2).sparse_cost + LAYOUT_COST * 96 * 28 * 28)
    assert sparse_plan(project).sparse_cost == pytest.approx(
        sparse_plan(p2).sparse_cost + LAYOUT_COST * 96 * 28 * 28)
    assert sparse_plan(project).dense_cost == sparse_plan(p2).dense_cost
    # with the conversions the layers stay dense; alone, at these zeros, they run sparse
    assert sparse_plan(e2).runs_sparse and sparse_plan(p2).runs_sparse
    assert not sparse_plan(expand).runs_sparse and not sparse_plan(project).runs_sparse
    # without vectors (c-generic: no blocked layout) nothing is converted
    assert sparse_plan(expand, blocked=False).sparse_cost == sparse_plan(e2).sparse_cost
