"""The pooling unit of an FPGA design (the HLS target): a MaxPool that takes the maximum of
SIMD channels a cycle, folded as the matrix-vector units are (codegen/hls_fold.py). The loops,
per image:

    for g < C / SIMD, oy < OH, ox < OW:
        for t < KH x KW:  pipeline II=1      a tap of the window
            for s < SIMD: unrolled          m[s] = max(m[s], x[s C/SIMD + g, iy, ix])
        y[s C/SIMD + g, oy, ox] = m[s]

Lane s takes the channels of block s (s C / SIMD + g), so the frame's array and the output's,
NCHW as the streams carry them, partitioned in SIMD blocks (the HLS project's pragmas) give
each lane a memory of its own; SIMD divides C. Taps in the padding are skipped (padding never
wins a max), as in the scalar kernel (pool.py); the outputs are the same values."""

from __future__ import annotations

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.graph import Node
from ...kernel_ir.kernel import LoopKind, const, maximum, minimum, select
from ..lower import NodeKernelBuilder
from ..strategies import Candidate, Kind
from .common import _lowest, named


def pool_unit_candidate(node: Node) -> Candidate:
    """The unit at SIMD = 1 (folding sets it), or why it does not apply."""
    x_v = node.inputs[0]
    why = ("not a 2-D pool" if len(node.attrs.get("kernel_shape") or ()) != 2 else
           "its indices are an output" if len(node.outputs) > 1 else
           "the input is not 8-bit" if x_v.dtype not in (DType.U8, DType.I8) else "")
    return Candidate.of(Kind.HLS_POOL, {"simd": 1}, why, tunable=("simd",))


def pool_unit(kb: NodeKernelBuilder, node: Node, simd: int) -> None:
    """Emit the MaxPool unit (module doc)."""
    x_v, y_v = node.inputs[0], node.outputs[0]
    n_, c_, h, w = x_v.shape
    oh, ow = y_v.shape[2:]
    if not (1 <= simd <= c_ and c_ % simd == 0):
        raise EdgecError(f"node {node.name}: hls-pool{{simd={simd}}} needs SIMD to divide its "
                         f"{c_} channels")
    (kh, kw), (sy, sx) = node.attrs["kernel_shape"], node.attrs["strides"]
    (dy, dx), (py, px) = node.attrs["dilations"], node.attrs["pads"][:2]
    x, y = kb.bind(x_v, "x"), kb.bind(y_v, "y")
    groups = c_ // simd
    kb.strategy = f"pooling unit, {simd} SIMD"
    with kb.loops([n_, groups, oh, ow], ["n", "g", "oy", "ox"]) as (n, g, oy, ox):
        best = [kb.local(f"m{s}", _lowest(y.dtype)) for s in range(simd)]
        with kb.loop(kh * kw, "t", kind=LoopKind.PIPELINE, ii=1) as t:
            iy = named(kb, "iy", oy * sy + t // kw * dy - py)
            ix = named(kb, "ix", ox * sx + t % kw * dx - px)
            inside = named(kb, "inside", (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w))
            # (a tap in the padding reads the image's corner and is not taken)
            at = named(kb, "at", minimum(maximum(iy, const(0)), const(h - 1)) * w +
                       minimum(maximum(ix, const(0)), const(w - 1)))
            for s, m in enumerate(best):
                v = named(kb, "v", x[(n * c_ + s * groups + g) * (h * w) + at])
                kb.assign(m, select(inside & (v > m), v, m))
        for s, m in enumerate(best):
            kb.store(y, ((n * c_ + s * groups + g) * oh + oy) * ow + ox, m)
