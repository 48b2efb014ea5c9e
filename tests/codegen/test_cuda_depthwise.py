"""The GPU's depthwise convolution (conv-depthwise-tiles): a block per image, channel and
16 x 16 outputs stages the input those outputs read, halo and zero padding included, in
shared memory, and each thread sums its output's taps from there. On the interpreter, thread
by thread with every access watched for races, against onnxruntime; the strides, dilations,
channel multipliers and planes that end mid-tile of MobileNet-like models."""

from __future__ import annotations

import pytest
from codegen.test_cuda import conv_model, gpu_checked

import edgec
from edgec import zoo


@pytest.mark.parametrize("case", [
    dict(c=8, m=8, size=(9, 7), kernel=(3, 3), group=8, pads=[1, 1, 1, 1], then="relu"),
    dict(c=4, m=4, size=(20, 18), kernel=(3, 3), group=4, strides=[2, 2],
         pads=[1, 1, 1, 1]),
    dict(c=3, m=6, size=(11, 12), kernel=(5, 3), group=3, dilations=[2, 1],
         pads=[4, 1, 0, 1], bias=False),
    dict(c=4, m=4, size=(6, 6), kernel=(3, 3), group=4, pads=[1, 1, 1, 1],
         then="residual"),
], ids=["3x3-relu", "strided", "multiplier-dilated", "residual"])
def test_depthwise_convolutions_stage_their_input_tile_in_shared_memory(case):
    model = conv_model(**case)
    node = "y" if case.get("then") else "conv"
    prog, _ = gpu_checked(model, "dw_", rtol=1e-5, atol=1e-5)
    (conv,) = [s for s in prog.strategies if s["node"] == node]
    assert conv["strategy"].startswith("depthwise conv, an input tile in shared memory"), conv


@pytest.mark.cross
def test_mobilenet_v2s_depthwise_convolutions_take_the_shared_memory_tiles(tmp_path):
    """All 17 of MobileNetV2's depthwise convolutions, through nvcc for sm_90."""
    art = edgec.compile(zoo.mobilenet_v2(), tmp_path / "m", name="m", target="cuda",
                        tune=False)
    kinds = [r["strategy"] for r in art.manifest["kernel_strategies"]]
    assert sum(k.startswith("depthwise conv, an input tile") for k in kinds) == 17, kinds
    assert not [k for k in kinds if k.startswith("conv, a GPU thread an output")], kinds
