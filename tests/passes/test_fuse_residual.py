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
from test_every_pass import GOLDEN

import edgec
from edgec.frontends.onnx import import_onnx
from edgec.ir import DType, interpret, parse
from edgec.passes import default_pipeline, run_pipeline
from edgec.runtime.loader import load
from edgec.targets.target import get_target

# the pass's golden case (conv as the add's second operand), and variants of it
SRC = GOLDEN["fuse-residual"][1]
ADD = ("QLinearAdd(%r, %sr, %zr, %y, %sy, %zy, %sc, %zc) {rq_mult = [524288, 1572864], "
       "rq_shift = 21}")


def graph(*edits: tuple[str, str]):
    src = SRC
    for old, new in edits:
        assert old in src, old
        src = src.replace(old, new)
    return parse(src)


def feeds(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: rng.integers(0, 256, (1, 1, 2, 2, 4)).astype(np.uint8) for n in ("x", "r")}


def test_conv_as_first_operand_keeps_the_multipliers_in_order():
    g = graph((ADD, "QLinearAdd(%y, %sy, %zy, %r, %sr, %zr, %sc, %zc) "
                    "{rq_mult = [1572864, 524288], rq_shift = 21}"))
    want = [interpret(g, feeds(s)) for s in range(4)]
    run_pipeline(g, "fuse-residual,dce", verify_each=True)
    (node,) = [n for n in g.nodes if not n.op.startswith("const")]
    assert node.op == "BlockedQLinearConv" and node.attrs["add_mult"] == [1572864, 524288]
    assert node.attrs["add_shift"] == 21 and node.inputs[9].name == "r"
    for s, w in enumerate(want):
        np.testing.assert_array_equal(interpret(g, feeds(s))["z"], w["z"])


@pytest.mark.parametrize("edit,why", [
    (("return %z", "return %z, %y"), "the conv's output is also a graph output"),
    ((" {rq_mult = [524288, 1572864], rq_shift = 21}", ""), "the add is float (no fixed-point)"),
    (("%y, %sy, %zy, %sc", "%y, %sc, %zy, %sc"), "the add's scale for the conv is not its own"),
])
def test_leaves_the_adds_it_cannot_fuse(edit, why):
    g = graph(edit)
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
