"""The HLS target (issue 34): per model, the design's C-simulation time per image on this host,
its estimate before synthesis (codegen/hls_estimate.py: latency and frames per second at the
clock, LUT, DSP, BRAM18, whether it fits the part, the dataflow simulation against the cycle
model) and whether its outputs equal the x86 build's of the same quantized model.

Each model is quantized by edgec (int8, or --bits int4: 4-bit weights; min-max on 4 seeded
inputs) and compiled for `hls` (and for x86, to compare). The C-simulation runs as
`edgec.load(OUT).run` does (g++ -O2, one thread per dataflow process): the first run, which
builds it, is not timed; then --runs runs, their median.

    python benchmarks/bench_hls.py [--models mlp,tiny_cnn,resnet18_w8]
        [--part xcu250-figd2104-2L-e] [--clock-mhz 200] [--bits int8] [--runs 3]
        [--csim threads|sequential] [--prune 0.9] [--ablate]

--prune S prunes the weights to sparsity S first (unstructured: what sparse PEs skip); the
last column counts the units on sparse PEs and their worst max / mean work per PE.

--ablate (with --prune) measures what each of sparsity, reordering and padding gives: the
design's estimate (no C-simulation) dense, then on sparse PEs with the channels in their own
order and only folds that divide (no padding), then dealt by the interleaved order, then with
padded folds too (the default design); each step's change of latency and frames per second.

--csim sequential runs the C-simulation as Vitis HLS does (EDGEC_CSIM=sequential: the
processes one after another, unbounded streams); by default each process is a thread on
FIFOs of the design's depths, which costs a thread switch per value on depth-2 streams.

Models: the zoo's `mlp`, `tiny_cnn`, `resnet18` (224 x 224, 64 channels: its C-simulation
takes minutes), `mobilenet_v2` (224 x 224), `resnet18_w8` (the same topology at a width of
8 on 32 x 32 inputs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

import edgec
from edgec import zoo
from edgec.targets.target import host_cpu_name

MODELS = {"mlp": zoo.mlp, "tiny_cnn": zoo.tiny_cnn, "resnet18": zoo.resnet18,
          "mobilenet_v2": zoo.mobilenet_v2,
          "resnet18_w8": lambda: zoo.resnet18(width=8, size=32, classes=10)}


def _inputs(model: onnx.ModelProto, n: int, seed: int) -> dict[str, np.ndarray]:
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    return {inp.name: rng.standard_normal((n, *shape[1:])).astype(np.float32)}


def bench(name: str, folder: Path, part: str, clock: float, bits: str, runs: int,
          prune: float = 0.0) -> dict:
    model = MODELS[name]()
    path = folder / f"{name}.onnx"
    onnx.save(model, path)
    opts = {"quantize": bits, "calib": _inputs(model, 4, 0), "name": name}
    if prune:  # unstructured: the sparse PEs skip single zeros
        opts |= {"prune": prune, "prune_pattern": "unstructured"}
    t0 = time.perf_counter()
    h = edgec.compile(path, folder / f"{name}_hls", target="hls", fpga_part=part,
                      clock_mhz=clock, **opts)
    compile_s = time.perf_counter() - t0
    c = edgec.compile(path, folder / f"{name}_x86", target="x86", **opts)
    x = {k: v[:1] for k, v in _inputs(model, 1, 1).items()}
    hm = edgec.load(h.out_dir)
    first = hm.run(x)  # (builds the C-simulation)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        hm.run(x)
        times.append(time.perf_counter() - t)
    want = edgec.load(c.out_dir).run(x)
    equal = all(np.array_equal(first[k], want[k]) for k in want)
    e = h.manifest["hls"]["estimate"]
    sparse = [s["strategy"] for s in h.manifest["kernel_strategies"]
              if s["strategy"].startswith("sparse")]
    spread = [float(t.rsplit("max / mean ", 1)[1].rstrip(")")) for t in sparse]
    return {"model": name, "compile_s": compile_s, "csim_s": statistics.median(times),
            "equal": equal, "estimate": e, "sparse_units": len(sparse),
            "worst_pe_spread": max(spread, default=None)}


def _design(name: str, folder: Path, part: str, clock: float, bits: str, prune: float, *,
            interleave: bool = True, padding: bool = True, strategy: dict | None = None) -> dict:
    """The estimate of `name`'s design (no C-simulation), reordering and padding on or off."""
    from edgec.codegen import hls_fold
    from edgec.ir import sparse_pe

    model = MODELS[name]()
    path = folder / f"{name}.onnx"
    onnx.save(model, path)
    opts = {"quantize": bits, "calib": _inputs(model, 4, 0), "name": name}
    if prune:
        opts |= {"prune": prune, "prune_pattern": "unstructured"}
    if strategy:
        opts["strategy"] = strategy
    sparse_pe.INTERLEAVE, hls_fold.PADDING = interleave, padding
    try:
        h = edgec.compile(path, folder / f"{name}_{interleave}{padding}{prune}", target="hls",
                          fpga_part=part, clock_mhz=clock, **opts)
    finally:
        sparse_pe.INTERLEAVE, hls_fold.PADDING = True, True
    sparse = [s["strategy"] for s in h.manifest["kernel_strategies"]
              if s["strategy"].startswith("sparse")]
    spread = [float(t.rsplit("max / mean ", 1)[1].rstrip(")")) for t in sparse]
    folds = {s["node"]: "{kind}{{{p}}}".format(kind=s["choice"]["kind"], p=",".join(
        f"{k}={v}" for k, v in s["choice"]["params"].items()))
        for s in h.manifest["kernel_strategies"] if s["choice"]["kind"].startswith("hls-sparse")}
    return {"estimate": h.manifest["hls"]["estimate"], "sparse_units": len(sparse),
            "worst_pe_spread": max(spread, default=None), "sparse_folds": folds}


def ablate(names: list[str], part: str, clock: float, bits: str, prune: float) -> None:
    """The table of --ablate (module doc)."""
    print("| model | design | latency ms | frames/s | LUT | DSP | BRAM18 | sparse units "
          "(worst PE) | latency gain of this step | frames/s gain |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    steps = [("dense", 0.0, True, True),
             ("sparse PEs, channel order, folds that divide", prune, False, False),
             ("+ reordering (interleaved order)", prune, True, False),
             ("+ padding (folds that do not divide)", prune, True, True),
             # the same design's sparse units at their folds, channels in their own order:
             # what reordering gives at equal PEs (gain: the design above over this one)
             ("the same PEs, channels in their own order", prune, False, True)]
    with tempfile.TemporaryDirectory(prefix="edgec-bench-hls-") as tmp:
        for name in names:
            before, folds = None, None
            for label, p, interleave, padding in steps:
                last = label.startswith("the same PEs")
                r = _design(name, Path(tmp), part, clock, bits, p, interleave=interleave,
                            padding=padding, strategy=folds if last else None)
                folds = r["sparse_folds"]
                e = r["estimate"]
                m, t = e["model"], e["total"]
                new, old = (before, m) if last else (m, before)
                gain = "" if before is None else \
                    f"{old['latency_ms'] / new['latency_ms']:.3f}x | " \
                    f"{new['fps'] / old['fps']:.3f}x"
                print(f"| {name} | {label} | {m['latency_ms']:.4g} | {m['fps']:.4g} | "
                      f"{t['lut']} | {t['dsp']} | {t['bram18']} | {r['sparse_units']}"
                      + (f" ({r['worst_pe_spread']:.3f})" if r["sparse_units"] else "")
                      + f" | {gain or '- | -'} |", flush=True)
                before = m


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="mlp,tiny_cnn,resnet18_w8")
    ap.add_argument("--part", default="xcu250-figd2104-2L-e")
    ap.add_argument("--clock-mhz", type=float, default=200.0)
    ap.add_argument("--bits", default="int8", choices=["int8", "int4"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--csim", default="threads", choices=["threads", "sequential"])
    ap.add_argument("--prune", type=float, default=0.0,
                    help="prune the weights to this sparsity first (unstructured)")
    ap.add_argument("--ablate", action="store_true",
                    help="what sparsity, reordering and padding each give (needs --prune)")
    a = ap.parse_args(argv)
    if a.ablate:
        if not a.prune:
            ap.error("--ablate needs --prune S (the sparsity whose gains it measures)")
        print(f"host: {host_cpu_name()}; part {a.part} at {a.clock_mhz:g} MHz; {a.bits}; "
              f"pruned to {a.prune:.0%}; estimates only")
        ablate(list(filter(None, a.models.split(","))), a.part, a.clock_mhz, a.bits, a.prune)
        return 0
    if a.csim == "sequential":
        os.environ["EDGEC_CSIM"] = "sequential"
    print(f"host: {host_cpu_name()}; part {a.part} at {a.clock_mhz:g} MHz; {a.bits}; "
          f"C-simulation: {a.csim}" + (f"; pruned to {a.prune:.0%}" if a.prune else ""))
    print("| model | = x86 | compile s | C-sim s/image | latency ms (model) | frames/s | "
          "sim latency, interval vs model | LUT | DSP | BRAM18 | fits | sparse units "
          "(worst PE max/mean) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    with tempfile.TemporaryDirectory(prefix="edgec-bench-hls-") as tmp:
        for name in filter(None, a.models.split(",")):
            r = bench(name, Path(tmp), a.part, a.clock_mhz, a.bits, a.runs, a.prune)
            e = r["estimate"]
            m, s, t = e["model"], e["simulation"], e["total"]
            ok &= r["equal"]
            sim = (f"{s['latency_vs_model']:+.1%}, {s['interval_vs_model']:+.1%}"
                   if s["latency_cycles"] is not None else "deadlock")
            print(f"| {name} | {'yes' if r['equal'] else 'NO'} | {r['compile_s']:.1f} | "
                  f"{r['csim_s']:.3f} | {m['latency_ms']:.4g} | {m['fps']:.4g} | {sim} | "
                  f"{t['lut']} | {t['dsp']} | {t['bram18']} | "
                  f"{'yes' if e.get('fits') else 'no' if 'fits' in e else '?'} | "
                  f"{r['sparse_units']}"
                  + (f" ({r['worst_pe_spread']:.3f})" if r["sparse_units"] else "") + " |",
                  flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
