"""The driver: ONNX model -> IR -> pass pipeline -> C sources -> static library + manifest.

`compile()` is the Python face of `edgec compile`; it returns the `Artifact` it wrote.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from .. import __version__
from ..codegen.cuda_library import generate_cuda
from ..codegen.hls_estimate import report_lines as hls_report_lines
from ..codegen.hls_project import copy_hls_headers, generate_hls
from ..codegen.library import generate
from ..codegen.toolchain import (
    SANITIZE_CFLAGS,
    SANITIZE_LINK_FLAGS,
    archive,
    build_cuda,
    check_gpu_archs,
    check_sanitizable,
    compile_objects,
    cuda_link_flags,
)
from ..errors import EdgecError, UnsupportedOpError
from ..ir.dtypes import DType
from ..ir.graph import Graph
from ..ir.onnx_dtypes import to_onnx
from ..ir.records import LatencyShares, QuantizationRecord
from ..lowering.lower import unsupported_kernels
from ..lowering.strategies import Candidate, explain, unknown_nodes
from ..runtime import manifest as manifest_file
from ..runtime.emulated import build_runner
from ..targets.target import get_target, pair_sums, runs_on_host
from .options import PRECISIONS, CompileOptions
from .tune import run_tuned, timed_layers, timed_lines


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


def _check_hls_options(opt: CompileOptions, tgt) -> None:
    """An EdgecError for an option the HLS target needs and lacks, or cannot take, or for
    --fpga-part without it."""
    if tgt.arch != "hls":
        if opt.fpga_part or opt.target_fps:
            raise EdgecError(f"--fpga-part and --target-fps are for --target hls, not "
                             f"{tgt.name}")
        return
    if not opt.fpga_part:
        raise EdgecError("--target hls needs the FPGA part the design is for: --fpga-part "
                         "PART, as Vitis names it (for example xcu250-figd2104-2L-e)")
    if not opt.clock_mhz > 0:
        raise EdgecError(f"--clock-mhz must be positive, got {opt.clock_mhz}")
    if opt.target_fps < 0:
        raise EdgecError(f"--target-fps must be positive (or 0: as fast as the part allows), "
                         f"got {opt.target_fps}")
    for given, flag in ((opt.backend != "c", f"--backend {opt.backend}"),
                        (opt.sanitize, "--sanitize"), (opt.compress, "--compress")):
        if given:
            raise EdgecError(f"{flag} is for CPU targets; --target hls writes an HLS C++ "
                             "project (the weights are on-chip ROMs): leave it out")


def _check_gpu_options(opt: CompileOptions, tgt) -> None:
    """An EdgecError for an option the target cannot take: CPU-only options with a CUDA
    target, --gpu-arch without one."""
    _check_hls_options(opt, tgt)
    if opt.precision not in PRECISIONS:
        raise EdgecError(f"--precision {opt.precision}: one of {', '.join(PRECISIONS)}")
    if tgt.gpu is None:
        if opt.gpu_arch:
            raise EdgecError(f"--gpu-arch is for --target cuda, not {tgt.name}")
        if opt.cuda_graph:
            raise EdgecError(f"--cuda-graph is for --target cuda, not {tgt.name}")
        if opt.precision != "fp32":
            raise EdgecError(f"--precision {opt.precision} is for --target cuda (tensor "
                             f"cores); {tgt.name} computes float32")
        return
    check_gpu_archs(opt.gpu_arch)
    old = [a for a in (opt.gpu_arch or tgt.gpu.archs) if int(re.sub(r"\D", "", a)) < 80]
    if opt.precision != "fp32" and old:
        raise EdgecError(f"--precision {opt.precision} runs on tensor cores through "
                         f"mma.sync, which {old[0]} lacks: build for sm_80 or later, or "
                         "leave --precision at fp32")
    if opt.backend != "c":
        raise EdgecError(f"--backend {opt.backend} builds CPU code; a CUDA target's kernels "
                         "are built by nvcc from the CUDA renderer: leave --backend out")
    for given, flag, why in ((opt.sanitize, "--sanitize", "run compute-sanitizer on the GPU "
                              "machine instead"),
                             (opt.compress, "--compress", "the weights are uploaded as they "
                              "are")):
        if given:
            raise EdgecError(f"{flag} is for CPU targets: {why}")


def link_flags(threads: bool, sanitize: bool = False) -> list[str]:
    """What an app adds after libNAME.a when it links (a sanitized library: the sanitizers'
    runtimes too)."""
    return [*(SANITIZE_LINK_FLAGS if sanitize else ()), "-lm", *(["-pthread"] if threads else [])]


def package_files(name: str, threads: bool, source: str = "", sanitize: bool = False,
                  links: Sequence[str] | None = None) -> dict[str, str]:
    """The artifact's CMake package config (NAMEConfig.cmake, NAMEConfigVersion.cmake: an
    imported target NAME::NAME) and pkg-config file (NAME.pc), with paths relative to the
    folder they are in, so that it can be moved whole; `links`: what an app links after the
    library (default: link_flags)."""
    given = links is not None  # a CUDA library's: the CUDA runtime and what it needs
    links = list(links) if given else link_flags(threads, sanitize)
    libs = " ".join(links)
    about = "".join(ch if " " <= ch <= "~" and ch not in "#$\\" else "_" for ch in source)
    threads_cmake = ["  include(CMakeFindDependencyMacro)", "  find_dependency(Threads)",
                     f"  set_property(TARGET {name}::{name} APPEND PROPERTY",
                     "               INTERFACE_LINK_LIBRARIES Threads::Threads)"] \
        if threads else []
    config = "\n".join([
        f"# {name}Config.cmake: the CMake package of lib{name}.a, generated by edgec "
        f"{__version__}.",
        f"#   find_package({name} CONFIG REQUIRED)   (with -D{name}_DIR=<this folder>, or the",
        "#                                          folder in CMAKE_PREFIX_PATH)",
        f"#   target_link_libraries(app PRIVATE {name}::{name})",
        f"if(NOT TARGET {name}::{name})",
        f"  add_library({name}::{name} STATIC IMPORTED)",
        f"  set_target_properties({name}::{name} PROPERTIES",
        f'    IMPORTED_LOCATION "${{CMAKE_CURRENT_LIST_DIR}}/lib{name}.a"',
        '    INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_CURRENT_LIST_DIR}"',
        "    IMPORTED_LINK_INTERFACE_LANGUAGES C)",
        *threads_cmake,
        *([f"  set_property(TARGET {name}::{name} APPEND PROPERTY INTERFACE_LINK_OPTIONS",
           f"               {' '.join(SANITIZE_LINK_FLAGS)})"] if sanitize else []),
        *([f"  set_property(TARGET {name}::{name} APPEND PROPERTY INTERFACE_LINK_OPTIONS",
           f"               {' '.join(links)})"] if given else []),
        "  if(NOT WIN32)",
        f"    set_property(TARGET {name}::{name} APPEND PROPERTY INTERFACE_LINK_LIBRARIES m)",
        "  endif()",
        "endif()",
        f"set({name}_FOUND TRUE)", ""])
    version = "\n".join([
        f"# {name}ConfigVersion.cmake: lib{name}.a was made by edgec {__version__}; any "
        "version asked for is accepted (the model has none).",
        f'set(PACKAGE_VERSION "{__version__}")',
        "set(PACKAGE_VERSION_COMPATIBLE TRUE)", ""])
    pc = "\n".join([
        "prefix=${pcfiledir}", "libdir=${prefix}", "includedir=${prefix}", "",
        f"Name: {name}",
        f"Description: {about or name}, compiled by edgec {__version__} into lib{name}.a",
        f"Version: {__version__}",
        f"Libs: -L${{libdir}} -l{name} {libs}",
        "Cflags: -I${includedir}", ""])
    return {f"{name}Config.cmake": config, f"{name}ConfigVersion.cmake": version,
            f"{name}.pc": pc}


def ensure_pipeline_plans_memory(pipeline: str) -> str:
    passes = [p.split("{")[0].strip() for p in pipeline.split(",") if p.strip()]
    if not passes or passes[-1] != "plan-memory":
        pipeline = f"{pipeline},plan-memory" if pipeline.strip() else "plan-memory"
    return pipeline


QUANTIZE_BITS = {"int8": 8, "int7": 7, "int4": 4, "int3": 3, "int2": 2}
# the remedies the quantize pass applies on request (Nagel et al., ICCV 2019)
# and the ones that measure the layers on the samples: AdaRound (Nagel et al., ICML 2020),
# mixed precision by sensitivity (with accuracy_budget), SmoothQuant (alpha 0.5)
QUANTIZE_METHODS = ("equalize", "bias-correct", "adaround", "sensitivity", "smooth")
# what the plots of report.html and quantization.png need, as the README names it
PLOTS_NEED = "it needs matplotlib (pip install 'edgec[report]')"


def measure_layer_latency(q: QuantizationRecord, out: Path, calib, graph: Graph, target,
                          sanitize: bool = False, kernels: Sequence[dict] = ()) -> None:
    """Each layer's share of the measured latency (`latency_share`; `other_latency_share` for
    the kernels of no layer: layout changes, padding, the edges' quantize), timing every
    kernel of the built library on up to 4 calibration samples (compiler/profile.py). Where
    the host cannot run the library (a cross target, a missing ISA), there are no samples or
    the library is sanitized (its times would be the sanitizers'), `latency_share` is None
    and `latency_note` says why. `kernels`: the manifest's kernel_strategies (which node
    each kernel runs)."""
    from ..passes.quantize import load_samples
    from ..targets.target import missing_host_flags
    from .profile import kernel_times, layer_shares, node_times

    why = ("no calibration samples" if calib is None else
           f"the host cannot run {target.name} code" if missing_host_flags(target)
           or target.emulator or target.arch == "hls" else
           "built with --sanitize" if sanitize else "")
    if not why:
        samples = load_samples(calib) if isinstance(calib, str | Path) else calib
        try:
            batch = {v.name: v.shape[0] if v.shape else 1 for v in graph.inputs}
            n = min(4, min(len(samples[k]) // max(batch[k], 1) for k in batch))
            feeds = [{k: np.ascontiguousarray(samples[k][i * batch[k]:(i + 1) * batch[k]],
                                              dtype=v.dtype.np)
                      for k, v in ((v.name, v) for v in graph.inputs)} for i in range(n)]
            names = {x["node"]: [x["node"], x["output"], f"{x['output']}_QuantizeLinear"]
                     for x in q.layers}
            hosts = _fused_layers(graph, names)
            for guest, (host, kernel) in hosts.items():
                names[host].append(kernel)
                names[guest] = []
            shares, other = layer_shares(node_times(kernel_times(out, feeds), list(kernels)),
                                         names)
        except (EdgecError, KeyError, OSError) as e:
            why = f"timing failed: {e}"
    for x in q.layers:
        x["latency_share"] = None if why else round(shares[x["node"]], 4)
        if not why and x["node"] in hosts:
            x["in_kernel_of"] = hosts[x["node"]][0]
    q.latency = LatencyShares(None, f"latency share not measured: {why}") if why else \
        LatencyShares(round(other, 4))


def _fused_layers(graph: Graph, names: dict[str, list[str]]) -> dict[str, tuple[str, str]]:
    """{layer: (layer whose kernel runs it, that kernel's node name)} for the layers a pass
    fused into another's kernel (node.record.fused: the nodes it does the work of, the first
    the one that takes the time: a residual add in its convolution)."""
    from .profile import node_key

    def owner(name: str) -> str | None:
        key = re.sub(r"_nchwc$", "", node_key(name))
        return next((layer for layer, ns in names.items()
                     if key in {node_key(n) for n in ns}), None)

    out = {}
    for node in graph.nodes:
        fused = node.record.fused
        layers = [owner(n) for n in fused]
        if len(fused) > 1 and layers[0] is not None:
            out |= {lay: (layers[0], re.sub(r"_nchwc$", "", node.name)) for lay in layers[1:]
                    if lay is not None and lay != layers[0]}
    return out


def write_quantization_report(q: QuantizationRecord, out: Path, log: IO[str],
                              asked: bool = False) -> dict:
    """quantization.json (the quantize pass's per-layer record) and quantization.png (per
    layer: SQNR against float and share of the measured latency, or of the MACs where it was
    not measured; float layers marked) in `out`; returns the manifest's summary. Without
    matplotlib the picture is left out, said on `log` only when a report was `asked` for
    (report.txt says it in any case)."""
    total = sum(x["macs"] for x in q.layers) or 1
    for x in q.layers:
        x["mac_share"] = round(x["macs"] / total, 4)
    measured = all(x.get("latency_share") is not None for x in q.layers)
    (out / "quantization.json").write_text(json.dumps(q.to_json(), indent=2) + "\n")
    summary = {"report": "quantization.json", "bits": q.bits,
               "output_sqnr_db": q.output_sqnr_db, "kept_float": q.kept_float,
               "quantized_mac_share": q.quantized_mac_share, "mac_shares": q.mac_shares,
               "int16_layers": q.int16_layers}
    if q.mixed_precision is not None:  # which layers stayed in higher precision and why
        m = q.mixed_precision
        summary["mixed_precision"] = {k: m[k] for k in ("method", "budget_db", "met",
                                                        "kept_float", "kept_int16")}
    # the outputs' error on the samples: of quantization alone, and of the whole compile
    # against the model as given where a pass before it (prune) changed the float model
    summary["output_rel_error"] = q.output_rel_error
    if q.end_to_end is not None:
        summary |= {"end_to_end_sqnr_db": q.end_to_end.sqnr_db,
                    "end_to_end_rel_error": q.end_to_end.rel_error}
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        if asked:
            print(f"quantization.png not drawn: {PLOTS_NEED}", file=log)
        summary["plot"] = None
        return summary
    rows = q.layers
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(max(6, 0.22 * len(rows)), 6))
    xs = range(len(rows))
    sq = [x["sqnr_db"] if x["sqnr_db"] is not None else 0 for x in rows]
    colors = ["tab:gray" if x["float"] else "tab:blue" for x in rows]
    top.bar(xs, sq, color=colors)
    top.set_ylabel("SQNR vs float (dB)")
    top.set_title(f"{q.bits}-bit weights, uint8 activations ({q.calibration}, "
                  f"{q.samples} samples)\noutput SQNR {q.output_sqnr_db} dB"
                  + (f", budget {q.budget_db} dB (dashed)" if q.budget_db else "")
                  + "; grey: kept float", fontsize=9)
    if q.budget_db:
        top.axhline(q.budget_db, color="tab:red", lw=1, ls="--")
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
                   weights: str, budget: float, log: IO[str] | None,
                   original: Graph | None = None, pairs: bool = False,
                   methods: Sequence[str] = ()) -> list:
    """`steps` with the quantize pass in front of fuse-qdq (which makes its integer ops);
    `original`: the model as given, to measure the outputs' error end to end against;
    `pairs`: 8-bit weights fitted to AVX2's exact vpmaddubsw pair sums; `methods`: any of
    QUANTIZE_METHODS."""
    from ..passes.manager import PipelineStep
    from ..passes.quantize import Quantize

    if quantize not in QUANTIZE_BITS:
        raise EdgecError(f"quantize={quantize!r}: choose {', '.join(QUANTIZE_BITS)}")
    unknown = set(methods) - set(QUANTIZE_METHODS)
    if unknown:
        raise EdgecError(f"quantize methods {', '.join(sorted(unknown))}: choose from "
                         f"{', '.join(QUANTIZE_METHODS)}")
    if "sensitivity" in methods and budget <= 0:
        raise EdgecError("quantize method sensitivity keeps layers float until the outputs "
                         "meet accuracy_budget: give it (--accuracy-budget DB; 25 to 35 dB "
                         "keeps most answers)")
    feeds, samples = (None, str(calib)) if isinstance(calib, str | Path) else (calib, "")
    q = Quantize(bits=QUANTIZE_BITS[quantize], calib=method, skip=",".join(skip),
                 samples=samples, weights=weights, budget=budget, feeds=feeds, log=log,
                 # (weights only, without samples, run the float kernels: no pairs to fit)
                 original=original,
                 pairs=pairs and QUANTIZE_BITS[quantize] == 8 and calib is not None,
                 equalize="equalize" in methods, bias_correct="bias-correct" in methods,
                 adaround="adaround" in methods, smooth=0.5 if "smooth" in methods else 0.0,
                 keep="sensitivity" if "sensitivity" in methods else "worst")
    at = next((i for i, s in enumerate(steps) if s.pass_.name == "fuse-qdq"), None)
    if at is None:
        raise EdgecError("quantize needs the pipeline's fuse-qdq pass to make integer ops")
    return [*steps[:at], PipelineStep(q), *steps[at:]]


def _prune_pattern(pattern: str | None, quantize: str | None, calib,
                   log: IO[str] | None) -> str:
    """The pattern asked for, else unstructured, or quantized to int8 on samples 16x4 (said
    on `log`): the int8 kernels' sparse form skips only whole dot4 groups that are all zero,
    which unstructured zeros seldom make. (Weights-only and int4 builds have no sparse
    integer kernel whatever the pattern: unstructured loses the least there.)"""
    if pattern is not None:
        return pattern
    if quantize != "int8" or calib is None:
        return "unstructured"
    print("prune: pattern 16x4, the default with int8 quantization: the sparse int8 kernels skip "
          "only groups of 16 output x 4 input channels at one tap that are all zero, which "
          "unstructured pruning seldom leaves (--prune-pattern unstructured prunes finer, "
          "on dense int8 kernels)", file=log or sys.stderr)
    return "16x4"


def _with_prune(steps: list, sparsity: float, pattern: str, exclude: Sequence[str],
                calib=None, log: IO[str] | None = None) -> list:
    """`steps` with the prune pass after batch-norm folding (the weights it prunes are the
    folded ones) and before quantization and fusion; data-aware given samples `calib`."""
    from ..passes.manager import PipelineStep
    from ..passes.prune import Prune

    feeds, samples = (None, str(calib)) if isinstance(calib, str | Path) else (calib, "")
    p = Prune(sparsity=sparsity, pattern=pattern, exclude=",".join(exclude), samples=samples,
              feeds=feeds, log=log)
    at = next((i for i, s in enumerate(steps) if s.pass_.name == "fuse-qdq"), None)
    if at is None:
        raise EdgecError("prune needs the standard pipeline (it goes before fuse-qdq)")
    return [*steps[:at], PipelineStep(p), *steps[at:]]


def compile(model, out_dir, options: CompileOptions | None = None, *,
            input_shapes: Mapping[str, Sequence[int]] | None = None, **changes) -> Artifact:
    """Compile `model` into `out_dir`: libNAME.a, NAME.h, sources and manifest.json. The
    options are `options` (a CompileOptions, compiler/options.py) with any of its fields given
    as keyword arguments over it (`target="x86-avx2"`, `quantize="int8"`, ...). With
    `threads` False the library has no thread pool and links without pthreads; `backend`
    "llvm" compiles the kernels with LLVM instead of the C compiler.

    `quantize` ("int8", "int4", "int3", "int2": the weights' bits; activations are uint8)
    quantizes the model after import (passes/quantize.py), calibrated on `calib`: {input
    name: array whose first axis indexes samples} or the path of such an .npz; without it,
    the weights only (data-free). `calib_method`: minmax, percentile, kl or admm;
    `quantize_skip`: node names kept in float; `quantize_weights`: minmax or admm (auto: ADMM
    below 8 bits); `accuracy_budget` (dB): the least SQNR of the outputs against the float
    model on the samples, the worst layers kept in float until it holds (with the method
    "sensitivity", the fewest layers by their measured effect on the outputs, at least 90% of
    the MACs quantized: passes/sensitivity.py); `quantize_methods`:
    any of "equalize" (cross-layer equalization first) and "bias-correct" (each quantized
    weight's mean shift taken off its bias), "adaround" (each weight rounded up or down for
    its layer's output on the samples, passes/adaround.py), "smooth" (SmoothQuant's
    activation smoothing of MatMul and Gemm inputs, alpha 0.5, passes/smooth.py) and
    "sensitivity", passes/quantize.py. A calibrated
    quantization writes quantization.json and quantization.png (per layer: scale, zero
    point, bits, SQNR, share of the MACs and of the latency measured on the samples where
    the host runs the target) beside the library.

    `prune` (a sparsity in (0, 1)) zeroes that share of each convolution's and matrix
    product's weights before quantization (passes/prune.py), in `prune_pattern`
    (unstructured, 4x1 and the other Rx1 blocks, 16x4 and the other Rx4 groups, N:M such as
    2:4, or channel: whole output channels removed and the shapes shrunk; by default
    unstructured, or with `quantize` int8 and `calib` 16x4, the groups the sparse int8
    kernels skip), but the
    layers named in `prune_exclude`: by magnitude, or given `calib`, data-aware for
    unstructured, Rx1 and N:M (the remaining weights updated to keep each layer's outputs on
    the samples; the pass says which runs); weights with enough zeros, pruned here or in
    training, run on the sparse kernels (passes/sparsify.py) with or without it. Pruned and
    quantized on samples, the outputs' error is measured both against the pruned float
    model (quantization alone) and against the model as given (end to end).

    `compress` stores the weights canonical-Huffman coded (codegen/huffman.py), decoded once
    by NAME_init or the first run into a static buffer of NAME_WEIGHTS_BUFFER_BYTES;
    manifest.json's "weights" gives their bytes as float32, as packed and as coded.

    `sanitize` builds the library with AddressSanitizer and UndefinedBehaviorSanitizer (C
    backend, x86 and c-generic targets): manifest.json's cflags and link_flags and the
    package files say so, an app links with -fsanitize=address,undefined, and the loader
    runs it as a program that reports a sanitizer's finding as an EdgecError.

    `cpu` names the CPU family whose measured costs the cost models use (targets/uarch.py;
    default: the build host's, where it runs the target). With `tune` (the default), where
    the build host runs the target, a layer whose sparse and dense kernels the cost model
    cannot tell apart is built alone both ways and timed once on this CPU, the answer cached
    (compiler/tune.py; report.txt and manifest.json's "sparse_timed" say which); None: on
    unless the environment sets EDGEC_TUNE=0 (the test suite does, so that its kernel
    choices do not depend on timings).

    `emit_kernels` writes NAME.kernels.txt: the program IR (the launches, loops and
    branches NAME_run makes) and every kernel it launches in the kernel IR, as text.

    `report` "html" writes report.html too (compiler/report_html.py): the graph before and
    after the passes, each kernel's latency on this host, the arena's memory timeline and,
    where they apply, each layer's quantization error and weight sparsity, in one page."""
    t0 = time.perf_counter()
    o = CompileOptions.of(options, changes)
    o = dataclasses.replace(o, name=o.name or default_name(model))
    graph = load_graph(model, input_shapes, o.name)
    source = Path(model).name if isinstance(model, str | Path) else ""
    return compile_graph(graph, out_dir, o, source=source, started=t0)


def compile_graph(graph: Graph, out_dir, options: CompileOptions | None = None, *,
                  source: str = "", started: float | None = None, **changes) -> Artifact:
    """Compile an IR graph (modified in place by the pipeline; a copy of it where layers were
    timed) into `out_dir`."""
    from ..passes import default_pipeline, parse_pipeline, run_pipeline

    opt = CompileOptions.of(options, changes)
    t0 = started if started is not None else time.perf_counter()
    tgt = get_target(opt.target, opt.cpu)
    if opt.sanitize:
        check_sanitizable(tgt, opt.backend)
    _check_gpu_options(opt, tgt)
    if tgt.gpu is not None:  # what the kernels may use: the architectures and precision
        tgt = dataclasses.replace(tgt, gpu=dataclasses.replace(
            tgt.gpu, precision=opt.precision, archs=tuple(opt.gpu_arch) or tgt.gpu.archs))
    name = opt.name or default_name(graph.name)
    missing = unsupported_kernels(graph.nodes)
    if missing:
        counts = graph.op_counts()
        raise UnsupportedOpError("no kernel yet for op(s): " +
                                 ", ".join(f"{o} (x{counts[o]})" for o in missing))
    hls = tgt.arch == "hls"
    # HLS computes in integers only; on a GPU, requantizing in float would round as nvcc
    # contracts it (into fused multiply-adds), not as the reference does: fixed point on both
    pipeline = ensure_pipeline_plans_memory(opt.pipeline or default_pipeline(
        tgt.lanes(DType.F32), tgt.registers, tgt.uarch,
        integer_only=hls or tgt.gpu is not None))
    steps = parse_pipeline(pipeline)
    if opt.prune:
        pattern = _prune_pattern(opt.prune_pattern, opt.quantize, opt.calib, opt.log)
        steps = _with_prune(steps, opt.prune, pattern, opt.prune_exclude, opt.calib, opt.log)
        pipeline = ",".join(map(str, steps))
    if opt.quantize is not None:
        steps = _with_quantize(steps, opt.quantize, opt.calib, opt.calib_method, opt.quantize_skip,
                               opt.quantize_weights, opt.accuracy_budget, opt.log,
                               graph.copy() if opt.prune and opt.calib is not None else None,
                               pairs=pair_sums(tgt), methods=opt.quantize_methods)
        pipeline = ",".join(map(str, steps))
    t_import = time.perf_counter()
    float32_bytes = _float32_bytes(graph)
    before = graph.copy() if opt.report else None  # for the page: the graph as imported
    run = functools.partial(run_pipeline, verify_each=opt.verify_each,
                            print_ir_after_all=opt.print_ir_after_all,
                            check_numerics=opt.check_numerics, timing=opt.timing,
                            out=opt.log or sys.stderr, needs={"memory_plan": "code generation"})
    tune = opt.tune
    if tune is None:
        tune = os.environ.get("EDGEC_TUNE", "1") != "0"
    if tune and runs_on_host(tgt) and any(s.pass_.name == "sparsify" for s in steps):
        graph, pass_report = run_tuned(graph, steps, tgt, opt.backend, run, opt.log or sys.stderr)
    else:
        pass_report = run(graph, steps)
    plan = graph.record.need("memory_plan", "code generation")
    t_passes = time.perf_counter()
    cuda = tgt.gpu is not None
    if cuda:
        src = generate_cuda(graph, plan, tgt, name, source, emit_kernels=opt.emit_kernels,
                            strategies=opt.strategy, graph_mode=opt.cuda_graph)
    elif hls:
        src = generate_hls(graph, plan, tgt, name, part=opt.fpga_part,
                           clock_mhz=opt.clock_mhz, strategies=opt.strategy,
                           target_fps=opt.target_fps)
    else:
        src = generate(graph, plan, tgt, name, source, threads=opt.threads,
                       backend=opt.backend, compress=opt.compress, sanitize=opt.sanitize,
                       emit_kernels=opt.emit_kernels, strategies=opt.strategy)

    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EdgecError(f"cannot create output folder {out}: {e.strerror}") from None
    for fname, content in src.files.items():
        path = out / fname
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if src.kernel_ir is not None:
        (out / f"{name}.kernels.txt").write_text(src.kernel_ir)
    t_codegen = time.perf_counter()
    archs = tuple(opt.gpu_arch) or (tgt.gpu.archs if cuda else ())
    if cuda:
        build_cuda(tgt, name, out, archs)
        links = cuda_link_flags()
    elif hls:
        links = []
        copy_hls_headers(out)
    else:
        objects = compile_objects(tgt, src.c_sources, out,
                                  SANITIZE_CFLAGS if opt.sanitize else ())
        archive(objects + src.objects, f"lib{name}.a", out, tgt)
        for o in objects:
            (out / o).unlink(missing_ok=True)
        links = link_flags(opt.threads, opt.sanitize)
    for fname, content in ({} if hls else package_files(name, opt.threads, source, opt.sanitize,
                                                        links if cuda else None)).items():
        (out / fname).write_text(content)
    t_build = time.perf_counter()

    io = lambda v: {"name": v.name, "shape": list(v.shape), "dtype": v.dtype.value,  # noqa: E731
                    "onnx_dtype": to_onnx(v.dtype)}
    manifest = {
        "name": name,
        "edgec_version": __version__,
        "source": source,
        "target": tgt.name,
        "cflags": [*tgt.cflags, *(SANITIZE_CFLAGS if opt.sanitize else ())],
        "vector_isa": tgt.isa,
        "backend": opt.backend,
        "threads": opt.threads and not hls,
        # built with AddressSanitizer and UndefinedBehaviorSanitizer (--sanitize)
        "sanitize": opt.sanitize,
        "link_flags": links,
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
        # per node: the kernel it got and how it computes (lowering/lower.py Strategy)
        "kernel_strategies": src.strategies,
        # NAME_dot_product_kernels() exists: int8 micro-kernels chosen at run time
        "dot_product_kernels": src.dot_product_kernels,
        "library": "" if hls else f"lib{name}.a",
        "header": f"{name}_hls.h" if hls else f"{name}.h",
        "sources": [f for f in src.files if not f.endswith(".bin")],
        # find_package(NAME) / pkg-config --libs NAME (package_files)
        "cmake_config": "" if hls else f"{name}Config.cmake",
        "pkg_config": "" if hls else f"{name}.pc",
    }
    if hls:  # an HLS project, not a library: its part, ports, processes and streams
        manifest["artifact"] = "hls-project"
        manifest["cflags"] = list(tgt.cflags)
        manifest["hls"] = src.hls
    if cuda:  # the GPU architectures the library carries code for, and its launches
        manifest["gpu_archs"] = list(archs)
        manifest["gpu_launches"] = src.gpu_launches
        manifest["cuda_graph"] = bool(opt.cuda_graph)
        manifest["precision"] = opt.precision
    timing = {"import": round(t_import - t0, 4), "passes": round(t_passes - t_import, 4),
              "codegen": round(t_codegen - t_passes, 4), "build": round(t_build - t_codegen, 4),
              "total": round(t_build - t0, 4)}
    if graph.record.pruning is not None:  # each layer's share of zeros
        manifest["pruning"] = graph.record.pruning.to_json()
    timed = timed_layers(graph)
    if timed:
        manifest["sparse_timed"] = timed
    if hls:  # g++ builds the C-simulation now, so that the project is known to compile
        manifest_file.write(out, manifest)
        build_runner(out)
        timing["build"] = round(time.perf_counter() - t_codegen, 4)
        timing["total"] = round(time.perf_counter() - t0, 4)
    q = graph.record.quantization
    if q is not None:
        # the timed copy of the library is loaded through its manifest
        manifest_file.write(out, manifest)
        measure_layer_latency(q, out, opt.calib, graph, tgt, opt.sanitize,
                              manifest["kernel_strategies"])
        manifest["quantization"] = write_quantization_report(q, out, opt.log or sys.stderr,
                                                             bool(opt.report))
    if opt.report:
        manifest["report_html"] = "report.html"
    manifest = manifest_file.write(out, manifest)
    (out / "report.txt").write_text(_report(manifest, pass_report, plan, timing))
    if opt.report:
        from .report_html import write_report

        write_report(out, before, graph, manifest, tgt)
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
    lines += [plan.report(), "",
              "kernels (node, op: the strategy, as --strategy takes it: how it is built):"]
    lines += [f"  {s['node']} {s['op']}: {Candidate.from_record(s['choice']).text()}"
              f"{' (forced)' if s['forced'] else ''}: {_strategy_text(s)}"
              for s in manifest["kernel_strategies"]]
    lines += _launch_lines(manifest.get("gpu_launches"), manifest.get("cuda_graph", False))
    if "hls" in manifest:
        lines += ["", *hls_report_lines(manifest["hls"]["estimate"])]
    choices = strategy_lines(manifest)
    lines += ["", "strategy candidates (* the chosen; costs from the roofline model, "
              "lowering/strategies.py):", *("  " + x for x in choices)] if choices else []
    lines += ["",
              "ops: " + ", ".join(f"{k} x{v}" for k, v in sorted(manifest["ops"].items())),
              _weights_line(manifest["weights"]),
              *([_pruning_line(manifest["pruning"])] if "pruning" in manifest else []),
              *_int8_sparse_hint(manifest),
              *timed_lines(manifest.get("sparse_timed", [])),
              *([_quantization_line(manifest["quantization"])]
                if "output_rel_error" in manifest.get("quantization", {}) else []),
              *([f"quantization.png not drawn: {PLOTS_NEED}"]
                if manifest.get("quantization", {}).get("plot", "") is None else []),
              "compile time: " + ", ".join(f"{k} {v:.3f}s"
                                           for k, v in timing.items())]
    return "\n".join(lines) + "\n"


def _launch_lines(launches: list[dict] | None, graph: bool = False) -> list[str]:
    """A CUDA library's launches per run: how many, and each kernel's blocks x threads."""
    if not launches:
        return []
    one = sum(x["blocks"] * x["threads"] == 1 for x in launches)
    replay = ", captured once as a CUDA graph and replayed: one graph launch a run" \
        if graph else ""
    return ["", f"GPU launches per run: {len(launches)} ({one} of a single thread{replay}; "
                "blocks x threads each):",
            *(f"  {x['kernel']}: {x['blocks']} x {x['threads']}" for x in launches)]


def _weights_line(w: dict) -> str:
    line = f"weights: {w['packed_bytes']} bytes ({w['float32_bytes']} as float32"
    if w["coded_bytes"] is not None:
        line += (f"; Huffman coded {w['coded_bytes']}, "
                 f"{w['float32_bytes'] / max(w['coded_bytes'], 1):.1f}x smaller than float32")
    return line + ")"


def _pruning_line(p: dict) -> str:
    layers = p["layers"]
    weights = sum(x["weights"] for x in layers)
    zeros = sum(x["zeros"] * x["weights"] for x in layers) / max(weights, 1)
    return (f"pruned ({p['pattern']}, sparsity {p['sparsity']}, scope {p['scope']}): "
            f"{len(layers)} layers, {zeros:.1%} of their {weights} weights zero")


def _quantization_line(q: dict) -> str:
    wide = q.get("int16_layers", [])
    line = (f"quantized ({q['bits']}-bit weights, uint8 activations"
            + (", int16 where W8A16" if wide else "") + f"): output SQNR "
            f"{q['output_sqnr_db']} dB, relative error {q['output_rel_error']:.3g} from "
            "quantization alone")
    mixed = q.get("mixed_precision", {})

    def why(k: str, rows: list[dict]) -> str:
        r = {x["node"]: x for x in rows}.get(k)
        return f"{k} (for {r['for']}: {r['sensitivity_db']} dB alone)" if r else k

    if q["kept_float"]:
        line += (f"; {q['quantized_mac_share']:.1%} of the MACs quantized, kept float: "
                 + ", ".join(why(k, mixed.get("kept_float", [])) for k in q["kept_float"]))
    if wide:
        sh = q["mac_shares"]
        line += ("; W8A16 (int16 activations): "
                 + ", ".join(why(k, mixed.get("kept_int16", [])) for k in wide)
                 + f"; MACs {sh['int8']:.1%} int8, {sh['int16']:.1%} int16, "
                 f"{sh['float']:.1%} float")
    if "end_to_end_rel_error" in q:
        line += (f"; end to end, against the model as given: SQNR {q['end_to_end_sqnr_db']} dB, "
                 f"relative error {q['end_to_end_rel_error']:.3g}")
    return line


def _int8_sparse_hint(manifest: dict) -> list[str]:
    """A line where pruned layers run on dense int8 kernels for want of dot4 groups."""
    p = manifest.get("pruning")
    int8 = [s["strategy"] for s in manifest["kernel_strategies"] if "int8" in s["strategy"]]
    if (not p or manifest.get("quantization", {}).get("bits") != 8 or not int8
            or any("sparse" in s for s in int8) or p["pattern"] == "channel"
            or p["pattern"].endswith("x4")):
        return []
    return [f"no sparse int8 kernel: the {len(int8)} int8 kernels run dense, as their sparse "
            "form skips only groups of 16 output x 4 input channels at one tap that are all "
            f"zero, which {p['pattern']} pruning seldom leaves; --prune-pattern 16x4 prunes "
            "in those groups"]


def strategy_lines(manifest: dict, nodes: Sequence[str] | None = None) -> list[str]:
    """Each node's candidates, their parameters, costs or reasons and the choice (`explain`):
    those of `nodes` (an EdgecError naming one without a kernel), else of every node that had
    more than one."""
    rows = manifest["kernel_strategies"]
    if nodes is not None:
        known = {s["node"] for s in rows}
        missing = [n for n in nodes if n not in known]
        if missing:
            raise EdgecError(unknown_nodes("--explain", missing, [s["node"] for s in rows]))
    out = []
    for s in rows:
        cands = [Candidate.from_record(c) for c in s["candidates"]]
        if (s["node"] in nodes) if nodes is not None else len(cands) > 1:
            out += explain(s["node"], s["op"], cands, Candidate.from_record(s["choice"]),
                           s["forced"])
    return out


def _strategy_text(s: dict) -> str:
    from ..lowering.lower import Strategy

    return Strategy(s["strategy"], s["kind"], s["lanes"], s["parallel"],
                    tuple(s["micro_kernels"])).describe()
