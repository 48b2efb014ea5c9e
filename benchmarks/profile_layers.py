"""Per-layer time of edgec's generated kernels beside onnxruntime's node profile.

Where a whole-model ratio says edgec is behind, this says which layer. edgec's side: the
artifact's C is copied and each kernel call in `NAME_run` is wrapped in a clock read
(`CLOCK_THREAD_CPUTIME_ID` at one thread, so time lost to other processes does not count;
`CLOCK_MONOTONIC` with more threads, where the caller's CPU time would miss the pool's work),
then built and run through the Python loader. onnxruntime's side: its own profiler
(`enable_profiling`), the `_kernel_time` events per node. Both run in the same minute, runs
interleaved, so the machine's drift touches both alike. Rows are matched by ONNX node name
(an edgec kernel is named after the node it came from; fused nodes take the first name).

    python benchmarks/profile_layers.py [--model resnet18] [--runs 30] [--threads 1]
        [--target x86] [--top 0]   (--model: a zoo name or an .onnx path)
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

import onnx
from bench_models import random_feeds, set_threads

from edgec.compiler.profile import instrument, node_key

ANCHORS = ("Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool")


def ort_node_names(model: onnx.ModelProto) -> dict[str, str]:
    """onnxruntime names a fused node after a tensor it writes ('/layer1/layer1.0/relu/
    Relu_output_0_nchwc'): that tensor's producer, followed back through first inputs to the
    Conv/Gemm/pool that starts the fusion, gives the ONNX node edgec names its kernel after."""
    producer = {o: n for n in model.graph.node for o in n.output}
    names = {}
    for tensor in producer:
        n = producer[tensor]
        while n.op_type not in ANCHORS and n.input and n.input[0] in producer:
            n = producer[n.input[0]]
        names[tensor] = n.name if n.op_type in ANCHORS else producer[tensor].name
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18",
                    help="a zoo model, or the path of an .onnx file (a QDQ model, say)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", default="x86")
    ap.add_argument("--top", type=int, default=0,
                    help="print only the N slowest rows (the total still counts all)")
    a = ap.parse_args()
    from edgec import zoo

    if a.model not in zoo.MODELS and not (a.model.endswith(".onnx") and Path(a.model).is_file()):
        raise SystemExit(f"unknown model {a.model!r}; choose from {', '.join(zoo.MODELS)}")

    import onnxruntime as ort

    import edgec

    work = Path(tempfile.mkdtemp(prefix="edgec-profile-"))
    try:
        if a.model in zoo.MODELS:
            path = zoo.save(zoo.MODELS[a.model](), work / f"{a.model}.onnx")
        else:
            path = Path(shutil.copy(a.model, work / "model.onnx"))
        proto = onnx.load(path, load_external_data=False)
        art = edgec.compile(path, work / "plain", target=a.target)
        timed = work / "timed"
        shutil.copytree(art.out_dir, timed)
        kernels = instrument(timed, a.threads)
        model = edgec.load(timed)
        set_threads(model, a.threads)
        counters = (ctypes.c_double * len(kernels)).in_dll(model._lib, "edgec_profile_ns")

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = a.threads
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.enable_profiling = True
        opts.profile_file_prefix = str(work / "ort")
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        feeds = random_feeds(proto)
        for _ in range(3):  # warm-up, not counted on edgec's side
            model.run(feeds)
        ctypes.memset(counters, 0, ctypes.sizeof(counters))
        for _ in range(a.runs):
            model.run(feeds)
            sess.run(None, feeds)
        trace = json.loads(Path(sess.end_profiling()).read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ort_ms: dict[str, float] = defaultdict(float)
    seen: dict[str, int] = defaultdict(int)
    for ev in trace:
        if ev.get("cat") == "Node" and ev["name"].endswith("_kernel_time"):
            node = ev["name"][: -len("_kernel_time")]
            ort_ms[node] += ev["dur"] / 1e3
            seen[node] += 1
    # onnxruntime's warm-up runs are in its trace too: keep the last `runs` of each node
    for node, n in seen.items():
        ort_ms[node] *= min(a.runs, n) / n / a.runs

    to_onnx = ort_node_names(proto)
    renamed: dict[str, float] = defaultdict(float)
    for node, ms in ort_ms.items():
        tensor = node.removeprefix("fused ").removesuffix("_nchwc")  # ("fused /fc1/Gemm")
        renamed[to_onnx.get(tensor, tensor)] += ms
    rows = []
    ort_left = dict(renamed)
    for k, name in enumerate(kernels):
        key = node_key(re.sub(r"^k\d+_", "", name))
        match = next((n for n in ort_left if node_key(n) and key.startswith(node_key(n))), None)
        theirs = ort_left.pop(match) if match else None
        rows.append((name, counters[k] / 1e6 / a.runs, match, theirs))
    rows += [("", None, n, ms) for n, ms in ort_left.items()]
    total_ours = sum(r[1] for r in rows if r[1] is not None)
    total_theirs = sum(r[3] for r in rows if r[3] is not None)
    if a.top:
        rows = sorted(rows, key=lambda r: -max(r[1] or 0, r[3] or 0))[: a.top]

    clock = "thread CPU time" if a.threads == 1 else "wall time"
    print(f"# {a.model}, {a.threads} thread(s), {a.runs} runs, target {a.target}; ms per run "
          f"({clock} for edgec, onnxruntime's profiler)")
    print("| edgec kernel | edgec ms | onnxruntime node | onnxruntime ms | edgec - ort ms |")
    print("|---|---|---|---|---|")
    for name, ours, node, theirs in rows:
        diff = f"{ours - theirs:+.3f}" if ours is not None and theirs is not None else ""
        print(f"| {name} | {'' if ours is None else f'{ours:.3f}'} | {node or ''} | "
              f"{'' if theirs is None else f'{theirs:.3f}'} | {diff} |")
    print(f"| total | {total_ours:.3f} | | {total_theirs:.3f} | {total_ours - total_theirs:+.3f} |")


if __name__ == "__main__":
    main()
