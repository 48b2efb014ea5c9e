"""The sign trick: AVX2's exact int8 dot product of full-range weights (their byte pairs past
what `vpmaddubsw` sums in int16) without widening both operands. The uint8 row is re-centred
(x - 128, kernel IR recentre), `vpsignb` moves its signs onto the weights and `vpmaddubsw`
multiplies |x - 128| (at most 128) by them: exact while every weight lies in [-127, 127]
(kernel IR dot4p of int8 bytes, which the interpreter checks).

A kernel of such dot4s at the bounds (rows of -128 and 127 against weights of +-127) on every
build that runs here, on the interpreter and under `qemu-x86_64 -cpu Haswell`, against numpy;
a QLinearConv of full-range weights built for an AVX2 library on a CPU family where the trick
was measured faster (zen3: the AVX-VNNI tile, and the sign trick as its fallback, reading the
two halves of one correction table) bit for bit with the interpreter, natively and under
Haswell (no AVX-VNNI: the fallback runs), C and LLVM; a weight of -128, or a family without
the measurement, keeps the widened dot4, and the report says which form each layer got.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from harness import isa_builds
from kernel_ir.test_dot4_pairs import (
    panel_exact_on_build,
    panel_under_haswell,
    qlinear_conv_model,
)
from kernel_ir.test_int8 import HASWELL
from kernel_ir.test_vector_ir import c_source
from lowering.test_neon_pairdot import reference

import edgec
from edgec.ir.dtypes import DType
from edgec.kernel_ir.interpreter import KernelError, run_kernel
from edgec.kernel_ir.kernel import (
    Kernel,
    KernelBuilder,
    broadcast,
    const,
    dot4,
    recentre,
    vbroadcast,
    vload,
)
from edgec.targets.uarch import MICROARCHS

I32, U8, I8 = DType.I32, DType.U8, DType.I8
BUILDS = isa_builds()
SIGN = "dot4 by the sign trick (vpsignb+vpmaddubsw+vpmaddwd of x - 128"


def sign_kernel(lanes: int) -> Kernel:
    """y[0:L] = sum_g dot4p(recentre(a[4g : 4g+4]) in every group, bp[g]): the sums of
    (a - 128) times B's columns."""
    kb = KernelBuilder(f"row_panel_sgn_x{lanes}")
    a, bp = kb.pointer("a", U8), kb.pointer("bp", I8)
    y = kb.pointer("y", I32, "out")
    groups = kb.scalar("groups")
    acc = kb.local("acc", broadcast(const(0, I32), lanes))
    with kb.loop(groups, "g") as g:
        bv = kb.local("bv", vload(bp, g * (4 * lanes), 4 * lanes))
        xs = kb.local("xs", recentre(vbroadcast(a, g * 4, 4 * lanes, 4)))
        kb.assign(acc, dot4(acc, xs, bv, pairs16=True))
    kb.store(y, 0, acc)
    return kb.build()


def bound_operands(rng, k: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """(a [K] over 0..255 with runs of 0 and 255: -128 and 127 re-centred, B [K, L] in
    [-127, 127] with runs of +-127, and pairs of 127 that a uint8 vpmaddubsw would saturate)."""
    a = rng.integers(0, 256, k).astype(np.uint8)
    a[: k // 4] = 0
    a[k // 4: k // 2] = 255
    b = rng.integers(-127, 128, (k, lanes)).astype(np.int8)
    b[: k // 2] = np.where(rng.random((k // 2, lanes)) < 0.5, -127, 127)
    b[:, 0] = 127
    return a, b


def want(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.astype(np.int64) - 128) @ b.astype(np.int64)


@pytest.mark.parametrize("build_name", sorted(BUILDS))
def test_sign_dot4_exact_at_the_bounds(build_name, tmp_path):
    panel_exact_on_build(tmp_path, build_name, sign_kernel, bound_operands, want, 7)


def test_avx2_renders_the_sign_trick(tmp_path):
    assert "edgec_dot4s_i8i8(" in c_source([sign_kernel(8)], BUILDS["avx2"][0])
    a, b = bound_operands(np.random.default_rng(8), 256, 8)
    np.testing.assert_array_equal(panel_under_haswell(tmp_path, sign_kernel(8), a, b),
                                  want(a, b))


def test_interpreter_refuses_a_weight_of_minus_128():
    a = np.full(32, 0, np.uint8)  # -128 re-centred: -128 x -128 does not fit the trick
    b = np.ones(32, np.int8)
    b[9] = -128
    with pytest.raises(KernelError, match="-128"):
        run_kernel(sign_kernel(8), a, b, np.zeros(8, np.int32), 1)


def conv_weights(minus128: bool) -> np.ndarray:
    rng = np.random.default_rng(12)
    w = rng.integers(-127, 128, (20, 12, 3, 3)).astype(np.int8)
    w[:, :8, 1] = np.where(rng.random((20, 8, 3)) < 0.5, -127, 127)  # pairs up to 254
    if minus128:
        w[3, 5, 0, 2] = -128
    return w


def conv_input() -> np.ndarray:
    x = np.random.default_rng(13).integers(0, 256, (1, 12, 9, 9)).astype(np.uint8)
    x[0, :, :3] = 0
    x[0, :4, 3:6] = 255
    return x


@pytest.mark.parametrize("backend", ["c", "llvm"])
@pytest.mark.parametrize("cpu,minus128,sign", [("zen3", False, True), ("zen3", True, False),
                                               ("zen4", False, False)])
def test_full_range_conv_on_avx2(backend, cpu, minus128, sign, tmp_path):
    model = qlinear_conv_model(conv_weights(minus128))
    art = edgec.compile(model, tmp_path / "m", target="x86-avx2", name="m", cpu=cpu,
                        backend=backend)
    (s,) = [r["strategy"] for r in art.manifest["kernel_strategies"]
            if r["op"] == "BlockedQLinearConv"]
    assert (SIGN in s) == sign, s
    assert sign or "dot4 widened (vpmaddwd: the weights of a pair sum to" in s, s
    x = conv_input()
    ref = reference(model, "x86-avx2", x)
    if shutil.which("qemu-x86_64") is None:
        pytest.fail("qemu-x86_64 is not installed: `apt-get install qemu-user`")
    for emulator in ([], HASWELL):  # Haswell has no AVX-VNNI: the fallback runs there
        got = edgec.load(art.out_dir, emulator=emulator).run({"x": x})["y"]
        np.testing.assert_array_equal(got, ref, " ".join(emulator) or "native")
    if backend == "c" and sign:  # both versions, each reading its half of the table
        c = (art.out_dir / "m.c").read_text()
        vnni = c[c.index("_sgn_c1_avxvnni("):c.index("_sgn_c1_avx2(")]
        assert "_mm256_dpbusd_avx_epi32(" in vnni and "edgec_dot4s_i8i8(" not in vnni
        assert "edgec_dot4s_i8i8(" in c[c.index("_sgn_c1_avx2("):]


def test_only_measured_families_take_the_sign_trick():
    assert [m.name for m in MICROARCHS.values() if m.int8_sign] == ["zen3"]
