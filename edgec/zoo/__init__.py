"""Example models, built with `onnx.helper` as PyTorch's exporter writes them.

The graphs follow torchvision's topologies and torch's naming (initializers "conv1.weight",
values "/layer1/layer1.0/conv1/Conv_output_0"), with batch-norm left unfolded. Weights are
random with fixed seeds: convolutions He-scaled (std = sqrt(2 / fan_in)) and batch-norm
statistics random but close to the true ones, so activations stay O(1) through the network.
`FAMILIES` adds one small model per family real users bring (a BERT-style encoder layer, a
two-scale detector, a 1-D audio CNN, a tf2onnx NHWC CNN, a model of ONNX functions as torch's
dynamo exporter writes them), each in the form its exporter emits.

    python -m edgec.zoo resnet18 -o resnet18.onnx
    python -m edgec.zoo transformer_encoder --opset 20
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .builder import IR_VERSION, PRODUCER, Builder, save
from .cnns import MODELS, mlp, mobilenet_v2, resnet18, tiny_cnn
from .families import (
    FAMILIES,
    TORCH_DOMAIN,
    TORCHLIB_DOMAIN,
    audio_cnn,
    detection_head,
    nhwc_cnn,
    torch_functions,
    transformer_encoder,
)
from .qdq import quantize_qdq

__all__ = ["FAMILIES", "IR_VERSION", "MODELS", "PRODUCER", "TORCHLIB_DOMAIN", "TORCH_DOMAIN",
           "Builder", "audio_cnn", "detection_head", "main", "mlp", "mobilenet_v2", "nhwc_cnn",
           "quantize_qdq", "resnet18", "save", "tiny_cnn", "torch_functions",
           "transformer_encoder"]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m edgec.zoo",
                                 description="Write one of edgec's example models as ONNX.")
    ap.add_argument("name", choices=sorted({**MODELS, **FAMILIES}))
    ap.add_argument("-o", "--output", help="file to write (default NAME.onnx)")
    ap.add_argument("--opset", type=int,
                    help="ONNX opset, 11..21 (default: the model's, 13 for the CNNs)")
    args = ap.parse_args(argv)
    try:
        build = {**MODELS, **FAMILIES}[args.name]
        model = build() if args.opset is None else build(opset=args.opset)
    except ValueError as e:
        ap.error(str(e))
    path = save(model, args.output or f"{args.name}.onnx")
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0
