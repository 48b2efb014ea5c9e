"""The references of "If", "Loop" and "Scan" (run by the interpreter) against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from test_control_flow import control_flow_model

from edgec.frontends.onnx import import_onnx
from edgec.ir import interpret, verify


def test_control_flow_references_match_onnxruntime():
    m = control_flow_model()
    g = import_onnx(m)
    verify(g)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    for sign in (1.0, -1.0):
        x = (sign * np.abs(rng.standard_normal((2, 3)))).astype(np.float32)
        y = rng.standard_normal((2, 3)).astype(np.float32)
        want = sess.run(None, {"x": x, "y": y})
        got = interpret(g, {"x": x, "y": y})
        for w, v in zip(want, got.values()):
            np.testing.assert_allclose(v, w, rtol=1e-6)
