"""The GPU check of issue 33 (points 6 and 7), for the lent GPU machine: run it there through
`scripts/gpu_check.sh`, which installs nothing but the wheels carried in `.whl` and gives this
script the carried checkout on PYTHONPATH. It must finish in a few minutes.

Per model (torchvision's ResNet-18 and MobileNetV2 with their random initial weights, and an
MLP of the zoo's shape, 784-512-512-10), all at batch 1:

1. the PyTorch model is exported to ONNX there (opset 17), so that edgec and PyTorch run the
   same weights; edgec compiles it for `--target cuda` (sm_90): plain, with `--cuda-graph`,
   `--precision fp16 --cuda-graph` (tensor cores) and quantized to int8 (`--quantize int8`,
   min-max on 8 random samples; its convolutions on int8 tensor cores);
2. correctness: each build's output on the GPU (`edgec.load`, host pointers) against
   onnxruntime on the CPU (float32: relative error at most 1e-4; fp16: 3e-2; int8: against
   onnxruntime running edgec's own quantized graph is not possible, so the float error is
   reported);
3. speed: NAME_run_device on device pointers (PyTorch's tensors) on PyTorch's stream, each
   call timed by CUDA events: p50 and p90 over the same number of runs, beside PyTorch eager
   and CUDA-graph replay at fp32 (TF32 off on both sides) and fp16; each latency also as a
   multiple of the launch floor (the launches a run makes x the measured empty-launch time);
4. compute-sanitizer memcheck and racecheck on a C app that runs the MLP's library once;
5. the conformance sample (the shortest passing ONNX node test of each op, CONFORMANCE.md)
   on the GPU against the tests' expected outputs, with the suite's tolerances: its CUDA
   libraries are built beforehand on a machine that has the node tests (the onnx 1.22 wheel)
   and travel in `.gpu/` (`--prepare`), so the GPU machine only links and runs them;
6. where a int8 build's integers are claimed exact: its output against edgec's reference
   interpreter on the graph that build compiled (bit for bit);
7. the kernels of one ResNet-18 and MobileNetV2 fp32 run, each's GPU time (PyTorch's
   profiler, which sees every launch in the process), to say where the time goes.

Everything is written to OUT/gpu_check.json as it comes and summarised on stdout; a step that
fails is recorded with its error and the rest goes on (the machine's minutes are few).

    python3 scripts/gpu_check.py --prepare .gpu          # here, before: the sample's libraries
    python3 scripts/gpu_check.py OUT [--runs 200] [--models resnet18,mobilenet_v2,mlp]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

RESULTS: dict = {"steps": [], "models": []}
OUT: list[Path] = []  # the folder gpu_check.json goes to, once main has it
DEADLINE = [time.perf_counter() + 420.0]  # the optional steps stop starting after this


# the largest relative error against onnxruntime (float32 on the CPU) a build may show: fp16
# operands (--precision fp16, tensor cores) carry 11 significant bits into every product
TOLERANCE = {"fp32": 1e-4, "fp32_graph": 1e-4, "fp16": 3e-2}


def save() -> None:
    """gpu_check.json as it stands: a run cut short still leaves what it measured."""
    if OUT:
        (OUT[0] / "gpu_check.json").write_text(json.dumps(RESULTS, indent=1, default=str))


def deadline_left() -> float:
    return DEADLINE[0] - time.perf_counter()


def step(name: str):
    """Run the decorated function now, recording its result or its error under `name`."""
    def run(fn):
        t0 = time.perf_counter()
        try:
            value = fn()
            RESULTS["steps"].append({"step": name, "ok": True, "seconds":
                                     round(time.perf_counter() - t0, 2)})
            save()
            print(f"ok   {name} ({time.perf_counter() - t0:.1f} s)", flush=True)
            return value
        except Exception as e:  # noqa: BLE001 - recorded, and the check goes on
            RESULTS["steps"].append({"step": name, "ok": False, "error": repr(e),
                                     "trace": traceback.format_exc(limit=6)})
            save()
            print(f"FAIL {name}: {e!r}", flush=True)
            return None
    return run


def torch_model(name: str):
    import torch

    torch.manual_seed(0)
    if name in ("resnet18", "mobilenet_v2"):
        import torchvision

        return getattr(torchvision.models, name)(weights=None).eval(), (1, 3, 224, 224)
    mlp = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                              torch.nn.Linear(512, 512), torch.nn.ReLU(),
                              torch.nn.Linear(512, 10))
    return mlp.eval(), (1, 784)


def percentiles(ms: list[float]) -> dict:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 4),
            "p90_ms": round(float(np.percentile(ms, 90)), 4)}


def timed(fn, runs: int, seconds: float = 3.0) -> dict:
    """Each call of `fn` between two CUDA events on the current stream: p50 and p90 over
    `runs` calls, fewer where they would take over `seconds` (a slow build must not spend
    the machine's minutes: the ResNet-18 int8 build of one thread a launch did, 2026-11-28),
    with the count taken in the result."""
    import torch

    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    runs = max(3, min(runs, int(seconds / max(first, 1e-6))))
    for _ in range(min(10, runs)):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return {**percentiles(ms), "runs": runs}


def empty_launch_us(runs: int) -> float:
    """The time of one launch of an empty kernel, by CUDA-graph-free back-to-back launches
    of a one-element PyTorch op (microseconds)."""
    import torch

    t = torch.zeros(1, device="cuda")
    for _ in range(50):
        t.add_(0)
    torch.cuda.synchronize()
    n = max(runs, 200)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        t.add_(0)
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3 / n


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-12))


def check_model(name: str, out: Path, runs: int, launch_us: float | None) -> dict:
    import onnxruntime as ort
    import torch

    import edgec
    from edgec.compiler.driver import compile_graph, load_graph
    from edgec.ir import interpret

    row: dict = {"model": name}
    RESULTS["models"].append(row)
    model, shape = torch_model(name)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    path = out / f"{name}.onnx"
    try:  # the TorchScript exporter; where it is gone, the dynamo one
        torch.onnx.export(model, (x,), str(path), opset_version=17, input_names=["input"],
                          output_names=["output"], dynamo=False)
    except Exception:  # noqa: BLE001
        torch.onnx.export(model, (x,), str(path), opset_version=17, input_names=["input"],
                          output_names=["output"], dynamo=True)
    feeds = {"input": x.numpy()}
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, feeds)[0]
    builds = {}
    calib = {"input": np.random.default_rng(2).standard_normal((8, *shape[1:])).astype(
        np.float32)}
    for kind, options in (("fp32", {}), ("fp32_graph", {"cuda_graph": True}),
                          ("fp16", {"precision": "fp16", "cuda_graph": True}),
                          ("int8", {"quantize": "int8", "calib": calib})):
        @step(f"{name} {kind}: compile for cuda and run against onnxruntime")
        def build(kind=kind, options=options):
            t0 = time.perf_counter()
            graph = load_graph(str(path))
            art = compile_graph(graph, out / f"{name}_{kind}", target="cuda", name=name,
                                gpu_arch=("sm_90",), tune=False, log=open("/dev/null", "w"),
                                **options)
            compiled = time.perf_counter() - t0
            lib = edgec.load(art.out_dir)
            got = next(iter(lib.run(feeds).values()))
            err = rel_error(got, want)
            row[kind] = {"compile_s": round(compiled, 2),
                         "launches": len(art.manifest["gpu_launches"]),
                         "rel_error_vs_onnxruntime": err}
            save()
            if kind == "int8":  # the integers against the reference interpreter, same graph
                ref = next(iter(interpret(graph, feeds).values()))
                row[kind]["max_abs_diff_vs_interpreter"] = float(np.abs(got - ref).max())
                row[kind]["bit_exact_vs_interpreter"] = bool(np.array_equal(got, ref))
                save()
            elif err > TOLERANCE[kind]:
                raise AssertionError(f"relative error {err:.3g} > {TOLERANCE[kind]}")
            return lib

        builds[kind] = build
    if builds.get("int8") is not None:
        @step(f"{name} int8: bit for bit against the reference interpreter")
        def exact():  # fixed-point requantization: the same integers on any device
            if not row["int8"]["bit_exact_vs_interpreter"]:
                raise AssertionError("differs by up to "
                                     f"{row['int8']['max_abs_diff_vs_interpreter']:.3g}")
    xd = x.cuda()
    stream = torch.cuda.current_stream()
    for kind, lib in builds.items():
        if lib is None:
            continue

        @step(f"{name} {kind}: NAME_run_device timed")
        def time_edgec(kind=kind, lib=lib):
            run = getattr(lib._lib, f"{name}_run_device")
            run.restype = ctypes.c_int
            yd = torch.empty(tuple(lib.manifest["outputs"][0]["shape"]), device="cuda")
            ins = (ctypes.c_void_p * 1)(xd.data_ptr())
            outs = (ctypes.c_void_p * 1)(yd.data_ptr())
            status = run(ins, outs, ctypes.c_void_p(stream.cuda_stream))
            if status != 0:
                raise RuntimeError(f"{name}_run_device returned {status}")
            torch.cuda.synchronize()
            if kind != "int8":
                err = rel_error(yd.cpu().numpy(), want)
                if err > TOLERANCE[kind]:
                    raise AssertionError(f"device pointers: relative error {err:.3g}")
            call = lambda: run(ins, outs, ctypes.c_void_p(stream.cuda_stream))  # noqa: E731
            t = timed(call, runs)
            if launch_us:
                floor = row[kind]["launches"] * launch_us / 1e3
                t["launch_floor_ms"] = round(floor, 4)
                t["p50_over_launch_floor"] = round(t["p50_ms"] / floor, 2)
            row[kind].update(t)
            if kind == "fp32" and name != "mlp" and deadline_left() > 60:
                try:  # CUPTI may be refused where the machine is sandboxed
                    row[kind]["kernels"] = kernel_profile(call)
                except Exception as e:  # noqa: BLE001
                    row[kind]["kernels_error"] = repr(e)[:300]
            save()

    for precision in ("fp32", "fp16"):
        @step(f"{name} PyTorch {precision}: eager and CUDA graph")
        def time_torch(precision=precision):
            dtype = torch.float16 if precision == "fp16" else torch.float32
            m = model.to("cuda", dtype)
            xi = xd.to(dtype)
            with torch.no_grad():
                eager = timed(lambda: m(xi), runs)
                g = torch.cuda.CUDAGraph()
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        m(xi)
                torch.cuda.current_stream().wait_stream(side)
                with torch.cuda.graph(g):
                    m(xi)
                graph = timed(g.replay, runs)
            row[f"torch_{precision}"] = {"eager": eager, "cuda_graph": graph}
            save()

    return row


def kernel_profile(call, reps: int = 5) -> list[dict]:
    """Each kernel's GPU time in one run of `call` (the mean of `reps` runs), by PyTorch's
    profiler (CUPTI sees every launch in the process), the slowest first."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            call()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if us and e.count:
            rows.append({"kernel": e.key[:80], "calls_per_run": e.count / reps,
                         "us_per_run": round(us / reps, 2)})
    return sorted(rows, key=lambda r: -r["us_per_run"])


def conformance_on_gpu(prepared: Path) -> dict:
    """The sample `--prepare` built: each test's library on the GPU against its expected
    outputs, with the suite's tolerances."""
    import concurrent.futures as cf

    import edgec
    from edgec.runtime.loader import built_shared_object, read_manifest
    from edgec.testing.conformance_common import mismatch, tolerances

    tests = json.loads((prepared / "sample.json").read_text())

    def link(test: str) -> None:  # the loader's g++ link of each library, ahead, in threads
        folder = prepared / test
        try:
            built_shared_object(folder, read_manifest(folder))
        except Exception:  # noqa: BLE001 - edgec.load says it again, in its turn
            pass

    with cf.ThreadPoolExecutor(16) as pool:
        list(pool.map(link, [t["test"] for t in tests]))
    results = {}
    for t in tests:
        folder = prepared / t["test"]
        try:
            lib = edgec.load(folder)
            feeds = dict(np.load(folder / "feeds.npz"))
            wants = np.load(folder / "expected.npz")
            got = lib.run(feeds)
            rtol, atol = tolerances(t["test"])
            bad = [f"{k}: {why}" for k in wants.files
                   if (why := mismatch(got[k], wants[k], rtol, atol))]
            results[t["test"]] = {"op": t["op"], "ok": not bad, "why": "; ".join(bad)}
        except Exception as e:  # noqa: BLE001
            results[t["test"]] = {"op": t["op"], "ok": False, "why": repr(e)[:300]}
    failed = {k: v for k, v in results.items() if not v["ok"]}
    RESULTS["conformance_sample"] = {"tests": len(results), "passed": len(results) - len(failed),
                                     "failed": failed}
    save()
    if failed:
        raise AssertionError(f"{len(failed)} of {len(results)} failed: {sorted(failed)[:8]}")
    return RESULTS["conformance_sample"]


def prepare(folder: Path, jobs: int) -> None:
    """Here, where the onnx 1.22 wheel's node tests are: the CUDA library of the shortest
    passing test of each op (CONFORMANCE.md) in folder/<test>/, with its feeds and expected
    outputs as .npz, and folder/sample.json listing them."""
    import concurrent.futures as cf
    import re

    from edgec.testing import conformance
    from edgec.testing.conformance_common import NODE_DIR, load_tensors

    text = (Path(__file__).parent.parent / "CONFORMANCE.md").read_text()
    by_op: dict[str, str] = {}
    for test, op, status in re.findall(r"^\| (test_\w+) \| ([^|]+?) \| (\w+) \|", text,
                                       re.M):
        if status == "pass" and (op not in by_op or len(test) < len(by_op[op])):
            by_op[op] = test
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with cf.ProcessPoolExecutor(jobs) as pool:
        done = list(pool.map(conformance.prepare, by_op.values(), [str(folder)] * len(by_op),
                             ["cuda"] * len(by_op)))
    sample = []
    for p in done:
        test = p.result.test
        if p.result.status != "built":
            print(f"left out {test}: {p.result.status}: {p.result.reason}")
            shutil.rmtree(folder / test, ignore_errors=True)
            continue
        out = folder / test
        man = json.loads((out / "manifest.json").read_text())
        blob, feeds, at = (out / "inputs.bin").read_bytes(), {}, 0
        for spec, n in zip(man["inputs"], p.input_bytes, strict=True):
            a = np.frombuffer(blob[at:at + n], dtype=_np_dtype(spec["dtype"]))
            feeds[spec["name"]] = a.reshape(spec["shape"])
            at += n + (-n % 64)
        np.savez(out / "feeds.npz", **feeds)
        wants = load_tensors(NODE_DIR / test / "test_data_set_0", "output", len(man["outputs"]))
        np.savez(out / "expected.npz", **{o["name"]: w for o, w in
                                          zip(man["outputs"], wants, strict=True)})
        for junk in ("inputs.bin", "report.txt"):
            (out / junk).unlink(missing_ok=True)
        sample.append({"test": test, "op": p.result.op})
    (folder / "sample.json").write_text(json.dumps(sample, indent=0))
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    print(f"{len(sample)} of {len(by_op)} ops' tests built for cuda in {folder} "
          f"({size / 2**20:.1f} MiB)")


def _np_dtype(name: str) -> np.dtype:
    from edgec.ir.dtypes import DType

    return DType(name).np


def sanitize(out: Path) -> dict:
    """compute-sanitizer memcheck and racecheck on a C app that runs the MLP's library once
    (its fp32 build from check_model)."""
    lib = out / "mlp_fp32"
    app = lib / "app.c"
    app.write_text(APP)
    manifest = json.loads((lib / "manifest.json").read_text())
    subprocess.run(["gcc", "-std=c99", "app.c", "-o", "app", "-L.", "-lmlp",
                    *manifest["link_flags"]], cwd=lib, check=True)
    result = {}
    for tool in ("memcheck", "racecheck"):
        run = subprocess.run(["compute-sanitizer", "--tool", tool, "--error-exitcode", "1",
                              "./app"], cwd=lib, capture_output=True, text=True, timeout=120)
        result[tool] = {"exit": run.returncode, "tail": run.stdout[-600:] + run.stderr[-600:]}
        if run.returncode != 0:
            raise AssertionError(f"compute-sanitizer {tool}: exit {run.returncode}")
    return result


APP = """#include <stdio.h>
#include "mlp.h"
int main(void)
{
    static float x[MLP_INPUT0_SIZE], y[MLP_OUTPUT0_SIZE];
    for (int i = 0; i < MLP_INPUT0_SIZE; ++i)
        x[i] = (float)(i % 7) - 3.0f;
    const void *in[] = {x};
    void *out[] = {y};
    int s = mlp_run(in, out, NULL);
    printf("%d %s %f\\n", s, mlp_status_string(s), y[0]);
    mlp_release();
    return s;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--models", default="mlp,resnet18,mobilenet_v2")
    ap.add_argument("--prepared", type=Path, default=Path(".gpu"),
                    help="the conformance sample --prepare built (skipped where missing)")
    ap.add_argument("--prepare", action="store_true",
                    help="build the conformance sample into OUT, here (no GPU needed)")
    ap.add_argument("--budget", type=float, default=420.0,
                    help="seconds after which the optional steps (profiles) are skipped")
    a = ap.parse_args()
    if a.prepare:
        prepare(a.out, jobs=len(os.sched_getaffinity(0)))
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    OUT.append(a.out)
    DEADLINE[0] = time.perf_counter() + a.budget
    work = Path("/tmp/edgec-gpu-check")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t0 = time.perf_counter()

    @step("the machine")
    def machine():
        import torch

        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm",
                              "--format=csv,noheader"], capture_output=True, text=True)
        nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        RESULTS["machine"] = {"gpu": smi.stdout.strip(), "torch": torch.__version__,
                              "nvcc": nvcc.stdout.strip().splitlines()[-1:],
                              "python": sys.version.split()[0]}

    launch_us = step("empty launch")(lambda: empty_launch_us(a.runs))
    RESULTS["empty_launch_us"] = launch_us
    models = a.models.split(",")
    for name in models[:1]:  # the first (smallest) model, then the sample, then the rest
        step(f"{name}")(lambda name=name: check_model(name, work, a.runs, launch_us))
    if (a.prepared / "sample.json").exists():
        step("the conformance sample on the GPU")(lambda: conformance_on_gpu(a.prepared))
    for name in models[1:]:
        step(f"{name}")(lambda name=name: check_model(name, work, a.runs, launch_us))
    RESULTS["sanitizer"] = step("compute-sanitizer on the MLP")(lambda: sanitize(work))
    RESULTS["seconds"] = round(time.perf_counter() - t0, 1)
    save()
    failed = [s["step"] for s in RESULTS["steps"] if not s["ok"]]
    print(f"\n{len(RESULTS['steps']) - len(failed)} of {len(RESULTS['steps'])} steps passed "
          f"in {RESULTS['seconds']} s" + (f"; failed: {', '.join(failed)}" if failed else ""))
    for row in RESULTS["models"]:
        for kind in ("fp32", "fp32_graph", "fp16", "int8", "torch_fp32", "torch_fp16"):
            if kind in row:
                brief = {k: v for k, v in row[kind].items() if k != "kernels"}
                print(f"  {row['model']} {kind}: {json.dumps(brief)}")
    sample = RESULTS.get("conformance_sample")
    if sample:
        print(f"  conformance sample: {sample['passed']} of {sample['tests']} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
