"""The `quantize` pass and its calibration: observers and parameters against values worked out
by hand, the pass on small CNNs (integer ops after fuse-qdq, bit-exact compiled kernels,
close to the float model), the data-free mode, skipped nodes, the CLI and its errors."""

from __future__ import annotations

import io
import json
import math
import sys

import numpy as np
import onnx
import pytest
from convnets import OnnxNet, onnxruntime_outputs, small_resnet
from onnx import numpy_helper

import edgec
from edgec.compiler.cli import main
from edgec.compiler.driver import compile_graph, load_graph
from edgec.errors import EdgecError, PassError
from edgec.ir import DType, interpret
from edgec.passes import default_pipeline, parse_pipeline, run_pipeline
from edgec.passes.calibration import Observer, activation_params, sqnr_db, weight_params
from edgec.passes.manager import PipelineStep
from edgec.passes.quantize import Quantize
from edgec.targets.target import get_target, pair_sums

# -- calibration, by hand ------------------------------------------------------------------------

def test_minmax_range_contains_zero():
    o = Observer()
    o.update(np.array([0.5, 2.0, 1.0], np.float32))
    o.update(np.array([3.0, 0.25], np.float32))
    assert o.range("minmax") == (0.0, 3.0)
    o.update(np.array([-1.5], np.float32))
    assert o.range("minmax") == (-1.5, 3.0)


def test_percentile_clips_a_rare_outlier():
    o = Observer()
    o.update(np.concatenate([np.linspace(0, 1, 100_000), [50.0]]).astype(np.float32))
    lo, hi = o.range("percentile", 99.9)
    assert lo == 0.0 and 0.99 <= hi <= 1.05  # the 50 is one value in 100001
    assert o.range("minmax")[1] == 50.0


def fake_quant(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    s, z = activation_params(lo, hi, symmetric=False)
    return (np.clip(np.rint(x / s) + int(z), 0, 255) - int(z)) * s


def test_kl_threshold_clips_a_long_tail():
    # a Laplacian's long tail: the entropy threshold clips it, and the clipped range's finer
    # steps lose less than min-max's over the whole tensor
    x = np.random.default_rng(0).laplace(0, 1, 200_000).astype(np.float32)
    o = Observer()
    o.update(x)
    lo, hi = o.range("kl")
    top = float(np.abs(x).max())
    assert 2.0 < hi < 0.9 * top and lo == -hi
    mse = {m: float(((fake_quant(x, *o.range(m)) - x) ** 2).mean()) for m in ("kl", "minmax")}
    assert mse["kl"] < mse["minmax"], mse


def test_activation_params_by_hand():
    s, z = activation_params(-1.0, 3.0, symmetric=False)
    assert s == np.float32(4 / 255) and z == 64  # rint(1 / (4/255)) = rint(63.75)
    s, z = activation_params(-1.0, 3.0, symmetric=True)
    assert s == np.float32(6 / 255) and z == 128
    s, z = activation_params(0.0, 0.0, symmetric=False)  # a tensor that is always 0
    assert s == 1.0 and z == 0


def test_weight_params_minmax_by_hand():
    w = np.array([[1.0, -0.5, 0.25], [0.1, 0.2, -0.4]], np.float32)
    codes, scales = weight_params(w, 8, 0, "minmax")
    np.testing.assert_array_equal(scales, np.float32([1 / 127, 0.4 / 127]))
    np.testing.assert_array_equal(codes, [[127, -64, 32], [32, 64, -127]])
    codes4, scales4 = weight_params(w, 4, None, "minmax")
    assert scales4 == np.float32(1 / 7) and codes4.min() >= -7 and codes4.max() <= 7


def test_an_all_zero_channel_takes_the_others_median_scale():
    """A pruned channel (all zeros) codes zeros at any scale; it takes the median of the
    others' (1/127, 0.4/127, 0.6/127 -> 0.6/127), so that its bias and requantization
    multiplier stay in their range (at 1.0, fixed point refused a pruned ResNet-18)."""
    w = np.array([[1.0, -0.5], [0.0, 0.0], [0.1, -0.4], [0.6, 0.2]], np.float32)
    codes, scales = weight_params(w, 8, 0, "minmax")
    np.testing.assert_allclose(scales, np.float32([1 / 127, 0.6 / 127, 0.4 / 127, 0.6 / 127]),
                               rtol=1e-7)
    assert not codes[1].any()
    _, alone = weight_params(np.zeros((2, 3), np.float32), 8, 0, "minmax")
    np.testing.assert_array_equal(alone, [1.0, 1.0])  # (no channel to take it from)


@pytest.mark.parametrize("bits", [4, 3, 2])
def test_admm_fits_low_bit_weights_better_than_minmax(bits):
    # 16 output channels of a 3x3 convolution over 64 channels
    w = np.random.default_rng(1).standard_normal((16, 576)).astype(np.float32)
    errs = {}
    for method in ("minmax", "admm"):
        codes, scales = weight_params(w, bits, 0, method)
        assert np.abs(codes).max() <= 2 ** (bits - 1) - 1
        errs[method] = sqnr_db(w, codes * scales[:, None])
    assert errs["admm"] > errs["minmax"] + 0.5, errs


def test_sqnr_by_hand():
    assert sqnr_db(np.array([3.0, 4.0]), np.array([3.0, 4.0])) == math.inf
    assert abs(sqnr_db(np.array([3.0, 4.0]), np.array([3.0, 3.5])) - 10 * math.log10(100)) < 1e-9


# -- the pass --------------------------------------------------------------------------------

def mobile_net(size: int = 16):
    """Conv-Relu, depthwise Conv-Clip(0, 6), pointwise conv, a residual Add, MaxPool, GAP,
    Gemm: the activations edgec's quantizer folds into the integer ops."""
    n = OnnxNet("mobile")
    x = n.node("Relu", [n.conv(n.input("input", [1, 3, size, size]), 3, 16, 3)])
    lo, hi = n.const(np.float32(0.0)), n.const(np.float32(6.0))
    d = n.node("Clip", [n.conv(x, 16, 16, 3, group=16), lo, hi])
    p = n.conv(d, 16, 16, 1)
    r = n.node("Add", [p, x])
    m = n.node("MaxPool", [r], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])
    g = n.node("Flatten", [n.node("GlobalAveragePool", [m])], axis=1)
    n.output(n.node("Gemm", [g, n.weight((10, 16)), n.weight((10,), 0.1)], name="logits",
                    transB=1))
    return n.model()


def calib_feeds(model, n: int = 8, seed: int = 3) -> dict[str, np.ndarray]:
    i = model.graph.input[0]
    shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    return {i.name: rng.standard_normal((n, *shape[1:])).astype(np.float32)}


def quantized(model, **opts):
    g = load_graph(model)
    steps = parse_pipeline("fold-constants,remove-identity,dce,fold-batchnorm,fold-constants")
    steps.append(PipelineStep(Quantize(**opts, log=io.StringIO())))
    steps += parse_pipeline("fuse-qdq,fuse,dce")
    run_pipeline(g, steps, out=io.StringIO())
    return g


@pytest.mark.parametrize("make", [small_resnet, mobile_net], ids=["resnet", "mobile"])
@pytest.mark.parametrize("calib", ["minmax", "percentile", "kl"])
def test_quantized_graph_runs_integer_ops_close_to_float(make, calib):
    m = make(16) if make is small_resnet else make()
    g = quantized(m, feeds=calib_feeds(m), calib=calib)
    ops = g.op_counts()
    assert not {"Conv", "FusedConv", "Gemm", "Relu", "Clip"} & set(ops), ops
    assert ops["QLinearConv"] >= 3 and ops["QGemm"] == 1, ops
    x = calib_feeds(m, 1, seed=11)
    x = {k: v[0][None] if v.shape[0] == 1 else v for k, v in x.items()}
    want = onnxruntime_outputs(m, x)
    got = interpret(g, x)
    for name, w in want.items():
        err = float(np.abs(got[name] - w).max() / np.abs(w).max())
        assert err < 0.08, f"{name}: {err:.3f} of the float output's range ({calib})"


def test_compiled_quantized_model_is_bit_exact_with_its_graph(tmp_path):
    m = mobile_net()
    feeds = calib_feeds(m)
    art = edgec.compile(m, tmp_path, name="mq", quantize="int8", calib=feeds,
                        log=io.StringIO())
    assert "quantize" in art.manifest["pipeline"]
    ops = {r["op"] for r in art.manifest["kernel_strategies"]}
    assert {"BlockedQLinearConv", "QGemm"} <= ops and "QLinearAdd" not in ops, ops
    assert any("residual add fused" in r["strategy"] for r in art.manifest["kernel_strategies"])
    # the library's own quantization: on an AVX2 CPU without AVX-VNNI the host's build fits
    # 8-bit weights to vpmaddubsw's pair sums (targets.pair_sums)
    graph = quantized(m, feeds=feeds, pairs=pair_sums(get_target("x86")))
    lib = edgec.load(tmp_path)
    for k in range(3):
        x = {"input": np.random.default_rng(20 + k).standard_normal((1, 3, 16, 16))
             .astype(np.float32)}
        got, want = lib.run(x), interpret(graph, x)
        np.testing.assert_array_equal(got["logits"], want["logits"])


def test_seven_bit_weights_take_vpmaddubsw_on_avx2(tmp_path):
    """bits=7: codes in [-63, 63], so every dense int8 layer's dot4 on x86-avx2 is
    vpmaddubsw + vpmaddwd (8 bits keep the widened form), bit-exact with the graph."""
    t = get_target("x86-avx2")
    m = mobile_net()
    feeds = calib_feeds(m)
    x = {"input": np.random.default_rng(20).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    for bits in (8, 7):
        g = quantized(m, feeds=feeds, bits=bits)
        art = compile_graph(g.copy(), tmp_path / f"q{bits}", target="x86-avx2", name=f"q{bits}",
                            pipeline=default_pipeline(t.lanes(DType.F32), t.registers))
        dense = [r["strategy"] for r in art.manifest["kernel_strategies"]
                 if r["op"] in ("BlockedQLinearConv", "QGemm") and "depthwise" not in r["strategy"]]
        assert len(dense) == 3 and all(("dot4 as vpmaddubsw" in s) == (bits == 7)
                                       for s in dense), dense
        np.testing.assert_array_equal(edgec.load(art.out_dir).run(x)["logits"],
                                      interpret(g, x)["logits"])


def test_data_free_quantizes_the_weights_only_and_says_so():
    m = small_resnet(16)
    log = io.StringIO()
    g = load_graph(m)
    run_pipeline(g, [PipelineStep(Quantize(bits=4, log=log))], out=io.StringIO())
    assert "data-free, weights only (4-bit, admm)" in log.getvalue()
    ops = g.op_counts()
    assert "QuantizeLinear" not in ops and ops["DequantizeLinear"] == ops["Conv"] + 1
    for n in g.nodes:
        if n.op == "DequantizeLinear":  # 4-bit codes in int8, as their type says
            assert np.abs(n.inputs[0].const).max() <= 7
            q = n.inputs[0].type.quant
            assert q.bits == 4 and q.axis == 0 and len(q.scale) == n.inputs[0].shape[0]
            np.testing.assert_array_equal(np.float32(q.scale), n.inputs[1].const)


@pytest.mark.parametrize("target", ["x86", "c-generic"])
def test_data_free_weights_run_the_float_kernels(target, tmp_path):
    """The weights-only graph's DequantizeLinear are folded by dequantize-weights: every
    convolution and the Gemm keep the kernels of the float build (none reads its weights as
    an input on conv-rows), and the library computes what the weights-only graph does."""
    m = small_resnet(16)
    g = load_graph(m)
    run_pipeline(g, [PipelineStep(Quantize(bits=8, log=io.StringIO()))], out=io.StringIO())
    ref = g.copy()
    t = get_target(target)
    pipe = default_pipeline(t.lanes(DType.F32), t.registers)
    art = compile_graph(g, tmp_path / "q", target=target, name="q", pipeline=pipe)
    float_art = compile_graph(load_graph(m), tmp_path / "f", target=target, name="f",
                              pipeline=pipe)

    def strategies(a):  # (int8 codes converted in registers: the float kernels' own tiles)
        return [(r["op"], r["strategy"].split(":")[0].removesuffix(", int8 weights"))
                for r in a.manifest["kernel_strategies"]
                if "Conv" in r["op"] or r["op"] in ("Gemm", "MatMul")]

    assert strategies(art) == strategies(float_art) and strategies(art)
    assert not any("DequantizeLinear" in r["op"] for r in art.manifest["kernel_strategies"])
    x = {"input": np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    np.testing.assert_allclose(edgec.load(art.out_dir).run(x)["logits"],
                               interpret(ref, x)["logits"], rtol=1e-4, atol=1e-4)


def coded_net():
    """Convolutions large enough that their weights are stored as int8 codes (a plain-input
    stem, a 3 x 3 and a 1 x 1; 40 and 72 channels: no whole number of blocks), and a Gemm;
    each weight at least 16 KiB as float (lowering/kernels/common.py CODES_MIN_BYTES)."""
    n = OnnxNet("coded", seed=5)
    x = n.node("Relu", [n.conv(n.input("input", [1, 12, 32, 32]), 12, 40, 3)])
    y = n.conv(n.node("Relu", [n.conv(x, 40, 72, 3)]), 72, 72, 1)
    g = n.node("Flatten", [n.node("GlobalAveragePool", [y])], axis=1)
    n.output(y, n.node("Gemm", [g, n.weight((80, 72)), n.weight((80,), 0.1)], name="logits",
                       transB=1))
    return n.model()


def dequantized_weights(m):
    """The model with each Conv's and Gemm's weight replaced by the float values that
    `--quantize int8` without samples gives it (codes x scales), and those values."""
    g = load_graph(m)
    steps = parse_pipeline("fold-constants,remove-identity,dce")
    run_pipeline(g, [*steps, PipelineStep(Quantize(bits=8, log=io.StringIO()))],
                 out=io.StringIO())
    dq = {n.output.users()[0].name: n for n in g.nodes if n.op == "DequantizeLinear"}
    values = [interpret_node(dq[n.name]) for n in g.nodes if n.name in dq]  # in node order
    out = onnx.ModelProto()
    out.CopyFrom(m)
    inits = {t.name: t for t in out.graph.initializer}
    layers = [n for n in out.graph.node if n.op_type in ("Conv", "Gemm")]
    assert len(layers) == len(values)
    for node, v in zip(layers, values, strict=True):
        inits[node.input[1]].CopyFrom(numpy_helper.from_array(v, node.input[1]))
    return out, values


def interpret_node(n):
    from edgec.ir.interpreter import run_node

    return run_node(n, [v.const for v in n.inputs if v is not None])[0]


@pytest.mark.parametrize("target,backend", [("x86", "c"), ("x86-avx2", "c"), ("x86", "llvm"),
                                            ("arm64", "c")])
def test_weights_only_int8_stores_codes_and_computes_the_float_weights(target, backend,
                                                                       tmp_path):
    """The convolutions' tiles read int8 codes that their drivers convert to code x scale
    once per task: bit for bit the float build of the same (dequantized) weights. The Gemm
    (codes only on 16-lane vectors) scales its sums after the
    products: within float rounding. The library's weights take under half of the float
    build's bytes (a third with the Gemm's codes)."""
    m = coded_net()
    art = edgec.compile(m, tmp_path / "q", target=target, backend=backend, quantize="int8")
    ref, values = dequantized_weights(m)
    assert len(values) == 4
    float_art = edgec.compile(ref, tmp_path / "f", target=target, backend=backend)
    coded = [r for r in art.manifest["kernel_strategies"]
             if r["strategy"].split(":")[0].endswith(", int8 weights")]
    wide = get_target(target).lanes(DType.F32) >= 16
    assert len(coded) == 3 + wide, art.manifest["kernel_strategies"]
    # a quarter of the bytes for the coded layers, which hold most of the weights
    assert art.manifest["weights"]["packed_bytes"] * (3 if wide else 2) < \
        float_art.manifest["weights"]["packed_bytes"]
    x = {"input": np.random.default_rng(1).standard_normal((1, 12, 32, 32)).astype(np.float32)}
    got, want = edgec.load(art.out_dir).run(x), edgec.load(float_art.out_dir).run(x)
    (conv_out,) = [k for k in want if k != "logits"]
    np.testing.assert_array_equal(got[conv_out], want[conv_out])
    np.testing.assert_allclose(got["logits"], want["logits"], rtol=1e-5, atol=1e-5)
    ort = onnxruntime_outputs(ref, x)  # and both are the dequantized model's answers
    np.testing.assert_allclose(got["logits"], ort["logits"], rtol=1e-4, atol=1e-4)


def test_weight_codes_follow_a_moved_constant_and_lapse_when_it_changes():
    """`WeightCodes` give the constant exactly; carried through a transpose (per-column
    scales) they still do; a constant changed without them has none."""
    from edgec.ir.encodings import CODES, WeightCodes, carry_codes, weight_codes
    from edgec.ir.graph import Graph

    rng = np.random.default_rng(0)
    codes = rng.integers(-127, 128, (6, 5)).astype(np.int8)
    scale = (rng.random(6) + 0.5).astype(np.float32) / 127
    wc = WeightCodes(codes, scale, 0)
    g = Graph("g")
    w = g.const(wc.dequantized())
    w.meta[CODES] = wc
    assert weight_codes(w) is wc
    np.testing.assert_array_equal(w.const[2], codes[2].astype(np.float32) * scale[2])
    t = g.const(np.ascontiguousarray(w.const.T))
    carry_codes(w, t, lambda a: a.T, 1)
    tc = weight_codes(t)
    assert tc is not None and tc.axis == 1
    np.testing.assert_array_equal(tc.channel_scales(1), scale)
    assert tc.channel_scales(0) is None  # the scales vary along the columns
    w.const = w.const * np.float32(2)  # a pass scaled it and left the codes
    assert weight_codes(w) is None


def test_skipped_node_stays_float():
    m = small_resnet(16)
    g0 = load_graph(m)
    first = next(n.name for n in g0.nodes if n.op == "Conv")
    convs = sum(n.op == "Conv" for n in g0.nodes)
    g = quantized(m, feeds=calib_feeds(m), skip=first)
    float_convs = [n for n in g.nodes if n.op in ("Conv", "FusedConv")]
    assert len(float_convs) == 1 and float_convs[0].inputs[1].dtype.is_float
    assert g.op_counts()["QLinearConv"] == convs - 1


def test_options_are_checked():
    m = small_resnet(16)
    for opts, text in (({"bits": 5}, "8, 7, 4, 3, 2 bits"), ({"calib": "entropy"}, "choose from"),
                       ({"granularity": "group"}, "channel or tensor"),
                       ({"skip": "nothere"}, "skip names no node")):
        with pytest.raises(PassError, match=text):
            quantized(m, feeds=calib_feeds(m), **opts)


def test_calibration_samples_of_the_wrong_shape_are_refused(tmp_path):
    m = small_resnet(16)
    bad = {"input": np.zeros((4, 3, 8, 8), np.float32)}
    with pytest.raises(EdgecError, match=r"expected \[samples, 1, 3, 16, 16\]"):
        edgec.compile(m, tmp_path, quantize="int8", calib=bad, log=io.StringIO())
    with pytest.raises(EdgecError, match="lack input"):
        edgec.compile(m, tmp_path, quantize="int8", calib={"x": bad["input"]},
                      log=io.StringIO())
    with pytest.raises(EdgecError, match="quantize='int5'"):
        edgec.compile(m, tmp_path, quantize="int5")


def test_cli_quantize_with_calibration_file(tmp_path, capsys):
    m = mobile_net()
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    np.savez(tmp_path / "calib.npz", **calib_feeds(m))
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out), "--quantize", "int8", "--calib",
                 str(tmp_path / "calib.npz"), "--calib-method", "kl"]) == 0
    err = capsys.readouterr().err
    assert "uint8 activations (kl, 8 samples" in err
    lib = edgec.load(out)
    x = {"input": calib_feeds(m, 1, seed=9)["input"]}
    want = onnxruntime_outputs(m, x)["logits"]
    got = lib.run(x)["logits"]
    assert float(np.abs(got - want).max() / np.abs(want).max()) < 0.08
    # a calibration file that is not one
    (tmp_path / "bad.npz").write_text("not a zip")
    assert main(["compile", str(path), "-o", str(out), "--quantize", "int8", "--calib",
                 str(tmp_path / "bad.npz")]) == 1
    assert "cannot read calibration samples" in capsys.readouterr().err


def test_accuracy_budget_keeps_the_worst_layers_float_and_reports(tmp_path):
    m = mobile_net()
    feeds = calib_feeds(m)
    log = io.StringIO()
    plain = edgec.compile(m, tmp_path / "plain", quantize="int4", calib=feeds, log=log)
    base = plain.manifest["quantization"]["output_sqnr_db"]
    rows = json.loads((tmp_path / "plain" / "quantization.json").read_text())["layers"]
    assert [r["node"] for r in rows] and not plain.manifest["quantization"]["kept_float"]
    worst = min(rows, key=lambda r: r["sqnr_db"])
    assert all(r["bits"] == 4 and 0 < r["scale"] and 0 <= r["zero_point"] <= 255 for r in rows)
    assert abs(sum(r["mac_share"] for r in rows) - 1) < 1e-3
    # the latency measured on the samples (the host runs its own target): every layer's
    # kernels took some of it (a residual add runs in its convolution's kernel: the
    # convolution's row has the time, the add's says where it went), and with the rest
    # (layout changes, the edges) it adds up
    q = json.loads((tmp_path / "plain" / "quantization.json").read_text())
    guests = [r for r in rows if "in_kernel_of" in r]
    assert guests and all(r["op"] == "Add" and r["latency_share"] == 0 for r in guests), rows
    assert all(r["latency_share"] > 0 for r in rows if r not in guests), rows
    assert abs(sum(r["latency_share"] for r in rows) + q["other_latency_share"] - 1) < 1e-3
    # a budget just above what every layer quantized gives: the worst layer goes float first
    log = io.StringIO()
    art = edgec.compile(m, tmp_path / "budget", quantize="int4", calib=feeds,
                        accuracy_budget=base + 0.3, log=log)
    q = art.manifest["quantization"]
    assert worst["node"] in q["kept_float"], log.getvalue()
    assert f"{worst['node']} ({worst['sqnr_db']:.1f} dB) stays float" in log.getvalue()
    assert q["output_sqnr_db"] is None or q["output_sqnr_db"] >= base + 0.3
    png = (tmp_path / "budget" / "quantization.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_missing_matplotlib_is_quiet_unless_a_report_is_asked(tmp_path, monkeypatch):
    """quantization.png is optional: without matplotlib a quantized compile prints nothing
    about it (report.txt says it), and says it when --report html was asked for."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    m = mobile_net(8)
    feeds = calib_feeds(m, 2)
    log = io.StringIO()
    art = edgec.compile(m, tmp_path / "quiet", quantize="int8", calib=feeds, log=log)
    assert "matplotlib" not in log.getvalue(), log.getvalue()
    assert art.manifest["quantization"]["plot"] is None
    assert not (tmp_path / "quiet" / "quantization.png").exists()
    assert "quantization.png not drawn: it needs matplotlib (pip install 'edgec[report]')" \
        in (tmp_path / "quiet" / "report.txt").read_text()
    log = io.StringIO()
    edgec.compile(m, tmp_path / "asked", quantize="int8", calib=feeds, log=log, report="html")
    assert "quantization.png not drawn: it needs matplotlib (pip install 'edgec[report]')" \
        in log.getvalue()


def chain_net():
    """Conv-Relu-Conv-Relu-Conv: two pairs of layers to equalize."""
    n = OnnxNet("chain")
    x = n.input("input", [1, 3, 12, 12])
    for cin, cout in ((3, 8), (8, 8)):
        x = n.node("Relu", [n.conv(x, cin, cout, 3)])
    n.output(n.conv(x, 8, 4, 1))
    return n.model()


def test_cli_quantize_methods(tmp_path, capsys):
    """--quantize-method equalize / bias-correct reach the pass: each layer's record in
    quantization.json says what ran on it; an unknown method is refused by name."""
    m = chain_net()
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    np.savez(tmp_path / "calib.npz", **calib_feeds(m))
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out), "--quantize", "int8", "--calib",
                 str(tmp_path / "calib.npz"), "--quantize-method", "equalize",
                 "--quantize-method", "bias-correct"]) == 0
    assert "cross-layer equalization of" in capsys.readouterr().err
    rows = json.loads((out / "quantization.json").read_text())["layers"]
    convs = [r for r in rows if r["op"] == "Conv"]
    assert len(convs) == 3 and all(r["bias_correction"] == "empirical" for r in convs), convs
    assert all(r["equalized"] for r in convs), convs
    plain = edgec.compile(m, tmp_path / "plain", quantize="int8", calib=calib_feeds(m),
                          log=io.StringIO())
    assert plain.manifest["quantization"]["report"] == "quantization.json"
    rows = json.loads((tmp_path / "plain" / "quantization.json").read_text())["layers"]
    assert not any(r["equalized"] or r["bias_correction"] for r in rows)
    with pytest.raises(EdgecError, match="quantize methods magic: choose from equalize"):
        edgec.compile(m, tmp_path / "bad", quantize="int8", quantize_methods=["magic"])


def test_input_files_that_are_not_npz_are_refused_by_name(tmp_path, capsys):
    """An empty file, a bare .npy and an ONNX file given where an .npz is wanted: one line
    each from run --inputs and compile --calib, no traceback."""
    m = mobile_net(8)
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out)]) == 0
    (tmp_path / "empty.npz").write_bytes(b"")
    np.save(tmp_path / "bare.npy", np.zeros(3, np.float32))
    cases = {"empty.npz": "No data left in file", "bare.npy": "not an .npz of named arrays",
             "m.onnx": "cannot read"}
    for name, text in cases.items():
        capsys.readouterr()
        assert main(["run", str(out), "--inputs", str(tmp_path / name)]) == 1
        err = capsys.readouterr().err
        assert f"cannot read inputs from {tmp_path / name}" in err and text in err, err
        assert "Traceback" not in err
        assert main(["compile", str(path), "-o", str(tmp_path / "q"), "--quantize", "int8",
                     "--calib", str(tmp_path / name)]) == 1
        err = capsys.readouterr().err
        assert f"cannot read calibration samples {tmp_path / name}" in err and text in err, err
