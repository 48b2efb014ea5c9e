"""The driver: ONNX model -> IR -> pass pipeline -> C sources -> static library + manifest.

`compile()` is the Python face of `edgec compile`; it returns the `Artifact` it wrote.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from .. import __version__
from ..errors import EdgecError, UnsupportedOpError
from ..ir.dtypes import DType
from ..ir.graph import Graph
from ..ir.onnx_dtypes import to_onnx
from ..targets.codegen import generate
from ..targets.lowering import unsupported_kernels
from ..targets.target import get_target
from ..targets.toolchain import archive, compile_objects


@dataclass
class Artifact:
    out_dir: Path
    name: str
    manifest: dict
    # seconds per compile stage (import, passes, codegen, build, total): in report.txt, not
    # in manifest.json, which two compiles of one model write byte for byte the same
    timing: dict = field(default_factory=dict)

    @property
    def library(self) -> Path:
        return self.out_dir / f"lib{self.name}.a"

    @property
    def header(self) -> Path:
        return self.out_dir / f"{self.name}.h"


def default_name(model) -> str:
    stem = Path(model).stem if isinstance(model, str | Path) else "model"
    ident = re.sub(r"[^A-Za-z0-9_]", "_", stem)
    return ident if ident and not ident[0].isdigit() else f"m_{ident}"


def load_graph(model, input_shapes: Mapping[str, Sequence[int]] | None = None,
               name: str | None = None) -> Graph:
    """An IR graph from an ONNX model (path, bytes or ModelProto) or a text-IR file (.ir)."""
    if isinstance(model, str | Path) and str(model).endswith(".ir"):
        from ..ir import parse

        try:
            text = Path(model).read_text()
        except OSError as e:
            raise EdgecError(f"cannot read {model}: {e.strerror}") from None
        return parse(text)
    from ..frontends.onnx import import_onnx

    return import_onnx(model, input_shapes=input_shapes, name=name)


def link_flags(threads: bool) -> list[str]:
    """What an app adds after libNAME.a when it links."""
    return ["-lm", "-pthread"] if threads else ["-lm"]


def ensure_pipeline_plans_memory(pipeline: str) -> str:
    passes = [p.split("{")[0].strip() for p in pipeline.split(",") if p.strip()]
    if not passes or passes[-1] != "plan-memory":
        pipeline = f"{pipeline},plan-memory" if pipeline.strip() else "plan-memory"
    return pipeline


QUANTIZE_BITS = {"int8": 8, "int4": 4, "int3": 3, "int2": 2}


def measure_layer_latency(q: dict, out: Path, calib, graph: Graph, target) -> None:
    """Each layer's share of the measured latency (`latency_share`; `other_latency_share` for
    the kernels of no layer: layout changes, padding, the edges' quantize), timing every
    kernel of the built library on up to 4 calibration samples (compiler/profile.py). Where
    the host cannot run the library (a cross target, a missing ISA) or there are no samples,
    `latency_share` is None and `latency_note` says why."""
    from ..passes.quantize import load_samples
    from ..targets.target import missing_host_flags
    from .profile import kernel_times, layer_shares

    why = ("no calibration samples" if calib is None else
           f"the host cannot run {target.name} code" if missing_host_flags(target)
           or target.emulator else "")
    if not why:
        samples = load_samples(calib) if isinstance(calib, str | Path) else calib
        try:
            batch = {v.name: v.shape[0] if v.shape else 1 for v in graph.inputs}
            n = min(4, min(len(samples[k]) // max(batch[k], 1) for k in batch))
            feeds = [{k: np.ascontiguousarray(samples[k][i * batch[k]:(i + 1) * batch[k]],
                                              dtype=v.dtype.np)
                      for k, v in ((v.name, v) for v in graph.inputs)} for i in range(n)]
            names = {x["node"]: [x["node"], x["output"], f"{x['output']}_QuantizeLinear"]
                     for x in q["layers"]}
            hosts = _fused_layers(graph, names)
            for guest, (host, kernel) in hosts.items():
                names[host].append(kernel)
                names[guest] = []
            shares, other = layer_shares(kernel_times(out, feeds), names)
        except (EdgecError, KeyError, OSError) as e:
            why = f"timing failed: {e}"
    for x in q["layers"]:
        x["latency_share"] = None if why else round(shares[x["node"]], 4)
        if not why and x["node"] in hosts:
            x["in_kernel_of"] = hosts[x["node"]][0]
    q["other_latency_share"] = None if why else round(other, 4)
    if why:
        q["latency_note"] = f"latency share not measured: {why}"


def _fused_layers(graph: Graph, names: dict[str, list[str]]) -> dict[str, tuple[str, str]]:
    """{layer: (layer whose kernel runs it, that kernel's node name)} for the layers a pass
    fused into another's kernel (node.meta["fused"]: the nodes it does the work of, the first
    the one that takes the time: a residual add in its convolution)."""
    from .profile import node_key

    def owner(name: str) -> str | None:
        key = re.sub(r"_nchwc$", "", node_key(name))
        return next((layer for layer, ns in names.items()
                     if key in {node_key(n) for n in ns}), None)

    out = {}
    for node in graph.nodes:
        fused = node.meta.get("fused", [])
        layers = [owner(n) for n in fused]
        if len(fused) > 1 and layers[0] is not None:
            out |= {lay: (layers[0], re.sub(r"_nchwc$", "", node.name)) for lay in layers[1:]
                    if lay is not None and lay != layers[0]}
    return out


def write_quantization_report(q: dict, out: Path, log: IO[str]) -> dict:
    """quantization.json (the quantize pass's per-layer record) and quantization.png (per
    layer: SQNR against float and share of the measured latency, or of the MACs where it was
    not measured; float layers marked) in `out`; returns the manifest's summary."""
    total = sum(x["macs"] for x in q["layers"]) or 1
    for x in q["layers"]:
        x["mac_share"] = round(x["macs"] / total, 4)
    measured = all(x.get("latency_share") is not None for x in q["layers"])
    (out / "quantization.json").write_text(json.dumps(q, indent=2) + "\n")
    summary = {"report": "quantization.json", "bits": q["bits"],
               "output_sqnr_db": q["output_sqnr_db"], "kept_float": q["kept_float"]}
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("quantization.png not drawn: it needs matplotlib (pip install matplotlib)",
              file=log)
        return summary
    rows = q["layers"]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(max(6, 0.22 * len(rows)), 6))
    xs = range(len(rows))
    sq = [x["sqnr_db"] if x["sqnr_db"] is not None else 0 for x in rows]
    colors = ["tab:gray" if x["float"] else "tab:blue" for x in rows]
    top.bar(xs, sq, color=colors)
    top.set_ylabel("SQNR vs float (dB)")
    top.set_title(f"{q['bits']}-bit weights, uint8 activations ({q['calibration']}, "
                  f"{q['samples']} samples)\noutput SQNR {q['output_sqnr_db']} dB"
                  + (f", budget {q['budget_db']} dB (dashed)" if q.get("budget_db") else "")
                  + "; grey: kept float", fontsize=9)
    if q.get("budget_db"):
        top.axhline(q["budget_db"], color="tab:red", lw=1, ls="--")
    share = "latency_share" if measured else "mac_share"
    bottom.bar(xs, [100 * x[share] for x in rows], color=colors)
    bottom.set_ylabel("share of latency (%)" if measured else "share of MACs (%)")
    bottom.set_xticks(list(xs), [x["node"] for x in rows], rotation=90, fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "quantization.png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    summary["plot"] = "quantization.png"
    return summary


def _with_quantize(steps: list, quantize: str, calib, method: str, skip: Sequence[str],
                   weights: str, budget: float, log: IO[str] | None) -> list:
    """`steps` with the quantize pass in front of fuse-qdq (which makes its integer ops)."""
    from ..passes.manager import PipelineStep
    from ..passes.quantize import Quantize

    if quantize not in QUANTIZE_BITS:
        raise EdgecError(f"quantize={quantize!r}: choose {', '.join(QUANTIZE_BITS)}")
    feeds, samples = (None, str(calib)) if isinstance(calib, str | Path) else (calib, "")
    q = Quantize(bits=QUANTIZE_BITS[quantize], calib=method, skip=",".join(skip),
                 samples=samples, weights=weights, budget=budget, feeds=feeds, log=log)
    at = next((i for i, s in enumerate(steps) if s.pass_.name == "fuse-qdq"), None)
    if at is None:
        raise EdgecError("quantize needs the pipeline's fuse-qdq pass to make integer ops")
    return [*steps[:at], PipelineStep(q), *steps[at:]]


def _with_prune(steps: list, sparsity: float, pattern: str, exclude: Sequence[str],
                calib=None) -> list:
    """`steps` with the prune pass after batch-norm folding (the weights it prunes are the
    folded ones) and before quantization and fusion; data-aware given samples `calib`."""
    from ..passes.manager import PipelineStep
    from ..passes.prune import Prune

    feeds, samples = (None, str(calib)) if isinstance(calib, str | Path) else (calib, "")
    p = Prune(sparsity=sparsity, pattern=pattern, exclude=",".join(exclude), samples=samples,
              feeds=feeds)
    at = next((i for i, s in enumerate(steps) if s.pass_.name == "fuse-qdq"), None)
    if at is None:
        raise EdgecError("prune needs the standard pipeline (it goes before fuse-qdq)")
    return [*steps[:at], PipelineStep(p), *steps[at:]]


def compile(model, out_dir, *, target: str = "x86", name: str | None = None,
            input_shapes: Mapping[str, Sequence[int]] | None = None, pipeline: str | None = None,
            verify_each: bool = False, print_ir_after_all: bool = False,
            check_numerics: bool = False, timing: bool = False,
            log: IO[str] | None = None, threads: bool = True, backend: str = "c",
            quantize: str | None = None, calib=None, calib_method: str = "minmax",
            quantize_skip: Sequence[str] = (), quantize_weights: str = "auto",
            accuracy_budget: float = 0.0, prune: float = 0.0,
            prune_pattern: str = "unstructured", prune_exclude: Sequence[str] = (),
            compress: bool = False) -> Artifact:
    """Compile `model` into `out_dir`: libNAME.a, NAME.h, sources and manifest.json. With
    `threads` False the library has no thread pool and links without pthreads; `backend`
    "llvm" compiles the kernels with LLVM instead of the C compiler.

    `quantize` ("int8", "int4", "int3", "int2": the weights' bits; activations are uint8)
    quantizes the model after import (passes/quantize.py), calibrated on `calib`: {input
    name: array whose first axis indexes samples} or the path of such an .npz; without it,
    the weights only (data-free). `calib_method`: minmax, percentile, kl or admm;
    `quantize_skip`: node names kept in float; `quantize_weights`: minmax or admm (auto: ADMM
    below 8 bits); `accuracy_budget` (dB): the least SQNR of the outputs against the float
    model on the samples, the worst layers kept in float until it holds. A calibrated
    quantization writes quantization.json and quantization.png (per layer: scale, zero
    point, bits, SQNR, share of the MACs and of the latency measured on the samples where
    the host runs the target) beside the library.

    `prune` (a sparsity in (0, 1)) zeroes that share of each convolution's and matrix
    product's weights before quantization (passes/prune.py), in `prune_pattern`
    (unstructured, 4x1 and the other Rx1 blocks, N:M such as 2:4, or channel: whole output
    channels removed and the shapes shrunk), but the layers named in `prune_exclude`: by
    magnitude, or given `calib`, data-aware (the remaining weights updated to keep each
    layer's outputs on the samples); weights with enough zeros, pruned here or in
    training, run on the sparse kernels (passes/sparsify.py) with or without it.

    `compress` stores the weights canonical-Huffman coded (targets/huffman.py), decoded once
    by NAME_init or the first run into a static buffer of NAME_WEIGHTS_BUFFER_BYTES;
    manifest.json's "weights" gives their bytes as float32, as packed and as coded."""
    t0 = time.perf_counter()
    name = name or default_name(model)
    graph = load_graph(model, input_shapes, name)
    source = Path(model).name if isinstance(model, str | Path) else ""
    return compile_graph(graph, out_dir, target=target, name=name, pipeline=pipeline,
                         verify_each=verify_each, print_ir_after_all=print_ir_after_all,
                         check_numerics=check_numerics, timing=timing, log=log, source=source,
                         started=t0, threads=threads, backend=backend,
                         quantize=quantize, calib=calib, calib_method=calib_method,
                         quantize_skip=quantize_skip, quantize_weights=quantize_weights,
                         accuracy_budget=accuracy_budget, prune=prune,
                         prune_pattern=prune_pattern, prune_exclude=prune_exclude,
                         compress=compress)


def compile_graph(graph: Graph, out_dir, *, target: str = "x86", name: str | None = None,
                  pipeline: str | None = None, verify_each: bool = False,
                  print_ir_after_all: bool = False, check_numerics: bool = False,
                  timing: bool = False, log: IO[str] | None = None, source: str = "",
                  started: float | None = None, threads: bool = True,
                  backend: str = "c", quantize: str | None = None, calib=None,
                  calib_method: str = "minmax", quantize_skip: Sequence[str] = (),
                  quantize_weights: str = "auto", accuracy_budget: float = 0.0,
                  prune: float = 0.0, prune_pattern: str = "unstructured",
                  prune_exclude: Sequence[str] = (), compress: bool = False) -> Artifact:
    """Compile an IR graph (modified in place by the pipeline) into `out_dir`."""
    from ..passes import default_pipeline, parse_pipeline, run_pipeline

    t0 = started if started is not None else time.perf_counter()
    tgt = get_target(target)
    name = name or default_name(graph.name)
    missing = unsupported_kernels(graph.nodes)
    if missing:
        counts = graph.op_counts()
        raise UnsupportedOpError("no kernel yet for op(s): " +
                                 ", ".join(f"{o} (x{counts[o]})" for o in missing))
    if quantize is not None and pipeline is not None:
        raise EdgecError("give quantize= or a pipeline with a quantize{...} pass, not both")
    if prune and pipeline is not None:
        raise EdgecError("give prune= or a pipeline with a prune{...} pass, not both")
    pipeline = ensure_pipeline_plans_memory(pipeline or default_pipeline(tgt.lanes(DType.F32),
                                                                       tgt.registers))
    steps = parse_pipeline(pipeline)
    if prune:
        steps = _with_prune(steps, prune, prune_pattern, prune_exclude, calib)
        pipeline = ",".join(map(str, steps))
    if quantize is not None:
        steps = _with_quantize(steps, quantize, calib, calib_method, quantize_skip,
                               quantize_weights, accuracy_budget, log)
        pipeline = ",".join(map(str, steps))
    t_import = time.perf_counter()
    float32_bytes = _float32_bytes(graph)
    report = run_pipeline(graph, steps, verify_each=verify_each,
                          print_ir_after_all=print_ir_after_all, check_numerics=check_numerics,
                          timing=timing, out=log or sys.stderr)
    plan = graph.meta["memory_plan"]
    t_passes = time.perf_counter()
    src = generate(graph, plan, tgt, name, source, threads=threads, backend=backend,
                   compress=compress)

    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EdgecError(f"cannot create output folder {out}: {e.strerror}") from None
    for fname, content in src.files.items():
        path = out / fname
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    t_codegen = time.perf_counter()
    objects = compile_objects(tgt, src.c_sources, out)
    archive(objects + src.objects, f"lib{name}.a", out, tgt)
    for o in objects:
        (out / o).unlink(missing_ok=True)
    t_build = time.perf_counter()

    io = lambda v: {"name": v.name, "shape": list(v.shape), "dtype": v.dtype.value,  # noqa: E731
                    "onnx_dtype": to_onnx(v.dtype)}
    manifest = {
        "name": name,
        "edgec_version": __version__,
        "source": source,
        "target": tgt.name,
        "cflags": list(tgt.cflags),
        "vector_isa": tgt.isa,
        "backend": backend,
        "threads": threads,
        "link_flags": link_flags(threads),
        "pipeline": pipeline,
        "inputs": [io(v) for v in graph.inputs],
        "outputs": [io(v) for v in graph.outputs],
        "workspace_bytes": src.workspace_bytes,
        "weights_bytes": src.weights_bytes,
        # the weights' bytes as float32 (the imported model's), as the library packs them
        # (int8 codes, sparse values and indices) and Huffman coded (--compress; else null)
        "weights": {"float32_bytes": float32_bytes, "packed_bytes": src.weights_bytes,
                    "coded_bytes": src.coded_bytes,
                    "decoded_buffer_bytes": src.weights_buffer_bytes},
        "memory": {"arena_bytes": plan.arena_bytes, "activations_bytes": plan.total_bytes,
                   "lower_bound_bytes": plan.lower_bound_bytes},
        "ops": graph.op_counts(),
        "kernels": len(src.kernels),
        # per node: the kernel it got and how it computes (targets/lowering.py Strategy)
        "kernel_strategies": src.strategies,
        # NAME_dot_product_kernels() exists: int8 micro-kernels chosen at run time
        "dot_product_kernels": src.dot_product_kernels,
        "library": f"lib{name}.a",
        "header": f"{name}.h",
        "sources": [f for f in src.files if not f.endswith(".bin")],
    }
    timing = {"import": round(t_import - t0, 4), "passes": round(t_passes - t_import, 4),
              "codegen": round(t_codegen - t_passes, 4), "build": round(t_build - t_codegen, 4),
              "total": round(t_build - t0, 4)}
    if "quantization" in graph.meta:
        # the timed copy of the library is loaded through its manifest
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        measure_layer_latency(graph.meta["quantization"], out, calib, graph, tgt)
        manifest["quantization"] = write_quantization_report(graph.meta["quantization"], out,
                                                             log or sys.stderr)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (out / "report.txt").write_text(_report(manifest, report, plan, timing))
    return Artifact(out, name, manifest, timing)


def _float32_bytes(graph: Graph) -> int:
    """The bytes of the graph's weights (its float and integer constants but int64 ones:
    shapes and indices) held as float32."""
    return sum(4 * v.type.numel for v in graph.constants() if v.dtype is not DType.I64)


def _report(manifest: dict, pipeline_report, plan, timing: dict) -> str:
    lines = [f"edgec {manifest['edgec_version']}: {manifest['name']} for {manifest['target']}",
             f"pipeline: {manifest['pipeline']}", ""]
    if hasattr(pipeline_report, "timing_table"):
        lines += [pipeline_report.timing_table(), ""]
    lines += [plan.report(), "", "kernels (node, op: strategy):"]
    lines += [f"  {s['node']} {s['op']}: {_strategy_text(s)}"
              for s in manifest["kernel_strategies"]]
    lines += ["",
              "ops: " + ", ".join(f"{k} x{v}" for k, v in sorted(manifest["ops"].items())),
              _weights_line(manifest["weights"]),
              "compile time: " + ", ".join(f"{k} {v:.3f}s"
                                           for k, v in timing.items())]
    return "\n".join(lines) + "\n"


def _weights_line(w: dict) -> str:
    line = f"weights: {w['packed_bytes']} bytes ({w['float32_bytes']} as float32"
    if w["coded_bytes"] is not None:
        line += (f"; Huffman coded {w['coded_bytes']}, "
                 f"{w['float32_bytes'] / max(w['coded_bytes'], 1):.1f}x smaller than float32")
    return line + ")"


def _strategy_text(s: dict) -> str:
    from ..targets.lowering import Strategy

    return Strategy(s["strategy"], s["kind"], s["lanes"], s["parallel"],
                    tuple(s["micro_kernels"])).describe()
