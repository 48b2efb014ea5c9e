"""Small recurrent models, built with onnx.helper the way torch exports them, compiled by
`edgec.compile`, run through `edgec.load(...).run` and matched against onnxruntime.

The text classifier: tokens [B, T] -> embedding Gather -> Transpose to time-major -> LSTM
(initial states as constants, as torch exports zeros) -> Squeeze the direction axis ->
bidirectional GRU (linear_before_reset=1, torch's form) -> Transpose/Reshape to [T, B, 2H] ->
Gather the last step -> Gemm. The tagger: two stacked LSTMs, the second reverse with run-time
sequence lengths, whose Y, Y_h and Y_c are all model outputs.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from harness import rel_error
from onnx import TensorProto, helper, numpy_helper

import edgec

VOCAB, EMBED, HIDDEN, HIDDEN2, CLASSES = 50, 8, 12, 6, 4
BATCH, STEPS = 3, 7


def _w(rng, *shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "rec", inputs, outputs,
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def classifier(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    inits = {
        "embedding": _w(rng, VOCAB, EMBED, scale=1.0),
        "lstm_W": _w(rng, 1, 4 * HIDDEN, EMBED), "lstm_R": _w(rng, 1, 4 * HIDDEN, HIDDEN),
        "lstm_B": _w(rng, 1, 8 * HIDDEN, scale=0.1),
        "lstm_h0": np.zeros((1, BATCH, HIDDEN), np.float32),
        "lstm_c0": np.zeros((1, BATCH, HIDDEN), np.float32),
        "axis1": np.array([1], np.int64),
        "gru_W": _w(rng, 2, 3 * HIDDEN2, HIDDEN), "gru_R": _w(rng, 2, 3 * HIDDEN2, HIDDEN2),
        "gru_B": _w(rng, 2, 6 * HIDDEN2, scale=0.1),
        "flat": np.array([STEPS, BATCH, 2 * HIDDEN2], np.int64),
        "last": np.array(STEPS - 1, np.int64),
        "fc_W": _w(rng, CLASSES, 2 * HIDDEN2), "fc_B": _w(rng, CLASSES, scale=0.1),
    }
    nodes = [
        helper.make_node("Gather", ["embedding", "tokens"], ["emb"]),
        helper.make_node("Transpose", ["emb"], ["emb_t"], perm=[1, 0, 2]),
        helper.make_node("LSTM", ["emb_t", "lstm_W", "lstm_R", "lstm_B", "", "lstm_h0",
                                  "lstm_c0"], ["lstm_Y", "lstm_Yh", "lstm_Yc"],
                         hidden_size=HIDDEN),
        helper.make_node("Squeeze", ["lstm_Y", "axis1"], ["lstm_out"]),
        helper.make_node("GRU", ["lstm_out", "gru_W", "gru_R", "gru_B"], ["gru_Y", "gru_Yh"],
                         hidden_size=HIDDEN2, direction="bidirectional", linear_before_reset=1),
        helper.make_node("Transpose", ["gru_Y"], ["gru_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["gru_t", "flat"], ["gru_out"]),
        helper.make_node("Gather", ["gru_out", "last"], ["final"], axis=0),
        helper.make_node("Gemm", ["final", "fc_W", "fc_B"], ["logits"], transB=1),
    ]
    return _model(nodes, [helper.make_tensor_value_info("tokens", TensorProto.INT64,
                                                        [BATCH, STEPS])],
                  [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                 [BATCH, CLASSES])], inits)


def tagger(seed: int = 1) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    inits = {
        "W1": _w(rng, 1, 4 * HIDDEN, EMBED), "R1": _w(rng, 1, 4 * HIDDEN, HIDDEN),
        "B1": _w(rng, 1, 8 * HIDDEN, scale=0.1), "P1": _w(rng, 1, 3 * HIDDEN, scale=0.2),
        "axis1": np.array([1], np.int64),
        "W2": _w(rng, 1, 4 * HIDDEN2, HIDDEN), "R2": _w(rng, 1, 4 * HIDDEN2, HIDDEN2),
    }
    nodes = [
        helper.make_node("LSTM", ["x", "W1", "R1", "B1", "", "", "", "P1"], ["Y1", "", ""],
                         hidden_size=HIDDEN),
        helper.make_node("Squeeze", ["Y1", "axis1"], ["h1"]),
        helper.make_node("LSTM", ["h1", "W2", "R2", "", "lens"], ["Y", "Y_h", "Y_c"],
                         hidden_size=HIDDEN2, direction="reverse"),
    ]
    f32 = TensorProto.FLOAT
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", f32, [STEPS, BATCH, EMBED]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH])],
        [helper.make_tensor_value_info("Y", f32, [STEPS, 1, BATCH, HIDDEN2]),
         helper.make_tensor_value_info("Y_h", f32, [1, BATCH, HIDDEN2]),
         helper.make_tensor_value_info("Y_c", f32, [1, BATCH, HIDDEN2])], inits)


def onnxruntime_outputs(model: onnx.ModelProto, feeds) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds), strict=True))


@pytest.mark.parametrize("build,feeds", [
    (classifier, lambda rng: {"tokens": rng.integers(0, VOCAB, (BATCH, STEPS))}),
    (tagger, lambda rng: {"x": rng.standard_normal((STEPS, BATCH, EMBED)).astype(np.float32),
                          "lens": np.array([STEPS, 3, 5], np.int32)}),
])
def test_recurrent_model_matches_onnxruntime(tmp_path, build, feeds):
    model = build()
    inputs = feeds(np.random.default_rng(7))
    want = onnxruntime_outputs(model, inputs)
    edgec.compile(model, tmp_path / "out", name="rec")
    got = edgec.load(tmp_path / "out").run(inputs)
    assert set(got) == set(want)
    for name, w in want.items():
        assert rel_error(got[name], w) < 1e-4, f"{name}: {rel_error(got[name], w):.3g}"
