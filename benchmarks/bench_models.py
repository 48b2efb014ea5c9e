"""Side-by-side latency of edgec and onnxruntime on the zoo models, per BENCHMARKING.md.

For each model: compile with edgec (timed, ONNX to finished static library), load the
artifact through the Python loader (the same C an app links) and an onnxruntime session,
check that the outputs agree, warm both up, then alternate edgec / onnxruntime for N pairs and
report the medians and the median per-pair ratio. Also reports the library's code size without
weights (`size -A` of the archive members: text + rodata, weights live in their own object),
the weights' size, and the workspace against the liveness lower bound.

    python benchmarks/bench_models.py [--models mlp,resnet18,mobilenet_v2] [--pairs 30]
        [--threads 1] [--target x86] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

import edgec
from edgec import zoo

# fp32 single-core floor from BENCHMARKING.md (3.6 GFLOP at 170 GFLOP/s)
FLOOR_MS = {"resnet18": 21.0}


def code_size(lib: Path) -> dict[str, int]:
    """Bytes of code and read-only data per archive member, from `size -A`."""
    out = subprocess.run(["size", "-A", str(lib)], capture_output=True, text=True,
                         check=True).stdout
    sizes: dict[str, int] = {}
    member = ""
    for line in out.splitlines():
        if "(ex " in line:
            member = line.split()[0]
            continue
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith((".text", ".rodata")) and parts[1].isdigit():
            sizes[member] = sizes.get(member, 0) + int(parts[1])
    return sizes


def bench_one(name: str, pairs: int, threads: int, target: str, work: Path) -> dict:
    path = work / f"{name}.onnx"
    zoo.save(getattr(zoo, name)(), path)
    t0 = time.perf_counter()
    art = edgec.compile(path, work / name, target=target)
    compile_s = time.perf_counter() - t0
    model = edgec.load(art.out_dir)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {i["name"]: rng.standard_normal(i["shape"]).astype(np.float32)
             for i in art.manifest["inputs"]}

    got = model.run(feeds)
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    rel = max(float(np.abs(got[k] - want[k]).max() / np.abs(want[k]).max()) for k in want)
    if rel > 1e-4:
        raise SystemExit(f"{name}: edgec departs from onnxruntime (relative error {rel:.3g})")

    for _ in range(3):
        model.run(feeds)
        sess.run(None, feeds)
    a_ms, b_ms = [], []
    for _ in range(pairs):
        t = time.perf_counter()
        model.run(feeds)
        a_ms.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        sess.run(None, feeds)
        b_ms.append((time.perf_counter() - t) * 1e3)
    ratios = [a / b for a, b in zip(a_ms, b_ms)]
    sizes = code_size(art.library)
    weights_member = f"{name}_weights.o"
    m = art.manifest
    return {
        "model": name, "threads": threads, "pairs": pairs, "target": target,
        "edgec_ms": statistics.median(a_ms), "onnxruntime_ms": statistics.median(b_ms),
        "ratio": statistics.median(ratios), "max_rel_error": rel,
        "compile_s": compile_s,
        "code_bytes": sum(v for k, v in sizes.items() if k != weights_member),
        "weights_bytes": m["weights_bytes"],
        "workspace_bytes": m["workspace_bytes"],
        "lower_bound_bytes": m["memory"]["lower_bound_bytes"],
        "floor_ms": FLOOR_MS.get(name),
    }


def machine() -> str:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next(line.split(":", 1)[1].strip() for line in lscpu.splitlines()
                     if line.startswith("Model name"))
    except (OSError, StopIteration):
        model = platform.processor()
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mlp,resnet18,mobilenet_v2")
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", default="x86")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d')} on {machine()}; onnxruntime {ort.__version__}, "
          f"edgec {edgec.__version__}, python {platform.python_version()}")
    print("| model | threads | edgec ms | onnxruntime ms | ratio (median of pairs) | "
          "compile s | code KB | weights MB | workspace KB (lower bound) |")
    print("|---|---|---|---|---|---|---|---|---|")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            r = bench_one(name, a.pairs, a.threads, a.target, Path(tmp))
            results.append(r)
            print(f"| {name} | {r['threads']} | {r['edgec_ms']:.2f} | {r['onnxruntime_ms']:.2f} | "
                  f"{r['ratio']:.2f} | {r['compile_s']:.2f} | {r['code_bytes'] / 1024:.1f} | "
                  f"{r['weights_bytes'] / 2**20:.2f} | {r['workspace_bytes'] / 1024:.0f} "
                  f"({r['lower_bound_bytes'] / 1024:.0f}) |", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
