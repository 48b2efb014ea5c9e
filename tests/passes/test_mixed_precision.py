# ruff: noqa: E501  (golden IR lines are as long as the printer makes them)
"""Mixed precision by sensitivity in `quantize{keep=sensitivity,budget=DB}`: on hand-built
models where one weight or one activation is far more sensitive than the rest (a huge outlier
that a per-tensor scale must cover), the choice holds the activation in int16 (its reader
W8A16) or, for a weight or with rungs=float, keeps float exactly the layers that quantize it,
the record says why, the MAC budget holds; the greedy choice against a made-up measurement;
layers forced to int16 (`int16=`), text in and text out and compiled; the options' errors."""

from __future__ import annotations

import io

import numpy as np
import pytest
from nets import Net
from passcheck import check_pass

from edgec.errors import PassError
from edgec.passes import run_pipeline
from edgec.passes.manager import PipelineStep
from edgec.passes.quantize import Quantize
from edgec.passes.sensitivity import Point, choose, mac_shares


def chain(outlier: str, seed: int = 0):
    """Four 16 x 16 Gemms with Relus; `outlier` "weight": g2's weight has one entry 160
    times the others' scale (on an input that is always 0: the float model does not see it); "activation": g2's output has a channel 60 times the others (its row
    of the weight and bias scaled up, g3's column scaled down: the float model computes
    alike)."""
    n = Net(f"chain_{outlier}", (1, 16), seed)
    h = n.x
    for i in range(4):
        w = n.rng.standard_normal((16, 16)) * 0.25
        b = n.rng.uniform(-0.1, 0.1, 16)
        if i == 0 and outlier == "weight":  # input 5 of g2 is always 0 (Relu(-1))
            w[5], b[5] = 0.0, -1.0
        if i == 1 and outlier == "weight":
            w[3, 5] = 40.0
        if i == 1 and outlier == "activation":
            w[7] *= 60
            b[7] = abs(b[7]) * 60
        if i == 2 and outlier == "activation":
            w[:, 7] /= 60
        h = n.g.add_node("Gemm", [h, n.const(w, f"w{i + 1}"), n.const(b, f"b{i + 1}")],
                         {"transB": 1}, name=f"g{i + 1}").output
        if i < 3:
            h = n.op("Relu", h)
    n.g.outputs = [h]
    return n.g


def quantize(graph, **opts):
    """Per-tensor weights for the weight outlier, per channel for the activation's (its
    channel's weights scaled alike)."""
    x = np.random.default_rng(5).standard_normal((16, 1, 16)).astype(np.float32)
    log = io.StringIO()
    opts.setdefault("granularity", "tensor" if graph.name == "chain_weight" else "channel")
    run_pipeline(graph, [PipelineStep(Quantize(feeds={"input": x}, log=log, **opts))],
                 out=io.StringIO())
    return graph.record.quantization.to_json(), log.getvalue()


@pytest.mark.parametrize("outlier, kept, point", [
    ("weight", ["g2"], "weight of g2"),
    ("activation", ["g2", "g3"], None),
])
def test_the_sensitive_point_keeps_exactly_its_layers(outlier, kept, point):
    plain, _ = quantize(chain(outlier))
    fixed, _ = quantize(chain(outlier), skip=",".join(kept))
    # the outlier costs most of the error: without it float the outputs are far better
    assert fixed["output_sqnr_db"] > plain["output_sqnr_db"] + 10, (plain, fixed)
    budget = fixed["output_sqnr_db"] - 2
    q, log = quantize(chain(outlier), keep="sensitivity", budget=budget,
                      min_quantized_macs=0.4, rungs="float")
    mixed = q["mixed_precision"]
    assert q["kept_float"] == kept, log
    assert mixed["met"] and q["output_sqnr_db"] >= budget
    assert q["quantized_mac_share"] == mixed["quantized_mac_share"] == 1 - len(kept) / 4
    worst = mixed["points"][0]
    if point is None:  # the activation between g2's Relu and g3
        point = next(x["output"] for x in q["layers"] if x["node"] == "g2")
    assert worst["point"] == point
    assert all(x["for"] == point for x in mixed["kept_float"])
    rows = {x["node"]: x for x in q["layers"]}
    assert rows["g2"]["float"] and rows["g2"]["kept_float_for"]["point"] == point
    assert "kept_float_for" not in rows["g1"]
    assert f"float: {point} (" in log and f"; {', '.join(kept)})" in log


def test_a_sensitive_activation_takes_int16_before_float():
    """The activation outlier: int16 for that tensor (its reader g3 runs W8A16, a quarter of
    the MACs) meets the budget with no layer float, where rungs=float needs g2 and g3 float
    (half the MACs); the QDQ pair of that tensor is int16, the record and the log say why."""
    plain, _ = quantize(chain("activation"))
    q, log = quantize(chain("activation"), keep="sensitivity", budget=plain["output_sqnr_db"] + 1,
                      min_quantized_macs=0.7)
    point = next(x["output"] for x in q["layers"] if x["node"] == "g2")
    mixed = q["mixed_precision"]
    assert mixed["met"] and q["kept_float"] == [] and q["int16_layers"] == ["g3"], log
    assert q["output_sqnr_db"] > plain["output_sqnr_db"] + 5
    assert q["mac_shares"] == mixed["mac_shares"] == {"int8": 0.75, "int16": 0.25, "float": 0.0}
    assert mixed["int16_points"] == [point] and mixed["kept_int16"][0]["for"] == point
    assert [(x["point"], x["to"], x["layers"]) for x in mixed["steps"]] == \
        [(point, "int16", ["g3"])]
    rows = {x["node"]: x for x in q["layers"]}
    assert rows["g3"]["precision"] == "int16" and rows["g3"]["kept_int16_for"]["point"] == point
    assert {rows[k]["precision"] for k in ("g1", "g2", "g4")} == {"int8"}
    assert f"int16: {point} (" in log and "float: none" in log
    # the MAC budget: int16 counts against min_quantized_macs (int8's share) as float does
    q, log = quantize(chain("activation"), keep="sensitivity", budget=plain["output_sqnr_db"] + 1,
                      min_quantized_macs=0.8)
    assert q["int16_layers"] == [] and q["kept_float"] == [] and "budget not met" in log

    # search_samples: the points and steps measured on the first 3 of the 16 samples (by
    # default 8), which measure other figures
    few, log = quantize(chain("activation"), keep="sensitivity",
                        budget=plain["output_sqnr_db"] + 1, min_quantized_macs=0.7,
                        search_samples=3)
    eight, log8 = quantize(chain("activation"), keep="sensitivity",
                           budget=plain["output_sqnr_db"] + 1, min_quantized_macs=0.7)
    assert "quantization points on 3 samples" in log and "points on 8 samples" in log8, log
    assert few["mixed_precision"]["points"] != eight["mixed_precision"]["points"]


def test_the_mac_budget_bounds_what_stays_float():
    q, log = quantize(chain("activation"), keep="sensitivity", budget=60.0,
                      min_quantized_macs=0.7)
    # the outlier needs two of the four layers float, half the MACs: not allowed
    assert q["quantized_mac_share"] >= 0.7 and not q["mixed_precision"]["met"]
    assert "budget not met" in log


def test_greedy_choice_against_a_made_up_measurement():
    """The measurement is the sum of the noises of the points left at 8 bits (none for a
    point whose layers are float, 1/65536 of its own for a 16-bit one) and more: a and b feed
    each other (either one's noise shows only while the other is quantized too: each alone
    looks worth 20 dB). The choice takes int16 first, the points read only by Adds (a)
    first, most sensitive first, measuring after each step; a's step gains nothing alone and
    is undone, b's neither, and the two together are taken; the float rung covers the
    weight; c's int16 would cost more than the MAC budget allows and is not tried."""
    points = [Point("a", ("A1", "A2"), 20.0, ()), Point("b", ("B",), 20.0, ("B",)),
              Point("w", ("W",), 22.0), Point("c", ("C",), 24.0, ("C",)),
              Point("e", ("E",), 45.0, ("E",))]
    macs = {"A1": 0, "A2": 0, "B": 10, "W": 10, "C": 60, "E": 20}
    calls = []

    def measure(floats: set[str], wide: set[str]) -> float:
        calls.append((set(floats), set(wide)))

        def left(p):  # the noise of a point still quantized
            n = 10 ** (-p.sensitivity_db / 10)
            return 0.0 if set(p.layers) <= floats else n / 65536 if p.name in wide else n

        a, b, *rest = points
        pair = 2 * max(left(a), left(b))  # a and b pass each other's error on
        return -10 * np.log10(pair + sum(left(p) for p in rest))

    m = choose(points, macs, measure, 23.0, 0.6)
    assert [(x.point.name, x.rung, x.layers) for x in m.steps] == \
        [("b", "int16", ("B",)), ("a", "int16", ()), ("w", "float", ("W",))]
    assert m.steps[0].after_db <= m.steps[0].before_db + 0.1 < m.steps[1].after_db
    assert m.wide == ["a", "b"] and m.floats == {"W"} and m.met
    assert m.mac_shares == mac_shares(macs, {"W"}, {"B"}) == {"int8": 0.8, "int16": 0.1,
                                                              "float": 0.1}
    assert abs(m.output_sqnr_db - measure({"W"}, {"a", "b"})) < 1e-9
    assert m.measurements == 5 and not any("C" in w or "c" in w for _, w in calls)
    # rungs=float alone: float for b and a's two layers together, then w; c does not fit
    m = choose(points, macs, measure, 23.0, 0.6, rungs=("float",))
    assert [(x.point.name, x.layers) for x in m.steps] == \
        [("b", ("B",)), ("a", ("A1", "A2")), ("w", ("W",))]
    assert m.wide == [] and m.mac_shares["int16"] == 0.0 and m.met
    # a budget out of reach: not met, and e never tried (less sensitive than budget + 20 dB)
    calls.clear()
    m = choose(points, macs, measure, 24.0, 0.6)
    assert not m.met and not any("E" in f or "e" in w for f, w in calls)


# two Gemms, the first with a weight outlier on its third input, which the samples hold at 0
TWO_GEMMS = """
        graph @mp(%x: f32[1,3]) {
          %w1 = const f32[2,3] dense<[1.0, -0.5, 100.0, 0.25, 0.75, 0.0]>
          %w2 = const f32[2,2] dense<[0.5, 1.0, -1.0, 0.5]>
          %a = Gemm(%x, %w1) {transA = 0, transB = 1} : f32[1,2]
          %y = Gemm(%a, %w2) {transA = 0, transB = 1} : f32[1,2]
          return %y
        }"""


def calibration_file(tmp_path):
    """8 samples of TWO_GEMMS' input, the third element 0, as an .npz."""
    x = np.random.default_rng(5).standard_normal((8, 1, 3)).astype(np.float32)
    x[:, :, 2] = 0
    np.savez(tmp_path / "calib.npz", x=x)
    return tmp_path / "calib.npz"


def test_text_in_text_out(tmp_path):
    """quantize{keep=sensitivity}: the Gemm whose weight has an outlier (on an input that is
    always 0) stays float, the other is quantized (per tensor), and its activations."""
    calib = calibration_file(tmp_path)
    pipeline = (f"quantize{{granularity=tensor,samples={calib},"
                "keep=sensitivity,budget=40,min_quantized_macs=0.3,rungs=float}")
    # the outputs on the check's random inputs leave the calibrated ranges: text only
    g = check_pass(TWO_GEMMS, pipeline, """
        graph @mp(%x: f32[1,3]) {
          %w1 = const f32[2,3] dense<[1.0, -0.5, 100.0, 0.25, 0.75, 0.0]>
          %a_scale = const f32[] dense<[0.012771268]>
          %a_zero_point = const u8[] dense<[138]>
          %w2_quantized = const i8[2,2] quant<scale=0.007874016, zp=0> dense<[64, 127, -127, 64]>
          %w2_scale = const f32[] dense<[0.007874016]>
          %w2_zero_point = const i8[] dense<[0]>
          %y_scale = const f32[] dense<[0.014037051]>
          %y_zero_point = const u8[] dense<[96]>
          %a = Gemm(%x, %w1) {transB = 1} : f32[1,2]
          %a_QuantizeLinear = QuantizeLinear(%a, %a_scale, %a_zero_point) : u8[1,2] quant<scale=0.012771268, zp=138>
          %a_DequantizeLinear = DequantizeLinear(%a_QuantizeLinear, %a_scale, %a_zero_point) : f32[1,2]
          %w2_DequantizeLinear = DequantizeLinear(%w2_quantized, %w2_scale, %w2_zero_point) {axis = 0} : f32[2,2]
          %y_0 = Gemm(%a_DequantizeLinear, %w2_DequantizeLinear) {transB = 1} : f32[1,2] #"y"
          %y_QuantizeLinear = QuantizeLinear(%y_0, %y_scale, %y_zero_point) : u8[1,2] quant<scale=0.014037051, zp=96>
          %y = DequantizeLinear(%y_QuantizeLinear, %y_scale, %y_zero_point) : f32[1,2] #"y_DequantizeLinear"
          return %y
        }""", tol=float("inf"))
    mixed = g.record.quantization.mixed_precision
    assert mixed["kept_float"] == [{"node": "a", "macs": 6, "for": "weight of a",
                                    "sensitivity_db": mixed["points"][0]["sensitivity_db"]}]
    assert mixed["met"] and mixed["quantized_mac_share"] == 0.4


def test_int16_text_in_text_out(tmp_path):
    """quantize{int16=y}: the activation y reads is held in int16 (65535 steps over its
    min-max range: a's uint8 scale 0.012771268 over 257), y's weight stays int8, and y
    counts as W8A16 in the MACs."""
    calib = calibration_file(tmp_path)
    g = check_pass(TWO_GEMMS, f"quantize{{granularity=tensor,samples={calib},int16=y}}", """
        graph @mp(%x: f32[1,3]) {
          %x_scale = const f32[] dense<[0.0132035995]>
          %x_zero_point = const u8[] dense<[131]>
          %w1_quantized = const i8[2,3] quant<scale=0.78740156, zp=0> dense<[1, -1, 127, 0, 1, 0]>
          %w1_scale = const f32[] dense<[0.78740156]>
          %w1_zero_point = const i8[] dense<[0]>
          %a_scale = const f32[] dense<[4.969365e-05]>
          %a_zero_point = const i16[] dense<[2614]>
          %w2_quantized = const i8[2,2] quant<scale=0.007874016, zp=0> dense<[64, 127, -127, 64]>
          %w2_scale = const f32[] dense<[0.007874016]>
          %w2_zero_point = const i8[] dense<[0]>
          %y_scale = const f32[] dense<[0.014037051]>
          %y_zero_point = const u8[] dense<[96]>
          %x_QuantizeLinear = QuantizeLinear(%x, %x_scale, %x_zero_point) : u8[1,3] quant<scale=0.0132035995, zp=131>
          %x_DequantizeLinear = DequantizeLinear(%x_QuantizeLinear, %x_scale, %x_zero_point) : f32[1,3]
          %w1_DequantizeLinear = DequantizeLinear(%w1_quantized, %w1_scale, %w1_zero_point) {axis = 0} : f32[2,3]
          %a = Gemm(%x_DequantizeLinear, %w1_DequantizeLinear) {transB = 1} : f32[1,2]
          %a_QuantizeLinear = QuantizeLinear(%a, %a_scale, %a_zero_point) : i16[1,2] quant<scale=4.969365e-05, zp=2614>
          %a_DequantizeLinear = DequantizeLinear(%a_QuantizeLinear, %a_scale, %a_zero_point) : f32[1,2]
          %w2_DequantizeLinear = DequantizeLinear(%w2_quantized, %w2_scale, %w2_zero_point) {axis = 0} : f32[2,2]
          %y_0 = Gemm(%a_DequantizeLinear, %w2_DequantizeLinear) {transB = 1} : f32[1,2] #"y"
          %y_QuantizeLinear = QuantizeLinear(%y_0, %y_scale, %y_zero_point) : u8[1,2] quant<scale=0.014037051, zp=96>
          %y = DequantizeLinear(%y_QuantizeLinear, %y_scale, %y_zero_point) : f32[1,2] #"y_DequantizeLinear"
          return %y
        }""", tol=float("inf"))
    q = g.record.quantization.to_json()
    assert q["int16_layers"] == ["y"] and q["kept_float"] == []
    assert q["mac_shares"] == {"int8": 0.6, "int16": 0.4, "float": 0.0}
    assert abs(0.012771268 * 255 / 65535 / 4.969365e-05 - 1) < 1e-6  # (rounded apart)


def test_int16_layers_compile_bit_exact(tmp_path):
    """int16=conv13,add14 on the small MobileNet: conv13 reads the depthwise conv's output
    in int16, add14 both its operands (so conv9, which reads the residual's other operand
    too, runs W8A16 as well); the integer ops take those 16-bit tensors (no float Conv or Add
    left), the library is bit-exact with the quantized graph, and report.txt names the W8A16
    layers with the MACs per precision."""
    from test_quantize import calib_feeds, mobile_net, quantized

    import edgec
    from edgec.ir import DType, interpret
    from edgec.passes import default_pipeline
    from edgec.targets.target import get_target

    m = mobile_net()
    feeds = calib_feeds(m)
    g = quantized(m, feeds=feeds, int16="conv13,add14")
    q = g.record.quantization.to_json()
    assert q["int16_layers"] == ["conv9", "conv13", "add14"]
    assert 0.4 < q["mac_shares"]["int16"] < 0.6 and q["mac_shares"]["float"] == 0
    wide = [n for n in g.nodes if n.op in ("QLinearConv", "QLinearAdd")
            and n.inputs[0].dtype is DType.I16]
    assert len(wide) == 3 and not {"Conv", "Add"} & set(g.op_counts())
    np.savez(tmp_path / "calib.npz", **feeds)
    t = get_target("x86")
    steps = default_pipeline(t.lanes(DType.F32), t.registers).replace(
        "fuse-qdq,", f"quantize{{samples={tmp_path / 'calib.npz'},int16=\"conv13,add14\"}},"
        "fuse-qdq,", 1)
    edgec.compile(m, tmp_path / "out", name="m16", pipeline=steps, log=io.StringIO())
    lib = edgec.load(tmp_path / "out")
    for k in range(3):
        x = {"input": np.random.default_rng(20 + k).standard_normal((1, 3, 16, 16))
             .astype(np.float32)}
        np.testing.assert_array_equal(lib.run(x)["logits"], interpret(g, x)["logits"])
    report = (tmp_path / "out" / "report.txt").read_text()
    assert "W8A16 (int16 activations): conv9, conv13, add14; MACs " in report, report


def test_options_are_checked():
    g = chain("weight")
    with pytest.raises(PassError, match="keep=sensitivity needs budget=DB"):
        quantize(g, keep="sensitivity")
    with pytest.raises(PassError, match="keep='best'; choose worst or sensitivity"):
        quantize(chain("weight"), keep="best", budget=30.0)
    with pytest.raises(PassError, match=r"rungs='int8'; a list of int16 and float"):
        quantize(chain("weight"), keep="sensitivity", budget=30.0, rungs="int8")
    with pytest.raises(PassError, match="int16 names no layer this pass quantizes: g9"):
        quantize(chain("weight"), int16="g1,g9")
    with pytest.raises(PassError, match=r"min_quantized_macs=1.5 must be a share"):
        quantize(chain("weight"), keep="sensitivity", budget=30.0, min_quantized_macs=1.5)
    with pytest.raises(PassError, match="search_samples=0 must be at least 1"):
        quantize(chain("weight"), keep="sensitivity", budget=30.0, search_samples=0)
    with pytest.raises(PassError, match="keep=sensitivity needs calibration samples"):
        run_pipeline(chain("weight"), [PipelineStep(Quantize(keep="sensitivity", budget=30.0,
                                                             log=io.StringIO()))],
                     out=io.StringIO())


def test_cli_and_python_methods(tmp_path, capsys):
    """--quantize-method sensitivity (with --accuracy-budget) and adaround reach the pass;
    manifest.json, quantization.json and report.txt say which layers stayed float, why, and
    the share of the MACs quantized; sensitivity without a budget is refused."""
    import json

    from test_quantize import calib_feeds, mobile_net

    import edgec
    from edgec.compiler.cli import main
    from edgec.errors import EdgecError

    m = mobile_net()
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    np.savez(tmp_path / "calib.npz", **calib_feeds(m))
    budget = 40.0  # above what all quantized gives (int4: about 20 dB, 30 with adaround)
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out), "--quantize", "int4", "--calib",
                 str(tmp_path / "calib.npz"), "--quantize-method", "sensitivity",
                 "--quantize-method", "adaround", "--accuracy-budget", str(budget)]) == 0
    err = capsys.readouterr().err
    assert "adaround of 4 of 4 layers" in err and "quantization points on 8 samples" in err
    manifest = json.loads((out / "manifest.json").read_text())["quantization"]
    q = json.loads((out / "quantization.json").read_text())
    kept = q["mixed_precision"]["kept_float"]
    assert kept and manifest["kept_float"] == q["kept_float"] == sorted(x["node"] for x in kept)
    assert manifest["mixed_precision"]["kept_float"] == kept
    assert manifest["quantized_mac_share"] == q["quantized_mac_share"] >= 0.9
    assert all(r["adarounded"] is not None for r in q["layers"]
               if r["op"] != "Add" and not r["float"])
    report = (out / "report.txt").read_text()
    first = kept[0]
    assert (f"{q['quantized_mac_share']:.1%} of the MACs quantized, kept float: "
            f"{first['node']} (for {first['for']}: {first['sensitivity_db']} dB alone)"
            in report or first["node"] != q["kept_float"][0]), report
    with pytest.raises(EdgecError, match="sensitivity keeps layers float until the outputs "
                                         "meet accuracy_budget"):
        edgec.compile(m, tmp_path / "bad", quantize="int8", calib=calib_feeds(m),
                      quantize_methods=["sensitivity"])


def test_measured_on_the_logits_before_a_final_softmax():
    """The probabilities saturate (their SQNR is no sum of the layers' noise): the choice
    measures the Softmax's input, and the record says so; without one, the outputs."""
    g = chain("weight")
    logits = g.outputs[0]
    g.outputs = [g.add_node("Softmax", [logits], {"axis": -1}, name="probs").output]
    plain, _ = quantize(chain("weight"))
    q, log = quantize(g, keep="sensitivity", budget=plain["output_sqnr_db"] + 6,
                      min_quantized_macs=0.4)
    assert q["mixed_precision"]["measured_on"] == [logits.name]
    assert f"measured on {logits.name} before the final Softmax" in log
    assert q["kept_float"] == ["g2"], log
    q, _ = quantize(chain("weight"), keep="sensitivity", budget=30.0, min_quantized_macs=0.4)
    assert q["mixed_precision"]["measured_on"] == [chain("weight").outputs[0].name]
