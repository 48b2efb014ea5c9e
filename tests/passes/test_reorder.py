"""Operator reordering (passes/reorder.py): sparse layers' output channels permuted so that the
threads get equal non-zeros, the permutation folded away so the results do not change.

- `balanced_order` and `imbalance` on work worked out by hand;
- a conv net whose first output channels hold most non-zeros, and an MLP whose columns differ
  in length: reordered (the report says the imbalance / padding before and after), compiled
  and run against onnxruntime at 1 and 2 threads, C and LLVM;
- an MLP layer whose output has two readers keeps its order (nothing takes the permutation).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from convnets import OnnxNet
from harness import runs_here
from lowering.test_sparse_conv import check_against_onnxruntime
from onnx import numpy_helper

import edgec
from edgec.ir import DType
from edgec.ir.sparse import ConvTasks, balanced_order, channel_order_work, imbalance
from edgec.passes import default_pipeline
from edgec.targets.target import get_target


def test_balanced_order_by_hand():
    # halves 3+3 | 1+1 -> 0, 2 | 1, 3: 4 and 4
    assert balanced_order(np.array([3, 3, 1, 1])).tolist() == [0, 2, 1, 3]
    assert imbalance([3, 3, 1, 1], 2) == pytest.approx(6 / 4)
    assert imbalance([3, 1, 3, 1], 2) == pytest.approx(1.0)
    # quarters too: 8 items, the heavy ones one per quarter
    w = np.array([8, 8, 8, 8, 1, 1, 1, 1])
    order = balanced_order(w)
    assert sorted(order.tolist()) == list(range(8))
    assert imbalance(w[order], 4) == pytest.approx(1.0)
    assert imbalance(w[order], 2) == pytest.approx(1.0)
    assert imbalance(w, 4) == pytest.approx(16 / 9)
    # 3 parts of 7 items: part k takes [7k/3, 7(k+1)/3) = 2, 2, 3 items
    assert imbalance([1] * 7, 3) == pytest.approx(3 / (7 / 3))
    assert imbalance([], 2) == 1.0 and imbalance([5], 1) == 1.0


def skewed_net(rows: int = 1):
    """Convolutions whose first half of output channels keeps 60% of its weights (in blocks
    of `rows` channels), the second half 5%: one thread would get most of the work."""
    n = OnnxNet("skewed", seed=3)
    x = n.input("input", [1, 8, 9, 11])
    a = n.node("Relu", [n.conv(x, 8, 32, 3)])
    b = n.conv(a, 32, 16, 1, pads=[0, 0, 0, 0])
    n.output(n.node("Add", [n.conv(a, 32, 16, 3, stride=2), n.conv(b, 16, 16, 3, stride=2)]))
    m = n.model()
    rng = np.random.default_rng(4)
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim != 4:
            continue
        keep = rng.random((w.shape[0] // rows, 1, *w.shape[1:]))
        keep = keep < np.where(np.arange(w.shape[0] // rows) < w.shape[0] // rows // 2,
                               0.6, 0.05)[:, None, None, None, None]
        w = w * np.repeat(keep, rows, axis=1).reshape(w.shape)
        init.CopyFrom(numpy_helper.from_array(w.astype(np.float32), init.name))
    return m


def figures(art, what: str) -> list[tuple[float, float]]:
    text = (art.out_dir / "report.txt").read_text()
    return [(float(a), float(b)) for a, b in
            re.findall(what + r" ([0-9.]+)%? -> ([0-9.]+)", text)]


@pytest.mark.parametrize("rows,backend", [(1, "c"), (4, "c"), (1, "llvm")])
def test_skewed_convolutions_are_balanced(rows, backend, tmp_path):
    m = skewed_net(rows)
    # the reference family's rates, so that the model picks the same blocks on any host
    art = edgec.compile(m, tmp_path / "out", target="x86", name="sk", backend=backend,
                        cpu="emerald-rapids")
    kinds = [k["strategy"] for k in art.manifest["kernel_strategies"]
             if k["op"] == "SparseConv"]
    assert len(kinds) == 4, art.manifest["kernel_strategies"]
    assert all(s.startswith("sparse csr" if rows == 1 else f"sparse bcsr {rows}x1")
               for s in kinds), kinds
    imb = figures(art, "imbalance")
    # the report gives the threads' shares of the kernel's tasks: a layer whose row bands
    # go to the threads is as balanced in any channel order; the others split channels,
    # skewed before reordering and balanced after
    by_channels = [(a, b) for a, b in imb if a != b]
    assert len(imb) == 4 and len(by_channels) >= 3, imb
    assert all(a > 1.5 and b < 1.1 for a, b in by_channels), imb
    check_against_onnxruntime(m, art)


def test_conv_tasks_imbalance_counts_the_kernels_tasks():
    # stored block rows with 3, 1, 2, 2 blocks; stored row q computes channel block order[q]
    work, order = np.array([3, 1, 2, 2]), [0, 2, 1, 3]
    before = channel_order_work(work, order)
    assert before.tolist() == [3, 2, 1, 2]
    # one band (n, oh, nbands, bh, lds, tile, per_group, brows, ngroups): the threads take
    # block rows 0-1 and 2-3: in channel order 3 + 2 against 1 + 2 (5 / 4), stored 4 and 4
    one = ConvTasks(1, 7, 1, 7, 112, 128, 1, 4, 4)
    assert (one.imbalance(before, 2), one.imbalance(work, 2)) == pytest.approx((1.25, 1.0))
    # 9 rows in two bands, 4 and 5 (9 * 1 // 2 = 4), band first: a band per thread whatever
    # the channel order, 4 * 8 against 5 * 8
    two = ConvTasks(1, 9, 2, 5, 80, 128, 1, 4, 4)
    assert two.band_rows.tolist() == [4, 5]
    assert two.imbalance(before, 2) == two.imbalance(work, 2) == pytest.approx(40 / 36)
    # groups of 2 block rows, two images: 4 tasks of (image, group), 2 each
    assert ConvTasks(2, 7, 1, 7, 112, 128, 2, 4, 2).imbalance(work, 2) == pytest.approx(1.0)
    # the kernel's split of 28 rows: 6 bands (4, 5, 5, 4, 5, 5), halves of 14 rows
    split = ConvTasks.of(1, 64, 28, 30, 1, 16, 32)
    assert split.nbands == 6 and split.band_rows.tolist() == [4, 5, 5, 4, 5, 5]
    # 3 rows of 80 (a text recognizer's maps): 2 bands would be 2 rows and 1; one band, the
    # threads split the channels
    split = ConvTasks.of(1, 480, 3, 80, 1, 16, 32)
    assert split.nbands == 1 and split.imbalance(np.ones(480), 2) == pytest.approx(1.0)
    # 120 block rows in groups of at most 7: 18 groups of 6 or 7 (not 17 of 7 and one of 1,
    # 63 rows against 57), an even number of them
    split = ConvTasks.of(1, 120, 1, 1, 1, 16, 32)
    assert (split.ngroups, split.per_group) == (18, 7)
    assert set(np.diff([*split.group_starts, 120])) == {6, 7}
    assert split.imbalance(np.ones(120), 2) == pytest.approx(1.0)


def skewed_mlp(shared: bool = False):
    """60-100-40-10: column j of each weight keeps about (j % 7 + 1) / 10 of its entries, so
    the sliced ELLPACK's slices mix long and short rows. `shared`: the first layer's output
    also feeds a second reader, which cannot take a permutation."""
    n = OnnxNet("mlp", seed=6)
    x = n.input("input", [1, 60])
    h = n.node("Relu", [n.node("Gemm", [x, n.weight((100, 60)), n.weight((100,), 0.1)],
                               transB=1)])
    g = n.node("Relu", [n.node("MatMul", [h, n.weight((100, 40))])])
    y = n.node("MatMul", [g, n.weight((40, 10))])
    if shared:
        y = n.node("Add", [y, n.node("MatMul", [h, n.weight((100, 10))])])
    n.output(y)
    m = n.model()
    rng = np.random.default_rng(2)
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim == 2:
            axis = 0 if w.shape == (100, 60) else 1  # the outputs' axis (Gemm: transB)
            share = np.expand_dims((np.arange(w.shape[axis]) % 7 + 1) / 10, 1 - axis)
            w = np.where(rng.random(w.shape) < share, w, 0).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(w, init.name))
    return m


def forced_sparse(target: str) -> str:
    """The standard pipeline for `target` with every layer that has zeros on the sparse
    kernels (these small layers' choice is the CPU family's; their slices are the point)."""
    t = get_target(target)
    return default_pipeline(t.lanes(DType.F32), t.registers).replace("sparsify{",
                                                                      "sparsify{force,")


@pytest.mark.parametrize("backend", ["c", "llvm"])
def test_mlp_slices_sorted_and_folded_into_the_consumer(backend, tmp_path):
    m = skewed_mlp()
    art = edgec.compile(m, tmp_path / "out", target="x86", name="mlp", backend=backend,
                        pipeline=forced_sparse("x86"))
    ops = [k["op"] for k in art.manifest["kernel_strategies"]]
    assert ops.count("SparseMatMul") >= 2, ops
    pad = figures(art, "padding")
    # the two hidden layers' slices sorted by length: less padding than in column order
    assert len(pad) >= 2 and all(b < a for a, b in pad[:2]), pad
    check_against_onnxruntime(m, art)


def test_output_with_two_readers_keeps_its_order(tmp_path):
    m = skewed_mlp(shared=True)
    art = edgec.compile(m, tmp_path / "out", target="x86", name="mlp",
                        pipeline=forced_sparse("x86"))
    first = next(k for k in art.manifest["kernel_strategies"] if k["op"] == "SparseMatMul")
    # padding unchanged: the first layer feeds two matrix products
    a, b = re.search(r"padding ([0-9]+)% -> ([0-9]+)%", first["strategy"]).groups()
    assert a == b, first
    check_against_onnxruntime(m, art)


def qkv_net(rows: int = 1):
    """A fused query-key-value projection [rows, 40] x [40, 3 x 48] whose thirds keep 5%, 15%
    and 40% of their weights (a trained projection's pruned thirds differ so, as the
    benchmark's text recognizer shows), split into its thirds and combined: no consumer
    can take a permutation of its outputs."""
    n = OnnxNet("qkv", seed=9)
    x = n.input("input", [rows, 40])
    w = n.weight((40, 144))
    qkv = n.node("MatMul", [x, w])
    q, k, v = (n.node("Slice", [qkv, n.const(np.array([lo], np.int64)),
                                n.const(np.array([lo + 48], np.int64)),
                                n.const(np.array([1], np.int64))]) for lo in (0, 48, 96))
    n.output(n.node("Add", [n.node("Mul", [q, k]), v]))
    m = n.model()
    rng = np.random.default_rng(3)
    init = next(i for i in m.graph.initializer if i.name == w)
    b = numpy_helper.to_array(init)
    keep = np.repeat([0.05, 0.15, 0.4], 48)[None, :]
    init.CopyFrom(numpy_helper.from_array(np.where(rng.random(b.shape) < keep, b, 0)
                                          .astype(np.float32), init.name))
    return m


@pytest.mark.parametrize("target,backend", [("x86", "c"), ("x86", "llvm"), ("arm64", "c")])
def test_split_projection_balances_its_slices_in_the_kernel(target, backend, tmp_path):
    m = qkv_net()
    art = edgec.compile(m, tmp_path / "out", target=target, name="qkv", backend=backend,
                        cpu="emerald-rapids")
    mm = [k["strategy"] for k in art.manifest["kernel_strategies"] if k["op"] == "SparseMatMul"]
    assert len(mm) == 1, mm
    (a, b), = figures(art, "imbalance")
    assert a > 1.2 and b < 1.1, (a, b)  # the kernel computes the slices in another order
    if runs_here(target):
        check_against_onnxruntime(m, art)


def test_skewed_projection_over_rows_is_balanced(tmp_path):
    # bench_sparse.py's qkv_skewed in small: [40, 256] x [256, 3 x 128], thirds scaled 1, 1.5, 3
    # and pruned by magnitude: the value third keeps most weights. It runs as a convolution
    # over the 40 rows, whose channel halves the pass balances (in runs of channels)
    from edgec.passes.prune import prune_weight

    n = OnnxNet("qkvs", seed=14)
    x = n.input("input", [40, 256])
    w = n.weight((256, 384))
    n.output(n.node("Add", [n.node("MatMul", [x, w]), n.weight((384,), 0.1)]))
    m = n.model()
    init = next(i for i in m.graph.initializer if i.name == w)
    b = numpy_helper.to_array(init) * np.repeat([1.0, 1.5, 3.0], 128)
    b = prune_weight(np.ascontiguousarray(b.T), 0.9).T
    init.CopyFrom(numpy_helper.from_array(b.astype(np.float32), init.name))
    art = edgec.compile(m, tmp_path / "out", name="qkvs")
    ops = [k["op"] for k in art.manifest["kernel_strategies"]]
    assert ops == ["Transpose", "SparseConv", "Transpose"], ops
    (a, b), = figures(art, "imbalance")
    assert a > 1.5 and b < 1.1, (a, b)
    check_against_onnxruntime(m, art)
