"""pairdot: NEON's int8 convolution without dotprod, two k-groups' products summed in int16
(`smull`, `smlal`) before one `sadalp` into int32 lane pairs, folded once per tile
(`pairfold`), where every weight lies in [-127, 127].

The interpreter's pairdot and pairfold against numpy worked out byte by byte, and its refusal
of a weight of -128 in a two-k-group sum; a QLinearConv at the bounds (inputs 0 and 255
re-centred to -128 and 127 against weights +-127; an odd number of input blocks, a last
group of fewer output blocks) built for `arm64` (C and LLVM), `armv7` and `arm64-dotprod`
(its fallback under `qemu-aarch64 -cpu cortex-a53`) equal to edgec's interpreter, taking the
pairs form, and with one weight of -128 keeping the widened dot4, each saying so; the same
programs on the kernel IR interpreter; the int8 GEMM tile's pairs (odd k-groups, a K % 4
tail, a last panel of one vector) under qemu against numpy; an edgec-quantized conv on
`arm64` naming the form.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from kernel_ir.test_dot4_pairs import qlinear_conv_model

import edgec
from edgec.frontends.onnx import import_onnx
from edgec.ir import interpret
from edgec.ir.dtypes import DType
from edgec.kernel_ir.interpreter import KernelError, run_kernel
from edgec.kernel_ir.kernel import KernelBuilder, pairdot, pairfold, vload
from edgec.kernel_ir.program_interp import run_program
from edgec.lowering.program import build_program
from edgec.passes import default_pipeline, run_pipeline
from edgec.targets.target import get_target

I32, I8 = DType.I32, DType.I8
A53 = ("-cpu", "cortex-a53")  # Armv8.0-A: no dot product
PAIRS = "dot4 as smull+smlal+sadalp (two k-groups summed in int16: weights within +-127)"


def pairs_kernel(n: int):
    """y = pairfold(pairdot(acc, pairs, 0), pairdot(acc, pairs, 1)) and the two halves, for
    `n` pairs of 16-byte int8 vectors a, b (a's k-groups then b's, 16 bytes each)."""
    kb = KernelBuilder(f"pairs{n}")
    a, b = kb.pointer("a", I8), kb.pointer("b", I8)
    acc, y = kb.pointer("acc", I32), kb.pointer("y", I32, "out")
    ab = [(vload(a, 16 * p, 16), vload(b, 16 * p, 16)) for p in range(n)]
    lo = pairdot(vload(acc, 0, 4), ab, 0)
    hi = pairdot(vload(acc, 4, 4), ab, 1)
    kb.store(y, 0, lo)
    kb.store(y, 4, hi)
    kb.store(y, 8, pairfold(lo, hi))
    return kb.build()


def numpy_pairs(acc: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The same sums from their definition: byte j's products over the k-groups, lane m of
    half h the bytes 8h + 2m and 8h + 2m + 1, the fold lane i the bytes 4i .. 4i + 3."""
    byte = (a.astype(np.int64) * b.astype(np.int64)).sum(axis=0)  # [16]
    halves = [acc[4 * h + m] + byte[8 * h + 2 * m] + byte[8 * h + 2 * m + 1]
              for h in (0, 1) for m in range(4)]
    fold = [halves[2 * i] + halves[2 * i + 1] for i in range(4)]
    return np.array(halves + fold, np.int64)


@pytest.mark.parametrize("n", [1, 2])
def test_interpreter_pairdot_matches_numpy(n):
    rng = np.random.default_rng(3)
    k = pairs_kernel(n)
    for trial in range(20):
        a = rng.integers(-128, 128, (n, 16)).astype(np.int8)
        b = rng.integers(-127 if n == 2 else -128, 128, (n, 16)).astype(np.int8)
        if trial == 0:  # the bound: |2 x 128 x 127| in one byte's int16 sum
            a[:], b[:] = -128, -127
        if trial == 1:
            a[:], b[:] = 127, 127
        acc = rng.integers(-2**20, 2**20, 8).astype(np.int32)
        y = np.zeros(12, np.int32)
        run_kernel(k, a.reshape(-1).copy(), b.reshape(-1).copy(), acc, y)
        np.testing.assert_array_equal(y, numpy_pairs(acc, a, b))


def test_interpreter_refuses_a_weight_of_minus_128_in_two_k_groups():
    a = np.full(32, -128, np.int8)
    b = np.full(32, 1, np.int8)
    b[20] = -128
    with pytest.raises(KernelError, match="-128"):
        run_kernel(pairs_kernel(2), a, b, np.zeros(8, np.int32), np.zeros(12, np.int32))
    run_kernel(pairs_kernel(1), a, b, np.zeros(8, np.int32), np.zeros(12, np.int32))  # one: fits


def conv_case(minus128: bool) -> tuple[np.ndarray, np.ndarray]:
    """(weights [20, 12, 3, 3], input) at the bounds: weights +-127 against inputs 0 and 255
    (re-centred to -128 and 127); `minus128`: one weight of -128."""
    rng = np.random.default_rng(11)
    w = rng.integers(-127, 128, (20, 12, 3, 3)).astype(np.int8)
    w[:, :8, 1] = np.where(rng.random((20, 8, 3)) < 0.5, -127, 127)
    if minus128:
        w[7, 9, 2, 0] = -128
    x = rng.integers(0, 256, (1, 12, 9, 9)).astype(np.uint8)
    x[0, :, :3] = 0
    x[0, :4, 3:5] = 255
    return w, x


def reference(model, target: str, x: np.ndarray) -> np.ndarray:
    t = get_target(target)
    g = import_onnx(model)
    run_pipeline(g, default_pipeline(t.lanes(DType.F32), t.registers)
                 .replace(",plan-memory", ""), verify_each=True)
    return interpret(g, {"x": x})["y"]


@pytest.mark.parametrize("target,backend", [("arm64", "c"), ("arm64", "llvm"), ("armv7", "c"),
                                            ("arm64-dotprod", "c")])
@pytest.mark.parametrize("minus128", [False, True], ids=["symmetric", "minus128"])
def test_qlinear_conv_pairs_exact_under_qemu(target, backend, minus128, tmp_path):
    w, x = conv_case(minus128)
    model = qlinear_conv_model(w)
    art = edgec.compile(model, tmp_path / "m", target=target, name="m", backend=backend)
    (s,) = [r["strategy"] for r in art.manifest["kernel_strategies"]
            if r["op"] == "BlockedQLinearConv"]
    form = {"arm64": PAIRS, "armv7": PAIRS.replace("smull+smlal+sadalp", "vmull+vmlal+vpadal"),
            "arm64-dotprod": PAIRS.replace("as ", "as sdot, else ")}[target]
    if minus128:
        assert form not in s and "a weight of -128" in s, s
    else:
        assert form in s, s
    want = reference(model, target, x)
    emulators = [get_target(target).emulator]
    if target == "arm64-dotprod":  # the sdot version, and the fallback on an Armv8.0 core
        emulators.append((*get_target(target).emulator, *A53))
    for emu in emulators:
        got = edgec.load(art.out_dir, emulator=list(emu)).run({"x": x})["y"]
        np.testing.assert_array_equal(got, want, " ".join(emu))


@pytest.mark.parametrize("target", ["arm64", "armv7"])
def test_program_interpreter_runs_the_pairs_tiles(target):
    # the whole arm64 / armv7 program, its micro-kernels' pairdot and pairfold included, on
    # edgec's kernel IR interpreter against the graph interpreter
    w, x = conv_case(False)
    model = qlinear_conv_model(w)
    t = get_target(target)
    g = import_onnx(model)
    run_pipeline(g, default_pipeline(t.lanes(DType.F32), t.registers), out=io.StringIO())
    prog = build_program(g, g.record.memory_plan, t, "t")
    tiles = [m for r in prog.strategies if r["op"] == "BlockedQLinearConv"
             for m in r["micro_kernels"]]
    # the pairs tiles (microkernels_int8.qconv_tile pairs): 4 output blocks and the last 1
    assert len(tiles) == 2 and all("_s16x" in m for m in tiles), tiles
    np.testing.assert_array_equal(run_program(prog, {"x": x})["y"], reference(model, target, x))


def test_dotprod_library_has_both_forms(tmp_path):
    w, _ = conv_case(False)
    art = edgec.compile(qlinear_conv_model(w), tmp_path / "m", target="arm64-dotprod", name="m")
    c = (art.out_dir / "m.c").read_text()
    assert "_s16x2_sdot(" in c and "_s16x2_neon(" in c
    sdot = c[c.index("_s16x2_sdot("):c.index("_s16x2_neon(")]
    assert "vdotq_s32" in sdot or "edgec_sdot" in sdot, sdot[:400]
    assert "edgec_pairdot2_lo" in c[c.index("_s16x2_neon("):]


def matmul_integer_model(b: np.ndarray, a_type: int):
    """MatMulInteger of A [5, K] (zero point 3) against constant int8 B [K, N]."""
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    a_np = np.uint8 if a_type == T.UINT8 else np.int8
    inits = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.array(3, a_np), "za")]
    g = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b", "za"], ["y"])], "mmi",
                          [helper.make_tensor_value_info("a", a_type, [5, b.shape[0]])],
                          [helper.make_tensor_value_info("y", T.INT32, [5, b.shape[1]])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("target,backend", [("arm64", "c"), ("arm64", "llvm"), ("armv7", "c"),
                                            ("arm64-dotprod", "c")])
@pytest.mark.parametrize("a_type", ["uint8", "int8"])
def test_int8_gemm_pairs_exact_under_qemu(target, backend, a_type, tmp_path):
    # K = 37: 9 k-groups (4 pairs and one alone) and a K % 4 tail group; N = 20: a last
    # panel of one vector in use; B at +-127 against A at its extremes
    from onnx import TensorProto as T

    rng = np.random.default_rng(8)
    b = rng.integers(-127, 128, (37, 20)).astype(np.int8)
    b[:16] = np.where(rng.random((16, 20)) < 0.5, -127, 127)
    a = (rng.integers(0, 256, (5, 37)).astype(np.uint8) if a_type == "uint8"
         else rng.integers(-128, 128, (5, 37)).astype(np.int8))
    a[:2] = 0 if a_type == "uint8" else -128
    a[2] = 255 if a_type == "uint8" else 127
    m = matmul_integer_model(b, T.UINT8 if a_type == "uint8" else T.INT8)
    art = edgec.compile(m, tmp_path / "q", target=target, name="q", backend=backend)
    (s,) = [r["strategy"] for r in art.manifest["kernel_strategies"] if "GEMM" in r["strategy"]]
    assert "two k-groups summed in int16" in s, s
    if backend == "c":
        assert "edgec_pairdot2_lo" in (art.out_dir / "q.c").read_text()
    want = (a.astype(np.int32) - 3) @ b.astype(np.int32)
    emulators = [get_target(target).emulator]
    if target == "arm64-dotprod":
        emulators.append((*get_target(target).emulator, *A53))
    for emu in emulators:
        got = edgec.load(art.out_dir, emulator=list(emu)).run({"a": a})["y"]
        np.testing.assert_array_equal(got, want, " ".join(emu))


def test_edgec_quantized_conv_on_arm64_names_the_pairs_form(tmp_path):
    # edgec's quantizer codes weights symmetrically within +-127: the pairs form, named
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(2)
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
                          "conv", [helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 6, 6])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [1, 8, 6, 6])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    calib = {"x": np.abs(rng.standard_normal((4, 8, 6, 6))).astype(np.float32)}
    art = edgec.compile(m, tmp_path / "m", target="arm64", name="m", quantize="int8",
                        calib=calib, log=io.StringIO())
    (s,) = [r["strategy"] for r in art.manifest["kernel_strategies"]
            if r["op"] == "BlockedQLinearConv"]
    assert s.endswith(PAIRS), s
