"""Side-by-side latency of edgec, onnxruntime and untuned TVM on the zoo models (the protocol
of BENCHMARKS.md).

Per model: compile with edgec (timed, ONNX to finished static library), load the artifact
through the Python loader (the same C an app links) and an onnxruntime session, and for each
thread count check that the outputs agree (exit 1 if edgec departs from onnxruntime), warm both
up, then alternate edgec, onnxruntime, edgec, ... for N pairs: medians and the median of the
per-pair ratio. TVM (optional, `pip install -e '.[bench]'`) runs in a subprocess per thread
count, because its thread pool reads TVM_NUM_THREADS once, at import; there it is timed
against an onnxruntime session the same way. Each latency is also given as a fraction of the
floor: FLOPs / peak or weight bytes / read bandwidth, whichever is slower, over the threads.
FLOPs = 2 x MACs of Conv/Gemm/MatMul counted from the graph; the single-core FMA peak is
measured at start (`peak_fma.c`) unless --peak-gflops, and one core's read bandwidth over a
buffer the size of the weights (`stream_read.c`: the MLP's weights stream from L3 on every
run), both in CPU time, so a loaded machine does not lower them. "Cores busy" is CPU time /
wall time of one side run alone for a fraction of a second: about how many cores it keeps
busy (below 1 when other processes share the machine), which tells whether a side really runs
threaded.

    python benchmarks/bench_models.py [--models mlp,resnet18,mobilenet_v2] [--threads 1,2]
        [--pairs 30] [--short-pairs 300] [--target x86[,x86-avx2,...]] [--no-tvm]
        [--json results.json]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

HERE = Path(__file__).resolve().parent
# the Xeon's single-core fp32 figure (BENCHMARKS.md,
# The hosts' limits), used only when the peak cannot be measured here
FALLBACK_PEAK_GFLOPS = 170.0
ORT_LEVELS = {"disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
              "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
SHORT_MS = 1.0  # a model faster than this (onnxruntime, 1 thread) gets --short-pairs pairs


# -- measurement helpers (shared with the TVM worker) ------------------------------------------

def interleave(a: Callable[[], object], b: Callable[[], object],
               pairs: int) -> tuple[list[float], list[float]]:
    """Milliseconds of a and b, run alternately `pairs` times: a, b in even pairs and b, a in
    odd ones, so that neither is always the one called first (on the Zen 3 host the first call
    of a round ran 6-10% slower: two identical libraries timed 0.90-0.94x of each other)."""
    a_ms, b_ms = [], []
    for i in range(pairs):
        for f, out in ((a, a_ms), (b, b_ms)) if i % 2 == 0 else ((b, b_ms), (a, a_ms)):
            t = time.perf_counter()
            f()
            out.append((time.perf_counter() - t) * 1e3)
    return a_ms, b_ms


def summary(a_ms: list[float], b_ms: list[float]) -> dict[str, float]:
    return {"a_ms": statistics.median(a_ms), "b_ms": statistics.median(b_ms),
            "ratio": statistics.median(a / b for a, b in zip(a_ms, b_ms))}


def rel_error(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    """max |got - want| / max |want| over all outputs (the worst output counts)."""
    return max(float(np.abs(g - w).max() / max(float(np.abs(w).max()), 1e-30))
               for g, w in zip(got, want))


def ort_session(path: Path, threads: int, level: str,
                spinning: bool = False) -> ort.InferenceSession:
    """An onnxruntime session. Its worker threads spin by default after a run; interleaved
    with edgec on a 2-core machine, that spinning thread holds the core edgec's second
    thread needs (ResNet-18 at 2 threads: edgec 50.7 ms with onnxruntime spinning, 26.9 ms
    without, while onnxruntime itself moved from 23.8 to 22.8 ms). So spinning is off unless
    asked for; it does not slow onnxruntime here."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ORT_LEVELS[level]
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def random_feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Standard normal float inputs; integer ones (token ids, masks) in [0, 8)."""
    rng = np.random.default_rng(0)
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)
        feeds[i.name] = rng.integers(0, 8, shape).astype(dtype) if dtype.kind in "iu" else \
            rng.standard_normal(shape).astype(np.float32)
    return feeds


# -- the machine and the models' work ---------------------------------------------------------

def count_flops(path: Path) -> int:
    """2 x multiply-accumulates of the Conv, Gemm and MatMul nodes, with the static shapes of
    edgec's import (onnx's shape inference leaves torch's flatten-by-Reshape unknown):
    Conv |Y| * Cin/group * prod(kernel) (= |Y| * prod(W.shape[1:])), Gemm and MatMul |Y| * K."""
    from edgec.compiler.driver import load_graph

    macs = 0
    for n in load_graph(path).nodes:
        y = int(np.prod(n.outputs[0].type.shape))
        if n.op == "Conv":
            macs += y * int(np.prod(n.inputs[1].type.shape[1:]))
        elif n.op == "Gemm":
            macs += y * n.inputs[0].type.shape[0 if n.attrs.get("transA") else 1]
        elif n.op == "MatMul":
            macs += y * n.inputs[0].type.shape[-1]
    return 2 * macs


def machine_flags(target: str) -> list[str]:
    """gcc's -m flags for `target`'s ISA (-march=native for the host's own, `x86`)."""
    from edgec.targets.target import get_target

    t = get_target(target)
    return [f for f in t.cflags if f.startswith("-m")] if t.arch == "x86_64" else []


def measure_peak_gflops(work: Path, target: str = "x86") -> tuple[float, str]:
    """Best of ten runs of peak_fma.c built for `target`'s ISA: (GFLOP/s on one core, ISA)."""
    exe = work / f"peak_fma_{target}"
    subprocess.run(["gcc", "-O2", *machine_flags(target), str(HERE / "peak_fma.c"), "-o",
                    str(exe)], check=True, capture_output=True)
    runs = [subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
            for _ in range(10)]
    return max(float(r[2]) for r in runs), runs[0][1]


def measure_read_gbs(work: Path, nbytes: int) -> float:
    """One core's read bandwidth over a buffer of `nbytes` (stream_read.c), in GB/s."""
    exe = work / "stream_read"
    if not exe.exists():
        subprocess.run(["gcc", "-O3", "-march=native", str(HERE / "stream_read.c"), "-o",
                        str(exe)], check=True, capture_output=True)
    out = subprocess.run([str(exe), str(nbytes)], check=True, capture_output=True, text=True)
    return float(out.stdout.split()[2])


def machine() -> tuple[str, str]:
    """lscpu's model name and the vector/matrix flags relevant to the kernels."""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return platform.processor(), ""
    fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
    flags = fields.get("Flags", "").split()
    wanted = [f for f in flags if f in ("avx", "avx2", "fma", "f16c") or f.startswith(
        ("avx512", "avx_vnni", "amx"))]
    return fields.get("Model name", platform.processor()).strip(), " ".join(wanted)


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


# -- edgec against onnxruntime ------------------------------------------------------------------

def set_threads(model: object, n: int) -> int:
    """Ask the loaded artifact for n threads; the count it runs on (1 if it has no pool)."""
    from edgec.errors import EdgecError

    try:
        model.set_num_threads(n)  # type: ignore[attr-defined]
    except (AttributeError, EdgecError):
        return 1
    return n


def cores_busy(fn: Callable[[], object], seconds: float = 0.2, min_runs: int = 3) -> float:
    """CPU time over wall time of calls of fn alone (at least `min_runs`, for at least
    `seconds`): about the number of cores it keeps busy, less when other processes share them.
    It starts after a pause so that a peer's spinning pool threads have gone to sleep."""
    time.sleep(0.05)
    runs = 0
    wall, cpu = time.perf_counter(), time.process_time()
    while runs < min_runs or time.perf_counter() - wall < seconds:
        fn()
        runs += 1
    return (time.process_time() - cpu) / (time.perf_counter() - wall)


def bench_edgec(name: str, path: Path, a: argparse.Namespace, work: Path, target: str) -> dict:
    """Compile, size and time one model with edgec beside onnxruntime at every thread count."""
    import edgec

    t0 = time.perf_counter()
    art = edgec.compile(path, work / f"{name}_{target}", target=target)
    compile_s = time.perf_counter() - t0
    model = edgec.load(art.out_dir)
    feeds = random_feeds(onnx.load(path, load_external_data=False))
    sizes = code_size(art.library)
    m = art.manifest
    out = {"compile_s": compile_s,
           "code_bytes": sum(v for k, v in sizes.items() if k != f"{art.name}_weights.o"),
           "weights_bytes": m["weights_bytes"], "workspace_bytes": m["workspace_bytes"],
           "lower_bound_bytes": m["memory"]["lower_bound_bytes"], "runs": []}

    def run_edgec() -> object:
        return model.run(feeds)

    pairs = None
    for n in a.threads:
        edgec_threads = set_threads(model, n)
        sess = ort_session(path, n, a.ort_opt_level, a.ort_spinning)
        got = model.run(feeds)
        want = sess.run(None, feeds)
        rel = rel_error([got[o.name] for o in sess.get_outputs()], want)
        if not rel <= a.rtol:  # also catches NaN
            raise SystemExit(f"FAIL {name} at {n} thread(s): edgec departs from onnxruntime "
                             f"(max relative error {rel:.3g} > {a.rtol:g}); no timing counts")

        def run_ort(sess: ort.InferenceSession = sess) -> object:
            return sess.run(None, feeds)

        warm = interleave(run_edgec, run_ort, 5)
        if pairs is None:  # decided once per model, from the first (fewest-thread) warm-up
            pairs = a.short_pairs if statistics.median(warm[1]) < SHORT_MS else a.pairs
        busy = cores_busy(run_edgec)
        s = summary(*interleave(run_edgec, run_ort, pairs))
        out["runs"].append({"threads": n, "edgec_threads": edgec_threads, "pairs": pairs,
                            "edgec_ms": s["a_ms"], "onnxruntime_ms": s["b_ms"],
                            "ratio": s["ratio"], "max_rel_error": rel,
                            "edgec_cores_busy": busy})
    return out


# -- TVM (subprocess per thread count) ---------------------------------------------------------

def tvm_worker(a: argparse.Namespace) -> None:
    """Compile one ONNX file with untuned TVM, check it against onnxruntime, time both; print
    one JSON line. TVM_NUM_THREADS is set by the parent before this process imports TVM."""
    t0 = time.perf_counter()
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.target import codegen

    import_s = time.perf_counter() - t0

    path = Path(a.tvm_worker)
    threads = a.threads[0]
    mcpu = codegen.llvm_get_system_cpu()  # LLVM's name for the host, e.g. znver3, sapphirerapids
    target = tvm.target.Target({"kind": "llvm", "mcpu": mcpu})
    t0 = time.perf_counter()
    model = onnx.load(path)
    mod = from_onnx(model, keep_params_in_input=False)
    exe = tvm.compile(mod, target=target)  # TVM's default Relax + TIR pipelines, no tuning
    compile_s = time.perf_counter() - t0
    dev = tvm.cpu()
    vm = relax.VirtualMachine(exe, dev)
    feeds = random_feeds(model)
    args = [tvm.runtime.tensor(v, dev) for v in feeds.values()]

    main = vm["main"]

    def run_tvm() -> list[np.ndarray]:
        r = main(*args)
        return [r.numpy()] if hasattr(r, "numpy") else [t.numpy() for t in r]

    run_tvm()
    # alone, before onnxruntime's threads exist: how long, and does TVM use more than one core?
    t0, cpu0 = time.perf_counter(), time.process_time()
    solo = 0
    while solo < 2 or time.perf_counter() - t0 < min(1.0, a.tvm_budget_s / 4):
        run_tvm()
        solo += 1
    busy = (time.process_time() - cpu0) / (time.perf_counter() - t0)
    solo_ms = (time.perf_counter() - t0) * 1e3 / solo

    sess = ort_session(path, threads, a.ort_opt_level, a.ort_spinning)
    rel = rel_error(run_tvm(), sess.run(None, feeds))
    result = {"threads": threads, "tvm_num_threads": tvm.runtime.num_threads(),
              "compile_s": compile_s, "import_s": import_s, "mcpu": mcpu,
              "cores_busy": busy, "solo_ms": solo_ms, "max_rel_error": rel,
              "versions": {"tvm": tvm.__version__,
                           "tvm_ffi": importlib.metadata.version("apache-tvm-ffi"),
                           "llvm": codegen.llvm_version_major()}}
    if not rel <= a.rtol:
        result["error"] = f"TVM departs from onnxruntime (max relative error {rel:.3g})"
    else:
        pairs = max(3, min(a.pairs, int(a.tvm_budget_s * 1e3 / solo_ms)))
        interleave(lambda: main(*args), lambda: sess.run(None, feeds), 2)  # warm onnxruntime
        s = summary(*interleave(lambda: main(*args), lambda: sess.run(None, feeds), pairs))
        result.update(pairs=pairs, tvm_ms=s["a_ms"], onnxruntime_ms=s["b_ms"], ratio=s["ratio"])
    print(json.dumps(result), flush=True)


def bench_tvm(path: Path, threads: int, pairs: int, a: argparse.Namespace) -> dict:
    """Run the TVM worker for one model and thread count in a fresh process."""
    env = dict(os.environ, TVM_NUM_THREADS=str(threads))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--tvm-worker", str(path),
           "--threads", str(threads), "--pairs", str(pairs), "--rtol", str(a.rtol),
           "--tvm-budget-s", str(a.tvm_budget_s), "--ort-opt-level", a.ort_opt_level]
    cmd += ["--ort-spinning"] if a.ort_spinning else []
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"threads": threads, "error": f"TVM worker failed (exit {p.returncode}): {tail}"}
    return json.loads(lines[-1])


# -- report -----------------------------------------------------------------------------------

def floor_ms(r: dict, threads: int) -> float:
    """The model's floor at `threads`: its FLOPs at the FMA peak or its weights at one core's
    read bandwidth (for a buffer of their size), whichever is slower, split over the threads
    (optimistic for bandwidth: cores share the L3 and memory)."""
    return max(r["floor_ms_1thread"], r["bandwidth_floor_ms_1thread"]) / threads


def fmt_frac(r: dict, threads: int, ms: float | None) -> str:
    """floor / latency."""
    return "-" if ms is None else f"{floor_ms(r, threads) / ms:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mlp,resnet18,mobilenet_v2")
    ap.add_argument("--threads", default="1,2", type=lambda s: [int(t) for t in s.split(",")])
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--short-pairs", type=int, default=300,
                    help=f"pairs for models under {SHORT_MS:g} ms on onnxruntime")
    ap.add_argument("--target", default="x86", type=lambda s: s.split(","),
                    help="edgec target(s), comma-separated, each timed against the same "
                         "onnxruntime session in the same run (e.g. x86-avx2,x86-avx512)")
    ap.add_argument("--rtol", type=float, default=1e-4,
                    help="max |edgec - onnxruntime| / max |onnxruntime| allowed")
    ap.add_argument("--ort-opt-level", choices=sorted(ORT_LEVELS), default="all")
    ap.add_argument("--ort-spinning", action="store_true",
                    help="let onnxruntime's threads spin between runs (its default)")
    ap.add_argument("--peak-gflops", type=float,
                    help="single-core fp32 peak; measured with peak_fma.c when not given")
    ap.add_argument("--no-tvm", action="store_true", help="leave TVM out even if installed")
    ap.add_argument("--tvm-budget-s", type=float, default=20.0,
                    help="about how long to spend timing TVM per model and thread count")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--tvm-worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.tvm_worker:
        tvm_worker(a)
        return

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        head = setup(a, Path(tmp))
        print_setup(head, a)
        results = [r for name in a.models.split(",") for r in bench_model(name, a, head,
                                                                             Path(tmp))]
    print_sizes(results)
    tvm_info = next((t for r in results for run in r["runs"] for t in [run["tvm"]]
                     if "versions" in t), None)
    if tvm_info:
        head["tvm"] = tvm_info["versions"] | {"mcpu": tvm_info["mcpu"]}
        print(f"\n# TVM {tvm_info['versions']['tvm']} (apache-tvm-ffi "
              f"{tvm_info['versions']['tvm_ffi']}, LLVM {tvm_info['versions']['llvm']}), "
              f"untuned (tvm.compile's default pipelines), target llvm -mcpu={tvm_info['mcpu']}, "
              "one subprocess per thread count (TVM_NUM_THREADS set before import)")
    for r in results:
        for run in r["runs"]:
            if "error" in run["tvm"]:
                print(f"# TVM {r['model']} at {run['threads']} thread(s): {run['tvm']['error']}")
    head["wall_s"] = time.perf_counter() - started
    head["load_average_end"] = os.getloadavg()
    print(f"# whole run {head['wall_s']:.0f} s; load average at start "
          f"{' '.join(f'{x:.2f}' for x in head['load_average_start'])}, at end "
          f"{' '.join(f'{x:.2f}' for x in head['load_average_end'])}")
    if a.json:
        Path(a.json).write_text(json.dumps({"setup": head, "results": results}, indent=2) + "\n")


def setup(a: argparse.Namespace, work: Path) -> dict:
    """What the run is measured on and with: machine, floor, versions, commit."""
    import edgec
    import edgec.codegen.library  # noqa: F401  (imported now so no compile time counts them)
    import edgec.compiler.driver
    import edgec.passes

    cpu, flags = machine()
    peaks = {}  # the fp32 peak of each target's ISA, which its builds' floor is measured by
    for target in a.target:
        peak, isa = a.peak_gflops, "given"
        if peak is None:
            try:
                peak, isa = measure_peak_gflops(work, target)
            except (OSError, subprocess.CalledProcessError) as e:
                peak, isa = FALLBACK_PEAK_GFLOPS, f"the Xeon's figure, not measured: {e}"
        peaks[target] = {"gflops": peak, "isa": isa}
    # the checkout the measured edgec comes from (PYTHONPATH may point at another worktree)
    src = Path(edgec.__file__).resolve().parent
    commit = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"],
                            cwd=src, capture_output=True, text=True).stdout.strip() or "unknown"
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "cpu": cpu, "flags": flags,
            "peak_per_core": peaks, "python": platform.python_version(),
            "onnxruntime": ort.__version__, "edgec": edgec.__version__, "commit": commit,
            "edgec_path": str(src),
            "targets": a.target,
            "ort_graph_optimization_level": str(ORT_LEVELS[a.ort_opt_level]).split(".")[-1],
            "ort_inter_op_num_threads": 1, "command": " ".join(sys.argv),
            "load_average_start": os.getloadavg(),
            "tvm": "left out (--no-tvm)" if a.no_tvm else
                   None if importlib.util.find_spec("tvm") else "not installed"}


def print_setup(head: dict, a: argparse.Namespace) -> None:
    peaks = ", ".join(f"{p['gflops']:.0f} GFLOP/s for {t} ({p['isa']})"
                      for t, p in head["peak_per_core"].items())
    print(f"# {head['date']}, edgec {head['edgec']} at {head['commit']} ({head['edgec_path']}), "
          f"target {', '.join(a.target)}; "
          f"{head['cpu']} ({head['flags']}); fp32 peak per core {peaks}; onnxruntime "
          f"{head['onnxruntime']} ({head['ort_graph_optimization_level']}, inter_op 1); "
          f"python {head['python']}")
    load = head["load_average_start"][0]
    if load > 0.5:
        print(f"# WARNING: load average {load:.2f} at start: other processes share the "
              f"{os.cpu_count()} cores, so latencies (above all at {max(a.threads)} threads) are "
              "inflated; the same-run ratios hold up better")
    if head["tvm"] == "not installed":
        print("# TVM: skipped, apache-tvm is not installed (pip install -e '.[bench]')")
    elif head["tvm"]:
        print(f"# TVM: {head['tvm']}")
    print("\n| model | edgec target | threads | edgec ms | onnxruntime ms | edgec / ort (median "
          "of pairs) | TVM ms | TVM / ort | fraction of floor: edgec, ort, TVM | cores busy "
          "alone: edgec, TVM | pairs: edgec+ort, TVM+ort |")
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)


def bench_model(name: str, a: argparse.Namespace, head: dict, work: Path) -> list[dict]:
    """All measurements of one model, one dict per edgec target (TVM is timed once and shared);
    prints its latency rows as they finish. The floor of each target's rows is measured by
    the fp32 peak of its own ISA; onnxruntime's and TVM's by the best of them."""
    from edgec import zoo

    path = zoo.save(getattr(zoo, name)(), work / f"{name}.onnx")
    flops = count_flops(path)
    best_peak = max(p["gflops"] for p in head["peak_per_core"].values())
    rows = []
    for target in a.target:
        peak = head["peak_per_core"][target]["gflops"]
        r = {"model": name, "target": target, "gflop": flops / 1e9,
             "floor_ms_1thread": flops / (peak * 1e9) * 1e3}
        r.update(bench_edgec(name, path, a, work, target))
        try:
            r["read_gbs"] = measure_read_gbs(work, r["weights_bytes"])
            r["bandwidth_floor_ms_1thread"] = r["weights_bytes"] / (r["read_gbs"] * 1e9) * 1e3
        except (OSError, subprocess.CalledProcessError):
            r["read_gbs"], r["bandwidth_floor_ms_1thread"] = None, 0.0
        rows.append(r)
    pairs = rows[0]["runs"][0]["pairs"]
    tvm_runs = {} if head["tvm"] else {n: bench_tvm(path, n, pairs, a) for n in a.threads}
    for r in rows:
        peers = dict(r, floor_ms_1thread=flops / (best_peak * 1e9) * 1e3)
        for run in r["runs"]:
            n = run["threads"]
            tv = run["tvm"] = tvm_runs.get(n, {})
            tvm_ms = tv.get("tvm_ms")
            threads = f"{n}" if run["edgec_threads"] == n else f"{n} (edgec not threaded: 1)"
            tvm_cols = (f"{tvm_ms:.2f} | {tv['ratio']:.1f}" if tvm_ms is not None else
                        "failed (below) | -" if "error" in tv else "- | -")
            fracs = ", ".join([fmt_frac(r, run["edgec_threads"], run["edgec_ms"])] + [
                fmt_frac(peers, n, ms) for ms in (run["onnxruntime_ms"], tvm_ms)])
            busy = f"{run['edgec_cores_busy']:.2f}, " + (
                f"{tv['cores_busy']:.2f}" if "cores_busy" in tv else "-")
            print(f"| {name} | {r['target']} | {threads} | {run['edgec_ms']:.3f} | "
                  f"{run['onnxruntime_ms']:.3f} | {run['ratio']:.2f} | {tvm_cols} | {fracs} | "
                  f"{busy} | {run['pairs']}, {tv.get('pairs', '-')} |", flush=True)
        r["tvm_compile_s"] = next((t["compile_s"] for t in tvm_runs.values()
                                   if "compile_s" in t), None)
    return rows


def print_sizes(results: list[dict]) -> None:
    print("\n| model | edgec target | GFLOP | FMA floor at 1 thread ms | weights read GB/s, "
          "floor ms | edgec compile s | TVM compile s | "
          "code KB (no weights) | weights MB | workspace KB (lower bound) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        tvm_c = f"{r['tvm_compile_s']:.2f}" if r["tvm_compile_s"] is not None else "-"
        bw = (f"{r['read_gbs']:.0f}, {r['bandwidth_floor_ms_1thread']:.3f}"
              if r["read_gbs"] else "-")
        print(f"| {r['model']} | {r['target']} | {r['gflop']:.3f} | {r['floor_ms_1thread']:.3f} | "
              f"{bw} | "
              f"{r['compile_s']:.2f} | {tvm_c} | {r['code_bytes'] / 1024:.1f} | "
              f"{r['weights_bytes'] / 2**20:.2f} | {r['workspace_bytes'] / 1024:.0f} "
              f"({r['lower_bound_bytes'] / 1024:.0f}) |")


if __name__ == "__main__":
    main()
