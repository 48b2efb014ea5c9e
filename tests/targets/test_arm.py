"""The ARM targets under qemu-user: `arm64` (aarch64 NEON, qemu-aarch64) and `armv7` (32-bit
NEON, qemu-arm), cross-built with the Debian cross compilers.

- The vector kernel IR through the NEON renderer at 4 lanes: the kernels and checks of
  test_vector_ir.py (imported below, so one definition runs on every ISA) built into a static
  program that calls a kernel by name on arrays passed through files, against numpy.
- Small conv nets and the three benchmark models (the MLP, full-size ResNet-18 and MobileNetV2)
  through `edgec.compile(target=..., backend=...)` and `edgec.load` (which picks the target's
  emulator) against onnxruntime: on arm64 with the C and the LLVM backend, on armv7 with C.
- A deterministic sample of 200 ONNX node tests that CONFORMANCE.md lists as passing on x86,
  for the same three builds.

The cross compilers and qemu-user are required, not optional: CI installs them (.ci/run) and
these tests fail, never skip, when they are missing.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import onnx.numpy_helper
import pytest
from convnets import OnnxNet, onnxruntime_outputs, random_feeds, small_resnet
from harness import conformance_results, rel_error
from kernel_ir.test_int8 import check_mulshift, mulshift_kernel
from kernel_ir.test_vector_ir import (  # noqa: F401  (the imported tests run here on `built` below)
    SENTINEL,
    axpy_driver,
    c_source,
    check_gemm_driver,
    gemm_driver,
    int_kernel,
    lanewise_kernel,
    parallel_kernel,
    reduce_kernel,
    spmv_kernel,
    test_csr_spmv,
    test_int32_vectors,
    test_lanewise_ops_and_masked_tail,
    test_microkernel_call_with_pointer_offsets_and_scalars,
    test_reductions_hreduce_and_unrolled_loop,
)

import edgec
from edgec import zoo
from edgec.codegen.renderers.c_isas import VECTOR_ISAS
from edgec.compiler.driver import compile_graph, load_graph
from edgec.errors import EdgecError, ToolchainError
from edgec.ir.dtypes import DType
from edgec.kernel_ir.kernel import Kernel
from edgec.runtime import C_DIR
from edgec.runtime.emulated import EmulatedModel
from edgec.targets.target import Target, get_target
from edgec.testing import conformance

F32 = DType.F32
ARM = ["arm64", "armv7"]
# the (target, backend) builds that run the models and the conformance sample: the LLVM
# backend renders for aarch64 (llvmlite's target machine), not for 32-bit ARM
BUILDS = [("arm64", "c"), ("armv7", "c"), ("arm64", "llvm")]
BUILD_IDS = [f"{t}-{b}" for t, b in BUILDS]


@pytest.fixture(scope="module", autouse=True)
def toolchains() -> None:
    for name in ARM:
        t = get_target(name)
        for tool, package in ((t.cc, t.package), (t.emulator[0], "qemu-user")):
            if shutil.which(tool) is None:
                pytest.fail(f"{tool} is not installed: `apt-get install {package}` (.ci/run "
                            "installs it); these tests need it and do not skip")


# -- kernels as a program: one static executable, a kernel called by name -------------------

C_SCALAR = {DType.INDEX: ("ptrdiff_t", "strtoll({s}, NULL, 0)"),
            DType.I32: ("int32_t", "(int32_t)strtol({s}, NULL, 0)"),
            F32: ("float", "strtof({s}, NULL)")}

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a buffer: the whole file, 64-byte aligned as the library's buffers are */
static void *slurp(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0) exit(3);
    *size = ftell(f);
    rewind(f);
    void *p = aligned_alloc(64, (size_t)(*size + 63) / 64 * 64 + 64);
    if (p == NULL || fread(p, 1, (size_t)*size, f) != (size_t)*size) exit(3);
    fclose(f);
    return p;
}

static void spill(const char *path, const void *p, long size)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, (size_t)size, f) != (size_t)size || fclose(f) != 0) exit(3);
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
%(cases)s
    return 2;
}
"""


def driver_case(k: Kernel) -> str:
    """Calls `k` with argv[2:]: a file per buffer (written back afterwards), a number per
    scalar parameter."""
    lines = [f'    if (strcmp(argv[1], "{k.name}") == 0 && argc == {len(k.params) + 2}) {{']
    args, back = [], []
    for i, p in enumerate(k.params):
        s = f"argv[{i + 2}]"
        if hasattr(p, "shape"):
            lines.append(f"        long n{i}; void *a{i} = slurp({s}, &n{i});")
            args.append(f"a{i}")
            back.append(f"        spill({s}, a{i}, n{i}); free(a{i});")
        else:
            ctype, parse = C_SCALAR[p.dtype]
            args.append(f"({ctype}){parse.format(s=s)}")
    lines += [f"        {k.name}({', '.join(args)});", *back, "        return 0;", "    }"]
    return "\n".join(lines)


def build_program(tmp: Path, kernels: list[Kernel], target: Target) -> Path:
    src = c_source(kernels, VECTOR_ISAS[target.isa], threads="pool").replace(
        "void set_threads", "static void set_threads")  # (the pool reads EDGEC_NUM_THREADS)
    src = src.replace("#include <math.h>", "#define _POSIX_C_SOURCE 200809L\n#include <math.h>",
                      1)
    src += DRIVER % {"cases": "\n".join(driver_case(k) for k in kernels)}
    path, exe = tmp / f"{target.name}.c", tmp / target.name
    path.write_text(src)
    cmd = [target.cc, *target.cflags, "-std=c11", "-Wall", "-Wextra", "-Werror",
           "-Wno-unused-function", f"-I{C_DIR}", str(path), "-static", "-o", str(exe),
           "-lm", "-pthread"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    return exe


def emulated_function(exe: Path, target: Target, k: Kernel, threads: int = 1):
    """`k` in program `exe` under the target's qemu, with the interface of test_vector_ir's
    ctypes `function`: numpy arrays for buffers (outputs written back), numbers for scalars."""
    def call(*args):
        with tempfile.TemporaryDirectory(prefix="edgec-arm-") as tmp:
            argv, files = [*target.emulator, str(exe), k.name], []
            for i, (a, p) in enumerate(zip(args, k.params)):
                if hasattr(p, "shape"):
                    assert isinstance(a, np.ndarray) and a.flags.c_contiguous
                    path = Path(tmp) / f"{i}.bin"
                    a.tofile(path)
                    argv.append(str(path))
                    files.append((a, path))
                else:
                    argv.append(float(a).hex() if p.dtype is F32 else str(int(a)))
            res = subprocess.run(argv, capture_output=True, text=True,
                                 env={**os.environ, "EDGEC_NUM_THREADS": str(threads)})
            assert res.returncode == 0, f"{k.name} under {target.emulator[0]}: {res.stderr}"
            for a, path in files:
                a[...] = np.fromfile(path, a.dtype).reshape(a.shape)

    return call


@pytest.fixture(scope="module", params=ARM)
def built(request, tmp_path_factory):
    """(L, kernels by name, functions by name) of test_vector_ir's kernels for one ARM target,
    plus the gemm tile and a parallel loop; the imported tests take it."""
    target = get_target(request.param)
    L = target.lanes(F32)
    assert L == 4
    ks = {"lanewise": lanewise_kernel(L, 3 * L + 5), "rowreduce": reduce_kernel(L, 4, 2 * L + 3),
          "axpy_rows": axpy_driver(L, 3, 2 * L + 7), "spmv": spmv_kernel(L, 6, 9, 14),
          "intvec": int_kernel(L, 4 * L), "gemm_drive": gemm_driver(L),
          "par_rows": parallel_kernel(L, 13, 3 * L), "mulshift": mulshift_kernel(L)}
    exe = build_program(tmp_path_factory.mktemp(request.param), list(ks.values()), target)
    fns = {name: emulated_function(exe, target, k) for name, k in ks.items()}
    fns["par_rows_3_threads"] = emulated_function(exe, target, ks["par_rows"], threads=3)
    return L, ks, fns


@pytest.mark.parametrize("isa", ["neon", "neon-armv7"])
def test_neon_source_uses_its_intrinsics(isa):
    ks = [lanewise_kernel(4, 17), reduce_kernel(4, 4, 11), int_kernel(4, 16)]
    src = c_source(ks, VECTOR_ISAS[isa])
    for op in ("vfmaq_f32", "vld1q_f32", "edgec_vst1q_f32_n", "vbslq_f32", "vcltq_f32",
               "vmulq_s32"):
        assert op in src, op
    # Armv7 NEON has no division and no across-vector reductions: helpers stand in for them
    assert bool(re.search(r"[^_]vdivq_f32\(", src)) == (isa == "neon")
    assert bool(re.search(r"[^_]vaddvq_f32\(", src)) == (isa == "neon")


def test_mulshift_rounds_the_exact_product(built):
    L, _, fns = built
    check_mulshift(fns["mulshift"], L)


def test_gemm_tile_with_remainder_columns(built):
    L, _, fns = built
    check_gemm_driver(fns["gemm_drive"], L)


@pytest.mark.parametrize("fn", ["par_rows", "par_rows_3_threads"])
def test_parallel_loop(built, fn):
    L, ks, fns = built
    rows, cols = ks["par_rows"].params[0].shape
    rng = np.random.default_rng(7)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    sc = rng.standard_normal(rows).astype(np.float32)
    y = np.full((rows, cols), SENTINEL, np.float32)
    fns[fn](x, sc, y)
    want = np.maximum(x.astype(np.float64) * sc[:, None] + np.arange(rows)[:, None], 0)
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-6, atol=1e-6)


# -- models through edgec.compile and edgec.load ---------------------------------------------

def edge_net():
    """Channel counts that are not multiples of the tiles (20 = 5 blocks of 4: a full group of
    4 blocks and a rest of 1 on arm64), a plain-input stem, stride 2, dilation, depthwise,
    a residual, pools and the vector activations (Sigmoid's exp and Tanh too); a Gemm whose
    width is no multiple of 8."""
    n = OnnxNet("edge_net", seed=3)
    x = n.node("Relu", [n.conv(n.input("input", [1, 3, 19, 17]), 3, 20, 3, stride=2)])
    y = n.node("Clip", [n.conv(x, 20, 20, 3, dilation=2), n.const(np.float32(0)),
                        n.const(np.float32(6))])
    y = n.node("Add", [y, x])
    d = n.node("HardSwish", [n.conv(y, 20, 20, 3, group=20)])
    p = n.node("AveragePool", [d], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    q = n.node("MaxPool", [n.node("LeakyRelu", [n.conv(p, 20, 12, 1)], alpha=0.1)],
               kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1])
    g = n.node("Flatten", [n.node("GlobalAveragePool", [q])], axis=1)
    n.output(n.node("Gemm", [g, n.weight((13, 12)), n.weight((13,), 0.1)], name="logits",
                    transB=1), q, n.node("Sigmoid", [n.conv(p, 20, 8, 3)]),
             n.node("Tanh", [n.conv(p, 20, 4, 1)]))
    return n.model()


MODELS = {"small_resnet": small_resnet, "edge_net": edge_net, "mlp": zoo.mlp,
          "tiny_cnn": zoo.tiny_cnn}


@pytest.mark.parametrize("target,backend", BUILDS, ids=BUILD_IDS)
@pytest.mark.parametrize("name", list(MODELS))
def test_model_matches_onnxruntime(name, target, backend, tmp_path):
    m = MODELS[name]()
    art = edgec.compile(m, tmp_path / "out", target=target, name="model", backend=backend)
    assert "layout-nchwc{block=4}" in art.manifest["pipeline"]
    assert art.manifest["backend"] == backend
    lib = edgec.load(art.out_dir)  # no emulator given: the target's own
    assert isinstance(lib, EmulatedModel) and lib.emulator == list(get_target(target).emulator)
    feeds = random_feeds(m)
    want = onnxruntime_outputs(m, feeds)
    got = lib.run(feeds)
    for k, w in want.items():
        assert rel_error(got[k], w) < 1e-5, k
    if name == "small_resnet" and backend == "c":
        # register tiles from the register file: aarch64 has 32 vector registers, 4 blocks x
        # 6 pixels (24 accumulators, 4 weights, 1 broadcast); Armv7 has 16 q registers, 2 x 6
        tile = {"arm64": "m4_r6", "armv7": "m2_r6"}[target]
        assert f"mk_conv_f32x4_{tile}_b" in (art.out_dir / "model.c").read_text()
        assert get_target(target).registers == (32 if target == "arm64" else 16)
    if name == "small_resnet":  # split over output tiles: the same result on 2 threads
        lib.set_num_threads(2)
        got2 = lib.run(feeds)
        for k in want:
            np.testing.assert_array_equal(got2[k], got[k])


@pytest.mark.parametrize("target,backend", BUILDS, ids=BUILD_IDS)
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_benchmark_model_full_size(name, target, backend, tmp_path):
    # the benchmark MLP is one of MODELS above; these two are slow under qemu (ResNet-18 is
    # 1.8 GMACs): each runs once per build, at one thread
    m = getattr(zoo, name)()
    art = edgec.compile(m, tmp_path / "out", target=target, name=name, backend=backend)
    feeds = random_feeds(m)
    (want,) = onnxruntime_outputs(m, feeds).values()
    got = edgec.load(art.out_dir).run(feeds)
    assert rel_error(next(iter(got.values())), want) < 1e-4


def test_arm64_dotprod_library_stays_armv8_a(tmp_path):
    # only the dot-product kernels may use Armv8.2-A (they are chosen at run time): the rest
    # of the library runs on a Cortex-A53, which has no dotprod
    m = small_resnet()
    art = edgec.compile(m, tmp_path / "out", target="arm64-dotprod", name="model")
    target = get_target("arm64-dotprod")
    lib = edgec.load(art.out_dir, emulator=[*target.emulator, "-cpu", "cortex-a53"])
    feeds = random_feeds(m)
    for k, w in onnxruntime_outputs(m, feeds).items():
        assert rel_error(lib.run(feeds)[k], w) < 1e-5, k


@pytest.mark.parametrize("backend", ["c", "llvm"])
def test_cli_run_picks_the_emulator(backend, tmp_path, capsys):
    from edgec.compiler.cli import main

    model, out = tmp_path / "tiny.onnx", tmp_path / "out"
    zoo.save(zoo.tiny_cnn(), model)
    np.savez(tmp_path / "in.npz", **random_feeds(zoo.tiny_cnn()))
    assert main(["compile", str(model), "-o", str(out), "--target", "arm64",
                 "--backend", backend]) == 0
    assert main(["run", str(out), "--inputs", str(tmp_path / "in.npz"),
                 "--check", str(model)]) == 0
    text = capsys.readouterr().out
    rel = float(re.search(r"relative (\S+)", text).group(1))
    assert rel < 1e-5


def int8_model(a_type: int):
    """MatMulInteger of a uint8/int8 A (zero point 3) against constant int8 weights, K and N
    no multiples of the tile (a K % 4 tail too)."""
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(5)
    a_np = np.uint8 if a_type == T.UINT8 else np.int8
    inits = [numpy_helper.from_array(rng.integers(-128, 128, (37, 21)).astype(np.int8), "b"),
             numpy_helper.from_array(np.array(3, a_np), "za"),
             numpy_helper.from_array(np.array(0.02, np.float32), "sa"),
             numpy_helper.from_array(np.array(0.01, np.float32), "sb"),
             numpy_helper.from_array(np.array(-2, np.int8), "zb"),
             numpy_helper.from_array(np.array(0.5, np.float32), "sy"),
             numpy_helper.from_array(np.array(128, np.uint8), "zy")]
    g = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b", "za"], ["y"])], "int8",
                          [helper.make_tensor_value_info("a", a_type, [5, 37])],
                          [helper.make_tensor_value_info("y", T.INT32, [5, 21])], inits[:2])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("target", ARM)
@pytest.mark.parametrize("a_type", ["uint8", "int8"])
def test_int8_gemm_is_exact(target, a_type, tmp_path):
    # the int8 GEMM micro-kernel's dot4 through plain NEON (exact 16-bit products)
    from onnx import TensorProto as T

    m = int8_model(T.UINT8 if a_type == "uint8" else T.INT8)
    art = edgec.compile(m, tmp_path / "out", target=target, name="q")
    assert "edgec_dot4_" in (art.out_dir / "q.c").read_text()
    rng = np.random.default_rng(6)
    a = (rng.integers(0, 256, (5, 37)).astype(np.uint8) if a_type == "uint8"
         else rng.integers(-128, 128, (5, 37)).astype(np.int8))
    # numpy, not onnxruntime: on this AVX2 host onnxruntime 1.31's uint8 x int8 MatMulInteger
    # saturates its 16-bit pair sums (vpmaddubsw) and is off by thousands
    b = onnx.numpy_helper.to_array(m.graph.initializer[0]).astype(np.int32)
    want = (a.astype(np.int32) - 3) @ b
    np.testing.assert_array_equal(edgec.load(art.out_dir).run({"a": a})["y"], want)


# -- errors --------------------------------------------------------------------------------

def test_missing_cross_compiler_names_the_package(tmp_path):
    absent = dataclasses.replace(get_target("armv7"), cc="arm-edgec-absent-gcc")
    graph = load_graph(zoo.mlp())
    with pytest.raises(ToolchainError, match=r"'arm-edgec-absent-gcc' was not found on PATH; "
                                             r"target armv7 .*apt-get install "
                                             r"gcc-arm-linux-gnueabihf"):
        compile_graph(graph, tmp_path / "out", target=absent, name="mlp")


def test_missing_emulator_names_the_package(tmp_path, monkeypatch):
    art = edgec.compile(zoo.mlp(), tmp_path / "out", target="arm64", name="mlp")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(EdgecError, match="'qemu-aarch64' was not found on PATH; install it "
                                         "with `apt-get install qemu-user`"):
        edgec.load(art.out_dir)


def test_cross_library_is_not_loaded_into_python(tmp_path):
    from edgec.runtime.loader import CompiledModel

    art = edgec.compile(zoo.mlp(), tmp_path / "out", target="armv7", name="mlp")
    with pytest.raises(ToolchainError, match="cannot be loaded into this process"):
        CompiledModel(art.out_dir)


# -- a sample of the ONNX node tests ---------------------------------------------------------

CONFORMANCE_SAMPLE = 200


def conformance_sample(k: int) -> list[str]:
    """Every n-th of the tests CONFORMANCE.md lists as passing, `k` in all."""
    passing = sorted(t for t, (_, s) in conformance_results().items() if s == "pass")
    step = len(passing) / k
    return [passing[int(i * step)] for i in range(k)]


@pytest.mark.parametrize("target,backend", BUILDS, ids=BUILD_IDS)
def test_conformance_sample(target, backend, tmp_path):
    names = conformance_sample(CONFORMANCE_SAMPLE)
    assert len(set(names)) == CONFORMANCE_SAMPLE
    platform = conformance.Platform(target, get_target(target).emulator, backend)
    results = conformance.run_suite(names, jobs=2, work=tmp_path, platform=platform)
    broken = [f"{r.test}: {r.status} {r.reason}" for r in results if r.status != "pass"]
    assert not broken, (f"{len(broken)} tests fail on {target} --backend {backend}:\n"
                        + "\n".join(broken))
