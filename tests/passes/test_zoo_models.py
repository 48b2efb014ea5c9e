"""The default pipeline on torchvision-shaped ResNet-18 and MobileNetV2 imported from ONNX:
every block fuses as the kernels expect, and the outputs stay those of the imported graph."""

from __future__ import annotations

import pytest
from passcheck import assert_same_numerics

from edgec import zoo
from edgec.frontends.onnx import import_onnx
from edgec.passes import DEFAULT_PIPELINE, run_pipeline


@pytest.fixture(scope="module", params=["resnet18", "mobilenet_v2"])
def imported(request):
    before = import_onnx(getattr(zoo, request.param)())
    after = before.copy()
    run_pipeline(after, DEFAULT_PIPELINE)
    return request.param, before, after


def test_blocks_fuse_into_one_node_each(imported):
    name, before, after = imported
    counts = after.op_counts()
    assert not {"BatchNormalization", "Relu", "Clip", "Add"} & set(counts)
    fused = [n for n in after.nodes if n.op == "FusedConv"]
    residual = [n for n in fused if n.input(3) is not None]
    assert counts["FusedConv"] + counts["Conv"] == before.op_counts()["Conv"]
    if name == "resnet18":
        # 8 basic blocks: conv-bn-add(shortcut)-relu is one FusedConv with Z and Relu; in the
        # 3 downsampling blocks the shortcut conv takes the main branch's conv as Z
        assert len(residual) == 8 and all(n.attrs["activation"] == "Relu" for n in fused)
        assert counts["Conv"] == 3
    else:
        # relu6 = Clip(0, 6) everywhere; the 10 blocks with a residual end in a projection
        # conv that adds it, the 7 without stay Conv (bias folded, no epilogue)
        relu6 = [n for n in fused if n.attrs["activation"] == "Clip"]
        assert len(relu6) == 35 and all(n.attrs["activation_params"] == [0.0, 6.0]
                                        for n in relu6)
        assert len(residual) == 10 and all(n.attrs["activation"] == "" for n in residual)
        assert counts["Conv"] == 7
    assert counts["FusedMatMul"] == 1 and "Gemm" not in counts


def test_outputs_match_the_imported_graph(imported):
    _, before, after = imported
    assert_same_numerics(before, after, tol=1e-4, seeds=(0,))


def test_memory_plan_is_at_the_lower_bound(imported):
    _, _, after = imported
    plan = after.record.memory_plan
    assert plan.lower_bound_bytes <= plan.arena_bytes <= 1.05 * plan.lower_bound_bytes
    assert len(plan.aliases) == 1  # the Flatten / Reshape before the classifier
    assert plan.arena_bytes < plan.total_bytes / 2  # reuse at least halves the activations
