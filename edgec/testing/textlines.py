"""Pretrained networks on real inputs, for quantization's accuracy: PaddleOCR's text-line
orientation classifier (ch_ppocr_mobile_v2.0_cls, a MobileNetV3-small, input x [N,3,48,192],
softmax over the labels 0 and 180 degrees) and text recognizer (PP-OCRv4 rec, an SVTR-LCNet,
softmax over 6625 characters per 8 columns) that the rapidocr-onnxruntime wheel ships, on word
crops of the scanned page of text that the scikit-image wheel ships (skimage/data/page.png).
Both are read straight from the wheel files, nothing installed.

    model = load_model(rapidocr_wheel)         # the classifier, as PaddleOCR exported it
    crops = load_crops(skimage_wheel)          # x [n,3,48,192] float32, y, line

Lines are rows of the page with ink (darker than the local paper by 0.2); words are their ink
columns, gaps under 5 pixels closed. Each run of consecutive words of a line is one crop, a box
as a text detector draws it, given upright (label 0) and turned 180 degrees (label 1), and
prepared as rapidocr does: scaled to height 48 keeping its aspect (width at most 192 for the
classifier; bilinear, here by PIL where rapidocr uses OpenCV), (pixel / 255 - 0.5) / 0.5,
padded right with zeros. The page's last line, cut by the image's edge, is left out.
"""

from __future__ import annotations

import io
import math
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

CLASSIFIER = "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"
RECOGNIZER = "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"
PAGE = "skimage/data/page.png"
HEIGHT, WIDTH = 48, 192
INK = 0.2  # darker than the local paper by this much (of full scale) is ink
CALIB_LINES = (0, 3, 5)  # the title and two lines of body text; the other lines are held out


@dataclass
class Crops:
    x: np.ndarray     # [n, 3, 48, 192] float32, the classifier's input
    y: np.ndarray     # [n] 0 upright, 1 turned 180 degrees
    line: np.ndarray  # [n] the page line each crop comes from

    def subset(self, mask: np.ndarray) -> Crops:
        return Crops(self.x[mask], self.y[mask], self.line[mask])

    def split(self, calib_lines=CALIB_LINES) -> tuple[Crops, Crops]:
        """(calibration, held out): no line in both."""
        calib = np.isin(self.line, calib_lines)
        return self.subset(calib), self.subset(~calib)


def fetch_wheel(package: str, folder: Path) -> Path:
    """`pip download --no-deps package` into `folder`; the wheel's path. Raises
    subprocess.CalledProcessError (with pip's output) if pip fails."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", package,
                    "-d", str(folder)], check=True, capture_output=True, text=True)
    prefix = package.replace("-", "_").lower() + "-"  # wheel names keep the project's case
    return next(w for w in folder.glob("*.whl") if w.name.lower().startswith(prefix))


def load_model(wheel, path: str = CLASSIFIER) -> onnx.ModelProto:
    """An ONNX model of the rapidocr-onnxruntime wheel: the classifier, or RECOGNIZER."""
    with zipfile.ZipFile(wheel) as z:
        return onnx.load_model_from_string(z.read(path))


def read_page(wheel) -> np.ndarray:
    """skimage's page.png (grey, uint8) from the scikit-image wheel at `wheel`."""
    from PIL import Image

    with zipfile.ZipFile(wheel) as z:
        return np.asarray(Image.open(io.BytesIO(z.read(PAGE))).convert("L"))


def word_runs(page: np.ndarray, max_words: int | None = None
              ) -> Iterator[tuple[int, np.ndarray]]:
    """(line, crop) for each run of consecutive words (at most `max_words`) of each line."""
    for k, (top, bottom, words) in enumerate(_lines(page)):
        for i in range(len(words)):
            for j in range(i, min(len(words), i + (max_words or len(words)))):
                yield k, page[top:bottom, words[i][0]:words[j][1]]


def load_crops(wheel, max_words: int | None = None, rounded: bool = True) -> Crops:
    """The classifier's crops of page.png, read from the scikit-image wheel at `wheel`;
    `max_words` bounds the words per crop; `rounded`: as prepare."""
    xs, ys, lines = [], [], []
    for k, crop in word_runs(read_page(wheel), max_words):
        xs += [prepare(crop, rounded=rounded), prepare(crop[::-1, ::-1], rounded=rounded)]
        ys += [0, 1]
        lines += [k, k]
    return Crops(np.stack(xs), np.array(ys), np.array(lines))


def characters(recognizer: onnx.ModelProto) -> list[str]:
    """The recognizer's output classes: CTC's blank, its dictionary (in its metadata), space."""
    table = next(p.value for p in recognizer.metadata_props if p.key == "character")
    return ["", *table.splitlines(), " "]


def ctc_text(probs: np.ndarray, chars: list[str]) -> str:
    """The text of one recognizer output [T, classes]: best class per step, repeats merged,
    blanks dropped."""
    ids = probs.argmax(axis=-1)
    keep = np.r_[True, ids[1:] != ids[:-1]] & (ids != 0)
    return "".join(chars[i] for i in ids[keep])


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of True."""
    d = np.diff(np.r_[0, mask.astype(np.int8), 0])
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


def _lines(page: np.ndarray) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """(top, bottom, word column spans) of each text line of a grey page (uint8)."""
    from scipy import ndimage

    grey = page.astype(np.float32) / 255
    paper = ndimage.uniform_filter(ndimage.maximum_filter(grey, size=15), 15)
    ink = paper - grey > INK
    out = []
    for top, bottom in _runs(ink.mean(axis=1) > 0.02):
        if bottom - top < 8 or top == 0 or bottom == len(page):  # noise, or cut by the edge
            continue
        cols = ndimage.binary_closing(ink[top:bottom].any(axis=0), np.ones(5, bool))
        out.append((top, bottom, [(a, b) for a, b in _runs(cols) if b - a >= 3]))
    return out


def prepare(crop: np.ndarray, width: int = WIDTH, rounded: bool = True) -> np.ndarray:
    """A crop as rapidocr feeds it: [3, 48, width], scaled to height 48, padded right.
    `rounded`: the scaled pixels rounded to 8 bits (PIL's uint8 resize), as an app's image
    would be; else the same bilinear resize in float (PIL mode "F"), within a grey level of
    it: the input's own rounding, against which the float model's answers are measured
    (pretrained_quant.py's floor row)."""
    from PIL import Image

    h, w = crop.shape
    scaled = min(width, math.ceil(HEIGHT * w / h))
    src = np.ascontiguousarray(crop)
    img = Image.fromarray(src if rounded else src.astype(np.float32))  # uint8: "L", float: "F"
    img = img.resize((scaled, HEIGHT), Image.Resampling.BILINEAR)
    x = np.zeros((3, HEIGHT, width), np.float32)
    x[:, :, :scaled] = (np.asarray(img, np.float32) / 255 - 0.5) / 0.5
    return x
