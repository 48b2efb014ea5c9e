"""Where the cost model cannot tell the sparse kernel from the dense one, time both.

`sparsify` marks a matrix product `close` when its two estimates lie within
costs.MODEL_ERROR of each other (convolutions are not: sparsify says why). Where the build
host runs the target's code, the driver then builds the layer alone twice (sparse, dense),
times the two builds on this CPU, and files the answer in a JSON cache (`timings_file`: per
target, CPU family and CPU model, under $EDGEC_CACHE_DIR or ~/.cache/edgec) that
`sparsify{timings=FILE}` reads: a layer is timed once per machine kind, and a measured answer
outranks the model's from then on. The report says which layers were timed and what was
measured.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ..errors import EdgecError
from ..ir import Graph, Node
from ..ir.records import SparsePlan
from ..passes.manager import PipelineReport, PipelineStep
from ..passes.sparsify import read_timings
from ..targets.target import Target, host_cpu_name

# time each build for at least this long, alternating, after a warm-up
SECONDS_PER_LAYER = 0.3
MIN_PAIRS = 15


def cache_dir() -> Path:
    return Path(os.environ.get("EDGEC_CACHE_DIR") or Path.home() / ".cache" / "edgec")


def timings_file(target: Target) -> Path:
    """The cache of measured choices for `target` on this machine's CPU."""
    cpu = hashlib.sha1(host_cpu_name().encode()).hexdigest()[:8]
    return cache_dir() / f"timings-{target.name}-{target.uarch or 'unknown'}-{cpu}.json"


def with_timings(steps: list, path: Path) -> list:
    """`steps` with `timings=path` on the sparsify pass."""
    out = []
    for s in steps:
        if s.pass_.name == "sparsify":
            s = PipelineStep(replace(s.pass_, timings=str(path)), s.fixpoint)
        out.append(s)
    return out


def close_layers(graph: Graph, measured: dict) -> list[SparsePlan]:
    """The plans sparsify marked close whose layers have no measurement yet."""
    plans = [n.record.sparse for n in graph.nodes if n.record.sparse is not None]
    return [p for p in plans if p.close and p.key not in measured]


def layer_graph(node: Node) -> Graph:
    """`node` alone: its activation inputs as the graph's inputs, its constants kept."""
    g = Graph(f"tune_{node.name}")
    ins = []
    for i, v in enumerate(node.inputs):
        if v is None:
            ins.append(None)
        elif v.is_const:
            ins.append(g.const(v.const, f"c{i}"))
        else:
            ins.append(g.add_input(f"x{i}", v.type))
    new = g.add_node(node.op, ins, dict(node.attrs), name="layer")
    g.outputs = list(new.outputs)
    return g


def time_layer(node: Node, target: Target, sparse_steps: list, dense_steps: list,
               backend: str) -> dict[str, float]:
    """Median microseconds per call of `node` alone built with each pipeline, alternating."""
    from ..runtime.loader import load
    from .bench import random_inputs
    from .driver import compile_graph

    libs = {}
    with tempfile.TemporaryDirectory(prefix="edgec-tune-") as tmp:
        for kind, steps in (("sparse", sparse_steps), ("dense", dense_steps)):
            art = compile_graph(layer_graph(node), Path(tmp) / kind, target=target,
                                name="layer", pipeline=",".join(map(str, steps)),
                                backend=backend, tune=False)
            libs[kind] = load(art.out_dir)
            libs[kind].set_num_threads(1)
        feeds = random_inputs(libs["sparse"].manifest)
        times: dict[str, list[float]] = {k: [] for k in libs}
        for k in libs:  # warm-up
            libs[k].run(feeds)
        start = time.perf_counter()
        while (time.perf_counter() - start < SECONDS_PER_LAYER
               or len(times["dense"]) < MIN_PAIRS):
            for k, lib in libs.items():
                t0 = time.perf_counter()
                lib.run(feeds)
                times[k].append((time.perf_counter() - t0) * 1e6)
    return {k: round(statistics.median(v), 2) for k, v in times.items()}


def tune(snapshot: Graph, plans: list[SparsePlan], steps: list, target: Target, path: Path,
         backend: str, log) -> int:
    """Time the layers of `plans` (found by name in `snapshot`, the graph as sparsify got it)
    sparse and dense, add them to the cache at `path`; the number of layers whose measured
    answer differs from the model's."""
    at = next(i for i, s in enumerate(steps) if s.pass_.name == "sparsify")
    rest = [s for s in steps[at + 1:] if s.pass_.name in AFTER_SPARSIFY]
    sparse_steps = [PipelineStep(replace(steps[at].pass_, force=True, timings="")), *rest]
    nodes = {n.name: n for n in snapshot.nodes}
    measured = read_timings(str(path))
    flipped = 0
    for plan in plans:
        node = nodes.get(plan.layer)
        if node is None:
            continue
        t = time_layer(node, target, sparse_steps, rest, backend)
        measured[plan.key] = t
        flipped += (t["sparse"] < t["dense"]) != plan.runs_sparse
        print(f"sparsify: {plan.layer}: the cost model cannot tell (sparse "
              f"{plan.sparse_cost / plan.dense_cost:.2f}x the dense estimate); timed "
              f"alone on this CPU: sparse {t['sparse']:.1f} us, dense {t['dense']:.1f} us",
              file=log)
    write_cache(path, measured)
    return flipped


def run_tuned(graph: Graph, steps: list, tgt, backend: str, run, log):
    """Run the pipeline with sparsify reading this machine's measured choices; where it marked
    layers its cost model cannot decide and nothing was measured for them yet, time them
    (compiler/tune.py) and run the passes from sparsify on again with the answers."""
    path = timings_file(tgt)
    steps = with_timings(steps, path)
    at = next(i for i, s in enumerate(steps) if s.pass_.name == "sparsify")
    first = run(graph, steps[:at], needs={})  # the memory plan comes in the second half
    snapshot = graph.copy()
    rest = run(graph, steps[at:])
    plans = close_layers(graph, read_timings(str(path)))
    if plans:
        tune(snapshot, plans, steps, tgt, path, backend, log)
        graph = snapshot
        rest = run(graph, steps[at:])
    return graph, PipelineReport(first.records + rest.records)


def timed_layers(graph: Graph) -> list[dict]:
    """The layers whose sparse-or-dense choice was close for the cost model, and how each was
    settled: by the times measured on this CPU, or by the model (not timed: the build host
    does not run the target, or --no-tune)."""
    out = []
    for n in graph.nodes:
        p = n.record.sparse
        if p is not None and p.close:
            row = {"layer": p.layer, "kernel": "sparse" if p.runs_sparse else "dense",
                   "model_ratio": round(p.sparse_cost / p.dense_cost, 3)}
            if p.measured_us is not None:
                row["measured_us"] = {"sparse": p.measured_us.sparse,
                                      "dense": p.measured_us.dense}
            out.append(row)
    return out


def timed_lines(rows: list[dict]) -> list[str]:
    lines = []
    for r in rows:
        how = (f"timed on this CPU: sparse {r['measured_us']['sparse']:.1f} us, dense "
               f"{r['measured_us']['dense']:.1f} us" if "measured_us" in r else
               "not timed (the build host does not run the target, or --no-tune): the "
               "model's choice")
        lines.append(f"sparsify: {r['layer']} runs {r['kernel']}: the cost model could not "
                     f"tell (sparse {r['model_ratio']:.2f}x the dense estimate); {how}")
    return lines


# the passes after sparsify that a layer timed alone goes through (the layouts, packing and
# memory plan the full build gives it; no reorder, which only moves channels between layers)
AFTER_SPARSIFY = ("layout-nchwc", "pack-weights", "fixed-point", "fuse-residual", "dce",
                  "plan-memory")


def write_cache(path: Path, measured: dict) -> None:
    """Write the cache atomically (a compile beside this one reads it whole or not at all)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(measured, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as e:
        raise EdgecError(f"cannot write the kernel timings cache {path}: {e.strerror}; set "
                         "EDGEC_CACHE_DIR to a writable folder, or compile with --no-tune"
                         ) from None


__all__ = ["close_layers", "run_tuned", "timed_layers", "timed_lines", "timings_file", "tune",
           "with_timings"]
