"""The matrix-vector unit of an FPGA design (the HLS target): y = A @ B of 8-bit integers with
B constant, PE output columns and SIMD terms of each computed a cycle, as FINN's MVAU folds
a layer. The loops, per row of A:

    for nf < N / PE:                       PE accumulators, from the bias
        for sf < K / SIMD:  pipeline II=1
            for s < SIMD:   unrolled       acc[p] += (a[sf SIMD + s] - za) w[nf, sf, p, s]
        y[nf PE + p] = requantize(acc[p])  (fixed point)

with B - zb stored as [N / PE, K / SIMD, PE, SIMD] (so a cycle reads PE x SIMD consecutive
weights: the HLS project partitions that ROM, and A's array, by those factors). The sums are
the scalar rows' (quant.py `_int_matmul`), only grouped otherwise: integer, so the outputs are
the same bit for bit. A candidate of QGemm and QLinearMatMul on the HLS target only, where B
is a constant 8-bit matrix, A has 2 dims and the node has fixed-point requantization
(`--strategy NODE=hls-mvau{pe=P,simd=S}`, or the HLS project's folding). Where PE does not
divide N or SIMD K the unit is padded to whole folds (operator padding): zero weights past K
(the input read at its last term), outputs past N computed and not stored; its strategy says
so."""

from __future__ import annotations

import numpy as np

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...kernel_ir.kernel import LoopKind, cast, const, minimum
from ..lower import NodeKernelBuilder
from ..strategies import Candidate, Kind
from .common import named
from .quant_common import constant_table, fixed_finish, fixed_point, narrow, zero_point

I32 = DType.I32


def mvau_candidate(node: Node, a_v: Value, b_v: Value, bias_v: Value | None) -> Candidate:
    """The MVAU at PE = SIMD = 1 (folding sets them), or why it does not apply."""
    n = b_v.shape[0 if node.attrs.get("transB") else -1] if b_v.shape else 0
    why = ("B is not a constant 8-bit matrix" if not b_v.is_const or len(b_v.shape) != 2
           or b_v.dtype not in (DType.I8, DType.U8) else
           "A is not a 2-D 8-bit matrix" if len(a_v.shape) != 2
           or a_v.dtype not in (DType.U8, DType.I8) else
           "its requantization is not fixed point" if fixed_point(node) is None else
           "transposed A" if node.attrs.get("transA") else
           "a bias that is not one value or one per column" if bias_v is not None and (
               not bias_v.is_const or bias_v.type.numel not in (1, n)) else "")
    return Candidate.of(Kind.HLS_MVAU, {"pe": 1, "simd": 1}, why, tunable=("pe", "simd"))


def mvau(kb: NodeKernelBuilder, node: Node, a_v: Value, za_v: Value | None, b_v: Value,
         zb_v: Value | None, bias_v: Value | None, zy_v: Value | None, trans_b: bool,
         pe: int, simd: int) -> None:
    """Emit the folded matrix-vector unit (module doc)."""
    w = b_v.const.astype(np.int32)
    if trans_b:
        w = w.T
    k, n = w.shape
    if not (1 <= pe <= n and 1 <= simd <= k):
        raise EdgecError(f"node {node.name}: hls-mvau{{pe={pe},simd={simd}}} needs PE within "
                         f"its {n} outputs and SIMD within its {k} terms")
    if zb_v is not None:
        w = w - zb_v.const.astype(np.int32).reshape(1, -1)
    # padded to whole folds (operator padding): zero weights past K, outputs past N not stored
    kp, np_ = -(-k // simd) * simd, -(-n // pe) * pe
    w = np.pad(w, ((0, kp - k), (0, np_ - n)))
    packed = w.T.reshape(np_ // pe, pe, kp // simd, simd).transpose(0, 2, 1, 3)
    wt = constant_table(kb, narrow(np.ascontiguousarray(packed).reshape(-1)),
                        f"mvau{pe}x{simd}", b_v)
    m = a_v.shape[0]
    a = kb.bind(a_v, "a")
    za = zero_point(kb, za_v, "a_zp")
    c = kb.bind(bias_v, "c") if bias_v is not None else None
    cstride = 1 if bias_v is not None and bias_v.type.numel > 1 else 0
    finish = fixed_finish(kb, node, fixed_point(node), zero_point(kb, zy_v, "y_zp"), b_v)
    y = kb.bind(node.output, "y")
    padded = [f"{what} padded {a} -> {b}" for what, a, b in (("N", n, np_), ("K", k, kp))
              if b != a]
    kb.strategy = f"matrix-vector unit, {pe} PE x {simd} SIMD" + \
        (f" ({', '.join(padded)})" if padded else "")
    folds = kp // simd
    with kb.loops([m, np_ // pe], ["i", "nf"]) as (i, nf):
        # (a padded output's bias and multiplier are its last real column's: never stored)
        col = [named(kb, "col", minimum(nf * pe + p, const(n - 1)) if np_ != n
                     else nf * pe + p) for p in range(pe)]
        accs = [kb.local(f"acc{p}", cast(c[col[p] * cstride], I32) if c is not None
                         else const(0, I32)) for p in range(pe)]
        with kb.loop(folds, "sf", kind=LoopKind.PIPELINE, ii=1) as sf, \
                kb.loop(simd, "s", kind=LoopKind.UNROLL) as s:
            term = sf * simd + s
            xv = cast(a[i * k + (minimum(term, const(k - 1)) if kp != k else term)], I32)
            xv = named(kb, "xv", xv - za if za is not None else xv)
            base = named(kb, "wrow", ((nf * folds + sf) * pe) * simd + s)
            for p, acc in enumerate(accs):
                kb.assign(acc, acc + xv * cast(wt[base + p * simd], I32))
        for p, acc in enumerate(accs):
            if np_ == n:
                kb.store(y, i * n + col[p], finish((), i, col[p], acc))
            else:
                with kb.if_(nf * pe + p < n):
                    kb.store(y, i * n + col[p], finish((), i, col[p], acc))
