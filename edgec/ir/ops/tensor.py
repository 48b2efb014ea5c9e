"""Tensor and shape ops: reshaping, transposing, slicing, gathering, concatenation, casts.

View ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) keep the input's bytes in
the same order and carry the "view" trait, so the memory planner may alias their buffers.
Shape-like inputs (Reshape's shape, Slice's starts, ...) must be compile-time constants.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import ShapeError
from ..dtypes import DType
from ..registry import Attr, const_input, op
from ..types import TensorType

VARIADIC = (1, 2**31 - 1)


def _fail(opname: str, msg: str) -> None:
    raise ShapeError(f"{opname}: {msg}")


def norm_axis(opname: str, axis: int, rank: int, *, inclusive: bool = False) -> int:
    """Map an axis in [-rank, rank) (or [-rank, rank] when `inclusive`) into [0, rank]."""
    hi = rank + 1 if inclusive else rank
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < hi:
        _fail(opname, f"axis {axis} is out of range for rank {rank}")
    return a


def _ints(opname: str, inputs, i: int, what: str) -> list[int] | None:
    arr = const_input(inputs, i, f"{opname}'s '{what}' input")
    if arr is None:
        return None
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        _fail(opname, f"'{what}' must be a 0-D or 1-D integer tensor, "
                      f"got {arr.dtype}{list(arr.shape)}")
    return [int(v) for v in arr.reshape(-1)]


# -- views ----------------------------------------------------------------------------------

def reshape_shape(shape_in: tuple[int, ...], target: list[int], allowzero: int) -> tuple[int, ...]:
    """ONNX Reshape: 0 copies the input dim (unless allowzero), one -1 takes what is left."""
    out = list(target)
    if not allowzero:
        for i, d in enumerate(out):
            if d == 0:
                if i >= len(shape_in):
                    _fail("Reshape", f"shape {target} copies dim {i} (0) that input "
                                     f"{list(shape_in)} does not have")
                out[i] = shape_in[i]
    if sum(d == -1 for d in out) > 1 or any(d < -1 for d in out):
        _fail("Reshape", f"shape {target} may hold at most one -1 and no other negative")
    total = math.prod(shape_in)
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or total % known:
            _fail("Reshape", f"cannot infer the -1 of {target} from input {list(shape_in)}")
        out[out.index(-1)] = total // known
    if math.prod(out) != total:
        _fail("Reshape", f"cannot reshape {list(shape_in)} ({total} elements) to {target}")
    return tuple(out)


def _infer_reshape(inputs, *, allowzero):
    target = _ints("Reshape", inputs, 1, "shape")
    return inputs[0].type.with_shape(reshape_shape(inputs[0].shape, target, allowzero))


@op("Reshape", inputs=2, attrs={"allowzero": Attr.int(0)}, infer=_infer_reshape,
    traits=("view",))
def reshape(x, shape, *, allowzero):
    return x.reshape(reshape_shape(x.shape, [int(d) for d in shape], allowzero))


def _flatten_shape(shape: tuple[int, ...], axis: int) -> tuple[int, int]:
    a = norm_axis("Flatten", axis, len(shape), inclusive=True)
    return math.prod(shape[:a]), math.prod(shape[a:])


@op("Flatten", attrs={"axis": Attr.int(1)}, traits=("view",),
    infer=lambda inputs, *, axis: inputs[0].type.with_shape(_flatten_shape(inputs[0].shape, axis)))
def flatten(x, *, axis):
    return x.reshape(_flatten_shape(x.shape, axis))


# -- shapes, gathers, concatenation ---------------------------------------------------------

def _shape_range(rank: int, start: int, end: int | None) -> tuple[int, int]:
    lo = start + rank if start < 0 else start
    hi = rank if end is None else (end + rank if end < 0 else end)
    lo, hi = min(max(lo, 0), rank), min(max(hi, 0), rank)
    return lo, max(lo, hi)


def _infer_shape(inputs, *, start, end):
    lo, hi = _shape_range(inputs[0].type.rank, start, end)
    return TensorType((hi - lo,), DType.I64)


@op("Shape", attrs={"start": Attr.int(0), "end": Attr.int(None)}, infer=_infer_shape)
def shape(x, *, start, end):
    lo, hi = _shape_range(x.ndim, start, end)
    return np.array(x.shape[lo:hi], dtype=np.int64)


def _infer_gather(inputs, *, axis):
    data, idx = inputs[0].type, inputs[1].type
    if data.rank < 1:
        _fail("Gather", "data must have rank >= 1")
    if idx.dtype not in (DType.I32, DType.I64):
        _fail("Gather", f"indices must be int32 or int64, got {idx}")
    a = norm_axis("Gather", axis, data.rank)
    if inputs[1].const is not None:
        _check_indices("Gather", inputs[1].const, data.shape[a])
    return data.with_shape(data.shape[:a] + idx.shape + data.shape[a + 1:])


def _check_indices(opname: str, idx: np.ndarray, dim: int) -> None:
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        _fail(opname, f"indices in [{idx.min()}, {idx.max()}] are out of range for an axis "
                      f"of size {dim}")


@op("Gather", inputs=2, attrs={"axis": Attr.int(0)}, infer=_infer_gather)
def gather(data, indices, *, axis):
    a = norm_axis("Gather", axis, data.ndim)
    _check_indices("Gather", indices, data.shape[a])
    idx = np.where(indices < 0, indices + data.shape[a], indices).astype(np.int64)
    return np.take(data, idx, axis=a)


def _infer_concat(inputs, *, axis):
    ts = [v.type for v in inputs]
    a = norm_axis("Concat", axis, ts[0].rank)
    off_axis = lambda t: t.shape[:a] + t.shape[a + 1:]  # noqa: E731
    for t in ts[1:]:
        if t.rank != ts[0].rank or t.dtype != ts[0].dtype or off_axis(t) != off_axis(ts[0]):
            _fail("Concat", f"inputs {', '.join(map(str, ts))} differ off axis {axis}")
    out = list(ts[0].shape)
    out[a] = sum(t.shape[a] for t in ts)
    return ts[0].with_shape(out)


@op("Concat", inputs=VARIADIC, attrs={"axis": Attr.int()}, infer=_infer_concat)
def concat(*xs, axis):
    return np.concatenate(xs, axis=norm_axis("Concat", axis, xs[0].ndim))

