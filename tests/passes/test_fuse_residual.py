"""fuse-residual: a fixed-point QLinearAdd of a blocked integer convolution's output runs in the
convolution's kernel. The rewrite keeps the integers (the interpreter before and after), the
fused kernels compute them (compiled for x86 C and LLVM, AVX2, arm64 under qemu, against the
interpreter of the graph without the rewrite), and the adds it must not touch are left."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

import edgec
from edgec.frontends.onnx import import_onnx
from edgec.ir import DType, interpret, parse
from edgec.passes import default_pipeline, run_pipeline
from edgec.runtime.loader import load
from edgec.targets.target import get_target

CONSTS = """
    %sx = const f32[] dense<[0.5]>
    %zx = const u8[] dense<[10]>
    %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
    %sw = const f32[2] dense<[0.25, 0.125]>
    %sy = const f32[] dense<[1.5]>
    %zy = const u8[] dense<[5]>
    %sy2 = const f32[] dense<[1.25]>
    %sr = const f32[] dense<[0.5]>
    %zr = const u8[] dense<[3]>
    %sc = const f32[] dense<[2.0]>
    %zc = const u8[] dense<[7]>"""
CONV = ("%y = BlockedQLinearConv(%x, %sx, %zx, %w, %sw, none, %sy, %zy, none) {dilations = "
        "[1, 1], pads = [0, 0, 0, 0], strides = [1, 1], channels = 2, block = 4, rq_mult = "
        "[1431655808, 715827904], rq_shift = 34} : u8[1,1,2,2,4]")


def graph(add: str, outputs: str = "%z"):
    return parse(f"graph @g(%x: u8[1,1,2,2,4], %r: u8[1,1,2,2,4]) {{{CONSTS}\n    {CONV}\n"
                 f"    {add} : u8[1,1,2,2,4]\n    return {outputs}\n}}")


FIXED = "{rq_mult = [1572864, 524288], rq_shift = 21}"


def feeds(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: rng.integers(0, 256, (1, 1, 2, 2, 4)).astype(np.uint8) for n in ("x", "r")}


def test_conv_as_first_operand_keeps_the_multipliers_in_order():
    g = graph(f"%z = QLinearAdd(%y, %sy, %zy, %r, %sr, %zr, %sc, %zc) {FIXED}")
    want = [interpret(g, feeds(s)) for s in range(4)]
    run_pipeline(g, "fuse-residual,dce", verify_each=True)
    (node,) = [n for n in g.nodes if not n.op.startswith("const")]
    assert node.op == "BlockedQLinearConv" and node.attrs["add_mult"] == [1572864, 524288]
    assert node.attrs["add_shift"] == 21 and node.inputs[9].name == "r"
    for s, w in enumerate(want):
        np.testing.assert_array_equal(interpret(g, feeds(s))["z"], w["z"])


@pytest.mark.parametrize("add,outputs,why", [
    (f"%z = QLinearAdd(%y, %sy, %zy, %r, %sr, %zr, %sc, %zc) {FIXED}", "%z, %y",
     "the conv's output is also a graph output"),
    ("%z = QLinearAdd(%y, %sy, %zy, %r, %sr, %zr, %sc, %zc)", "%z",
     "the add is float (no fixed-point pass)"),
    (f"%z = QLinearAdd(%y, %sy2, %zy, %r, %sr, %zr, %sc, %zc) {FIXED}", "%z",
     "the add's scale for the conv is not the conv's own"),
])
def test_leaves_the_adds_it_cannot_fuse(add, outputs, why):
    g = graph(add, outputs)
    run_pipeline(g, "fuse-residual", verify_each=True)
    assert "QLinearAdd" in {n.op for n in g.nodes}, why


def residual_net(depthwise: bool) -> onnx.ModelProto:
    """x -> Conv (3x3 depthwise, or 1x1 dense) -> Add(., x) -> Relu, 16 channels."""
    rng = np.random.default_rng(3)
    c = 16
    shape = [c, 1, 3, 3] if depthwise else [c, c, 1, 1]
    attrs = dict(group=c, pads=[1, 1, 1, 1]) if depthwise else {}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs),
             helper.make_node("Add", ["c", "x"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    inits = [numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(c) * 0.1).astype(np.float32), "b")]
    g = helper.make_graph(nodes, "res", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                       [1, c, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 6, 6])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


class Images(CalibrationDataReader):
    def __init__(self):
        rng = np.random.default_rng(1)
        self._it = iter([{"x": rng.standard_normal((1, 16, 6, 6)).astype(np.float32)}
                         for _ in range(4)])

    def get_next(self):
        return next(self._it, None)


@pytest.fixture(scope="module")
def qdq(tmp_path_factory):
    d = tmp_path_factory.mktemp("residual")
    out = {}
    for kind in ("dense", "depthwise"):
        onnx.save(residual_net(kind == "depthwise"), d / f"{kind}.onnx")
        out[kind] = d / f"{kind}_qdq.onnx"
        quantize_static(str(d / f"{kind}.onnx"), str(out[kind]), Images(),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return out


BUILDS = [("x86", "c"), ("x86", "llvm"), ("x86-avx2", "c"), ("arm64", "c")]


@pytest.mark.parametrize("kind", ["dense", "depthwise"])
@pytest.mark.parametrize("target,backend", BUILDS, ids=[f"{t}-{b}" for t, b in BUILDS])
def test_fused_kernels_give_the_unfused_integers(qdq, kind, target, backend, tmp_path):
    art = edgec.compile(qdq[kind], tmp_path, name="res", target=target, backend=backend)
    convs = [r["strategy"] for r in art.manifest["kernel_strategies"]
             if r["op"] == "BlockedQLinearConv"]
    assert len(convs) == 1 and "residual add fused" in convs[0], convs
    assert ("depthwise" in convs[0]) == (kind == "depthwise"), convs
    assert "QLinearAdd" not in {r["op"] for r in art.manifest["kernel_strategies"]}
    t = get_target(target)
    unfused = import_onnx(qdq[kind])
    run_pipeline(unfused, default_pipeline(t.lanes(DType.F32), t.registers)
                 .replace(",fuse-residual", "").replace(",plan-memory", ""), verify_each=True)
    assert "QLinearAdd" in {n.op for n in unfused.nodes}
    lib = load(tmp_path)
    rng = np.random.default_rng(9)
    for _ in range(3):
        x = rng.standard_normal((1, 16, 6, 6)).astype(np.float32)
        np.testing.assert_array_equal(lib.run({"x": x})["y"], interpret(unfused, {"x": x})["y"])
