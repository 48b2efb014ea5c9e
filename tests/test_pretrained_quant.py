"""Quantization of a pretrained network on real inputs (issue 14): PaddleOCR's text-line
orientation classifier from the rapidocr-onnxruntime wheel, on word crops of the scanned page in
the scikit-image wheel (edgec/testing/textlines.py), both fetched from PyPI by `pip download`.
The int8 build, calibrated on the crops of three page lines, must give the float model's answer
on at least 98% of the crops of the other lines. benchmarks/pretrained_quant.py reports each
calibration method, and onnxruntime's QDQ model compiled by edgec, beside it."""

from __future__ import annotations

import io
import subprocess

import numpy as np
import onnxruntime as ort
import pytest

import edgec
from edgec import zoo
from edgec.passes.calibration import sqnr_db
from edgec.testing.textlines import HEIGHT, WIDTH, fetch_wheel, load_crops, load_model

pytestmark = pytest.mark.slow  # the download, and a 53-convolution int8 build

# what pip prints when it cannot reach the index (then the test skips; any other failure fails)
OFFLINE = ("NewConnectionError", "Failed to establish a new connection", "Max retries exceeded",
           "Temporary failure in name resolution", "Name or service not known",
           "Network is unreachable", "ProxyError", "ConnectTimeoutError", "ReadTimeoutError")


def _fetch(package: str, folder):
    try:
        return fetch_wheel(package, folder)
    except subprocess.CalledProcessError as e:
        out = (e.stdout or "") + (e.stderr or "")
        why = [line for line in out.splitlines() if any(s in line for s in OFFLINE)]
        if why:
            pytest.skip(f"pip download {package}: no network ({why[0].strip()[:160]})")
        raise AssertionError(f"pip download {package} failed:\n{out}") from None


@pytest.fixture(scope="module")
def ocr(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wheels")
    model = load_model(_fetch("rapidocr-onnxruntime", folder))
    calib, held = load_crops(_fetch("scikit-image", folder)).split()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return model, calib, held, sess.run(None, {"x": held.x})[0]


def test_the_float_model_reads_the_orientation(ocr):
    _, calib, held, ref = ocr
    assert len(calib.y) >= 60 and len(held.y) >= 300
    assert not set(calib.line) & set(held.line)
    assert (ref.argmax(axis=1) == held.y).mean() >= 0.95


def test_edgec_int8_gives_the_float_answer(ocr, tmp_path):
    model, calib, held, ref = ocr
    art = edgec.compile(model, tmp_path, input_shapes={"x": [1, 3, HEIGHT, WIDTH]},
                        quantize="int8", calib={"x": calib.x[:, None]}, log=io.StringIO())
    assert art.manifest["ops"].get("BlockedQLinearConv") == 53  # every convolution on integers
    lib = edgec.load(tmp_path)
    got = np.concatenate([next(iter(lib.run({"x": x[None]}).values())) for x in held.x])
    agree = (got.argmax(axis=1) == ref.argmax(axis=1)).mean()
    assert agree >= 0.98, f"int8 gives the float answer on {agree:.1%} of the crops"
    assert sqnr_db(ref, got) >= 20


def test_qdq_on_real_crops(ocr, tmp_path):
    """zoo.quantize_qdq calibrated on given feeds, the opset 11 model converted to 13 first
    (onnxruntime runs it here; the benchmark also compiles it with edgec)."""
    model, calib, held, ref = ocr
    qdq = zoo.quantize_qdq(model, tmp_path, feeds=[{"x": x[None]} for x in calib.x])
    sess = ort.InferenceSession(str(qdq), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"x": held.x})[0]
    assert (got.argmax(axis=1) == ref.argmax(axis=1)).mean() >= 0.98
