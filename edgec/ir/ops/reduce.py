"""Reductions over axes (ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd) and ArgMax.

Opset-18 form: the axes are an optional constant input; no axes reduce every axis, unless
noop_with_empty_axes=1, which makes the op the identity. Results keep the input dtype
(integer ReduceMean truncates like C division, as onnxruntime does).
"""

from __future__ import annotations

import numpy as np

from ...errors import ShapeError
from ..dtypes import DType
from ..registry import Attr, const_input, op
from ..types import TensorType


def reduce_axes(opname: str, rank: int, axes: np.ndarray | None,
                noop_with_empty_axes: int) -> tuple[int, ...]:
    """The axes reduced, normalized and sorted (empty: nothing reduced)."""
    if axes is None or axes.size == 0:
        return () if noop_with_empty_axes else tuple(range(rank))
    out = sorted({int(a) + rank if a < 0 else int(a) for a in axes.reshape(-1)})
    if out[0] < 0 or out[-1] >= rank or len(out) != axes.size:
        raise ShapeError(f"{opname}: axes {axes.tolist()} are out of range or repeat for rank "
                         f"{rank}")
    return tuple(out)


def _reduced_shape(shape, axes, keepdims: int) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


_ATTRS = {"keepdims": Attr.int(1), "noop_with_empty_axes": Attr.int(0)}


def _declare(name: str, fn, kinds: str) -> None:
    def infer(inputs, *, keepdims, noop_with_empty_axes):
        x = inputs[0].type
        if x.dtype.np.kind not in kinds:
            raise ShapeError(f"{name}: input {x} has an unsupported dtype")
        axes = const_input(inputs, 1, f"{name}'s 'axes' input")
        if axes is not None and axes.dtype != np.int64:
            raise ShapeError(f"{name}: axes must be int64, got {axes.dtype}")
        ax = reduce_axes(name, x.rank, axes, noop_with_empty_axes)
        return x.with_shape(_reduced_shape(x.shape, ax, keepdims))

    def ref(x, axes=None, *, keepdims, noop_with_empty_axes):
        ax = reduce_axes(name, x.ndim, axes, noop_with_empty_axes)
        if not ax:
            return x
        return np.asarray(fn(x, ax, bool(keepdims))).astype(x.dtype, copy=False)

    op(name, inputs=(1, 2), attrs=_ATTRS, infer=infer)(ref)


def _mean(x: np.ndarray, axes, keepdims: bool) -> np.ndarray:
    if x.dtype.kind == "f":
        return np.mean(x, axis=axes, keepdims=keepdims, dtype=np.promote_types(x.dtype, "f4"))
    s = np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)
    n = int(np.prod([x.shape[a] for a in axes]))
    return np.trunc(s / n) if n else s  # C integer division truncates toward zero


_NUM = "fiu"
_declare("ReduceSum", lambda x, a, k: np.sum(x, axis=a, keepdims=k, dtype=x.dtype), _NUM)
_declare("ReduceProd", lambda x, a, k: np.prod(x, axis=a, keepdims=k, dtype=x.dtype), _NUM)
_declare("ReduceMax", lambda x, a, k: np.max(x, axis=a, keepdims=k), _NUM + "b")
_declare("ReduceMin", lambda x, a, k: np.min(x, axis=a, keepdims=k), _NUM + "b")
_declare("ReduceMean", _mean, _NUM)


def _infer_argmax(inputs, *, axis, keepdims, select_last_index):
    x = inputs[0].type
    a = axis + x.rank if axis < 0 else axis
    if not 0 <= a < x.rank or x.shape[a] == 0:
        raise ShapeError(f"ArgMax: axis {axis} is out of range or empty for {x}")
    return TensorType(_reduced_shape(x.shape, (a,), keepdims), DType.I64)


@op("ArgMax", infer=_infer_argmax,
    attrs={"axis": Attr.int(0), "keepdims": Attr.int(1), "select_last_index": Attr.int(0)})
def argmax(x, *, axis, keepdims, select_last_index):
    """Index of the first maximum (the last one when select_last_index)."""
    a = axis + x.ndim if axis < 0 else axis
    if select_last_index:
        idx = x.shape[a] - 1 - np.argmax(np.flip(x, axis=a), axis=a, keepdims=bool(keepdims))
    else:
        idx = np.argmax(x, axis=a, keepdims=bool(keepdims))
    return idx.astype(np.int64)
