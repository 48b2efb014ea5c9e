"""`x86-avx2`: int8 micro-kernels built twice (AVX-VNNI's 256-bit `vpdpbusd` and AVX2's
widening form) and chosen at run time from CPUID, as `arm64-dotprod` does with `sdot`.

The same library runs natively (AVX-VNNI where this CPU has it: Intel Alder Lake and later,
AMD Zen 5, Emerald Rapids) and under `qemu-x86_64 -cpu Haswell` (no AVX-VNNI): outputs
bit-identical between the two and equal to onnxruntime (numpy for the extreme operands), and
`NAME_dot_product_kernels()` says which path ran. objdump shows `vpdpbusd` only in the
AVX-VNNI versions, on ymm registers.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from kernel_ir.test_int8 import int8_models, onnxruntime_run
from onnx import numpy_helper

import edgec
from edgec.targets.target import host_cpu_flags

HASWELL = ["qemu-x86_64", "-cpu", "Haswell"]
HOST_HAS_VNNI = "avx_vnni" in host_cpu_flags() or "avx512_vnni" in host_cpu_flags()


def reference(name: str, m, feeds: dict) -> np.ndarray:
    if name == "mmi_extreme":
        b = numpy_helper.to_array(m.graph.initializer[0]).astype(np.int64)
        return (feeds["a"].astype(np.int64) @ b).astype(np.int32)
    return onnxruntime_run(m, feeds)


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    if shutil.which("qemu-x86_64") is None:
        pytest.fail("qemu-x86_64 is not installed: `apt-get install qemu-user`")
    tmp = tmp_path_factory.mktemp("avxvnni")
    return [(name, m, feeds, edgec.compile(m, tmp / name, target="x86-avx2", name=name))
            for name, m, feeds in int8_models(np.random.default_rng(9))]


def test_same_integers_with_and_without_avx_vnni(libraries):
    for name, m, feeds, art in libraries:
        assert art.manifest["dot_product_kernels"] is True, name
        native = edgec.load(art.out_dir)
        haswell = edgec.load(art.out_dir, emulator=HASWELL)
        (fast,), (plain,) = native.run(feeds).values(), haswell.run(feeds).values()
        # natively the AVX-VNNI kernels where the CPU has them (a host with AVX-512 VNNI has
        # AVX-VNNI's instructions too only if it lists avx_vnni)
        assert native.dot_product_kernels == int("avx_vnni" in host_cpu_flags()), name
        assert haswell.dot_product_kernels == 0, name
        want = reference(name, m, feeds)
        np.testing.assert_array_equal(fast, plain, err_msg=f"{name}: AVX-VNNI vs AVX2")
        np.testing.assert_array_equal(fast, want, err_msg=name)


def test_vpdpbusd_only_in_the_avx_vnni_versions(libraries):
    name, _, _, art = libraries[0]
    text = subprocess.run(["objdump", "-d", str(art.library)], capture_output=True, text=True,
                          check=True).stdout
    fn, found = None, {}
    for line in text.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if head:
            fn = head.group(1)
        elif "vpdpbusd" in line:
            found.setdefault(fn, []).append(line)
    assert found, "no vpdpbusd in the library"
    assert all(f.split(".")[0].endswith("_avxvnni") for f in found), sorted(found)
    assert all("%ymm" in x and "%zmm" not in x for lines in found.values() for x in lines)
