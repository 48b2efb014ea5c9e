"""Ops of sparse convolution, made by the `sparsify` pass (the layouts: ir/sparse.py).

    ConvStage(X){kernel_shape, pads, strides}
        X [N, C, H, W] padded and split into its stride phases: [N, C * sa * sb, Hq, Wq]
    SparseConv(XS, V, I, P, B?, Z?){wenc, wshape, activation, activation_params, order}
        = act(Conv(XS, W') + B[m] + Z), a stride-1 unpadded convolution over the staged XS
          whose weights W' (`wshape` [M, G, KH', KW']) are stored as block-CSR: values V,
          offsets I into XS's planes, row pointers P (`wenc` "bcsr RxC"), or N:M: values V,
          in-group inputs I, group offsets P (`wenc` "nm N:M"). `order` (empty: 0, 1, ...)
          says which block of R output channels each stored block row computes (the
          `reorder` pass balances the threads with it); B, Z and the output keep the
          channels' order
    SparseMatMul(A, V, I, P, Bias?, Z?){wenc, wshape, activation, activation_params}
        = act(A @ W + Bias + Z) for A [M, K] and W (`wshape` [K, N]) stored as sliced
          ELLPACK (`wenc` "sell C"): values V, input columns I, slice pointers P; `order`
          (empty: 0, 1, ...) says which slice of C outputs each stored slice computes
"""

from __future__ import annotations

import numpy as np

from ...errors import ShapeError
from ..dtypes import DType
from ..registry import Attr, op
from ..sparse import (
    NMWeights,
    SlicedWeights,
    SparseWeights,
    Staging,
    column_dtype,
    conv_encoding,
    decode_conv,
    decode_sliced,
)
from ..types import TensorType
from .fused import _EPILOGUE_ATTRS, _check_epilogue, _epilogue
from .nn import conv_nd


def _out_hw(x: TensorType, kernel_shape, pads, strides) -> tuple[int, int]:
    if x.rank != 4 or not x.dtype.is_float:
        raise ShapeError(f"ConvStage: input {x} must be a float [N, C, H, W]")
    if len(kernel_shape) != 2 or len(pads) != 4 or len(strides) != 2 or \
            min(*kernel_shape, *strides) < 1 or min(pads) < 0:
        raise ShapeError(f"ConvStage: kernel_shape {list(kernel_shape)}, strides "
                         f"{list(strides)} (2 positive each) and pads {list(pads)} (4, not "
                         f"negative) do not describe a 2-D convolution")
    out = [(x.shape[2 + i] + pads[i] + pads[i + 2] - kernel_shape[i]) // strides[i] + 1
           for i in range(2)]
    if min(out) < 1:
        raise ShapeError(f"ConvStage: a {list(kernel_shape)} window does not fit input {x} "
                         f"with pads {list(pads)}")
    return out[0], out[1]


def staging_of(x: TensorType, kernel_shape, pads, strides) -> Staging:
    return Staging.of(kernel_shape, pads, strides, _out_hw(x, kernel_shape, pads, strides))


_STAGE_ATTRS = {"kernel_shape": Attr.ints(), "pads": Attr.ints(), "strides": Attr.ints()}


def _infer_stage(inputs, *, kernel_shape, pads, strides):
    x = inputs[0].type
    st = staging_of(x, kernel_shape, pads, strides)
    return TensorType((x.shape[0], x.shape[1] * st.phases, st.hq, st.wq), x.dtype)


@op("ConvStage", attrs=_STAGE_ATTRS, infer=_infer_stage)
def conv_stage(x, *, kernel_shape, pads, strides):
    return staging_of(TensorType(x.shape, DType.F32), kernel_shape, pads, strides).stage(x, pads)


_SPARSE_ATTRS = {"wenc": Attr.str(), "wshape": Attr.ints(), **_EPILOGUE_ATTRS}


def _check_stored(x: TensorType, v: TensorType, i: TensorType, p: TensorType, enc, wshape
                  ) -> int:
    """Check the three constant inputs of a SparseConv against its encoding; the number of
    stored rows (block rows; `order` permutes them)."""
    m, g, kh, kw = wshape
    if isinstance(enc, NMWeights):
        if g % (enc.m * enc.step):
            raise ShapeError(f"SparseConv: '{enc}' groups take {enc.m} channels {enc.step} "
                             f"planes apart: {g} planes are not whole groups")
        most = g // enc.m * kh * kw
        if (v.dtype != x.dtype or i.dtype is not DType.U8 or p.dtype is not DType.I32 or
                p.rank != 1 or p.numel > most or v.shape != (m * p.numel * enc.n,) or
                i.shape != v.shape):
            raise ShapeError(f"SparseConv: '{enc}' weights of {list(wshape)} need group "
                             f"offsets (int32, {most} at most) and N values ({x.dtype}) and "
                             f"N input indices (uint8) per group and channel; got {v}, {i}, "
                             f"{p}")
        return m
    if g % (enc.cols * enc.step):
        raise ShapeError(f"SparseConv: '{enc}' blocks take {enc.cols} channels {enc.step} "
                         f"planes apart: {g} planes are not whole blocks")
    brows = -(-m // enc.rows)  # the last one padded where M % R != 0
    nnzb = i.numel
    if (v.dtype != x.dtype or i.dtype is not DType.I32 or p.dtype is not DType.I32 or
            v.rank != 1 or i.rank != 1 or p.rank != 1 or
            p.numel != brows + 1 or v.numel != nnzb * enc.block):
        raise ShapeError(f"SparseConv: '{enc}' weights of {list(wshape)} need 1-D values "
                         f"({x.dtype}, R x C per block), offsets (int32, one per block) and "
                         f"{brows + 1} row pointers (int32); got {v}, {i}, {p}")
    return brows


def _infer_sparse_conv(inputs, *, wenc, wshape, activation, activation_params, order):
    x, v, i, p = (t.type for t in inputs[:4])
    b = inputs[4] if len(inputs) > 4 else None
    z = inputs[5] if len(inputs) > 5 else None
    enc = conv_encoding(wenc)
    if x.rank != 4 or not x.dtype.is_float:
        raise ShapeError(f"SparseConv: input {x} must be a float [N, G, Hq, Wq]")
    if len(wshape) != 4 or min(wshape) < 1 or wshape[1] != x.shape[1] or \
            wshape[2] > x.shape[2] or wshape[3] > x.shape[3]:
        raise ShapeError(f"SparseConv: wshape {list(wshape)} must be [M, G, KH', KW'] with "
                         f"G = {x.shape[1]} planes and a window inside {list(x.shape[2:])}")
    m = wshape[0]
    brows = _check_stored(x, v, i, p, enc, wshape)
    if order and sorted(order) != list(range(brows)):
        raise ShapeError(f"SparseConv: order {list(order)} is not a permutation of the "
                         f"{brows} block rows")
    if b is not None and b.shape != (m,):
        raise ShapeError(f"SparseConv: bias {b.type} must be 1-D of length M={m}")
    out = TensorType((x.shape[0], m, x.shape[2] - wshape[2] + 1, x.shape[3] - wshape[3] + 1),
                     x.dtype)
    _check_epilogue("SparseConv", out, z, activation, activation_params)
    return out


@op("SparseConv", inputs=(4, 6), attrs={**_SPARSE_ATTRS, "order": Attr.ints([])},
    infer=_infer_sparse_conv)
def sparse_conv(xs, v, i, p, b=None, z=None, *, wenc, wshape, activation, activation_params,
                order=()):
    hq, wq = xs.shape[2:]
    enc = conv_encoding(wenc)
    rows = enc.rows if isinstance(enc, SparseWeights) else 1
    w = in_channel_order(decode_conv(v, i, p, enc, wshape, hq, wq), rows,
                         order)[:wshape[0]].astype(xs.dtype)
    y = conv_nd(xs, w, b, dilations=[1, 1], group=1, pads=[0] * 4, strides=[1, 1])
    return _epilogue(y, z, activation, activation_params)


def in_channel_order(w: np.ndarray, rows: int, order) -> np.ndarray:
    """Weights whose stored block row q computes channel block order[q], in channel order."""
    if not len(order):
        return w
    out = np.empty_like(w)
    out.reshape(-1, rows, *w.shape[1:])[np.asarray(order)] = w.reshape(-1, rows, *w.shape[1:])
    return out



def _infer_sparse_matmul(inputs, *, wenc, wshape, activation, activation_params, order):
    a, v, i, p = (t.type for t in inputs[:4])
    bias = inputs[4] if len(inputs) > 4 else None
    z = inputs[5] if len(inputs) > 5 else None
    enc = SlicedWeights.parse(wenc)
    if a.rank != 2 or not a.dtype.is_float or len(wshape) != 2 or wshape[0] != a.shape[1]:
        raise ShapeError(f"SparseMatMul: input {a} must be a float [M, K] matching wshape "
                         f"{list(wshape)} = [K, N]")
    n = wshape[1]
    groups = -(-n // enc.c)
    cols = DType.from_numpy(column_dtype(wshape[0]))
    if (v.dtype != a.dtype or i.dtype is not cols or p.dtype is not DType.I32 or
            v.rank != 1 or i.shape != v.shape or p.shape != (groups + 1,)):
        raise ShapeError(f"SparseMatMul: '{enc}' weights of {list(wshape)} need 1-D values "
                         f"({a.dtype}), as many {cols} columns and {groups + 1} slice pointers "
                         f"(int32); got {v}, {i}, {p}")
    if order and sorted(order) != list(range(groups)):
        raise ShapeError(f"SparseMatMul: order {list(order)} is not a permutation of the "
                         f"{groups} slices")
    if bias is not None and bias.shape != (n,):
        raise ShapeError(f"SparseMatMul: bias {bias.type} must be 1-D of length N={n}")
    out = TensorType((a.shape[0], n), a.dtype)
    _check_epilogue("SparseMatMul", out, z, activation, activation_params)
    return out


@op("SparseMatMul", inputs=(4, 6), attrs={**_SPARSE_ATTRS, "order": Attr.ints([])},
    infer=_infer_sparse_matmul)
def sparse_matmul(a, v, i, p, bias=None, z=None, *, wenc, wshape, activation,
                  activation_params, order=()):
    w = decode_sliced(v, i, p, SlicedWeights.parse(wenc), wshape, order).astype(a.dtype)
    y = a @ w
    if bias is not None:
        y = y + bias
    return _epilogue(y, z, activation, activation_params)
