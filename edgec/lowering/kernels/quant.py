"""Kernel builders of the quantization ops, in integer arithmetic: every product accumulates
(a - za) * (b - zb) in an int32 local, starting from the int32 bias, and requantizes once.

Activations of 16 bits (W8A16: uint16/int16 A or x, and y) take the same scalar kernels,
their sums in int64 where the node's weights do not bound them within int32
(quant_common.accumulator_type), and never the int8 micro-kernels.

Requantization, shared by all ops and equal to `round_saturate` in `edgec/ir/ops/quant.py`:
v = (float)acc * M, clamped to [qmin - zp, qmax - zp] (a NaN to the lower bound, like
onnxruntime's max(v, lo)), rounded half to even by nearbyintf (the default rounding mode),
then zp added in int32. M = (sa * sb) / sy is computed at compile time in float32 when the
scales are constants (a literal, or a per-channel table) and in the kernel otherwise.
Constant weights are stored with their zero point subtracted (int16: [-255, 255] fits), a
constant B of a matrix product transposed so that the dot product over k reads it in order.
On targets with vectors, MatMulInteger and QLinearMatMul with a constant int8 B [K, N] run
the int8 GEMM micro-kernel instead (`lowering/microkernels_int8.py`: `dot4` on packed panels,
zero points folded with B's column sums; quant_gemm.py).

Convolutions (ConvInteger, QLinearConv): quant_conv.py; shared helpers: quant_common.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.encodings import GemmWeights, decode_gemm
from ...ir.graph import Node, Value
from ...ir.ops.quant import (
    QUANT_RANGES,
    add_ratios,
    gap_multiplier,
    matmul_param_shape,
    qgemm_multiplier,
    quant_layout,
    requantize_multiplier,
)
from ...ir.types import TensorType
from ...kernel_ir.kernel import (
    Buffer,
    Expr,
    binary,
    call,
    cast,
    const,
    maximum,
    minimum,
    select,
)
from ..lower import NodeKernelBuilder, broadcast_index, coalesce, kernel
from ..strategies import Candidate, Kind
from .common import (
    broadcast_strides,
    independent_loops,
    lane_steps,
    named,
    offset,
    parallel_split,
    row_major_strides,
    warp_rows,
)
from .quant_common import (
    Requant,
    accumulator_type,
    constant_table,
    fixed_finish,
    fixed_point,
    narrow,
    scalar,
    zero_point,
)
from .quant_gemm import Requant8, vector_int8_gemm
from .quant_mvau import mvau, mvau_candidate
from .quant_sparse_pe import sparse_mvau, sparse_mvau_candidate

F32, I32 = DType.F32, DType.I32
# -- QuantizeLinear / DequantizeLinear ---------------------------------------------------------

@dataclass
class _Slices:
    """A tensor seen as [outer, n, inner] around its quantization axis; a blocked scale is
    [outer, blocks, inner], one element per `block` indices along the axis."""

    outer: int
    n: int
    inner: int
    blocks: int
    block: int

    @staticmethod
    def of(node: Node) -> _Slices:
        x, s = node.inputs[0].type, node.inputs[1].type
        lay = quant_layout(node.op, x, s, node.attrs["axis"], node.attrs["block_size"])
        if lay.axis is None:
            return _Slices(1, 1, x.numel, 1, 0)
        ax = lay.axis
        n = x.shape[ax]
        outer, inner = math.prod(x.shape[:ax]), math.prod(x.shape[ax + 1:])
        return _Slices(outer, n, inner, s.shape[ax] if lay.block else n, lay.block)


Setup = Callable[[Expr, "Expr | None"], Callable[[Expr], None]]


def _per_slice(kb: NodeKernelBuilder, node: Node, setup: Setup) -> None:
    """For every element index i: setup(scale, zero point)(i), with the scale (float32) and
    zero point (int32 or None) loaded, and `setup` called, once per slice along the axis (per
    element for blocked layouts)."""
    sl = _Slices.of(node)
    s_v, z_v = node.inputs[1], node.input(2)
    if kb.gpu_rows:  # a GPU thread an element, which loads its slice's scale and zero point
        per_tensor = sl.outer == 1 and sl.n == 1
        sb = None if per_tensor else kb.bind(s_v, "s")
        zb = None if per_tensor or z_v is None else kb.bind(z_v, "z")
        with independent_loops(kb, [sl.outer, sl.n, sl.inner], ["o", "a", "i"], 1) as (o, a, i):
            at = named(kb, "at", (o * sl.n + a) * sl.inner + i)
            if per_tensor:
                setup(scalar(kb, s_v, "s", F32), zero_point(kb, z_v, "zp"))(at)
                return
            k = a if not sl.block else named(kb, "srow", (o * sl.blocks + a // sl.block)
                                             * sl.inner + i)
            setup(named(kb, "sv", cast(sb[k], F32)),
                  named(kb, "zv", cast(zb[k], I32)) if zb is not None else None)(at)
        return
    if sl.outer == 1 and sl.n == 1:  # per tensor, in even slices on the thread pool
        tasks, per = parallel_split(sl.inner)
        with kb.loop(tasks, "t", kind="parallel") as t:
            store = setup(scalar(kb, s_v, "s", F32), zero_point(kb, z_v, "zp"))
            with kb.loop(per, "i") as i:
                store(t * per + i)
        return
    sb = kb.bind(s_v, "s")
    zb = kb.bind(z_v, "z") if z_v is not None else None
    with kb.loops([sl.outer, sl.n], ["o", "a"]) as (o, a):
        base = named(kb, "base", (o * sl.n + a) * sl.inner)
        if not sl.block:
            s = named(kb, "sv", cast(sb[a], F32))
            z = named(kb, "zv", cast(zb[a], I32)) if zb is not None else None
            store = setup(s, z)
            with kb.loop(sl.inner, "i") as i:
                store(base + i)
            return
        row = named(kb, "srow", (o * sl.blocks + a // sl.block) * sl.inner)
        with kb.loop(sl.inner, "i") as i:
            s = named(kb, "sv", cast(sb[row + i], F32))
            z = named(kb, "zv", cast(zb[row + i], I32)) if zb is not None else None
            setup(s, z)(base + i)


@kernel("QuantizeLinear")
def quantize_linear(kb: NodeKernelBuilder, node: Node) -> None:
    """y = sat(rint(x / s) + zp), the division in float32 (never a multiplication by 1/s,
    which rounds differently)."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")

    def setup(s: Expr, z: Expr | None):
        req = Requant.make(kb, y.dtype, z)
        return lambda i: kb.store(y, i, req(kb, cast(x[i], F32) / s))

    _per_slice(kb, node, setup)


@kernel("DequantizeLinear")
def dequantize_linear(kb: NodeKernelBuilder, node: Node) -> None:
    """y = (float)(x - zp) * s, the difference in int32."""
    x, y = kb.bind(node.inputs[0], "x"), kb.bind(node.output, "y")

    def setup(s: Expr, z: Expr | None):
        def store(i: Expr) -> None:
            d = cast(x[i], I32)
            kb.store(y, i, cast(d - z if z is not None else d, F32) * s)
        return store

    _per_slice(kb, node, setup)


@kernel("DynamicQuantizeLinear")
def dynamic_quantize_linear(kb: NodeKernelBuilder, node: Node) -> None:
    """lo = min(0, min x), hi = max(0, max x) (NaN skipped), scale = (hi - lo) / 255 (1 when
    hi == lo), zp = rint(clamp(-lo / scale, 0, 255)); then y as QuantizeLinear."""
    n = node.inputs[0].type.numel
    x = kb.bind(node.inputs[0], "x")
    y, s_out, z_out = (kb.bind(v, k) for v, k in zip(node.outputs, ("y", "y_scale", "y_zp")))
    lo, hi = kb.local("lo", const(0.0, F32)), kb.local("hi", const(0.0, F32))
    with kb.loop(n, "i") as i:
        v = named(kb, "xv", x[i])
        kb.assign(lo, select(v < lo, v, lo))
        kb.assign(hi, select(v > hi, v, hi))
    scale = kb.local("scale", select(hi.eq(lo), const(1.0, F32), (hi - lo) / const(255.0, F32)))
    zf = kb.local("zf", const(0.0, F32) - lo / scale)
    kb.assign(zf, select(zf > const(0.0, F32), zf, const(0.0, F32)))
    kb.assign(zf, select(zf < const(255.0, F32), zf, const(255.0, F32)))
    zp = kb.local("zp", cast(call("round", zf), I32))
    kb.store(s_out, 0, scale)
    kb.store(z_out, 0, zp)
    req = Requant.make(kb, DType.U8, zp)
    with kb.loop(n, "i") as i:
        kb.store(y, i, req(kb, x[i] / scale))


# -- matrix products ---------------------------------------------------------------------------

@dataclass
class _Side:
    """A per-tensor / per-row / per-column parameter (scale or zero point) of a matrix
    product, read at (batch, i) of A or (batch, j) of B."""

    src: Buffer | Expr | None
    strides: tuple[int, ...]
    dtype: DType = I32

    def at(self, bi: Sequence[Expr], r: Expr, c: Expr) -> Expr | None:
        if self.src is None or isinstance(self.src, Expr):
            return self.src
        return cast(self.src[offset([*bi, r, c], self.strides)], self.dtype)

    @property
    def varies(self) -> bool:
        return isinstance(self.src, Buffer)


def _side(kb: NodeKernelBuilder, node: Node, v: Value | None, name: str, operand: tuple,
          batch: Sequence[int], rows: bool, dtype: DType) -> _Side:
    if v is None:
        return _Side(None, ())
    shape = matmul_param_shape(node.op, name, v.type, operand, rows)
    if not shape:
        return _Side(scalar(kb, v, name, dtype), ())
    full = (*batch, *operand[-2:])
    return _Side(kb.bind(v, name), broadcast_strides(shape, full), dtype)


@dataclass
class _Product:
    """The geometry of y[batch, i, j] = sum_k A'[batch, i, k] B'[batch, k, j]."""

    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    batch: list[int]
    m: int
    k: int
    n: int

    @staticmethod
    def of(a: Value, b: Value, y: Value, trans_a: bool = False,
           trans_b: bool = False) -> _Product:
        a_shape = (1, *a.shape) if len(a.shape) == 1 else tuple(a.shape)
        b_shape = (*b.shape, 1) if len(b.shape) == 1 else tuple(b.shape)
        m, k = a_shape[-2:][::-1] if trans_a else a_shape[-2:]
        n = b_shape[-2] if trans_b else b_shape[-1]
        batch = list(y.shape[:len(y.shape) - (len(a.shape) > 1) - (len(b.shape) > 1)])
        return _Product(a_shape, b_shape, batch, m, k, n)


def _int_matmul(kb: NodeKernelBuilder, node: Node, a_v: Value, az_v: Value | None,
                b_v: Value, bz_v: Value | None, *, trans_a: bool = False,
                trans_b: bool = False, bias: Value | None = None,
                finish: Callable[[list, Expr, Expr, Expr], Expr] | None = None) -> None:
    """y[b, i, j] = finish(bias[i, j] + sum_k (A[b, i, k] - za) * (B[b, k, j] - zb)) in int32
    (int64 where a 16-bit A could pass it: accumulator_type).

    A constant B (with a constant zero point) is stored as (B - zb) transposed to [b, j, k];
    otherwise B is read in place with its zero point subtracted in the loop."""
    y_v = node.output
    g = _Product.of(a_v, b_v, y_v, trans_a, trans_b)
    a = kb.bind(a_v, "a")
    sa = broadcast_strides(g.a_shape, (*g.batch, *g.a_shape[-2:]))
    az = _side(kb, node, az_v, "a_zp", g.a_shape, g.batch, True, I32)
    packed = b_v.is_const and (bz_v is None or bz_v.is_const)
    if packed:
        w = b_v.const.reshape(g.b_shape).astype(np.int32)
        if bz_v is not None:
            # per column of B: per row of a transposed B
            shape = matmul_param_shape(node.op, "b_zp", bz_v.type, g.b_shape, trans_b)
            w = w - bz_v.const.astype(np.int32).reshape(shape)
        if not trans_b:
            w = np.swapaxes(w, -1, -2)
        bt = constant_table(kb, narrow(w), "bt", b_v)  # [batch..., N, K]
        bt_shape = (*g.b_shape[:-2], g.n, g.k)
        sb = broadcast_strides(bt_shape, (*g.batch, g.n, g.k))
        bz = _Side(None, ())
        l1 = np.abs(w).sum(-1).max(initial=0)
    else:
        l1 = g.k * 255
        b = kb.bind(b_v, "b")
        sb = broadcast_strides(g.b_shape, (*g.batch, *g.b_shape[-2:]))
        bz = _side(kb, node, bz_v, "b_zp", g.b_shape, g.batch, trans_b, I32)
    acc_t = accumulator_type(a_v, az_v, l1, bias)
    kb.strategy = ("integer matmul, a GPU warp an output" if kb.gpu_rows else
                   "integer matmul rows") + (", 64-bit sums" if acc_t is not I32 else "")
    c = kb.bind(bias, "c") if bias is not None else None
    sc = broadcast_strides(bias.shape, (g.m, g.n)) if bias is not None else ()
    y = kb.bind(y_v, "y")
    sy = row_major_strides((*g.batch, g.m, g.n))
    names = [f"b{d}" for d in range(len(g.batch))]

    def row_zero(bi, i) -> Expr | None:
        zr = az.at(bi, i, const(0))
        return named(kb, "za", cast(zr, acc_t)) if az.varies else \
            cast(zr, acc_t) if zr is not None else None

    def output(bi, i, j, zr, ks=None) -> None:
        """acc = the bias + the products over k (`ks`: the k this thread takes and the
        warp's lane, whose lanes' sums are folded before lane 0 stores)."""
        acc = kb.local("acc", cast(c[offset([i, j], sc)], acc_t) if c is not None and ks is None
                       else const(0, acc_t))
        zc = bz.at(bi, j, const(0)) if trans_b else bz.at(bi, const(0), j)
        zc = named(kb, "zb", cast(zc, acc_t)) if bz.varies else \
            cast(zc, acc_t) if zc is not None else None
        with (kb.loop(g.k, "k") if ks is None else ks[0]) as k:
            ik = (k, i) if trans_a else (i, k)
            av = cast(a[offset([*bi, *ik], sa)], acc_t)
            if zr is not None:
                av = av - zr
            if packed:
                bv = cast(bt[offset([*bi, j, k], sb)], acc_t)
            else:
                bv = cast(b[offset([*bi, *((j, k) if trans_b else (k, j))], sb)], acc_t)
                if zc is not None:
                    bv = bv - zc
            kb.assign(acc, acc + av * bv)
        if ks is not None:
            kb.warp_reduce(acc, "add", ks[2])
            if c is not None:
                kb.assign(acc, acc + cast(c[offset([i, j], sc)], acc_t))
        out = acc if finish is None else finish(bi, i, j, acc)
        if ks is None:
            kb.store(y, offset([*bi, i, j], sy), out)
        else:
            with kb.if_(ks[1].eq(0)):
                kb.store(y, offset([*bi, i, j], sy), out)

    if kb.gpu_rows:  # a GPU warp an output, its lanes striding along k (B's rows as [N, K])
        dims = (*g.batch, g.m, g.n)
        with warp_rows(kb, math.prod(dims)) as (r, lane, width):
            *bi, i, j = [named(kb, nm, r // st % ext) for nm, st, ext in
                         zip([*names, "i", "j"], row_major_strides(dims), dims, strict=True)]
            output(bi, i, j, row_zero(bi, i), (lane_steps(kb, lane, width, g.k, "k"), lane,
                                               width))
        return
    with kb.loops([*g.batch, g.m], [*names, "i"]) as (*bi, i):
        zr = row_zero(bi, i)
        with kb.loop(g.n, "j") as j:
            output(bi, i, j, zr)


def _matrix_b(node: Node, index: int) -> Value:
    """B as the op defines it: the node's input, or the matrix its encoding holds (`benc`,
    set by the pack-weights pass), as a constant of its own."""
    v = node.inputs[index]
    benc = node.attrs.get("benc")
    if not benc:
        return v
    arr = decode_gemm(v.const, GemmWeights.parse(benc), node.attrs["bshape"])
    arr.setflags(write=False)
    return Value(f"{v.name}_decoded", TensorType(arr.shape, DType.I8), arr)


def _hls_mvau(kb: NodeKernelBuilder, node: Node, a_v: Value, za_v: Value | None, b_v: Value,
              zb_v: Value | None, bias_v: Value | None, zy_v: Value | None,
              trans_b: bool) -> bool:
    """On the HLS target: the matrix-vector unit (quant_mvau.py) where it applies and is
    chosen; False (nothing emitted) for the scalar rows."""
    if kb.target.arch != "hls":
        return False
    chosen = kb.choose([sparse_mvau_candidate(node, a_v, b_v, bias_v),
                        mvau_candidate(node, a_v, b_v, bias_v),
                        Candidate.of(Kind.INT_MATMUL_ROWS)])
    if chosen.kind is Kind.HLS_SPARSE_MVAU:
        sparse_mvau(kb, node, a_v, za_v, b_v, zb_v, bias_v, zy_v, trans_b, int(chosen["pe"]))
        return True
    if chosen.kind is not Kind.HLS_MVAU:
        return False
    mvau(kb, node, a_v, za_v, b_v, zb_v, bias_v, zy_v, trans_b, int(chosen["pe"]),
         int(chosen["simd"]))
    return True


@kernel("MatMulInteger")
def matmul_integer(kb: NodeKernelBuilder, node: Node) -> None:
    b_v = _matrix_b(node, 1)
    if not vector_int8_gemm(kb, node, node.inputs[0], node.input(2), b_v, node.input(3)):
        _int_matmul(kb, node, node.inputs[0], node.input(2), b_v, node.input(3))


def _multiplier(kb: NodeKernelBuilder, table: np.ndarray | None, out_shape: tuple[int, ...],
                fallback: Callable[[list, Expr, Expr], Expr], source: Value):
    """(bi, i, j) -> M: a literal or a table computed at compile time when `table` is given,
    else `fallback` (float32 arithmetic in the kernel)."""
    if table is None:
        return fallback
    if table.size == 1:
        lit = const(float(table.reshape(())), F32)
        return lambda bi, i, j: lit
    buf = constant_table(kb, table.astype(np.float32), "mult", source)
    strides = broadcast_strides(table.shape, out_shape)
    return lambda bi, i, j: buf[offset([*bi, i, j], strides)]


@kernel("QLinearMatMul")
def qlinear_matmul(kb: NodeKernelBuilder, node: Node) -> None:
    """y = sat(rint(acc * (sa * sb / sy)) + zy); scales per tensor, per row of A, per column
    of B."""
    a_v, sa_v, za_v, _, sb_v, zb_v, sy_v, zy_v = (node.input(i) for i in range(8))
    b_v = _matrix_b(node, 3)
    fixed = fixed_point(node)
    if _hls_mvau(kb, node, a_v, za_v, b_v, zb_v, None, zy_v, False):
        return
    g = _Product.of(a_v, b_v, node.output)
    full = (*g.batch, g.m, g.n)
    a_shape = matmul_param_shape(node.op, "a_scale", sa_v.type, g.a_shape, True)
    b_shape = matmul_param_shape(node.op, "b_scale", sb_v.type, g.b_shape, False)
    table = None
    if sa_v.is_const and sb_v.is_const and sy_v.is_const:
        table = requantize_multiplier(sa_v.const.reshape(a_shape), sb_v.const.reshape(b_shape),
                                      sy_v.const.reshape(()))
        rq = Requant8(table, lambda: zero_point(kb, zy_v, "y_zp"), fixed)
        if not a_shape and kb.target.arch != "hls" and \
                vector_int8_gemm(kb, node, a_v, za_v, b_v, zb_v, rq):
            return
    if fixed is not None:
        _int_matmul(kb, node, a_v, za_v, b_v, zb_v, finish=fixed_finish(
            kb, node, fixed, zero_point(kb, zy_v, "y_zp"), b_v))
        return
    if table is None:
        sa = _side(kb, node, sa_v, "a_scale", g.a_shape, g.batch, True, F32)
        sb = _side(kb, node, sb_v, "b_scale", g.b_shape, g.batch, False, F32)
        sy = scalar(kb, sy_v, "y_scale", F32)
    mult = _multiplier(
        kb, table, full,
        lambda bi, i, j: (cast(sa.at(bi, i, const(0)), F32) * cast(sb.at(bi, const(0), j), F32))
        / sy, sa_v)
    req = Requant.make(kb, node.output.dtype, zero_point(kb, zy_v, "y_zp"))

    def finish(bi, i, j, acc):
        return req(kb, cast(acc, F32) * mult(bi, i, j))

    _int_matmul(kb, node, a_v, za_v, b_v, zb_v, finish=finish)


@kernel("QGemm")
def qgemm(kb: NodeKernelBuilder, node: Node) -> None:
    """y = sat(rint((A' @ B' + C) * (alpha * sa * sb / sy)) + zy); b's scale per tensor or
    per output column."""
    a_v, sa_v, za_v, _, sb_v, zb_v, c_v, sy_v, zy_v = (node.input(i) for i in range(9))
    b_v = _matrix_b(node, 3)
    fixed = fixed_point(node)
    ta, tb, alpha = bool(node.attrs["transA"]), bool(node.attrs["transB"]), node.attrs["alpha"]
    if _hls_mvau(kb, node, a_v, za_v, b_v, zb_v, c_v, zy_v, tb):
        return
    g = _Product.of(a_v, b_v, node.output, ta, tb)
    table = None
    if sa_v.is_const and sb_v.is_const and sy_v.is_const:
        table = qgemm_multiplier(alpha, sa_v.const, sb_v.const, sy_v.const)
        table = table.reshape(-1 if table.size > 1 else ())
    if (table is not None and not ta and b_v.is_const and a_v.type.rank == 2
            and kb.target.arch != "hls"
            and (c_v is None or (c_v.is_const and c_v.type.numel in (1, g.n)))):
        bias = None if c_v is None else np.broadcast_to(
            c_v.const.astype(np.int64).reshape(-1), (g.n,))
        rq = Requant8(table, lambda: zero_point(kb, zy_v, "y_zp"), fixed)
        if vector_int8_gemm(kb, node, a_v, za_v, b_v, zb_v, rq,
                             b_matrix=b_v.const.T if tb else None, bias=bias):
            return
    if fixed is not None:
        _int_matmul(kb, node, a_v, za_v, b_v, zb_v, trans_a=ta, trans_b=tb, bias=c_v,
                    finish=fixed_finish(kb, node, fixed, zero_point(kb, zy_v, "y_zp"), b_v))
        return
    per_col = sb_v.type.numel > 1
    sb = kb.bind(sb_v, "b_scale") if per_col and table is None else None
    sa = scalar(kb, sa_v, "a_scale", F32) if table is None else None
    if sa is not None and alpha != 1.0:
        sa = named(kb, "sa", const(alpha, F32) * sa)
    sbs = scalar(kb, sb_v, "b_scale", F32) if table is None and not per_col else None
    sy = scalar(kb, sy_v, "y_scale", F32) if table is None else None
    mult = _multiplier(
        kb, table, (g.m, g.n),
        lambda bi, i, j: (sa * (cast(sb[j], F32) if per_col else sbs)) / sy, sb_v)
    req = Requant.make(kb, node.output.dtype, zero_point(kb, zy_v, "y_zp"))

    def finish(bi, i, j, acc):
        return req(kb, cast(acc, F32) * mult(bi, i, j))

    _int_matmul(kb, node, a_v, za_v, b_v, zb_v, trans_a=ta, trans_b=tb, bias=c_v,
                finish=finish)


# -- QLinearGlobalAveragePool -------------------------------------------------------------------

@kernel("QLinearGlobalAveragePool")
def qlinear_global_average_pool(kb: NodeKernelBuilder, node: Node) -> None:
    """y[n, c] = sat(rint((sum_p x[n, c, p] - P zx) * M) + zy), M = (sx / sy) / P in float32
    (ir/ops/quant.py); with `rq_shift` sat(mulshift(acc, q, s) + zy): integers only."""
    x_v, sx_v, zx_v, sy_v, zy_v = (node.input(i) for i in range(5))
    rows, positions = x_v.shape[0] * x_v.shape[1], math.prod(x_v.shape[2:])
    x = kb.bind(x_v, "x")
    zx = zero_point(kb, zx_v, "x_zp")
    fixed = fixed_point(node)
    if fixed is not None:
        q, shift = fixed  # (under 33: the sum shifted left first, as gap_min_shift allows)
        pre = max(0, 33 - shift)
        fixed_fin = fixed_finish(kb, node, (q, shift + pre), zero_point(kb, zy_v, "y_zp"),
                                 sx_v)
        finish = lambda acc: fixed_fin((), None, const(0),  # noqa: E731
                                       acc * const(2**pre, I32) if pre else acc)
        kb.strategy = "integer mean, fixed-point requantization"
    else:
        if sx_v.is_const and sy_v.is_const:
            mult = const(float(gap_multiplier(sx_v.const, sy_v.const, positions)), F32)
        else:
            sx, sy = scalar(kb, sx_v, "x_scale", F32), scalar(kb, sy_v, "y_scale", F32)
            mult = named(kb, "mult", (sx / sy) / const(float(positions), F32))
        req = Requant.make(kb, node.output.dtype, zero_point(kb, zy_v, "y_zp"))
        finish = lambda acc: req(kb, cast(acc, F32) * mult)  # noqa: E731
        kb.strategy = "integer mean"
    y = kb.bind(node.output, "y")
    if kb.gpu_rows:  # a GPU warp a channel, its lanes striding over the positions
        kb.strategy += ", a GPU warp a channel"
        with warp_rows(kb, rows) as (r, lane, width):
            acc = kb.local("acc", const(0, I32))
            with lane_steps(kb, lane, width, positions, "p") as p:
                kb.assign(acc, acc + cast(x[r * positions + p], I32))
            kb.warp_reduce(acc, "add", width)
            total = acc - zx * const(positions, I32) if zx is not None else acc
            with kb.if_(lane.eq(0)):
                kb.store(y, r, finish(named(kb, "sum", total)))
        return
    with kb.loop(rows, "r") as r:
        acc = kb.local("acc", const(0, I32))
        with kb.loop(positions, "p") as p:
            kb.assign(acc, acc + cast(x[r * positions + p], I32))
        total = acc - zx * const(positions, I32) if zx is not None else acc
        kb.store(y, r, finish(named(kb, "sum", total)))


# -- QLinearAdd --------------------------------------------------------------------------------

@kernel("QLinearAdd")
def qlinear_add(kb: NodeKernelBuilder, node: Node) -> None:
    """C = sat(rint(ra (A - za) + rb (B - zb)) + zc), ra = sa / sc, rb = sb / sc, with numpy
    broadcasting; without broadcasting, on the thread pool in even slices."""
    a_v, sa_v, za_v, b_v, sb_v, zb_v, sc_v, zc_v = (node.input(i) for i in range(8))
    a, b = kb.bind(a_v, "a"), kb.bind(b_v, "b")
    y = kb.bind(node.output, "y")
    dims, flags = coalesce(y.shape, [a.shape, b.shape, y.shape])

    def elements():
        """The combine and zero points (loaded once, where the loops begin), then a function
        that stores the element at loop variables vs."""
        combine = _add_combine(kb, node)
        za, zb = zero_point(kb, za_v, "a_zp"), zero_point(kb, zb_v, "b_zp")

        def element(vs: list[Expr]) -> None:
            av, bv = cast(a[broadcast_index(vs, dims, flags[0])], I32), \
                cast(b[broadcast_index(vs, dims, flags[1])], I32)
            av = av - za if za is not None else av
            bv = bv - zb if zb is not None else bv
            kb.store(y, broadcast_index(vs, dims, flags[2]), combine(av, bv))
        return element

    if kb.gpu_rows:  # a GPU thread an element
        with independent_loops(kb, dims, [f"i{k}" for k in range(len(dims))], 1) as vs:
            elements()(vs)
        return
    tasks, per = parallel_split(dims[0]) if len(dims) == 1 else (1, 0)
    # (the scalars are loaded inside the parallel loop: its body is closed)
    with kb.loop(tasks, "t", kind="parallel") as t:
        element = elements()
        with (kb.loop(per, "i") if tasks > 1 else
              kb.loops(dims, [f"i{k}" for k in range(len(dims))] if len(dims) > 1 else ["i"])
              ) as vs:
            element([t * per + vs] if tasks > 1 else vs)


def _add_combine(kb: NodeKernelBuilder, node: Node) -> Callable[[Expr, Expr], Expr]:
    """QLinearAdd's (A - za, B - zb) -> C, fixed-point or float."""
    sa_v, sb_v, sc_v, zc_v = (node.input(i) for i in (1, 4, 6, 7))
    zc = zero_point(kb, zc_v, "c_zp")
    if node.attrs.get("rq_shift"):  # fixed point (ir/ops/quant.py): 32-bit integers only,
        # which the C compiler vectorizes
        (qa, qb), s = node.attrs["rq_mult"], node.attrs["rq_shift"]
        kb.strategy = "integer add, fixed-point"
        qmin, qmax = QUANT_RANGES[node.output.dtype]

        def combine(av: Expr, bv: Expr) -> Expr:
            v = binary("shr", const(qa, I32) * av + const(qb, I32) * bv
                       + const(1 << (s - 1), I32), const(s, I32))
            v = named(kb, "v", v + zc if zc is not None else v)
            return cast(maximum(minimum(v, const(qmax, I32)), const(qmin, I32)),
                        node.output.dtype)
        return combine
    if sa_v.is_const and sb_v.is_const and sc_v.is_const:
        ra_f, rb_f = add_ratios(sa_v.const, sb_v.const, sc_v.const)
        ra, rb = const(float(ra_f), F32), const(float(rb_f), F32)
    else:
        sc = scalar(kb, sc_v, "c_scale", F32)
        ra = named(kb, "ra", scalar(kb, sa_v, "a_scale", F32) / sc)
        rb = named(kb, "rb", scalar(kb, sb_v, "b_scale", F32) / sc)
    req = Requant.make(kb, node.output.dtype, zc)
    return lambda av, bv: req(kb, ra * cast(av, F32) + rb * cast(bv, F32))
