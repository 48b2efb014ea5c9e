"""Models quantized as onnxruntime users do it (QDQ), for the tests and benchmarks of the
integer path."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx

from .builder import save


def quantize_qdq(model: onnx.ModelProto, folder: str | Path, samples: int = 4,
                 seed: int = 1, feeds: Sequence[dict[str, np.ndarray]] | None = None,
                 reduce_range: bool = False) -> Path:
    """`model` quantized as onnxruntime users do it: `quant_pre_process` (batch-norm folded
    into the convolutions), then `quantize_static` to the QDQ format with per-channel int8
    weights and uint8 activations, calibrated (min-max) on `feeds` ({input name: array} per
    sample), by default `samples` seeded normal inputs. A model below opset 13 is converted to
    13 first (per-channel DequantizeLinear needs its axis). `reduce_range`: 7-bit weights, as
    onnxruntime advises for x86 without VNNI (its vpmaddubsw kernels are exact with them).
    Needs onnxruntime; returns the path of the QDQ model written in `folder`."""
    import logging

    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    folder = Path(folder)
    if next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13) < 13:
        from onnx import version_converter

        model = version_converter.convert_version(model, 13)
    plain, pre, qdq = (save(model, folder / "float.onnx"), folder / "pre.onnx",
                       folder / "qdq.onnx")
    if feeds is None:
        inp = model.graph.input[0]
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        rng = np.random.default_rng(seed)
        feeds = [{inp.name: rng.standard_normal(shape).astype(np.float32)}
                 for _ in range(samples)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    quiet = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process, given already
    try:
        quant_pre_process(str(plain), str(pre), skip_symbolic_shape=True)
        quantize_static(str(pre), str(qdq), Reader(), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, reduce_range=reduce_range)
    finally:
        logging.getLogger().setLevel(quiet)
    return qdq
