"""`arm64-dotprod`: int8 micro-kernels built twice (Armv8.2-A `sdot` and plain NEON) and
chosen at run time from the CPU's AT_HWCAP.

The same library runs under `qemu-aarch64` (CPU `max`: has the dot product) and
`qemu-aarch64 -cpu cortex-a53` (Armv8.0: has not): outputs bit-identical between the two and
equal to onnxruntime (numpy for the extreme operands onnxruntime saturates on this host), and
`NAME_dot_product_kernels()` says 1 and 0. objdump shows the `sdot` instructions and that they
lie only in the Armv8.2-A versions; `arm64`, x86 and `--backend llvm` have no dispatch.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from convnets import onnxruntime_outputs, random_feeds
from kernel_ir.test_int8 import int8_models, onnxruntime_run
from onnx import numpy_helper

import edgec
from edgec import zoo
from edgec.runtime.loader import read_manifest
from edgec.targets.target import get_target

TARGET = get_target("arm64-dotprod")
OBJDUMP = "aarch64-linux-gnu-objdump"
A53 = [*TARGET.emulator, "-cpu", "cortex-a53"]  # Armv8.0-A: no dot product


@pytest.fixture(scope="module", autouse=True)
def toolchain() -> None:
    for tool, package in ((TARGET.cc, TARGET.package), (OBJDUMP, "binutils-aarch64-linux-gnu"),
                          (TARGET.emulator[0], "qemu-user")):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed: `apt-get install {package}` (.ci/run "
                        "installs it); these tests need it and do not skip")


def reference(name: str, m, feeds: dict) -> np.ndarray:
    if name == "mmi_extreme":  # A 255, B -128: exact integers (onnxruntime saturates here)
        b = numpy_helper.to_array(m.graph.initializer[0]).astype(np.int64)
        return (feeds["a"].astype(np.int64) @ b).astype(np.int32)
    return onnxruntime_run(m, feeds)


@pytest.fixture(scope="module")
def int8_libraries(tmp_path_factory) -> list[tuple[str, object, dict, Path]]:
    """The MatMulInteger / QLinearMatMul models of test_int8 (both A types, every zero-point
    form, K % 4 tails, requantization per tensor and per column) built for arm64-dotprod."""
    tmp = tmp_path_factory.mktemp("dotprod")
    out = []
    for name, m, feeds in int8_models(np.random.default_rng(7)):
        art = edgec.compile(m, tmp / name, target="arm64-dotprod", name=name)
        out.append((name, m, feeds, art.out_dir))
    return out


def run_both(out_dir: Path, feeds: dict, threads: int = 1) -> list[tuple[np.ndarray, int]]:
    """(output, NAME_dot_product_kernels()) on a CPU with the dot product and on one without."""
    results = []
    for emulator in (list(TARGET.emulator), A53):
        lib = edgec.load(out_dir, emulator=emulator)
        lib.set_num_threads(threads)
        (y,) = lib.run(feeds).values()
        results.append((y, lib.dot_product_kernels))
    return results


def test_int8_models_identical_with_and_without_dot_product(int8_libraries):
    def check(case):
        name, m, feeds, out_dir = case
        (fast, fast_path), (plain, plain_path) = run_both(out_dir, feeds)
        return name, fast, fast_path, plain, plain_path, reference(name, m, feeds)

    with ThreadPoolExecutor(4) as pool:  # the qemu runs are independent processes
        results = list(pool.map(check, int8_libraries))
    assert len(results) == 8
    for name, fast, fast_path, plain, plain_path, want in results:
        assert (fast_path, plain_path) == (1, 0), name
        assert fast.dtype == want.dtype, name
        np.testing.assert_array_equal(fast, plain, err_msg=f"{name}: sdot vs plain NEON")
        np.testing.assert_array_equal(fast, want, err_msg=name)


def test_threads_agree_on_the_path(int8_libraries):
    # the pool's threads run micro-kernels at once, the first of them asking the CPU
    name, m, feeds, out_dir = next(c for c in int8_libraries if c[0] == "mmi1")
    (fast, fast_path), (plain, plain_path) = run_both(out_dir, feeds, threads=3)
    assert (fast_path, plain_path) == (1, 0)
    np.testing.assert_array_equal(fast, reference(name, m, feeds))
    np.testing.assert_array_equal(plain, fast)


def functions_with(lib: Path, mnemonic: str) -> set[str]:
    """Functions of the archive `lib` whose code has an instruction `mnemonic`."""
    text = subprocess.run([OBJDUMP, "-d", str(lib)], capture_output=True, text=True,
                          check=True).stdout
    found, fn = set(), None
    for line in text.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if head:
            fn = head.group(1)
        elif re.search(rf"\t{mnemonic}\t", line):
            found.add(fn)
    return found


def test_sdot_only_in_the_dot_product_versions(int8_libraries):
    for name, _, _, out_dir in int8_libraries:
        with_sdot = functions_with(out_dir / f"lib{name}.a", "sdot")
        assert with_sdot, f"{name}: no sdot instruction in the library"
        # the rest of the library stays Armv8-A, so that it runs on a Cortex-A53 (gcc may
        # name a specialized copy of a function f f.constprop.0)
        assert all(f.split(".")[0].endswith("_sdot") for f in with_sdot), (name, with_sdot)
        header = (out_dir / f"{name}.h").read_text()
        assert f"int {name}_dot_product_kernels(void);" in header
        assert read_manifest(out_dir)["dot_product_kernels"] is True


@pytest.mark.parametrize("target", ["arm64", "x86-avx512"])
def test_no_dispatch_elsewhere(target, tmp_path):
    name, m, feeds = int8_models(np.random.default_rng(8))[0]
    art = edgec.compile(m, tmp_path / "out", target=target, name=name)
    src = (art.out_dir / f"{name}.c").read_text() + (art.out_dir / f"{name}.h").read_text()
    assert "mk_gemm_" in src
    assert "dot_product_kernels" not in src and "edgec_has_dotprod" not in src
    assert "edgec_has_avxvnni" not in src
    assert art.manifest["dot_product_kernels"] is False
    if target == "arm64":
        assert not functions_with(art.library, "sdot")


def test_float_model_has_no_dispatch(tmp_path):
    # no micro-kernel with a dot product: the library is arm64's, without the query
    m = zoo.tiny_cnn()
    art = edgec.compile(m, tmp_path / "out", target="arm64-dotprod", name="tiny")
    assert "dot_product_kernels" not in (art.out_dir / "tiny.h").read_text()
    assert art.manifest["dot_product_kernels"] is False


def test_llvm_backend_builds_plain_neon(tmp_path):
    # --backend llvm renders no run-time dispatch: its library is Armv8-A NEON throughout
    m = zoo.tiny_cnn()
    art = edgec.compile(m, tmp_path / "out", target="arm64-dotprod", name="tiny",
                        backend="llvm")
    assert art.manifest["dot_product_kernels"] is False
    assert not functions_with(art.library, "sdot")
    feeds = random_feeds(m)
    lib = edgec.load(art.out_dir, emulator=A53)
    (want,) = onnxruntime_outputs(m, feeds).values()
    (got,) = lib.run(feeds).values()
    assert lib.dot_product_kernels is None
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
