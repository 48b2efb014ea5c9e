"""The kernel IR's float32 exp and tanh (mathlib.py: the runtime's branch-free `edgec_expf` and
`edgec_tanhf`, which loops vectorize) against float64 numpy, built by both renderers: the C
one with gcc -O3 (so the loop runs vectorized: AVX2, and AVX-512 where the CPU has it) and the
LLVM one for the same target, which must agree with it bit for bit, as the kernel interpreter
must; and the runtime header printed from the one definition."""

from __future__ import annotations

import numpy as np
import pytest
from harness import machine_flags, runs_here
from kernel_ir.test_vector_ir import build as build_c
from kernel_ir.test_vector_ir import function as function_c

from edgec.codegen import mathlib_c
from edgec.ir.dtypes import DType
from edgec.kernel_ir.interpreter import run_kernel
from edgec.kernel_ir.kernel import Kernel, KernelBuilder, call, vload
from edgec.targets.target import get_target

F32 = DType.F32
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 0.625, -0.625, 0.62500006, 1e-30, -1e-30, 88.72283,
           88.72284, 88.7229, 89.0, 89.5, 1e4, -87.33654, -87.3366, -100.0, -103.27893,
           -103.9721, -103.98, -104.0, -104.5, -1e4, np.inf, -np.inf, np.nan, 2.0 ** -149,
           15.596843, 44.5, -44.5]


def math_kernel(fn: str, n: int) -> Kernel:
    kb = KernelBuilder(f"{fn}_all")
    x, y = kb.input("x", F32, (n,)), kb.output("y", F32, (n,))
    with kb.loop(n, "i") as i:
        kb.store(y, i, call(fn, x[i]))
    return kb.build()


def inputs() -> np.ndarray:
    """Every 1021st float32 bit pattern in (-110, 95), and the special values: about 1.4
    million inputs (exp is 0 or inf outside)."""
    bits = np.arange(0, 2 ** 32, 1021, dtype=np.uint64).astype(np.uint32).view(np.float32)
    keep = bits[(bits > -110) & (bits < 95)]
    return np.concatenate([keep, np.array(SPECIAL, np.float32)])


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in units in the last place of float32 (both finite and of one sign)."""
    return np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))


@pytest.fixture(scope="module", params=[t for t in ("x86-avx2", "x86-avx512") if runs_here(t)])
def results(request, tmp_path_factory):
    """{(fn, backend): outputs} over inputs(), built for one x86 target."""
    x = inputs()
    ks = [math_kernel(fn, x.size) for fn in ("exp", "tanh")]
    out = {}
    lib = build_c(tmp_path_factory.mktemp("c"), ks, None, ["-O3", *machine_flags(request.param)],
                  "mathc")
    for k in ks:
        out[k.name, "c"] = np.empty_like(x)
        function_c(lib, k)(x, out[k.name, "c"])
    from codegen.test_llvm import build as build_llvm
    from codegen.test_llvm import function as function_llvm

    lib = build_llvm(tmp_path_factory.mktemp("llvm"), ks, "mathl", get_target(request.param))
    for k in ks:
        out[k.name, "llvm"] = np.empty_like(x)
        function_llvm(lib, k)(x, out[k.name, "llvm"])
    return x, out


@pytest.mark.parametrize("backend", ["c", "llvm"])
def test_exp_within_two_ulps_and_special_values(results, backend):
    x, out = results
    got = out["exp_all", backend]
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64))
        want32 = want.astype(np.float32)
    normal = (want >= np.finfo(np.float32).tiny) & np.isfinite(want32)
    assert normal.sum() > 1_000_000
    dist = ulps(got[normal], want32[normal])
    assert dist.max() <= 2, f"{backend}: {dist.max()} ulps at x = {x[normal][dist.argmax()]!r}"
    tiny = (want < np.finfo(np.float32).tiny) & ~np.isnan(want)  # denormal results and 0
    assert np.abs(got[tiny].astype(np.float64) - want[tiny]).max() <= 2.0 ** -148
    big = ~np.isfinite(want32) & ~np.isnan(want)
    assert np.isposinf(got[big]).all() and big.sum() >= 5
    assert np.isnan(got[np.isnan(x)]).all()
    assert got[x == -np.inf][0] == 0.0 and got[x == 0.0].tolist() == [1.0] * (x == 0).sum()


@pytest.mark.parametrize("backend", ["c", "llvm"])
def test_tanh_within_one_ulp_and_special_values(results, backend):
    x, out = results
    got = out["tanh_all", backend]
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    ok = ~np.isnan(x)
    same_sign = np.signbit(got[ok]) == np.signbit(want[ok])
    assert same_sign.all(), f"{backend}: sign of tanh at {x[ok][~same_sign][:5]}"
    dist = ulps(np.abs(got[ok]), np.abs(want[ok]))
    assert dist.max() <= 1, f"{backend}: {dist.max()} ulps at x = {x[ok][dist.argmax()]!r}"
    assert np.isnan(got[~ok]).all()
    assert got[x == np.inf][0] == 1.0 and got[x == -np.inf][0] == -1.0


def test_c_and_llvm_agree_bit_for_bit(results):
    _, out = results
    for fn in ("exp_all", "tanh_all"):
        np.testing.assert_array_equal(out[fn, "c"].view(np.uint32),
                                      out[fn, "llvm"].view(np.uint32), err_msg=fn)


def test_interpreter_agrees_bit_for_bit(results):
    """The interpreter runs mathlib's definitions: 1024-lane vectors over the same inputs."""
    x, out = results
    lanes = 1024
    n = -(-x.size // lanes) * lanes
    xp = np.concatenate([x, np.zeros(n - x.size, np.float32)])
    for fn in ("exp", "tanh"):
        kb = KernelBuilder(f"{fn}_vec")
        xb, yb = kb.input("x", F32, (n,)), kb.output("y", F32, (n,))
        with kb.loop(n // lanes, "i") as i:
            kb.store(yb, i * lanes, call(fn, vload(xb, i * lanes, lanes)))
        y = np.empty(n, np.float32)
        run_kernel(kb.build(), xp, y)
        np.testing.assert_array_equal(y[:x.size].view(np.uint32),
                                      out[f"{fn}_all", "c"].view(np.uint32), err_msg=fn)


def test_runtime_header_is_printed_from_the_definition():
    text = mathlib_c.RUNTIME_HEADER.read_text()
    assert mathlib_c.header_with_functions(text) == text, (
        "edgec_runtime.h is stale: python -m edgec.codegen.mathlib_c --write")
    assert text.count("static inline float edgec_expf(float x)") == 1

