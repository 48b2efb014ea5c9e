"""Sparse against dense: pruned models through edgec's sparse kernels, through edgec's dense
kernels (the same pruned weights, the `sparsify` pass left out) and through onnxruntime (the
peer that does not exploit sparsity), interleaved in one run (the protocol of BENCHMARKS.md); with
`--no-reorder`, also the sparse build without the `reorder` pass (output channels left in the
model's order) beside, to time what reordering gains at each thread count; with
`--no-padding`, the sparse build whose convolutions may not pad their channels to the block
height (`sparsify{pad_channels=0}`), for the model yolo_head (255 channels); with
`--no-columns`, the sparse build whose convolutions keep to blocks of one input channel
(`sparsify{cols=1}`), to time what 1x4 blocks gain on weights pruned in them; with
`--no-nm`, the sparse build that stores N:M-pruned weights as CSR (`sparsify{nm=0}`).

--blocks N (with --no-reorder, at 2 threads or more): calls that alternate between libraries
at 2 threads measure their thread pools (the one just called spins on the second core while
the next runs; after a pause, each call wakes its pool from sleep: on this host every sub-ms
layer ran slower at 2 threads than at 1 so). So the sparse build, a copy of it and the build
without reordering are also timed in blocks: each alone for the rounds back to back, the
builds alternating block by block, N blocks each; per run, the sparse kernels' wall time
and all kernels' (edgec.compiler.profile.instrument). The copy's ratio shows the noise.

Per model, sparsity and pattern: the model's conv and gemm weights are pruned by magnitude
(edgec.passes.prune.prune_weight, on the ONNX initializers, so that all three run the same
weights), the outputs of the three are checked against each other (exit 1 if edgec departs
from onnxruntime), then per thread count: warm-up, then sparse, dense, onnxruntime, ... for N
rounds (onnxruntime without spinning threads; with threads, each call after a 2 ms pause);
medians and the median per-round ratio dense / sparse (the speed-up). "sparse layers"
counts the convolutions and matrix products that took a sparse kernel (the cost model's
choice, in report.txt).

    python benchmarks/bench_sparse.py [--sparsity 0.7,0.9]
        [--models resnet18,mlp,yolo_head,seq512,qkv_skewed,ocr_rec,ocr_head,ocr_qkv,ocr_ctc]
        [--patterns unstructured,4x1] [--threads 1,2] [--rounds 20] [--target x86]
        [--no-reorder] [--no-padding] [--no-columns] [--no-nm] [--int8]
        [--rapidocr-wheel WHEEL]

--int8: the pruned model quantized as onnxruntime users do it (edgec.zoo.quantize_qdq: QDQ,
per-channel int8 weights, uint8 activations); sparse = edgec's int8 kernels choosing the
sparse dot4-group tile where few groups hold a weight, dense = the dense tile on the same
weights (pack-weights{sparse=0}); onnxruntime runs the QDQ model. Prune in the int8 tile's
groups: --patterns 16x4 (AVX-512; 8x4 for AVX2).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import onnx
import onnx.utils
import onnxruntime as ort
from onnx import numpy_helper

import edgec
from edgec import zoo
from edgec.compiler.profile import instrument, node_key
from edgec.passes import default_pipeline
from edgec.passes.prune import prune_weight
from edgec.targets.target import get_target


def pruned(model: onnx.ModelProto, sparsity: float, pattern: str) -> onnx.ModelProto:
    """`model` with its Conv (group 1), Gemm and MatMul (constant 2-D B) weights pruned."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    weights = {}
    consts = {i.name: len(i.dims) for i in m.graph.initializer}
    for n in m.graph.node:
        group = next((a.i for a in n.attribute if a.name == "group"), 1)
        trans_b = next((a.i for a in n.attribute if a.name == "transB"), 0)
        if (n.op_type == "Conv" and group == 1) or (n.op_type == "Gemm" and trans_b):
            weights[n.input[1]] = n.op_type
        elif n.op_type in ("MatMul", "Gemm") and consts.get(n.input[1]) == 2:
            weights[n.input[1]] = "MatMul"  # B [K, N]
    for init in m.graph.initializer:
        if init.name in weights:
            w = numpy_helper.to_array(init)
            if weights[init.name] == "MatMul":  # B [K, N]: outputs are its columns
                wo = prune_weight(np.ascontiguousarray(w.T), sparsity, pattern).T
            else:
                taps = int(np.prod(w.shape[2:])) if w.ndim == 4 else 1
                wo = prune_weight(w.reshape(w.shape[0], -1), sparsity, pattern,
                                  taps).reshape(w.shape)
            init.CopyFrom(numpy_helper.from_array(wo.astype(np.float32), init.name))
    return m


def yolo_head(opset: int = 13, seed: int = 0) -> onnx.ModelProto:
    """A YOLO detection head at stride 16 of a 640-pixel image: 1x1 convolution 256 -> 255
    channels (3 anchors x (80 classes + 5)) over 40 x 40, batch 1: the channel count no block
    height divides (the sparse kernel pads it to the block, `--no-padding` times it without)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((255, 256, 1, 1)) * np.sqrt(2 / 256)).astype(np.float32)
    b = (rng.standard_normal(255) * 0.1).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Conv", ["input", "w", "b"], ["output"], kernel_shape=[1, 1])],
        "yolo_head", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 256, 40, 40])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 255, 40, 40])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def ocr_rec(wheel: str | None = None) -> onnx.ModelProto:
    """PaddleOCR's PP-OCRv4 text-line recognizer as the rapidocr-onnxruntime wheel ships it
    (trained by PaddleOCR: real weights, whose pruned channels are not spread evenly), its
    input fixed to rapidocr's [1, 3, 48, 320]. The wheel: `wheel`, or `pip download`ed."""
    from edgec.testing.textlines import RECOGNIZER, fetch_wheel, load_model

    if wheel is None:
        folder = Path(tempfile.mkdtemp())
        wheel = fetch_wheel("rapidocr-onnxruntime", folder)
    m = load_model(wheel, RECOGNIZER)
    for dim, v in zip(m.graph.input[0].type.tensor_type.shape.dim, (1, 3, 48, 320)):
        dim.dim_value = v
    # its weights come as Constant nodes: as initializers, pruned() finds them
    consts = [n for n in m.graph.node if n.op_type == "Constant" and
              [a.name for a in n.attribute] == ["value"]]
    for n in consts:
        t = onnx.TensorProto()
        t.CopyFrom(n.attribute[0].t)
        t.name = n.output[0]
        m.graph.initializer.append(t)
        m.graph.node.remove(n)
    return m


def ocr_head(wheel: str | None = None) -> onnx.ModelProto:
    """The sequence head of ocr_rec: from its backbone's output [1, 480, 1, 40] (40 time
    steps) through the neck (1x1 and 1 x 3 convolutions, the SVTR block: a fused
    query-key-value projection, attention, the feed-forward layers) to the CTC classifier's
    6625 characters: the part of the trained recognizer where products over the 40 steps do
    the work."""
    full = ocr_rec(wheel)
    # its reshapes compute their shapes from the input's: onnxruntime's constant folding
    # (basic level, standard ops only) makes them constants, so the head stands alone
    with tempfile.TemporaryDirectory() as tmp:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        opts.optimized_model_filepath = str(Path(tmp) / "folded.onnx")
        ort.InferenceSession(full.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        full = onnx.shape_inference.infer_shapes(onnx.load(opts.optimized_model_filepath))
    return onnx.utils.Extractor(full).extract_model(["p2o.AveragePool.1"],
                                                    [full.graph.output[0].name])


def ocr_layer(weight: str, wheel: str | None = None) -> onnx.ModelProto:
    """One trained matrix product of ocr_rec over its 40 time steps, with its bias:
    x [40, K] @ W + b. `weight`: linear_77 (the SVTR block's fused query-key-value
    projection, 120 -> 360) or linear_85 (the CTC classifier, 120 -> 6625 characters)."""
    full = {i.name: i for i in ocr_rec(wheel).graph.initializer}
    w, b = full[f"{weight}.w_0"], full[f"{weight}.b_0"]
    k, n = w.dims
    g = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", w.name], ["xw"]),
         onnx.helper.make_node("Add", ["xw", b.name], ["y"])], weight,
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [40, k])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [40, n])], [w, b])
    return onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 13)],
                                  ir_version=10)


def seq512(seed: int = 0) -> onnx.ModelProto:
    """A sequence's projection: x [40, 512] @ W [512, 512] + b (random weights), the shape of
    a small transformer's layer over 40 tokens."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array((rng.standard_normal((512, 512)) / 22.6).astype(np.float32),
                                "w")
    b = numpy_helper.from_array((rng.standard_normal(512) * 0.1).astype(np.float32), "b")
    g = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["xw"]),
         onnx.helper.make_node("Add", ["xw", "b"], ["y"])], "seq512",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [40, 512])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [40, 512])], [w, b])
    return onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 13)],
                                  ir_version=10)


def qkv_skewed(seed: int = 0) -> onnx.ModelProto:
    """A fused projection x [40, 512] @ W [512, 3 x 512] + b whose thirds' weights differ in
    scale (1, 1.5, 3: as a trained projection's query, key and value parts may), so that
    pruning the layer by magnitude leaves its thirds unevenly dense (random weights)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((512, 1536)) / 22.6 * np.repeat([1.0, 1.5, 3.0], 512)
    g = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["xw"]),
         onnx.helper.make_node("Add", ["xw", "b"], ["y"])], "qkv_skewed",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [40, 512])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [40, 1536])],
        [numpy_helper.from_array(w.astype(np.float32), "w"),
         numpy_helper.from_array((rng.standard_normal(1536) * 0.1).astype(np.float32), "b")])
    return onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 13)],
                                  ir_version=10)


MODELS = {**zoo.MODELS, "yolo_head": yolo_head, "seq512": seq512, "qkv_skewed": qkv_skewed,
          "ocr_rec": ocr_rec, "ocr_head": ocr_head,
          "ocr_qkv": partial(ocr_layer, "linear_77"), "ocr_ctc": partial(ocr_layer, "linear_85")}


def worst_imbalance(out: Path) -> str:
    """The largest imbalance before -> after reordering among the sparse kernels of the
    artifact at `out`, read from its report."""
    pairs = [(float(a), float(b)) for a, b in re.findall(
        r"imbalance ([0-9.]+) -> ([0-9.]+)", (out / "report.txt").read_text())]
    if not pairs:
        return "-"
    a, b = max(pairs)
    return f"{a:.2f} -> {b:.2f}"


def blocked_ab(builds: dict[str, Path], feeds: dict, threads: int, runs: int,
               blocks: int) -> dict[str, tuple[float, float]]:
    """{build: (median us per run of its sparse kernels, of all its kernels)}: each
    build alone for `runs` back-to-back runs a block (its thread pool warm, no other
    library's pool spinning on the second core, as when calls alternate between libraries),
    the builds alternating block by block, `blocks` blocks each; the kernels timed by
    edgec.compiler.profile.instrument (wall time with threads)."""
    libs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, out in builds.items():
            timed = Path(tmp) / key
            shutil.copytree(out, timed)
            names = instrument(timed, threads)
            manifest = json.loads((timed / "manifest.json").read_text())
            sparse = {node_key(k["node"]) for k in manifest["kernel_strategies"]
                      if k["op"] in ("SparseConv", "SparseMatMul")}
            mine = [i for i, n in enumerate(names)
                    if node_key(re.sub(r"^k\d+_", "", n)) in sparse]
            lib = edgec.load(timed)
            lib.set_num_threads(threads)
            ns = (ctypes.c_double * len(names)).in_dll(lib._lib, "edgec_profile_ns")
            libs[key] = (lib, mine, ns)
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in libs}
    for b in range(blocks):
        for key in list(libs)[::1 if b % 2 == 0 else -1]:
            lib, mine, ns = libs[key]
            for _ in range(10):
                lib.run(feeds)
            ctypes.memset(ns, 0, ctypes.sizeof(ns))
            for _ in range(runs):
                lib.run(feeds)
            got[key].append((sum(ns[i] for i in mine) / runs / 1e3, sum(ns) / runs / 1e3))
    return {k: (statistics.median(a for a, _ in v), statistics.median(t for _, t in v))
            for k, v in got.items()}


def interleaved(runs: dict, rounds: int, pause: float) -> dict[str, list[float]]:
    """ms per call of each of `runs`, called in turn `rounds` times after 3 warm-up rounds,
    each after `pause` seconds (with threads: the previous one's spinning pool threads, edgec's
    spin about 1 ms, go to sleep instead of holding a core the next one's threads need). The
    order turns by one each round, so that each run is called first as often as the others:
    on the Zen 3 host the first call of a round ran 6-10% slower, which made two identical
    libraries 0.90-0.94x of each other when the same one always went first."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    names = list(runs)
    for r in range(rounds + 3):
        turn = r % len(names)
        for k in names[turn:] + names[:turn]:
            f = runs[k]
            if pause:
                time.sleep(pause)
            t0 = time.perf_counter()
            f()
            if r >= 3:
                times[k].append((time.perf_counter() - t0) * 1e3)
    return times


# the sparse builds each flag adds: (column, sparsify option, flag)
VARIANTS = (("no padding", "pad_channels=0", "no_padding"),
            ("one column", "cols=1", "no_columns"),
            ("no N:M", "nm=0", "no_nm"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,mlp")
    ap.add_argument("--sparsity", default="0.7,0.9")
    ap.add_argument("--patterns", default="unstructured,4x1")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--target", default="x86")
    ap.add_argument("--no-reorder", action="store_true",
                    help="time the sparse build without the reorder pass too")
    for _, option, flag in VARIANTS:
        ap.add_argument("--" + flag.replace("_", "-"), action="store_true",
                        help=f"time the sparse build with sparsify{{{option}}} too")
    ap.add_argument("--int8", action="store_true", help="quantize the pruned models to int8")
    ap.add_argument("--blocks", type=int, default=0,
                    help="with --no-reorder and more than one thread: also time the sparse "
                         "build, a copy of it and the one without reordering in N blocks "
                         "each (blocked_ab), their sparse kernels and whole runs")
    ap.add_argument("--rapidocr-wheel", help="the rapidocr-onnxruntime wheel (ocr_rec); "
                    "default: pip download it")
    args = ap.parse_args(argv)
    tgt = get_target(args.target)
    dense_pipeline = default_pipeline(tgt.lanes(edgec.ir.DType.F32), tgt.registers)
    variants = {key: re.sub(r"sparsify\{([^}]*)\}", r"sparsify{\1," + option + "}",
                            dense_pipeline)
                for key, option, flag in VARIANTS if getattr(args, flag)}
    plain_pipeline = re.sub(r"reorder(\{[^}]*\})?,", "", dense_pipeline)
    dense_pipeline = re.sub(r"sparsify(\{[^}]*\})?,", "", plain_pipeline)
    if args.int8:  # the dense int8 tile everywhere
        dense_pipeline = re.sub(r"pack-weights\{([^}]*)\}", r"pack-weights{\1,sparse=0}",
                                dense_pipeline)
    print(f"target {args.target}, onnxruntime {ort.__version__}, {args.rounds} rounds")
    extra = " edgec sparse, no reorder ms | reorder gain | imbalance |" if args.no_reorder else ""
    extra += "".join(f" edgec sparse, {key} ms | {key} gain |" for key in variants)
    print("| model | sparsity | pattern | threads | sparse layers | edgec sparse ms |" + extra +
          " edgec dense ms | speed-up | onnxruntime ms | sparse / onnxruntime |")
    print("|---" * (10 + 3 * args.no_reorder + 2 * len(variants)) + "|")
    rng = np.random.default_rng(0)
    blocked = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            base = MODELS[name](args.rapidocr_wheel) if name.startswith("ocr_") else \
                MODELS[name]()
            for sp in (float(s) for s in args.sparsity.split(",")):
                for pattern in args.patterns.split(","):
                    m = pruned(base, sp, pattern)
                    d = Path(tmp) / f"{name}_{sp}_{pattern}"
                    if args.int8:
                        d.mkdir(parents=True)
                        m = onnx.load(zoo.quantize_qdq(m, d))
                    sparse_art = edgec.compile(m, d / "sparse", target=args.target, name="m")
                    dense_art = edgec.compile(m, d / "dense", target=args.target, name="m",
                                              pipeline=dense_pipeline)
                    layers = sum("sparse" in k["strategy"]
                                 for k in sparse_art.manifest["kernel_strategies"])
                    sparse, dense = edgec.load(sparse_art.out_dir), edgec.load(dense_art.out_dir)
                    libs = {"s": sparse, "d": dense}
                    if args.no_reorder:
                        libs["p"] = edgec.load(edgec.compile(
                            m, d / "plain", target=args.target, name="m",
                            pipeline=plain_pipeline).out_dir)
                    for key, pipe in variants.items():
                        libs[key] = edgec.load(edgec.compile(
                            m, d / key.replace(" ", "_"), target=args.target, name="m",
                            pipeline=pipe).out_dir)
                    inp = m.graph.input[0]
                    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
                    feeds = {inp.name: rng.standard_normal(shape).astype(np.float32)}
                    for t in (int(x) for x in args.threads.split(",")):
                        opts = ort.SessionOptions()
                        opts.intra_op_num_threads = t
                        # its threads would spin after each run on a core edgec needs next
                        # (benchmarks/bench_models.py ort_session)
                        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                        sess = ort.InferenceSession(m.SerializeToString(), opts,
                                                    providers=["CPUExecutionProvider"])
                        for lib in libs.values():
                            lib.set_num_threads(t)
                        want = sess.run(None, feeds)[0]
                        for lib in libs.values():
                            got = next(iter(lib.run(feeds).values()))
                            err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
                            if err > (0.05 if args.int8 else 1e-4):  # int8: a few steps
                                print(f"{name}: edgec departs from onnxruntime ({err:.2g})",
                                      file=sys.stderr)
                                return 1
                        runs = {k: partial(lib.run, feeds) for k, lib in libs.items()}
                        runs["o"] = partial(sess.run, None, feeds)
                        times = interleaved(runs, args.rounds, 0.002 if t > 1 else 0.0)
                        s, dn, o = (statistics.median(times[k]) for k in "sdo")
                        up = statistics.median(b / a for a, b in zip(times["s"], times["d"]))
                        vs = statistics.median(a / b for a, b in zip(times["s"], times["o"]))
                        cols = ""
                        if args.no_reorder:
                            gain = statistics.median(b / a for a, b in
                                                     zip(times["s"], times["p"]))
                            cols = (f" {statistics.median(times['p']):.3f} | {gain:.3f}x | "
                                    f"{worst_imbalance(sparse_art.out_dir)} |")
                        for key in variants:
                            gain = statistics.median(b / a for a, b in
                                                     zip(times["s"], times[key]))
                            cols += f" {statistics.median(times[key]):.3f} | {gain:.3f}x |"
                        print(f"| {name} | {sp:.0%} | {pattern} | {t} | {layers} | {s:.3f} |"
                              f"{cols} {dn:.3f} | **{up:.2f}x** | {o:.3f} | {vs:.2f} |",
                              flush=True)
                        if args.blocks and args.no_reorder and t > 1:
                            copy = edgec.compile(m, d / "copy", target=args.target, name="m")
                            ab = blocked_ab({"sparse": sparse_art.out_dir,
                                             "copy": copy.out_dir, "no reorder": d / "plain"},
                                            feeds, t, max(args.rounds, 30), args.blocks)
                            blocked.append((name, t, ab))
    for name, t, ab in blocked:
        s_k, s_all = ab["sparse"]
        print(f"\nblocks, {name}, {t} threads (us per run: sparse kernels, all kernels): " +
              ", ".join(f"{k} {a:.1f} / {b:.1f}" for k, (a, b) in ab.items()) +
              f"; reorder gain {ab['no reorder'][0] / s_k:.3f}x / "
              f"{ab['no reorder'][1] / s_all:.3f}x, copy {ab['copy'][0] / s_k:.3f}x / "
              f"{ab['copy'][1] / s_all:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
