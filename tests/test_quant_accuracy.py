"""Quantization's accuracy on real data: an MLP trained here on scikit-learn's digits
(edgec/testing/digits.py), quantized by edgec with calibration on training images, compiled, and run
on the held-out split. Int8 may lose at most 0.5 points of top-1 accuracy against the float
model (onnxruntime), 4-bit weights with ADMM at most 1 point (the issue's bounds); 3 and 2
bits are reported by benchmarks/accuracy_quant.py, not bounded here."""

from __future__ import annotations

import io

import numpy as np
import onnxruntime as ort
import pytest

import edgec
from edgec.testing.digits import accuracy, train


@pytest.fixture(scope="module")
def trained():
    model, data = train()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    logits = np.concatenate([sess.run(None, {"pixels": x[None]})[0] for x in data.x_test])
    return model, data, accuracy(logits, data.y_test)


def test_the_float_model_learned(trained):
    assert trained[2] >= 96.0


@pytest.mark.parametrize("bits,method,budget", [("int8", "minmax", 0.5), ("int8", "kl", 0.5),
                                                ("int8", "percentile", 0.5),
                                                ("int4", "admm", 1.0)])
def test_quantized_accuracy_within_budget(trained, bits, method, budget, tmp_path):
    model, data, float_acc = trained
    calib = {"pixels": data.x_train[:200, None]}
    art = edgec.compile(model, tmp_path, quantize=bits, calib=calib, calib_method=method,
                        log=io.StringIO())
    assert art.manifest["ops"].get("QGemm") == 3  # the three layers run on integers
    lib = edgec.load(tmp_path)
    logits = np.concatenate([lib.run({"pixels": x[None]})["logits"] for x in data.x_test])
    acc = accuracy(logits, data.y_test)
    assert float_acc - acc <= budget, f"{bits} {method}: {acc:.2f} against {float_acc:.2f}"
