"""8-bit weights whose byte pairs AVX2's vpmaddubsw sums exactly (passes/calibration.py
fit_pairs, `quantize{pairs=1}`): the scales worked out by hand, and what a compile for an AVX2
target does with them (every int8 layer on the pair-summed dot4, outputs as close to
onnxruntime as a build for AVX-512 without the fitting)."""

from __future__ import annotations

import io
import json

import numpy as np
import onnxruntime as ort
import pytest
from test_quantize import calib_feeds, mobile_net

import edgec
from edgec.kernel_ir.kernel import pairs_fit16
from edgec.passes.calibration import fit_pairs, sqnr_db, weight_params


def test_fit_pairs_by_hand():
    # two output channels of 4 inputs (the reduction axis 1): channel 0's largest pair is
    # 1.0 + 0.9 = 1.9 > 1.0 * 128 / 127, so its scale becomes 1.9 / 127; channel 1's pairs
    # (0.5, -0.5) and (-0.2, 0.1) fit at its own scale 0.5 / 127, which it keeps
    w = np.array([[1.0, 0.9, -0.3, 0.2], [0.5, -0.5, -0.2, 0.1]], np.float32)
    codes, scales = weight_params(w, 8, 0, "minmax")
    assert codes[0, :2].astype(int).sum() == 127 + 114  # 241: vpmaddubsw would saturate
    fitted, new, grew = fit_pairs(w, scales, 0, 1)
    assert grew == 1
    np.testing.assert_allclose(new, [np.float32(1.9 / 127), np.float32(0.5 / 127)])
    np.testing.assert_array_equal(fitted[0], np.rint(w[0] / np.float32(1.9 / 127)))
    np.testing.assert_array_equal(fitted[1], codes[1])
    assert pairs_fit16(fitted.reshape(2, 2, 2))


def test_fit_pairs_negative_and_per_tensor():
    # a negative pair -0.8 - 0.8 = -1.6 past -128 steps of 1/127: per tensor, one scale
    # 1.6 / 127 for all; an odd last entry has no partner and never forces a scale
    w = np.array([[-0.8, -0.8, 0.1], [0.3, 0.2, 1.0]], np.float32)
    codes, scales = weight_params(w, 8, None, "minmax")
    fitted, new, grew = fit_pairs(w, scales, None, 1)
    assert grew == 1 and new.shape == () and np.isclose(new, 1.6 / 127)
    assert fitted[0, 0] + fitted[0, 1] >= -128 and fitted[1, 2] == 79  # rint(127 / 1.6)


@pytest.mark.slow
def test_avx2_build_runs_every_layer_on_pair_sums(tmp_path):
    """--quantize int8 for x86-avx2 fits the pairs (the log and quantization.json say how
    many channels), so no int8 layer keeps the widened dot4; a build for x86-avx512 or
    c-generic fits nothing. On held-out inputs the fitted build is at least as close to
    onnxruntime's float outputs as 7-bit weights (--quantize int7) are."""
    m = mobile_net(16)
    feeds = calib_feeds(m)
    x = calib_feeds(m, 8, seed=11)["input"]
    sess = ort.InferenceSession(m.SerializeToString())
    want = np.concatenate([sess.run(None, {"input": x[i:i + 1]})[0] for i in range(len(x))])
    got = {}
    for target, bits in (("x86-avx2", "int8"), ("x86-avx2", "int7"), ("x86-avx512", "int8"),
                         ("c-generic", "int8")):
        log = io.StringIO()
        out = tmp_path / f"{target}_{bits}"
        art = edgec.compile(m, out, target=target, quantize=bits, calib=feeds, log=log)
        q = json.loads((out / "quantization.json").read_text())
        strategies = [s["strategy"] for s in art.manifest["kernel_strategies"]]
        if target == "x86-avx2":
            assert not any("dot4 widened" in s for s in strategies), strategies
            assert any("int8" in s for s in strategies)
        if (target, bits) == ("x86-avx2", "int8"):
            assert q["pairs_fitted"] > 0, log.getvalue()
            assert "channels scaled so that their weight pairs fit" in log.getvalue()
        else:
            assert "pairs_fitted" not in q and all(r.get("pairs_fitted") is None
                                                   for r in q["layers"])
        if target != "x86-avx512":  # an AVX2-only host cannot run it
            lib = edgec.load(out)
            got[target, bits] = np.concatenate([lib.run({"input": x[i:i + 1]})["logits"]
                                                for i in range(len(x))])
    fitted, seven = sqnr_db(want, got["x86-avx2", "int8"]), sqnr_db(want, got["x86-avx2", "int7"])
    assert fitted >= seven - 0.5, (fitted, seven, sqnr_db(want, got["c-generic", "int8"]))


def test_pairs_are_fitted_only_where_the_library_may_run_vpmaddubsw(monkeypatch):
    """x86-avx2 libraries may run on any AVX2 CPU: fitted. The host's own build (`x86`)
    resolved to AVX2 on a CPU with AVX-VNNI runs vpdpbusd (dispatched at run time): not
    fitted, its 8 bits kept whole. AVX-512 and NEON: never."""
    from edgec.targets import target as t

    monkeypatch.setattr(t, "host_cpu_flags", lambda: frozenset({"avx2", "fma", "avx_vnni"}))
    host = t.replace(t.TARGETS["x86"], isa="avx2")
    assert not t.pair_sums(host)
    assert t.pair_sums(t.TARGETS["x86-avx2"])
    monkeypatch.setattr(t, "host_cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert t.pair_sums(host)
    assert not t.pair_sums(t.TARGETS["x86-avx512"]) and not t.pair_sums(t.TARGETS["arm64"])
