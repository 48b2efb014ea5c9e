"""Vector kernel IR through the C renderer: small kernels built with KernelBuilder (vector
loads with masked tails, broadcasts, fma, lane-wise arithmetic and selects, horizontal
reductions, unrolled and parallel loops, micro-kernel calls, CSR iteration), compiled with gcc
and run through ctypes against numpy.

Every kernel builder takes the lane count L, so one definition gives three builds, with the
flags of their x86 targets: AVX2 (L=8), scalar C99 (isa None, L=1) and AVX-512 (L=16). All three
run where the CPU has AVX-512; elsewhere (qemu-user's TCG has no AVX-512 either) the AVX-512
build is rendered and compiled with -Wall -Werror only.
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest
from harness import isa_builds, machine_flags

from edgec.codegen.renderers.c import CRenderer
from edgec.codegen.renderers.c_isas import VECTOR_ISAS, VectorISA
from edgec.ir.dtypes import DType
from edgec.kernel_ir.kernel import (
    INDEX,
    Kernel,
    KernelBuilder,
    Loop,
    Ptr,
    broadcast,
    fma,
    hreduce,
    maximum,
    minimum,
    select,
    vload,
    walk,
)
from edgec.lowering import microkernels as mk
from edgec.runtime import C_DIR

F32, I32 = DType.F32, DType.I32
CFLAGS = ["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror"]
# (ISA, gcc flags) of the builds that run on this machine
RUNNABLE = isa_builds()


def lanes_of(isa: VectorISA | None) -> int:
    return isa.lanes(F32) if isa else 1


# -- building and running C ------------------------------------------------------------------

def c_source(kernels: list[Kernel], isa: VectorISA | None, threads: str | None = None) -> str:
    """One C file: the kernels (their callees first, each once) with the ISA's header and
    helper headers; `threads` "pool" or "single" includes the runtime's thread pool and exports
    set_threads(n)."""
    r = CRenderer(isa)
    order: dict[str, Kernel] = {}
    for k in kernels:
        for c in k.callees() + [k]:
            order.setdefault(c.name, c)
    head = ["#include <math.h>", "#include <stdbool.h>", "#include <stddef.h>",
            "#include <stdint.h>", '#include "edgec_runtime.h"']
    if threads == "single":
        head.insert(0, "#define EDGEC_SINGLE_THREADED 1")
    if threads:
        head.append('#include "edgec_threads.h"')
    if isa:
        head += [f"#include <{isa.header}>", *(f'#include "{h}"' for h in isa.helpers)]
    # the kernels are static functions; exported here so that ctypes finds them
    body = [r.kernel(k).replace("static void", "void") for k in order.values()]
    if threads:
        body.append("void set_threads(int n)\n{\n    edgec_set_num_threads(n);\n}")
    return "\n".join(head) + "\n" + "\n\n".join(body) + "\n"


def gcc(tmp_path: Path, src: str, flags: list[str], out: str, extra: list[str]) -> Path:
    path = tmp_path / f"{out}.c"
    path.write_text(src)
    target = tmp_path / out
    res = subprocess.run(["gcc", *CFLAGS, *flags, f"-I{C_DIR}", str(path), "-o", str(target),
                          *extra], capture_output=True, text=True)
    assert res.returncode == 0, f"gcc {' '.join(flags)} failed:\n{res.stderr}\n{src}"
    return target


def build(tmp_path: Path, kernels: list[Kernel], isa: VectorISA | None, flags: list[str],
          tag: str, threads: str | None = None) -> ctypes.CDLL:
    so = gcc(tmp_path, c_source(kernels, isa, threads), flags, f"{tag}.so",
             ["-shared", "-fPIC", "-lm", *(["-pthread"] if threads == "pool" else [])])
    return ctypes.CDLL(str(so))


C_SCALARS = {INDEX: ctypes.c_ssize_t, F32: ctypes.c_float, I32: ctypes.c_int32}


def function(lib: ctypes.CDLL, k: Kernel):
    """The C function of kernel `k`, called with numpy arrays for buffers and numbers for
    scalar parameters, in the kernel's parameter order."""
    fn = getattr(lib, k.name)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p if hasattr(p, "shape") else C_SCALARS[p.dtype]
                   for p in k.params]

    def call(*args):
        for a, p in zip(args, k.params):
            if hasattr(p, "shape"):
                assert isinstance(a, np.ndarray) and a.flags.c_contiguous
        fn(*[a.ctypes.data if isinstance(a, np.ndarray) else a for a in args])

    return call


# -- the kernels, each for any lane count L --------------------------------------------------

SENTINEL = np.float32(-777.0)


def lanewise_kernel(L: int, n: int) -> Kernel:
    """Full vectors then a masked tail of n % L: fma, add/sub/mul/div/max/min with a
    broadcast scalar, and a select on each vector comparison. Outputs are (9, n + L); the
    L elements past n must keep their sentinel (the tail store is masked)."""
    kb = KernelBuilder("lanewise", "lane-wise vector ops")
    x, w = kb.input("x", F32, (n,)), kb.input("w", F32, (n,))
    s = kb.input("s", F32, (1,))
    y = kb.output("y", F32, (15, n + L))
    full, tail = n // L, n % L
    row = n + L

    def body(at, count):
        xv = kb.local("xv", vload(x, at, L, count))
        wv = kb.local("wv", vload(w, at, L, count))
        sv = kb.local("sv", broadcast(s[0], L))
        outs = [fma(xv, wv, sv), xv + sv, xv - wv, xv * 0.5, xv / wv, maximum(xv, wv),
                minimum(xv, sv)]
        outs += [select(op(xv, wv), xv, wv * 2.0) for op in (
            lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b,
            lambda a, b: a.eq(b), lambda a, b: a.ne(b))]
        outs += [select(xv > 0.0, xv, 0.0), fma(xv, 3.0, wv)]
        for j, v in enumerate(outs):
            kb.store(y, j * row + at, v, count)

    with kb.loop(full, "c") as c:
        body(c * L, None)
    if tail:
        body(full * L, tail)
    return kb.build()


def lanewise_reference(x, w, s) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        xd, wd = x.astype(np.float64), w.astype(np.float64)
        outs = [(xd * wd + s).astype(np.float32), x + s, x - w, x * np.float32(0.5), x / w,
                np.maximum(x, w), np.minimum(x, s)]
        outs += [np.where(c, x, w * np.float32(2)) for c in (x < w, x <= w, x > w, x >= w,
                                                            x == w, x != w)]
        outs += [np.where(x > 0, x, np.float32(0)), (xd * 3 + wd).astype(np.float32)]
    return outs


def reduce_kernel(L: int, rows: int, cols: int) -> Kernel:
    """Per row: the sum (vector accumulator, masked tail, hreduce add), max and min
    (vector accumulators over full vectors, hreduce, then the tail as scalars), and a dot
    product whose vector loop is unrolled."""
    kb = KernelBuilder("rowreduce", "row sums, maxima, minima and dot products")
    x = kb.input("x", F32, (rows, cols))
    v = kb.input("v", F32, (cols,))
    y = kb.output("y", F32, (4, rows))
    full, tail = cols // L, cols % L
    with kb.loop(rows, "r") as r:
        base = r * cols
        acc = kb.local("acc", broadcast(0.0, L))
        hi = kb.local("hi", broadcast(-np.inf, L))
        lo = kb.local("lo", broadcast(np.inf, L))
        dot = kb.local("dot", broadcast(0.0, L))
        with kb.loop(full, "c") as c:
            xv = kb.local("xv", vload(x, base + c * L, L))
            kb.assign(acc, acc + xv)
            kb.assign(hi, maximum(hi, xv))
            kb.assign(lo, minimum(lo, xv))
        with kb.loop(full, "u", kind="unroll") as u:
            kb.assign(dot, fma(vload(x, base + u * L, L), vload(v, u * L, L), dot))
        if tail:
            at = base + full * L
            kb.assign(acc, acc + vload(x, at, L, tail))
            kb.assign(dot, fma(vload(x, at, L, tail), vload(v, full * L, L, tail), dot))
        m = kb.local("m", hreduce("max", hi))
        n = kb.local("n", hreduce("min", lo))
        with kb.loop(tail, "t") as t:
            kb.assign(m, maximum(m, x[base + full * L + t]))
            kb.assign(n, minimum(n, x[base + full * L + t]))
        kb.store(y, r, hreduce("add", acc))
        kb.store(y, rows + r, m)
        kb.store(y, 2 * rows + r, n)
        kb.store(y, 3 * rows + r, hreduce("add", dot))
    return kb.build()


def axpy_microkernel(L: int) -> Kernel:
    """y[0:n] = alpha * x[0:n] + y[0:n] (+ shift), L at a time with a masked tail: pointer
    params, an index and two float scalar params; calls a second micro-kernel for the tail."""
    tail = None
    if L > 1:  # a scalar build has no tail (n % 1 == 0)
        tk = KernelBuilder(f"mk_axpy_tail_x{L}", "the masked tail of axpy")
        tx, ty = tk.pointer("x", F32), tk.pointer("y", F32, "out")
        tn, ta = tk.scalar("n"), tk.scalar("alpha", F32)
        tk.store(ty, 0, fma(broadcast(ta, L), vload(tx, 0, L, tn), vload(ty, 0, L, tn)), tn)
        tail = tk.build()

    kb = KernelBuilder(f"mk_axpy_x{L}", "y += alpha x + shift")
    x, y = kb.pointer("x", F32), kb.pointer("y", F32, "out")
    n = kb.scalar("n")
    alpha, shift = kb.scalar("alpha", F32), kb.scalar("shift", F32)
    full = kb.local("full", n // L)
    with kb.loop(full, "j") as j:
        yv = vload(y, j * L, L)
        kb.store(y, j * L, fma(broadcast(alpha, L), vload(x, j * L, L), yv) + shift)
    if tail is not None:
        rest = kb.local("rest", n - full * L)
        with kb.if_(rest > 0):
            kb.call(tail, Ptr(x, full * L), Ptr(y, full * L), rest, alpha)
            with kb.loop(rest, "t") as t:  # the shift of the tail, as scalars
                at = full * L + t
                kb.store(y, at, y[at] + shift)
    return kb.build()


def axpy_driver(L: int, rows: int, cols: int) -> Kernel:
    """Row r of Y (offset by `off` columns) += a[r] * X row r + 0.25, through the
    micro-kernel with (buffer, offset) pairs, a Ptr, scalar expressions and numbers."""
    mkern = axpy_microkernel(L)
    kb = KernelBuilder("axpy_rows", "rows of Y += a[r] X[r] + 0.25")
    x = kb.input("x", F32, (rows, cols))
    a = kb.input("a", F32, (rows,))
    y = kb.output("y", F32, (rows, cols + 3))
    off = kb.scalar("off")
    with kb.loop(rows, "r") as r:
        kb.call(mkern, (x, r * cols), Ptr(y, r * (cols + 3) + off), cols - off, a[r], 0.25)
    return kb.build()


def spmv_kernel(L: int, rows: int, ncols: int, nnz: int) -> Kernel:
    """y = A @ x (CSR, scalar) and Y = A @ X for L right-hand sides (X [ncols, L], one
    vector per stored entry): both iterate the stored entries of a row with kb.csr."""
    kb = KernelBuilder("spmv", "CSR sparse matrix times vector and times L vectors")
    rowptr = kb.input("rowptr", I32, (rows + 1,))
    colidx = kb.input("colidx", I32, (max(nnz, 1),))
    vals = kb.input("vals", F32, (max(nnz, 1),))
    x = kb.input("x", F32, (ncols,))
    xm = kb.input("xm", F32, (ncols, L))
    y = kb.output("y", F32, (rows,))
    ym = kb.output("ym", F32, (rows, L))
    with kb.loop(rows, "r") as r:
        acc = kb.local("acc", 0.0)
        vacc = kb.local("vacc", broadcast(0.0, L))
        with kb.csr(rowptr, colidx, r) as (k, col):
            kb.assign(acc, fma(vals[k], x[col], acc))
            kb.assign(vacc, fma(broadcast(vals[k], L), vload(xm, col * L, L), vacc))
        kb.store(y, r, acc)
        kb.store(ym, r * L, vacc)
    return kb.build()


def int_kernel(L: int, n: int) -> Kernel:
    """32-bit integer vectors: y = max(a * b + a, b) - 1 and the lane sum of a * b."""
    kb = KernelBuilder("intvec", "int32 vectors")
    a, b = kb.input("a", I32, (n,)), kb.input("b", I32, (n,))
    y = kb.output("y", I32, (n,))
    s = kb.output("s", I32, (1,))
    acc = kb.local("acc", broadcast(0, L, I32))
    with kb.loop(n // L, "c") as c:
        av, bv = vload(a, c * L, L), vload(b, c * L, L)
        kb.store(y, c * L, maximum(av * bv + av, bv) - broadcast(1, L, I32))
        kb.assign(acc, acc + av * bv)
    kb.store(s, 0, hreduce("add", acc))
    return kb.build()


def parallel_kernel(L: int, rows: int, cols: int) -> Kernel:
    """A top-level parallel loop over rows (outlined onto the thread pool), its body a vector
    loop with the loop's own locals: y[r, :] = relu(x[r, :] * scale[r] + r)."""
    kb = KernelBuilder("par_rows", "parallel rows")
    x = kb.input("x", F32, (rows, cols))
    sc = kb.input("scale", F32, (rows,))
    y = kb.output("y", F32, (rows, cols))
    with kb.loop(rows, "r", kind="parallel") as r:
        k = kb.local("k", broadcast(sc[r], L))
        add = kb.local("add", broadcast(r.cast(F32), L))
        with kb.loop(cols // L, "c") as c:
            v = fma(vload(x, r * cols + c * L, L), k, add)
            kb.store(y, r * cols + c * L, maximum(v, 0.0))
    return kb.build()


# -- the runs --------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=list(RUNNABLE))
def built(request, tmp_path_factory):
    """(L, kernels by name, C functions by name) of one runnable build of every kernel."""
    isa, flags = RUNNABLE[request.param]
    L = lanes_of(isa)
    ks = {"lanewise": lanewise_kernel(L, 3 * L + 5 if L > 1 else 13),
          "rowreduce": reduce_kernel(L, 4, 2 * L + 3 if L > 1 else 11),
          "axpy_rows": axpy_driver(L, 3, 2 * L + 7 if L > 1 else 9),
          "spmv": spmv_kernel(L, 6, 9, 14),
          "intvec": int_kernel(L, 4 * L)}
    lib = build(tmp_path_factory.mktemp(request.param), list(ks.values()), isa, flags,
                request.param)
    return L, ks, {name: function(lib, k) for name, k in ks.items()}


def test_lanewise_ops_and_masked_tail(built):
    L, ks, fns = built
    n = ks["lanewise"].params[0].shape[0]
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    w[::4] = x[::4]  # equal operands for the eq/le/ge selects
    x[3], w[5] = np.nan, np.nan  # ordered comparisons are false on NaN, != is true
    s = np.array([0.75], np.float32)
    y = np.full((15, n + L), SENTINEL, np.float32)
    fns["lanewise"](x, w, s, y)
    ok = ~(np.isnan(x) | np.isnan(w))
    for j, want in enumerate(lanewise_reference(x, w, s[0])):
        got = y[j, :n]
        if j in (5, 6):  # max/min of a NaN: maxps returns its second operand, fmaxf the number
            got, want = got[ok], want[ok]
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=0, equal_nan=True,
                                   err_msg=f"output {j}")
    assert (y[:, n:] == SENTINEL).all(), "a masked store wrote past its count"


def test_reductions_hreduce_and_unrolled_loop(built):
    L, ks, fns = built
    assert any(isinstance(s, Loop) and s.kind == "unroll" for s in walk(ks["rowreduce"].body))
    assert '_Pragma("GCC unroll 64")' in CRenderer(VECTOR_ISAS["avx2"]).kernel(
        reduce_kernel(8, 4, 19))
    rows, cols = ks["rowreduce"].params[0].shape
    rng = np.random.default_rng(2)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x[1] -= 5.0  # all negative: the zeros of a masked load must not reach the max
    x[2] += 5.0  # all positive: nor the min
    v = rng.standard_normal(cols).astype(np.float32)
    y = np.zeros((4, rows), np.float32)
    fns["rowreduce"](x, v, y)
    np.testing.assert_allclose(y[0], x.sum(1), rtol=1e-5)
    np.testing.assert_array_equal(y[1], x.max(1))
    np.testing.assert_array_equal(y[2], x.min(1))
    np.testing.assert_allclose(y[3], x @ v, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("off", [0, 1, 5])
def test_microkernel_call_with_pointer_offsets_and_scalars(built, off):
    L, ks, fns = built
    rows, cols = ks["axpy_rows"].params[0].shape
    rng = np.random.default_rng(3 + off)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    a = rng.standard_normal(rows).astype(np.float32)
    y0 = rng.standard_normal((rows, cols + 3)).astype(np.float32)
    y = y0.copy()
    fns["axpy_rows"](x, a, y, off)
    want = y0.copy()
    m = cols - off
    want[:, off:off + m] = (a[:, None].astype(np.float64) * x[:, :m] + y0[:, off:off + m]
                            ).astype(np.float32) + np.float32(0.25)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


def test_csr_spmv(built):
    L, ks, fns = built
    rows, ncols, nnz = 6, 9, 14
    rng = np.random.default_rng(4)
    counts = np.array([3, 0, 5, 1, 0, 5])  # empty rows too
    assert counts.sum() == nnz
    rowptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    colidx = np.concatenate([np.sort(rng.choice(ncols, c, replace=False))
                             for c in counts]).astype(np.int32)
    vals = rng.standard_normal(nnz).astype(np.float32)
    dense = np.zeros((rows, ncols), np.float32)
    dense[np.repeat(np.arange(rows), counts), colidx] = vals
    x = rng.standard_normal(ncols).astype(np.float32)
    xm = rng.standard_normal((ncols, L)).astype(np.float32)
    y = np.full(rows, SENTINEL, np.float32)
    ym = np.full((rows, L), SENTINEL, np.float32)
    fns["spmv"](rowptr, colidx, vals, x, xm, y, ym)
    np.testing.assert_allclose(y, dense @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ym, dense @ xm, rtol=1e-5, atol=1e-6)


def test_int32_vectors(built):
    L, ks, fns = built
    n = ks["intvec"].params[0].shape[0]
    rng = np.random.default_rng(5)
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-1000, 1000, n).astype(np.int32)
    y = np.zeros(n, np.int32)
    s = np.zeros(1, np.int32)
    fns["intvec"](a, b, y, s)
    np.testing.assert_array_equal(y, np.maximum(a * b + a, b) - 1)
    assert s[0] == (a * b).sum()


def gemm_driver(L: int) -> Kernel:
    """The library's gemm tile (3 rows x 2 vectors of L, residual, Relu) called directly:
    C[i, :ncols] = relu(A @ Bp + bias + Z), params (a, bp, bias, z, c, ncols)."""
    mr, nv, k = 3, 2, 7
    width = nv * L
    tile = mk.gemm_tile(L, mr, nv, True, "Relu", lambda v: maximum(v, 0.0))
    kb = KernelBuilder("gemm_drive")
    a = kb.input("a", F32, (mr, k + 2))
    bp = kb.input("bp", F32, (k, width))
    bias = kb.input("bias", F32, (width,))
    z = kb.input("z", F32, (mr, width + 1))
    c = kb.output("c", F32, (mr, width + 1))
    kb.call(tile, a, bp, bias, z, c, k, k + 2, width + 1, kb.scalar("ncols"))
    return kb.build()


def check_gemm_driver(fn, L: int) -> None:
    """gemm_driver(L) built and wrapped as `fn` against numpy, for stored widths from the
    whole panel down to one column: nothing written past ncols."""
    mr, width, k = 3, 2 * L, 7
    rng = np.random.default_rng(6)
    A = rng.standard_normal((mr, k + 2)).astype(np.float32)
    B = rng.standard_normal((k, width)).astype(np.float32)
    bi = rng.standard_normal(width).astype(np.float32)
    Z = rng.standard_normal((mr, width + 1)).astype(np.float32)
    full = np.maximum(A[:, :k] @ B + bi + Z[:, :width], 0)
    for ncols in sorted({n for n in (width, width - 1, L + 3, L + 1, L, 5, 1) if 1 <= n <= width}):
        C = np.full((mr, width + 1), SENTINEL, np.float32)
        fn(A, B, bi, Z, C, ncols)
        np.testing.assert_allclose(C[:, :ncols], full[:, :ncols], rtol=1e-5, atol=1e-5)
        assert (C[:, ncols:] == SENTINEL).all(), f"ncols={ncols}: stored past the last column"


def test_gemm_microkernel_with_remainder_columns(built, tmp_path):
    L = built[0]  # at L = 1 (scalar C) the masked tail is a guarded scalar store
    k = gemm_driver(L)
    isa, flags = next(v for v in RUNNABLE.values() if lanes_of(v[0]) == L)
    check_gemm_driver(function(build(tmp_path, [k], isa, flags, "gemm"), k), L)


@pytest.mark.parametrize("mode,threads", [("pool", 1), ("pool", 2), ("pool", 3), ("pool", 7),
                                          ("single", 3)])
def test_parallel_loop_on_thread_pool(tmp_path, mode, threads):
    # one library per thread count: each has its own pool, set once (changing the count of a
    # running pool is tested in test_threads.py)
    isa, flags = RUNNABLE["avx2"]
    L = lanes_of(isa)
    cases = [(1, 2 * L), (5, 3 * L), (13, L)]
    ks = []
    for rows, cols in cases:
        k = parallel_kernel(L, rows, cols)
        ks.append(Kernel(f"par_rows_{rows}", k.params, k.body, k.doc))
    text = CRenderer(isa).kernel(ks[1])
    assert "edgec_parallel_for(par_rows_5_task" in text
    lib = build(tmp_path, ks, isa, flags, mode, threads=mode)
    lib.set_threads.argtypes = [ctypes.c_int]
    lib.set_threads(threads)
    rng = np.random.default_rng(7)
    for _ in range(3):
        for (rows, cols), k in zip(cases, ks):
            x = rng.standard_normal((rows, cols)).astype(np.float32)
            sc = rng.standard_normal(rows).astype(np.float32)
            y = np.full((rows, cols), SENTINEL, np.float32)
            function(lib, k)(x, sc, y)
            want = np.maximum(x.astype(np.float64) * sc[:, None]
                              + np.arange(rows)[:, None], 0).astype(np.float32)
            np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6, err_msg=f"{rows} rows")


# -- AVX-512: compiled on every host (and run by `built` where the CPU has AVX-512) ---------

def test_avx512_kernels_compile(tmp_path):
    # every warning an error, on every host: an AVX2 host cannot run them
    isa = VECTOR_ISAS["avx512"]
    L = lanes_of(isa)
    assert L == 16
    relu = lambda v: maximum(v, 0.0)  # noqa: E731
    kernels = [lanewise_kernel(L, 3 * L + 5), reduce_kernel(L, 4, 2 * L + 3),
               axpy_driver(L, 3, 2 * L + 7), spmv_kernel(L, 6, 9, 14), int_kernel(L, 4 * L),
               parallel_kernel(L, 5, 2 * L)]
    gk = KernelBuilder("gemm_drive")
    bufs = [gk.input(n, F32, (64,)) for n in ("a", "bp", "bias", "z")]
    c = gk.output("c", F32, (64,))
    gk.call(mk.gemm_tile(L, 4, 4, True, "Relu", relu), *bufs, c, 2, 2, 16, gk.scalar("n"))
    kernels.append(gk.build())
    src = c_source(kernels, isa, threads="pool")
    for op in ("_mm512_fmadd_ps", "_mm512_maskz_loadu_ps", "_mm512_mask_storeu_ps",
               "_mm512_reduce_add_ps", "_mm512_reduce_max_ps", "_mm512_mask_blend_ps",
               "_mm512_mullo_epi32", "_mm512_reduce_add_epi32"):
        assert op in src, op
    obj = gcc(tmp_path, src, [*machine_flags("x86-avx512"), "-c"], "avx512.o", [])
    assert obj.stat().st_size > 0


# -- errors ----------------------------------------------------------------------------------

def _vector_local_kernel(lanes: int) -> Kernel:
    kb = KernelBuilder("vk")
    x, y = kb.input("x", F32, (32,)), kb.output("y", F32, (32,))
    v = kb.local("v", vload(x, 0, lanes))
    kb.store(y, 0, v * 2.0)
    return kb.build()


def test_vector_op_without_isa_is_a_clear_error():
    with pytest.raises(ValueError, match="8-lane .* vector with no vector ISA"):
        CRenderer().kernel(_vector_local_kernel(8))
    with pytest.raises(ValueError, match="16-lane .* vector with the avx2 ISA"):
        CRenderer(VECTOR_ISAS["avx2"]).kernel(_vector_local_kernel(16))
    kb = KernelBuilder("vs")
    x, y = kb.input("x", F32, (8,)), kb.output("y", F32, (8,))
    kb.store(y, 0, vload(x, 0, 8) + 1.0)
    with pytest.raises(ValueError, match="vector"):
        CRenderer().kernel(kb.build())
    kb = KernelBuilder("vi")
    a, s = kb.input("a", I32, (8,)), kb.output("s", I32, (8,))
    kb.store(s, 0, vload(a, 0, 8, 3))  # AVX2 has no masked int32 load in the table
    with pytest.raises(ValueError, match="no load_n of .* vectors in avx2 code"):
        CRenderer(VECTOR_ISAS["avx2"]).kernel(kb.build())


def test_parallel_loop_reading_an_outer_local_is_an_error():
    kb = KernelBuilder("bad")
    x, y = kb.input("x", F32, (4, 8)), kb.output("y", F32, (4, 8))
    s = kb.local("s", x[0] * 2.0)
    with kb.loop(4, "r", kind="parallel") as r, kb.loop(8, "c") as c:
        kb.store(y, r * 8 + c, x[r * 8 + c] + s)
    with pytest.raises(ValueError, match=r"parallel loop r reads \['s'\], defined outside"):
        CRenderer().kernel(kb.build())


def test_parallel_loop_must_be_top_level_and_kinds_are_checked():
    kb = KernelBuilder("nested")
    with kb.loop(4, "i"), pytest.raises(ValueError, match="top-level"):
        with kb.loop(4, "j", kind="parallel"):
            pass
    with pytest.raises(ValueError, match="unknown loop kind"):
        with kb.loop(4, "j", kind="vectorize"):
            pass


def test_call_checks_arguments():
    mkern = axpy_microkernel(8)
    kb = KernelBuilder("caller")
    x = kb.input("x", F32, (8,))
    xi = kb.input("xi", I32, (8,))
    with pytest.raises(TypeError, match="takes 5 arguments, got 2"):
        kb.call(mkern, x, x)
    with pytest.raises(TypeError, match="parameter x needs a f32 pointer"):
        kb.call(mkern, xi, x, 8, 1.0, 0.0)


def test_one_lane_masked_tail(tmp_path):
    # A kernel written for any L (as gemm_tile is) builds at L = 1 for a scalar target; its
    # masked tail then has count 0 or 1: y[0] = 2 x[0] only when n is 1.
    kb = KernelBuilder("tail1")
    x, y = kb.input("x", F32, (1,)), kb.output("y", F32, (1,))
    n = kb.scalar("n")
    kb.store(y, 0, vload(x, 0, 1, n) * 2.0, n)
    k = kb.build()
    fn = function(build(tmp_path, [k], None, [], "tail1"), k)
    x_ = np.array([3.0], np.float32)
    for count, want in ((0, SENTINEL), (1, 6.0)):
        y_ = np.array([SENTINEL], np.float32)
        fn(x_, y_, count)
        assert y_[0] == want, f"count {count}"


def prefetch_kernel(n: int, lines: int) -> Kernel:
    """y[0] = sum(x) after asking for `lines` lines of x from element `start` on, as the
    blocked convolution asks for its next weights (a prefetch changes no value)."""
    from edgec.lowering.kernels.blocked import prefetch_lines

    kb = KernelBuilder("prefetch_sum")
    x, y = kb.input("x", F32, (n,)), kb.output("y", F32, (1,))
    start = kb.scalar("start")
    prefetch_lines(kb, x, start, lines, 16)
    acc = kb.local("acc", 0.0)
    with kb.loop(n, "i") as i:
        kb.assign(acc, acc + x[i])
    kb.store(y, 0, acc)
    return kb.build()


def test_prefetch_asks_for_whole_lines_and_none_past_the_buffer(tmp_path):
    # EDGEC_PREFETCH is redefined to log each address it is given; the log must hold one
    # address per 16 floats from `start`, `lines` of them, cut at the end of x.
    n, lines = 100, 4
    log = """static const void *pf_log[64];
static int pf_count;
#define EDGEC_PREFETCH(p) (pf_log[pf_count++] = (const void *)(p))
int logged(const float *base, ptrdiff_t *out)
{
    for (int i = 0; i < pf_count; ++i)
        out[i] = (const float *)pf_log[i] - base;
    int n = pf_count;
    pf_count = 0;
    return n;
}
"""
    k = prefetch_kernel(n, lines)
    src = c_source([k], None).replace('#include <stdint.h>', '#include <stdint.h>\n' + log)
    lib = ctypes.CDLL(str(gcc(tmp_path, src, [], "pf.so", ["-shared", "-fPIC"])))
    fn = function(lib, k)
    lib.logged.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    x = np.arange(n, dtype=np.float32)
    for start, want in ((0, [0, 16, 32, 48]), (60, [60, 76, 92]), (99, [99]), (100, []),
                        (130, [])):
        y = np.zeros(1, np.float32)
        fn(x, y, start)
        assert y[0] == x.sum()
        got = np.zeros(64, np.int64)
        count = lib.logged(x.ctypes.data, got.ctypes.data)
        assert list(got[:count]) == want, f"start {start}"
