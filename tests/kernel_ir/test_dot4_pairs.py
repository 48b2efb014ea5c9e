"""dot4p: the int8 dot product whose weights' byte pairs fit int16 (kernel_ir.pairs_fit16),
which AVX2 sums with vpmaddubsw and vpmaddwd by ones instead of widening both operands.

Exact at the bounds (pairs of weights summing to +-128 against uint8 255 and 128) on every
build that runs here and under `qemu-x86_64 -cpu Haswell`; the int8 GEMM and the blocked
convolution take it per layer where all of the weights' pairs fit (the report says which
form each node got, and why a node keeps the widened one) and stay bit-exact with numpy and
the interpreter; the interpreter refuses a dot4p whose weights do not fit.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import onnx
import pytest
from harness import isa_builds
from kernel_ir.test_int8 import HASWELL, matmul_integer_model, pack_panel
from kernel_ir.test_vector_ir import build, c_source, function, gcc
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import edgec
from edgec.frontends.onnx import import_onnx
from edgec.ir import interpret
from edgec.ir.dtypes import DType
from edgec.ir.encodings import gemm_pairs
from edgec.kernel_ir.interpreter import KernelError, run_kernel
from edgec.kernel_ir.kernel import (
    Kernel,
    KernelBuilder,
    broadcast,
    const,
    dot4,
    pairs_fit16,
    vbroadcast,
    vload,
)
from edgec.passes import default_pipeline, run_pipeline
from edgec.targets.target import get_target

I32, U8, I8 = DType.I32, DType.U8, DType.I8
BUILDS = isa_builds()
# byte pairs at and inside the bounds: positive weights summing to 128, negative to -128,
# mixed signs at the extremes
EDGE_PAIRS = [(64, 64), (-64, -64), (127, 1), (1, 127), (-128, 0), (0, -128), (127, -128),
              (-128, 127), (100, 28), (-100, -28), (0, 0), (63, -64)]


def test_pairs_fit16_bounds():
    assert pairs_fit16(np.array(EDGE_PAIRS))
    for bad in [(127, 2), (65, 64), (-128, -1), (-65, -64)]:
        assert not pairs_fit16(np.array([bad])), bad
    # 7-bit weights always fit; symmetric 8-bit ones need not
    assert pairs_fit16(np.random.default_rng(0).integers(-64, 64, (100, 2)))
    assert not pairs_fit16(np.array([[127, 127]]))


def panel_kernel(lanes: int) -> Kernel:
    """y[0:L] = sum_g dot4p(a[4g : 4g+4] in every group, bp[g]) (test_int8.row_times_panel)."""
    kb = KernelBuilder(f"row_panel_p16_x{lanes}")
    a, bp = kb.pointer("a", U8), kb.pointer("bp", I8)
    y = kb.pointer("y", I32, "out")
    groups = kb.scalar("groups")
    acc = kb.local("acc", broadcast(const(0, I32), lanes))
    with kb.loop(groups, "g") as g:
        bv = kb.local("bv", vload(bp, g * (4 * lanes), 4 * lanes))
        kb.assign(acc, dot4(acc, vbroadcast(a, g * 4, 4 * lanes, 4), bv, pairs16=True))
    kb.store(y, 0, acc)
    return kb.build()


def edge_operands(rng, k: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """(a [K] over 0..255 with runs of 255 and 128, B [K, L] of edge pairs down each column)."""
    a = rng.integers(0, 256, k).astype(np.uint8)
    a[: k // 2] = 255
    a[k // 2: k // 2 + 8] = 128
    pairs = np.array(EDGE_PAIRS, np.int8)
    b = pairs[rng.integers(0, len(pairs), (k // 2, lanes))].transpose(0, 2, 1).reshape(k, lanes)
    b[:, 0] = np.tile([127, -128], k // 2)  # a column of 127 x 255 + -128 x 255 pairs
    return a, np.ascontiguousarray(b)


def panel_exact_on_build(tmp_path, build_name: str, make_kernel, operands, want,
                         seed: int) -> None:
    """A row-times-panel kernel (`make_kernel(lanes)`) built as `build_name` gives `want(a,
    b)` on `operands(rng, K, lanes)` for K = 4, 64 and 4096, and the interpreter the same."""
    isa, flags = BUILDS[build_name]
    lanes = isa.lanes(I32) if isa else 1
    k = make_kernel(lanes)
    lib = build(tmp_path, [k], isa, flags, build_name)
    rng = np.random.default_rng(seed)
    for size in (4, 64, 4096):
        a, b = operands(rng, size, lanes)
        y = np.zeros(lanes, np.int32)
        function(lib, k)(a, pack_panel(b), y, size // 4)
        np.testing.assert_array_equal(y, want(a, b))
        yi = np.zeros(lanes, np.int32)
        run_kernel(k, a, pack_panel(b), yi, size // 4)
        np.testing.assert_array_equal(yi, y)


@pytest.mark.parametrize("build_name", sorted(BUILDS))
def test_dot4p_exact_at_the_bounds(build_name, tmp_path):
    # the interpreter computes the same sum as each build's dot4p (and the widening one)
    panel_exact_on_build(tmp_path, build_name, panel_kernel, edge_operands,
                         lambda a, b: a.astype(np.int64) @ b.astype(np.int64), 5)


def test_avx2_renders_dot4p_as_maddubs_and_vnni_as_dpbusd():
    src = c_source([panel_kernel(8)], BUILDS["avx2"][0])
    assert "edgec_dot4p_u8i8(" in src and "edgec_dot4_u8i8(acc" not in src
    from edgec.codegen.renderers.c import CRenderer
    from edgec.codegen.renderers.c_isas import AVX2_VNNI, AVX512
    assert "_mm256_dpbusd_avx_epi32(" in CRenderer(AVX2_VNNI).kernel(panel_kernel(8))
    assert "_mm512_dpbusd_epi32(" in CRenderer(AVX512).kernel(panel_kernel(16))


def panel_under_haswell(tmp_path, k: Kernel, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The 8 sums of the AVX2 build of `k` (a row-times-panel kernel: a [K] uint8, B [K, 8]
    int8 packed as its panel) run as a program under `qemu-x86_64 -cpu Haswell`."""
    if shutil.which("qemu-x86_64") is None:
        pytest.fail("qemu-x86_64 is not installed: `apt-get install qemu-user`")
    isa, flags = BUILDS["avx2"]
    main = [f"static const uint8_t a[] = {{{', '.join(map(str, a))}}};",
            f"static const int8_t b[] = {{{', '.join(map(str, pack_panel(b)))}}};",
            "int main(void)", "{", "    int32_t y[8];", f"    {k.name}(a, b, y, {a.size // 4});",
            "    for (int j = 0; j < 8; ++j) printf(\"%d \", (int)y[j]);", "    return 0;", "}"]
    exe = gcc(tmp_path, "#include <stdio.h>\n" + c_source([k], isa) + "\n".join(main) + "\n",
              flags, f"{k.name}_haswell", [])
    out = subprocess.run([*HASWELL, str(exe)], capture_output=True, text=True, check=True)
    return np.array(out.stdout.split(), np.int64)


def test_dot4p_under_haswell(tmp_path):
    a, b = edge_operands(np.random.default_rng(6), 256, 8)
    np.testing.assert_array_equal(panel_under_haswell(tmp_path, panel_kernel(8), a, b),
                                  a.astype(np.int64) @ b.astype(np.int64))


def test_interpreter_refuses_a_dot4p_past_int16():
    k = panel_kernel(1)
    b = np.array([[127], [2], [0], [0]], np.int8)  # 255 * 129 > 32767
    with pytest.raises(KernelError, match="saturate"):
        run_kernel(k, np.full(4, 255, np.uint8), pack_panel(b), np.zeros(1, np.int32), 1)


def test_gemm_pairs_follow_the_tiles_k_groups():
    b = np.zeros((7, 1), np.int8)
    b[3], b[4] = 127, 127  # rows 3 and 4: in different pairs (2, 3) and the tail's (3*, 4)
    assert pairs_fit16(gemm_pairs(b))
    b[5], b[6] = 127, 2  # the tail group's pair (5, 6)
    assert not pairs_fit16(gemm_pairs(b))


# -- models: MatMulInteger and a QLinearConv on x86-avx2 -----------------------------------------

def gemm_cases(rng) -> list[tuple[str, np.ndarray, bool]]:
    """(name, B, whether its pairs fit): 7-bit weights, edge pairs, and one pair past +-128
    in otherwise 7-bit weights (a -128 beside a -1), K % 4 of 0 and 3."""
    seven = rng.integers(-64, 64, (37, 21)).astype(np.int8)
    edge = np.array(EDGE_PAIRS, np.int8)[rng.integers(0, len(EDGE_PAIRS), (32, 19))]
    edge = np.ascontiguousarray(edge.transpose(0, 2, 1).reshape(64, 19))
    bad = rng.integers(-64, 64, (64, 19)).astype(np.int8)
    bad[40, 7], bad[41, 7] = -128, -1
    return [("seven", seven, True), ("edge", edge, True), ("bad", bad, False)]


def gemm_feeds(rng, k: int) -> np.ndarray:
    a = rng.integers(0, 256, (9, k)).astype(np.uint8)
    a[0], a[1], a[2, ::2] = 255, 128, 255
    return a


@pytest.mark.parametrize("backend", ["c", "llvm"])
def test_matmul_integer_takes_maddubs_where_pairs_fit(backend, tmp_path):
    rng = np.random.default_rng(7)
    for name, b, fits in gemm_cases(rng):
        m = matmul_integer_model((9, b.shape[0]), b, T.UINT8, 3 if name == "edge" else None,
                                 None)
        art = edgec.compile(m, tmp_path / name, target="x86-avx2", name=name, backend=backend)
        (s,) = [r["strategy"] for r in art.manifest["kernel_strategies"]]
        assert ("dot4 as vpmaddubsw+vpmaddwd" in s) == fits, s
        assert ("dot4 widened (vpmaddwd: the weights of a pair sum to -129" in s) == (not fits), s
        assert s.split(", dot4")[1].split(",")[0] in (tmp_path / name / "report.txt").read_text()
        if backend == "c":
            src = (tmp_path / name / f"{name}.c").read_text()
            assert ("edgec_dot4p_u8i8(" in src) == fits and ("_p16_" in src) == fits, name
        a = gemm_feeds(rng, b.shape[0])
        za = 3 if name == "edge" else 0
        want = ((a.astype(np.int64) - za) @ b.astype(np.int64)).astype(np.int32)
        np.testing.assert_array_equal(edgec.load(art.out_dir).run({"a": a})["y"], want, name)


def test_matmul_integer_maddubs_under_haswell(tmp_path):
    if shutil.which("qemu-x86_64") is None:
        pytest.fail("qemu-x86_64 is not installed: `apt-get install qemu-user`")
    rng = np.random.default_rng(8)
    for name, b, _ in gemm_cases(rng)[:2]:
        m = matmul_integer_model((9, b.shape[0]), b, T.UINT8, None, None)
        art = edgec.compile(m, tmp_path / name, target="x86-avx2", name=name)
        a = gemm_feeds(rng, b.shape[0])
        want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
        got = edgec.load(art.out_dir, emulator=HASWELL).run({"a": a})["y"]
        np.testing.assert_array_equal(got, want, name)


def qlinear_conv_model(w: np.ndarray) -> onnx.ModelProto:
    """QLinearConv 3x3, pads 1, uint8 x [1, 12, 9, 9], int8 weights per output channel."""
    m = w.shape[0]
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "sx"),
             numpy_helper.from_array(np.array(131, np.uint8), "zx"),
             numpy_helper.from_array(w, "w"),
             numpy_helper.from_array((0.001 * (1 + np.arange(m))).astype(np.float32), "sw"),
             numpy_helper.from_array(np.zeros(m, np.int8), "zw"),
             numpy_helper.from_array(np.array(0.05, np.float32), "sy"),
             numpy_helper.from_array(np.array(7, np.uint8), "zy"),
             numpy_helper.from_array(np.arange(m, dtype=np.int32) * 50 - 300, "bias")]
    node = helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy",
                                            "bias"], ["y"], pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "qconv", [helper.make_tensor_value_info("x", T.UINT8,
                                                                          [1, 12, 9, 9])],
                          [helper.make_tensor_value_info("y", T.UINT8, [1, m, 9, 9])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("backend", ["c", "llvm"])
def test_qlinear_conv_takes_maddubs_where_pairs_fit(backend, tmp_path):
    rng = np.random.default_rng(9)
    t = get_target("x86-avx2")
    x = rng.integers(0, 256, (1, 12, 9, 9)).astype(np.uint8)
    x[0, :, :3] = 255
    x[0, :, 3:5] = 128
    for name in ("seven", "bad"):
        w = rng.integers(-64, 64, (16, 12, 3, 3)).astype(np.int8)
        w[:, :4] = np.array([127, -128, -128, 127], np.int8).reshape(1, 4, 1, 1)  # edge pairs
        if name == "bad":
            w[5, 2, 1, 1], w[5, 3, 1, 1] = -128, -1
        model = qlinear_conv_model(w)
        art = edgec.compile(model, tmp_path / name, target="x86-avx2", name=name,
                            backend=backend)
        (s,) = [r["strategy"] for r in art.manifest["kernel_strategies"]
                if r["op"] == "BlockedQLinearConv"]
        assert ("dot4 as vpmaddubsw+vpmaddwd" in s) == (name == "seven"), s
        g = import_onnx(model)
        run_pipeline(g, default_pipeline(t.lanes(DType.F32), t.registers)
                     .replace(",plan-memory", ""), verify_each=True)
        want = interpret(g, {"x": x})["y"]
        np.testing.assert_array_equal(edgec.load(art.out_dir).run({"x": x})["y"], want, name)
