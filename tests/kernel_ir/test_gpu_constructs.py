"""The kernel IR's constructs for GPUs and FPGAs, checked before any GPU or FPGA renderer:
grid and block loop bindings, shared-memory tiles, barriers, pipelined loops, streams.

A tiled GEMM written once in the kernel IR (a grid of T x T output tiles; a block of T x T
threads that stage tiles of A and B in shared memory between two barriers) runs correctly
through the interpreter, whose threads really wait for each other, through the interpreter
again after `split_barriers` (the form a CPU runs: phases, the accumulator promoted to an array
with an element per thread), and through the C renderer, compiled by gcc and run, all against
numpy. Then streams between two kernels, a pipelined loop, and the errors a malformed block
gets.
"""

from __future__ import annotations

import ctypes
import subprocess
from collections import deque

import numpy as np
import pytest
from kernel_ir.test_vector_ir import c_source

from edgec.errors import EdgecError
from edgec.ir.dtypes import DType
from edgec.kernel_ir.interpreter import KernelError, run_kernel
from edgec.kernel_ir.kernel import Alloc, Barrier, Kernel, KernelBuilder, walk
from edgec.kernel_ir.passes import split_barriers
from edgec.kernel_ir.printer import print_kernel
from edgec.runtime import C_DIR

F32 = DType.F32


def tiled_gemm(m: int, n: int, k: int, t: int) -> Kernel:
    """C[m, n] = A[m, k] @ B[k, n], every dimension a multiple of the tile t."""
    kb = KernelBuilder("tiled_gemm", "C = A @ B by T x T tiles staged in shared memory")
    a, b = kb.input("a", F32, (m, k)), kb.input("b", F32, (k, n))
    c = kb.output("c", F32, (m, n))
    with kb.loop(m // t, "by", "grid") as by, kb.loop(n // t, "bx", "grid") as bx:
        at = kb.alloc("at", F32, (t, t), "shared")
        bt = kb.alloc("bt", F32, (t, t), "shared")
        with kb.loop(t, "ty", "block") as ty, kb.loop(t, "tx", "block") as tx:
            acc = kb.local("acc", 0.0)
            with kb.loop(k // t, "kt") as kt:
                kb.store(at, ty * t + tx, a.at(by * t + ty, kt * t + tx))
                kb.store(bt, ty * t + tx, b.at(kt * t + ty, bx * t + tx))
                kb.barrier()
                with kb.loop(t, "kk") as kk:
                    kb.assign(acc, acc + at[ty * t + kk] * bt[kk * t + tx])
                kb.barrier()
            kb.store(c, (by * t + ty) * n + bx * t + tx, acc)
    return kb.build()


M, N, K, T = 8, 12, 16, 4


def operands():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((M, K)).astype(np.float32),
            rng.standard_normal((K, N)).astype(np.float32))


def test_tiled_gemm_on_the_interpreter_with_real_barriers():
    a, b = operands()
    c = np.full((M, N), np.nan, np.float32)
    run_kernel(tiled_gemm(M, N, K, T), a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_split_into_phases_runs_the_same():
    k = tiled_gemm(M, N, K, T)
    split = split_barriers(k)
    assert not any(isinstance(s, Barrier) for s in walk(split.body))
    # the accumulator lives across the barriers: an array of T * T, one element a thread
    allocs = [s.buf for s in walk(split.body) if isinstance(s, Alloc)]
    assert [(b.name, b.numel, b.space) for b in allocs] == [
        ("at", T * T, "shared"), ("bt", T * T, "shared"), ("acc_t", T * T, "local")]
    text = print_kernel(split)
    # three phases in the kt loop's frame: stage, multiply, store
    assert text.count("for ty < 4 block") == 4, text
    a, b = operands()
    c = np.full((M, N), np.nan, np.float32)
    run_kernel(split, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_tiled_gemm_through_the_c_renderer(tmp_path):
    k = tiled_gemm(M, N, K, T)
    src = tmp_path / "gemm.c"
    src.write_text(c_source([k], None))
    so = tmp_path / "gemm.so"
    res = subprocess.run(["gcc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{C_DIR}",
                          "-shared", "-fPIC", str(src), "-o", str(so)], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr + src.read_text()
    assert "/* shared */" in src.read_text() and "/* grid */" in src.read_text()
    a, b = operands()
    c = np.full((M, N), np.nan, np.float32)
    lib = ctypes.CDLL(str(so))
    lib.tiled_gemm(*(x.ctypes.data_as(ctypes.c_void_p) for x in (a, b, c)))
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_printed_form_shows_bindings_spaces_and_barriers():
    text = print_kernel(tiled_gemm(M, N, K, T))
    for line in ("  for by < 2 grid {", "      alloc at: f32[4, 4] shared",
                 "      for ty < 4 block {", "        for tx < 4 block {",
                 "            barrier"):
        assert line in text.splitlines(), (line, text)


# -- streams and pipelines ------------------------------------------------------------------

def producer(n: int) -> Kernel:
    kb = KernelBuilder("produce")
    x = kb.input("x", F32, (n,))
    s = kb.stream("s", F32, n, "out")
    with kb.loop(n, "i", "pipeline", ii=1) as i:
        kb.push(s, x[i] * 2.0)
    return kb.build()


def consumer(n: int) -> Kernel:
    kb = KernelBuilder("consume")
    s = kb.stream("s", F32, n, "in")
    y = kb.output("y", F32, (n,))
    with kb.loop(n, "i", "pipeline", ii=1) as i:
        v = kb.pop(s, "v")
        kb.store(y, i, v + 1.0)
    return kb.build()


def test_a_stream_between_two_pipelined_kernels():
    n = 6
    x = np.arange(n, dtype=np.float32)
    q: deque = deque()
    run_kernel(producer(n), x, q)
    assert list(q) == list(x * 2)
    y = np.zeros(n, np.float32)
    run_kernel(consumer(n), q, y)
    np.testing.assert_array_equal(y, x * 2 + 1)
    assert not q
    assert "for i < 6 pipeline ii 1 {" in print_kernel(producer(n))
    assert "out s: stream<f32, 6>" in print_kernel(producer(n))


def test_streams_through_the_c_renderer(tmp_path):
    n = 6
    main = f"""
#include <stdio.h>
int main(void)
{{
    float x[{n}], y[{n}], ring[{n}];
    edgec_stream s = {{ring, {n}, 0, 0}};
    for (int i = 0; i < {n}; ++i) x[i] = (float)i;
    produce(x, &s);
    consume(&s, y);
    for (int i = 0; i < {n}; ++i) printf("%g ", y[i]);
    return 0;
}}
"""
    src = tmp_path / "s.c"
    src.write_text(c_source([producer(n), consumer(n)], None) + main)
    exe = tmp_path / "s"
    res = subprocess.run(["gcc", "-O2", "-std=c99", "-Wall", "-Werror", f"-I{C_DIR}", str(src),
                          "-o", str(exe), "-lm"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert [float(v) for v in out.split()] == [2 * i + 1 for i in range(n)]


def test_stream_overflow_and_underflow_are_errors():
    with pytest.raises(KernelError, match="push into stream s, full with 6 values"):
        run_kernel(producer(6), np.zeros(6, np.float32), deque([1.0]))
    with pytest.raises(KernelError, match="pop from stream s, which is empty"):
        run_kernel(consumer(6), deque([1.0]), np.zeros(6, np.float32))


# -- malformed blocks --------------------------------------------------------------------------

def block_with(barrier_where: str) -> Kernel:
    kb = KernelBuilder("bad")
    y = kb.output("y", F32, (4,))
    with kb.loop(4, "t", "block") as t:
        if barrier_where == "divergent":
            with kb.if_(t < 2):
                kb.barrier()
        elif barrier_where == "thread loop":
            with kb.loop(t, "j"):
                kb.barrier()
        kb.store(y, t, 1.0)
    return kb.build()


def test_a_barrier_some_threads_skip_is_an_error():
    with pytest.raises(KernelError, match="did not all reach the same barriers"):
        run_kernel(block_with("divergent"), np.zeros(4, np.float32))
    with pytest.raises(EdgecError, match="an If holds a barrier but depends on"):
        split_barriers(block_with("divergent"))


def test_a_barrier_in_a_loop_whose_bounds_differ_between_threads_is_an_error():
    with pytest.raises(EdgecError, match=r"loop j holds a barrier but depends on \['t'\]"):
        split_barriers(block_with("thread loop"))


def test_a_barrier_outside_a_block_is_an_error():
    kb = KernelBuilder("lone")
    y = kb.output("y", F32, (1,))
    kb.barrier()
    kb.store(y, 0, 1.0)
    k = kb.build()
    with pytest.raises(KernelError, match="a barrier outside the threads of a block loop"):
        run_kernel(k, np.zeros(1, np.float32))
    with pytest.raises(EdgecError, match="a barrier outside any block loop"):
        split_barriers(k)


def test_loop_bindings_are_checked():
    kb = KernelBuilder("k")
    with pytest.raises(ValueError, match="unknown loop kind warp"), kb.loop(4, "i", "warp"):
        pass
    with pytest.raises(ValueError, match="shared or local memory"):
        kb.alloc("a", F32, (4,), "global")


def test_tiled_gemm_through_the_llvm_renderer(tmp_path):
    from codegen.test_llvm import build, function

    k = tiled_gemm(M, N, K, T)
    a, b = operands()
    c = np.full((M, N), np.nan, np.float32)
    function(build(tmp_path, [k], "tiled"), k)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
