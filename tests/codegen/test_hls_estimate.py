"""The HLS design's estimates (codegen/hls_estimate.py): the formulas against values worked
out by hand, the dataflow simulation against the cycle model, a design too big for its part
warned about."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from convnets import residual_cnn, samples

import edgec
from edgec.codegen.hls_estimate import (
    ProcessModel,
    analytic,
    estimate,
    fifo_resources,
    part_of,
    resources,
    simulate,
    stream_frames,
    uram_fifos,
)

PART = "xcu250-figd2104-2L-e"


def test_a_layers_resources_by_hand():
    # a 3x3 conv of 8 -> 64 channels on 8-bit values: 4608 weights, a 20-bit sum
    p = ProcessModel("conv", [("x", 1024)], ["y"], 4096, 4608 * 64, macs=4608 * 64,
                     weight_bits=8, weights=4608, acc_bits=20, requantizes=True,
                     buffers=[(1024, 8), (4096, 8)])
    r = resources(p)
    # LUT: 300 + 1.1 x (adder tree (8 + 8)(2 x 1 - 1) + 20 accumulator bits) = 300 + 39.6
    assert r["lut"] == 300 + math.ceil(1.1 * (16 + 20))
    # DSP: one multiplier (two 8-bit products share a DSP48E2: ceil(1 / 2)) + 4 requantizing
    assert r["dsp"] == 1 + 4
    # BRAM18: weights 4608 x 8 bits in 2048 x 9 shapes: 3; the input 1024 x 8: 1; the
    # output 4096 x 8: 2
    assert r["bram18"] == 3 + 1 + 2
    # cycles: 1024 read + 294912 MACs + 4096 written
    assert p.cycles == 1024 + 4608 * 64 + 4096
    # 4-bit weights: LUT multipliers, no DSP but the requantizing one; the 64 x 4-bit ROM is
    # LUTRAM (one 64-deep LUT per bit)
    q = ProcessModel("conv4", [("x", 1024)], ["y"], 4096, 100, macs=100, weight_bits=4,
                     weights=64, acc_bits=16, requantizes=True)
    lut = 300 + math.ceil(1.1 * ((2 * math.ceil(12 / 6) - 1) * 12 + 12 + 16)) + 4
    assert resources(q) == {"lut": lut, "dsp": 4, "bram18": 0, "uram": 0}
    # weights at PE x SIMD = all of them (4 x 48 at 16 bits): a ROM of one word 3072 bits
    # wide, registers (no BRAM, no LUTRAM); one DSP a 16-bit product
    w = ProcessModel("all", [("x", 48)], ["y"], 4, 1, macs=192, pe=4, simd=48,
                     weight_bits=16, act_bits=16, weights=192, acc_bits=16)
    tree = 32 * (2 * 48 - 1) + 16
    assert resources(w) == {"lut": 300 + math.ceil(1.1 * 4 * tree), "dsp": 192, "bram18": 0,
                            "uram": 0}
    # a FIFO of 2 is shift registers, one of 512 x 8 bits a RAMB18 (4096 bits)
    assert fifo_resources(2, 8) == {"lut": 8, "dsp": 0, "bram18": 0, "uram": 0}
    assert fifo_resources(512, 8)["bram18"] == 1


def test_frames_and_fifos_in_uram_by_hand():
    # whole frames of 802,816 and 200,704 bytes: 8 bytes a 72-bit URAM word, 4096 words a
    # URAM: 25 and 7 URAMs (no BRAM); one of 2048 bytes (16 Kbit, under 128 Kbit) is BRAM
    p = ProcessModel("pool", [("x", 802816)], ["y"], 200704, 0,
                     uram_frames=[(802816, 8), (200704, 8)], buffers=[(2048, 8)])
    assert resources(p) == {"lut": 300, "dsp": 0, "bram18": 1, "uram": 25 + 7}
    # a FIFO of 802,816 bytes: 392 RAMB18 (2048 x 9 each), or 196 URAMs (8 of 72 bits)
    assert fifo_resources(802816, 8)["bram18"] == 392
    assert fifo_resources(802816, 8, uram=True) == {"lut": 0, "dsp": 0, "bram18": 0,
                                                    "uram": 196}
    # a ZCU104 (624 BRAM18, 96 URAM), processes taking 500 BRAM18 and 10 URAMs, FIFOs of
    # 100,000 (49 RAMB18 | 25 URAM), 50,000 (25 | 13), 40,000 (20 | 10) and 2,000 bytes
    # (1 RAMB18, too shallow for URAM): 595 BRAM18. Under the part already: none moves
    zcu104 = part_of("xczu7ev")
    fifos = [("a", 100000, 8), ("b", 50000, 8), ("c", 40000, 8), ("d", 2000, 8)]
    assert uram_fifos(fifos, 500, 10, zcu104) == set()
    # processes at 600: 695 of 624; the deepest first: a (-49: 646, 35 URAM), b (-25: 621,
    # 48 URAM), under the part: c stays
    assert uram_fifos(fifos, 600, 10, zcu104) == {"a", "b"}
    # URAMs nearly spent (80 of 96): a does not fit them (25), b (13) does, then c (10)
    # does not (103): 695 - 25 = 670, still over, and nothing else can move
    assert uram_fifos(fifos, 600, 80, zcu104) == {"b"}


def test_a_joins_earlier_input_holds_the_frames_its_later_input_lags_by():
    # P forks 1000 values a frame to a skip stream and a branch B1 -> B2, joined by ADD,
    # which reads the skip first; each process reads 1000, computes 1000, writes 1000:
    # P writes by 3000, B1 by 5000, B2 by 7000; the interval is 3000 (ADD: 2000 reads +
    # 1000 writes). Frames back to back, ADD reads the skip's next frame only after B2's
    # current one: 7000 - 3000 = 4000 cycles after P wrote it, so the skip holds 1 +
    # ceil(4000 / 3000) = 3 frames (the single frame's order alone, skip read first: 1)
    n = 1000
    procs = [ProcessModel("P", [("in", n)], ["skip", "b"], n, n),
             ProcessModel("B1", [("b", n)], ["b1"], n, n),
             ProcessModel("B2", [("b1", n)], ["b2"], n, n),
             ProcessModel("ADD", [("skip", n), ("b2", n)], ["out"], n, 0)]
    producers = {s: p.name for p in procs for s in p.writes}
    assert stream_frames(procs, producers) == {"b": 1, "b1": 1, "skip": 3, "b2": 1}


def test_the_cycle_model_of_a_chain_and_a_join_by_hand():
    a = ProcessModel("a", [("in", 100)], ["ab", "ac"], 50, 200)
    b = ProcessModel("b", [("ab", 50)], ["bc"], 10, 1000)
    c = ProcessModel("c", [("bc", 10), ("ac", 50)], ["out"], 5, 7)
    m = analytic([a, b, c], {"ab": "a", "ac": "a", "bc": "b"})
    # a: read 100, compute 200, write 50 -> 350; b reads as a writes: done at 350, +1000 +10
    # -> 1360; c reads bc by 1360, then ac (written by 350) in 50 more: 1410, +7 +5
    assert m["write_end"] == {"a": 350, "b": 1360, "c": 1422}
    assert m["latency_cycles"] == 1422 and m["interval_cycles"] == 50 + 1000 + 10
    sim = simulate([a, b, c], {"ab": 2, "ac": 50, "bc": 2}, ["out"], frames=1)
    assert sim["latency_cycles"] == 1422
    assert sim["fifo_peak"]["ac"] == 50  # the branch c reads second holds all of it
    # with ac 2 deep, a waits on it while c waits on bc: the simulation deadlocks (no end)
    assert simulate([a, b, c], {"ab": 2, "ac": 2, "bc": 2}, ["out"], frames=1)[
        "latency_cycles"] is None


def test_the_residual_designs_estimate_and_simulation(tmp_path):
    model = residual_cnn()
    path = tmp_path / "res.onnx"
    onnx.save(model, path)
    art = edgec.compile(path, tmp_path / "out", target="hls", fpga_part=PART, name="res",
                        quantize="int8", calib=samples(model, 8, 1), report="html")
    e = art.manifest["hls"]["estimate"]
    assert e["fits"] and e["part_resources"]["dsp"] == 12_288 and not e["warnings"]
    assert e["simulation"]["latency_vs_model"] == 0  # one frame: exactly the model
    # frames back to back: the streams hold the frames in flight on them (with one frame the
    # residual branch held its producer back, and frames came 1.7 times the model's interval)
    assert e["simulation"]["interval_vs_model"] == 0
    streams = {s["name"]: s for s in art.manifest["hls"]["streams"]}
    for name, f in e["fifos"].items():
        assert f["peak"] <= f["depth"], name
        if f["depth"] > streams[name]["elements"]:  # the residual branch: over a frame
            assert f["peak"] > streams[name]["elements"]
    fps = e["model"]["fps"]
    assert fps == pytest.approx(200e6 / max(x["cycles"] for x in e["layers"]))
    page = (tmp_path / "out" / "report.html").read_text()
    assert 'id="hls-layers"' in page and 'id="hls-fifos"' in page
    assert all(f'<td class="n">{x["cycles"]}</td>' in page for x in e["layers"])
    assert "not measured: an HLS design&#x27;s cycles are estimated" in page
    assert f"{e['model']['latency_cycles']} cycles" in page
    text = (tmp_path / "out" / "report.txt").read_text()
    assert "HLS estimate (xcu250-figd2104-2L-e at 200 MHz" in text
    assert np.isclose(e["model"]["latency_ms"], e["model"]["latency_cycles"] / 200e3)


def test_a_design_over_its_part_is_warned_about():
    big = ProcessModel("fc", [("x", 4096)], ["y"], 4096, 4096 * 4096, macs=4096 * 4096,
                       weight_bits=8, weights=4096 * 4096, acc_bits=24, requantizes=True)
    e = estimate([big], {}, {}, ["y"], "xc7z020clg400-1", 100.0)
    assert not e["fits"]
    assert "does not fit xc7z020clg400-1: BRAM18 8192 of 280" in e["warnings"][0]
    e = estimate([big], {}, {}, ["y"], "xcku5p-ffvb676-2-e", 100.0)
    assert "fits" not in e and "no resource figures for part xcku5p" in e["warnings"][0]
    assert part_of("XCU250-figd2104-2L-e").lut == 1_728_000
