"""Kernels on a GPU without a GPU: `bind_threads` (kernel_ir/gpu.py) maps every op's CPU kernel
onto a grid of thread blocks, the interpreter runs the bound kernels (their block loops thread
by thread) against the ONNX node tests' expected outputs while `find_races` (kernel_ir/races.py)
watches every access for data races, and nvcc compiles the CUDA renderer's source of all of
them, warnings as errors. Elementwise and row-wise ops, pooling, strided copies, Concat,
Split, Gather, depthwise and narrow convolutions (conv-threads), integer convolutions
(int-conv-threads) and one-row products by a run-time B (matmul-dots) get a thread per
output; convolutions of 16 channels and more an implicit GEMM in shared-memory tiles
(conv-gemm-tiles) and products of several rows shared-memory tiles, register-blocked where
the GPU stays full; one-row products (matmul-warps), integer products, Softmax, LogSoftmax
(innermost axis), LayerNormalization and the reductions over a contiguous innermost run of
axes a warp per output or row (its reductions of `shfl_xor`, which the interpreter runs lane
by lane), the rest one thread. Quantized models compute the reference interpreter's integers
bit for bit. A program linked against the static CUDA runtime gets the launch's error, not a
crash, where there is no GPU. Running the kernels on a GPU is for the GPU machine
(scripts/gpu_check.sh, issue 33)"""

from __future__ import annotations

import dataclasses
import io
import math
import re
import subprocess

import numpy as np
import onnx
import pytest
from convnets import onnxruntime_outputs, random_feeds, residual_cnn, samples
from kernel_ir.test_gpu_constructs import K, M, N, T, tiled_gemm
from lowering.test_kernels_interpreted import BY_OP, load_node_test, pipelined
from onnx import TensorProto, helper, numpy_helper
from test_control_flow import control_flow_model

import edgec
from edgec import zoo
from edgec.codegen.renderers.cuda import CudaRenderer
from edgec.codegen.toolchain import find_nvcc, nvcc_compile
from edgec.errors import EdgecError
from edgec.ir import interpret
from edgec.ir.dtypes import DType
from edgec.kernel_ir.gpu import bind_program, bind_threads, kernels_of, launches
from edgec.kernel_ir.interpreter import run_kernel
from edgec.kernel_ir.kernel import KernelBuilder, Loop, LoopKind, cast, const, var
from edgec.kernel_ir.printer import print_kernel
from edgec.kernel_ir.program_interp import run_program
from edgec.kernel_ir.races import find_races
from edgec.lowering.program import build_program
from edgec.targets.target import get_target
from edgec.testing import conformance

F32 = DType.F32


def cast_f32(e):
    return cast(e, F32)


def doubling(n: int, serial_tail: bool = False):
    kb = KernelBuilder("dbl", "y = 2x")
    x, y = kb.input("x", F32, (n,)), kb.output("y", F32, (n,))
    with kb.loop(n, "i", kind="parallel") as i:
        kb.store(y, i, x[i] * 2.0)
    if serial_tail:  # y[0] += 1, after the parallel loop, by one thread
        kb.store(y, 0, y[0] + 1.0)
    return kb.build()


# -- bind_threads and launches, by hand ------------------------------------------------------

def test_a_parallel_loop_becomes_a_guarded_grid():
    k = bind_threads(doubling(1000, serial_tail=True), threads=256)
    assert print_kernel(k).splitlines()[2:9] == [
        "  for _b0 < 4 grid {",
        "    for _t0 < 256 block {",
        "      let i: index = _b0 * 256 + _t0",
        "      if i < 1000 {",
        "        y[i] = x[i] * 2.0",
        "      }",
        "    }"]
    first, tail = launches(k)
    assert [loop.extent.value for loop in first.grid + first.block] == [4, 256]
    assert [loop.extent.value for loop in tail.grid + tail.block] == [1, 1]
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros(1000, np.float32)
    run_kernel(k, x, y)
    want = 2 * x
    want[0] += 1
    np.testing.assert_array_equal(y, want)


def test_a_short_loop_is_one_block_without_a_guard():
    k = bind_threads(doubling(100))
    (launch,) = launches(k)
    assert [loop.extent.value for loop in launch.grid + launch.block] == [1, 100]
    assert "if" not in print_kernel(k)


def test_a_uniform_local_is_computed_by_each_launch_and_a_serial_one_refused():
    """A top-level local that only reads inputs (a zero point read at run time) is computed
    in the prologue of each launch that reads it; one that a serial loop accumulates, or
    that reads a buffer the kernel writes, lives in one launch and cannot be shared."""
    kb = KernelBuilder("uniform_local")
    x, y = kb.input("x", F32, (8,)), kb.output("y", F32, (8,))
    s = kb.local("s", x[0])
    t = kb.local("t", s * 2.0)
    with kb.loop(8, "i", kind="parallel") as i:
        kb.store(y, i, x[i] + t)
    given = kb.build()
    before = print_kernel(given)
    k = bind_threads(given)
    assert print_kernel(given) == before  # (the kernel given stays as it was)
    (launch,) = launches(k)
    assert [loc.name for loc in launch.prologue] == ["s", "t"]
    xs = np.arange(8, dtype=np.float32) + 1
    ys = np.zeros(8, np.float32)
    run_kernel(k, xs, ys)
    np.testing.assert_array_equal(ys, xs + 2 * xs[0])

    kb = KernelBuilder("serial_local")
    x, y = kb.input("x", F32, (8,)), kb.output("y", F32, (8,))
    s = kb.local("s", const(0.0, F32))
    with kb.loop(8, "j") as j:
        kb.assign(s, s + x[j])
    with kb.loop(8, "i", kind="parallel") as i:
        kb.store(y, i, x[i] + s)
    with pytest.raises(EdgecError, match="launch _b1 reads s, defined in another launch"):
        bind_threads(kb.build())

    kb = KernelBuilder("written_local")
    x, y = kb.input("x", F32, (8,)), kb.output("y", F32, (8,))
    kb.store(y, 0, x[1])
    s = kb.local("s", y[0])
    with kb.loop(8, "i", kind="parallel") as i:
        kb.store(y, i, x[i] + s)
    with pytest.raises(EdgecError, match="launch _b1 reads s, defined in another launch"):
        bind_threads(kb.build())


def test_launches_refuse_what_a_gpu_cannot_launch():
    def nest(kinds_extents, body=()):
        inner = list(body)
        for n, (kind, extent) in reversed(list(enumerate(kinds_extents))):
            inner = [Loop(f"v{n}", const(extent), inner, kind)]
        return inner

    g, b = LoopKind.GRID, LoopKind.BLOCK
    k = doubling(4)
    for body, message in (
            (nest([(g, 2)] * 4 + [(b, 4)]), "4 grid loops; a GPU has 3 grid dimensions"),
            (nest([(g, 2), (b, 64), (b, 32)]), "2048 threads in a block; at most 1024"),
            (nest([(g, 2), (b, 128), (b, 2), (b, 2)]), "block loop v1 of 128; at most 64"),
            (nest([(g, 70000), (g, 2), (b, 4)]), "grid loop v0 of 70000; at most 65535"),
            (k.body, "a Loop outside the grid loops"),
            ([Loop("v", const(2), [*nest([(b, 4)]), *nest([(b, 4)])], g)],
             "must hold Allocs and Locals, then one nest of block loops")):
        with pytest.raises(EdgecError, match=message):
            launches(dataclasses.replace(k, body=body))
    with pytest.raises(EdgecError, match="a block loop of run-time extent"):
        launches(dataclasses.replace(k, body=[Loop("g", const(1), [
            Loop("t", var("n"), [], b)], g)]))


# -- data races, by hand ------------------------------------------------------------------------

def swap_through_shared(barrier: bool):
    """Two threads: each writes s[t], then reads the other's s[1 - t] into y[t]."""
    kb = KernelBuilder("swap")
    x, y = kb.input("x", F32, (2,)), kb.output("y", F32, (2,))
    with kb.loop(1, "b", "grid"):
        s = kb.alloc("s", F32, (2,), "shared")
        with kb.loop(2, "t", "block") as t:
            kb.store(s, t, x[t])
            if barrier:
                kb.barrier()
            kb.store(y, t, s[1 - t])
    return kb.build()


def test_threads_of_a_block_race_without_a_barrier():
    x = np.array([1.0, 2.0], np.float32)
    y = np.zeros(2, np.float32)
    assert find_races(swap_through_shared(True), x, y) == []
    np.testing.assert_array_equal(y, [2.0, 1.0])
    races = find_races(swap_through_shared(False), x, np.zeros(2, np.float32))
    assert [str(r) for r in races] == [
        "launch 0: s[0]: write by block (0,) thread (0,) (after 0 barriers) and read by "
        "block (0,) thread (1,) (after 0 barriers)",
        "launch 0: s[1]: write by block (0,) thread (1,) (after 0 barriers) and read by "
        "block (0,) thread (0,) (after 0 barriers)"]


def test_blocks_race_on_one_element_and_parallel_iterations_too():
    kb = KernelBuilder("sum_into_one")
    x, y = kb.input("x", F32, (4,)), kb.output("y", F32, (2,))
    with kb.loop(4, "i", kind="parallel") as i:  # iterations 2j and 2j+1 both write y[j]
        kb.store(y, i // 2, x[i])
    k = bind_threads(kb.build(), threads=2)  # 2 blocks of 2 threads
    races = find_races(k, np.arange(4, dtype=np.float32), np.zeros(2, np.float32))
    assert [(r.buffer, r.index, r.first[:2], r.second[:2]) for r in races] == [
        ("y", 0, ((0,), (0,)), ((0,), (1,))), ("y", 1, ((1,), (0,)), ((1,), (1,)))]
    kb = KernelBuilder("all_to_one")
    y = kb.output("y", F32, (1,))
    with kb.loop(3, "b", "grid") as b, kb.loop(1, "t", "block"):
        kb.store(y, 0, cast_f32(b))
    (race,) = find_races(kb.build(), np.zeros(1, np.float32))
    assert race.first[0] != race.second[0] and race.first[3]  # two blocks, one writes


# -- every op's kernels, bound, on the interpreter ----------------------------------------------

def one_test_per_op() -> dict[str, str]:
    """The shortest-named passing node test of each op whose inputs are small enough for the
    interpreter (conformance.py's suite, as test_kernels_interpreted.py takes it)."""
    return {op: min(tests, key=len) for op, tests in BY_OP.items()}


TESTS = one_test_per_op()


def bound_program(test: str, n: int):
    g, feeds, wants, names = load_node_test(test)
    p = pipelined(g, "cuda")
    prog = build_program(p, p.record.memory_plan, get_target("cuda"), "t", prefix=f"o{n}_")
    return dataclasses.replace(prog, body=bind_program(prog.body)), feeds, wants, names


@pytest.mark.parametrize("op", TESTS)
def test_every_op_runs_bound_to_a_grid_without_races(op):
    test = TESTS[op]
    prog, feeds, wants, names = bound_program(test, 0)
    for k in kernels_of(prog.body):
        launches(k)  # each a sequence of launches a GPU takes
    races = []
    got = run_program(prog, feeds, launch=lambda k, *a: races.extend(find_races(k, *a)))
    assert not races, f"{test}: {len(races)} races, the first: {races[0]}"
    rtol, atol = conformance.tolerances(test)
    for name, want in zip(names, wants, strict=True):
        bad = conformance.mismatch(got[name], want, rtol, atol)
        assert bad is None, f"{test}: output {name} {bad}"


# -- warp exchanges: shfl_xor and the reductions built of it --------------------------------------

def test_a_warp_reduction_gives_every_lane_its_warps_sum_and_renders_as_shuffles():
    """Two warps of a 64-thread block each fold their lanes' values (by hand: lane sums of
    0..31 and 32..63); a warp reduction on a CPU target is refused by name."""
    kb = KernelBuilder("warp_sums")
    y = kb.output("y", F32, (64,))
    with kb.loop(1, "b", "grid"), kb.loop(64, "t", "block") as t:
        v = kb.local("v", cast_f32(t))
        kb.warp_reduce(v, "add")
        kb.store(y, t, v)
    k = kb.build()
    out = np.zeros(64, np.float32)
    run_kernel(k, out)
    np.testing.assert_array_equal(out, [496.0] * 32 + [1520.0] * 32)
    assert "shfl_xor(v, 16)" in print_kernel(k)
    src = CudaRenderer().source([k])
    assert src.count("__shfl_xor_sync(0xffffffffu, v, ") == 5
    from edgec.codegen.renderers.c import CRenderer

    with pytest.raises(ValueError, match="shfl_xor exchanges values between a GPU warp"):
        CRenderer().kernel(k)


def test_a_shuffle_some_lanes_skip_is_caught():
    kb = KernelBuilder("diverged")
    y = kb.output("y", F32, (32,))
    with kb.loop(1, "b", "grid"), kb.loop(32, "t", "block") as t:
        v = kb.local("v", cast_f32(t))
        with kb.if_(t < 16):
            kb.warp_reduce(v, "max")
        kb.store(y, t, v)
    with pytest.raises(Exception, match="did not all reach the same barriers or warp"):
        run_kernel(kb.build(), np.zeros(32, np.float32))


def gpu_checked(model, prefix: str, feeds=None, rtol: float = 1e-5, atol: float = 1e-5,
                exact: bool = False, strategies=None):
    """`model` compiled as the CUDA library's program is (bound to grids), run on the
    interpreter thread by thread with every access watched for races, against onnxruntime
    on the CPU (`exact`: bit for bit): (the program, its kernels). `strategies`: as
    `--strategy` takes them."""
    from edgec.compiler.driver import load_graph

    g = pipelined(load_graph(model), "cuda")
    prog = build_program(g, g.record.memory_plan, get_target("cuda"), "t", prefix=prefix,
                         strategies=strategies)
    prog = dataclasses.replace(prog, body=bind_program(prog.body))
    feeds = random_feeds(model) if feeds is None else feeds
    races = []
    got = run_program(prog, feeds, launch=lambda k, *a: races.extend(find_races(k, *a)))
    assert not races, races[0]
    for name, want in onnxruntime_outputs(model, feeds).items():
        if exact:
            np.testing.assert_array_equal(got[name], want)
        else:
            np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol)
    return prog, kernels_of(prog.body)


def nvcc_takes(kernels, folder, stem: str) -> None:
    """The CUDA renderer's source of `kernels` compiles (nvcc, warnings as errors)."""
    (folder / f"{stem}.cu").write_text(CudaRenderer().source(kernels))
    if find_nvcc() is not None:
        assert nvcc_compile(f"{stem}.cu", folder) == f"{stem}.o"


def softmax_model(op: str, shape):
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], axis=-1)], "sm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape", [(3, 5, 70), (2, 10), (16, 64)])
def test_softmax_runs_a_warp_per_row(op, shape, tmp_path):
    """Rows longer than a warp (70: three steps, the last partial), shorter (10: most lanes
    idle), a whole number of warps (64); 15 rows: the last block's spare warps skip their
    row. Against onnxruntime, on the thread-by-thread interpreter, race-free; nvcc takes it."""
    prog, (k,) = gpu_checked(softmax_model(op, shape), "sm_", atol=1e-6)
    (launch,) = launches(k)
    assert [lp.extent.value for lp in launch.block] == [min(8, np.prod(shape[:-1])), 32]
    nvcc_takes([k], tmp_path, "sm")


def reduce_model(op: str, shape, axes, dtype=np.float32):
    from onnx import helper, numpy_helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    out = [1 if d in [a % len(shape) for a in axes] else n for d, n in enumerate(shape)]
    g = helper.make_graph([helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)], "red",
                          [helper.make_tensor_value_info("x", elem, shape)],
                          [helper.make_tensor_value_info("y", elem, out)],
                          [numpy_helper.from_array(np.array(axes, np.int64), "axes")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


@pytest.mark.parametrize("op,shape,axes,dtype", [
    ("ReduceSum", (5, 70), [-1], np.float32), ("ReduceMax", (3, 4, 9), [1, 2], np.float32),
    ("ReduceMean", (17, 64), [1], np.float32), ("ReduceProd", (4, 33), [-1], np.float32),
    ("ReduceL2", (6, 50), [-1], np.float32), ("ReduceMin", (2, 3, 40), [2], np.float32),
    ("ReduceSum", (9, 100), [1], np.int32)])
def test_reductions_over_the_innermost_axes_run_a_warp_per_output(op, shape, axes, dtype):
    """A contiguous innermost reduced run: a warp per output (8 a block), its lanes' partial
    results folded by shfl_xor; against onnxruntime (int32 sums exactly), race-free."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(dtype) if dtype == np.float32 else \
        rng.integers(-1000, 1000, shape).astype(dtype)
    _, (k,) = gpu_checked(reduce_model(op, shape, axes, dtype), "rd_", {"x": x},
                          exact=dtype == np.int32)
    (launch,) = launches(k)
    assert launch.block[-1].extent.value == 32


def gemm_model(m: int, k: int, n: int, trans_b: bool, runtime_b: bool, trans_a: bool = False):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    bshape = (n, k) if trans_b else (k, n)
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, (k, m) if trans_a else (m, k))]
    inits = [numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "c")]
    if runtime_b:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, bshape))
    else:
        inits.append(numpy_helper.from_array(rng.standard_normal(bshape).astype(np.float32),
                                             "b"))
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["g"], transA=int(trans_a),
                              transB=int(trans_b), alpha=0.5),
             helper.make_node("Relu", ["g"], ["y"])]
    g = helper.make_graph(nodes, "gemm", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, (m, n))], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.mark.parametrize("m,k,n,trans_b,runtime_b,trans_a", [
    (5, 37, 20, True, False, False), (17, 16, 33, False, True, False),
    (2, 40, 10, True, True, False), (6, 21, 19, False, False, True)])
def test_matrix_products_run_shared_memory_tiles(m, k, n, trans_b, runtime_b, trans_a,
                                                 tmp_path):
    """Gemm + Relu (alpha 0.5, a bias; B a weight or an input, transposed or not; A
    transposed in the last case, which the tiles read at A[k, i]): 16 x 16
    tiles of A and B in shared memory, K in steps of 16 (the last partial), edge tiles
    guarded; against onnxruntime on the interpreter, race-free; nvcc takes it."""
    prog, kernels = gpu_checked(gemm_model(m, k, n, trans_b, runtime_b, trans_a), "mm_")
    assert any("GPU GEMM, shared-memory tiles" in str(s) for s in prog.strategies), \
        prog.strategies
    tiled = [launch for k in kernels for launch in launches(k) if len(launch.block) == 2]
    assert tiled and [lp.extent.value for lp in tiled[0].block] == [16, 16]
    nvcc_takes(kernels, tmp_path, "mm")


@pytest.mark.parametrize("k,n,trans_b,runtime_b", [
    (100, 20, True, False), (70, 33, False, False), (64, 9, True, True)])
def test_one_row_products_run_a_warp_per_output(k, n, trans_b, runtime_b, tmp_path):
    """Gemm + Relu of one row (the MLP's and the classifiers' at batch 1): a warp an output,
    its lanes striding along K through B as [N, K] (a weight given as [K, N] transposed at
    compile time; an input given transposed read as it is), folded by shuffles, lane 0
    storing with the bias and the activation; K not a multiple of the warp. Against
    onnxruntime on the interpreter, race-free; nvcc takes it. A run-time B given as [K, N]
    keeps a thread an output (its lanes would not read B coalesced)."""
    prog, kernels = gpu_checked(gemm_model(1, k, n, trans_b, runtime_b), "mw_")
    gemm = prog.strategies[0]  # (then the Relu: alpha 0.5 keeps them apart)
    assert gemm["strategy"] == "matmul, a GPU warp an output", gemm
    (launch,) = launches(kernels[0])
    assert [lp.extent.value for lp in launch.block] == [min(8, n), 32]
    nvcc_takes(kernels, tmp_path, "mw")
    prog, _ = gpu_checked(gemm_model(1, 70, 5, False, True), "md_")
    assert prog.strategies[0]["strategy"] == "matmul dot products", prog.strategies


@pytest.mark.parametrize("reg", [2, 4])
@pytest.mark.parametrize("m, n, k", [(70, 45, 37), (16, 96, 20)])
def test_register_blocked_tiles_compute_the_product_without_races(reg, m, n, k):
    """gpu_tiles with reg x reg outputs a thread (staging reg elements of A and of B a
    thread per step), on shapes that end mid-tile along every side."""
    from edgec.lowering.kernels.gpu_tiles import gpu_tiles
    from edgec.lowering.lower import NodeKernelBuilder

    kb = NodeKernelBuilder("tiles", target=get_target("cuda"))
    a, b = kb.input("a", F32, (m * k,)), kb.input("b", F32, (k * n,))
    y = kb.output("y", F32, (m * n,))
    gpu_tiles(kb, lambda z, i, kk: a[i * k + kk], lambda z, kk, j: b[kk * n + j],
               lambda z, i, j, acc: kb.store(y, i * n + j, acc), F32, m, n, k, reg=reg)
    kern = kb.build()
    (launch,) = launches(kern)
    side = 16 * reg
    assert [loop.extent.value for loop in launch.grid] == [1, -(-m // side), -(-n // side)]
    rng = np.random.default_rng(reg)
    av = rng.standard_normal((m, k)).astype(np.float32)
    bv = rng.standard_normal((k, n)).astype(np.float32)
    out = np.zeros(m * n, np.float32)
    assert find_races(kern, av.reshape(-1), bv.reshape(-1), out) == []
    np.testing.assert_allclose(out.reshape(m, n), av @ bv, rtol=1e-4, atol=1e-4)


def conv_model(c: int, m: int, size, kernel, bias: bool = True, then: str = "", **attrs):
    """x [1, c, *size] -> Conv (m channels, `kernel`, attrs) [-> Relu, or + a residual input
    of the output's shape -> Relu, with `then` "relu" or "residual"]."""
    rng = np.random.default_rng(len(size) + m)
    f = TensorProto.FLOAT
    group = attrs.get("group", 1)
    inits = [numpy_helper.from_array(
        (rng.standard_normal((m, c // group, *kernel)) * 0.2).astype(np.float32), "w")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b"))
    nodes = [helper.make_node("Conv", ["x", "w", *(["b"] if bias else [])], ["c"], "conv",
                              kernel_shape=list(kernel), **attrs)]
    ins = [helper.make_tensor_value_info("x", f, [1, c, *size])]
    out = "c"
    if then == "residual":
        nodes.append(helper.make_node("Add", ["c", "z"], ["s"]))
        ins.append(helper.make_tensor_value_info("z", f, None))
        out = "s"
    if then:
        nodes.append(helper.make_node("Relu", [out], ["y"]))
        out = "y"
    g = helper.make_graph(nodes, "conv", ins, [helper.make_tensor_value_info(out, f, None)],
                          inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    model = onnx.shape_inference.infer_shapes(model)
    if then == "residual":  # the residual's shape is the convolution's output's
        shape = model.graph.value_info[0].type.tensor_type.shape
        model.graph.input[1].type.tensor_type.shape.CopyFrom(shape)
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("reg", [1, 4])
@pytest.mark.parametrize("case", [
    dict(c=20, m=24, size=(9, 7), kernel=(3, 3), pads=[1, 1, 1, 1]),
    dict(c=6, m=17, size=(11, 10), kernel=(3, 2), bias=False, strides=[2, 1],
         dilations=[1, 2], pads=[0, 1, 1, 0]),
    dict(c=20, m=32, size=(6, 6), kernel=(3, 3), group=2, pads=[1, 1, 1, 1]),
    dict(c=5, m=16, size=(30,), kernel=(5,), strides=[2]),
    dict(c=32, m=16, size=(5, 5), kernel=(1, 1), then="relu"),
    dict(c=8, m=16, size=(6, 5), kernel=(3, 3), pads=[1, 1, 1, 1], then="residual"),
], ids=["3x3", "strided-dilated", "groups", "1d", "1x1-relu", "residual"])
def test_convolutions_run_as_implicit_gemm_tiles(case, reg):
    """The GPU's convolution (conv-gemm-tiles, the default where a group has 16 output
    channels and 16 terms an output): an implicit GEMM per image and group whose B tile is
    gathered from the input as it is staged, zero in the padding; the bias, a residual and
    an activation as each output is stored. Against onnxruntime, every access watched for
    races, at 1 and 4 x 4 outputs a thread."""
    model = conv_model(**case)
    node = "y" if case.get("then") else "conv"  # (fused with what follows: named so)
    prog, kernels = gpu_checked(model, f"c{reg}_", strategies={
        node: f"conv-gemm-tiles{{reg={reg}}}"}, rtol=1e-4, atol=1e-4)
    (conv,) = [s for s in prog.strategies if s["op"] in ("Conv", "FusedConv")]
    assert "implicit GEMM" in conv["strategy"], conv


def test_a_batch_of_rows_times_a_matrix_runs_shared_memory_tiles():
    """MatMul of A [2, 3, 20] by a weight [20, 24], then a bias per column and an Add of a
    [3, 24] input broadcast over the batch: A's leading dims are the tiles' rows, the
    epilogue reads the addends at Y's coordinates of each row."""
    from onnx import TensorProto, helper, numpy_helper


    rng = np.random.default_rng(8)
    inits = [numpy_helper.from_array(rng.standard_normal((20, 24)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(24).astype(np.float32), "bias")]
    nodes = [helper.make_node("MatMul", ["a", "w"], ["p"]),
             helper.make_node("Add", ["p", "bias"], ["q"]),
             helper.make_node("Add", ["q", "z"], ["y"])]
    g = helper.make_graph(nodes, "bmm", [
        helper.make_tensor_value_info("a", TensorProto.FLOAT, (2, 3, 20)),
        helper.make_tensor_value_info("z", TensorProto.FLOAT, (3, 24))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, 3, 24))], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    prog, _ = gpu_checked(model, "bm_")
    assert any("GPU GEMM, shared-memory tiles" in str(s) for s in prog.strategies)


@pytest.mark.parametrize("ashape,bshape", [((2, 3, 17, 20), (2, 3, 20, 18)),
                                           ((2, 17, 20), (1, 20, 18))])
def test_batched_products_run_a_grid_of_tiles_per_product(ashape, bshape):
    """MatMul of two batched inputs (as attention's Q K^T and P V are), B's batch dim
    broadcast in the second case: the tiles' grid has a third dimension, the products."""
    from onnx import TensorProto, helper


    yshape = (*np.broadcast_shapes(ashape[:-2], bshape[:-2]), ashape[-2], bshape[-1])
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "bmm", [
        helper.make_tensor_value_info("a", TensorProto.FLOAT, ashape),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, bshape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    _, (k,) = gpu_checked(model, "bb_")
    (launch,) = launches(k)
    assert [lp.extent.value for lp in launch.grid] == [int(np.prod(yshape[:-2])), 2, 2]


@pytest.mark.parametrize("mode,transform", [("linear", "half_pixel"),
                                            ("nearest", "asymmetric"),
                                            ("cubic", "align_corners")])
def test_resize_runs_a_thread_per_output(mode, transform):
    """Resize (1, 2, 5, 7) -> (1, 2, 9, 12): a GPU thread an output element, each computing
    its own taps, where it ran on one thread; against onnxruntime, race-free."""
    from onnx import TensorProto, helper, numpy_helper

    sizes = numpy_helper.from_array(np.array([1, 2, 9, 12], np.int64), "sizes")
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode,
                            coordinate_transformation_mode=transform)
    g = helper.make_graph([node], "rs",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 5, 7))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 2, 9, 12))],
                          [sizes])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    _, kernels = gpu_checked(model, "rs_")
    threads = [math.prod(lp.extent.value for lp in launch.grid + launch.block)
               for k in kernels for launch in launches(k)]
    assert max(threads) >= 2 * 9 * 12, threads


def layer_norm_model(shape, axis: int, bias: bool):
    from onnx import TensorProto, helper, numpy_helper

    norm = shape[axis:]
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.standard_normal(norm).astype(np.float32), "scale")]
    inits += [numpy_helper.from_array(rng.standard_normal(norm).astype(np.float32), "bias")] \
        if bias else []
    node = helper.make_node("LayerNormalization", ["x", "scale"] + (["bias"] if bias else []),
                            ["y"], axis=axis, epsilon=1e-3)
    g = helper.make_graph([node], "ln",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.mark.parametrize("shape,axis,bias", [((6, 40), -1, True), ((3, 4, 70), 1, False),
                                             ((2, 17, 64), 2, True)])
def test_layer_normalization_runs_a_warp_per_row(shape, axis, bias, tmp_path):
    """Rows of 40, 280 (the normalized axes 4 x 70, scale per element) and 64 elements, 6,
    3 and 34 of them; against onnxruntime on the interpreter, race-free; nvcc takes it."""
    _, (k,) = gpu_checked(layer_norm_model(shape, axis, bias), "ln_", rtol=1e-4)
    (launch,) = launches(k)
    assert [lp.extent.value for lp in launch.block] == [min(8, int(np.prod(shape[:axis]))), 32]
    nvcc_takes([k], tmp_path, "ln")


# -- CUDA source, compiled by nvcc -------------------------------------------------------------

@pytest.mark.cross
def test_every_op_compiles_with_nvcc(tmp_path):
    kernels = [tiled_gemm(M, N, K, T)]
    for n, test in enumerate(TESTS.values()):
        kernels += kernels_of(bound_program(test, n)[0].body)
    (tmp_path / "ops.cu").write_text(CudaRenderer().source(kernels))
    assert nvcc_compile("ops.cu", tmp_path) == "ops.o"  # -Werror all-warnings


@pytest.mark.cross
def test_the_pip_wheels_nvcc_is_found_and_builds_for_each_architecture(tmp_path, monkeypatch):
    """With no nvcc on PATH, the one of `pip install 'edgec[cuda]'` (tests' extra), which
    needs its own library folder to link; sm_80 and sm_90 in one object."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    nvcc, link = find_nvcc()
    assert nvcc.endswith("nvidia/cu13/bin/nvcc") and link[0].endswith("nvidia/cu13/lib")
    (tmp_path / "g.cu").write_text(CudaRenderer().source([tiled_gemm(M, N, K, T)]))
    both = nvcc_compile("g.cu", tmp_path, archs=("sm_80", "sm_90"), out="both.o")
    one = nvcc_compile("g.cu", tmp_path, archs=("sm_90",), out="one.o")

    def archs(obj: str) -> set[bytes]:  # the fat binary names the code of each
        return set(re.findall(rb"sm_[0-9]+", (tmp_path / obj).read_bytes()))

    assert archs(both) == {b"sm_80", b"sm_90"} and archs(one) == {b"sm_90"}


MAIN = """
#include <stdio.h>
#include <cuda_runtime.h>
extern "C" cudaError_t tiled_gemm(const float *a, const float *b, float *c, cudaStream_t s);
int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) {
        printf("device\\n");
        return 0;
    }
    cudaError_t e = tiled_gemm(0, 0, 0, 0);
    printf("%s\\n", e == cudaSuccess ? "cudaSuccess" : "error");
    return e == cudaSuccess;
}
"""


@pytest.mark.cross
def test_without_a_gpu_a_launch_returns_the_error(tmp_path):
    src = CudaRenderer().source([tiled_gemm(M, N, K, T)]) + MAIN
    (tmp_path / "app.cu").write_text(src)
    exe = nvcc_compile("app.cu", tmp_path, link=True)
    run = subprocess.run([str(tmp_path / exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() in ("error", "device"), run



# -- the CUDA library: edgec compile --target cuda ---------------------------------------------

def cuda_program(model, name: str):
    """The program `edgec compile --target cuda` builds for `model`, bound as its library is."""
    from edgec.compiler.driver import load_graph
    from edgec.passes import default_pipeline, run_pipeline

    g = load_graph(model)
    run_pipeline(g, default_pipeline(1, 16), out=io.StringIO())
    prog = build_program(g, g.record.memory_plan, get_target("cuda"), name, f"{name}_")
    return dataclasses.replace(prog, body=bind_program(prog.body))


@pytest.mark.cross
def test_a_model_becomes_a_cuda_library_an_app_links(tmp_path):
    """tiny_cnn for sm_80 and sm_90: the library and its header; its program, bound as the
    library's is, computes what onnxruntime does (on the interpreter); a C app linked with
    the manifest's flags gets EDGEC_ERR_NO_DEVICE from init and run where there is no GPU,
    and edgec.load says why it cannot run the library."""
    model = zoo.tiny_cnn()
    out = tmp_path / "lib"
    art = edgec.compile(model, out, name="tiny", target="cuda", gpu_arch=("sm_80", "sm_90"))
    m = art.manifest
    assert m["gpu_archs"] == ["sm_80", "sm_90"] and m["workspace_bytes"] == 0
    assert (out / "libtiny.a").exists() and "-lcudart_static" in m["link_flags"]
    header = (out / "tiny.h").read_text()
    for decl in ("int tiny_init(void);", "void tiny_release(void);",
                 "int tiny_run_device(const void *const *d_inputs, void *const *d_outputs, "
                 "struct CUstream_st *stream);"):
        assert decl in header
    feeds = random_feeds(model)
    races = []
    got = run_program(cuda_program(model, "tiny"), feeds,
                      launch=lambda k, *a: races.extend(find_races(k, *a)))
    assert not races, races[0]
    for name, want in onnxruntime_outputs(model, feeds).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5)
    # the convolutions and the Gemm (one row: matmul-dots) on a thread per output (8 x 16 x
    # 16, 16 x 4 x 4, 10), the max pool a thread per output (8 channels x 8 x 8), the
    # global pool per channel
    launched = {x["kernel"].split("_", 2)[2]: (x["blocks"], x["threads"])
                for x in m["gpu_launches"]}
    assert launched == {"conv1_Conv": (8, 256), "pool_MaxPool": (2, 256),
                        "conv2_Conv": (1, 256), "avgpool_GlobalAveragePool": (1, 16),
                        "fc_Gemm": (1, 10)}, launched
    assert "GPU launches per run: 5 (0 of a single thread" in (out / "report.txt").read_text()

    (out / "app.c").write_text(APP)
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "app.c", "-o", "app",
                    "-L.", "-ltiny", *m["link_flags"]], cwd=out, check=True)
    run = subprocess.run(["./app"], cwd=out, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run
    gpu = run.stdout.startswith("0 ")
    if not gpu:
        assert run.stdout.splitlines() == [
            "6 no CUDA device: this machine has no NVIDIA GPU, or no driver for CUDA 13.0"] * 2
        with pytest.raises(EdgecError, match="is a CUDA library \\(sm_80, sm_90\\) and cannot "
                                             "run here: no CUDA device"):
            edgec.load(out)


APP = """#include <stdio.h>
#include "tiny.h"
int main(void)
{
    static float x[TINY_INPUT0_SIZE], y[TINY_OUTPUT0_SIZE];
    const void *in[] = {x};
    void *out[] = {y};
    int s = tiny_init();
    printf("%d %s\\n", s, tiny_status_string(s));
    s = tiny_run(in, out, NULL);
    printf("%d %s\\n", s, tiny_status_string(s));
    tiny_release();
    return s == EDGEC_OK || s == EDGEC_ERR_NO_DEVICE ? 0 : 1;
}
"""


@pytest.mark.cross
def test_a_cuda_graph_library_builds_and_an_app_links(tmp_path):
    """--cuda-graph: NAME_run_device captures the launches once and replays the graph (the
    manifest and report say so); nvcc builds it, warnings as errors, and a C app that runs
    it twice links and gets EDGEC_ERR_NO_DEVICE where there is no GPU (on a GPU: the first
    run captures, the second replays, both succeed)."""
    out = tmp_path / "lib"
    art = edgec.compile(zoo.tiny_cnn(), out, name="tiny", target="cuda", cuda_graph=True)
    assert art.manifest["cuda_graph"] is True
    assert "captured once as a CUDA graph and replayed" in (out / "report.txt").read_text()
    (out / "app.c").write_text(APP.replace("    tiny_release();", "    if (s == EDGEC_OK)\n"
                                           "        s = tiny_run(in, out, NULL);\n"
                                           "    tiny_release();"))
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "app.c", "-o", "app",
                    "-L.", "-ltiny", *art.manifest["link_flags"]], cwd=out, check=True)
    run = subprocess.run(["./app"], cwd=out, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run
    if not run.stdout.startswith("0 "):
        assert run.stdout.splitlines() == [
            "6 no CUDA device: this machine has no NVIDIA GPU, or no driver for CUDA 13.0"] * 2


@pytest.mark.cross
@pytest.mark.parametrize("name", ["mlp", "resnet18", "mobilenet_v2", "transformer_encoder"])
def test_the_benchmark_models_build_for_cuda(name, tmp_path):
    """Every kernel of the benchmark models through nvcc for sm_90, warnings as errors, none
    of their launches on a single thread; the transformer encoder's 8 products (6 by
    weights, 2 of the attention) on shared-memory tiles, its Softmax and LayerNormalizations
    a warp per row."""
    model = {**zoo.MODELS, **zoo.FAMILIES}[name]()
    art = edgec.compile(model, tmp_path / name, name=name, target="cuda", tune=False)
    launched = art.manifest["gpu_launches"]
    assert launched and not [x for x in launched if x["blocks"] * x["threads"] == 1]
    if name == "transformer_encoder":
        kinds = [r["strategy"] for r in art.manifest["kernel_strategies"]]
        assert sum("shared-memory tiles" in k for k in kinds) == 8
        assert sum("a warp per row" in k for k in kinds) == 4, kinds


@pytest.mark.cross
@pytest.mark.parametrize("name", ["mlp", "resnet18", "mobilenet_v2"])
def test_the_benchmark_models_quantized_build_for_cuda_on_threads(name, tmp_path):
    """Quantized by edgec (int8, min-max on 4 random samples), every kernel of the benchmark
    models through nvcc for sm_90, none of their launches on a single thread (on the H200,
    2026-11-28, all of them were: the MLP ran 9 ms a call), every convolution and GEMM
    requantized in fixed point."""
    model = zoo.MODELS[name]()
    art = edgec.compile(model, tmp_path / name, name=name, target="cuda", tune=False,
                        quantize="int8", calib=samples(model, 4, 1))
    launched = art.manifest["gpu_launches"]
    assert launched and not [x for x in launched if x["blocks"] * x["threads"] == 1], launched
    kinds = [r["strategy"] for r in art.manifest["kernel_strategies"]]
    products = [k for k in kinds if k.startswith(("integer conv", "integer matmul"))]
    assert products and all("GPU" in k or "shared-memory tiles" in k for k in products), kinds
    assert name == "mlp" or any("implicit GEMM" in k for k in products), kinds
    assert all("fixed-point" in k for k in kinds if k.startswith("integer conv")), kinds


def small_mlp() -> onnx.ModelProto:
    """48 -> 32 -> Relu -> 10, Gemms (transB) with biases."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32) * 0.3, n)
             for n, s in (("w1", (32, 48)), ("b1", (32,)), ("w2", (10, 32)), ("b2", (10,)))]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", f, [1, 48])],
                          [helper.make_tensor_value_info("y", f, [1, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def padded_conv():
    return conv_model(c=20, m=24, size=(9, 7), kernel=(3, 3), pads=[1, 1, 1, 1], then="relu")


def strided_conv():
    return conv_model(c=6, m=17, size=(11, 10), kernel=(3, 2), strides=[2, 1],
                      dilations=[1, 2], pads=[0, 1, 1, 0])


@pytest.mark.cross
@pytest.mark.parametrize("make,strategy,arch", [
    (small_mlp, None, "sm_90"), (zoo.tiny_cnn, None, "sm_90"), (residual_cnn, None, "sm_90"),
    (padded_conv, None, "sm_90"), (strided_conv, None, "sm_80"),
    (padded_conv, {"y_QuantizeLinear": "int-conv-gemm-tiles{reg=4}"}, "sm_75"),
    (strided_conv, {"c_QuantizeLinear": "int-conv-gemm-tiles{reg=2}"}, "sm_75")],
    ids=["mlp", "tiny_cnn", "residual", "conv", "strided", "conv-reg4-dp4a",
         "strided-reg2-dp4a"])
def test_int8_models_run_on_threads_bit_for_bit(make, strategy, arch, tmp_path):
    """An edgec-quantized model's CUDA program (QuantizeLinear a thread an element, integer
    convolutions an implicit GEMM in shared-memory tiles, or a thread an output where a group
    has under 16 channels, integer GEMMs a warp an output, the integer mean a warp a
    channel, QLinearAdd a thread an element), bound as the library's is and run on the
    interpreter thread by thread with every access watched for races, computes the reference
    interpreter's outputs of the same graph bit for bit (the padding's taps, the tiles'
    edges and register blocks included; the convolutions' products of the raw 8-bit input
    by int8 mma.sync on tensor cores for sm_80 on, four at a time by dp4a before, the zero
    point's share subtracted after)."""
    from edgec.compiler.driver import compile_graph, load_graph

    model = make()
    g = load_graph(model)
    art = compile_graph(g, tmp_path / "lib", name="q", target="cuda", tune=False,
                        quantize="int8", calib=samples(model, 4, 1), log=io.StringIO(),
                        strategy=strategy or {}, gpu_arch=(arch,))
    launched = art.manifest["gpu_launches"]
    assert not [x for x in launched if x["blocks"] * x["threads"] == 1], launched
    tgt = get_target("cuda")
    tgt = dataclasses.replace(tgt, gpu=dataclasses.replace(tgt.gpu, archs=(arch,)))
    prog = build_program(g, g.record.memory_plan, tgt, "q", prefix="q_",
                         strategies=strategy or {})
    prog = dataclasses.replace(prog, body=bind_program(prog.body))
    feeds = random_feeds(model)
    races = []
    got = run_program(prog, feeds, launch=lambda k, *a: races.extend(find_races(k, *a)))
    assert not races, races[0]
    want = interpret(g, feeds)
    assert want.keys() == got.keys()
    for name, w in want.items():
        np.testing.assert_array_equal(got[name], w)
    ops = {n.op for n in g.nodes}
    kinds = [r["strategy"] for r in art.manifest["kernel_strategies"]]
    if make in (padded_conv, strided_conv):  # the raw bytes, the padding as zx
        how = "dp4a" if arch == "sm_75" else "tensor cores (int8)"
        assert any(k.startswith("integer conv as implicit GEMM") and how in k
                   for k in kinds), kinds
        return
    assert {"QuantizeLinear", "DequantizeLinear", "QGemm"} <= ops
    if make is residual_cnn:
        assert {"QLinearConv", "QLinearAdd"} <= ops, ops


def test_dp4a_is_not_a_choice_a_strategy_can_force(tmp_path):
    """ConvInteger with uint8 weights of 0..255 (W - zw does not fit int8): the integer
    implicit GEMM runs int32 tiles, and forcing dp4a on it is refused rather than wrapping
    the weights (a review found it computed wrong sums)."""
    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.integers(0, 256, (16, 8, 3, 3), dtype=np.uint8), "w")
    node = helper.make_node("ConvInteger", ["x", "w"], ["y"], "conv", pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "ci", [helper.make_tensor_value_info(
        "x", TensorProto.UINT8, [1, 8, 6, 6])], [helper.make_tensor_value_info(
            "y", TensorProto.INT32, [1, 16, 6, 6])], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    feeds = {"x": rng.integers(0, 256, (1, 8, 6, 6), dtype=np.uint8)}
    prog, _ = gpu_checked(model, "ci_", feeds, exact=True)
    assert prog.strategies[0]["strategy"] == \
        "integer conv as implicit GEMM, shared-memory tiles", prog.strategies
    with pytest.raises(EdgecError, match="'dp4a' is 0"):
        gpu_checked(model, "cf_", feeds, strategies={"conv": "int-conv-gemm-tiles{dp4a=1}"})


def test_what_a_cuda_target_refuses(tmp_path):
    model = zoo.mlp()
    for options, message in (
            ({"backend": "llvm"}, "--backend llvm builds CPU code"),
            ({"compress": True}, "--compress is for CPU targets"),
            ({"sanitize": True}, "--sanitize"),
            ({"gpu_arch": ("90",)}, "GPU architecture '90': nvcc takes sm_XY")):
        with pytest.raises(EdgecError, match=message):
            edgec.compile(model, tmp_path / "x", target="cuda", **options)
    with pytest.raises(EdgecError, match="--gpu-arch is for --target cuda, not x86"):
        edgec.compile(model, tmp_path / "y", target="x86", gpu_arch=("sm_90",))
    with pytest.raises(EdgecError, match="--cuda-graph is for --target cuda, not x86"):
        edgec.compile(model, tmp_path / "z", target="x86", cuda_graph=True)


def test_control_flow_is_refused_with_its_reason(tmp_path):
    with pytest.raises(EdgecError, match="the CUDA target runs straight-line models so far; "
                                         "this one has control flow"):
        edgec.compile(control_flow_model(), tmp_path / "z", target="cuda")
