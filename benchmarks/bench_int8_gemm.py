"""Int8 GEMM: edgec's MatMulInteger (uint8 A x constant int8 B, the int8 micro-kernel) against
onnxruntime's, on the GEMM shapes (M, N, K) of BENCHMARKING.md, 1 thread, interleaved.

Per shape: one MatMulInteger model, compiled by edgec and loaded through the Python loader,
and an onnxruntime session (1 intra-op thread); outputs checked against exact integer
arithmetic (A is drawn below 128, where onnxruntime's AVX2 kernel, vpmaddubsw, cannot
saturate, so both must be exact); warm-up, then edgec, onnxruntime, edgec, ... for N pairs:
medians and the median per-pair ratio (edgec / onnxruntime; below 1 is faster).

    python benchmarks/bench_int8_gemm.py [--shapes 64x3136x64,256x196x2304|all] [--pairs 50]
        [--target x86[,x86-avx2,...]]
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
# the ten int8 GEMM shapes of BENCHMARKING.md
ALL_SHAPES = ("500x500x500,2000x2000x2000,64x3136x64,128x784x64,256x196x2304,512x49x2304,"
              "512x49x4608,32x12544x27,1024x49x1024,128x3136x128")


def model(m: int, n: int, k: int, b: np.ndarray):
    g = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "gemm",
        [helper.make_tensor_value_info("a", T.UINT8, [m, k])],
        [helper.make_tensor_value_info("y", T.INT32, [m, n])],
        [numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"MxNxK,...; 'all' for {ALL_SHAPES}")
    ap.add_argument("--pairs", type=int, default=50)
    ap.add_argument("--target", default="x86", type=lambda s: s.split(","),
                    help="edgec target(s), comma-separated, each timed against the same "
                         "onnxruntime session in the same run")
    args = ap.parse_args(argv)
    shapes = ALL_SHAPES if args.shapes == "all" else args.shapes
    rng = np.random.default_rng(0)
    print(f"target {', '.join(args.target)}, 1 thread, {args.pairs} interleaved pairs, "
          f"onnxruntime {ort.__version__}")
    print(f"{'M x N x K':>18} {'target':>11} {'edgec ms':>9} {'ort ms':>9} {'ratio':>6} "
          f"{'edgec GOP/s':>12} {'ort GOP/s':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in shapes.split(","):
            m, n, k = (int(x) for x in spec.split("x"))
            b = rng.integers(-128, 128, (k, n)).astype(np.int8)
            a = rng.integers(0, 128, (m, k)).astype(np.uint8)
            onnx_model = model(m, n, k, b)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            sess = ort.InferenceSession(onnx_model.SerializeToString(), opts,
                                        providers=["CPUExecutionProvider"])
            feeds = {"a": a}
            want = a.astype(np.int64) @ b.astype(np.int64)
            (got_o,) = sess.run(None, feeds)
            for target in args.target:
                art = edgec.compile(onnx_model, Path(tmp) / f"{spec}_{target}", target=target,
                                    name="gemm")
                lib = edgec.load(art.out_dir)
                lib.set_num_threads(1)
                got_e = lib.run(feeds)["y"]
                if not (np.array_equal(got_e, want) and np.array_equal(got_o, want)):
                    print(f"{spec}: outputs differ from exact integer arithmetic", file=sys.stderr)
                    return 1
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
                ops = 2 * m * n * k / 1e6
                print(f"{spec:>18} {target:>11} {e:9.3f} {o:9.3f} {ratio:6.2f} {ops / e:12.1f} "
                      f"{ops / o:10.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
