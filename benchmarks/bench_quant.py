"""Quantized models: edgec against onnxruntime on the same QDQ model, and against
onnxruntime's float32 run of the float model, and against edgec's own float32 build of the
float model (the protocol of BENCHMARKS.md; issue 14's speed points; issue 30's point 2: no
int8 build slower than the float one).

Per model (ResNet-18, MobileNetV2 of the zoo): the float model is quantized as onnxruntime
users do it (`edgec.zoo.quantize_qdq`: quant_pre_process, then quantize_static to QDQ with
per-channel int8 weights and uint8 activations, min-max calibrated on seeded inputs). edgec
compiles the QDQ model (fuse-qdq makes its integer ops, layout-nchwc runs them blocked on the
dot4 micro-kernels); onnxruntime runs the same QDQ model (all optimizations: its QLinearConv
and MLAS int8 kernels) and the float model. Outputs are checked first (the same top-1 as
onnxruntime int8 on every check input and an error against the float model within 0.5 dB of
onnxruntime int8's; exit 1 otherwise: edgec's fixed-point requantization parts from
onnxruntime's float32 one at rare near-ties, so the outputs may differ by a few steps),
then per thread count edgec and each onnxruntime session run interleaved for N pairs: medians
and the median per-pair ratio. Each latency is also given as a fraction of
the int8 floor: 2 x MACs of the convolutions and GEMMs / the one-core int8 peak of what the
target runs (`peak_int8.c`'s `vpdpbusd`, or for an AVX2 target `peak_int8_avx2.c maddubs`,
the pair-summed dot4; CPU time) over the threads.

    python benchmarks/bench_quant.py [--models resnet18,mobilenet_v2] [--own resnet18,mlp]
        [--four-bit resnet18] [--weights-only M,...] [--threads 1,2] [--pairs 30]
        [--target x86] [--reduce-range]

The --own models are quantized by edgec itself (`--quantize int8`, min-max on 8 seeded
inputs) and timed against onnxruntime float32 on the float model. --four-bit models are
quantized by edgec at int8 and at int4 (the same calibration; 4-bit weights, stored two to a
byte by the pack-weights pass) and the two libraries timed against each other, with the
bytes of their weights. --weights-only models are compiled by edgec without samples
(`--quantize int8`: the weights only, as int8 codes that the float kernels convert) and
timed against edgec's float build, with the bytes of both builds' weights and the number of
layers that read codes.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from bench_models import (
    HERE,
    count_flops,
    interleave,
    machine,
    ort_session,
    random_feeds,
    set_threads,
    summary,
)

import edgec
from edgec import zoo
from edgec.targets.target import get_target, host_cpu_flags


def measure_int8_peak(work: Path, target: str = "x86") -> tuple[float, str] | None:
    """Best of five runs of the int8 probe for what `target` runs on this host: (GOP/s on one
    core, what it measured), or None where the host cannot run it. For an AVX2 target the
    pair-summed sequence of peak_int8_avx2.c (vpmaddubsw, vpmaddwd by ones: the dot4 every
    int8 layer edgec quantizes takes there), or on a CPU with AVX-VNNI, where the AVX2
    library's int8 tiles take their AVX-VNNI versions, peak_int8.c's 256-bit `vpdpbusd`;
    else peak_int8.c's VNNI `vpdpbusd`."""
    exe = work / "peak_int8"
    avx2 = get_target(target).isa == "avx2"
    if avx2 and "avx_vnni" in host_cpu_flags():
        src, flags, args, avx2 = "peak_int8.c", ["-mavx2", "-mavxvnni"], [], False
    elif avx2:
        src, flags, args = "peak_int8_avx2.c", ["-mavx2", "-mfma"], ["maddubs"]
    else:
        src, flags, args = "peak_int8.c", ["-march=native"], []
    built = subprocess.run(["gcc", "-O2", *flags, str(HERE / src), "-o", str(exe)],
                           capture_output=True)
    if built.returncode:
        return None
    runs = [subprocess.run([str(exe), *args], check=True, capture_output=True,
                           text=True).stdout.split() for _ in range(5)]
    return max(float(r[2]) for r in runs), "avx2 vpmaddubsw" if avx2 else runs[0][1]


def output_step(qdq: Path) -> float:
    """The scale of the final DequantizeLinear of the QDQ model's first output."""
    m = onnx.load(qdq)
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    dq = next(n for n in m.graph.node if n.output[0] == m.graph.output[0].name)
    return float(inits[dq.input[1]])


CHECKS: list[str] = []  # what the output checks of the QDQ rows found, printed at the end


def bench(name: str, a: argparse.Namespace, work: Path, peak: float | None) -> list[str]:
    folder = work / name
    model = zoo.MODELS[name]()
    qdq = zoo.quantize_qdq(model, folder, reduce_range=a.reduce_range)
    flops = count_flops(folder / "pre.onnx")
    t = time.perf_counter()
    edgec.compile(qdq, folder / "edgec", target=a.target, name=name)
    compile_s = time.perf_counter() - t
    ours = edgec.load(folder / "edgec")
    # edgec's float build of the float model: an int8 library slower than it is a fast path
    # slower than the one it replaces (issue 30, point 2)
    edgec.compile(folder / "float.onnx", folder / "edgec_f32", target=a.target, name=name,
                  log=open(os.devnull, "w"))  # noqa: SIM115
    ours32 = edgec.load(folder / "edgec_f32")
    feeds = random_feeds(model)
    (iname, x), = feeds.items()
    step = output_step(qdq)
    rows, steps = [], 0.0
    rng = np.random.default_rng(5)
    for threads in a.threads:
        set_threads(ours, threads), set_threads(ours32, threads)
        q8 = ort_session(qdq, threads, "all")
        f32 = ort_session(folder / "float.onnx", threads, "all")
        # check inputs: edgec requantizes in fixed point (rounding the exact product, half
        # up) where onnxruntime rounds a float32 product half to even, so the two part by a
        # step at rare near-ties, which later layers carry on (a few steps at the logits of
        # a deep random-weight net); what must hold is the same top-1 and an error against
        # the float model no larger than onnxruntime int8's (0.5 dB of SQNR to spare)
        err_ours = err_ort = power = 0.0
        for k in range(4):
            xi = {iname: rng.standard_normal(x.shape).astype(np.float32)} if k else feeds
            got = next(iter(ours.run(xi).values()))
            want = q8.run(None, xi)[0]
            ref = f32.run(None, xi)[0]
            steps = max(steps, float(np.abs(got - want).max()) / step)
            err_ours += float(np.sum((got - ref) ** 2))
            err_ort += float(np.sum((want - ref) ** 2))
            power += float(np.sum(ref ** 2))
            if got.argmax() != want.argmax():
                raise SystemExit(f"{name}: edgec's top-1 {got.argmax()} is not onnxruntime "
                                 f"int8's {want.argmax()}")
        sqnr = [10 * np.log10(power / max(e, 1e-30)) for e in (err_ours, err_ort)]
        if sqnr[0] < sqnr[1] - 0.5:
            raise SystemExit(f"{name}: edgec int8 {sqnr[0]:.2f} dB from the float model, "
                             f"onnxruntime int8 {sqnr[1]:.2f} dB")
        CHECKS.append(f"{name}, {threads} thread(s): SQNR against float32 {sqnr[0]:.2f} dB "
                      f"(onnxruntime int8 {sqnr[1]:.2f} dB), at most {steps:.0f} output steps "
                      "from onnxruntime int8")
        run_ours = lambda: ours.run(feeds)  # noqa: E731
        for _ in range(3):
            run_ours(), q8.run(None, feeds), f32.run(None, feeds), ours32.run(feeds)
        s8 = summary(*interleave(run_ours, lambda s=q8: s.run(None, feeds), a.pairs))
        s32 = summary(*interleave(run_ours, lambda s=f32: s.run(None, feeds), a.pairs))
        own = summary(*interleave(run_ours, lambda: ours32.run(feeds), a.pairs))
        floor = flops / (peak * 1e9 * threads) * 1e3 if peak else None

        def frac(ms: float, floor: float | None = floor) -> str:
            return f" ({floor / ms:.2f})" if floor else ""

        rows.append(f"| {name} | {threads} | {s8['a_ms']:.2f}{frac(s8['a_ms'])} | "
                    f"{s8['b_ms']:.2f}{frac(s8['b_ms'])} | {s8['ratio']:.2f} | "
                    f"{s32['b_ms']:.2f} | {s32['ratio']:.2f} | {own['b_ms']:.2f} | "
                    f"{own['ratio']:.2f} | {compile_s:.1f} |")
        print(rows[-1], flush=True)
    return rows


def bench_own(name: str, a: argparse.Namespace, work: Path, peak: float | None) -> None:
    """`name` quantized by edgec itself (--quantize int8, min-max calibration on 8 seeded
    inputs) against onnxruntime's float32 run of the float model and against edgec's own
    float32 build of it for the same target, each interleaved."""
    ours, feeds, plain, man = own_library(name, work / f"{name}_own", a.target, "int8")
    edgec.compile(plain, work / f"{name}_own" / "f32", target=a.target, name=name,
                  log=open(os.devnull, "w"))  # noqa: SIM115
    ours32 = edgec.load(work / f"{name}_own" / "f32")
    fast = sum("dot4 widened" not in s["strategy"] for s in man["kernel_strategies"]
               if "int8" in s["strategy"])
    flops = count_flops(plain)
    for threads in a.threads:
        set_threads(ours, threads), set_threads(ours32, threads)
        f32 = ort_session(plain, threads, "all")
        got, want = next(iter(ours.run(feeds).values())), f32.run(None, feeds)[0]
        err = float(np.abs(got - want).max() / np.abs(want).max())
        for _ in range(3):
            ours.run(feeds), f32.run(None, feeds), ours32.run(feeds)
        s32 = summary(*interleave(lambda: ours.run(feeds), lambda s=f32: s.run(None, feeds),
                                  a.pairs))
        own = summary(*interleave(lambda: ours.run(feeds), lambda: ours32.run(feeds), a.pairs))
        floor = flops / (peak * 1e9 * threads) * 1e3 if peak else None
        frac = f" ({floor / s32['a_ms']:.2f})" if floor else ""
        print(f"| {name} (edgec --quantize int8) | {threads} | {s32['a_ms']:.3f}{frac} | - | - | "
              f"{s32['b_ms']:.3f} | {s32['ratio']:.2f} | - | - | rel. error {err:.3f} |",
              flush=True)
        print(f"| {name}: edgec int8 against edgec float32 ({a.target}) | {threads} | "
              f"{own['a_ms']:.3f} | {own['b_ms']:.3f} | {own['ratio']:.2f} | "
              f"{fast} int8 layers on the pair-summed dot4 where the target has one, output "
              f"SQNR {man['quantization']['output_sqnr_db']} dB |", flush=True)


def own_library(name: str, folder: Path, target: str, bits: str):
    """`name` quantized by edgec at `bits` ("int8", "int4"), min-max calibrated on 8 seeded
    inputs: (library, feeds, float model path, manifest)."""
    model = zoo.MODELS[name]()
    plain = zoo.save(model, folder / "float.onnx")
    (iname, x), = random_feeds(model).items()
    # not random_feeds' seed 0: the zoo draws its weights from that stream, and an input
    # equal to a weight row is far outside what any calibration sees
    rng = np.random.default_rng(2)
    calib = {iname: rng.standard_normal((8, *x.shape[1:])).astype(np.float32)}
    feeds = {iname: rng.standard_normal(x.shape).astype(np.float32)}
    art = edgec.compile(plain, folder / bits, target=target, name=name, quantize=bits,
                        calib=calib, quantize_weights="minmax",
                        log=open(os.devnull, "w"))  # noqa: SIM115
    return edgec.load(folder / bits), feeds, plain, art.manifest


def paired(new, old, feeds, a: argparse.Namespace):
    """Per thread count of `a`, the summary of `new` against `old` run interleaved on
    `feeds` after a warm-up: yields (threads, summary: a_ms for new, b_ms for old)."""
    for threads in a.threads:
        set_threads(new, threads), set_threads(old, threads)
        for _ in range(3):
            new.run(feeds), old.run(feeds)
        yield threads, summary(*interleave(lambda: new.run(feeds), lambda: old.run(feeds),
                                           a.pairs))


def bench_four_bit(name: str, a: argparse.Namespace, work: Path) -> None:
    """edgec's int4 build of `name` against its int8 build, interleaved."""
    folder = work / f"{name}_bits"
    (l8, feeds, _, m8), (l4, _, _, m4) = (own_library(name, folder, a.target, b)
                                          for b in ("int8", "int4"))
    strategies = [s["strategy"] for s in m4["kernel_strategies"]]
    packed = sum("two to a byte" in s for s in strategies)
    for threads, s in paired(l4, l8, feeds, a):
        print(f"| {name} | {threads} | {s['b_ms']:.3f} | {s['a_ms']:.3f} | {s['ratio']:.2f} | "
              f"{m8['weights_bytes'] / 1e6:.2f} | {m4['weights_bytes'] / 1e6:.2f} | "
              f"{packed} of {len(strategies)} |", flush=True)


def bench_weights_only(name: str, a: argparse.Namespace, work: Path) -> None:
    """edgec's weights-only int8 build of `name` (no samples) against its float build,
    interleaved; the outputs agree within the weights' quantization error first."""
    folder = work / f"{name}_w8"
    model = {**zoo.MODELS, **zoo.FAMILIES}[name]()
    plain = zoo.save(model, folder / "float.onnx")
    feeds = random_feeds(model)
    arts = [edgec.compile(plain, folder / v, target=a.target, name=name, quantize=q,
                          log=open(os.devnull, "w"))  # noqa: SIM115
            for v, q in (("f32", None), ("w8", "int8"))]
    lf, lq = (edgec.load(x.out_dir) for x in arts)
    want, got = (next(iter(lib.run(feeds).values())) for lib in (lf, lq))
    err = float(np.abs(got - want).max() / np.abs(want).max())
    coded = sum(s["strategy"].split(":")[0].endswith(", int8 weights")
                for s in arts[1].manifest["kernel_strategies"])
    for threads, s in paired(lq, lf, feeds, a):
        print(f"| {name} | {threads} | {s['b_ms']:.3f} | {s['a_ms']:.3f} | {s['ratio']:.2f} | "
              f"{arts[0].manifest['weights_bytes'] / 1e6:.2f} | "
              f"{arts[1].manifest['weights_bytes'] / 1e6:.2f} | {coded} | {err:.4f} |",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--target", default="x86")
    ap.add_argument("--own", default="resnet18,mlp",
                    help="models edgec quantizes itself, timed against onnxruntime float32")
    ap.add_argument("--four-bit", default="resnet18",
                    help="models whose int4 build edgec times against its int8 build")
    ap.add_argument("--weights-only", default="",
                    help="models whose weights-only int8 build (no samples) edgec times "
                         "against its float build")
    ap.add_argument("--reduce-range", action="store_true",
                    help="the QDQ models with 7-bit weights (onnxruntime's reduce_range): on "
                         "AVX2 edgec's dot4 then takes vpmaddubsw (kernel IR dot4p)")
    a = ap.parse_args()
    a.threads = [int(t) for t in a.threads.split(",")]
    with tempfile.TemporaryDirectory(prefix="edgec-bench-quant-") as d:
        work = Path(d)
        peak = measure_int8_peak(work, a.target)
        cpu, _ = machine()
        print(f"# {cpu}, {platform.machine()}, target {a.target}, {a.pairs} pairs"
              + (", QDQ weights 7-bit (reduce_range)" if a.reduce_range else "") + "; int8 peak "
              + (f"{peak[0]:.0f} GOP/s ({peak[1]})" if peak else "unmeasured"))
        print("| model | threads | edgec int8 ms (of floor) | onnxruntime int8 ms (of floor) | "
              "edgec / ort int8 | onnxruntime f32 ms | edgec int8 / ort f32 | edgec f32 ms | "
              "edgec int8 / edgec f32 | compile s |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name in a.models.split(",") if a.models else []:
            bench(name, a, work, peak[0] if peak else None)
        for name in a.own.split(",") if a.own else []:
            bench_own(name, a, work, peak[0] if peak else None)
        if a.four_bit:
            print("\n| model | threads | edgec int8 ms | edgec int4 ms | int4 / int8 | "
                  "int8 weights MB | int4 weights MB | kernels with packed weights |")
            print("|---|---|---|---|---|---|---|---|")
        for name in a.four_bit.split(",") if a.four_bit else []:
            bench_four_bit(name, a, work)
        if a.weights_only:
            print("\n| model | threads | edgec float32 ms | edgec weights-only int8 ms | "
                  "int8 / float32 | float32 weights MB | int8 weights MB | layers reading "
                  "codes | rel. error |")
            print("|---|---|---|---|---|---|---|---|---|")
        for name in a.weights_only.split(",") if a.weights_only else []:
            bench_weights_only(name, a, work)
        if CHECKS:
            print("\nOutputs checked (4 inputs):\n" + "\n".join(f"- {c}" for c in CHECKS))


if __name__ == "__main__":
    main()
