"""`edgec bench OUT [--vs MODEL.onnx]`: time a compiled artifact, and onnxruntime on the
original model in the same run, at 1 thread and at N.

The protocol of BENCHMARKS.md
(How these are measured): both loaded in this process on the same random inputs,
outputs checked against each other first (compiler/check.py: a fast wrong answer never
counts; the tolerance is the user's, or the quantization's own budget, or by dtype), warmed up, then
called alternately for `pairs` pairs; per thread count the median of each and the median of
the per-pair ratio. onnxruntime's threads do not spin after a call (they would hold the
core edgec's threads need next).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import IO

import numpy as np

from ..errors import EdgecError
from ..ir.dtypes import DType


def random_inputs(manifest: dict, seed: int = 0) -> dict[str, np.ndarray]:
    """One array per input of the artifact: normal floats, small integers, random bools."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in manifest["inputs"]:
        dt = DType(spec["dtype"]).np
        if np.issubdtype(dt, np.floating):
            a = rng.standard_normal(spec["shape"])
        elif dt == np.bool_:
            a = rng.random(spec["shape"]) < 0.5
        else:
            a = rng.integers(0, 10, spec["shape"])
        feeds[spec["name"]] = np.asarray(a, dtype=dt)
    return feeds


def onnxruntime_session(model: str, threads: int):
    try:
        import onnxruntime as ort
    except ImportError:
        raise EdgecError("--vs needs onnxruntime: pip install 'edgec[check]'") from None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        raise EdgecError(f"onnxruntime could not load {model}: {e}") from None


def alternate(calls: dict[str, Callable[[], object]], pairs: int, warmup: int = 5
              ) -> dict[str, list[float]]:
    """ms per call of each of `calls`, called in turn `pairs` times after `warmup` rounds."""
    times: dict[str, list[float]] = {k: [] for k in calls}
    for r in range(pairs + warmup):
        for k, f in calls.items():
            t0 = time.perf_counter()
            f()
            if r >= warmup:
                times[k].append((time.perf_counter() - t0) * 1e3)
    return times


def bench(artifact: str, vs: str | None = None, threads: Sequence[int] | None = None,
          pairs: int = 50, tol: float | None = None, out: IO[str] | None = None
          ) -> list[dict]:
    """Time `artifact` (and onnxruntime on `vs`) at each thread count; prints a table to
    `out` and returns its rows. `tol`: the largest relative error of the outputs (None: the
    default of check.tolerances)."""
    from ..runtime.loader import load, read_manifest
    from .check import check_outputs, output_errors, tolerances

    manifest = read_manifest(artifact)
    if manifest.get("sanitize"):
        raise EdgecError(f"{artifact} is built with --sanitize: its times would be the "
                         "sanitizers'; time a build without it")
    if manifest.get("artifact") == "hls-project":
        raise EdgecError(f"{artifact} is an HLS project: its speed is the FPGA's, estimated in "
                         "report.txt and hls_estimate.json (its C-simulation's time on this "
                         "CPU says nothing of it); `edgec run` checks its outputs")
    model = load(artifact)
    tols = tolerances(model.manifest, tol)
    feeds = random_inputs(model.manifest)
    counts = list(threads) if threads else sorted({1, os.cpu_count() or 1})
    if any(t < 1 for t in counts):
        raise EdgecError(f"--threads: thread counts must be 1 or more, not {counts}")
    rows = []
    for t in counts:
        model.set_num_threads(t)
        calls: dict[str, Callable[[], object]] = {"edgec": lambda: model.run(feeds)}
        err = "-"
        if vs:
            sess = onnxruntime_session(vs, t)
            names = [o.name for o in sess.get_outputs()]
            want = dict(zip(names, sess.run(None, feeds)))
            worst = check_outputs(output_errors(model.run(feeds), want), tols, ": not timed")
            err = f"{worst:.2g}"
            calls["onnxruntime"] = lambda s=sess: s.run(None, feeds)
        times = alternate(calls, pairs)
        row = {"threads": t, "edgec_ms": statistics.median(times["edgec"]), "error": err}
        if vs:
            row["onnxruntime_ms"] = statistics.median(times["onnxruntime"])
            row["edgec_over_onnxruntime"] = statistics.median(
                a / b for a, b in zip(times["edgec"], times["onnxruntime"]))
        rows.append(row)
    if out is not None:
        name = model.manifest["name"]
        head = "| threads | edgec ms |" + (" onnxruntime ms | edgec / onnxruntime | max rel. "
                                            "error |" if vs else "")
        print(f"{name} ({model.manifest['target']}), {pairs} alternating pairs, medians",
              file=out)
        print(head, file=out)
        print("|---" * (head.count("|") - 1) + "|", file=out)
        for r in rows:
            line = f"| {r['threads']} | {r['edgec_ms']:.3f} |"
            if vs:
                line += (f" {r['onnxruntime_ms']:.3f} | {r['edgec_over_onnxruntime']:.2f} |"
                         f" {r['error']} |")
            print(line, file=out)
    return rows
