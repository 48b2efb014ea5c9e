"""`edgec compile --report html`: one page that loads nothing, with the graph before and after
the passes, each kernel's latency, the arena's buffers over time and, where they apply, each
layer's quantization error and sparsity. The page is read with html.parser and checked against
what else the compile wrote (manifest.json, report.txt, quantization.json) and against the
model's own weights; a hostile name stays text."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import edgec
from edgec.compiler.cli import main
from edgec.errors import EdgecError

HOSTILE_NODE = "</script><script>alert(1)</script> $x^$"
HOSTILE_VALUE = "y*/ #define x"


def convnet(path, conv1: str = "conv1", output: str = "y", zeros: dict | None = None):
    """x [1,3,16,16] -> Conv conv1 -> BatchNormalization bn1 -> Relu -> Conv conv2 -> Relu ->
    GlobalAveragePool -> Flatten -> Gemm fc -> `output` [1,10]; `zeros`: {weight: share of
    its entries set to zero}. Returns the model."""
    rng = np.random.default_rng(0)
    weights = {"w1": rng.standard_normal((8, 3, 3, 3)), "w2": rng.standard_normal((16, 8, 3, 3)),
               "wf": rng.standard_normal((10, 16))}
    for name, share in (zeros or {}).items():
        flat = weights[name].reshape(-1)
        flat[rng.permutation(flat.size)[:round(share * flat.size)]] = 0
    inits = {**weights, "g": rng.random(8) + 0.5, "b": rng.standard_normal(8),
             "m": rng.standard_normal(8), "v": rng.random(8) + 0.5,
             "b2": rng.standard_normal(16), "bf": rng.standard_normal(10)}
    same = {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name=conv1, **same),
             helper.make_node("BatchNormalization", ["c1", "g", "b", "m", "v"], ["n1"],
                              name="bn1"),
             helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", **same),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wf", "bf"], [output], name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(a.astype(np.float32), k) for k, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return model


class Page(HTMLParser):
    """What the tests read of a page: every start tag, the text of each <section> (tooltips
    and SVG text included) and the rows of each <table>, by id."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: dict[str, str] = {}
        self.heads: dict[str, list[str]] = {}
        self.rows: dict[str, list[list[str]]] = {}
        self._section = self._table = None
        self._cell: list[str] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "section":
            self._section = a["id"]
            self.text[self._section] = ""
        elif tag == "table":
            self._table = a["id"]
            self.heads[self._table], self.rows[self._table] = [], []
        elif tag == "tr" and self._table:
            self.rows[self._table].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "section":
            self._section = None
        elif tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None:
            into = self.heads[self._table] if tag == "th" else self.rows[self._table][-1]
            into.append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._section:
            self.text[self._section] += data
        if self._cell is not None:
            self._cell.append(data)

    def records(self, table: str) -> list[dict[str, str]]:
        return [dict(zip(self.heads[table], r)) for r in self.rows[table] if r]

    def facts(self, table: str) -> dict[str, str]:
        return {r[0]: r[1] for r in self.rows[table] if r}


def compile_with_report(tmp_path_factory, name: str, *flags: str, **model):
    d = tmp_path_factory.mktemp(name)
    onnx_model = convnet(d / f"{name}.onnx", **model)
    out = d / "out"
    assert main(["compile", str(d / f"{name}.onnx"), "-o", str(out), "--report", "html",
                 *flags]) == 0
    text = (out / "report.html").read_text(encoding="utf-8")
    return onnx_model, out, text, Page(text)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return compile_with_report(tmp_path_factory, "plain")


def calib_samples(tmp_path_factory) -> Path:
    """An .npz of 8 calibration inputs of the convnet."""
    calib = tmp_path_factory.mktemp("calib") / "calib.npz"
    np.savez(calib, x=np.random.default_rng(1).standard_normal((8, 3, 16, 16)).astype("f4"))
    return calib


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    return compile_with_report(tmp_path_factory, "quantized", "--quantize", "int8",
                               "--calib", str(calib_samples(tmp_path_factory)))


@pytest.fixture(scope="module")
def llvm_quantized(tmp_path_factory):
    """The LLVM backend, whose kernels are the object's global symbols NAME_k<i>_<node>."""
    return compile_with_report(tmp_path_factory, "llvmq", "--backend", "llvm", "--quantize",
                               "int8", "--calib", str(calib_samples(tmp_path_factory)))


def test_one_file_that_loads_nothing(plain):
    _, out, text, page = plain
    assert json.loads((out / "manifest.json").read_text())["report_html"] == "report.html"
    tags = {t for t, _ in page.tags}
    assert not tags & {"script", "iframe", "img", "link", "object", "embed", "image"}
    for _, attrs in page.tags:
        for key, value in attrs.items():
            if key in ("src", "href", "xlink:href", "srcset", "action", "data", "poster"):
                assert value.startswith("#"), f"{key}={value!r} reaches outside the page"
            assert not key.startswith("on"), f"event handler {key}"
    assert not re.search(r"url\(\s*(?!#)", text) and "@import" not in text
    assert [a["id"] for t, a in page.tags if t == "section"] == \
        ["summary", "graph-before", "graph-after", "latency", "memory"]  # float, dense


def test_graph_before_and_after_the_passes(plain):
    model, out, _, page = plain
    manifest = json.loads((out / "manifest.json").read_text())
    before, after = page.text["graph-before"], page.text["graph-after"]
    assert "BatchNormalization" in before and "bn1" in before and "relu1" in before
    assert "BatchNormalization" not in after and "bn1" not in after
    onnx_nodes = {n.name for n in model.graph.node}
    for s in manifest["kernel_strategies"]:  # the fused nodes, as the kernels name them
        assert s["node"] in after and s["op"] in after
        assert s["node"] in onnx_nodes or s["node"] not in before
    assert "conv1_nchwc" in after  # conv1, bn1 and relu1 in one blocked convolution
    ops = {r["op"]: (int(r["before"]), int(r["after"])) for r in page.records("ops")}
    assert {op: n for op, (n, _) in ops.items() if n} == Counter(n.op_type
                                                                 for n in model.graph.node)
    assert {op: n for op, (_, n) in ops.items() if n} == manifest["ops"]


@pytest.mark.parametrize("build", ["plain", "llvm_quantized"])
def test_latency_of_every_kernel(build, request):
    _, out, text, page = request.getfixturevalue(build)
    manifest = json.loads((out / "manifest.json").read_text())
    rows = page.records("latency-kernels")
    assert [r["kernel"] for r in rows] == [s["kernel"] for s in manifest["kernel_strategies"]]
    us = [float(r["us per run"]) for r in rows]
    assert all(t >= 0 for t in us) and sum(us) > 0
    shares = [float(r["share"].rstrip("%")) for r in rows]
    assert sum(shares) == pytest.approx(100, abs=0.1 * len(rows))
    assert 'class="plot"' in section(text, "latency")


def test_llvm_backend_latency_per_layer(llvm_quantized):
    """The quantization report's share of the latency per layer, timed through the LLVM
    backend's kernel names: every layer took some, and with the rest it adds up."""
    _, out, _, _ = llvm_quantized
    q = json.loads((out / "quantization.json").read_text())
    assert "latency_note" not in q, q["latency_note"]
    assert all(x["latency_share"] > 0 for x in q["layers"]), q["layers"]
    assert sum(x["latency_share"] for x in q["layers"]) + q["other_latency_share"] == \
        pytest.approx(1, abs=1e-3)


def section(text: str, key: str) -> str:
    """The HTML of the page's section `key`."""
    return text[text.index(f'<section id="{key}">'):].split("</section>", 1)[0]


def test_memory_timeline_is_the_plan(plain):
    _, out, _, page = plain
    manifest = json.loads((out / "manifest.json").read_text())
    assert int(page.facts("memory-summary")["arena bytes"]) == \
        manifest["memory"]["arena_bytes"]
    # report.txt's plan: "memory plan: N activations ..." then "  value offset bytes live"
    report = (out / "report.txt").read_text().splitlines()
    at = next(i for i, s in enumerate(report) if s.startswith("memory plan: "))
    count = int(report[at].split()[2])
    listed = {}
    for line in report[at + 2:at + 2 + count]:
        value, offset, size = line.split()[:3]
        listed[value] = (int(offset), int(size))
    buffers = page.records("memory-buffers")
    assert len(buffers) == count == int(page.facts("memory-summary")["buffers"])
    assert {b["value"]: (int(b["offset"]), int(b["bytes"])) for b in buffers} == listed
    # the plot draws each buffer once
    assert len(re.findall(r'<g id="memory-plot-buffer-\d+"', section(plain[2], "memory"))) \
        == count
    # what a plan must be: no two buffers live at once share a byte, all in the arena
    spans = [(int(b["offset"]), int(b["offset"]) + int(b["bytes"]),
              int(b["first use"].split()[0]), int(b["last use"].split()[0])) for b in buffers]
    for i, (o1, e1, a1, z1) in enumerate(spans):
        assert e1 <= manifest["memory"]["arena_bytes"]
        for o2, e2, a2, z2 in spans[i + 1:]:
            assert not (a1 <= z2 and a2 <= z1 and o1 < e2 and o2 < e1)


def test_quantization_error_per_layer(quantized):
    _, out, _, page = quantized
    q = json.loads((out / "quantization.json").read_text())
    rows = {r["layer"]: r for r in page.records("quantization-layers")}
    other = rows.pop("other kernels")
    assert set(rows) == {x["node"] for x in q["layers"]} == {"conv1", "conv2", "fc"}
    shares = [float(r["share of latency"].rstrip("%")) for r in [*rows.values(), other]]
    assert sum(shares) == pytest.approx(100, abs=0.05 * len(shares))
    for x in q["layers"]:
        cell = rows[x["node"]]["SQNR (dB)"]
        assert (cell == "-") if x["sqnr_db"] is None else float(cell) == x["sqnr_db"]
    assert f"{q['output_sqnr_db']} dB" in page.text["quantization"]
    assert 'class="plot"' in section(quantized[2], "quantization")


def zero_shares(page: Page, layers) -> dict[str, float]:
    """The page's share of zero weights of each of `layers` (ONNX node names: the layer
    after the passes is named after it)."""
    rows = page.records("sparsity-layers")
    found = {}
    for layer in layers:
        match = [r for r in rows if r["layer"].startswith(layer)]
        assert len(match) == 1, f"{layer}: {[r['layer'] for r in rows]}"
        found[layer] = float(match[0]["zero weights"])
    return found


def check_pruned(model, page: Page, sparsity: float) -> dict[str, int]:
    """Each layer's share of zeros on the page is what magnitude pruning by `sparsity` makes
    of its n weights (none was zero): round(sparsity n) / n. Returns {layer: n}."""
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    layers = {n.name: weights[n.input[1]].size for n in model.graph.node
              if n.op_type in ("Conv", "Gemm")}
    for layer, share in zero_shares(page, layers).items():
        n = layers[layer]
        assert share == pytest.approx(round(sparsity * n) / n, abs=1e-4), layer
    return layers


def test_sparsity_of_a_pruned_model(tmp_path_factory):
    model, out, _, page = compile_with_report(tmp_path_factory, "pruned", "--prune", "0.9")
    check_pruned(model, page, 0.9)
    kernels = {s["kernel"] for s in json.loads((out / "manifest.json").read_text())
               ["kernel_strategies"]}
    assert all(r["kernel"] in kernels for r in page.records("sparsity-layers"))


@pytest.mark.parametrize("calibrated", [True, False], ids=["int8", "weights-only"])
def test_sparsity_of_a_pruned_and_quantized_model(tmp_path_factory, calibrated):
    """Integer layers have no sparse kernel: their zeros are listed all the same, with the
    integer kernel that runs them dense. Weights-only layers are float layers whose weights
    dequantize-weights computed at compile time: sparsify gives them sparse kernels as it
    gives a pruned float model's."""
    calib = ["--calib", str(calib_samples(tmp_path_factory))] if calibrated else []
    model, out, _, page = compile_with_report(tmp_path_factory, "pruned_q", "--prune", "0.9",
                                              "--prune-pattern", "unstructured",
                                              "--quantize", "int8", *calib)
    layers = check_pruned(model, page, 0.9)
    manifest = json.loads((out / "manifest.json").read_text())
    ops = {s["kernel"]: s["op"] for s in manifest["kernel_strategies"]}
    rows = page.records("sparsity-layers")
    if calibrated:
        assert not any(r["stored as"].endswith("sparse") for r in rows)  # packed dense
        assert {ops[r["kernel"]] for r in rows} == {"BlockedQLinearConv", "QGemm"}
        assert all(r["density"] == "-" and "sparse" not in r["kernel strategy"] for r in rows)
    else:
        # the small Gemm: sparsify's cost model keeps it dense
        assert {ops[r["kernel"]] for r in rows} == {"SparseConv", "FusedMatMul"}
        assert all((r["density"] != "-") == (ops[r["kernel"]] == "SparseConv")
                   for r in rows), rows
    zeros = sum(round(0.9 * n) for n in layers.values())
    total = sum(layers.values())
    assert (f"pruned (unstructured, sparsity 0.9, scope layer): 3 layers, "
            f"{zeros / total:.1%} of their {total} weights zero") in \
        (out / "report.txt").read_text()


def test_sparsity_already_in_the_weights(tmp_path_factory):
    """Zeros a model was trained with, a different share per layer: the layers that stay
    dense (conv1 at 30%) are listed too."""
    model, _, _, page = compile_with_report(tmp_path_factory, "zeros",
                                            zeros={"w1": 0.3, "w2": 0.8, "wf": 0.65})
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    want = {n.name: float(np.mean(weights[n.input[1]] == 0)) for n in model.graph.node
            if n.op_type in ("Conv", "Gemm")}
    got = zero_shares(page, want)
    assert got == pytest.approx(want, abs=1e-4)
    stored = {r["layer"]: r["stored as"] for r in page.records("sparsity-layers")}
    assert next(v for k, v in stored.items() if k.startswith("conv1")) == "dense"


def test_hostile_names_stay_text(tmp_path_factory):
    _, _, text, page = compile_with_report(tmp_path_factory, "hostile", "--prune", "0.9",
                                           conv1=HOSTILE_NODE, output=HOSTILE_VALUE)
    assert "<script" not in text.lower() and HOSTILE_NODE not in text
    assert "script" not in {t for t, _ in page.tags}
    # and yet shown, as text: in the drawings, the text IR and the tables
    assert HOSTILE_NODE in page.text["graph-before"]
    assert HOSTILE_VALUE in page.text["graph-after"]
    assert any(r["layer"].startswith(HOSTILE_NODE) for r in page.records("sparsity-layers"))


def test_cross_target_says_latency_was_not_measured(tmp_path_factory):
    _, out, text, page = compile_with_report(tmp_path_factory, "arm", "--target", "arm64")
    assert "cannot run arm64 code" in page.text["latency"]
    assert 'class="plot"' not in section(text, "latency")
    kernels = json.loads((out / "manifest.json").read_text())["kernel_strategies"]
    assert [r["kernel"] for r in page.records("latency-kernels")] == [s["kernel"] for s in kernels]


def test_no_report_unless_asked(tmp_path):
    convnet(tmp_path / "m.onnx")
    art = edgec.compile(tmp_path / "m.onnx", tmp_path / "out", target="c-generic")
    assert "report_html" not in art.manifest and not (art.out_dir / "report.html").exists()
    with pytest.raises(EdgecError, match="report='pdf'"):
        edgec.compile(tmp_path / "m.onnx", tmp_path / "out2", report="pdf")


# -- ResNet blocks pruned 16x4 and quantized: the figures of the kernels that run them ----
def small_resnet(path: Path) -> None:
    """ResNet-18's stem and two of its blocks (edgec.zoo) at [1, 3, 32, 32], 16 and 32
    channels: a residual add fused into its convolution's kernel, a stride-2 convolution, a
    downsample one, and torch's long names, which the kernels' names cut at 60 characters
    ('k18_layer2_layer2_0_downsample_downsample_1_BatchNormalizati')."""
    from edgec.zoo.builder import Builder
    from edgec.zoo.cnns import _basic_block

    b = Builder(0, 13)
    x = b.node("Relu", [b.bn(b.conv("input", "conv1", "/conv1", 3, 16, 3), "bn1", "/bn1", 16)],
               "/relu")
    x = _basic_block(b, x, "layer1.0", 16, 16, 1)
    x = _basic_block(b, x, "layer2.0", 16, 32, 2)
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x], "/avgpool")], "", axis=1)
    x = b.gemm(x, "fc", "/fc", 32, 10)
    onnx.save(b.model("main_graph", {"input": [1, 3, 32, 32]}, "output", [1, 10], x), path)


def compile_resnet(tmp_path_factory, *flags: str) -> tuple[Path, Page]:
    """small_resnet pruned to 0.8 in 16x4 blocks, compiled with `flags` and a report."""
    d = tmp_path_factory.mktemp("resnet")
    small_resnet(d / "resnet.onnx")
    out = d / "out"
    assert main(["compile", str(d / "resnet.onnx"), "-o", str(out), "--prune", "0.8",
                 "--prune-pattern", "16x4", "--report", "html", *flags]) == 0
    return out, Page((out / "report.html").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pruned_int8(tmp_path_factory):
    calib = tmp_path_factory.mktemp("calib") / "calib.npz"
    np.savez(calib, input=np.random.default_rng(1).standard_normal((8, 3, 32, 32)).astype("f4"))
    return compile_resnet(tmp_path_factory, "--quantize", "int8", "--calib", str(calib))


@pytest.fixture(scope="module")
def pruned_float(tmp_path_factory):
    return compile_resnet(tmp_path_factory)


def report_kernels(out: Path) -> dict[str, str]:
    """report.txt's kernel lines, '  <node> <op>: <typed strategy>: <strategy described>',
    the described strategy by node."""
    lines = (out / "report.txt").read_text().splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("kernels (node, op: ")) + 1
    end = lines.index("", at)
    return {s.split()[0]: s.split(": ", 2)[2] for s in lines[at:end]}


@pytest.mark.parametrize("build", ["pruned_int8", "pruned_float"])
def test_sparsity_is_what_the_kernels_run(build, request):
    """Each pruned layer's row names the kernel that runs it, with that kernel's strategy as
    the manifest and report.txt give it, and the density it computes: for a convolution
    pruned in the kernels' blocks, 1 - its zeros (the share of its own weights, not of the
    stride phases' taps: 0.11 for the stride-2 one at 80% before)."""
    out, page = request.getfixturevalue(build)
    manifest = json.loads((out / "manifest.json").read_text())
    kernels = {s["kernel"]: s for s in manifest["kernel_strategies"]}
    described = report_kernels(out)
    zeros = {x["node"]: x["zeros"] for x in manifest["pruning"]["layers"]}
    rows = page.records("sparsity-layers")
    # a float layer's row names its node, the layer's name and a suffix the passes added
    layers = [next(x for x in zeros if r["layer"].startswith(x)) for r in rows]
    assert layers == list(zeros)
    for layer, r in zip(layers, rows):
        k = kernels[r["kernel"]]
        text = described[k["node"]]
        assert r["kernel strategy"] == k["strategy"] and text.startswith(k["strategy"])
        assert float(r["zero weights"]) == pytest.approx(zeros[layer], abs=1e-4)
        if "Conv" not in r["op"] and "sparse" not in k["strategy"]:
            # the classifier (32 -> 10, 75% zeros) may run dense where the CPU family's costs
            # say so (sparsify's matrix-vector rates, targets/uarch.py): its row says so
            assert r["stored as"] == "dense", r
            continue
        assert "sparse" in k["strategy"], r  # 80% in blocks: every convolution runs sparse
        density = float(re.search(r"density (\d\.\d+)", text).group(1))
        assert float(r["density"]) == density
        if r["op"] in ("Conv", "SparseConv"):
            assert density == pytest.approx(1 - zeros[layer], abs=0.01), r
        assert r["stored as"] != "dense"
    convs = [r for r in rows if "Conv" in r["op"]]
    assert len(convs) == 6
    if build == "pruned_int8":
        assert all(r["kernel strategy"].startswith("sparse int8 conv") for r in convs)
        # the residual add runs in a convolution's kernel: its row names that kernel
        assert any("residual add fused" in r["kernel strategy"] for r in convs)


def test_latency_share_of_every_layer(pruned_int8):
    """The quantization table's share of latency per layer is quantization.json's, every
    convolution's is measured (those with a fused residual and the downsample ones too,
    whose kernels' names are cut), and with the other kernels the column makes 100%."""
    out, page = pruned_int8
    q = json.loads((out / "quantization.json").read_text())
    assert "latency_note" not in q, q["latency_note"]
    rows = {r["layer"]: r["share of latency"] for r in page.records("quantization-layers")}
    assert rows.pop("other kernels") == f"{q['other_latency_share']:.1%}"
    assert list(rows) == [x["node"] for x in q["layers"]]
    for x in q["layers"]:
        if x.get("in_kernel_of"):
            assert rows[x["node"]] == f"in the kernel of {x['in_kernel_of']}"
            assert x["in_kernel_of"] in rows and x["latency_share"] == 0
        else:
            assert rows[x["node"]] == f"{x['latency_share']:.1%}"
        if x["op"] == "Conv":
            assert x["latency_share"] > 0, x
    assert any(x.get("in_kernel_of") for x in q["layers"])
    assert sum(x["latency_share"] for x in q["layers"]) + q["other_latency_share"] == \
        pytest.approx(1, abs=1e-3)
    # the other kernels are those of no layer: layout changes, padding, pooling, the edges;
    # how big their share is is a timing (0.52 once on a Zen 5, under 0.5 before): only that
    # both sides are timed is checked
    assert 0 < q["other_latency_share"] < 1


def test_ids_are_unique(pruned_int8):
    _, page = pruned_int8
    ids = Counter(a["id"] for _, a in page.tags if "id" in a)
    assert not [i for i, n in ids.items() if n > 1]


# measurements of the page as laid out, written into it for --dump-dom to show
MEASURE = """<script>
const fits = e => e.getBoundingClientRect().right <= document.documentElement.clientWidth;
const out = {
  window: document.documentElement.clientWidth,
  page: document.documentElement.scrollWidth,
  tables: [...document.querySelectorAll("table")].map(t => ({id: t.id, fits: fits(t),
    scrolls: t.parentElement.scrollWidth > t.parentElement.clientWidth})),
  plots: [...document.querySelectorAll("svg.plot, svg.graph")].map(s => ({
    section: s.closest("section").id, width: s.getBoundingClientRect().width,
    height: s.getBoundingClientRect().height, fits: fits(s)})),
};
const pre = document.createElement("pre");
pre.id = "measured";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def chromium() -> str:
    """Debian's chromium; a skip where it is missing, a failure in CI (.ci/run installs it)."""
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (apt-get install chromium; .ci/run does)")
        pytest.skip("needs chromium (apt-get install chromium)")
    return path


def test_page_fits_a_1400_pixel_window(pruned_int8, tmp_path):
    """The page as a user sees it, laid out by headless Chromium in a 1400-pixel window: no
    table wider than its box or the window, nothing wider than the window, and every plot
    drawn (the graphs, latency, memory, quantization, sparsity)."""
    out, _ = pruned_int8
    text = (out / "report.html").read_text(encoding="utf-8")
    # a copy that runs the measuring script: the page's own policy forbids scripts
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    (tmp_path / "page.html").write_text(text.replace("</body>", MEASURE + "</body>"),
                                        encoding="utf-8")
    run = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900", "--dump-dom",
         (tmp_path / "page.html").as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="measured">(.*?)</pre>', run.stdout, re.S)
    assert found, run.stderr[-2000:]
    m = json.loads(unescape(found.group(1)))
    assert 1300 <= m["window"] <= 1400 and m["page"] <= m["window"], m
    assert [t for t in m["tables"] if not t["fits"] or t["scrolls"]] == []
    assert {t["id"] for t in m["tables"]} >= {"facts", "ops", "latency-kernels",
                                              "memory-summary", "quantization-layers",
                                              "sparsity-layers"}
    plots = Counter(p["section"] for p in m["plots"] if p["width"] > 100 and p["height"] > 100
                    and p["fits"])
    assert plots == {"graph-before": 1, "graph-after": 1, "latency": 1, "memory": 1,
                     "quantization": 1, "sparsity": 1}, m["plots"]


def test_graph_rows_are_the_depths_worked_by_hand():
    """x -> Relu a -> Add b(a, x) -> Add d(b, n) -> output, n = Neg(constant): a row per
    depth, d = 1 + the deepest producer's (x 0, a 1, b 2, d 3, the output 4), and n, of
    constants only, in the row below the inputs' (1) though nothing computed feeds it."""
    from edgec.compiler.report_html import BOX_H, GAP_Y, graph_svg
    from edgec.ir import DType, Graph, TensorType

    g = Graph("g")
    x = g.add_input("x", TensorType((4,), DType.F32))
    a = g.add_node("Relu", [x], name="a").output
    b = g.add_node("Add", [a, x], name="b").output
    n = g.add_node("Neg", [g.const(np.ones(4, np.float32), "k")], name="n").output
    g.outputs = [g.add_node("Add", [b, n], name="d").output]
    svg = graph_svg(g, "t")
    ys = re.findall(r'<rect x="[^"]*" y="(\d+)"', svg)
    assert [(int(y) - GAP_Y) // (BOX_H + GAP_Y) for y in ys] == [0, 1, 2, 1, 3, 4]  # x..output
    assert svg.count("marker-end=") == 6  # x->a, a->b, x->b, b->d, n->d, d->output
