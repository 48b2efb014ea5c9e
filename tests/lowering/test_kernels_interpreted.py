"""Every op's kernel run by the kernel-IR interpreter, with no C compiler, against references.

1. The ONNX node tests that pass through generated C (CONFORMANCE.md), grouped by op: each is
   imported (inputs edgec needs as constants baked in, as edgec.testing.conformance does), taken
   through the default pipeline of c-generic (scalar kernels) and of x86-avx512 (16-lane
   kernels), made a program (program.py: the launches and control flow of NAME_run over one
   workspace, as the memory plan lays it out), run by the interpreter (`run_program`) and
   compared with the test's expected outputs and with the ops' references on the graph
   (`edgec.ir.interpret`), at the suite's tolerances. A test with inputs of more than
   BIG_INPUT elements (the 7-D loss tests, 32 400) runs on one of the two, in turn: the
   interpreter takes seconds per pass there, and the generated C runs them all anyway.
2. What no node test reaches as a kernel: the blocked, fused and integer ops that passes make
   (small CNNs, a QDQ model quantized by onnxruntime, the layout tests' mixed graph, at 1, 8
   and 16 lanes) and the ops whose inputs the suite makes constant (one-node graphs run
   without a pipeline), each against `edgec.ir.interpret` on the graph whose kernels ran.
3. Every op of the registry is covered by one of the two (If, Loop and Scan as the program's
   control flow around their bodies' kernels).
"""

from __future__ import annotations

import io
from collections import defaultdict

import numpy as np
import onnx
import pytest
from convnets import small_resnet
from harness import conformance_results, rel_error
from lowering.test_sparse_conv import (
    input_block_net,
    odd_channels_net,
    pruned_mlp,
    pruned_net,
    sequence_mlp,
    short_map_net,
)
from passes.test_layout import chunks_model, feeds_for, mixed_graph

from edgec import zoo
from edgec.compiler.driver import load_graph
from edgec.errors import FrontendError, ShapeError
from edgec.ir import DType, Graph, TensorType, interpret
from edgec.ir.registry import _REGISTRY
from edgec.kernel_ir.printer import print_kernel
from edgec.kernel_ir.program_interp import run_program
from edgec.lowering.lower import CONTROL_OPS, lower_node
from edgec.lowering.program import build_program
from edgec.lowering.run_graph import run_graph
from edgec.passes import default_pipeline, run_pipeline
from edgec.targets.target import get_target
from edgec.testing import conformance

TARGETS = ("c-generic", "x86-avx512")
BIG_INPUT = 20_000


def passing_tests_by_op() -> dict[str, list[str]]:
    by_op: dict[str, list[str]] = defaultdict(list)
    for test, (op, result) in conformance_results().items():
        if result == "pass":
            by_op[op].append(test)
    return dict(sorted(by_op.items()))


BY_OP = passing_tests_by_op()


def pipelined(graph: Graph, target: str, without: str = "") -> Graph:
    """`graph` through `target`'s default pipeline, less the pass `without` if given."""
    g = graph.copy()
    lanes = get_target(target).lanes(DType.F32)
    pipeline = default_pipeline(lanes)
    if without:
        pipeline = pipeline.replace(f",{without}", "")
    run_pipeline(g, pipeline, out=io.StringIO())
    return g


def load_node_test(test: str) -> tuple[Graph, dict, list[np.ndarray], list[str]]:
    """The test's graph (its constant-only inputs baked in), feeds, expected outputs and the
    ONNX output names."""
    folder = conformance.NODE_DIR / test
    model = onnx.load(folder / "model.onnx")
    arrays = conformance.load_tensors(folder / "test_data_set_0", "input", len(model.graph.input))
    feeds = {i.name: a for i, a in zip(model.graph.input, arrays)}
    wants = conformance.load_tensors(folder / "test_data_set_0", "output", len(model.graph.output))
    inputs = [i.name for i in conformance._inputs_of(model)]
    folded: set[str] = set()
    while True:
        live = [n for n in inputs if n not in folded]
        try:
            g = load_graph(model, {n: list(feeds[n].shape) for n in live}, test)
            break
        except (ShapeError, FrontendError) as e:
            more = conformance._constant_culprits(str(e), model, set(live), feeds) - folded
            assert more, f"{test}: {e}"
            folded |= more
            conformance._fold(model, more, feeds)
    feeds = {v.name: feeds[v.name].reshape(v.shape) for v in g.inputs}
    return g, feeds, wants, [o.name for o in model.graph.output]


def run_as_program(g: Graph, target: str, feeds: dict, ran: set[str], without: str = "") -> dict:
    """`g` through `target`'s pipeline and program, on the interpreter; adds to `ran` the ops
    whose kernels (or control flow) ran."""
    p = pipelined(g, target, without)
    prog = build_program(p, p.record.memory_plan, get_target(target), "t")
    ran |= {s["op"] for s in prog.strategies} | {n.op for n in p.nodes if n.op in CONTROL_OPS}
    return run_program(prog, feeds)


# the node tests of these ops take over 10 s each on the interpreter
SLOW_OPS = {"Attention", "LpPool", "Mish", "SoftmaxCrossEntropyLoss"}


@pytest.mark.parametrize("op", [pytest.param(op, marks=pytest.mark.slow) if op in SLOW_OPS
                                else op for op in BY_OP])
def test_node_tests_on_the_interpreter(op):
    ran: set[str] = set()
    big = 0
    for test in BY_OP[op]:
        g, feeds, wants, names = load_node_test(test)
        rtol, atol = conformance.tolerances(test)
        reference = interpret(g, feeds)
        targets = TARGETS
        if sum(a.size for a in feeds.values()) > BIG_INPUT:
            targets, big = (TARGETS[big % len(TARGETS)],), big + 1
        for target in targets:
            got = run_as_program(g, target, feeds, ran)
            for name, want in zip(names, wants, strict=True):
                for what, w in (("expected", want), ("reference", reference[name])):
                    bad = conformance.mismatch(got[name], w, rtol, atol)
                    assert bad is None, f"{test} on {target}: output {name} vs {what} {bad}"
    if op in _REGISTRY and op not in BUILT_HERE:
        assert op in ran, f"no node test of {op} ran its kernel (all its inputs folded?)"


# -- what the node tests do not reach ---------------------------------------------------------

def check_pipelined(graph: Graph, target: str, feeds: dict, ran: set[str],
                    tol: float = 2e-6, without: str = "") -> None:
    """The kernels of `graph` after `target`'s pipeline (less the pass `without`) against the
    references of that same graph's ops (exact for integer outputs); each kernel also prints
    as text."""
    g = pipelined(graph, target, without)
    for i, n in enumerate(g.nodes):
        text = print_kernel(lower_node(n, i, get_target(target)).kernel)
        assert text.startswith(("//", "kernel ")) and text.count("{") == text.count("}"), text
    want = interpret(g, feeds)
    got = run_as_program(graph, target, feeds, ran, without)
    for name, w in want.items():
        assert rel_error(got[name], w) <= tol, f"{graph.name} on {target}: output {name}"


def random_feeds(g: Graph) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {v.name: rng.standard_normal(v.shape).astype(v.dtype.np) for v in g.inputs}


def quantized_cnn(tmp_path_factory) -> Graph:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from test_qdq_models import RandomImages, cnn

    d = tmp_path_factory.mktemp("qdq")
    onnx.save(cnn(), d / "float.onnx")
    quantize_static(str(d / "float.onnx"), str(d / "qdq.onnx"), RandomImages(),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return load_graph(d / "qdq.onnx")


@pytest.mark.parametrize("target", ["c-generic", "x86-avx2", "x86-avx512"])
@pytest.mark.slow
def test_models_on_the_interpreter(target, tmp_path_factory):
    ran: set[str] = set()
    for m in (zoo.tiny_cnn(), small_resnet(8)):
        g = load_graph(m)
        check_pipelined(g, target, random_feeds(g), ran)
    q = quantized_cnn(tmp_path_factory)
    check_pipelined(q, target, random_feeds(q), ran, tol=0)
    if target != "c-generic":  # the blocked residual add on its own, as fuse-residual leaves
        # the adds it cannot move into a convolution
        check_pipelined(q, target, random_feeds(q), ran, tol=0, without="fuse-residual")
        g = mixed_graph()
        check_pipelined(g, target, feeds_for(g), ran)
        g = load_graph(chunks_model())
        check_pipelined(g, target, random_feeds(g), ran)
    for m in (pruned_net(size=(22, 18)), pruned_mlp(batch=2),  # the sparse kernels
              pruned_mlp(0.5, inputs=400),  # 160 KB of weights: prefetched ahead
              odd_channels_net(4),  # channels padded to the blocks
              input_block_net((14, 12)),  # blocks of 4 input channels
              input_block_net((14, 12), "2:8"),  # N:M
              short_map_net(),  # one band, uneven groups of channels
              sequence_mlp(rows=20)):  # matrix products as convolutions over their rows
        g = load_graph(m)
        check_pipelined(g, target, random_feeds(g), ran)
    if target != "c-generic":  # the sparse int8 tile: weights zero in 16x4 dot4 groups
        from test_sparse_int8 import mlp_net, net, prune_groups_of

        d = tmp_path_factory.mktemp("qdq_sparse")
        g = load_graph(zoo.quantize_qdq(prune_groups_of(net(), 0.8, "16x4"), d, samples=2))
        check_pipelined(g, target, random_feeds(g), ran, tol=0)
        g = load_graph(zoo.quantize_qdq(mlp_net(16), d / "mlp", samples=2))  # sparse GEMM
        check_pipelined(g, target, random_feeds(g), ran, tol=0)
    # with vectors, the integer convolutions run blocked on their padded inputs
    want = {"BlockedConv", "BlockedPool", "ReorderFromBlocked", "ReorderToBlocked",
            "BlockedQLinearConv", "BlockedPad"} \
        if target != "c-generic" else {"FusedConv", "QLinearConv"}
    want |= {"FusedMatMul", "QGemm", "QLinearAdd", "QLinearGlobalAveragePool", "ConvStage",
             "SparseConv", "SparseMatMul"}
    assert want <= ran, f"not reached on {target}: {sorted(want - ran)}"


def one_node(op: str, inputs: list, attrs: dict | None = None) -> tuple[Graph, dict]:
    """A graph of one `op` node: ("const", array) inputs are constants, arrays are inputs."""
    g = Graph(op)
    vals, feeds = [], {}
    for i, a in enumerate(inputs):
        if a is None:  # an omitted optional input
            vals.append(None)
        elif isinstance(a, tuple):
            vals.append(g.const(np.asarray(a[1]), f"c{i}"))
        else:
            v = g.add_input(f"x{i}", TensorType(a.shape, DType.from_numpy(a.dtype)))
            vals.append(v)
            feeds[v.name] = a
    g.outputs = list(g.add_node(op, vals, attrs or {}).outputs)
    return g, feeds


X = np.random.default_rng(1).standard_normal((1, 2, 3, 4)).astype(np.float32)
ONE_NODE = {
    "Shape": ([X], {}), "Dropout": ([X], {}), "GlobalLpPool": ([X], {"p": 3}),
    "Range": ([("const", np.float32(1)), ("const", np.float32(5)), ("const", np.float32(0.5))],
              {}),
    "ConstantOfShape": ([("const", np.array([2, 3], np.int64))],
                        {"value": np.array([7], np.int32)}),
    "BlackmanWindow": ([("const", np.int64(10))], {}),
    "HammingWindow": ([("const", np.int64(9))], {"periodic": 0}),
    "HannWindow": ([("const", np.int64(10))], {}),
    "NonZero": ([("const", np.array([[1, 0, 2], [0, 3, 0]], np.float32))], {}),
    "QLinearResize": ([np.random.default_rng(2).integers(0, 256, (1, 2, 3, 4)).astype(np.uint8),
                       None, ("const", np.array([1, 1, 2, 1.5], np.float32)), None,
                       ("const", np.float32(0.05)), ("const", np.uint8(100))],
                      {"mode": "linear"}),
    "Unique": ([("const", np.array([3, 1, 3, 2, 1], np.float32))], {}),
    # the mean on the integers, in fixed point: (0.05 / 0.04) / 12 held as q / 2^s
    "QLinearGlobalAveragePool": (
        [np.random.default_rng(3).integers(0, 256, (1, 2, 3, 4)).astype(np.uint8),
         ("const", np.float32(0.05)), ("const", np.uint8(7)), ("const", np.float32(0.04)),
         ("const", np.uint8(130))],
        {"rq_mult": [1789569664], "rq_shift": 34}),
}
# the ops the tests below and test_models_on_the_interpreter cover, not the node tests
# (and Loop: tests/kernel_ir/test_program.py, the node tests have no Loop over tensors only)
BUILT_HERE = set(ONE_NODE) | {"Loop", "BlockedConv", "BlockedPool", "ReorderFromBlocked",
                              "ReorderToBlocked", "FusedConv", "FusedMatMul", "QGemm",
                              "QLinearAdd", "BlockedQLinearConv", "BlockedPad", "ConvStage",
                              "SparseConv", "SparseMatMul"}


@pytest.mark.parametrize("op", list(ONE_NODE))
def test_one_node_graphs(op):
    inputs, attrs = ONE_NODE[op]
    g, feeds = one_node(op, inputs, attrs)
    ran: set[str] = set()
    got = run_graph(g, feeds, None, ran)
    assert ran == {op}
    for name, w in interpret(g, feeds).items():
        assert rel_error(got[name], w) <= 1e-6, f"{op}: output {name}"


def test_every_registry_op_is_covered():
    ops = set(_REGISTRY)
    missing = sorted(ops - set(BY_OP) - BUILT_HERE)
    assert not missing, f"ops with no interpreted kernel test: {missing}"
