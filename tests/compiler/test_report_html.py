"""`edgec compile --report html`: one page that loads nothing, with the graph before and after
the passes, each kernel's latency, the arena's buffers over time and, where they apply, each
layer's quantization error and sparsity. The page is read with html.parser and checked against
what else the compile wrote (manifest.json, report.txt, quantization.json) and against the
model's own weights; a hostile name stays text."""

from __future__ import annotations

import json
import re
from collections import Counter
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
    rows = page.records("latency")
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
    assert len(re.findall(r'<g id="buffer-\d+"', section(plain[2], "memory"))) == count
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
    rows = {r["layer"]: r for r in page.records("quantization")}
    assert set(rows) == {x["node"] for x in q["layers"]} == {"conv1", "conv2", "fc"}
    for x in q["layers"]:
        cell = rows[x["node"]]["SQNR (dB)"]
        assert (cell == "-") if x["sqnr_db"] is None else float(cell) == x["sqnr_db"]
    assert f"{q['output_sqnr_db']} dB" in page.text["quantization"]
    assert 'class="plot"' in section(quantized[2], "quantization")


def zero_shares(page: Page, layers) -> dict[str, float]:
    """The page's share of zero weights of each of `layers` (ONNX node names: the layer
    after the passes is named after it)."""
    rows = page.records("sparsity")
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
    assert all(r["kernel"] in kernels for r in page.records("sparsity"))


@pytest.mark.parametrize("calibrated", [True, False], ids=["int8", "weights-only"])
def test_sparsity_of_a_pruned_and_quantized_model(tmp_path_factory, calibrated):
    """Quantized layers have no sparse kernel: their zeros are listed all the same, with the
    integer kernel (or the float one reading weights dequantized at run time) that runs
    them dense."""
    calib = ["--calib", str(calib_samples(tmp_path_factory))] if calibrated else []
    model, out, _, page = compile_with_report(tmp_path_factory, "pruned_q", "--prune", "0.9",
                                              "--quantize", "int8", *calib)
    layers = check_pruned(model, page, 0.9)
    manifest = json.loads((out / "manifest.json").read_text())
    ops = {s["kernel"]: s["op"] for s in manifest["kernel_strategies"]}
    rows = page.records("sparsity")
    assert {r["stored as"] for r in rows} == {"dense"}
    want = {"BlockedQLinearConv", "QGemm"} if calibrated else {"FusedConv", "Gemm"}
    assert {ops[r["kernel"]] for r in rows} == want
    assert "run dense" in page.text["sparsity"]
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
    stored = {r["layer"]: r["stored as"] for r in page.records("sparsity")}
    assert next(v for k, v in stored.items() if k.startswith("conv1")) == "dense"


def test_hostile_names_stay_text(tmp_path_factory):
    _, _, text, page = compile_with_report(tmp_path_factory, "hostile", "--prune", "0.9",
                                           conv1=HOSTILE_NODE, output=HOSTILE_VALUE)
    assert "<script" not in text.lower() and HOSTILE_NODE not in text
    assert "script" not in {t for t, _ in page.tags}
    # and yet shown, as text: in the drawings, the text IR and the tables
    assert HOSTILE_NODE in page.text["graph-before"]
    assert HOSTILE_VALUE in page.text["graph-after"]
    assert any(r["layer"].startswith(HOSTILE_NODE) for r in page.records("sparsity"))


def test_cross_target_says_latency_was_not_measured(tmp_path_factory):
    _, out, text, page = compile_with_report(tmp_path_factory, "arm", "--target", "arm64")
    assert "cannot run arm64 code" in page.text["latency"]
    assert 'class="plot"' not in section(text, "latency")
    kernels = json.loads((out / "manifest.json").read_text())["kernel_strategies"]
    assert [r["kernel"] for r in page.records("latency")] == [s["kernel"] for s in kernels]


def test_no_report_unless_asked(tmp_path):
    convnet(tmp_path / "m.onnx")
    art = edgec.compile(tmp_path / "m.onnx", tmp_path / "out", target="c-generic")
    assert "report_html" not in art.manifest and not (art.out_dir / "report.html").exists()
    with pytest.raises(EdgecError, match="report='pdf'"):
        edgec.compile(tmp_path / "m.onnx", tmp_path / "out2", report="pdf")
