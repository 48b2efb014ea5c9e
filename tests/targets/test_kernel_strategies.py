"""The kernel each node gets, as the report names it: the benchmark models' convolutions and
matrix products must stay on their micro-kernels on every vector target, so that a change that
sends one to a slower path fails here instead of showing up, maybe, in a benchmark."""

from __future__ import annotations

import io

import pytest

import edgec
from edgec import zoo
from edgec.compiler.driver import load_graph
from edgec.ir import DType
from edgec.passes import default_pipeline, run_pipeline
from edgec.targets.lowering import CONTROL_OPS, lower_node
from edgec.targets.target import get_target

# the fast path of each op the benchmark models spend their time in, on a vector target
FAST = {"BlockedConv": {"blocked conv", "blocked depthwise conv"},
        "FusedMatMul": {"vector GEMM"}, "MatMul": {"vector GEMM"}, "Gemm": {"vector GEMM"}}
MODELS = {"resnet18": zoo.resnet18, "mobilenet_v2": zoo.mobilenet_v2, "mlp": zoo.mlp}


def strategies(model, target: str) -> list[tuple[str, str, object]]:
    """(node, op, Strategy) of every kernel of `model` lowered for `target`, no C built."""
    g = load_graph(model)
    t = get_target(target)
    run_pipeline(g, default_pipeline(t.lanes(DType.F32)) + ",plan-memory", out=io.StringIO())
    aliases = g.meta["memory_plan"].aliases
    return [(n.name, n.op, lower_node(n, i, t).strategy) for i, n in enumerate(g.nodes)
            if n.op not in CONTROL_OPS and not all(o.name in aliases for o in n.outputs)]


@pytest.mark.parametrize("target", ["x86-avx2", "x86-avx512", "arm64", "armv7"])
@pytest.mark.parametrize("model", list(MODELS))
def test_benchmark_models_stay_on_their_fast_paths(model, target):
    got = strategies(MODELS[model](), target)
    lanes = get_target(target).lanes(DType.F32)
    slow = [f"{name} ({op}): {s.describe()}" for name, op, s in got
            if op in ("Conv", "FusedConv", "ConvTranspose")  # never left unblocked
            or (op in FAST and (s.name not in FAST[op] or s.kind != "micro-kernel"
                                or s.lanes != lanes))]
    assert not slow, f"{model} on {target} left its fast path:\n  " + "\n  ".join(slow)
    assert sum(op in FAST for _, op, _ in got) >= {"resnet18": 21, "mobilenet_v2": 53,
                                                   "mlp": 3}[model]


# QDQ models (onnxruntime's quantize_static) run their integer convolutions blocked, with
# fixed-point requantization; the widest vector of the dot4 tile is its 4L bytes, of the
# depthwise tile its L int32 lanes
QFAST = {"BlockedQLinearConv": {"blocked int8 conv dot4, fixed-point requantization": 4,
                                "blocked int8 conv dot4, fixed-point requantization, residual "
                                "add fused": 4,
                                "blocked int8 depthwise conv, fixed-point requantization": 1}}


@pytest.fixture(scope="module")
def qdq_models(tmp_path_factory) -> dict[str, object]:
    return {m: zoo.quantize_qdq(MODELS[m](), tmp_path_factory.mktemp(m))
            for m in ("resnet18", "mobilenet_v2")}


@pytest.mark.parametrize("target", ["x86-avx2", "x86-avx512", "arm64", "armv7"])
@pytest.mark.parametrize("model", ["resnet18", "mobilenet_v2"])
def test_qdq_models_stay_on_their_integer_fast_paths(model, target, qdq_models):
    got = strategies(qdq_models[model], target)
    lanes = get_target(target).lanes(DType.I32)
    slow = [f"{name} ({op}): {s.describe()}" for name, op, s in got
            if op in ("QLinearConv", "ConvInteger", "Conv")  # never left unblocked
            or (op in QFAST and (s.name not in QFAST[op] or s.kind != "micro-kernel"
                                 or s.lanes != QFAST[op][s.name] * lanes))]
    assert not slow, f"QDQ {model} on {target} left its fast path:\n  " + "\n  ".join(slow)
    assert sum(op in QFAST for _, op, _ in got) == {"resnet18": 20, "mobilenet_v2": 52}[model]
    # every residual add runs in the convolution before it (fuse-residual)
    assert sum("residual add fused" in s.name for _, _, s in got) == \
        {"resnet18": 8, "mobilenet_v2": 10}[model]
    assert "QLinearAdd" not in {op for _, op, _ in got}


def test_a_scalar_target_says_so():
    # c-generic has no vectors: the same convolutions get the scalar builders, named
    got = {(op, s.name, s.kind) for _, op, s in strategies(zoo.tiny_cnn(), "c-generic")}
    assert ("FusedConv", "conv register tiles", "scalar") in got, got
    assert ("FusedMatMul", "matmul rows", "scalar") in got, got


def test_report_and_manifest_name_each_nodes_kernel(tmp_path):
    art = edgec.compile(zoo.tiny_cnn(), tmp_path, target="x86-avx2", name="tiny")
    rows = art.manifest["kernel_strategies"]
    assert [r["op"] for r in rows] == ["BlockedConv", "BlockedPool", "BlockedConv",
                                       "BlockedPool", "ReorderFromBlocked", "FusedMatMul"]
    conv = rows[0]
    assert conv["strategy"] == "blocked conv" and conv["kind"] == "micro-kernel"
    assert conv["lanes"] == 8 and conv["micro_kernels"][0].startswith("mk_conv_f32x8_")
    assert rows[4]["kind"] == "scalar" and rows[4]["lanes"] == 1
    report = (tmp_path / "report.txt").read_text()
    line = next(x for x in report.splitlines() if x.startswith(f"  {conv['node']} BlockedConv"))
    assert line.endswith(f"blocked conv, micro-kernel, 8 lanes, parallel, "
                         f"{conv['micro_kernels'][0]}" + (
                             f" (+{len(conv['micro_kernels']) - 1} more)"
                             if len(conv["micro_kernels"]) > 1 else "")), line
