"""The `edgec` command line: compile, opt, run, inspect.

Every `EdgecError` becomes one line on stderr and exit status 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from ..errors import EdgecError
from .options import PRECISIONS


def _shape_arg(text: str) -> tuple[str, list[int]]:
    name, sep, dims = text.rpartition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, [int(d) for d in dims.split(",") if d.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--input-shape takes NAME=d0,d1,... (e.g. input=1,3,224,224), got '{text}'") from None


def _shapes(pairs) -> dict[str, list[int]] | None:
    return dict(pairs) if pairs else None


def _load_user_passes(a) -> None:
    from ..passes.manager import load_passes

    for path in a.load or ():
        load_passes(path)


def _strategy_arg(text: str) -> tuple[str, str]:
    node, eq, strategy = text.partition("=")
    if not eq or not node or not strategy:
        raise argparse.ArgumentTypeError(f"'{text}': expected NODE=KIND or NODE=KIND{{k=v,...}}")
    return node, strategy


def cmd_compile(a) -> None:
    from .driver import compile, strategy_lines
    from .options import CompileOptions

    _load_user_passes(a)

    options = CompileOptions(
        target=a.target, name=a.name, pipeline=a.pipeline, verify_each=a.verify_each,
        print_ir_after_all=a.print_ir_after_all, check_numerics=a.check_numerics,
        timing=a.timing, threads=not a.single_threaded, backend=a.backend,
        quantize=a.quantize, calib=a.calib, calib_method=a.calib_method,
        quantize_skip=a.quantize_skip or (), quantize_weights=a.quantize_weights,
        accuracy_budget=a.accuracy_budget, quantize_methods=a.quantize_method or (),
        prune=a.prune, prune_pattern=a.prune_pattern, prune_exclude=a.prune_exclude or (),
        compress=a.compress, sanitize=a.sanitize, report=a.report, cpu=a.cpu,
        tune=False if a.no_tune else None, emit_kernels=a.emit_kernels,
        strategy=dict(a.strategy or ()), gpu_arch=a.gpu_arch, cuda_graph=a.cuda_graph,
        precision=a.precision, fpga_part=a.fpga_part, clock_mhz=a.clock_mhz,
        target_fps=a.target_fps)
    art = compile(a.model, a.output, options, input_shapes=_shapes(a.input_shape))
    m = art.manifest
    if m.get("artifact") == "hls-project":
        h = m["hls"]
        print(f"wrote an HLS project in {art.out_dir}: {h['design']} (top {h['top']}, "
              f"{len(h['processes'])} processes, {len(h['streams'])} streams, ROM "
              f"{h['rom_bytes']} B), {h['tcl']}, {h['testbench']}; {art.timing['total']:.2f} s")
    else:
        print(f"wrote {art.library} and {art.header}: {m['kernels']} kernels, "
              f"workspace {m['workspace_bytes']} B, weights {m['weights_bytes']} B, "
              f"{art.timing['total']:.2f} s")
    if a.explain:
        print("\n".join(strategy_lines(m, a.explain)))


def cmd_opt(a) -> None:
    from ..ir import print_graph
    from ..passes import run_pipeline
    from .driver import load_graph

    _load_user_passes(a)
    graph = load_graph(a.model, _shapes(a.input_shape))
    run_pipeline(graph, a.pipeline, verify_each=a.verify_each,
                 print_ir_after_all=a.print_ir_after_all, check_numerics=a.check_numerics,
                 timing=a.timing, out=sys.stderr)
    print(print_graph(graph, elide=not a.full))
    if a.explain:
        print("\n".join(_explain_nodes(graph, a.explain, a.target)))
    if a.emit_onnx:
        import onnx

        from ..frontends.onnx_export import export_onnx

        try:
            onnx.save(export_onnx(graph), a.emit_onnx)
        except OSError as e:
            raise EdgecError(f"--emit-onnx {a.emit_onnx}: {e.strerror}") from None


def _explain_nodes(graph, names: list[str], target: str) -> list[str]:
    """`explain`'s lines for the nodes `names` of `graph`, each lowered for `target`."""
    from ..lowering.lower import lower_node
    from ..lowering.strategies import explain
    from ..targets.target import get_target

    index = {n.name: i for i, n in enumerate(graph.nodes)}
    missing = [n for n in names if n not in index]
    if missing:
        raise EdgecError(f"--explain {', '.join(missing)}: no such node after the pipeline; "
                         f"its nodes: {', '.join(index)}")
    t, out = get_target(target), []
    for name in names:
        node = graph.nodes[index[name]]
        s = lower_node(node, index[name], t).strategy
        out += explain(node.name, node.op, s.candidates, s.choice)
    return out


def _load_npz(path: str) -> dict[str, np.ndarray]:
    from ..passes.quantize import load_samples

    return load_samples(path, "inputs from")


def _emulator(text: str | None) -> list[str] | None:
    try:
        return None if text is None else shlex.split(text)
    except ValueError as e:
        raise EdgecError(f"--emulator takes a command such as 'qemu-x86_64 -cpu Haswell', "
                         f"got '{text}': {e}") from None


def cmd_run(a) -> None:
    from ..runtime.loader import load

    model = load(a.artifact, _emulator(a.emulator))
    feeds = _load_npz(a.inputs)
    outs = model.run(feeds)
    if a.outputs:
        np.savez(a.outputs, **outs)
    for k, v in outs.items():
        flat = v.reshape(-1)
        print(f"{k}: {v.dtype}{list(v.shape)} [{', '.join(str(x) for x in flat[:6])}"
              f"{', ...' if flat.size > 6 else ''}]")
    if a.check:
        from .check import check_outputs, output_errors, tolerances

        tols = tolerances(model.manifest, a.tolerance)
        errs = output_errors(outs, _onnxruntime(a.check, feeds))
        for k, e in errs.items():
            print(f"check {k} against onnxruntime: max abs error {e.abs:.3g}, "
                  f"relative {e.rel:.3g} (tolerance {tols[k].value:.3g})")
        check_outputs(errs, tols)
    elif a.tolerance is not None:
        raise EdgecError("--tolerance applies to --check MODEL.onnx; give that too")


def _onnxruntime(model_path: str, feeds) -> dict[str, np.ndarray]:
    try:
        import onnxruntime as ort
    except ImportError:
        raise EdgecError("--check needs onnxruntime: pip install 'edgec[check]'") from None
    try:
        sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, sess.run(None, feeds)))
    except Exception as e:  # onnxruntime raises its own exception types
        raise EdgecError(f"onnxruntime could not run {model_path}: {e}") from None


def cmd_bench(a) -> None:
    from .bench import bench

    if a.pairs < 1:
        raise EdgecError(f"--pairs must be 1 or more, not {a.pairs}")
    bench(a.artifact, a.vs, a.threads, a.pairs, a.tolerance, out=sys.stdout)


def cmd_inspect(a) -> None:
    from ..runtime.loader import read_manifest

    m = read_manifest(a.artifact)
    if a.json:
        print(json.dumps(m, indent=2))
        return
    print(f"{m['name']}: edgec {m['edgec_version']}, target {m['target']}, "
          f"from {m['source'] or '-'}")
    for kind in ("inputs", "outputs"):
        for io in m[kind]:
            print(f"  {kind[:-1]:6s} {io['name']}: {io['dtype']}{io['shape']}")
    mem = m["memory"]
    print(f"  workspace {m['workspace_bytes']} B (activations {mem['activations_bytes']} B, "
          f"liveness lower bound {mem['lower_bound_bytes']} B); weights {m['weights_bytes']} B")
    print(f"  pipeline {m['pipeline']}")
    print("  ops " + ", ".join(f"{k} x{v}" for k, v in sorted(m["ops"].items())))
    if m.get("artifact") == "hls-project":
        h, e = m["hls"], m["hls"]["estimate"]
        fit = {True: "fits", False: "does not fit"}.get(e.get("fits"), "fit unknown")
        print(f"  HLS project: {h['design']} (top {h['top']}, {len(h['processes'])} processes, "
              f"{len(h['streams'])} streams), {h['tcl']}, {h['testbench']}; part {h['part']} "
              f"at {h['clock_mhz']:g} MHz, estimated {e['model']['latency_ms']:.4g} ms, "
              f"{e['model']['fps']:.4g} frames/s, {fit}")
    else:
        lib = Path(a.artifact) / m["library"]
        print(f"  library {lib} ({lib.stat().st_size if lib.exists() else 0} B)")


TOLERANCE_HELP = ("largest relative error (max |error| / max |onnxruntime's output|) accepted; "
                  "default: twice the quantization's own error on its samples for a build "
                  "edgec quantized with --calib, else 1e-3 for float32 outputs (1e-2 float16 "
                  "and 8-bit, exact for other integers)")


def _add_pipeline_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--load", action="append", metavar="FILE.py",
                   help="import this Python file first, so that the passes it registers "
                        "(edgec.passes.register_pass) can be named in --pipeline (repeatable)")
    p.add_argument("--verify-each", action="store_true", help="verify the IR after every pass")
    p.add_argument("--print-ir-after-all", action="store_true",
                   help="print the IR after every pass")
    p.add_argument("--check-numerics", action="store_true",
                   help="run the interpreter after every pass; name the first pass that drifts")
    p.add_argument("--timing", action="store_true", help="print the time of every pass")
    p.add_argument("--input-shape", action="append", type=_shape_arg, metavar="NAME=d0,d1,...",
                   help="fix the shape of an input with symbolic dims (repeatable)")


def parser() -> argparse.ArgumentParser:
    from ..codegen.library import BACKENDS
    from ..targets.target import TARGETS
    from ..targets.uarch import MICROARCHS

    ap = argparse.ArgumentParser(prog="edgec",
                                 description="ONNX to self-contained static libraries")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compile", help="compile an ONNX model into libNAME.a + NAME.h")
    c.add_argument("model")
    c.add_argument("-o", "--output", required=True, help="output folder")
    c.add_argument("--target", default="x86", choices=sorted(TARGETS))
    c.add_argument("--backend", default="c", choices=BACKENDS,
                   help="what compiles the kernels: the C compiler or LLVM (llvmlite)")
    c.add_argument("--name", help="library and symbol prefix (default: the model file's stem)")
    c.add_argument("--cpu", choices=sorted(MICROARCHS),
                   help="the CPU family the library will run on, whose measured costs the "
                        "cost models use (default: this machine's, where it runs the target)")
    c.add_argument("--gpu-arch", type=lambda t: tuple(a.strip() for a in t.split(",") if a),
                   default=(), metavar="SM,...",
                   help="--target cuda: the GPU architectures to build for, such as "
                        "sm_80,sm_90 (default: sm_90, with its PTX)")
    c.add_argument("--cuda-graph", action="store_true",
                   help="--target cuda: capture a run's launches into a CUDA graph on the "
                        "first call and replay it (captured again when the device pointers "
                        "change): one launch per run instead of one per kernel")
    c.add_argument("--precision", default="fp32", choices=PRECISIONS,
                   help="--target cuda: the operands of float matrix products and "
                        "convolutions: fp32 on the CUDA cores, or fp16, bf16, tf32 on tensor "
                        "cores (sm_80 on) with float32 sums; the other ops stay float32")
    c.add_argument("--fpga-part", metavar="PART",
                   help="--target hls: the FPGA part, as Vitis names it (for example "
                        "xcu250-figd2104-2L-e)")
    c.add_argument("--clock-mhz", type=float, default=200.0, metavar="F",
                   help="--target hls: the design's clock in MHz (default 200)")
    c.add_argument("--target-fps", type=float, default=0.0, metavar="FPS",
                   help="--target hls: fold the matrix-vector units (PE x SIMD) to this many "
                        "frames per second (default: as fast as the rest of the design "
                        "allows, within the part)")
    c.add_argument("--emit-kernels", action="store_true",
                   help="also write OUT/NAME.kernels.txt: the program IR and every kernel in "
                        "edgec's kernel IR, as text")
    c.add_argument("--no-tune", action="store_true",
                   help="never time a layer's sparse and dense kernels on this machine where "
                        "the cost model cannot tell them apart: take the model's choice (so does "
                        "EDGEC_TUNE=0 in the environment)")
    c.add_argument("--pipeline", help="pass pipeline (default: edgec's standard one)")
    c.add_argument("--single-threaded", action="store_true",
                   help="no thread pool: the library needs no pthreads")
    c.add_argument("--quantize", choices=["int8", "int7", "int4", "int3", "int2"],
                   help="quantize: weights to these bits, activations to uint8 (calibrated "
                        "on --calib; without it, the weights only); on AVX2 targets int8's "
                        "weight pairs are fitted to vpmaddubsw's exact sums, int7 needs no "
                        "fitting")
    c.add_argument("--calib", metavar="SAMPLES.npz",
                   help="calibration samples: one array per input, first axis the samples")
    c.add_argument("--calib-method", default="minmax",
                   choices=["minmax", "percentile", "kl", "admm"],
                   help="activation ranges (minmax, percentile, kl) or ADMM weights")
    c.add_argument("--quantize-weights", default="auto", choices=["auto", "minmax", "admm"],
                   help="how weights are fitted (auto: ADMM below 8 bits)")
    c.add_argument("--accuracy-budget", type=float, default=0.0, metavar="DB",
                   help="least SQNR (dB) of the outputs against float on the samples: the "
                        "worst layers stay float until it holds")
    c.add_argument("--quantize-method", action="append",
                   choices=["equalize", "bias-correct", "adaround", "sensitivity", "smooth"],
                   help="equalize: cross-layer equalization of consecutive layers' weight "
                        "ranges first; bias-correct: each quantized weight's mean output "
                        "shift taken off its bias (Nagel et al. 2019); adaround: weights "
                        "rounded up or down for each layer's output on the samples (Nagel et "
                        "al. 2020); sensitivity: with --accuracy-budget, the fewest layers "
                        "float by their measured effect on the outputs, at least 90%% of the "
                        "MACs quantized; smooth: MatMul and Gemm inputs' channel ranges "
                        "evened out against the weights' (SmoothQuant, alpha 0.5; repeatable)")
    c.add_argument("--quantize-skip", action="append", metavar="NODE",
                   help="keep this node in float (repeatable)")
    c.add_argument("--prune", type=float, default=0.0, metavar="SPARSITY",
                   help="zero this share (0-1) of each conv's and gemm's weights: by magnitude, "
                        "or with --calib data-aware for unstructured, Rx1 and N:M patterns "
                        "(the other weights updated to keep each layer's outputs on the "
                        "samples; it says which runs); layers with enough zeros run on "
                        "sparse kernels")
    c.add_argument("--prune-pattern", metavar="PATTERN",
                   help="unstructured (the default but with --quantize int8 --calib), 4x1 "
                        "(blocks of 4 output channels; also 2x1, 8x1, 16x1), 16x4 (16 output "
                        "channels x 4 input channels at one tap: the int8 kernels' dot4 "
                        "groups, which their sparse kernels skip; the default with --quantize "
                        "int8 --calib; also 8x4, 4x4), N:M such as 2:4, or channel (whole "
                        "output channels removed, their readers rewired: the shapes shrink)")
    c.add_argument("--prune-exclude", action="append", metavar="NODE",
                   help="leave this node's weights unpruned (repeatable)")
    c.add_argument("--compress", action="store_true",
                   help="store the weights canonical-Huffman coded; NAME_init (or the first "
                        "run) decodes them into a static buffer (NAME_WEIGHTS_BUFFER_BYTES)")
    c.add_argument("--sanitize", action="store_true",
                   help="build with AddressSanitizer and UndefinedBehaviorSanitizer, to check "
                        "the model's code (x86 and c-generic, --backend c): apps link with "
                        "-fsanitize=address,undefined; `edgec run` runs it as a program and "
                        "stops at the first finding")
    c.add_argument("--report", choices=["html"],
                   help="also write report.html: the graph before and after the passes, "
                        "each kernel's latency on this host, the arena over time and each "
                        "layer's quantization error and sparsity, as one self-contained "
                        "page")
    c.add_argument("--strategy", action="append", type=_strategy_arg,
                   metavar="NODE=KIND{k=v,...}",
                   help="build this node's kernel by this strategy (one of the candidates "
                        "--explain lists, with any of its settable parameters), not the "
                        "chooser's; one that does not apply is an error saying why "
                        "(repeatable)")
    c.add_argument("--explain", action="append", metavar="NODE",
                   help="print this node's strategy candidates: their parameters, modelled "
                        "costs or why they do not apply, and the choice (repeatable; "
                        "report.txt lists every node that had more than one)")
    _add_pipeline_flags(c)
    c.set_defaults(fn=cmd_compile)
    o = sub.add_parser("opt", help="run a pass pipeline and print the IR")
    o.add_argument("model", help="MODEL.onnx or FILE.ir")
    o.add_argument("--pipeline", default="fold-constants,dce")
    o.add_argument("--full", action="store_true", help="print weights in full (parseable)")
    o.add_argument("--emit-onnx", metavar="FILE.onnx",
                   help="also write the optimized graph as ONNX (to open in Netron): ONNX's "
                        "ops in the standard domain, edgec's fused and packed ops in 'edgec'")
    o.add_argument("--explain", action="append", metavar="NODE",
                   help="print this node's strategy candidates for --target after the "
                        "pipeline given here (by default only fold-constants,dce, so not "
                        "the fused and re-laid-out nodes a compile builds: edgec compile "
                        "--explain shows those): their parameters, modelled costs or why "
                        "they do not apply, and the choice (repeatable)")
    o.add_argument("--target", default="x86", choices=sorted(TARGETS),
                   help="the target --explain lowers for")
    _add_pipeline_flags(o)
    o.set_defaults(fn=cmd_opt)
    r = sub.add_parser("run", help="run a compiled artifact on inputs from an .npz file")
    r.add_argument("artifact")
    r.add_argument("--inputs", required=True, help=".npz with one array per input name")
    r.add_argument("--outputs", help="write the outputs to this .npz")
    r.add_argument("--check", metavar="MODEL.onnx",
                   help="compare with onnxruntime on the model; exit 1 past --tolerance")
    r.add_argument("--tolerance", type=float, metavar="REL", help=TOLERANCE_HELP)
    r.add_argument("--emulator", metavar="CMD",
                   help='run as a program under this command, e.g. "qemu-x86_64 -cpu Haswell" '
                        '("" runs it as a program directly); a cross target (arm64, armv7) '
                        'runs under its qemu by default')
    r.set_defaults(fn=cmd_run)
    b = sub.add_parser("bench", help="time a compiled artifact (and onnxruntime on the model)")
    b.add_argument("artifact")
    b.add_argument("--vs", metavar="MODEL.onnx",
                   help="also time onnxruntime on this model, same inputs, calls alternating; "
                        "the outputs are checked against it first")
    b.add_argument("--threads", type=int, action="append", metavar="N",
                   help="thread count (repeatable; default: 1 and this machine's CPUs)")
    b.add_argument("--pairs", type=int, default=50, help="timed rounds (default 50)")
    b.add_argument("--tolerance", type=float, metavar="REL", help=TOLERANCE_HELP)
    b.set_defaults(fn=cmd_bench)
    i = sub.add_parser("inspect", help="describe a compiled artifact")
    i.add_argument("artifact")
    i.add_argument("--json", action="store_true", help="print the manifest")
    i.set_defaults(fn=cmd_inspect)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.fn(args)
    except EdgecError as e:
        msg = " | ".join(line.strip() for line in str(e).splitlines() if line.strip())
        print(f"edgec: error: {msg}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
