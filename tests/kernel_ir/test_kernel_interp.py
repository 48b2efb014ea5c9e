"""The kernel-IR interpreter (kernel_ir/interpreter.py), no C compiler involved.

test_vector_ir's kernel tests (lane-wise ops with masked tails, hreduce, micro-kernel calls
with pointer offsets, CSR loops, int32 vectors, the GEMM tile) run here on the interpreter at
16, 8 and 1 lanes against their numpy references, as they run on gcc's and LLVM's builds;
then the C semantics the interpreter must keep (truncating division, wrapping, fmaxf, lazy
selects) and the undefined behaviour it must refuse (accesses past a buffer, float to integer
conversions that do not fit).
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_ir.test_vector_ir import (  # noqa: F401  (the imported tests run here on `built` below)
    SENTINEL,
    axpy_driver,
    check_gemm_driver,
    gemm_driver,
    int_kernel,
    lanewise_kernel,
    parallel_kernel,
    prefetch_kernel,
    reduce_kernel,
    spmv_kernel,
    test_csr_spmv,
    test_int32_vectors,
    test_lanewise_ops_and_masked_tail,
    test_microkernel_call_with_pointer_offsets_and_scalars,
    test_reductions_hreduce_and_unrolled_loop,
)

from edgec.ir.dtypes import DType
from edgec.kernel_ir.interpreter import KernelError, run_kernel
from edgec.kernel_ir.kernel import (
    Kernel,
    KernelBuilder,
    binary,
    call,
    cast,
    const,
    convert,
    maximum,
    select,
    vload,
)

F32, I32, I8, U8, U32 = DType.F32, DType.I32, DType.I8, DType.U8, DType.U32


def function(k: Kernel):
    return lambda *args: run_kernel(k, *args)


@pytest.fixture(scope="module", params=[16, 8, 1], ids=["16", "8", "1"])
def built(request):
    """test_vector_ir's kernels at 16, 8 and 1 lanes on the interpreter."""
    L = request.param
    ks = {"lanewise": lanewise_kernel(L, 3 * L + 5 if L > 1 else 13),
          "rowreduce": reduce_kernel(L, 4, 2 * L + 3 if L > 1 else 11),
          "axpy_rows": axpy_driver(L, 3, 2 * L + 7 if L > 1 else 9),
          "spmv": spmv_kernel(L, 6, 9, 14),
          "intvec": int_kernel(L, 4 * L)}
    return L, ks, {name: function(k) for name, k in ks.items()}


@pytest.mark.parametrize("L", [16, 8, 1])
def test_gemm_microkernel_with_remainder_columns(L):
    k = gemm_driver(L)
    check_gemm_driver(function(k), L)


def test_parallel_loop_runs_every_iteration():
    rows, cols = 5, 24
    k = parallel_kernel(8, rows, cols)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    sc = rng.standard_normal(rows).astype(np.float32)
    y = np.full((rows, cols), SENTINEL, np.float32)
    run_kernel(k, x, sc, y)
    want = np.maximum(x.astype(np.float64) * sc[:, None] + np.arange(rows)[:, None], 0)
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_prefetch_inside_and_outside_the_buffer():
    k = prefetch_kernel(100, 4)
    x = np.arange(100, dtype=np.float32)
    for start in (0, 60, 99, 100, 130):  # the last two ask for nothing
        y = np.zeros(1, np.float32)
        run_kernel(k, x, y, start)
        assert y[0] == x.sum()


# -- C semantics -----------------------------------------------------------------------------

def scalar_kernel(dtype: DType, exprs) -> Kernel:
    """y[j] = exprs[j](a[0], b[0]) for two inputs of `dtype`."""
    kb = KernelBuilder("sem")
    a, b = kb.input("a", dtype, (1,)), kb.input("b", dtype, (1,))
    outs = [e(a[0], b[0]) for e in exprs]
    y = kb.output("y", outs[0].dtype, (len(outs),))
    for j, e in enumerate(outs):
        kb.store(y, j, e)
    return kb.build()


def run_scalar(dtype: DType, a, b, exprs) -> np.ndarray:
    k = scalar_kernel(dtype, exprs)
    y = np.zeros(len(exprs), k.params[-1].dtype.np)
    run_kernel(k, np.array([a], dtype.np), np.array([b], dtype.np), y)
    return y


def test_integer_division_truncates_and_arithmetic_wraps():
    got = run_scalar(I32, -7, 2, [lambda a, b: a / b, lambda a, b: binary("mod", a, b),
                                  lambda a, b: a * const(1 << 30, I32) * b,
                                  lambda a, b: maximum(a, b)])
    # C: -7 / 2 = -3, -7 % 2 = -1; -7 * 2^30 * 2 wraps to 2^31 (mod 2^32) = INT_MIN; max 2
    assert list(got) == [-3, -1, -2**31, 2]


def test_float_max_and_min_drop_nan_as_fmaxf():
    got = run_scalar(F32, np.nan, 1.5, [lambda a, b: maximum(a, b),
                                        lambda a, b: binary("min", b, a)])
    assert list(got) == [1.5, 1.5]


def test_scalar_select_evaluates_only_the_chosen_operand():
    # a / b with b = 0 in the branch not taken: C's ?: never divides; the interpreter neither
    kb = KernelBuilder("sel")
    a, b = kb.input("a", I32, (1,)), kb.input("b", I32, (1,))
    y = kb.output("y", I32, (1,))
    kb.store(y, 0, select(b[0].eq(0), const(0, I32), cast(cast(a[0], DType.INDEX)
                                                           / cast(b[0], DType.INDEX), I32)))
    y_ = np.zeros(1, np.int32)
    run_kernel(kb.build(), np.array([5], np.int32), np.array([0], np.int32), y_)
    assert y_[0] == 0


def test_math_calls_and_conversions():
    got = run_scalar(F32, 2.5, -1.25, [
        lambda a, b: call("exp", a), lambda a, b: call("round", a),  # half to even: 2
        lambda a, b: call("floor", b), lambda a, b: call("erf", b),
        lambda a, b: cast(cast(b, I32), F32),  # truncates toward zero: -1
        lambda a, b: cast(convert(b * 1e10, U8), F32)])  # saturates: 0
    np.testing.assert_allclose(got, [np.exp(2.5), 2.0, -2.0, -0.9229001, -1.0, 0.0],
                               rtol=1e-6)


def test_dot4_is_exact():
    kb = KernelBuilder("d4")
    a, b = kb.input("a", U8, (32,)), kb.input("b", I8, (32,))
    y = kb.output("y", I32, (8,))
    from edgec.kernel_ir.kernel import broadcast, dot4
    kb.store(y, 0, dot4(broadcast(const(5, I32), 8), vload(a, 0, 32), vload(b, 0, 32)))
    av = np.full(32, 255, np.uint8)
    bv = np.full(32, -128, np.int8)
    y_ = np.zeros(8, np.int32)
    run_kernel(kb.build(), av, bv, y_)
    assert (y_ == 5 + 4 * 255 * -128).all()


def test_recentre_is_a_minus_128_and_keeps_the_dot4_exact():
    # sum a b = dot4(a - 128, b) + 128 sum b, at the extremes of both operands
    kb = KernelBuilder("rc")
    a, b = kb.input("a", U8, (16,)), kb.input("b", I8, (16,))
    y = kb.output("y", I32, (4,))
    from edgec.kernel_ir.kernel import dot4, recentre
    kb.store(y, 0, dot4(const(0, I32), recentre(vload(a, 0, 16)), vload(b, 0, 16)))
    av = np.array([0, 127, 128, 255] * 4, np.uint8)
    bv = np.array([-128] * 4 + [127] * 4 + [-1, 1, -128, 127] * 2, np.int8)
    y_ = np.zeros(4, np.int32)
    run_kernel(kb.build(), av, bv, y_)
    want = (av.astype(np.int64) * bv).reshape(4, 4).sum(1) \
        - 128 * bv.astype(np.int64).reshape(4, 4).sum(1)
    np.testing.assert_array_equal(y_, want)


def test_nibble_fields_times_16():
    # byte 0x8F: low field -1, high field -8; 0x70: low 0, high 7
    kb = KernelBuilder("nib")
    p, x = kb.input("p", I8, (8,)), kb.input("x", U8, (8,))
    y = kb.output("y", I32, (4,))
    from edgec.kernel_ir.kernel import dot4, nibble
    pv = vload(p, 0, 8)
    for k in (0, 1):
        kb.store(y, 2 * k, dot4(const(0, I32), vload(x, 0, 8), nibble(pv, k)))
    pb = np.array([0x8F, 0x70, 0, 0, 0x8F, 0x70, 0x8F, 0x70], np.uint8).view(np.int8)
    xb = np.array([1, 2, 0, 0, 255, 255, 1, 1], np.uint8)
    y_ = np.zeros(4, np.int32)
    run_kernel(kb.build(), pb, xb, y_)
    assert list(y_) == [16 * -1, 255 * 16 * -1 + 1 * 16 * -1,  # low fields: -1, 0
                        16 * (-8 + 2 * 7), 255 * 16 * (-8 + 7) + 16 * (-8 + 7)]


def test_mulshift_rounds_half_up():
    # 12 * 2^30 / 2^33 = 1.5 -> 2, -1.5 -> -1; (2^31 - 1)^2 / 2^33 = 2^29 - 0.5 + 2^-33 ->
    # 2^29; -2^31 (2^31 - 1) / 2^33 = -536870911.75 -> -536870912
    from edgec.kernel_ir.kernel import mulshift
    kb = KernelBuilder("ms")
    v, m = kb.input("v", I32, (4,)), kb.input("m", I32, (4,))
    y = kb.output("y", I32, (4,))
    kb.store(y, 0, mulshift(vload(v, 0, 4), vload(m, 0, 4), const(33, I32)))
    y_ = np.zeros(4, np.int32)
    run_kernel(kb.build(), np.array([12, -12, 2**31 - 1, -2**31], np.int32),
               np.array([2**30, 2**30, 2**31 - 1, 2**31 - 1], np.int32), y_)
    assert list(y_) == [2, -1, 2**29, -536870912]


# -- undefined behaviour is refused ------------------------------------------------------------

def test_access_past_a_buffer_is_an_error():
    kb = KernelBuilder("oob")
    x, y = kb.input("x", F32, (4,)), kb.output("y", F32, (4,))
    with kb.loop(5) as i:  # one too many
        kb.store(y, i, x[i] * 2.0)
    with pytest.raises(KernelError, match=r"load x\[4\] outside its 4 elements"):
        run_kernel(kb.build(), np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_vector_store_past_a_buffer_is_an_error():
    kb = KernelBuilder("voob")
    x, y = kb.input("x", F32, (8,)), kb.output("y", F32, (8,))
    kb.store(y, 4, vload(x, 0, 8))
    with pytest.raises(KernelError, match=r"store y\[4:12\] outside its 8 elements"):
        run_kernel(kb.build(), np.zeros(8, np.float32), np.zeros(8, np.float32))


def test_float_to_int_that_does_not_fit_is_an_error():
    kb = KernelBuilder("ub")
    x, y = kb.input("x", F32, (1,)), kb.output("y", U32, (1,))
    kb.store(y, 0, cast(x[0], U32))
    with pytest.raises(KernelError, match="converted to u32 does not fit"):
        run_kernel(kb.build(), np.array([-3.0], np.float32), np.zeros(1, np.uint32))


def test_shift_past_the_width_is_an_error():
    kb = KernelBuilder("sh")
    x, y = kb.input("x", U32, (1,)), kb.output("y", U32, (1,))
    kb.store(y, 0, binary("shl", x[0], x[0]))
    with pytest.raises(KernelError, match="shift by 40 of a 32-bit value"):
        run_kernel(kb.build(), np.array([40], np.uint32), np.zeros(1, np.uint32))


def test_arguments_are_checked():
    k = lanewise_kernel(8, 10)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        run_kernel(k, np.zeros(10, np.float32))
    with pytest.raises(TypeError, match="is float64, not f32"):
        run_kernel(k, np.zeros(10), np.zeros(10, np.float32), np.zeros(1, np.float32),
                   np.zeros((15, 18), np.float32))


# -- the text form -------------------------------------------------------------------------------

def test_printed_kernels_read_as_written():
    from edgec.ir import Graph, TensorType
    from edgec.kernel_ir.printer import print_kernel
    from edgec.lowering.lower import lower_node
    from edgec.targets.target import get_target

    g = Graph("g")
    x = g.add_input("x", TensorType((2, 3), F32))
    b = g.add_input("b", TensorType((3,), F32))
    add = g.add_node("Add", [x, b], name="add")
    cast_ = g.add_node("Cast", [x], {"to": 3}, name="cast")
    text = [print_kernel(lower_node(n, k, get_target("c-generic")).kernel)
            for k, n in enumerate((add, cast_))]
    assert text[0] == """// Add add: (f32[2,3], f32[3]) -> f32[2,3]
kernel k0_add(in a: f32[2, 3], in b: f32[3], out y: f32[2, 3]) {
  for i0 < 2 {
    for i1 < 3 {
      y[i0 * 3 + i1] = a[i0 * 3 + i1] + b[i1]
    }
  }
}
"""
    assert text[1].splitlines()[3] == (
        "    y[i] = select(a[i] < -128.0, -128:i8, select(a[i] >= 128.0, 127:i8, "
        "select(isnan(a[i]), 0:i8, cast<i8>(a[i]))))")


def test_printed_vector_kernel_with_its_micro_kernel():
    from edgec.kernel_ir.printer import print_kernel

    text = print_kernel(gemm_driver(8))
    assert text.startswith("kernel gemm_drive(in a: f32[3, 9], in bp: f32[7, 16], in bias: "
                           "f32[16], in z: f32[3, 17], out c: f32[3, 17], ncols: index) {\n"
                           "  call mk_gemm_f32x8_m3_v2_z_relu(a, bp, bias, z, c, 7, 9, 17, "
                           "ncols)\n}\n\n// gemm tile: 3 rows x 16 columns\n"
                           "kernel mk_gemm_f32x8_m3_v2_z_relu(in a: f32*, in bp: f32*, ")
    assert "  for kk < k {\n    let b0_: f32x8 = bp[kk * 16:+8]\n" in text
    assert "      c[0:+8 < rest] = max(v1, broadcast(0.0, 8))\n" in text
    assert text.count("\nkernel ") == 1  # the micro-kernel once


def test_fma_rounds_once_as_libm_fmaf():
    """float32 fma rounds a * b + c once: against C's fmaf (glibc's, correctly rounded) on
    random triples, products that cancel, results in the subnormal range and sums that float64
    rounds onto a float32 halfway point. By hand: (1 + 2^-12)^2 + 2^-80 = 1 + 2^-11 + 2^-24 +
    2^-80, just above the halfway point 1 + 2^-11 + 2^-24, is 1 + 2^-11 + 2^-23; float64
    rounds the sum to the halfway point and float32 then to even, 1 + 2^-11."""
    import ctypes
    import ctypes.util

    from edgec.kernel_ir.fma import fma32

    one = np.float64(1 + 2.0 ** -12)
    assert fma32(one, one, np.float64(2.0 ** -80)) == np.float32(1 + 2.0 ** -11 + 2.0 ** -23)
    assert fma32(-one, one, np.float64(-(2.0 ** -80))) == \
        np.float32(-(1 + 2.0 ** -11 + 2.0 ** -23))
    assert np.float32(one * one + 2.0 ** -80) == np.float32(1 + 2.0 ** -11)  # twice rounded
    # in the subnormal range, where float32's spacing is 2^-149: the float64 sum rounds onto
    # (2^22 + 1.5) 2^-149, halfway, and then to even; the exact sum is below it
    sa, sb = np.float32(2.0 ** -75 * (1 + 2.0 ** -23)), np.float32(2.0 ** -75 * (1 - 2.0 ** -23))
    sc = np.float32((2 ** 22 + 1) * 2.0 ** -149)
    assert np.float32(np.float64(sa) * sb + sc).view(np.uint32) == 0x400002  # twice rounded
    assert fma32(np.float64(sa), np.float64(sb), np.float64(sc)).view(np.uint32) == 0x400001

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.fmaf.restype = ctypes.c_float
    libm.fmaf.argtypes = [ctypes.c_float] * 3
    rng = np.random.default_rng(0)
    n = 3000
    a = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    b = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    c = (rng.standard_normal(n) * 2.0 ** rng.integers(-60, 20, n)).astype(np.float32)
    c[:500] = -(a[:500].astype(np.float64) * b[:500]).astype(np.float32)  # cancelling
    a[500:800] *= np.float32(2.0 ** -60)  # results in the subnormal range
    b[500:800] *= np.float32(2.0 ** -60)
    c[500:800] = np.float32(2.0 ** -140) * rng.integers(-9, 9, 300).astype(np.float32)
    a[799], b[799], c[799] = sa, sb, sc
    u = (1 + rng.integers(1, 2 ** 11, 400) * 2.0 ** -12).astype(np.float32)  # halfway sums
    a[800:1200], b[800:1200] = u, u
    c[800:1200] = (2.0 ** -80 * rng.choice([-1, 1, 0], 400)).astype(np.float32)
    got = fma32(a.astype(np.float64), b.astype(np.float64), c.astype(np.float64))
    want = np.array([libm.fmaf(x, y, z) for x, y, z in zip(a, b, c)], np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    twice = (a.astype(np.float64) * b + c).astype(np.float32)
    assert (twice != want).sum() > 20  # the cases reach the double rounding
