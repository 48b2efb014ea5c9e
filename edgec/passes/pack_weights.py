"""Weight packing: the constant weights of blocked integer convolutions stored as their
kernels read them (ir/encodings.py), so the text IR and the artifact show the encoding.

    BlockedQLinearConv(x, sx, zx, W, sw, zw, sy, zy, b){...}
        -> BlockedQLinearConv(x, sx, zx, P, sw, -, sy, zy, b){..., wenc="dot4 l16 x16 m2",
                                                              wshape=[M, C, KH, KW]}

P holds W - zw in the tile's order; two weights to a byte ("nib") where every centred weight
fits 4 bits (int4, int3 and int2 weights: half the bytes of int8, unpacked in the tile). The
tile's output blocks per group (M of the encoding) follow the target's register count
(`registers`) and the output row, as `encodings.qconv_blocks` chooses them. Depthwise weights
are stored [cb][kh][kw][lane] in int8 (widened in the tile), never nibble-packed: they are a
few kilobytes a model. Weights shared by several nodes are packed once per encoding.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..ir.encodings import QConvWeights, encode_qconv, qconv_encoding
from ..ir.ops.quant import centred_conv_weights
from .manager import register_pass


def weight_encoding(node: Node, wc: np.ndarray, registers: int) -> QConvWeights:
    """The encoding the kernel of BlockedQLinearConv `node` reads for centred weights `wc`."""
    y = node.output.shape
    return qconv_encoding(node.attrs["block"], node.attrs["group"] > 1,
                          node.inputs[0].shape[-1], y[1], y[3], wc, registers)


@register_pass("pack-weights")
def pack_weights(graph: Graph, *, registers: int = 16) -> bool:
    """Store the weights of blocked integer convolutions in their kernels' encoding."""
    packed: dict = {}
    changed = False
    for node in list(graph.nodes):
        if node.op != "BlockedQLinearConv" or node.attrs.get("wenc"):
            continue
        w, zw = node.inputs[3], node.input(5)
        if not w.is_const or (zw is not None and not zw.is_const):
            continue
        wc = centred_conv_weights(w.const, None if zw is None else zw.const)
        enc = weight_encoding(node, wc, registers)
        key = (id(w), id(zw), str(enc))
        if key not in packed:
            packed[key] = graph.const(encode_qconv(wc, enc), f"{w.name}_packed")
        graph.set_input(node, 3, packed[key])
        if zw is not None:
            graph.set_input(node, 5, None)
        node.attrs["wenc"], node.attrs["wshape"] = str(enc), list(w.shape)
        changed = True
    return changed
