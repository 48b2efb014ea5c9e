"""The int8 GEMM micro-kernel's driver (targets with vectors): MatMulInteger, QLinearMatMul
and QGemm with a constant int8 B [K, N] run `microkernels_int8.gemm_tile` on B's packed panels
(ir/encodings.py GemmWeights, set by the pack-weights pass or packed here), zero points folded
with B's column sums and A's row sums, requantized per tensor or per column (float32, or
fixed point), the rows of A in parallel blocks against chunks of panels that fit the L2."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.encodings import GemmWeights, encode_gemm, gemm_groups, gemm_pairs
from ...ir.graph import Node, Value
from ...kernel_ir.kernel import INDEX, Buffer, Expr, cast, const, minimum
from .. import microkernels_int8 as mk8
from ..lower import NodeKernelBuilder
from ..strategies import Candidate, Kind, roofline
from .quant_common import (
    constant_table,
    dot4_pairdot,
    dot4_pairs16,
    dot4_recentre,
    zero_point,
)

F32, I32 = DType.F32, DType.I32


@dataclass
class Requant8:
    """The requantization of a vectorized QLinearMatMul: the multiplier, per tensor or per
    column, computed at compile time, and the output zero point (read in the kernel)."""

    table: np.ndarray  # float32, () or [N]
    zy: Callable[[], Expr | None]
    fixed: tuple[np.ndarray, int] | None = None  # (int32 q, () or [N]; shift): fixed point


def _int8_gemm_chosen(kb: NodeKernelBuilder, reason: str, cost: float | None = None,
                      params: dict | None = None) -> bool:
    """Whether the int8 GEMM (which does not apply where `reason` says why) is chosen over
    the scalar integer rows (quant.py `_int_matmul`, which always apply; not costed: the
    int8 GEMM is preferred wherever it applies)."""
    return kb.choose([Candidate.of(Kind.INT8_GEMM, params or {}, reason, cost),
                      Candidate.of(Kind.INT_MATMUL_ROWS)]).kind is Kind.INT8_GEMM


def vector_int8_gemm(kb: NodeKernelBuilder, node: Node, a_v: Value, za_v: Value | None,
                      b_v: Value, bz_v: Value | None, rq: Requant8 | None = None,
                      b_matrix: np.ndarray | None = None,
                      bias: np.ndarray | None = None) -> bool:
    """y = A @ B with the int8 GEMM micro-kernel (`lowering/microkernels_int8.py`) when the
    target has vectors and B is a constant int8 matrix [K, N] (zero point constant, per
    tensor or per column; A's per tensor): rows of A (its leading dims flattened) in blocks of
    MR, split over threads, each against every packed panel of B. `b_matrix` gives B when
    b_v holds it in another form (QGemm's transB); `bias` (int32 per column, A's zero point
    then constant) is added to the sums, folded into the zero-point table. B comes as the
    pack-weights pass encoded it (the node's `benc`: b_v is then the decoded matrix, the
    node's input the encoding) or is packed here. Returns False (nothing emitted) for the
    other forms, which the scalar kernel handles, and where a `--strategy` override chose
    that (the candidates: `_int8_gemm_chosen`)."""
    lanes = kb.lanes(I32)
    if lanes == 1 or not b_v.is_const or b_v.dtype is not DType.I8 or len(b_v.shape) != 2:
        return _int8_gemm_chosen(kb, "the target has no int32 vectors" if lanes == 1 else
                                 "B is not a constant int8 matrix")
    if a_v.dtype not in (DType.U8, DType.I8) or node.output.dtype in (DType.U16, DType.I16):
        # 16-bit activations: the scalar integer kernels (quant.py)
        return _int8_gemm_chosen(kb, "16-bit activations (W8A16) take the scalar integer rows")
    bmat = b_v.const if b_matrix is None else b_matrix
    k, n = bmat.shape
    if len(a_v.shape) < 1 or a_v.shape[-1] != k or k < 4 or n == 0:
        return _int8_gemm_chosen(kb, "K < 4 (no 4 bytes of A to read) or an empty product")
    if za_v is not None and za_v.type.numel != 1:
        return _int8_gemm_chosen(kb, "A's zero point is not per tensor")
    if bz_v is not None and not (bz_v.is_const and (bz_v.type.numel == 1 or
                                                    tuple(bz_v.shape) == (n,))):
        return _int8_gemm_chosen(kb, "B's zero point is not a constant per tensor or column")
    if bias is not None and za_v is not None and not za_v.is_const:
        return _int8_gemm_chosen(kb, "a bias with A's zero point computed at run time")
    rows = a_v.type.numel // k
    mr_max, nv = mk8.tile_shape(lanes)
    width = nv * lanes
    benc = node.attrs.get("benc")
    enc = GemmWeights.parse(benc) if benc else GemmWeights(lanes, nv)
    if enc.lanes != lanes or enc.nv != nv:
        raise EdgecError(f"node {node.name}: B is encoded as '{benc}', for {enc.lanes}-lane "
                         f"tiles of {enc.nv} vectors; this target's int8 GEMM takes "
                         f"{lanes}-lane tiles of {nv}: run pack-weights with the target's "
                         "lanes")
    scale = 16 if enc.nibbles else 1  # the tile sums 16 * b
    panels, groups, ktail = -(-n // width), k // 4, k % 4
    stored = gemm_groups(bmat, lanes, nv) if enc.sparse else None
    # uint8 A against int8 B whose byte pairs fit int16: the cheaper dot4 where the target
    # has one (AVX2's vpmaddubsw; int4 weights are summed as 16 * b and stay as they are)
    pairs16, pairs_say = dot4_pairs16(kb, gemm_pairs(bmat)) \
        if a_v.dtype is DType.U8 and not enc.nibbles else (False, "")
    # uint8 A summed as A - 128 (microkernels_int8) where int8 x int8 is the cheaper dot4
    recentre = a_v.dtype is DType.U8 and dot4_recentre(kb)
    # NEON without dotprod: two k-groups summed in int16 where every weight is within +-127
    pairs, pairdot_say = dot4_pairdot(kb, bmat, nv) if dot4_recentre(kb) and not enc.nibbles \
        and not enc.sparse else (0, "")
    sdot = pairs and "dotprod" in kb.target.features  # the pairs form is sdot's fallback
    kb.strategy = "int8 GEMM" + (", int4 weights two to a byte" if enc.nibbles else "") + \
        (f", sparse dot4 groups, density {stored[:-(-n // lanes)].mean():.2f}"
         if enc.sparse else "") + \
        (", fixed-point requantization" if rq is not None and rq.fixed else "") + \
        pairs_say + pairdot_say + ("" if benc else ", weights packed by the kernel builder")
    last_used = -(-(n - (panels - 1) * width) // lanes)  # vectors of the last panel in use
    b = bmat.astype(np.int32)
    zb = np.zeros(n, np.int32) if bz_v is None else np.broadcast_to(
        bz_v.const.astype(np.int32).reshape(-1), (n,))

    def column_table(vals: np.ndarray, name: str, dtype=np.int32) -> Buffer:
        out = np.zeros(panels * width, dtype)
        out[:n] = vals
        return constant_table(kb, out, name, b_v)

    zero_a = za_v is not None and not (za_v.is_const and not za_v.const.any())
    colsum = b.sum(0, dtype=np.int64)
    zero_b = bool(zb.any())
    fixed = rq.fixed if rq is not None else None
    mult_per_column = rq is not None and (fixed[0] if fixed else rq.table).size > 1
    # a bias rides on the zero-point table: za * cz + bias = 1 * (za * cz + bias)
    folded = bias is not None
    if folded:
        za_c = int(za_v.const.reshape(-1)[0]) if za_v is not None else 0
        # re-centred: the 128 colsum the tile's sums lack
        corr = za_c * (k * zb.astype(np.int64) - colsum) + bias + 128 * recentre * colsum
    else:  # re-centred: the zero point za - 128 (and row sums minus 128 K) take it
        corr = (k * zb.astype(np.int64) - colsum) if zero_a or recentre else None
    if corr is not None and np.abs(corr * scale).max(initial=0) >= 2**31:
        return _int8_gemm_chosen(kb, "the zero-point corrections overflow int32")
    m_table = None if rq is None or fixed else rq.table.astype(np.float32) * np.float32(1 / scale)
    if m_table is not None and not np.array_equal(m_table * np.float32(scale), rq.table):
        return _int8_gemm_chosen(kb, "a multiplier too small to divide by 16 exactly")
    rows_a = a_v.type.numel // k
    cost = roofline(kb.target, rows_a * k * n, a_v.type.numel + k * n + rows_a * n, 4 * lanes)
    if not _int8_gemm_chosen(kb, "", cost, {"lanes": lanes, "mr": mr_max, "nv": nv,
                                            "encoding": str(enc)}):
        return False
    epi = mk8.Int8Epilogue(node.output.dtype, zero_a or folded or recentre, zero_b,
                           mult_per_column, fixed is not None)
    a = kb.bind(a_v, "a")
    full_size = enc.sizes(k, n)[0]
    if benc:
        bp = bt = kb.bind(node.inputs[3 if node.op != "MatMulInteger" else 1], "bp")
    else:
        bp = bt = constant_table(kb, encode_gemm(bmat, enc), str(enc).replace(" ", "_"), b_v)
    cz = column_table((corr * scale).astype(np.int32), f"cz{'b' * folded}{width}x{scale}") \
        if corr is not None else None
    zbt = column_table(zb * scale, f"zb{width}x{scale}") if zero_b else None
    if not mult_per_column:
        mult = None
    elif fixed:
        mult = column_table(fixed[0].reshape(-1), f"rq{width}")
    else:
        mult = column_table(m_table.reshape(-1), f"mult{width}x{scale}", np.float32)
    y = kb.bind(node.output, "y")
    if enc.sparse:  # per vector of each panel: its stored k-groups' indices, and where they start
        gidx = constant_table(kb, np.nonzero(stored)[1].astype(np.int32), f"gidx{width}", b_v)
        gptr = constant_table(kb, np.concatenate([[0], np.cumsum(stored.sum(1))]).astype(
            np.int32), f"gptr{width}", b_v)
    full, rest = rows // mr_max, rows % mr_max
    # B larger than half the L2 is swept in chunks of panels that fit: every row block then
    # reads the chunk from L2 instead of the whole B from memory (2000^3: 47.7 -> 31.3 ms
    # on the AVX-512 host); a chunk is a parallel loop of its own (the thread pool runs the
    # kernel's top-level loops)
    half_l2 = kb.target.caches.l2 // 2
    per_chunk = panels if k * width * panels <= half_l2 else max(1, half_l2 // (k * width))

    def rows_against(p0: int, chunk: int) -> None:
        """A parallel loop: every block of MR rows against panels p0 .. p0 + chunk of B."""
        with kb.loop(-(-rows // mr_max), "t", kind="parallel") as t:
            r0 = kb.local("r0", t * mr_max)
            # scalars read from buffers are loaded inside the parallel loop (its body is closed)
            za = const(1, I32) if folded else zero_point(kb, za_v, "a_zp") if zero_a else None
            if recentre and not folded:
                za = const(-128, I32) if za is None else kb.local("za", za - 128)
            scalars = [za] if epi.zero_a else []
            if rq is not None:
                if mult_per_column:
                    m = None
                elif fixed:
                    m = const(int(fixed[0].reshape(())), I32)
                else:
                    m = const(float(m_table.reshape(())), F32)
                zy = rq.zy()
                tail_scalars = ([m] if m is not None else []) + [zy if zy is not None
                                                                else const(0, I32)]
                if fixed:
                    tail_scalars.append(const(fixed[1] + scale.bit_length() - 1, I32))
            else:
                tail_scalars = []
            variants = [(mr_max, t < full)] if full else []
            variants += [(rest, t >= full)] if rest else []
            for mr, cond in variants:
                with kb.if_(cond if len(variants) > 1 else const(True)):
                    sums = []
                    if zero_b:  # row sums of A, for the zero point of B
                        for i in range(mr):
                            rs = kb.local(f"rs{i}_", const(0, I32))
                            with kb.loop(k, "kk") as kk:
                                kb.assign(rs, rs + cast(a[(r0 + i) * k + kk], I32))
                            # re-centred rows (zero point za - 128): the sums of A - 128
                            sums.append(rs - 128 * k if recentre and not folded else rs)

                    def tile(p, used: int = 0, mr: int = mr, sums: list = sums) -> None:
                        if enc.sparse:  # each vector of the panel over its stored groups
                            for v in range(used or nv):
                                vector(p, v, mr, sums)
                            return
                        shape = (lanes, mr, nv, a_v.dtype, ktail, epi, enc.nibbles, used)
                        fn = mk8.gemm_tile(*shape, pairs16=pairs16, recentre=recentre,
                                           pairs=bool(pairs) and not sdot)
                        if sdot:
                            fn = mk8.with_fallback(fn, mk8.gemm_tile(
                                *shape, pairs16=pairs16, recentre=recentre, pairs=True))
                        args = [(a, r0 * k), (bp, p * (groups * 4 * lanes * enc.group_vectors))]
                        args += [(bt, full_size + p * (4 * lanes * enc.group_vectors))] \
                            if ktail else []
                        args += [(cz, p * width)] if cz is not None else []
                        args += [(zbt, p * width)] if zbt is not None else []
                        args += [(mult, p * width)] if mult is not None else []
                        args += [(y, r0 * n + p * width), groups, k, n,
                                 minimum(const(n) - p * width, const(width))]
                        kb.call(fn, *args, *scalars, *sums, *tail_scalars)

                    def vector(p, v: int, mr: int, sums: list) -> None:
                        fn = mk8.gemm_tile(lanes, mr, nv, a_v.dtype, ktail, epi, sparse=True,
                                           pairs16=pairs16, recentre=recentre)
                        col = kb.local("col", p * width + v * lanes)
                        q = kb.local("q", p * nv + v)
                        lo = kb.local("lo", cast(gptr[q], INDEX))
                        gv = 4 * lanes * enc.group_vectors
                        args = [(a, r0 * k), (bp, p * (groups * gv) + v * 4 * lanes)]
                        args += [(bt, full_size + p * gv + v * 4 * lanes)] if ktail else []
                        args += [(gidx, lo), cast(gptr[q + 1], INDEX) - lo]
                        args += [(cz, col)] if cz is not None else []
                        args += [(zbt, col)] if zbt is not None else []
                        args += [(mult, col)] if mult is not None else []
                        args += [(y, r0 * n + col), groups, k, n,
                                 minimum(const(n) - col, const(lanes))]
                        kb.call(fn, *args, *scalars, *sums, *tail_scalars)

                    narrow = last_used < nv and p0 + chunk == panels
                    with kb.loop(chunk - narrow, "p") as pp:
                        tile(pp + p0)
                    if narrow:  # the last panel's columns take fewer vectors
                        tile(const(panels - 1), last_used)

    for p0 in range(0, panels, per_chunk):
        rows_against(p0, min(per_chunk, panels - p0))
    return True
