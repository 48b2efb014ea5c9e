"""Units of an FPGA design (the HLS target) whose channels each have a window of their own:
the MaxPool unit, SIMD channels' maxima a cycle (`hls-pool{simd}`), and the depthwise
convolution unit, PE channels' multiply-adds a cycle (`hls-depthwise{pe}`, FINN's vector-
vector unit), folded as the matrix-vector units are (codegen/hls_fold.py). The loops, per
image, with L lanes (SIMD or PE):

    for g < C / L, oy < OH, ox < OW:
        for t < KH x KW:  pipeline II=1      a tap of the window
            for s < L:    unrolled          lane s: channel s C/L + g
                pool:      m[s] = max(m[s], x[s C/L + g, iy, ix])
                depthwise: acc[s] += (x[s C/L + g, iy, ix] - zx) w[g, t, s]
        y[s C/L + g, oy, ox] = m[s], or requantize(acc[s] + bias)  (fixed point)

Lane s takes the channels of block s, so the frame's array and the output's, NCHW as the
streams carry them, partitioned in L blocks (the HLS project's pragmas) give each lane a
memory of its own, and the weights, stored [C/L, taps, L], a bank each; L divides C. Taps
in the padding are skipped (a max: padding never wins; a sum: they add zero), as in the
scalar kernels; the outputs are theirs bit for bit (integer sums, grouped otherwise)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...kernel_ir.kernel import Expr, LoopKind, cast, const, maximum, minimum, select
from ..lower import NodeKernelBuilder
from ..strategies import Candidate, Kind
from .common import _lowest, named
from .quant_common import constant_table, fixed_finish, fixed_point, narrow, zero_point

I32 = DType.I32


def pool_unit_candidate(node: Node) -> Candidate:
    """The MaxPool unit at SIMD = 1 (folding sets it), or why it does not apply."""
    x_v = node.inputs[0]
    why = ("not a 2-D pool" if len(node.attrs.get("kernel_shape") or ()) != 2 else
           "its indices are an output" if len(node.outputs) > 1 else
           "the input is not 8-bit" if x_v.dtype not in (DType.U8, DType.I8) else "")
    return Candidate.of(Kind.HLS_POOL, {"simd": 1}, why, tunable=("simd",))


def depthwise_unit_candidate(node: Node, x_v: Value, zx_v: Value | None, w_v: Value,
                             b_v: Value | None) -> Candidate:
    """A depthwise QLinearConv's unit at PE = 1, or why it does not apply."""
    c_ = x_v.shape[1] if len(x_v.shape) == 4 else 0
    why = ("not a 2-D convolution" if len(w_v.shape) != 4 or not c_ else
           "not depthwise (one group a channel, one output channel each)"
           if int(node.attrs.get("group", 1)) != c_ or w_v.shape[0] != c_ else
           "the weights are not a constant 8-bit tensor" if not w_v.is_const
           or w_v.dtype not in (DType.I8, DType.U8) else
           "the input is not 8-bit" if x_v.dtype not in (DType.U8, DType.I8) else
           "a run-time input zero point" if zx_v is not None and not zx_v.is_const else
           "its requantization is not fixed point" if fixed_point(node) is None else
           "a bias that is not constant" if b_v is not None and not b_v.is_const else "")
    return Candidate.of(Kind.HLS_DEPTHWISE, {"pe": 1}, why, tunable=("pe",))


def _window_lanes(kb: NodeKernelBuilder, node: Node, lanes: int, what: str, name: str,
                  start: Callable[[int, Expr], Expr],
                  tap: Callable[[int, Expr, Expr, Expr, Expr], Expr],
                  finish: Callable[[Expr, Expr], Expr]) -> None:
    """The loops of the module doc: lane s's value (a local `name`s) starts at start(s,
    channel), takes tap(s, value, x's element, inside, t) at each tap and is stored as
    finish(channel, value)."""
    x_v, y_v = node.inputs[0], node.outputs[0]
    n_, c_, h, w = x_v.shape
    oh, ow = y_v.shape[2:]
    if not (1 <= lanes <= c_ and c_ % lanes == 0):
        raise EdgecError(f"node {node.name}: {what} to divide its {c_} channels")
    kh, kw = node.attrs["kernel_shape"] if node.op == "MaxPool" else node.inputs[3].shape[2:]
    (sy, sx), (dy, dx) = node.attrs["strides"], node.attrs["dilations"]
    py, px = node.attrs["pads"][:2]
    x, y = kb.bind(x_v, "x"), kb.bind(y_v, "y")
    groups = c_ // lanes
    with kb.loops([n_, groups, oh, ow], ["n", "g", "oy", "ox"]) as (n, g, oy, ox):
        chans = [s * groups + g for s in range(lanes)]
        vals = [kb.local(f"{name}{s}", start(s, ch)) for s, ch in enumerate(chans)]
        with kb.loop(kh * kw, "t", kind=LoopKind.PIPELINE, ii=1) as t:
            iy = named(kb, "iy", oy * sy + t // kw * dy - py)
            ix = named(kb, "ix", ox * sx + t % kw * dx - px)
            inside = named(kb, "inside", (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w))
            # (a tap in the padding reads the image's corner and is not taken)
            at = named(kb, "at", minimum(maximum(iy, const(0)), const(h - 1)) * w +
                       minimum(maximum(ix, const(0)), const(w - 1)))
            for s, (v, ch) in enumerate(zip(vals, chans, strict=True)):
                xv = named(kb, "xv", x[(n * c_ + ch) * (h * w) + at])
                kb.assign(v, tap(s, v, xv, inside, g * (kh * kw) + t))
        for v, ch in zip(vals, chans, strict=True):
            kb.store(y, ((n * c_ + ch) * oh + oy) * ow + ox, finish(ch, v))


def pool_unit(kb: NodeKernelBuilder, node: Node, simd: int) -> None:
    """Emit the MaxPool unit (module doc)."""
    kb.strategy = f"pooling unit, {simd} SIMD"
    lowest = _lowest(node.outputs[0].dtype)
    _window_lanes(kb, node, simd, f"hls-pool{{simd={simd}}} needs SIMD", "m",
                  lambda s, ch: lowest,
                  lambda s, m, xv, inside, wt: select(inside & (xv > m), xv, m),
                  lambda ch, m: m)


def depthwise_unit(kb: NodeKernelBuilder, node: Node, x_v: Value, zx_v: Value | None,
                   w_v: Value, zw_v: Value | None, b_v: Value | None, zy_v: Value | None,
                   sw_v: Value, pe: int) -> None:
    """Emit the depthwise convolution's unit (module doc)."""
    c_ = x_v.shape[1]
    taps = int(np.prod(w_v.shape[2:]))
    if not (1 <= pe <= c_ and c_ % pe == 0):
        raise EdgecError(f"node {node.name}: hls-depthwise{{pe={pe}}} needs PE to divide its "
                         f"{c_} channels")
    wc = w_v.const.astype(np.int32).reshape(c_, taps)
    if zw_v is not None:
        wc = wc - zw_v.const.astype(np.int32).reshape(-1, 1)
    # [C / PE, taps, PE]: lane s's weights are channel s C/PE + g's, a bank each (cyclic)
    packed = wc.reshape(pe, c_ // pe, taps).transpose(1, 2, 0)
    wt = constant_table(kb, narrow(np.ascontiguousarray(packed).reshape(-1)), f"dwu{pe}", w_v)
    zx = zero_point(kb, zx_v, "x_zp")
    b = kb.bind(b_v, "b") if b_v is not None else None
    finish = fixed_finish(kb, node, fixed_point(node), zero_point(kb, zy_v, "y_zp"), sw_v)
    kb.strategy = f"depthwise convolution unit, {pe} PE"

    def tap(s: int, acc: Expr, xv: Expr, inside: Expr, row: Expr) -> Expr:
        xi = cast(xv, I32)
        xi = select(inside, xi - zx if zx is not None else xi, const(0, I32))
        return acc + xi * cast(wt[row * pe + s], I32)

    # (named acc: the HLS project types them as narrow as their proved bound)
    _window_lanes(kb, node, pe, f"hls-depthwise{{pe={pe}}} needs PE", "acc",
                  lambda s, ch: cast(b[ch], I32) if b is not None else const(0, I32), tap,
                  lambda ch, acc: finish((), None, ch, acc))
