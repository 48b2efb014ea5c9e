"""Matrix products with constant weights on a vector target: a driver around `gemm_tile`.

Y[M, N] = act(A[M, K] @ B[K, N] + bias + Z) with B packed at compile time into panels of
NB = NV * L columns, [panel][k][column], zero past N, so the micro-kernel reads one panel
front to back. The parallel loop runs over (row tile, panel); the rows of A are the
flattened leading axes, so a batch of vectors is one matrix.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...ir.ops.fused import VECTOR_ACTIVATIONS
from ...kernel_ir.kernel import const, minimum
from ...targets.target import Target
from .. import microkernels as mk
from ..lower import NodeKernelBuilder
from ..strategies import Candidate, Kind, roofline
from .activation import activation_key, activation_of
from .common import code_scales, derived_constant, weight_codes_along

F32 = DType.F32


def tiles(lanes: int, m: int) -> tuple[int, int]:
    """(MR, NV): rows and column vectors of the register tile; a single row (a
    matrix-vector product) keeps 8 vectors of accumulators to cover the FMA latency."""
    if m == 1:
        return 1, 8
    return (4, 4) if lanes >= 16 else (4, 2)


def pack_panels(b: np.ndarray, width: int) -> np.ndarray:
    k, n = b.shape
    panels = -(-n // width)
    out = np.zeros((panels, k, width), b.dtype)
    for p in range(panels):
        cols = b[:, p * width:(p + 1) * width]
        out[p, :, :cols.shape[1]] = cols
    return out.reshape(-1)


def vector_gemm_candidate(target: Target, a_v: Value, b_v: Value, y_v: Value,
                          bias_v: Value | None = None, z_v: Value | None = None,
                          fused: Node | None = None) -> Candidate:
    """The vector GEMM as a candidate: it applies to a float32 product with a constant 2-D
    B, a constant bias or none, a residual of Y's shape and an activation the vector
    epilogue implements; its register tile is `tiles` (mr rows x nv vectors). Costed by the
    roofline at full vectors, reading A, B and Y once."""
    lanes = target.lanes(F32)
    act_name = fused.attrs["activation"] if fused is not None else ""
    k = b_v.shape[0] if len(b_v.shape) == 2 else 0
    n = b_v.shape[1] if len(b_v.shape) == 2 else 0
    m = math.prod(a_v.shape[:-1]) if len(a_v.shape) >= 1 else 0
    reason = (
        "the target has no float vectors" if lanes < 2 else
        "not float32" if y_v.dtype != F32 or a_v.dtype != F32 else
        "B is computed at run time (its panels are packed at compile time)"
        if not b_v.is_const else
        f"B has {len(b_v.shape)} dimensions, not 2" if len(b_v.shape) != 2 else
        "A's last dimension is not B's first" if len(a_v.shape) < 1 or a_v.shape[-1] != k else
        f"the activation {act_name} has no vector epilogue"
        if act_name not in VECTOR_ACTIVATIONS else
        "the bias is not a constant of B's columns" if bias_v is not None and (
            not bias_v.is_const or bias_v.shape != b_v.shape[1:]) else
        "the residual is not of Y's shape" if z_v is not None and z_v.shape != y_v.shape else
        "an empty product" if m == 0 or n == 0 else
        "Y is not A's rows by B's columns" if y_v.type.numel != m * n else "")
    if reason:
        return Candidate.of(Kind.VECTOR_GEMM, {}, reason)
    mr, nv = tiles(lanes, m)
    cost = roofline(target, m * n * k, F32.itemsize * (m * k + k * n + m * n), lanes)
    return Candidate.of(Kind.VECTOR_GEMM, {"lanes": lanes, "mr": mr, "nv": nv}, "", cost,
                        ("mr", "nv"))


def vector_gemm(kb: NodeKernelBuilder, c: Candidate, a_v: Value, b_v: Value, y_v: Value,
                bias_v: Value | None = None, z_v: Value | None = None,
                fused: Node | None = None) -> None:
    """Build the kernel of candidate `c` (`vector_gemm_candidate`, which applies)."""
    lanes = kb.lanes(F32)
    k, n = b_v.shape
    m = math.prod(a_v.shape[:-1])
    act = activation_of(fused) if fused is not None else None
    act_key = activation_key(fused) if fused is not None else ""
    mr, nv = int(c["mr"]), int(c["nv"])
    width = nv * lanes
    panels = -(-n // width)
    kb.strategy = "vector GEMM"
    a = kb.bind(a_v, "a")
    codes = weight_codes_along(b_v, 1)
    if codes and lanes < 16:
        # the tile converts every weight vector it loads, 2 vector operations each: worth
        # the bytes it saves on 64-byte vectors (Zen 4, 1 thread: zoo MLP 0.84x the float
        # weights' time, transformer encoder 0.96x) but not on 32-byte ones (AVX2 on the
        # same host: MLP 1.31x, encoder 1.05x), nor, by the same count, on NEON's 16-byte
        # ones
        codes = None
    bp = derived_constant(kb, b_v, f"panels{width}{'q8' if codes else ''}",
                          lambda w: pack_panels(codes[0] if codes else w, width), "bp")
    s = code_scales(kb, b_v, codes[1], panels * width) if codes else None
    if codes:
        kb.strategy += ", int8 weights"

    def padded_bias(_):
        out = np.zeros(panels * width, np.float32)
        if bias_v is not None:
            out[:n] = bias_v.const
        return out

    bias = derived_constant(kb, bias_v if bias_v is not None else b_v,
                            f"bias{width}{'' if bias_v is not None else 'zero'}", padded_bias,
                            "bias")
    z = kb.bind(z_v, "z") if z_v is not None else None
    y = kb.bind(y_v, "y")
    full, rest = m // mr, m % mr
    mtiles = full + (1 if rest else 0)
    with kb.loop(mtiles * panels, "t", kind="parallel") as t:
        p = kb.local("p", t % panels)
        i0 = kb.local("i0", (t // panels) * mr)
        cols = kb.local("cols", minimum(n - p * width, width))
        # every row tile has mr rows but the last, which may have fewer
        variants = [(mr, (t // panels) < full)] if full else []
        variants += [(rest, (t // panels) >= full)] if rest else []
        for rows, cond in variants:
            with kb.if_(cond if len(variants) > 1 else const(True)):
                fn = mk.gemm_tile(lanes, rows, nv, z is not None, act_key, act, s is not None)
                args = [(a, i0 * k), (bp, p * (k * width))]
                args += [(s, p * width)] if s is not None else []
                args += [(bias, p * width)]
                args += [(z, i0 * n + p * width)] if z is not None else []
                args += [(y, i0 * n + p * width), k, k, n, cols]
                kb.call(fn, *args)

