"""Int8 dot products in the kernel IR and the int8 GEMM built on them.

`dot4` kernels (8-bit vector loads, 4-byte group broadcasts, int32 accumulators) are rendered
for AVX2 (run natively and under `qemu-x86_64 -cpu Haswell`), for scalar C (1 lane) and for
AVX-512 VNNI (compiled with -Werror everywhere, run where the CPU has AVX-512) and checked
against numpy, with extreme operands (255 x -128 and -128 x -128 over a long K) that any
saturating shortcut would get wrong.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from harness import isa_builds, machine_flags, runs_here
from kernel_ir.test_vector_ir import CFLAGS, build, c_source, function, gcc
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import edgec
from edgec.codegen.renderers.c import CRenderer
from edgec.codegen.renderers.c_isas import VECTOR_ISAS, VectorISA
from edgec.ir.dtypes import DType
from edgec.ir.encodings import GemmWeights, encode_gemm
from edgec.kernel_ir.kernel import (
    Kernel,
    KernelBuilder,
    broadcast,
    const,
    dot4,
    mulshift,
    nibble,
    vbroadcast,
    vload,
)
from edgec.lowering import microkernels_int8 as mk8
from edgec.runtime import C_DIR

I32, U8, I8 = DType.I32, DType.U8, DType.I8
HASWELL = ["qemu-x86_64", "-cpu", "Haswell"]
# (ISA, gcc flags): the builds that run here (AVX-512 where the CPU has it; compiled, below,
# everywhere)
BUILDS = isa_builds()


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


def unpacked_dot(lanes: int) -> Kernel:
    """z[2v + k][i] = sum_q x[4i+q] * nibble k of p[v][4i+q]: two weight vectors from one
    load of packed bytes, as the int4 convolution tile reads them."""
    kb = KernelBuilder(f"unpacked_dot_x{lanes}")
    x, p = kb.pointer("x", U8), kb.pointer("p", I8)
    z = kb.pointer("z", I32, "out")
    n = kb.scalar("n")
    with kb.loop(n, "v") as v:
        pv = kb.local("pv", vload(p, v * (4 * lanes), 4 * lanes))
        xv = vload(x, v * (4 * lanes), 4 * lanes)
        for k in (0, 1):
            kb.store(z, (2 * v + k) * lanes, dot4(const(0, I32), xv, nibble(pv, k)))
    return kb.build()


@pytest.mark.parametrize("build_name", sorted(BUILDS))
def test_nibble_unpacks_int4_pairs_times_16(build_name, tmp_path):
    """Every signed 4-bit pair, against bytes up to 255: exact 16 * w products in dot4."""
    isa, flags = BUILDS[build_name]
    lanes = lanes_of(isa)
    lib = build(tmp_path, [unpacked_dot(lanes)], isa, flags, build_name)
    rng = np.random.default_rng(3)
    n = 64 // lanes + 1
    lo = rng.integers(-8, 8, 4 * lanes * n)
    hi = rng.integers(-8, 8, 4 * lanes * n)
    lo[:2], hi[:2] = [-8, 7], [7, -8]  # the extremes
    packed = ((lo & 15) | ((hi & 15) << 4)).astype(np.uint8).view(np.int8)
    x = rng.integers(0, 256, 4 * lanes * n).astype(np.uint8)
    x[:2] = 255
    z = np.zeros(2 * lanes * n, np.int32)
    function(lib, unpacked_dot(lanes))(x, packed, z, n)
    for k, w in enumerate((lo, hi)):
        want = (x.astype(np.int64) * 16 * w).reshape(n, lanes, 4).sum(-1)
        np.testing.assert_array_equal(z.reshape(n, 2, lanes)[:, k], want, err_msg=f"nibble {k}")


# -- fixed-point requantization -------------------------------------------------------------

def mulshift_kernel(lanes: int) -> Kernel:
    """z[i] = mulshift(v[i], m[i], s) over n vectors, s a run-time scalar."""
    kb = KernelBuilder(f"mulshift_x{lanes}")
    v, m = kb.pointer("v", I32), kb.pointer("m", I32)
    z = kb.pointer("z", I32, "out")
    n, sh = kb.scalar("n"), kb.scalar("s", I32)
    with kb.loop(n, "i") as i:
        kb.store(z, i * lanes, mulshift(vload(v, i * lanes, lanes), vload(m, i * lanes, lanes),
                                        sh))
    return kb.build()


def check_mulshift(fn, lanes: int) -> None:
    """fn (mulshift_kernel's function) against exact rational rounding, half toward +inf,
    on extremes (int32 limits, exact ties of both signs) and random operands, shifts from 33
    to 62."""
    rng = np.random.default_rng(5)
    top, bottom = 2**31 - 1, -2**31
    v0 = [top, bottom, bottom, top, 5, -5, 3, -3, 1, -1, 0, 7]
    m0 = [top, top, bottom + 1, 1, 2**31 - 1, 2**31 - 1, 2**30, 2**30, 2**31 - 1, 1, top, 0]
    for s in (33, 34, 40, 47, 58, 62):
        n = -(-64 // lanes)
        v = rng.integers(bottom, top, n * lanes, endpoint=True).astype(np.int32)
        m = rng.integers(0, 2**31, n * lanes).astype(np.int32)
        v[:len(v0)], m[:len(m0)] = v0, m0
        if s == 33:  # ties: v * m = (2k + 1) * 2^32
            m[12:16], v[12:16] = 2**31 - 2**30, [2**2, -2**2, 3 * 2**2, -3 * 2**2]
        z = np.zeros(n * lanes, np.int32)
        fn(v, m, z, n, s)
        want = [math.floor(Fraction(int(a) * int(b), 2**s) + Fraction(1, 2))
                for a, b in zip(v, m, strict=True)]
        np.testing.assert_array_equal(z, np.array(want, np.int64), err_msg=f"shift {s}")


@pytest.mark.parametrize("build_name", sorted(BUILDS))
def test_mulshift_rounds_the_exact_product(build_name, tmp_path):
    isa, flags = BUILDS[build_name]
    lanes = lanes_of(isa)
    lib = build(tmp_path, [mulshift_kernel(lanes)], isa, flags, build_name)
    check_mulshift(function(lib, mulshift_kernel(lanes)), lanes)


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
    subprocess.run(["gcc", *CFLAGS, f"-I{C_DIR}", *machine_flags("x86-avx512"), "-S", str(path),
                    "-o", str(asm)], check=True)
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


# -- MatMulInteger / QLinearMatMul through the int8 GEMM, against onnxruntime -----------------

def matmul_integer_model(a_shape: tuple, b: np.ndarray, a_type: int, za, zb) -> onnx.ModelProto:
    """MatMulInteger(A input, B constant int8, za (None, a constant or an input), zb)."""
    ins = [helper.make_tensor_value_info("a", a_type, list(a_shape))]
    inits = [numpy_helper.from_array(b, "b")]
    names = ["a", "b"]
    a_np = np.uint8 if a_type == T.UINT8 else np.int8
    if za == "input":
        ins.append(helper.make_tensor_value_info("za", a_type, []))
        names.append("za")
    elif za is not None:
        inits.append(numpy_helper.from_array(np.array(za, a_np), "za"))
        names.append("za")
    if zb is not None:
        names += [""] * (3 - len(names)) + ["zb"]
        inits.append(numpy_helper.from_array(np.asarray(zb, np.int8), "zb"))
    out_shape = [*a_shape[:-1], b.shape[1]]
    g = helper.make_graph([helper.make_node("MatMulInteger", names, ["y"])], "mmi", ins,
                          [helper.make_tensor_value_info("y", T.INT32, out_shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)


def qlinear_matmul_model(a_shape: tuple, b: np.ndarray, a_type: int, y_type: int, sb,
                         zb) -> onnx.ModelProto:
    """QLinearMatMul(A input, scales per tensor (B's per tensor or per column), zero points)."""
    a_np = np.uint8 if a_type == T.UINT8 else np.int8
    y_np = np.uint8 if y_type == T.UINT8 else np.int8
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "sa"),
             numpy_helper.from_array(np.array(3 if a_np == np.uint8 else -3, a_np), "za"),
             numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.asarray(sb, np.float32), "sb"),
             numpy_helper.from_array(np.asarray(zb, np.int8), "zb"),
             numpy_helper.from_array(np.array(0.37, np.float32), "sy"),
             numpy_helper.from_array(np.array(100 if y_np == np.uint8 else -7, y_np), "zy")]
    node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"],
                            ["y"])
    g = helper.make_graph([node], "qlmm", [helper.make_tensor_value_info("a", a_type,
                                                                          list(a_shape))],
                          [helper.make_tensor_value_info("y", y_type,
                                                         [*a_shape[:-1], b.shape[1]])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def onnxruntime_run(m: onnx.ModelProto, feeds: dict) -> np.ndarray:
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def int8_models(rng) -> list[tuple[str, onnx.ModelProto, dict]]:
    """MatMulInteger and QLinearMatMul over odd shapes (M, N, K not multiples of the tile,
    K % 4 from 0 to 3), both A types, zero points absent / constant / an input / per column,
    and the extremes (A 255, B -128, K 1000: "mmi_extreme").

    onnxruntime's uint8 x int8 kernel on AVX2 multiplies with vpmaddubsw, which saturates a
    pair of products past 32767, so it is exact only for uint8 A below 128: the models it
    checks keep A there, and the extreme one is checked against the ONNX definition (exact
    integer arithmetic, numpy)."""
    out = []

    def a_input(shape, a_np, extreme=False):
        if extreme:
            return np.full(shape, 255 if a_np == np.uint8 else -128, a_np)
        lo, hi = (0, 128) if a_np == np.uint8 else (-128, 128)
        return rng.integers(lo, hi, shape).astype(a_np)

    mmi = [((5, 37), 19, T.UINT8, None, None), ((2, 7, 64), 33, T.UINT8, 7, None),
           ((3, 18), 70, T.INT8, -5, 3), ((9, 13), 17, T.UINT8, "input", [1, -2] * 8 + [4]),
           ((1, 6), 1, T.INT8, None, None), ((4, 1000), 24, T.UINT8, None, None)]
    for n, (a_shape, cols, a_type, za, zb) in enumerate(mmi):
        a_np = np.uint8 if a_type == T.UINT8 else np.int8
        extreme = a_shape[-1] == 1000
        b = np.full((a_shape[-1], cols), -128, np.int8) if extreme else \
            rng.integers(-128, 128, (a_shape[-1], cols)).astype(np.int8)
        feeds = {"a": a_input(a_shape, a_np, extreme)}
        if za == "input":
            feeds["za"] = np.array(11, a_np)
        name = "mmi_extreme" if extreme else f"mmi{n}"
        out.append((name, matmul_integer_model(a_shape, b, a_type, za, zb), feeds))
    qlmm = [((7, 45), 21, T.UINT8, T.UINT8, 0.003, 0), ((2, 3, 22), 35, T.INT8, T.INT8,
                                                        [0.001 * (j + 1) for j in range(35)], 2)]
    for n, (a_shape, cols, a_type, y_type, sb, zb) in enumerate(qlmm):
        a_np = np.uint8 if a_type == T.UINT8 else np.int8
        b = rng.integers(-128, 128, (a_shape[-1], cols)).astype(np.int8)
        out.append((f"qlmm{n}", qlinear_matmul_model(a_shape, b, a_type, y_type, sb, zb),
                    {"a": a_input(a_shape, a_np)}))
    return out


# (x86 is the host's best ISA; x86-avx2 runs under qemu's Haswell and x86-avx512 below)
@pytest.mark.parametrize("target,backend", [("x86", "c"), ("c-generic", "c"), ("x86", "llvm")])
@pytest.mark.slow
def test_int8_gemm_models_match_onnxruntime(target, backend, tmp_path):
    rng = np.random.default_rng(3)
    for name, m, feeds in int8_models(rng):
        art = edgec.compile(m, tmp_path / name, target=target, name=name, backend=backend)
        if backend == "c":
            src = (tmp_path / name / f"{name}.c").read_text()
            # vector targets use the int8 micro-kernel, c-generic the scalar kernel
            assert ("mk_gemm_" in src) == (target != "c-generic"), name
        lib = edgec.load(art.out_dir)
        if name == "mmi_extreme":
            b = numpy_helper.to_array(m.graph.initializer[0]).astype(np.int64)
            want = (feeds["a"].astype(np.int64) @ b).astype(np.int32)
        else:
            want = onnxruntime_run(m, feeds)
        got = lib.run(feeds)["y"]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{name} on {target}")


def test_int8_gemm_models_avx2_under_haswell(tmp_path):
    if shutil.which("qemu-x86_64") is None:
        pytest.fail("qemu-x86_64 is not installed: `apt-get install qemu-user`")
    rng = np.random.default_rng(4)
    for name, m, feeds in int8_models(rng):
        if name not in ("mmi3", "mmi_extreme", "qlmm1"):
            continue
        art = edgec.compile(m, tmp_path / name, target="x86-avx2", name=name)
        lib = edgec.load(art.out_dir, emulator=HASWELL)
        if name == "mmi_extreme":
            b = numpy_helper.to_array(m.graph.initializer[0]).astype(np.int64)
            want = (feeds["a"].astype(np.int64) @ b).astype(np.int32)
        else:
            want = onnxruntime_run(m, feeds)
        np.testing.assert_array_equal(lib.run(feeds)["y"], want, err_msg=name)


# -- the GEMM micro-kernel itself, every epilogue, against numpy --------------------------------

EPILOGUES = [mk8.Int8Epilogue(), mk8.Int8Epilogue(I32, True, True),
             mk8.Int8Epilogue(U8, True, False, False), mk8.Int8Epilogue(I8, True, True, True),
             mk8.Int8Epilogue(U8, True, True, True, True), mk8.Int8Epilogue(I8, False, False,
                                                                            False, True)]
# (A's type, K % 4, epilogue, int4 weights two to a byte, vectors in use: 0 all, -1 all but
# one, 1 the first: a narrow last panel)
TILE_CASES = [(U8, 0, EPILOGUES[0], False, 0), (I8, 3, EPILOGUES[1], False, 0),
              (U8, 1, EPILOGUES[2], False, 0), (I8, 2, EPILOGUES[3], False, 0),
              (U8, 3, EPILOGUES[4], False, 0), (I8, 0, EPILOGUES[5], False, 0),
              (U8, 1, EPILOGUES[3], True, 0), (I8, 2, EPILOGUES[4], True, 0),
              (U8, 2, EPILOGUES[1], False, 1), (I8, 1, EPILOGUES[4], True, -1),
              (U8, 0, EPILOGUES[3], True, 1)]


def tile_oracle(a, b, za, zb, rs, epi, mult, zy, shift=0):
    """What the tile computes, in int64 / float32 (QLinearMatMul's requantization) or, with
    a shift, exact rational rounding half up (fixed point)."""
    acc = a.astype(np.int64) @ b.astype(np.int64)
    if epi.zero_a:
        acc += za * (b.shape[0] * zb - b.astype(np.int64).sum(0))
    if epi.zero_b:
        acc -= np.outer(rs, zb)
    if epi.out is I32:
        return acc.astype(np.int32)
    lo, hi = (0, 255) if epi.out is U8 else (-128, 127)
    if epi.fixed:
        q = np.broadcast_to(mult, acc.shape[1:])
        v = np.array([[math.floor(Fraction(int(x) * int(q[j]), 2**shift) + Fraction(1, 2))
                       for j, x in enumerate(row)] for row in acc], np.int64)
        return np.clip(v + zy, lo, hi).astype(np.uint8 if epi.out is U8 else np.int8)
    v = acc.astype(np.int32).astype(np.float32) * mult
    v = np.clip(v, np.float32(lo - zy), np.float32(hi - zy))
    return (np.rint(v).astype(np.int32) + zy).astype(np.uint8 if epi.out is U8 else np.int8)


@pytest.mark.parametrize("recentre", [False, True], ids=["", "recentred"])
@pytest.mark.parametrize("build_name", sorted(BUILDS))
def test_gemm_tile_epilogues_match_numpy(build_name, recentre, tmp_path):
    """Every epilogue (int32, zero points, float and fixed-point requantization per tensor
    and per column) on the panels encode_gemm makes, 8-bit and two to a byte (the caller
    then scales the zero-point tables by 16 and the multipliers by 1/16, or the shift by 4),
    and the narrow tiles of a last panel that uses only its first vectors. `recentre` (NEON's
    form, run here on every ISA): uint8 rows summed as A - 128, the caller passing za - 128
    and row sums minus 128 K."""
    isa, flags = BUILDS[build_name]
    lanes = lanes_of(isa)
    mr, nv = mk8.tile_shape(lanes)
    width = nv * lanes
    cases = [(a_t, kt, epi, nib, max(1, nv + u if u < 0 else u or nv))
             for a_t, kt, epi, nib, u in TILE_CASES
             if not recentre or (a_t is U8 and epi.zero_a)]
    kernels = [mk8.gemm_tile(lanes, mr, nv, a_t, kt, epi, nib, used, recentre=recentre)
               for a_t, kt, epi, nib, used in cases]
    lib = build(tmp_path, kernels, isa, flags, f"tile_{build_name}")
    rng = np.random.default_rng(5)
    for (a_t, kt, epi, nib, used), kern in zip(cases, kernels, strict=True):
        scale = 16 if nib else 1
        k = 4 * 5 + kt
        ncols = max(1, used * lanes - 3)  # a masked last vector
        a_np = np.uint8 if a_t is U8 else np.int8
        a = rng.integers(np.iinfo(a_np).min, np.iinfo(a_np).max + 1, (mr, k)).astype(a_np)
        b = rng.integers(-8 if nib else -128, 8 if nib else 128, (k, width)).astype(np.int8)
        enc = GemmWeights(lanes, nv, nib)
        packed = encode_gemm(b, enc)
        bp, bt = packed, packed[enc.sizes(k, width)[0]:].copy()
        za, zb = 9, rng.integers(-5, 6, width).astype(np.int32)
        zb *= epi.zero_b or not recentre  # zb is 0 without zero_b (za - 128 then holds)
        cz = (k * zb - b.astype(np.int32).sum(0)).astype(np.int32)
        rs = a.astype(np.int32).sum(1)
        if epi.fixed:
            mult = rng.integers(2**28, 2**31, width).astype(np.int32)
            m_scalar, shift = 1234567890, 41
        else:
            mult = rng.uniform(1e-4, 3e-3, width).astype(np.float32)
            m_scalar, shift = np.float32(0.0021), 0
        zy = 17 if epi.out is U8 else -3
        ldy = width + 5
        y = np.zeros(mr * ldy, epi.out.np)
        args = [a, bp] + ([bt] if kt else []) + ([cz * scale] if epi.zero_a else [])
        args += [zb * scale] if epi.zero_b else []
        tile_mult = mult if epi.fixed else mult / np.float32(scale)
        args += [tile_mult] if epi.out is not I32 and epi.mult_per_column else []
        args += [y, 5, k, ldy, ncols] + ([za - 128 * recentre] if epi.zero_a else [])
        args += [int(s) - 128 * k * recentre for s in rs] if epi.zero_b else []
        if epi.out is not I32:
            m_tile = m_scalar if epi.fixed else float(np.float32(m_scalar) / np.float32(scale))
            args += ([] if epi.mult_per_column else [m_tile]) + [zy]
            args += [shift + scale.bit_length() - 1] if epi.fixed else []
        function(lib, kern)(*args)
        want = tile_oracle(a, b, za, zb, rs, epi, mult if epi.mult_per_column else m_scalar,
                           zy, shift)
        got = y.reshape(mr, ldy)
        np.testing.assert_array_equal(got[:, :ncols], want[:, :ncols], err_msg=kern.name)
        assert not got[:, ncols:].any(), "stored past ncols"


@pytest.mark.slow
def test_gemm_tiles_compile_for_avx512(tmp_path):
    kernels = [mk8.gemm_tile(16, *mk8.tile_shape(16), a_t, kt, epi, nib, used)
               for a_t in (U8, I8) for kt in (0, 3) for epi in EPILOGUES for nib in (False, True)
               for used in (0, 3)]
    path = tmp_path / "gemm_avx512.c"
    path.write_text(c_source(kernels, VECTOR_ISAS["avx512"]))
    asm = tmp_path / "gemm_avx512.s"
    subprocess.run(["gcc", *CFLAGS, f"-I{C_DIR}", "-O3", *machine_flags("x86-avx512"), "-S",
                    str(path), "-o", str(asm)], check=True)
    text = asm.read_text()
    assert "vpdpbusd" in text and "vpmovdb" in text


@pytest.mark.parametrize("backend", ["c", "llvm"])
@pytest.mark.slow
def test_avx512_vnni_models(backend, tmp_path):
    """uint8 A takes vpdpbusd, int8 A (qlmm1) the widening form in LLVM; the models run, exact,
    where the CPU has AVX-512 (on AVX2 hosts they are compiled and disassembled only)."""
    rng = np.random.default_rng(5)
    for name, m, feeds in int8_models(rng):
        art = edgec.compile(m, tmp_path / name, target="x86-avx512", name=name, backend=backend)
        obj = f"{name}_kernels.o" if backend == "llvm" else None
        if obj and name in ("mmi0", "qlmm0", "qlmm1"):
            dis = subprocess.run(["objdump", "-d", str(tmp_path / name / obj)],
                                 capture_output=True, text=True, check=True).stdout
            assert ("vpdpbusd" in dis) == (name != "qlmm1"), name
        if not runs_here("x86-avx512"):
            continue
        if name == "mmi_extreme":
            b = numpy_helper.to_array(m.graph.initializer[0]).astype(np.int64)
            want = (feeds["a"].astype(np.int64) @ b).astype(np.int32)
        else:
            want = onnxruntime_run(m, feeds)
        got = edgec.load(art.out_dir).run(feeds)["y"]
        np.testing.assert_array_equal(got, want, err_msg=f"{name} on x86-avx512 {backend}")


@pytest.mark.parametrize("target", ["x86-avx2", "x86-avx512"])
def test_b_larger_than_l2_is_swept_in_chunks_exactly(target, tmp_path):
    # B of 301 x 1000 (packed: 301 KB of panels) passes half the target's 512 KB L2: the
    # kernel sweeps it in chunks of panels, one parallel loop each; a zero point on B and a
    # K % 4 tail ride along
    rng = np.random.default_rng(12)
    b = rng.integers(-128, 128, (301, 1000)).astype(np.int8)
    m = matmul_integer_model((13, 301), b, T.UINT8, 3, -2)
    art = edgec.compile(m, tmp_path, target=target, name="big")
    src = (art.out_dir / "big.c").read_text()
    assert src.count("edgec_parallel_for(") >= 2, "one parallel loop per chunk of panels"
    a = rng.integers(0, 256, (13, 301)).astype(np.uint8)
    want = ((a.astype(np.int64) - 3) @ (b.astype(np.int64) + 2)).astype(np.int32)
    if runs_here(target):
        lib = edgec.load(art.out_dir)
        lib.set_num_threads(2)
        np.testing.assert_array_equal(lib.run({"a": a})["y"], want)


@pytest.mark.parametrize("nibbles,fixed", [(False, False), (True, True)])
def test_conv_tile_stays_opaque(nibbles, fixed):
    """gcc specialising the dense conv tile on its call sites' constant taps unrolls the tap
    loops and spills the accumulators (ResNet-18 int8 ran 1.9x slower when a refactor dropped
    the attribute): every variant is opaque."""
    assert mk8.qconv_tile(16, 2, 14, 16, 4, U8, nibbles, fixed).opaque
    # the GEMM tile too: opaque functions are also built without gcc's PRE, which gave its
    # loop 24 register copies beside 12 vpdpbusd (edgec_runtime.h EDGEC_OPAQUE)
    assert mk8.gemm_tile(16, 6, 2, U8, 0, EPILOGUES[3], nibbles).opaque
