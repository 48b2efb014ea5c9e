"""Int8 GEMM: edgec's MatMulInteger (uint8 A x constant int8 B, the int8 micro-kernel) against
onnxruntime's, on the GEMM shapes (M, N, K) of BENCHMARKS.md, 1 thread, interleaved.

Per shape: one MatMulInteger model, compiled by edgec and loaded through the Python loader,
and an onnxruntime session (1 intra-op thread); outputs checked against exact integer
arithmetic (A is drawn below 128, where onnxruntime's AVX2 kernel, vpmaddubsw, cannot
saturate, so both must be exact); warm-up, then edgec, onnxruntime, edgec, ... for N pairs:
medians and the median per-pair ratio (edgec / onnxruntime; below 1 is faster). "edgec C ms"
is the library alone, called from a C loop on aligned buffers (best of 20 means of 50 calls):
what the Python call and its output array add shows against it.

    python benchmarks/bench_int8_gemm.py [--shapes 64x3136x64,256x196x2304|all] [--pairs 50]
        [--target x86[,x86-avx2,...]] [--weight-bits 8|7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
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
# the ten int8 GEMM shapes (BENCHMARKS.md, How these are measured)
ALL_SHAPES = ("500x500x500,2000x2000x2000,64x3136x64,128x784x64,256x196x2304,512x49x2304,"
              "512x49x4608,32x12544x27,1024x49x1024,128x3136x128")


def model(m: int, n: int, k: int, b: np.ndarray):
    g = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "gemm",
        [helper.make_tensor_value_info("a", T.UINT8, [m, k])],
        [helper.make_tensor_value_info("y", T.INT32, [m, n])],
        [numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)


C_LOOP = r"""
#include "gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}
int main(void)
{
    gemm_set_num_threads(1);
    size_t na = gemm_input_bytes(0), ny = gemm_output_bytes(0);
    unsigned char *a = aligned_alloc(64, (na + 64) / 64 * 64);
    void *y = aligned_alloc(64, (ny + 64) / 64 * 64);
    void *ws = aligned_alloc(64, (gemm_workspace_size() + 64) / 64 * 64);
    for (size_t i = 0; i < na; ++i)
        a[i] = (unsigned char)(i * 7 % 128);
    const void *in[1] = {a};
    void *out[1] = {y};
    for (int i = 0; i < 20; ++i)
        gemm_run(in, out, ws);
    double best = 1e30;
    for (int r = 0; r < 20; ++r) {
        double t = now();
        for (int i = 0; i < 50; ++i)
            gemm_run(in, out, ws);
        t = (now() - t) / 50;
        best = t < best ? t : best;
    }
    printf("%.6f\n", best);
    return 0;
}
"""


def c_loop_ms(out_dir: Path) -> float | None:
    """The library of `out_dir` timed from C (see the module doc); None where the host cannot
    build or run it."""
    src, exe = out_dir / "loop.c", out_dir / "loop"
    src.write_text(C_LOOP)
    try:
        subprocess.run(["cc", "-O2", f"-I{out_dir}", str(src), str(out_dir / "libgemm.a"),
                        "-lm", "-pthread", "-o", str(exe)], check=True, capture_output=True)
        return float(subprocess.run([str(exe)], check=True, capture_output=True,
                                    text=True).stdout)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"MxNxK,...; 'all' for {ALL_SHAPES}")
    ap.add_argument("--pairs", type=int, default=50)
    ap.add_argument("--target", default="x86", type=lambda s: s.split(","),
                    help="edgec target(s), comma-separated, each timed against the same "
                         "onnxruntime session in the same run")
    ap.add_argument("--weight-bits", type=int, default=8, choices=(8, 7),
                    help="7: B drawn from [-64, 64), whose byte pairs fit int16 (kernel IR "
                         "dot4p: AVX2's vpmaddubsw), A then from all of 0..255")
    args = ap.parse_args(argv)
    shapes = ALL_SHAPES if args.shapes == "all" else args.shapes
    rng = np.random.default_rng(0)
    print(f"target {', '.join(args.target)}, 1 thread, {args.pairs} interleaved pairs, "
          f"{args.weight_bits}-bit B, onnxruntime {ort.__version__}")
    print(f"{'M x N x K':>18} {'target':>11} {'edgec ms':>9} {'ort ms':>9} {'ratio':>6} "
          f"{'edgec GOP/s':>12} {'ort GOP/s':>10} {'edgec C ms':>11} {'C GOP/s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in shapes.split(","):
            m, n, k = (int(x) for x in spec.split("x"))
            # (7-bit B keeps onnxruntime's vpmaddubsw exact over all of A's range)
            half = 1 << (args.weight_bits - 1)
            b = rng.integers(-half, half, (k, n)).astype(np.int8)
            a = rng.integers(0, 128 if half == 128 else 256, (m, k)).astype(np.uint8)
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
                c_ms = c_loop_ms(art.out_dir) if target == "x86" else None
                c_cols = f" {c_ms:11.3f} {ops / c_ms:8.1f}" if c_ms else f" {'-':>11} {'-':>8}"
                print(f"{spec:>18} {target:>11} {e:9.3f} {o:9.3f} {ratio:6.2f} {ops / e:12.1f} "
                      f"{ops / o:10.1f}{c_cols}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
