"""Side-by-side latency of single operators (a convolution with each activation, the exp family
of elementwise ops) in edgec and onnxruntime: what the model benchmarks do not isolate.

Each case is a one- or two-node ONNX model built here with fixed seeds, compiled by edgec and
timed through the Python loader against an onnxruntime session on the same input, with the
protocol of `bench_models.py` (outputs compared first, warm-up, interleaved pairs, medians and
the median of the per-pair ratio), at one thread unless told otherwise.

    python benchmarks/bench_ops.py [--cases conv_relu,sigmoid] [--pairs 30] [--threads 1]
        [--target x86] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from bench_models import interleave, ort_session, rel_error, set_threads, summary
from onnx import TensorProto, helper, numpy_helper

IR_VERSION = 10  # onnxruntime 1.31 reads IR 13 at most
FEATURES = [1, 64, 56, 56]  # ResNet-18's first stage


def conv_then(act: str, **attrs) -> Callable[[], onnx.ModelProto]:
    """A 3x3 convolution 64 -> 64 with padding 1 on FEATURES, then `act` (none if empty)."""

    def build() -> onnx.ModelProto:
        rng = np.random.default_rng(0)
        w = (rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32)
        b = (rng.standard_normal(64) * 0.1).astype(np.float32)
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if act else "y"],
                                  pads=[1, 1, 1, 1])]
        if act:
            nodes.append(helper.make_node(act, ["c"], ["y"], **attrs))
        return _model(nodes, FEATURES, [numpy_helper.from_array(w, "w"),
                                        numpy_helper.from_array(b, "b")])

    return build


def elementwise(nodes: list[onnx.NodeProto], shape: list[int],
                out_type: int = TensorProto.FLOAT) -> Callable[[], onnx.ModelProto]:
    return lambda: _model(nodes, shape, [], out_type)


def layer_norm(shape: list[int]) -> Callable[[], onnx.ModelProto]:
    """LayerNormalization over the last axis with a scale and a bias (a transformer's)."""

    def build() -> onnx.ModelProto:
        rng = np.random.default_rng(0)
        d = shape[-1]
        inits = [numpy_helper.from_array((1 + 0.1 * rng.standard_normal(d)).astype(np.float32),
                                         "scale"),
                 numpy_helper.from_array((0.1 * rng.standard_normal(d)).astype(np.float32),
                                         "bias")]
        node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1)
        return _model([node], shape, inits)

    return build


def _model(nodes, shape, inits, out_type: int = TensorProto.FLOAT) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "op", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                        shape)],
                          [helper.make_tensor_value_info("y", out_type, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=IR_VERSION)


CASES: dict[str, tuple[str, Callable[[], onnx.ModelProto]]] = {
    "conv": ("Conv 3x3 64->64, 56x56", conv_then("")),
    "conv_relu": ("Conv 3x3 + Relu", conv_then("Relu")),
    "conv_leakyrelu": ("Conv 3x3 + LeakyRelu", conv_then("LeakyRelu", alpha=0.1)),
    "conv_sigmoid": ("Conv 3x3 + Sigmoid", conv_then("Sigmoid")),
    "conv_tanh": ("Conv 3x3 + Tanh", conv_then("Tanh")),
    "exp": ("Exp 1x64x112x112", elementwise([helper.make_node("Exp", ["x"], ["y"])],
                                            [1, 64, 112, 112])),
    "sigmoid": ("Sigmoid 1x64x112x112", elementwise([helper.make_node("Sigmoid", ["x"], ["y"])],
                                                    [1, 64, 112, 112])),
    "silu": ("x * Sigmoid(x) 1x64x112x112",
             elementwise([helper.make_node("Sigmoid", ["x"], ["s"]),
                          helper.make_node("Mul", ["x", "s"], ["y"])], [1, 64, 112, 112])),
    "softmax": ("Softmax 256x1000, last axis",
                elementwise([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [256, 1000])),
    "tanh": ("Tanh 1x64x112x112", elementwise([helper.make_node("Tanh", ["x"], ["y"])],
                                              [1, 64, 112, 112])),
    "attention_softmax": ("Softmax 1x12x128x128 (attention scores), last axis",
                          elementwise([helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
                                      [1, 12, 128, 128])),
    "ocr_softmax": ("Softmax 1x40x6625 (PP-OCR's recognizer head), last axis",
                    elementwise([helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
                                [1, 40, 6625])),
    "layernorm": ("LayerNormalization 1x128x768, last axis", layer_norm([1, 128, 768])),
    "reduce_mean": ("ReduceMean 256x1000, last axis",
                    elementwise([helper.make_node("ReduceMean", ["x"], ["y"], axes=[-1])],
                                [256, 1000])),
    "argmax": ("ArgMax 256x1000, last axis",
               elementwise([helper.make_node("ArgMax", ["x"], ["y"], axis=-1)], [256, 1000],
                           TensorProto.INT64)),
}


def bench(name: str, a: argparse.Namespace, work: Path) -> dict:
    import edgec

    title, build = CASES[name]
    path = work / f"{name}.onnx"
    onnx.save(build(), path)
    model = edgec.load(edgec.compile(path, work / name, target=a.target).out_dir)
    threads = set_threads(model, a.threads)
    sess = ort_session(path, a.threads, "all")
    shape = [d.dim_value for d in onnx.load(path).graph.input[0].type.tensor_type.shape.dim]
    feeds = {"x": (np.random.default_rng(1).standard_normal(shape) * 3).astype(np.float32)}
    err = rel_error([model.run(feeds)["y"]], sess.run(None, feeds))
    if not err <= a.rtol:
        raise SystemExit(f"FAIL {name}: edgec departs from onnxruntime (relative error {err:.3g})")
    interleave(lambda: model.run(feeds), lambda: sess.run(None, feeds), 5)
    s = summary(*interleave(lambda: model.run(feeds), lambda: sess.run(None, feeds), a.pairs))
    return {"case": name, "title": title, "threads": threads, "edgec_ms": s["a_ms"],
            "onnxruntime_ms": s["b_ms"], "ratio": s["ratio"], "max_rel_error": err}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", default="x86")
    ap.add_argument("--rtol", type=float, default=1e-4,
                    help="largest relative error (of the output's largest magnitude) allowed")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    unknown = [c for c in a.cases.split(",") if c not in CASES]
    if unknown:
        raise SystemExit(f"unknown cases {unknown}; choose from {', '.join(CASES)}")
    print("| case | threads | edgec ms | onnxruntime ms | edgec / onnxruntime | max rel error |")
    print("|---|---|---|---|---|---|")
    results = []
    with tempfile.TemporaryDirectory(prefix="edgec-ops-") as tmp:
        for name in a.cases.split(","):
            r = bench(name, a, Path(tmp))
            results.append(r)
            print(f"| {r['title']} | {r['threads']} | {r['edgec_ms']:.3f} | "
                  f"{r['onnxruntime_ms']:.3f} | {r['ratio']:.2f} | {r['max_rel_error']:.1e} |",
                  flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
