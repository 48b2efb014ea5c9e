"""QDQ models end to end: a small CNN built with onnx.helper, quantized by onnxruntime's
`quantize_static` (QDQ format, per-channel int8 weights, uint8 activations calibrated on a few
random inputs), imported, rewritten by `fuse-qdq` into integer ops, compiled to C and compared
with onnxruntime.

Tolerance: one quantization step of each output (|got - want| <= scale). The integer graph
computes each QLinear op's int32 accumulator exactly and requantizes once, while a QDQ model
defines its result through float ops between Q and DQ; the two round identically except when
the float sum lands within float32 error of a rounding tie, where they may differ by one step,
and such a step can move a later layer's rounding by at most as much again in the rare case
it happens. The compiled C is checked bit-exactly against edgec's interpreter of the same
fused graph. onnxruntime is run two ways: with basic graph optimizations it executes the QDQ
model as written (float ops, the model's defining semantics); with all optimizations it fuses
the same integer ops as edgec and runs MLAS kernels, which on x86 without VNNI add u8 x s8
products pairwise in saturating int16 (pmaddubsw) and so are exact only for 7-bit weights:
that comparison uses the model quantized with `reduce_range=True`, as onnxruntime advises for
such machines.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from harness import check_against_interpreter, runs_here
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

import edgec
from edgec.frontends.onnx import import_onnx
from edgec.ir import DType, Graph, TensorType, interpret, parse, print_graph, verify
from edgec.passes import DEFAULT_PIPELINE, apply_patterns, default_pipeline, run_pipeline
from edgec.passes.fuse_qdq import FUSE_QDQ_PATTERNS
from edgec.runtime.loader import load
from edgec.targets.target import get_target

SHAPE = (1, 3, 16, 16)
FLOAT_OPS = {"Conv", "MatMul", "Gemm", "Add", "Relu"}


def cnn() -> onnx.ModelProto:
    """Conv-Relu, a strided depthwise Conv-Relu, a pointwise Conv, a MaxPool branch with its own
    Conv, a residual Add-Relu, global pooling, and two heads (Gemm with transB, MatMul)."""
    rng = np.random.default_rng(0)

    def w(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                       name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8,
                         strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w4"], ["c4"]),
        helper.make_node("Add", ["c3", "c4"], ["a"]),
        helper.make_node("Relu", ["a"], ["ra"]),
        helper.make_node("GlobalAveragePool", ["ra"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["logits"], transB=1),
        helper.make_node("MatMul", ["f", "wm"], ["embed"]),
    ]
    inits = [w("w1", 8, 3, 3, 3), w("b1", 8, scale=0.1), w("w2", 8, 1, 3, 3),
             w("b2", 8, scale=0.1), w("w3", 16, 8, 1, 1), w("b3", 16, scale=0.1),
             w("w4", 16, 8, 1, 1), w("wg", 10, 16), w("bg", 10, scale=0.1), w("wm", 16, 4)]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("embed", TensorProto.FLOAT, [1, 4])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


class RandomImages(CalibrationDataReader):
    def __init__(self, n: int = 4, seed: int = 1):
        rng = np.random.default_rng(seed)
        self._it = iter([{"x": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self._it, None)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """{"full": 8-bit weights, "reduced": 7-bit weights (reduce_range)} QDQ model paths,
    "qoperator": the reduced one in onnxruntime's QOperator format, and "int4w": the full
    model with its weight codes rounded to 4 bits (int8 codes in [-8, 7], scales x 16)."""
    d = tmp_path_factory.mktemp("qdq")
    onnx.save(cnn(), d / "float.onnx")
    out = {}
    for name, reduce_range in (("full", False), ("reduced", True)):
        out[name] = d / f"{name}.onnx"
        quantize_static(str(d / "float.onnx"), str(out[name]), RandomImages(),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        reduce_range=reduce_range)
    out["int4w"] = d / "int4w.onnx"
    onnx.save(four_bit_weights(onnx.load(out["full"])), out["int4w"])
    out["int8"] = d / "int8.onnx"  # int8 activations: blocked as uint8 + 128
    quantize_static(str(d / "float.onnx"), str(out["int8"]), RandomImages(),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    # 16-bit activations, 8-bit weights (W8A16; onnxruntime moves the model to opset 21)
    for name, t in (("int16", QuantType.QInt16), ("uint16", QuantType.QUInt16)):
        out[name] = d / f"{name}.onnx"
        quantize_static(str(d / "float.onnx"), str(out[name]), RandomImages(),
                        quant_format=QuantFormat.QDQ, per_channel=True, activation_type=t,
                        weight_type=QuantType.QInt8)
    # QLinearConv and friends in the model itself: onnxruntime runs those with its integer
    # kernels at any optimization level, so 7-bit weights keep it exact on AVX2 (no VNNI)
    out["qoperator"] = d / "qoperator.onnx"
    quantize_static(str(d / "float.onnx"), str(out["qoperator"]), RandomImages(),
                    quant_format=QuantFormat.QOperator, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    reduce_range=True)
    return out


def four_bit_weights(m: onnx.ModelProto) -> onnx.ModelProto:
    """`m` with each int8 weight of a DequantizeLinear rounded to 4 bits: codes / 16 in
    [-8, 7], the scale times 16 (the int4 weights the pack-weights pass stores two to a
    byte)."""
    inits = {t.name: t for t in m.graph.initializer}
    for n in m.graph.node:
        w = inits.get(n.input[0]) if n.op_type == "DequantizeLinear" else None
        if w is None or w.data_type != TensorProto.INT8:
            continue
        codes = numpy_helper.to_array(w).astype(np.float32)
        w.CopyFrom(numpy_helper.from_array(
            np.clip(np.round(codes / 16), -8, 7).astype(np.int8), w.name))
        s = inits[n.input[1]]
        s.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(s) * np.float32(16), s.name))
    return m


def inputs(n: int = 6, seed: int = 7) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(SHAPE) * 1.5).astype(np.float32) for _ in range(n)]


def output_scales(path: Path) -> list[float]:
    """The scale of each graph output's final DequantizeLinear."""
    m = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    by_output = {n.output[0]: n for n in m.graph.node}
    return [float(inits[by_output[o.name].input[1]]) for o in m.graph.output]


def onnxruntime_runs(path: Path, level) -> list[list[np.ndarray]]:
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return [sess.run(None, {"x": x}) for x in inputs()]


def assert_within_one_step(got: list, want: list, scales: list[float]) -> None:
    for g, w, s in zip(got, want, scales, strict=True):
        steps = np.abs(np.asarray(g, np.float64) - w) / s
        assert steps.max() <= 1.0 + 1e-3, f"{steps.max():.3f} quantization steps apart"


def fused(path: Path) -> Graph:
    g = import_onnx(path)
    run_pipeline(g, DEFAULT_PIPELINE.replace(",plan-memory", ""), verify_each=True)
    return g


def compiled(path: Path, target: str = "x86") -> Graph:
    """The graph as edgec compiles it for `target`: its default pipeline (blocked layout,
    packed weights, fixed-point requantization), the reference the library is bit-exact with."""
    t = get_target(target)
    g = import_onnx(path)
    run_pipeline(g, default_pipeline(t.lanes(DType.F32), t.registers).replace(",plan-memory", ""),
                 verify_each=True)
    return g


def test_fuse_qdq_leaves_integer_ops(models):
    g = fused(models["full"])
    counts = g.op_counts()
    assert not FLOAT_OPS & set(counts), counts
    assert counts["QLinearConv"] == 4 and counts["QLinearAdd"] == 1
    assert counts["QGemm"] == 1 and counts["QLinearMatMul"] == 1
    # MaxPool and Flatten moved onto the uint8 tensors, the global mean too
    ops = {n.op: n for n in g.nodes}
    assert ops["MaxPool"].output.dtype == DType.U8 and ops["Flatten"].output.dtype == DType.U8
    assert ops["QLinearGlobalAveragePool"].output.dtype == DType.U8
    # the model's node names survive
    assert {n.name for n in g.nodes if n.op == "QLinearConv"} == {"r1", "r2", "c3", "c4"}
    text = print_graph(g)
    assert print_graph(parse(text)) == text


def test_compiled_qdq_model_matches_onnxruntime(models, tmp_path):
    """Default pipeline (fuse-qdq): bit-exact with the interpreter, within a step of the QDQ
    model as onnxruntime runs it in float."""
    path = models["full"]
    edgec.compile(path, tmp_path, name="qcnn")
    check_runs(load(tmp_path), compiled(path), path)


def check_runs(lib, graph: Graph, path: Path) -> None:
    """The library bit-exact with the interpreter on `graph`, within a step of the QDQ model
    as onnxruntime runs it in float."""
    want = onnxruntime_runs(path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    for x, w in zip(inputs(), want, strict=True):
        got = lib.run({"x": x})
        ref = interpret(graph, {"x": x})
        for name in ("logits", "embed"):
            np.testing.assert_array_equal(got[name], ref[name])
        assert_within_one_step([got["logits"], got["embed"]], w, output_scales(path))


# every target and both backends: the blocked dot4 kernels (AVX-512 VNNI, AVX2's widened dot4,
# NEON, Armv8.2 sdot dispatch, Armv7) and c-generic's scalar kernels; ARM under qemu-user, an
# AVX-512 build where the CPU lacks it compiled only
BUILDS = [("x86-avx512", "c"), ("x86-avx512", "llvm"), ("x86-avx2", "c"), ("x86-avx2", "llvm"),
          ("c-generic", "c"), ("arm64", "c"), ("arm64", "llvm"), ("arm64-dotprod", "c"),
          ("armv7", "c")]


@pytest.mark.parametrize("activations", ["uint8", "int8", "int4w"])
@pytest.mark.parametrize("target,backend", BUILDS, ids=[f"{t}-{b}" for t, b in BUILDS])
def test_integer_kernels_bit_exact_on_every_target(models, target, backend, activations,
                                                   tmp_path):
    """uint8 and int8 activations; int4w: uint8 activations and 4-bit weights, which the
    dense tiles read two to a byte."""
    path = models["full" if activations == "uint8" else activations]
    art = edgec.compile(path, tmp_path, name="qcnn", target=target, backend=backend)
    ops = {r["op"] for r in art.manifest["kernel_strategies"]}
    assert ("BlockedQLinearConv" in ops) == (target != "c-generic"), ops
    assert "QLinearConv" not in ops or target == "c-generic", ops
    dense = [r["strategy"] for r in art.manifest["kernel_strategies"]
             if (r["op"] == "BlockedQLinearConv" and "depthwise" not in r["strategy"])
             or r["op"] in ("QGemm", "QLinearMatMul")]
    if target != "c-generic":  # the int8 GEMMs too: their B packed by pack-weights
        assert len(dense) == 5 and all(("int8 GEMM" in s) == (not s.startswith("blocked"))
                                       for s in dense), dense
        assert all(("two to a byte" in s) == (activations == "int4w") for s in dense), dense
        convs = [s for s in dense if s.startswith("blocked")]
        assert all(("unpacked once per task" in s) == (activations == "int4w")
                   for s in convs), convs
        assert all("fixed-point requantization" in s and "kernel builder" not in s
                   for s in dense), dense
    if not runs_here(target):
        return  # compiled (warnings are errors); run where the CPU has it
    lib = load(tmp_path)
    graph = compiled(path, target)
    for x in inputs(3):
        got = lib.run({"x": x})
        ref = interpret(graph, {"x": x})
        for name in ("logits", "embed"):
            np.testing.assert_array_equal(got[name], ref[name], err_msg=f"{name} on {target}")


W8A16_BUILDS = [("x86", "c"), ("x86", "llvm"), ("c-generic", "c"), ("arm64", "c")]


@pytest.mark.parametrize("activations", ["int16", "uint16"])
@pytest.mark.parametrize("target,backend", W8A16_BUILDS,
                         ids=[f"{t}-{b}" for t, b in W8A16_BUILDS])
def test_16_bit_activations_run_on_the_integer_kernels(models, target, backend, activations,
                                                       tmp_path):
    """onnxruntime's QDQ model with 16-bit activations and int8 weights: every Conv, MatMul,
    Gemm and Add fused into an integer op reading and writing 16 bits (the scalar integer
    kernels, not the 8-bit tiles nor fixed point), the library bit-exact with the interpreter
    and within a step of onnxruntime running the QDQ model in float."""
    path = models[activations]
    g = fused(path)
    assert not FLOAT_OPS & set(g.op_counts()), g.op_counts()
    t = DType.I16 if activations == "int16" else DType.U16
    q = [n for n in g.nodes if n.op in ("QLinearConv", "QLinearAdd", "QGemm", "QLinearMatMul")]
    assert len(q) == 7 and all(n.inputs[0].dtype is t and n.output.dtype is t for n in q)
    art = edgec.compile(path, tmp_path, name="qcnn16", target=target, backend=backend)
    rows = {r["op"]: r["strategy"] for r in art.manifest["kernel_strategies"]}
    assert "BlockedQLinearConv" not in rows and "int8 GEMM" not in rows["QGemm"], rows
    assert all("fixed-point" not in s for s in rows.values()), rows
    if not runs_here(target):
        return
    check_runs(load(tmp_path), compiled(path, target), path)


@pytest.mark.parametrize("backend", ["c", "llvm"])
def test_int4_conv_tile_unpacking_in_its_inner_loop_is_bit_exact(models, backend, tmp_path):
    """Weight groups too large to unpack once per task (here: every group, the target's
    limit set to 0) are unpacked by the tile as it reads them: the same integers."""
    x86 = get_target("x86")
    target = replace(x86, tiles=replace(x86.tiles, int4_unpack_bytes=0))
    path = models["int4w"]
    art = edgec.compile(path, tmp_path, name="qcnn", target=target, backend=backend)
    convs = [r["strategy"] for r in art.manifest["kernel_strategies"]
             if r["op"] == "BlockedQLinearConv" and "depthwise" not in r["strategy"]]
    assert convs and all("two to a byte" in s and "unpacked" not in s for s in convs), convs
    lib = load(tmp_path)
    graph = compiled(path)
    for x in inputs(2):
        got, ref = lib.run({"x": x}), interpret(graph, {"x": x})
        for name in ("logits", "embed"):
            np.testing.assert_array_equal(got[name], ref[name], err_msg=name)


def test_onnxruntime_int4_weights_import_and_run_packed(tmp_path):
    """A QDQ model with ONNX INT4 weights (quantize_static's QInt4, opset 21): the int4
    initializers import, fuse-qdq widens them to int8 codes of 4 bits, and the dense
    convolutions read them two to a byte; bit-exact with the interpreter, within a step of
    onnxruntime."""
    m = onnx.version_converter.convert_version(cnn(), 21)
    m.ir_version = 10
    onnx.save(m, tmp_path / "float.onnx")
    path = tmp_path / "int4.onnx"
    quantize_static(str(tmp_path / "float.onnx"), str(path), RandomImages(),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt4)
    assert TensorProto.INT4 in {t.data_type for t in onnx.load(path).graph.initializer}
    art = edgec.compile(path, tmp_path / "lib", name="q4")
    dense = [r["strategy"] for r in art.manifest["kernel_strategies"]
             if r["op"] == "BlockedQLinearConv" and "depthwise" not in r["strategy"]]
    assert len(dense) == 3 and all("two to a byte" in s for s in dense), dense
    check_runs(load(tmp_path / "lib"), compiled(path), path)


def test_qoperator_model_takes_the_blocked_integer_kernels(models, tmp_path):
    """A QOperator model (QLinearConv in the file) lands on the same fast path as QDQ, within
    a step of onnxruntime running it."""
    path = models["qoperator"]
    art = edgec.compile(path, tmp_path, name="qop", target="x86-avx2")
    ops = {r["op"] for r in art.manifest["kernel_strategies"]}
    assert "BlockedQLinearConv" in ops and "QLinearConv" not in ops, ops
    check_runs(load(tmp_path), compiled(path, "x86-avx2"), path)


def test_reduced_range_model_matches_onnxruntime_integer_kernels(models, tmp_path):
    path = models["reduced"]
    edgec.compile(path, tmp_path, name="qcnn7")
    lib = load(tmp_path)
    want = onnxruntime_runs(path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    for x, w in zip(inputs(), want, strict=True):
        got = lib.run({"x": x})
        assert_within_one_step([got["logits"], got["embed"]], w, output_scales(path))


@pytest.mark.parametrize("backend", ["c", "llvm"])
def test_seven_bit_weights_take_vpmaddubsw_on_avx2_bit_exactly(models, backend, tmp_path):
    """7-bit weights (reduce_range): every dense int8 layer's byte pairs fit int16, so on
    AVX2 its dot4s are vpmaddubsw + vpmaddwd (kernel IR dot4p), and the library stays
    bit-exact with the interpreter, natively and under qemu's Haswell (C)."""
    path = models["reduced"]
    art = edgec.compile(path, tmp_path, name="qcnn7", target="x86-avx2", backend=backend)
    dense = [r["strategy"] for r in art.manifest["kernel_strategies"]
             if (r["op"] == "BlockedQLinearConv" and "depthwise" not in r["strategy"])
             or r["op"] in ("QGemm", "QLinearMatMul")]
    assert len(dense) == 5 and all("dot4 as vpmaddubsw+vpmaddwd" in s for s in dense), dense
    graph = compiled(path, "x86-avx2")
    libs = [load(tmp_path)]
    if backend == "c" and shutil.which("qemu-x86_64"):
        libs.append(load(tmp_path, emulator=["qemu-x86_64", "-cpu", "Haswell"]))
    for lib in libs:
        for x in inputs(3):
            got, ref = lib.run({"x": x}), interpret(graph, {"x": x})
            for name in ("logits", "embed"):
                np.testing.assert_array_equal(got[name], ref[name], err_msg=name)


def test_unfused_qdq_model_compiles(models, tmp_path):
    """Without fuse-qdq the model runs as written: float ops between Q and DQ kernels."""
    path = models["full"]
    edgec.compile(path, tmp_path, name="qcnnf", pipeline="fold-constants,dce,plan-memory")
    lib = load(tmp_path)
    want = onnxruntime_runs(path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    for x, w in zip(inputs(), want, strict=True):
        got = lib.run({"x": x})
        assert_within_one_step([got["logits"], got["embed"]], w, output_scales(path))


def all_values(graph: Graph, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every node output of `graph` on input x, by value name."""
    seen: dict[str, np.ndarray] = {}
    interpret(graph, {"x": x}, hook=lambda n, outs: seen.update(
        {v.name: o for v, o in zip(n.outputs, outs, strict=True)}))
    return seen


def test_fused_graph_within_one_step_of_the_qdq_graph(models):
    """The interpreter on the graph before and after fuse-qdq, at every fused op's output."""
    g0 = import_onnx(models["full"])
    g1 = g0.copy()
    run_pipeline(g1, "fuse-qdq", verify_each=True)
    fused_names = {n.output.name for n in g1.nodes if n.op.startswith(("QLinear", "QGemm"))}
    assert len(fused_names) == 8  # (the global mean's among them)
    for x in inputs(12, seed=3):
        before, after = all_values(g0, x), all_values(g1, x)
        for name in fused_names:  # uint8 tensors with the names of the Q outputs
            diff = np.abs(after[name].astype(np.int32) - before[name].astype(np.int32))
            assert diff.max() <= 1, name


# -- the patterns on small hand-built graphs ------------------------------------------------------

def qdq_conv(*, relu: bool, y_zp: int, float_bias: bool, runtime_scale: bool = False) -> Graph:
    """DQ(x) -> Conv(DQ(w), bias) [-> Relu] -> Q, written out by hand."""
    rng = np.random.default_rng(4)
    g = Graph("qconv")
    x = g.add_input("x", TensorType((1, 4, 6, 6), DType.U8))
    sx = (g.add_input("sx", TensorType((), DType.F32)) if runtime_scale
          else g.const(np.float32(0.05), "sx"))
    zx = g.const(np.uint8(120), "zx")
    w = g.const(rng.integers(-127, 128, (5, 4, 3, 3)).astype(np.int8), "w")
    sw = g.const(rng.uniform(0.002, 0.01, 5).astype(np.float32), "sw")
    zw = g.const(np.zeros(5, np.int8), "zw")
    xf = g.add_node("DequantizeLinear", [x, sx, zx], name="dqx").output
    wf = g.add_node("DequantizeLinear", [w, sw, zw], {"axis": 0}, name="dqw").output
    if float_bias:
        b = g.const(rng.uniform(-1, 1, 5).astype(np.float32), "b")
    else:
        bq = g.const(rng.integers(-900, 900, 5).astype(np.int32), "bq")
        sb = g.const((np.float32(0.05) * sw.const).astype(np.float32), "sb")
        b = g.add_node("DequantizeLinear", [bq, sb, g.const(np.zeros(5, np.int32), "zb")],
                       {"axis": 0}, name="dqb").output
    y = g.add_node("Conv", [xf, wf, b], {"strides": [1, 1], "pads": [1, 1, 1, 1],
                                         "dilations": [1, 1], "group": 1}, name="conv").output
    if relu:
        y = g.add_node("Relu", [y], name="relu").output
    q = g.add_node("QuantizeLinear", [y, g.const(np.float32(0.2), "sy"),
                                      g.const(np.uint8(y_zp), "zy")], name="q")
    g.outputs = [q.output]
    verify(g)
    return g


@pytest.mark.parametrize("relu,y_zp,float_bias", [
    (False, 128, False), (True, 128, False), (True, 0, False), (False, 100, True)])
def test_conv_pattern(relu, y_zp, float_bias, tmp_path):
    g = qdq_conv(relu=relu, y_zp=y_zp, float_bias=float_bias)
    after = g.copy()
    res = apply_patterns(after, FUSE_QDQ_PATTERNS)
    verify(after)
    assert res.applied["qlinear-conv"] == 1
    # a Relu before Q is max(y, zy), and nothing at all when zy is uint8's minimum
    expect = ["QLinearConv"] + (["Max"] if relu and y_zp > 0 else [])
    assert [n.op for n in after.nodes] == expect
    rng = np.random.default_rng(0)
    for _ in range(5):
        feeds = {"x": rng.integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)}
        a, b = interpret(g, feeds)["q"], interpret(after, feeds)["q"]
        assert np.abs(a.astype(np.int32) - b.astype(np.int32)).max() <= 1
    if relu and y_zp:
        check_against_interpreter(after, tmp_path, feeds=feeds, tol=0)  # the Max kernel too


def test_pattern_refuses_runtime_scales_and_says_why():
    g = qdq_conv(relu=False, y_zp=128, float_bias=False, runtime_scale=True)
    res = apply_patterns(g, FUSE_QDQ_PATTERNS, explain=True)
    assert not res.changed
    reasons = {f.pattern: f.reason for f in res.failures}
    assert "the scale of dqx" in reasons["qlinear-conv"], reasons
    assert "not a constant" in reasons["qlinear-conv"]


CONCAT_RESIZE = """
graph @cr(%a: u8[1,2,3,3], %b: u8[1,3,3,3]) {
  %s = const f32[] dense<[0.5]>
  %z = const u8[] dense<[7]>
  %scales = const f32[4] dense<[1.0, 1.0, 2.0, 2.0]>
  %af = DequantizeLinear(%a, %s, %z) : f32[1,2,3,3]
  %bf = DequantizeLinear(%b, %s, %z) : f32[1,3,3,3]
  %c = Concat(%af, %bf) {axis = 1} : f32[1,5,3,3]
  %cq = QuantizeLinear(%c, %s, %z) : u8[1,5,3,3]
  %cf = DequantizeLinear(%cq, %s, %z) : f32[1,5,3,3]
  %r = Resize(%cf, none, %scales) {mode = "nearest"} : f32[1,5,6,6]
  %y = QuantizeLinear(%r, %s, %z) : u8[1,5,6,6]
  return %y
}"""


def test_concat_and_nearest_resize_run_on_the_integers(tmp_path):
    """Q(Concat(DQ(a), DQ(b))) and Q(Resize_nearest(DQ(x))) with one scale and zero point
    are the ops on the integers; compiled, bit-exact with the QDQ graph."""
    g = parse(CONCAT_RESIZE)
    want_graph = parse(CONCAT_RESIZE)
    run_pipeline(g, "fuse-qdq,dce")
    ops = g.op_counts()
    assert ops == {"Concat": 1, "Resize": 1}, ops
    assert [n.inputs[0].dtype for n in g.nodes] == [DType.U8, DType.U8]
    rng = np.random.default_rng(3)
    feeds = {"a": rng.integers(0, 256, (1, 2, 3, 3)).astype(np.uint8),
             "b": rng.integers(0, 256, (1, 3, 3, 3)).astype(np.uint8)}
    want = interpret(want_graph, feeds)["y"]
    np.testing.assert_array_equal(interpret(g, feeds)["y"], want)
    from edgec.compiler.driver import compile_graph

    compile_graph(parse(CONCAT_RESIZE), tmp_path, name="cr")
    np.testing.assert_array_equal(load(tmp_path).run(feeds)["y"], want)


LINEAR_RESIZE = """
graph @lr(%x: u8[1,3,5,4]) {
  %s = const f32[] dense<[0.037]>
  %z = const u8[] dense<[121]>
  %scales = const f32[4] dense<[1.0, 1.0, 2.0, 1.5]>
  %xf = DequantizeLinear(%x, %s, %z) : f32[1,3,5,4]
  %r = Resize(%xf, none, %scales) {mode = "MODE"} : f32[1,3,10,6]
  %y = QuantizeLinear(%r, %s, %z) : u8[1,3,10,6]
  return %y
}"""


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("target,backend", [("x86", "c"), ("x86", "llvm"), ("c-generic", "c")])
def test_interpolating_resize_runs_on_the_integers(mode, target, backend, tmp_path):
    """Q(Resize_linear/cubic(DQ(x))) with one scale and zero point is QLinearResize: uint8 in
    and out, the taps dequantized as they are read; equal to the QDQ graph on every input
    (cubic overshoots: the saturation is the QDQ graph's too)."""
    text = LINEAR_RESIZE.replace("MODE", mode)
    g = parse(text)
    run_pipeline(g, "fuse-qdq,dce")
    assert g.op_counts() == {"QLinearResize": 1}, g.op_counts()
    rng = np.random.default_rng(4)
    feeds = [{"x": rng.integers(0, 256, (1, 3, 5, 4)).astype(np.uint8)} for _ in range(3)]
    feeds.append({"x": np.where(rng.random((1, 3, 5, 4)) < 0.5, 0, 255).astype(np.uint8)})
    from edgec.compiler.driver import compile_graph

    art = compile_graph(parse(text), tmp_path, name="lr", target=target, backend=backend)
    assert {r["op"]: r["strategy"] for r in art.manifest["kernel_strategies"]} == \
        {"QLinearResize": f"int8 resize, {mode}"}
    lib = load(tmp_path)
    for f in feeds:
        want = interpret(parse(text), f)["y"]
        np.testing.assert_array_equal(interpret(g, f)["y"], want)
        np.testing.assert_array_equal(lib.run(f)["y"], want)


@pytest.mark.parametrize("kind", ["full", "int8", "qoperator", "int4w"])
def test_the_hls_design_of_a_qdq_or_qoperator_model_equals_the_x86_library(models, kind,
                                                                           tmp_path):
    """onnxruntime's QDQ (uint8 and int8 activations, 4-bit weight codes) and QOperator
    models on the HLS target (codegen/hls_project.py): its C-simulation, two outputs from one
    flattened value, equals the x86 library bit for bit."""
    h = edgec.compile(models[kind], tmp_path / "hls", target="hls",
                      fpga_part="xczu9eg-ffvb1156-2-e", name="cnn")
    c = edgec.compile(models[kind], tmp_path / "x86", target="x86", name="cnn")
    assert h.manifest["hls"]["estimate"]["fits"]
    hm, cm = load(h.out_dir), load(c.out_dir)
    for seed in range(3):
        x = {"x": np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)}
        got, want = hm.run(x), cm.run(x)
        for k in ("logits", "embed"):
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"{kind} {k} seed {seed}")
