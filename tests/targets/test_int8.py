"""Int8 dot products in the kernel IR and the int8 GEMM built on them.

`dot4` kernels (8-bit vector loads, 4-byte group broadcasts, int32 accumulators) are rendered
for AVX2 (run natively and under `qemu-x86_64 -cpu Haswell`), for scalar C (1 lane) and for
AVX-512 VNNI (compiled with -Werror only: no CPU here runs it) and checked against numpy,
with extreme operands (255 x -128 and -128 x -128 over a long K) that any saturating
shortcut would get wrong.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from test_vector_ir import CFLAGS, build, c_source, function, gcc

from edgec.ir.dtypes import DType
from edgec.targets.kernel_ir import (
    Kernel,
    KernelBuilder,
    broadcast,
    const,
    dot4,
    vbroadcast,
    vload,
)
from edgec.targets.renderers.c import VECTOR_ISAS, CRenderer, VectorISA

I32, U8, I8 = DType.I32, DType.U8, DType.I8
HASWELL = ["qemu-x86_64", "-cpu", "Haswell"]
# (ISA, gcc flags): the builds that run here (AVX-512 is compiled only, below)
BUILDS = {"avx2": (VECTOR_ISAS["avx2"], ["-march=haswell"]), "scalar": (None, [])}


def lanes_of(isa: VectorISA | None) -> int:
    return isa.lanes(I32) if isa else 1


# -- dot4 kernels --------------------------------------------------------------------------

def row_times_panel(lanes: int, a_type: DType) -> Kernel:
    """y[0:L] = sum_g dot4(a[4g : 4g+4] in every group, bp[g, :, :]): one row of A against a
    panel of L columns of B packed [K/4][L][4]; the B vector is held in a local."""
    kb = KernelBuilder(f"row_panel_{a_type.name.lower()}_x{lanes}")
    a, bp = kb.pointer("a", a_type), kb.pointer("bp", I8)
    y = kb.pointer("y", I32, "out")
    groups = kb.scalar("groups")
    acc = kb.local("acc", broadcast(const(0, I32), lanes))
    with kb.loop(groups, "g") as g:
        bv = kb.local("bv", vload(bp, g * (4 * lanes), 4 * lanes))
        kb.assign(acc, dot4(acc, vbroadcast(a, g * 4, 4 * lanes, 4), bv))
    kb.store(y, 0, acc)
    return kb.build()


def lanewise(lanes: int, a_type: DType) -> Kernel:
    """z[i] = c[i] + sum_k x[4i+k] * w[4i+k] over n vectors: lane pairing and accumulator."""
    kb = KernelBuilder(f"lanewise_{a_type.name.lower()}_x{lanes}")
    x, w = kb.pointer("x", a_type), kb.pointer("w", I8)
    c, z = kb.pointer("c", I32), kb.pointer("z", I32, "out")
    n = kb.scalar("n")
    with kb.loop(n, "v") as v:
        kb.store(z, v * lanes, dot4(vload(c, v * lanes, lanes), vload(x, v * (4 * lanes),
                                                                    4 * lanes),
                                    vload(w, v * (4 * lanes), 4 * lanes)))
    return kb.build()


def pack_panel(b: np.ndarray) -> np.ndarray:
    """B [K, L] (K a multiple of 4) as [K/4][L][4]."""
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k // 4, 4, n).transpose(0, 2, 1).reshape(-1))


def operands(rng, k: int, lanes: int, a_np, extreme: bool):
    """(row a [K], B [K, L]) random, or all at the extremes that saturate maddubs."""
    if extreme:
        a = np.full(k, np.iinfo(a_np).min if a_np == np.int8 else 255, a_np)
        return a, np.full((k, lanes), -128, np.int8)
    lo, hi = (-128, 128) if a_np == np.int8 else (0, 256)
    return (rng.integers(lo, hi, k).astype(a_np),
            rng.integers(-128, 128, (k, lanes)).astype(np.int8))


CASES = [(a_np, k, extreme) for a_np in (np.uint8, np.int8)
         for k, extreme in ((4, False), (36, False), (4096, True))]


@pytest.mark.parametrize("build_name", sorted(BUILDS))
def test_dot4_matches_numpy(build_name, tmp_path):
    isa, flags = BUILDS[build_name]
    lanes = lanes_of(isa)
    kernels = [f(lanes, t) for t in (U8, I8) for f in (row_times_panel, lanewise)]
    lib = build(tmp_path, kernels, isa, flags, build_name)
    rng = np.random.default_rng(1)
    for a_np, k, extreme in CASES:
        t = U8 if a_np == np.uint8 else I8
        a, b = operands(rng, k, lanes, a_np, extreme)
        y = np.zeros(lanes, np.int32)
        function(lib, row_times_panel(lanes, t))(a, pack_panel(b), y, k // 4)
        want = a.astype(np.int64) @ b.astype(np.int64)
        np.testing.assert_array_equal(y, want, err_msg=f"{a_np.__name__} K={k}")
        n = 3
        x = rng.integers(-128, 256 if a_np == np.uint8 else 128, 4 * lanes * n).astype(a_np)
        w = rng.integers(-128, 128, 4 * lanes * n).astype(np.int8)
        if extreme:
            x[:], w[:] = a[0], -128
        c = rng.integers(-2**20, 2**20, lanes * n).astype(np.int32)
        z = np.zeros(lanes * n, np.int32)
        function(lib, lanewise(lanes, t))(x, w, c, z, n)
        prod = (x.astype(np.int64) * w.astype(np.int64)).reshape(-1, 4).sum(1)
        np.testing.assert_array_equal(z, c + prod)


def test_dot4_scalar_form_reads_bytes():
    # without a vector ISA a 4-lane byte vector is one uint32_t word: a local holds one
    src = CRenderer(None).kernel(row_times_panel(1, U8))
    assert "uint32_t bv = (uint32_t)(uint8_t)(bp + g * 4)[0]" in src
    assert "(int32_t)(a + g * 4)[0] * (((int32_t)(bv & 0xff) ^ 0x80) - 0x80)" in src


def test_dot4_avx2_under_haswell(tmp_path):
    # a program that prints the kernels' results, run under qemu's Haswell (no AVX-512)
    if shutil.which("qemu-x86_64") is None:
        pytest.fail("qemu-x86_64 is not installed: `apt-get install qemu-user`")
    isa, flags = BUILDS["avx2"]
    lanes = lanes_of(isa)
    rng = np.random.default_rng(2)
    main, want = [], []
    for n, (a_np, k, extreme) in enumerate(CASES):
        t = "uint8_t" if a_np == np.uint8 else "int8_t"
        a, b = operands(rng, k, lanes, a_np, extreme)
        kname = row_times_panel(lanes, U8 if a_np == np.uint8 else I8).name
        main += [f"static const {t} a{n}[] = {{{', '.join(map(str, a))}}};",
                 f"static const int8_t b{n}[] = {{{', '.join(map(str, pack_panel(b)))}}};"]
        want.append(a.astype(np.int64) @ b.astype(np.int64))
    main += ["int main(void)", "{", f"    int32_t y[{lanes}];"]
    for n, (a_np, k, _) in enumerate(CASES):
        kname = row_times_panel(lanes, U8 if a_np == np.uint8 else I8).name
        main += [f"    {kname}(a{n}, b{n}, y, {k // 4});",
                 f"    for (int j = 0; j < {lanes}; ++j) printf(\"%d \", (int)y[j]);",
                 "    printf(\"\\n\");"]
    main += ["    return 0;", "}"]
    kernels = [row_times_panel(lanes, t) for t in (U8, I8)]
    src = "#include <stdio.h>\n" + c_source(kernels, isa) + "\n".join(main) + "\n"
    exe = gcc(tmp_path, src, flags, "dot4_haswell", [])
    out = subprocess.run([*HASWELL, str(exe)], capture_output=True, text=True, check=True)
    got = [np.array(line.split(), np.int64) for line in out.stdout.splitlines()]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_dot4_avx512_compiles_to_vnni(tmp_path):
    isa = VECTOR_ISAS["avx512"]
    kernels = [f(16, t) for t in (U8, I8) for f in (row_times_panel, lanewise)]
    src = c_source(kernels, isa)
    path = tmp_path / "dot4_avx512.c"
    path.write_text(src)
    asm = tmp_path / "dot4_avx512.s"
    subprocess.run(["gcc", *CFLAGS, "-march=icelake-server", "-S", str(path), "-o", str(asm)],
                   check=True)
    assert "vpdpbusd" in asm.read_text()
    assert "_mm512_dpbusd_epi32" in src and "_mm512_broadcastd_epi32(_mm_loadu_si32(" in src


def test_dot4_rejects_wrong_operands():
    kb = KernelBuilder("bad")
    a, b = kb.pointer("a", U8), kb.pointer("b", U8)
    with pytest.raises(TypeError, match="uint8 or int8 times int8"):
        dot4(0, vload(a, 0, 32), vload(b, 0, 32))
    w = kb.pointer("w", I8)
    with pytest.raises(TypeError, match="32 bytes into 8 int32 lanes, not 4"):
        dot4(broadcast(const(0, I32), 4), vload(a, 0, 32), vload(w, 0, 32))
    assert vbroadcast(a, 0, 4, 4) == vload(a, 0, 4)  # one group is a plain load
