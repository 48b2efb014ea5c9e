"""Int8 GEMM: edgec's MatMulInteger (uint8 A x constant int8 B, the int8 micro-kernel) against
onnxruntime's, on the GEMM shapes (M, N, K) of BENCHMARKING.md, 1 thread, interleaved.

Per shape: one MatMulInteger model, compiled by edgec and loaded through the Python loader,
and an onnxruntime session (1 intra-op thread); outputs checked against exact integer
arithmetic (A is drawn below 128, where onnxruntime's AVX2 kernel, vpmaddubsw, cannot
saturate, so both must be exact); warm-up, then edgec, onnxruntime, edgec, ... for N pairs:
medians and the median per-pair ratio (edgec / onnxruntime; below 1 is faster).

    python benchmarks/bench_int8_gemm.py [--shapes 64x3136x64,256x196x2304] [--pairs 50]
        [--target x86]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import edgec

DEFAULT_SHAPES = "64x3136x64,256x196x2304,1024x49x1024"


def model(m: int, n: int, k: int, b: np.ndarray):
    g = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "gemm",
        [helper.make_tensor_value_info("a", T.UINT8, [m, k])],
        [helper.make_tensor_value_info("y", T.INT32, [m, n])],
        [numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--pairs", type=int, default=50)
    ap.add_argument("--target", default="x86")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"target {args.target}, 1 thread, {args.pairs} interleaved pairs, "
          f"onnxruntime {ort.__version__}")
    print(f"{'M x N x K':>18} {'edgec ms':>9} {'ort ms':>9} {'ratio':>6} {'edgec GOP/s':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.shapes.split(","):
            m, n, k = (int(x) for x in spec.split("x"))
            b = rng.integers(-128, 128, (k, n)).astype(np.int8)
            a = rng.integers(0, 128, (m, k)).astype(np.uint8)
            onnx_model = model(m, n, k, b)
            art = edgec.compile(onnx_model, Path(tmp) / spec, target=args.target, name="gemm")
            lib = edgec.load(art.out_dir)
            lib.set_num_threads(1)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            sess = ort.InferenceSession(onnx_model.SerializeToString(), opts,
                                        providers=["CPUExecutionProvider"])
            want = a.astype(np.int64) @ b.astype(np.int64)
            got_e = lib.run({"a": a})["y"]
            (got_o,) = sess.run(None, {"a": a})
            if not (np.array_equal(got_e, want) and np.array_equal(got_o, want)):
                print(f"{spec}: outputs differ from exact integer arithmetic", file=sys.stderr)
                return 1
            feeds = {"a": a}
            for _ in range(3):
                lib.run(feeds)
                sess.run(None, feeds)
            e_ms, o_ms = [], []
            for _ in range(args.pairs):
                t = time.perf_counter()
                lib.run(feeds)
                e_ms.append((time.perf_counter() - t) * 1e3)
                t = time.perf_counter()
                sess.run(None, feeds)
                o_ms.append((time.perf_counter() - t) * 1e3)
            e, o = statistics.median(e_ms), statistics.median(o_ms)
            ratio = statistics.median(x / y for x, y in zip(e_ms, o_ms))
            print(f"{spec:>18} {e:9.3f} {o:9.3f} {ratio:6.2f} {2 * m * n * k / e / 1e6:12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
