"""C backend vs LLVM backend: latency of the same model compiled both ways (issue 5's speed goal).

Per model (the zoo's, as `bench_models.py` builds them): compile with `--backend c` and with
`--backend llvm` (same target, same pipeline, so the same kernel IR), load both through the
Python loader, check that each agrees with onnxruntime and that they agree with each other,
then after a warm-up alternate C, LLVM, C, ... for N pairs at one thread: the medians and the
median of the per-pair ratio LLVM / C (goal: at most 1.1).

    python benchmarks/bench_backends.py [--models resnet18,mobilenet_v2] [--pairs 30]
        [--target x86] [--threads 1] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from bench_models import interleave, ort_session, random_feeds, rel_error

BACKENDS = ("c", "llvm")


def bench(name: str, a: argparse.Namespace, work: Path) -> dict:
    import edgec
    from edgec import zoo

    path = zoo.save(getattr(zoo, name)(), work / f"{name}.onnx")
    feeds = random_feeds(onnx.load(path, load_external_data=False))
    sess = ort_session(path, a.threads, "all")
    want = sess.run(None, feeds)
    names = [o.name for o in sess.get_outputs()]
    models, compile_s, outs = {}, {}, {}
    for backend in BACKENDS:
        t = time.perf_counter()
        art = edgec.compile(path, work / f"{name}_{backend}", target=a.target, backend=backend)
        compile_s[backend] = time.perf_counter() - t
        models[backend] = edgec.load(art.out_dir)
        models[backend].set_num_threads(a.threads)
        outs[backend] = [models[backend].run(feeds)[n] for n in names]
        rel = rel_error(outs[backend], want)
        if not rel <= a.rtol:  # also catches NaN
            raise SystemExit(f"FAIL {name} ({backend} backend): departs from onnxruntime "
                             f"(max relative error {rel:.3g} > {a.rtol:g}); no timing counts")
    same = all(np.array_equal(x, y) for x, y in zip(outs["c"], outs["llvm"]))
    between = rel_error(outs["llvm"], outs["c"])

    def run(backend: str):
        return lambda: models[backend].run(feeds)

    interleave(run("c"), run("llvm"), 5)  # warm-up
    c_ms, llvm_ms = interleave(run("c"), run("llvm"), a.pairs)
    return {"model": name, "threads": a.threads, "pairs": a.pairs,
            "c_ms": statistics.median(c_ms), "llvm_ms": statistics.median(llvm_ms),
            "llvm_over_c": statistics.median(b / a for a, b in zip(c_ms, llvm_ms)),
            "bitwise_equal": same, "max_rel_llvm_vs_c": between, "compile_s": compile_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", default="x86")
    ap.add_argument("--rtol", type=float, default=1e-4,
                    help="max relative error against onnxruntime")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    print("| model | threads | C ms | LLVM ms | LLVM/C (median of pairs) | bitwise equal | "
          "compile s (C, LLVM) |")
    print("|---|---|---|---|---|---|---|")
    results = []
    with tempfile.TemporaryDirectory(prefix="edgec-backends-") as tmp:
        for name in a.models.split(","):
            r = bench(name, a, Path(tmp))
            results.append(r)
            print(f"| {name} | {r['threads']} | {r['c_ms']:.3f} | {r['llvm_ms']:.3f} | "
                  f"{r['llvm_over_c']:.3f} | {r['bitwise_equal']} | "
                  f"{r['compile_s']['c']:.1f}, {r['compile_s']['llvm']:.1f} |", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
