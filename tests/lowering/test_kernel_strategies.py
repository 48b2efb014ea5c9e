"""The kernel each node gets, as the report names it: the benchmark models' convolutions and
matrix products must stay on their micro-kernels on every vector target, so that a change that
sends one to a slower path fails here instead of showing up, maybe, in a benchmark."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import edgec
from edgec import zoo
from edgec.compiler.driver import _with_quantize, load_graph
from edgec.ir import DType
from edgec.lowering.kernels.common import CODES_MIN_BYTES
from edgec.lowering.lower import CONTROL_OPS, lower_node
from edgec.passes import default_pipeline, parse_pipeline, run_pipeline
from edgec.targets.target import get_target
from edgec.targets.uarch import microarch

# the fast path of each op the benchmark models spend their time in, on a vector target
FAST = {"BlockedConv": {"blocked conv", "blocked depthwise conv"},
        "FusedMatMul": {"vector GEMM"}, "MatMul": {"vector GEMM"}, "Gemm": {"vector GEMM"}}
MODELS = {"resnet18": zoo.resnet18, "mobilenet_v2": zoo.mobilenet_v2, "mlp": zoo.mlp}


def strategies(model, target: str, calib=None, weights_only: bool = False
               ) -> list[tuple[str, str, object]]:
    """(node, op, Strategy) of every kernel of `model` lowered for `target`, no C built;
    with `calib` ({input: samples}) quantized to int8 by edgec as `--quantize int8` does
    (`weights_only`: as it does without samples)."""
    g = load_graph(model)
    t = get_target(target)
    steps = parse_pipeline(default_pipeline(t.lanes(DType.F32)) + ",plan-memory")
    if calib is not None or weights_only:
        steps = _with_quantize(steps, "int8", calib, "minmax", (), "auto", 0.0, io.StringIO(),
                               pairs=t.isa == "avx2")
    run_pipeline(g, steps, out=io.StringIO())
    aliases = g.record.memory_plan.aliases
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


@pytest.mark.parametrize("target", ["x86-avx2", "x86-avx512", "arm64"])
@pytest.mark.parametrize("model", list(MODELS))
def test_weights_only_int8_keeps_the_fast_paths_and_stores_codes(model, target):
    """`--quantize int8` without samples: the float micro-kernels, the convolutions reading
    int8 codes for all but a few small layers (depthwise ones, and those whose float weights
    fit in L2 and would be converted for fewer than 64 pixels a task), so that at least 90%
    of their weights are stored as one byte; the matrix products (MLP, classifiers) only on
    16-lane vectors (converted in registers: slower than float weights on narrower ones), and
    no weight of under 16 KiB."""
    t = get_target(target)
    lanes = t.lanes(DType.F32)
    got = [(n, op, s) for n, op, s in strategies(MODELS[model](), target, weights_only=True)
           if op in FAST]
    base = [s.name.removesuffix(", int8 weights") for _, _, s in got]
    assert all(b in FAST[op] and s.kind == "micro-kernel" and s.lanes == lanes
               for b, (_, op, s) in zip(base, got, strict=True)), [s.name for *_, s in got]
    g = load_graph(MODELS[model]())
    sizes = {n.name: n.inputs[1].type.numel for n in g.nodes
             if n.op in ("Conv", "Gemm", "MatMul") and n.input(1) is not None}

    def size(name):  # the ONNX node a kernel came from ("/layer1/conv1/Conv_nchwc")
        return next(v for k, v in sizes.items() if name.startswith(k))

    convs = [(n, s) for n, op, s in got if op == "BlockedConv"]
    coded = sum(size(n) for n, s in convs if s.name.endswith(", int8 weights"))
    assert coded >= 0.9 * sum(size(n) for n, _ in convs), (coded, sizes)
    # a dense convolution left float has float weights that fit in L2
    assert all(size(n) * 4 <= t.caches.l2 for n, s in convs
               if "depthwise" not in s.name and not s.name.endswith(", int8 weights"))
    products = [(n, s) for n, op, s in got if op != "BlockedConv"]
    assert products and all(
        s.name.endswith(", int8 weights") == (lanes >= 16 and size(n) * 4 >= CODES_MIN_BYTES)
        for n, s in products), [s.name for _, s in products]


# QDQ models (onnxruntime's quantize_static) run their integer convolutions blocked, with
# fixed-point requantization; the widest vector of the dot4 tile is its 4L bytes, of the
# depthwise tile its L int32 lanes
QFAST = {"BlockedQLinearConv": {"blocked int8 conv dot4, fixed-point requantization": 4,
                                "blocked int8 conv dot4, fixed-point requantization, residual "
                                "add fused": 4,
                                "blocked int8 depthwise conv, fixed-point requantization": 1}}


# AVX2 without VNNI sums a dot4 group's weight pairs with vpmaddubsw where every pair fits
# 16 bits, else widens both operands (exact either way; the strategy says which and why)
PAIRED = ", dot4 as vpmaddubsw+vpmaddwd (weight pairs within int16)"
WIDENED = re.compile(r", dot4 widened \(vpmaddwd: the weights of a pair sum to -?\d+, past the "
                     r"\+-128 a 16-bit pair sum allows\)")
# on a CPU family where it was measured faster (targets/uarch.py int8_sign), full-range
# weights within +-127 take the sign trick instead of the widening
SIGNED = re.compile(r", dot4 by the sign trick \(vpsignb\+vpmaddubsw\+vpmaddwd of x - 128: "
                    r"weights within \+-127, where the weights of a pair sum to -?\d+, past "
                    r"the \+-128 a 16-bit pair sum allows\)")


# NEON without dotprod sums two k-groups' products in int16 where every weight is within
# +-127 (kernel IR pairdot), else keeps the widened dot4; the strategy says which and why
NEON_PAIRED = re.compile(r", dot4 as (smull\+smlal\+sadalp|vmull\+vmlal\+vpadal) \(two k-groups "
                         r"summed in int16: weights within \+-127\)")
NEON_WIDENED = re.compile(r", dot4 widened \(smull\+addp: a weight of -128; two k-groups' "
                          r"products sum in int16 only within \+-127\)")


def dot4_form(name: str) -> tuple[str, str]:
    """(the strategy without its dot4 form, the form: "paired", "widened" or "")."""
    if name.endswith(PAIRED):
        return name[:-len(PAIRED)], "paired"
    for pattern, form in ((WIDENED, "widened"), (SIGNED, "sign"), (NEON_PAIRED, "paired"),
                          (NEON_WIDENED, "widened")):
        m = pattern.search(name)
        if m:
            return name[:m.start()] + name[m.end():], form
    return name, ""


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
            or (op in QFAST and (dot4_form(s.name)[0] not in QFAST[op]
                                 or s.kind != "micro-kernel"
                                 or s.lanes != QFAST[op][dot4_form(s.name)[0]] * lanes))]
    assert not slow, f"QDQ {model} on {target} left its fast path:\n  " + "\n  ".join(slow)
    # onnxruntime's full-range 8-bit weights: on AVX2 the dot4 layers stay widened, each
    # saying why (a pair sums past +-128), or take the sign trick on a CPU family where it
    # was measured faster (the build host's, where it runs the target); NEON's pairs need
    # only each weight within +-127, which these hold; AVX-512 (VNNI) does not name the form
    # (the sign trick is the convolutions' only; the classifier's GEMM stays widened)
    forms = {dot4_form(s.name)[1] for _, op, s in got if "dot4" in s.name}
    avx2 = {"sign", "widened"} if microarch(get_target(target).uarch).int8_sign \
        else {"widened"}
    assert forms == {"x86-avx2": avx2, "x86-avx512": {""}}.get(target, {"paired"}), forms
    assert all(dot4_form(s.name)[1] != "sign" for _, op, s in got if "GEMM" in s.name)
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


@pytest.mark.parametrize("model", ["resnet18", "mobilenet_v2"])
def test_reduced_range_qdq_models_take_the_paired_dot4_on_avx2(model, tmp_path):
    """onnxruntime's reduce_range (7-bit weights, its advice for x86 without VNNI): every
    dense int8 layer on AVX2 sums its pairs with vpmaddubsw."""
    got = strategies(zoo.quantize_qdq(MODELS[model](), tmp_path, reduce_range=True), "x86-avx2")
    forms = [dot4_form(s.name)[1] for _, op, s in got if "dot4" in s.name]
    assert forms and set(forms) == {"paired"}, forms


@pytest.mark.parametrize("model", list(MODELS))
def test_models_edgec_quantizes_take_the_paired_dot4_on_avx2(model):
    """--quantize int8 for x86-avx2 fits the weights' pairs (quantize{pairs=1}), so no
    int8 layer of a benchmark model keeps the widened dot4."""
    m = MODELS[model]()
    inp = m.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    calib = {inp.name: np.random.default_rng(2).standard_normal((2, *shape[1:]))
             .astype(np.float32)}
    got = strategies(m, "x86-avx2", calib)
    forms = [dot4_form(s.name)[1] for _, op, s in got if "dot4" in s.name]
    assert len(forms) >= {"resnet18": 21, "mobilenet_v2": 36, "mlp": 3}[model], forms
    assert set(forms) == {"paired"}, [s.describe() for _, _, s in got
                                      if dot4_form(s.name)[1] != "paired"]
