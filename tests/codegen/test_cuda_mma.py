"""Tensor cores and split-K without a GPU: the kernel IR's `Mma` (a warp's mma.sync,
kernel_ir/mma.py) runs on the interpreter lane by lane, each lane reading only its own
fragment words, and matches numpy's product of the operands as the tensor core takes them
(float16, bfloat16, TF32-rounded float32, 8-bit integers exactly); it prints, refuses to
render for CPUs, and nvcc compiles the CUDA renderer's inline PTX for sm_80 and sm_90. GEMM
tiles and implicit-GEMM convolutions on tensor cores (--precision fp16, bf16, tf32) match
onnxruntime on operands rounded as the tensor cores take them; a long K on few tiles splits,
its parts' sums added atomically (`AtomicAdd`, which races only with plain accesses). Running
it on a GPU is for the GPU machine (scripts/gpu_check.sh)."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import edgec
from edgec.codegen.renderers.c import CRenderer
from edgec.codegen.renderers.cuda import CudaRenderer
from edgec.codegen.toolchain import find_nvcc, nvcc_compile
from edgec.errors import EdgecError, KernelError
from edgec.ir.dtypes import DType
from edgec.kernel_ir.interpreter import run_kernel
from edgec.kernel_ir.kernel import Buffer, KernelBuilder, LoopKind, Mma, cast, const, select, walk
from edgec.kernel_ir.mma import a_words, b_words, c_elements, tf32
from edgec.kernel_ir.printer import print_kernel
from edgec.kernel_ir.races import find_races

F32, I32 = DType.F32, DType.I32
KS = {DType.F16: 16, DType.BF16: 16, DType.F32: 8, DType.I8: 32, DType.U8: 32}


def one_warp_product(at: DType, bt: DType, steps: int = 2, warps: int = 1,
                     same_tile: bool = True):
    """C[16, 8] = A[16, K steps] B[K steps, 8] (B given as [8, K steps]) by `warps` warps of a
    block, each staging the operands in shared memory, A's rows padded by 8 elements, and
    summing `steps` mma's; warp w writes its C to rows 16 w of y. With `same_tile` False,
    lane 5 names another tile (a GPU's undefined behaviour, which the interpreter refuses)."""
    k = KS[at] * steps
    acc_t = F32 if at.is_float else I32
    src = F32 if at.is_float else at
    kb = KernelBuilder("mma_t", "a warp's product on tensor cores")
    a = kb.input("a", src, (16 * k,))
    b = kb.input("b", F32 if bt.is_float else bt, (8 * k,))
    y = kb.output("y", acc_t, (warps * 16 * 8,))
    lda = k + 8
    with kb.loop(1, "bx", kind=LoopKind.GRID):
        sa = kb.alloc("sa", at, (16 * lda,), "shared")
        sb = kb.alloc("sb", bt, (8 * k,), "shared")
        with kb.loop(warps, "w", kind=LoopKind.BLOCK) as w, \
                kb.loop(32, "l", kind=LoopKind.BLOCK) as lane:
            with kb.if_(w.eq(0)):
                with kb.loop(16 * k // 32, "e") as e:
                    i = kb.local("i", e * 32 + lane)
                    kb.store(sa, i // k * lda + i % k, cast(a[i], at))
                with kb.loop(8 * k // 32, "e") as e:
                    i = kb.local("i", e * 32 + lane)
                    kb.store(sb, i, cast(b[i], bt))
            kb.barrier()
            acc = kb.alloc("acc", acc_t, (4,))
            for r in range(4):
                kb.store(acc, r, 0)
            with kb.loop(steps, "s") as s:
                a_at = s * KS[at] if same_tile else select(lane.eq(5), s * KS[at] + 2, s * KS[at])
                kb.mma(acc, 0, sa, a_at, lda, sb, s * KS[at], k)
            g, t = lane // 4, lane % 4
            for r, (row, col) in enumerate(c_elements(0)):
                kb.store(y, (w * 16 + g + row) * 8 + 2 * t + col, acc[r])
    return kb.build()


def operands(at: DType, bt: DType, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    if at.is_float:
        a = rng.standard_normal((16, k)).astype(np.float32)
        b = rng.standard_normal((8, k)).astype(np.float32)
        return a, b
    lo = {DType.I8: -128, DType.U8: 0}
    a = rng.integers(lo[at], lo[at] + 256, (16, k)).astype(at.np)
    b = rng.integers(lo[bt], lo[bt] + 256, (8, k)).astype(bt.np)
    return a, b


def as_tensor_core_takes(x: np.ndarray, dt: DType) -> np.ndarray:
    """The operand values a tensor core multiplies (float64; integers as int64)."""
    if dt is DType.F16:
        return x.astype(np.float16).astype(np.float64)
    if dt is DType.BF16:
        return x.astype(ml_dtypes.bfloat16).astype(np.float64)
    if dt is DType.F32:
        return tf32(x).astype(np.float64)
    return x.astype(np.int64)


PAIRS = [(DType.F16, DType.F16), (DType.BF16, DType.BF16), (DType.F32, DType.F32),
         (DType.I8, DType.I8), (DType.U8, DType.I8), (DType.I8, DType.U8),
         (DType.U8, DType.U8)]


@pytest.mark.parametrize("at,bt", PAIRS, ids=[f"{a}x{b}" for a, b in PAIRS])
def test_an_mma_computes_the_product_of_its_operands_as_the_tensor_core_takes_them(at, bt):
    steps, warps = 2, 2
    kern = one_warp_product(at, bt, steps, warps)
    k = KS[at] * steps
    a, b = operands(at, bt, k)
    y = np.zeros(warps * 128, F32.np if at.is_float else I32.np)
    assert find_races(kern, a.reshape(-1), b.reshape(-1), y) == []
    want = as_tensor_core_takes(a, at) @ as_tensor_core_takes(b, bt).T
    for w in range(warps):
        got = y[w * 128:(w + 1) * 128].reshape(16, 8)
        if at.is_float:  # one float32 rounding of an exact sum in float64
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, want)
    if at.is_float:  # the rounding of the operands shows: float32 products differ
        exact = a.astype(np.float64) @ b.astype(np.float64).T
        assert np.abs(exact - want).max() > 1e-5


def test_tf32_rounds_to_nearest_with_ties_away_from_zero():
    one = np.float32(1.0)
    ulp = np.float32(2.0 ** -10)  # a TF32 ulp at 1
    xs = np.array([one + ulp / 2, one + ulp / 2 - ulp / 8, -(one + ulp / 2), one + ulp * 1.5,
                   np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(tf32(xs), [one + ulp, one, -(one + ulp), one + 2 * ulp,
                                             np.inf, -np.inf])
    assert np.isnan(tf32(np.array([np.nan], np.float32)))[0]


def test_the_fragment_layout_covers_each_element_once():
    """Over a warp's lanes, the words of A cover A [16, K] once, those of B [K, 8] once, the
    accumulators C [16, 8] once (PTX's tables, as kernel_ir/mma.py writes them)."""
    for per in (1, 2, 4):
        k = 8 * per
        a = np.zeros((16, k), int)
        b = np.zeros((k, 8), int)
        c = np.zeros((16, 8), int)
        for lane in range(32):
            for row, k0 in a_words(lane, per, k):
                a[row, k0:k0 + per] += 1
            for col, k0 in b_words(lane, per, k):
                b[k0:k0 + per, col] += 1
            for row, col in c_elements(lane):
                c[row, col] += 1
        assert (a == 1).all() and (b == 1).all() and (c == 1).all()
    assert a_words(9, 2, 16) == [(2, 2), (10, 2), (2, 10), (10, 10)]  # PTX: g 2, t 1


def test_lanes_that_name_different_tiles_are_refused():
    kern = one_warp_product(DType.F16, DType.F16, same_tile=False)
    a, b = operands(DType.F16, DType.F16, 32)
    with pytest.raises(KernelError, match="differ between the lanes of a warp"):
        run_kernel(kern, a.reshape(-1), b.reshape(-1), np.zeros(128, np.float32))


def test_an_mma_prints_and_the_cpu_renderers_refuse_it():
    kern = one_warp_product(DType.F16, DType.F16)
    assert "mma acc[0:+4] += sa[s * 16; ld 40] * sb[s * 16; ld 32]" in print_kernel(kern)
    with pytest.raises(ValueError, match="GPU warp's tensor-core"):
        CRenderer().stmts([s for s in walk(kern.body) if isinstance(s, Mma)], "")
    acc = Buffer("acc", F32, (4,), "scratch", space="local")
    with pytest.raises(ValueError, match="mma of f16 by f32"):
        Mma(acc, const(0), Buffer("a", DType.F16, (64,)), const(0), 16,
            Buffer("b", F32, (64,)), const(0), 16)
    with pytest.raises(ValueError, match="not multiples of 2"):
        Mma(acc, const(0), Buffer("a", DType.F16, (64,)), const(0), 15,
            Buffer("b", DType.F16, (64,)), const(0), 16)


@pytest.mark.cross
def test_nvcc_compiles_the_tensor_core_kernels(tmp_path):
    """Every operand pair's mma.sync, for sm_80 and sm_90 (warnings as errors)."""
    kernels = [one_warp_product(a, b) for a, b in PAIRS]
    for n, kern in enumerate(kernels):
        kern.name = f"mma_{n}"
    (tmp_path / "mma.cu").write_text(CudaRenderer().source(kernels))
    if find_nvcc() is None:
        pytest.skip("no nvcc")
    assert nvcc_compile("mma.cu", tmp_path, archs=("sm_80", "sm_90")) == "mma.o"


# -- GEMM tiles on tensor cores ---------------------------------------------------------------

def cuda_at(precision: str):
    from edgec.targets.target import get_target

    tgt = get_target("cuda")
    return dataclasses.replace(tgt, gpu=dataclasses.replace(tgt.gpu, precision=precision))


ROUNDED = {"fp16": DType.F16, "bf16": DType.BF16, "tf32": DType.F32}


@pytest.mark.parametrize("precision, warps, m, n, k", [
    ("fp16", 4, 70, 45, 37), ("bf16", 1, 70, 45, 37), ("fp16", 1, 16, 96, 64),
    ("tf32", 1, 16, 96, 64)])  # (TF32's 4 mma's a step of 32 k's: the slowest to interpret)
def test_gemm_tiles_on_tensor_cores_compute_the_product_of_the_rounded_operands(
        precision, warps, m, n, k):
    """gpu_mma_tiles with 1 and 4 warps a block, on shapes that end mid-tile along every
    side: the product of the operands rounded as the precision says, summed in float32,
    without races; farther from float32's product than float32 rounding explains."""
    from edgec.lowering.kernels.gpu_tiles import gpu_mma_tiles
    from edgec.lowering.lower import NodeKernelBuilder

    kb = NodeKernelBuilder("tiles", target=cuda_at(precision))
    a, b = kb.input("a", F32, (m * k,)), kb.input("b", F32, (k * n,))
    y = kb.output("y", F32, (m * n,))
    gpu_mma_tiles(kb, lambda z, i, kk: a[i * k + kk], lambda z, kk, j: b[kk * n + j],
                  lambda z, i, j, acc: kb.store(y, i * n + j, acc), m, n, k, 1,
                  ROUNDED[precision], warps)
    kern = kb.build()
    rng = np.random.default_rng(warps)
    av = rng.standard_normal((m, k)).astype(np.float32)
    bv = rng.standard_normal((k, n)).astype(np.float32)
    out = np.zeros(m * n, np.float32)
    assert find_races(kern, av.reshape(-1), bv.reshape(-1), out) == []
    dt = ROUNDED[precision]
    want = as_tensor_core_takes(av, dt) @ as_tensor_core_takes(bv, dt)
    np.testing.assert_allclose(out.reshape(m, n), want, rtol=1e-5, atol=1e-5)
    assert np.abs(av.astype(np.float64) @ bv - want).max() > 1e-4


def rounded(model, feeds: dict, dt: DType, operands: set[str]):
    """`model` and `feeds` with the tensors named in `operands` (weights or inputs) rounded
    as tensor cores take them: what onnxruntime, in float32, then computes is the oracle."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for init in model.graph.initializer:
        if init.name in operands:
            w = numpy_helper.to_array(init)
            init.CopyFrom(numpy_helper.from_array(
                as_tensor_core_takes(w, dt).astype(np.float32), init.name))
    return model, {k: as_tensor_core_takes(v, dt).astype(np.float32) if k in operands else v
                   for k, v in feeds.items()}


def on_tensor_cores(model, precision: str, operands: set[str], prefix: str):
    """`model` built for CUDA at `precision` (bound to grids), run on the interpreter thread
    by thread with every access watched for races, against onnxruntime on the model with its
    products' operands rounded as the tensor cores take them; the program's strategies."""
    from convnets import onnxruntime_outputs, random_feeds
    from lowering.test_kernels_interpreted import pipelined

    from edgec.compiler.driver import load_graph
    from edgec.kernel_ir.gpu import bind_program
    from edgec.kernel_ir.program_interp import run_program
    from edgec.lowering.program import build_program

    g = pipelined(load_graph(model), "cuda")
    prog = build_program(g, g.record.memory_plan, cuda_at(precision), "t", prefix=prefix)
    prog = dataclasses.replace(prog, body=bind_program(prog.body))
    feeds = random_feeds(model)
    races = []
    got = run_program(prog, feeds, launch=lambda k, *a: races.extend(find_races(k, *a)))
    assert not races, races[0]
    oracle, oracle_feeds = rounded(model, feeds, ROUNDED[precision], operands)
    for name, want in onnxruntime_outputs(oracle, oracle_feeds).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-4)
        plain = onnxruntime_outputs(model, feeds)[name]
        assert np.abs(got[name] - plain).max() > 1e-5  # the rounding shows
    return prog.strategies


@pytest.mark.parametrize("precision, case", [
    ("fp16", dict(c=20, m=24, size=(9, 7), kernel=(3, 3), pads=[1, 1, 1, 1])),
    ("bf16", dict(c=8, m=16, size=(6, 5), kernel=(3, 3), pads=[1, 1, 1, 1],
                  then="residual")),
    ("tf32", dict(c=20, m=32, size=(6, 6), kernel=(3, 3), group=2, pads=[1, 1, 1, 1])),
], ids=["fp16-3x3", "bf16-residual", "tf32-groups"])
def test_convolutions_run_on_tensor_cores_at_the_precision_asked(precision, case):
    """--precision fp16 / bf16 / tf32: the implicit-GEMM convolution's weights and gathered
    input are staged in the precision and summed by mma's in float32, the bias, residual and
    activation added in float32 as each output is stored."""
    from codegen.test_cuda import conv_model

    strategies = on_tensor_cores(conv_model(**case), precision, {"w", "x"}, "tc_")
    (conv,) = [s for s in strategies if s["op"] in ("Conv", "FusedConv")]
    assert f"implicit GEMM, shared-memory tiles, tensor cores ({precision})" in \
        conv["strategy"], conv


def test_a_matrix_product_runs_on_tensor_cores():
    from codegen.test_cuda import gemm_model

    strategies = on_tensor_cores(gemm_model(17, 40, 33, True, False), "fp16", {"a", "b"},
                                 "tm_")
    assert any("GPU GEMM, shared-memory tiles, tensor cores (fp16)" in str(s)
               for s in strategies), strategies


@pytest.mark.cross
@pytest.mark.parametrize("name,precision", [("resnet18", "fp16"), ("mobilenet_v2", "tf32")])
def test_the_benchmark_models_build_with_their_convolutions_on_tensor_cores(name, precision,
                                                                            tmp_path):
    """Every kernel through nvcc for sm_90 at --precision fp16 / tf32; every convolution
    that takes the implicit GEMM (16 output channels and 16 terms and more: all but
    MobileNetV2's 17 depthwise ones) and every matrix product on tensor cores, none left on
    the CUDA cores; the manifest says the precision."""
    from edgec import zoo

    model = zoo.MODELS[name]()
    art = edgec.compile(model, tmp_path / name, name=name, target="cuda", tune=False,
                        precision=precision)
    assert art.manifest["precision"] == precision
    kinds = [r["strategy"] for r in art.manifest["kernel_strategies"]]
    gemms = [k for k in kinds if "shared-memory tiles" in k]
    assert gemms and all(f"tensor cores ({precision})" in k for k in gemms), kinds
    convs = [k for k in kinds if k.startswith("conv")]
    assert sum("implicit GEMM" in k for k in convs) == (20 if name == "resnet18" else 35), \
        convs


def test_what_precision_refuses(tmp_path):
    from edgec import zoo

    model = zoo.mlp()
    with pytest.raises(EdgecError, match="--precision fp16 is for --target cuda"):
        edgec.compile(model, tmp_path / "a", target="x86", precision="fp16")
    with pytest.raises(EdgecError, match="which sm_75 lacks: build for sm_80 or later"):
        edgec.compile(model, tmp_path / "b", target="cuda", precision="tf32",
                      gpu_arch=("sm_75", "sm_90"))
    with pytest.raises(EdgecError, match="--precision fp8: one of fp32, tf32, fp16, bf16"):
        edgec.compile(model, tmp_path / "c", target="cuda", precision="fp8")


# -- split-K: atomic adds ---------------------------------------------------------------------

def test_atomic_adds_race_only_with_plain_accesses():
    """Every thread of two blocks adds into y[0] atomically: no race, the sum exact (integers);
    a plain load of y[0] in the same launch races with them."""
    def kernel(read: bool):
        kb = KernelBuilder("atomics")
        y = kb.output("y", I32, (2,))
        with kb.loop(2, "b", kind=LoopKind.GRID) as blk, \
                kb.loop(64, "t", kind=LoopKind.BLOCK) as t:
            kb.atomic_add(y, 0, cast(blk * 64 + t, I32))
            if read:
                kb.store(y, 1, y[0])
        return kb.build()

    y = np.zeros(2, np.int32)
    assert find_races(kernel(False), y) == []
    assert y[0] == sum(range(128))
    races = find_races(kernel(True), np.zeros(2, np.int32))
    assert races and races[0].buffer == "y" and races[0].index == 0
    assert "atomicAdd(y, (int32_t)(" in CudaRenderer().source([kernel(False)]).replace(
        "y + 0", "y")
    with pytest.raises(ValueError, match="an atomic add is a GPU's"):
        CRenderer().stmts([s for s in walk(kernel(False).body)
                           if type(s).__name__ == "AtomicAdd"], "")


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_a_long_k_on_few_tiles_splits_k_with_atomic_adds(precision):
    """A 3x3 convolution of 128 channels (256 on tensor cores, whose steps are twice as long)
    on a 4 x 4 image (one tile; K = 1152 or 2304): K split
    in parts whose sums each block adds atomically into the output, zeroed by a launch
    before; a launch after adds the bias and the residual and applies the Relu. Against
    onnxruntime, race-free (atomic adds race with nothing but plain accesses)."""
    from codegen.test_cuda import conv_model

    model = conv_model(c=128 if precision == "fp32" else 256, m=16, size=(4, 4),
                       kernel=(3, 3), pads=[1, 1, 1, 1],
                       then="residual")
    if precision == "fp32":
        from codegen.test_cuda import gpu_checked

        prog, kernels = gpu_checked(model, "sk_", rtol=1e-4, atol=1e-4)
        strategies = prog.strategies
    else:
        strategies = on_tensor_cores(model, precision, {"w", "x"}, "sk_")
    (conv,) = [s for s in strategies if s["op"] in ("Conv", "FusedConv")]
    assert "K split" in conv["strategy"] and "ways (atomic adds)" in conv["strategy"], conv


def test_late_resnet_layers_split_k_and_early_ones_do_not():
    from edgec.lowering.kernels.gpu_tiles import gpu_split_k
    from edgec.targets.target import get_target

    h100 = get_target("cuda")
    assert gpu_split_k(h100, 128, 288) == 4  # layer 4: 32 x 4 tiles of 16, K 4608
    assert gpu_split_k(h100, 208, 144) == 2  # layer 3
    assert gpu_split_k(h100, 784, 36) == 1  # layer 1 fills the GPU
    assert gpu_split_k(h100, 196, 36) == 1  # layer 1 at 2 x 2 outputs a thread: K too short
    assert gpu_split_k(h100, 32, 144) == 8  # layer 4 on tensor cores: 16 x 2 tiles of 32
