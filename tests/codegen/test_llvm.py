"""The LLVM backend (renderers/llvm.py, `--backend llvm`) against numpy and onnxruntime.

Kernel IR feature by feature: the vector kernels of test_vector_ir.py (lane-wise ops with
masked tails, selects on vector compares, hreduce, unrolled loops, micro-kernel calls with
pointer offsets, CSR loops, int32 vectors, the GEMM tile, parallel loops on the pool at 1 and 2
threads) compiled by llvmlite at 8 lanes (AVX2), 1 lane (scalar) and, where the CPU has
AVX-512, 16 lanes, and run through ctypes,
plus scalar semantics the C renderer fixes (integer division and modulo truncate, casts, bool
bytes, shifts, math functions, C's lazy ?: and &&). Then whole models: the three benchmark
models and a small conv net against onnxruntime, the library's shape (one archive, header,
manifest) and an aarch64 object checked with the cross objdump.
"""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from convnets import onnxruntime_outputs, random_feeds, small_resnet
from harness import runs_here
from kernel_ir.test_int8 import check_mulshift, mulshift_kernel
from kernel_ir.test_vector_ir import (  # noqa: F401  (the imported tests run here on `built` below)
    SENTINEL,
    axpy_driver,
    check_gemm_driver,
    gemm_driver,
    int_kernel,
    lanewise_kernel,
    lanewise_reference,
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

import edgec
from edgec.codegen.renderers.llvm import LLVMRenderer
from edgec.ir.dtypes import DType
from edgec.kernel_ir.kernel import (
    INDEX,
    Kernel,
    KernelBuilder,
    binary,
    call,
    cast,
    const,
    maximum,
    select,
)
from edgec.lowering import microkernels as mk
from edgec.runtime import C_DIR
from edgec.targets.target import Target, get_target

F32, I32, I64, U8, BOOL = DType.F32, DType.I32, DType.I64, DType.U8, DType.BOOL
AVX2 = get_target("x86-avx2")
POOL = """#include "edgec_threads.h"
void pool_for(edgec_task task, void *ctx, ptrdiff_t n) { edgec_parallel_for(task, ctx, n); }
void set_threads(int n) { edgec_set_num_threads(n); }
"""
C_SCALARS = {INDEX: ctypes.c_int64, F32: ctypes.c_float, I32: ctypes.c_int32}


def build(tmp_path: Path, kernels: list[Kernel], tag: str, target: Target = AVX2
          ) -> ctypes.CDLL:
    """The kernels compiled by LLVM, linked with the thread pool into a shared object."""
    r = LLVMRenderer(target, "pool_for")
    for k in kernels:
        r.add(k)
    obj = tmp_path / f"{tag}.o"
    obj.write_bytes(r.compile(hidden=False))
    (tmp_path / f"{tag}_pool.c").write_text(POOL)
    so = tmp_path / f"{tag}.so"
    res = subprocess.run(["gcc", "-O2", "-fPIC", "-shared", f"-I{C_DIR}", f"{tag}_pool.c",
                          obj.name, "-o", so.name, "-lm", "-pthread"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return ctypes.CDLL(str(so))


def function(lib: ctypes.CDLL, k: Kernel):
    fn = getattr(lib, k.name)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p if hasattr(p, "shape") else C_SCALARS[p.dtype]
                   for p in k.params]
    return lambda *args: fn(*[a.ctypes.data if isinstance(a, np.ndarray) else a for a in args])


# -- vector kernel IR, feature by feature -----------------------------------------------------

# (lanes, target) of the LLVM builds this machine runs: AVX2, scalar and, on AVX-512 hosts, AVX-512
LLVM_BUILDS = {"avx2": (8, AVX2), "scalar": (1, AVX2)}
if runs_here("x86-avx512"):
    LLVM_BUILDS["avx512"] = (16, get_target("x86-avx512"))


@pytest.fixture(scope="module", params=list(LLVM_BUILDS))
def built(request, tmp_path_factory):
    """test_vector_ir's kernels built by LLVM at 8 lanes and 1 (and 16 where the CPU has
    AVX-512); the imported tests take it."""
    L, target = LLVM_BUILDS[request.param]
    ks = {"lanewise": lanewise_kernel(L, 3 * L + 5 if L > 1 else 13),
          "rowreduce": reduce_kernel(L, 4, 2 * L + 3 if L > 1 else 11),
          "axpy_rows": axpy_driver(L, 3, 2 * L + 7 if L > 1 else 9),
          "spmv": spmv_kernel(L, 6, 9, 14),
          "intvec": int_kernel(L, 4 * L)}
    lib = build(tmp_path_factory.mktemp(f"llvm{L}"), list(ks.values()), f"k{L}", target)
    return L, ks, {name: function(lib, k) for name, k in ks.items()}


@pytest.mark.parametrize("build_name", list(LLVM_BUILDS))
def test_mulshift_rounds_the_exact_product(build_name, tmp_path):
    L, target = LLVM_BUILDS[build_name]
    k = mulshift_kernel(L)
    check_mulshift(function(build(tmp_path, [k], f"ms{L}", target), k), L)


def test_gemm_microkernel_with_masked_columns(tmp_path):
    k = gemm_driver(8)
    check_gemm_driver(function(build(tmp_path, [k], "gemm"), k), 8)


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_loop_on_the_pool(tmp_path, threads):
    L = 8
    cases = [(1, 2 * L), (5, 3 * L), (13, L)]
    ks = [Kernel(f"par_rows_{rows}", *(lambda k: (k.params, k.body, k.doc))(
        parallel_kernel(L, rows, cols))) for rows, cols in cases]
    lib = build(tmp_path, ks, "par")
    lib.set_threads.argtypes = [ctypes.c_int]
    lib.set_threads(threads)
    rng = np.random.default_rng(7)
    for (rows, cols), k in zip(cases, ks):
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        sc = rng.standard_normal(rows).astype(np.float32)
        y = np.full((rows, cols), SENTINEL, np.float32)
        function(lib, k)(x, sc, y)
        want = np.maximum(x.astype(np.float64) * sc[:, None] + np.arange(rows)[:, None], 0)
        np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-6, atol=1e-6)


# -- scalar semantics the C renderer fixes -----------------------------------------------------

def scalar_kernel(n: int) -> Kernel:
    """Integer division and modulo (truncating), shifts, casts (float to int truncates, to
    bool is != 0, bool to float), bool bytes in and out, math calls, and a ?: and an && that
    guard an out-of-range load (C evaluates only the side it picks)."""
    kb = KernelBuilder("scalars")
    a, b = kb.input("a", I32, (n,)), kb.input("b", I32, (n,))
    f = kb.input("f", F32, (n,))
    m = kb.input("m", BOOL, (n,))
    yi = kb.output("yi", I32, (6, n))
    yf = kb.output("yf", F32, (16, n))
    yb = kb.output("yb", BOOL, (3, n))
    yu = kb.output("yu", U8, (n,))
    with kb.loop(n) as i:
        ai, bi, fi = a[i], b[i], f[i]
        for j, v in enumerate([ai // bi, ai % bi, binary("shr", ai, const(2, I64)),
                               cast(fi, I32), select(m[i], ai, bi),
                               select(i < n - 1, a[i + 1], const(-1, I32))]):
            kb.store(yi, j * n + i, v)
        outs = [call(fn, fi) for fn in ("exp", "tanh", "erf", "sqrt", "floor", "ceil", "round",
                                        "abs", "sign", "log1p", "atan", "sin")]
        outs += [call("pow", fi, 3.0), call("fmod", fi, 0.75), cast(m[i], F32),
                 cast(ai, F32) / 4.0]
        for j, v in enumerate(outs):
            kb.store(yf, j * n + i, v)
        kb.store(yb, i, cast(fi, BOOL))
        kb.store(yb, n + i, call("isnan", fi) | call("isinf", fi))
        kb.store(yb, 2 * n + i, (i < n - 1) & (a[i + 1] > 0))
        kb.store(yu, i, cast(cast(fi * 10.0, I32), U8))
    return kb.build()


def test_scalar_semantics(tmp_path):
    n = 16
    k = scalar_kernel(n)
    fn = function(build(tmp_path, [k], "scalars"), k)
    rng = np.random.default_rng(8)
    a = rng.integers(-50, 50, n).astype(np.int32)
    b = rng.integers(1, 7, n).astype(np.int32) * np.where(rng.random(n) < 0.5, -1, 1)
    b = b.astype(np.int32)
    f = (rng.standard_normal(n) * 3).astype(np.float32)
    f[:5] = [2.5, -2.5, 0.0, np.inf, np.nan]
    m = rng.random(n) < 0.5
    yi = np.zeros((6, n), np.int32)
    yf = np.zeros((16, n), np.float32)
    yb = np.zeros((3, n), np.bool_)
    yu = np.zeros(n, np.uint8)
    fn(a, b, f, m, yi, yf, yb, yu)
    trunc_div = (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)
    np.testing.assert_array_equal(yi[0], trunc_div)
    np.testing.assert_array_equal(yi[1], a - trunc_div * b)
    np.testing.assert_array_equal(yi[2], a >> 2)
    fin = np.isfinite(f)
    np.testing.assert_array_equal(yi[3][fin], np.trunc(f[fin]).astype(np.int32))
    np.testing.assert_array_equal(yi[4], np.where(m, a, b))
    np.testing.assert_array_equal(yi[5], np.append(a[1:], -1))
    with np.errstate(all="ignore"):
        import math

        want = [np.exp(f), np.tanh(f), np.array([math.erf(v) for v in f], np.float32),
                np.sqrt(f), np.floor(f), np.ceil(f), np.round(f), np.abs(f),
                np.where(np.isnan(f), 0, np.sign(f)),  # C: (x > 0) - (x < 0)
                np.log1p(f), np.arctan(f), np.sin(f), f.astype(np.float64) ** 3,
                np.fmod(f, np.float32(0.75)), m.astype(np.float32), a / np.float32(4)]
        for j, w in enumerate(want):
            np.testing.assert_allclose(yf[j], np.asarray(w, np.float32), rtol=2e-6, atol=1e-7,
                                       equal_nan=True, err_msg=f"float output {j}")
    np.testing.assert_array_equal(yb[0], f != 0)
    np.testing.assert_array_equal(yb[1], ~fin)
    np.testing.assert_array_equal(yb[2], np.append(a[1:] > 0, False))
    np.testing.assert_array_equal(yu[fin], np.trunc(f[fin] * 10).astype(np.int32)
                                  .astype(np.uint8))


def test_prefetch_is_the_llvm_intrinsic_and_changes_nothing(tmp_path):
    k = prefetch_kernel(100, 4)
    r = LLVMRenderer(AVX2)
    r.add(k)
    assert "call void @\"llvm.prefetch.p0\"(" in r.ir_text()
    fn = function(build(tmp_path, [k], "pf"), k)
    x = np.arange(100, dtype=np.float32)
    for start in (0, 60, 99, 100, 130):  # the last two ask for nothing
        y = np.zeros(1, np.float32)
        fn(x, y, start)
        assert y[0] == x.sum()
    asm = subprocess.run(["objdump", "-d", str(tmp_path / "pf.o")], capture_output=True,
                         text=True).stdout
    assert "prefetcht0" in asm


def test_vector_kernels_build_for_avx512():
    # on every host (`built` runs them where the CPU has AVX-512), with the GEMM tile too
    r = LLVMRenderer(get_target("x86-avx512"))
    for k in (lanewise_kernel(16, 53), reduce_kernel(16, 4, 35), int_kernel(16, 64),
              mk.gemm_tile(16, 4, 2, True, "Relu", lambda v: maximum(v, 0.0))):
        r.add(k)
    assert "<16 x float>" in r.ir_text()
    assert r.compile()[:4] == b"\x7fELF"


ARM64 = Target("aarch64-test", "aarch64", "aarch64-linux-gnu-gcc", (), isa="",
               llvm_triple="aarch64-linux-gnu", llvm_cpu="generic", llvm_features="+neon")
LANEWISE_MAIN = """#include <stdio.h>
void lanewise(const float *x, const float *w, const float *s, float *y);
int main(void)
{
    static float x[N], w[N], s[1], y[15 * (N + L)];
    if (fread(x, 4, N, stdin) != N || fread(w, 4, N, stdin) != N || fread(s, 4, 1, stdin) != 1
        || fread(y, 4, 15 * (N + L), stdin) != 15 * (N + L))
        return 2;
    lanewise(x, w, s, y);
    return fwrite(y, 4, 15 * (N + L), stdout) == 15 * (N + L) ? 0 : 3;
}
"""


def test_aarch64_object(tmp_path):
    """The same kernels as an aarch64 object (NEON), checked with the cross binutils, linked by
    the cross gcc and run under qemu-aarch64 against numpy (.ci/run installs all three)."""
    L, n = 4, 13
    r = LLVMRenderer(ARM64, "pool_for")
    for k in (lanewise_kernel(L, n), int_kernel(L, 16), parallel_kernel(L, 5, 12)):
        r.add(k)
    obj = tmp_path / "k.o"
    obj.write_bytes(r.compile(hidden=False))
    objdump = shutil.which("aarch64-linux-gnu-objdump")
    assert objdump, "aarch64-linux-gnu-objdump not installed (binutils-aarch64-linux-gnu)"
    head = subprocess.run([objdump, "-f", str(obj)], capture_output=True, text=True).stdout
    assert "elf64-littleaarch64" in head
    asm = subprocess.run([objdump, "-d", str(obj)], capture_output=True, text=True).stdout
    assert "<lanewise>:" in asm and "<par_rows>:" in asm
    assert "fmla" in asm  # the vector fma on NEON registers
    assert ".4s" in asm  # 4-lane float vectors
    assert shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64"), \
        "no aarch64 cross gcc or qemu-aarch64 to run the object (gcc-aarch64-linux-gnu, qemu-user)"
    (tmp_path / "main.c").write_text(POOL + LANEWISE_MAIN)
    res = subprocess.run(["aarch64-linux-gnu-gcc", "-static", f"-I{C_DIR}", f"-DN={n}",
                          f"-DL={L}", "main.c", "k.o", "-o", "lanewise", "-lm", "-pthread"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    rng = np.random.default_rng(9)
    x = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    s = np.array([0.75], np.float32)
    y = np.full((15, n + L), SENTINEL, np.float32)
    run = subprocess.run(["qemu-aarch64", str(tmp_path / "lanewise")], capture_output=True,
                         input=x.tobytes() + w.tobytes() + s.tobytes() + y.tobytes())
    assert run.returncode == 0, run.stderr
    y = np.frombuffer(run.stdout, np.float32).reshape(15, n + L)
    for j, want in enumerate(lanewise_reference(x, w, s[0])):
        np.testing.assert_allclose(y[j, :n], want, rtol=2e-7, atol=0, err_msg=f"output {j}")
    assert (y[:, n:] == SENTINEL).all(), "a masked store wrote past its count"


# -- whole models through `--backend llvm` ---------------------------------------------------

def test_library_shape_and_manifest(tmp_path):
    model = small_resnet(16)
    feeds = random_feeds(model)
    want = onnxruntime_outputs(model, feeds)
    art = edgec.compile(model.SerializeToString(), tmp_path / "net", name="net",
                        backend="llvm")
    m = json.loads((tmp_path / "net" / "manifest.json").read_text())
    assert m["backend"] == "llvm" and "net_kernels.o" in m["sources"]
    members = subprocess.run(["ar", "t", str(art.library)], capture_output=True,
                             text=True).stdout.split()
    assert sorted(members) == ["net.o", "net_kernels.o", "net_weights.o"]
    c = (tmp_path / "net" / "net.c").read_text()
    assert "void net_parallel_for(" in c and "static void" not in c  # kernels are in the .o
    model_run = edgec.load(art.out_dir)
    for threads in (1, 2):
        model_run.set_num_threads(threads)
        got = model_run.run(feeds)
        for name, w in want.items():
            np.testing.assert_allclose(got[name], w, rtol=1e-4, atol=1e-4)


def test_two_llvm_libraries_link_into_one_program(tmp_path):
    """Kernel and trampoline symbols carry the library name: two models link together."""
    for name, size in (("net_a", 16), ("net_b", 8)):
        edgec.compile(small_resnet(size).SerializeToString(), tmp_path / name, name=name,
                      backend="llvm")
    main = tmp_path / "main.c"
    main.write_text('#include "net_a.h"\n#include "net_b.h"\n'
                    "int main(void) { return (int)(net_a_workspace_size() == 0) "
                    "+ (int)(net_b_workspace_size() == 0); }\n")
    res = subprocess.run(["gcc", str(main), f"-I{tmp_path / 'net_a'}", f"-I{tmp_path / 'net_b'}",
                          str(tmp_path / "net_a" / "libnet_a.a"),
                          str(tmp_path / "net_b" / "libnet_b.a"), "-lm", "-pthread",
                          "-o", str(tmp_path / "main")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert subprocess.run([str(tmp_path / "main")]).returncode == 0


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "mlp"])
@pytest.mark.slow
def test_benchmark_models_against_onnxruntime(tmp_path, name):
    import onnxruntime as ort

    from edgec import zoo

    model = getattr(zoo, name)()
    path = zoo.save(model, tmp_path / f"{name}.onnx")
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
             .astype(np.float32) for i in model.graph.input
             if i.name not in {t.name for t in model.graph.initializer}}
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    art = edgec.compile(path, tmp_path / "out", backend="llvm")
    got = edgec.load(art.out_dir).run(feeds)
    for k, w in want.items():
        scale = max(float(np.abs(w).max()), 1e-30)
        assert float(np.abs(got[k] - w).max()) / scale <= 1e-4, k


def test_emulated_run_of_an_llvm_library(tmp_path):
    """An x86-avx2 library built by LLVM, statically linked with the runner and run under
    qemu-x86_64 -cpu Haswell (the emulated loader links libNAME.a, kernels object included)."""
    assert shutil.which("qemu-x86_64"), "qemu-x86_64 not installed (apt-get install qemu-user)"
    model = small_resnet(8)
    feeds = random_feeds(model)
    want = onnxruntime_outputs(model, feeds)
    art = edgec.compile(model.SerializeToString(), tmp_path / "net", name="net",
                        target="x86-avx2", backend="llvm")
    got = edgec.load(art.out_dir, emulator=["qemu-x86_64", "-cpu", "Haswell"]).run(feeds)
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=1e-4, atol=1e-4)
