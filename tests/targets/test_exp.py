"""The kernel IR's float32 exp (the runtime's branch-free `edgec_expf`, which loops vectorize)
against float64 numpy, built by both renderers: the C one with gcc -O3 (so the loop runs
vectorized, AVX2) and the LLVM one, which must agree with it bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from test_vector_ir import build as build_c
from test_vector_ir import function as function_c

from edgec.ir.dtypes import DType
from edgec.targets.kernel_ir import Kernel, KernelBuilder, call

F32 = DType.F32
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, -1e-30, 88.72283, 88.72284, 88.7229, 89.0, 89.5,
           1e4, -87.33654, -87.3366, -100.0, -103.27893, -103.9721, -103.98, -104.0, -104.5,
           -1e4, np.inf, -np.inf, np.nan, 2.0 ** -149, 15.596843]


def exp_kernel(n: int) -> Kernel:
    kb = KernelBuilder("exp_all")
    x, y = kb.input("x", F32, (n,)), kb.output("y", F32, (n,))
    with kb.loop(n, "i") as i:
        kb.store(y, i, call("exp", x[i]))
    return kb.build()


def inputs() -> np.ndarray:
    """Every 1021st float32 bit pattern whose exp is neither 0 nor inf for sure, and the
    special values: about 1.4 million inputs."""
    bits = np.arange(0, 2 ** 32, 1021, dtype=np.uint64).astype(np.uint32).view(np.float32)
    keep = bits[(bits > -110) & (bits < 95)]
    return np.concatenate([keep, np.array(SPECIAL, np.float32)])


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in units in the last place of float32 (both finite and of one sign)."""
    return np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    x = inputs()
    k = exp_kernel(x.size)
    out = {}
    lib = build_c(tmp_path_factory.mktemp("c"), [k], None, ["-O3", "-march=haswell"], "expc")
    y = np.empty_like(x)
    function_c(lib, k)(x, y)
    out["c"] = y
    pytest.importorskip("llvmlite")
    from test_llvm import build as build_llvm
    from test_llvm import function as function_llvm

    y = np.empty_like(x)
    function_llvm(build_llvm(tmp_path_factory.mktemp("llvm"), [k], "expl"), k)(x, y)
    out["llvm"] = y
    return x, out


@pytest.mark.parametrize("backend", ["c", "llvm"])
def test_exp_within_two_ulps_and_special_values(results, backend):
    x, out = results
    got = out[backend]
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


def test_c_and_llvm_agree_bit_for_bit(results):
    _, out = results
    np.testing.assert_array_equal(out["c"].view(np.uint32), out["llvm"].view(np.uint32))
