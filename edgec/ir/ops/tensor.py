"""Tensor and shape ops: reshaping, transposing, slicing, gathering, concatenation, casts.

View ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) keep the input's bytes in
the same order and carry the "view" trait, so the memory planner may alias their buffers.
Shape-like inputs (Reshape's shape, Slice's starts, ...) must be compile-time constants.
"""

from __future__ import annotations

import math
from typing import NoReturn

import numpy as np

from ...errors import ShapeError
from .. import onnx_dtypes
from ..dtypes import DType
from ..registry import Attr, broadcast_shapes, const_input, op, same_as
from ..types import TensorType

VARIADIC = (1, 2**31 - 1)


def _fail(opname: str, msg: str) -> NoReturn:
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


class _Const:
    """A stand-in for a constant Value, so shape helpers serve references too."""

    def __init__(self, arr: np.ndarray | None):
        self.const = arr
        self.shape = None if arr is None else arr.shape
        self.type = None if arr is None else TensorType(arr.shape, DType.from_numpy(arr.dtype))


def _consts(*arrays) -> list:
    return [None if a is None else _Const(a) for a in arrays]


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



def _infer_squeeze(inputs):
    shape = inputs[0].shape
    axes = _ints("Squeeze", inputs, 1, "axes")
    if axes is None:
        return inputs[0].type.with_shape(tuple(d for d in shape if d != 1))
    axes = {norm_axis("Squeeze", a, len(shape)) for a in axes}
    if any(shape[a] != 1 for a in axes):
        _fail("Squeeze", f"axes {sorted(axes)} of {list(shape)} are not all of size 1")
    return inputs[0].type.with_shape(tuple(d for i, d in enumerate(shape) if i not in axes))


@op("Squeeze", inputs=(1, 2), infer=_infer_squeeze, traits=("view",))
def squeeze(x, axes=None):
    if axes is None:
        return x.reshape(tuple(d for d in x.shape if d != 1))
    return np.squeeze(x, tuple(norm_axis("Squeeze", int(a), x.ndim) for a in axes.reshape(-1)))


def unsqueeze_shape(shape: tuple[int, ...], axes: list[int]) -> tuple[int, ...]:
    rank = len(shape) + len(axes)
    norm = sorted(norm_axis("Unsqueeze", a, rank) for a in axes)
    if len(set(norm)) != len(norm):
        _fail("Unsqueeze", f"axes {axes} repeat an axis")
    out, it = [], iter(shape)
    for i in range(rank):
        out.append(1 if i in norm else next(it))
    return tuple(out)


@op("Unsqueeze", inputs=2, traits=("view",), infer=lambda inputs: inputs[0].type.with_shape(
    unsqueeze_shape(inputs[0].shape, _ints("Unsqueeze", inputs, 1, "axes"))))
def unsqueeze(x, axes):
    return x.reshape(unsqueeze_shape(x.shape, [int(a) for a in axes.reshape(-1)]))


@op("Identity", infer=same_as(0), traits=("view",))
def identity(x):
    return x


def _infer_dropout(inputs, *, seed):
    training = const_input(inputs, 2, "Dropout's 'training_mode' input")
    if training is not None and training.any():
        _fail("Dropout", "training_mode=true (random masking) is not supported; export the "
                         "model for inference")
    x = inputs[0].type
    return [x, x.with_dtype(DType.BOOL)]


@op("Dropout", inputs=(1, 3), outputs=(1, 2), attrs={"seed": Attr.int(None)},
    infer=_infer_dropout, traits=("view",))
def dropout(x, ratio=None, training_mode=None, *, seed):
    """At inference Dropout is the identity; its optional mask output is all true."""
    return x, np.ones(x.shape, dtype=np.bool_)


# -- data movement --------------------------------------------------------------------------

def _perm(opname: str, perm: list[int] | None, rank: int) -> list[int]:
    if perm is None:
        return list(range(rank))[::-1]
    p = [norm_axis(opname, a, rank) for a in perm]
    if sorted(p) != list(range(rank)):
        _fail(opname, f"perm {perm} is not a permutation of the {rank} axes")
    return p


def _infer_transpose(inputs, *, perm):
    x = inputs[0].type
    return x.with_shape(tuple(x.shape[a] for a in _perm("Transpose", perm, x.rank)))


@op("Transpose", attrs={"perm": Attr.ints(None)}, infer=_infer_transpose)
def transpose(x, *, perm):
    return np.transpose(x, _perm("Transpose", perm, x.ndim))


def split_sizes(inputs, axis: int, num_outputs: int | None) -> list[int]:
    dim = inputs[0].shape[norm_axis("Split", axis, inputs[0].type.rank)]
    sizes = _ints("Split", inputs, 1, "split")
    if (sizes is None) == (num_outputs is None):
        _fail("Split", "give exactly one of the 'split' input and the 'num_outputs' attribute")
    if sizes is not None:
        if sum(sizes) != dim or min(sizes, default=0) < 0:
            _fail("Split", f"split {sizes} does not add up to the axis size {dim}")
        return sizes
    if num_outputs < 1 or num_outputs > dim:
        _fail("Split", f"num_outputs={num_outputs} does not fit an axis of size {dim}")
    # chunks of ceil(dim / n); the last one takes what is left (ONNX opset 18)
    chunk = -(-dim // num_outputs)
    sizes = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
    if len(sizes) != num_outputs:
        _fail("Split", f"an axis of size {dim} cannot be split into {num_outputs} chunks of "
                       f"size {chunk}")
    return sizes


def _infer_split(inputs, *, axis, num_outputs):
    x = inputs[0].type
    a = norm_axis("Split", axis, x.rank)
    return [x.with_shape(x.shape[:a] + (s,) + x.shape[a + 1:])
            for s in split_sizes(inputs, axis, num_outputs)]


@op("Split", inputs=(1, 2), outputs=VARIADIC, infer=_infer_split,
    attrs={"axis": Attr.int(0), "num_outputs": Attr.int(None)})
def split(x, sizes=None, *, axis, num_outputs):
    counts = split_sizes(_consts(x, sizes), axis, num_outputs)
    return tuple(np.split(x, np.cumsum(counts)[:-1], axis=norm_axis("Split", axis, x.ndim)))


def slice_ranges(opname: str, shape, starts, ends, axes, steps) -> list[slice]:
    """Per-axis python slices for ONNX Slice: negative starts/ends count from the end, then
    both are clamped ([0, dim] for positive steps, [-1, dim-1] for negative ones)."""
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        _fail(opname, "starts, ends, axes and steps must have one length")
    out = [slice(None)] * rank
    seen = set()
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        a = norm_axis(opname, a, rank)
        if a in seen or st == 0:
            _fail(opname, f"axis {a} repeats or has step 0")
        seen.add(a)
        dim = shape[a]
        s, e = (s + dim if s < 0 else s), (e + dim if e < 0 else e)
        if st > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
        out[a] = slice(s, None if e < 0 else e, st)
    return out


def _slice_args(inputs):
    names = ("starts", "ends", "axes", "steps")
    return [_ints("Slice", inputs, i, w) for i, w in enumerate(names, start=1)]


def _infer_slice(inputs):
    x = inputs[0].type
    sl = slice_ranges("Slice", x.shape, *_slice_args(inputs))
    return x.with_shape(tuple(len(range(*s.indices(d))) for s, d in zip(sl, x.shape, strict=True)))


@op("Slice", inputs=(3, 5), infer=_infer_slice)
def slice_(x, starts, ends, axes=None, steps=None):
    return x[tuple(slice_ranges("Slice", x.shape, *_slice_args(_consts(
        x, starts, ends, axes, steps))))]


_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def pad_widths(opname: str, rank: int, pads: list[int], axes: list[int] | None):
    """[(before, after)] per axis from ONNX pads [b_0.., e_0..] over `axes` (default all)."""
    axes = list(range(rank)) if axes is None else [norm_axis(opname, a, rank) for a in axes]
    if len(pads) != 2 * len(axes):
        _fail(opname, f"pads {pads} must hold 2 values per padded axis ({len(axes)} axes)")
    width = [(0, 0)] * rank
    for i, a in enumerate(axes):
        width[a] = (pads[i], pads[i + len(axes)])
    return width


def _infer_pad(inputs, *, mode):
    x = inputs[0].type
    if mode not in _PAD_MODES:
        _fail("Pad", f"mode {mode!r} is not one of {_PAD_MODES}")
    width = pad_widths("Pad", x.rank, _ints("Pad", inputs, 1, "pads"),
                       _ints("Pad", inputs, 3, "axes"))
    out = tuple(d + b + e for d, (b, e) in zip(x.shape, width, strict=True))
    if min(out, default=1) < 0:
        _fail("Pad", f"negative pads crop more than input {x} holds")
    for d, (b, e) in zip(x.shape, width, strict=True):
        if mode != "constant" and (b > 0 or e > 0) and d + min(b, 0) + min(e, 0) < 1:
            _fail("Pad", f"mode {mode!r} cannot pad an empty axis")
    if len(inputs) > 2 and inputs[2] is not None and inputs[2].type.numel != 1:
        _fail("Pad", f"constant_value must be a scalar, got {inputs[2].type}")
    return x.with_shape(out)


@op("Pad", inputs=(2, 4), attrs={"mode": Attr.str("constant")}, infer=_infer_pad)
def pad(x, pads, constant_value=None, axes=None, *, mode):
    """Negative pads crop first; then numpy's pad modes match ONNX's (reflect excludes the
    edge, edge repeats it, wrap is circular)."""
    ax = None if axes is None else [int(a) for a in axes]
    width = pad_widths("Pad", x.ndim, [int(p) for p in pads], ax)
    x = x[tuple(slice(-b if b < 0 else 0, d + e if e < 0 else d)
                for d, (b, e) in zip(x.shape, width, strict=True))]
    width = [(max(b, 0), max(e, 0)) for b, e in width]
    if mode == "constant":
        cv = 0 if constant_value is None else constant_value.reshape(())
        return np.pad(x, width, mode="constant", constant_values=cv)
    return np.pad(x, width, mode=mode)


def _infer_expand(inputs):
    return inputs[0].type.with_shape(
        broadcast_shapes(inputs[0].shape, _ints("Expand", inputs, 1, "shape")))


@op("Expand", inputs=2, infer=_infer_expand)
def expand(x, shape):
    return np.broadcast_to(x, broadcast_shapes(x.shape, [int(d) for d in shape])).copy()


def _infer_tile(inputs):
    reps = _ints("Tile", inputs, 1, "repeats")
    x = inputs[0].type
    if len(reps) != x.rank or min(reps, default=0) < 0:
        _fail("Tile", f"repeats {reps} must hold one non-negative count per axis of {x}")
    return x.with_shape(tuple(d * r for d, r in zip(x.shape, reps, strict=True)))


@op("Tile", inputs=2, infer=_infer_tile)
def tile(x, repeats):
    return np.tile(x, [int(r) for r in repeats])


# -- constants and casts --------------------------------------------------------------------

def _fill_value(value: np.ndarray | None) -> np.ndarray:
    if value is None:
        return np.zeros((), np.float32)
    if value.size != 1:
        _fail("ConstantOfShape", f"value must hold one element, got shape {list(value.shape)}")
    return value.reshape(())


def _infer_constant_of_shape(inputs, *, value):
    shape = _ints("ConstantOfShape", inputs, 0, "input")
    if min(shape, default=0) < 0:
        _fail("ConstantOfShape", f"shape {shape} has a negative dim")
    return TensorType(tuple(shape), DType.from_numpy(_fill_value(value).dtype))


@op("ConstantOfShape", attrs={"value": Attr.tensor(None)}, infer=_infer_constant_of_shape)
def constant_of_shape(shape, *, value):
    """A tensor of the given shape filled with `value` (default float32 zero)."""
    return np.full([int(d) for d in shape], _fill_value(value))


def _infer_cast(inputs, *, to, saturate):
    return inputs[0].type.with_dtype(onnx_dtypes.from_onnx(to))


@op("Cast", attrs={"to": Attr.int(), "saturate": Attr.int(1)}, infer=_infer_cast,
    traits=("elementwise",))
def cast(x, *, to, saturate):
    """numpy's astype: floats to ints truncate toward zero, nonzero to bool is true.
    (`saturate` only concerns float8 types, which edgec has none of.)"""
    with np.errstate(all="ignore"):
        return x.astype(onnx_dtypes.from_onnx(to).np)


def _range_args(inputs):
    vals = []
    for i, what in enumerate(("start", "limit", "delta")):
        a = const_input(inputs, i, f"Range's '{what}' input")
        if a.size != 1:
            _fail("Range", f"'{what}' must be a scalar, got shape {list(a.shape)}")
        vals.append(a.reshape(()))
    if vals[2] == 0:
        _fail("Range", "delta must not be 0")
    return vals


def range_length(start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> int:
    """max(ceil((limit - start) / delta), 0), the difference taken in the inputs' dtype."""
    return max(int(math.ceil(float(limit - start) / float(delta))), 0)


def _infer_range(inputs):
    start, limit, delta = _range_args(inputs)
    if len({inputs[i].dtype for i in range(3)}) > 1:
        _fail("Range", "start, limit and delta must have one dtype")
    return TensorType((range_length(start, limit, delta),), inputs[0].dtype)


@op("Range", inputs=3, infer=_infer_range)
def range_(start, limit, delta):
    """output[i] = start + i * delta."""
    n = range_length(start.reshape(()), limit.reshape(()), delta.reshape(()))
    return (start.reshape(()) + np.arange(n).astype(start.dtype) * delta.reshape(())).astype(
        start.dtype)
