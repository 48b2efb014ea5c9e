"""Tensor and shape ops: reshaping, transposing, slicing, gathering and scattering by index
tensors, rearrangements (DepthToSpace, ReverseSequence, Col2Im), masks, concatenation, casts.

View ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) keep the input's bytes in
the same order and carry the "view" trait, so the memory planner may alias their buffers.
Shape-like inputs (Reshape's shape, Slice's starts, ...) must be compile-time constants; so
must the inputs that fix a selection's size (Compress's condition, NonZero's and Unique's
input). Index tensors read at run time follow onnxruntime: negative indices count from the
end of their axis; a scatter applies its updates in order (with no reduction the last wins).

Out-of-range indices (ONNX leaves them undefined; onnxruntime stops with an error, which a C
kernel cannot): an index i into an axis of size n, read at run time, is taken as
    j = clamp(i + n if i < 0 else i, 0, n - 1)
(i + n only where ONNX lets indices count from the end: Gather, GatherElements, GatherND,
ScatterElements, ScatterND), so past the end reads, and a scatter writes, the last element,
and below -n the first. TensorScatter's linear positions, MaxUnpool's indices, RoiAlign's
batch indices, the losses' targets and RotaryEmbedding's positions clamp the same way; OneHot
gives off_value, as ONNX says. The kernels do the same. The ops that read indices carry the
"indices" trait. Constant indices out of range are an error at compile time, and so is a
lookup into an axis of size 0, where no clamped index lands (_check_axes_to_index).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from ...errors import ShapeError
from .. import onnx_dtypes
from ..dtypes import DType, convert
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
    _check_axes_to_index("Gather", idx, (data.shape[a],))
    if inputs[1].const is not None:
        _check_indices("Gather", inputs[1].const, data.shape[a])
    return data.with_shape(data.shape[:a] + idx.shape + data.shape[a + 1:])


def _check_axes_to_index(opname: str, idx: TensorType, dims: tuple[int, ...],
                         n_lookups: int | None = None) -> None:
    """Refuse lookups into an axis of size 0: no index is in range there, so even the
    clamp that run-time indices get (see _clamp_indices) has nothing to land on."""
    n = idx.numel if n_lookups is None else n_lookups
    if n and 0 in dims:
        _fail(opname, f"indices {idx} look up {n} element(s) along an axis of size 0 "
                      f"(indexed dims {list(dims)}); make that axis non-empty or the "
                      f"indices empty")


def _check_indices(opname: str, idx: np.ndarray, dim: int) -> None:
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        _fail(opname, f"indices in [{idx.min()}, {idx.max()}] are out of range for an axis "
                      f"of size {dim}")


@op("Gather", inputs=2, attrs={"axis": Attr.int(0)}, infer=_infer_gather, traits=("indices",))
def gather(data, indices, *, axis):
    a = norm_axis("Gather", axis, data.ndim)
    return np.take(data, _clamp_indices(indices, data.shape[a]), axis=a)


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
    """edgec's value conversion (`dtypes.convert`): floats to integers truncate toward zero and
    saturate (NaN to 0; ONNX leaves values out of range undefined), integers to narrower ones
    keep the low bits, nonzero to bool is true. (`saturate` only concerns float8 types, which
    edgec has none of.)"""
    return convert(x, onnx_dtypes.from_onnx(to))


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


# -- gathers and scatters by index tensors --------------------------------------------------

def _index_type(opname: str, t: TensorType, what: str = "indices") -> None:
    if t.dtype not in (DType.I32, DType.I64):
        _fail(opname, f"{what} must be int32 or int64, got {t}")


def _clamp_indices(idx: np.ndarray, dims) -> np.ndarray:
    """Indices into axes of sizes `dims` (broadcast against the last axis of `idx`) as int64:
    negative ones counted from the end, then clamped into [0, n) (the module's docstring)."""
    idx, n = idx.astype(np.int64), np.asarray(dims, np.int64)
    return np.clip(np.where(idx < 0, idx + n, idx), 0, n - 1)


def _check_nd_indices(opname: str, idx: np.ndarray, dims) -> None:
    if idx.size:
        d = np.asarray(dims, np.int64)
        if np.any(idx < -d) or np.any(idx >= d):
            _fail(opname, f"an index tuple is out of range for dims {list(dims)}")


def _elements_shapes(opname: str, data: TensorType, idx: TensorType, axis: int) -> int:
    _index_type(opname, idx)
    if data.rank == 0 or idx.rank != data.rank:
        _fail(opname, f"data {data} and indices {idx} must have one rank >= 1")
    a = norm_axis(opname, axis, data.rank)
    if any(i > d for k, (i, d) in enumerate(zip(idx.shape, data.shape)) if k != a):
        _fail(opname, f"indices {idx} are larger than data {data} off axis {axis}")
    return a


def _infer_gather_elements(inputs, *, axis):
    data, idx = inputs[0].type, inputs[1].type
    a = _elements_shapes("GatherElements", data, idx, axis)
    _check_axes_to_index("GatherElements", idx, (data.shape[a],))
    if inputs[1].const is not None:
        _check_indices("GatherElements", inputs[1].const, data.shape[a])
    return data.with_shape(idx.shape)


def _element_coords(indices: np.ndarray, a: int, dim: int) -> tuple[np.ndarray, ...]:
    """Full coordinates of every element of `indices`, axis `a` replaced by its value."""
    coords = list(np.indices(indices.shape, sparse=True))
    coords[a] = _clamp_indices(indices, dim)
    return tuple(coords)


@op("GatherElements", inputs=2, attrs={"axis": Attr.int(0)}, infer=_infer_gather_elements,
    traits=("indices",))
def gather_elements(data, indices, *, axis):
    """y[i, j, k] = data[indices[i, j, k], j, k] (for axis 0); negative indices wrap."""
    a = norm_axis("GatherElements", axis, data.ndim)
    return data[_element_coords(indices, a, data.shape[a])]


def gather_nd_shape(opname: str, data: tuple[int, ...], idx: tuple[int, ...],
                    batch_dims: int) -> tuple[int, ...]:
    """GatherND's output shape: indices.shape[:-1] + data.shape[batch_dims + last:]."""
    r, q, b = len(data), len(idx), batch_dims
    if q < 1 or not 0 <= b < min(q, r) or data[:b] != idx[:b]:
        _fail(opname, f"data {list(data)} and indices {list(idx)} do not share "
                      f"batch_dims={b} leading dims")
    last = idx[-1]
    if not 1 <= last <= r - b:
        _fail(opname, f"index tuples of length {last} do not fit data {list(data)} after "
                      f"{b} batch dims")
    return idx[:-1] + data[b + last:]


def _infer_gather_nd(inputs, *, batch_dims):
    data, idx = inputs[0].type, inputs[1].type
    if idx.dtype is not DType.I64:
        _fail("GatherND", f"indices must be int64, got {idx}")
    shape = gather_nd_shape("GatherND", data.shape, idx.shape, batch_dims)
    last = idx.shape[-1]
    _check_axes_to_index("GatherND", idx, data.shape[batch_dims:batch_dims + last],
                         math.prod(idx.shape[:-1]))
    if inputs[1].const is not None:
        _check_nd_indices("GatherND", inputs[1].const, data.shape[batch_dims:batch_dims + last])
    return data.with_shape(shape)


@op("GatherND", inputs=2, attrs={"batch_dims": Attr.int(0)}, infer=_infer_gather_nd,
    traits=("indices",))
def gather_nd(data, indices, *, batch_dims):
    """y[b, i] = data[b, indices[b, i, 0], ..., indices[b, i, last-1], :] per batch b."""
    b = batch_dims
    shape = gather_nd_shape("GatherND", data.shape, indices.shape, b)
    last = indices.shape[-1]
    dims = data.shape[b:b + last]
    batch = math.prod(data.shape[:b])
    d = data.reshape((batch,) + data.shape[b:])
    ix = _clamp_indices(indices.reshape(batch, -1, last), dims)
    rows = [d[k][tuple(ix[k].T)] for k in range(batch)]
    return np.stack(rows).reshape(shape) if rows else np.zeros(shape, data.dtype)


_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _scatter_into(out: np.ndarray, at: np.ndarray, updates: np.ndarray, reduction: str) -> None:
    """out[at[i]] op= updates[i] in order (rows of `out` when it is 2-D); with no reduction
    the last write to an element wins, as a sequential loop (onnxruntime) has it."""
    if reduction == "none":
        last = len(at) - 1 - np.unique(at[::-1], return_index=True)[1]
        out[at[last]] = updates[last]
        return
    fn = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
    fn.at(out, at, updates)


def _check_reduction(opname: str, reduction: str, data: TensorType) -> None:
    if reduction not in _REDUCTIONS:
        _fail(opname, f"reduction {reduction!r} is not one of {_REDUCTIONS}")
    if reduction != "none" and data.dtype is DType.BOOL:
        _fail(opname, f"reduction {reduction!r} needs numeric data, got {data}")


def _infer_scatter_elements(inputs, *, axis, reduction):
    data, idx, upd = (v.type for v in inputs)
    a = _elements_shapes("ScatterElements", data, idx, axis)
    _check_axes_to_index("ScatterElements", idx, (data.shape[a],))
    _check_reduction("ScatterElements", reduction, data)
    if upd.shape != idx.shape or upd.dtype != data.dtype:
        _fail("ScatterElements", f"updates {upd} must have the shape of indices {idx} and the "
                                 f"dtype of data {data}")
    if inputs[1].const is not None:
        _check_indices("ScatterElements", inputs[1].const, data.shape[a])
    return data


@op("ScatterElements", inputs=3, infer=_infer_scatter_elements, traits=("indices",),
    attrs={"axis": Attr.int(0), "reduction": Attr.str("none")})
def scatter_elements(data, indices, updates, *, axis, reduction):
    """A copy of data with y[indices[i, j], j] (op)= updates[i, j] (axis 0), in order."""
    a = norm_axis("ScatterElements", axis, data.ndim)
    out = data.copy()
    coords = np.broadcast_arrays(*_element_coords(indices, a, data.shape[a]))
    at = np.ravel_multi_index(tuple(c.reshape(-1) for c in coords), data.shape) if \
        indices.size else np.zeros(0, np.int64)
    _scatter_into(out.reshape(-1), at, updates.reshape(-1), reduction)
    return out


def _infer_scatter_nd(inputs, *, reduction):
    data, idx, upd = (v.type for v in inputs)
    if idx.dtype is not DType.I64 or idx.rank < 1:
        _fail("ScatterND", f"indices must be an int64 tensor of rank >= 1, got {idx}")
    _check_reduction("ScatterND", reduction, data)
    last = idx.shape[-1]
    if last > data.rank:
        _fail("ScatterND", f"index tuples of length {last} do not fit data {data}")
    want = idx.shape[:-1] + data.shape[last:]
    if upd.shape != want or upd.dtype != data.dtype:
        _fail("ScatterND", f"updates {upd} must be {data.dtype}{list(want)}")
    _check_axes_to_index("ScatterND", idx, data.shape[:last], math.prod(idx.shape[:-1]))
    if inputs[1].const is not None:
        _check_nd_indices("ScatterND", inputs[1].const, data.shape[:last])
    return data


@op("ScatterND", inputs=3, attrs={"reduction": Attr.str("none")}, infer=_infer_scatter_nd,
    traits=("indices",))
def scatter_nd(data, indices, updates, *, reduction):
    """A copy of data with y[indices[i]] (op)= updates[i] (whole slices), in order."""
    last = indices.shape[-1]
    dims = data.shape[:last]
    out = data.copy()
    ix = _clamp_indices(indices.reshape(-1, last), dims)
    rows = np.ravel_multi_index(tuple(ix.T), dims) if ix.size else np.zeros(len(ix), np.int64)
    inner = math.prod(data.shape[last:])
    _scatter_into(out.reshape(-1, inner), rows, updates.reshape(-1, inner), reduction)
    return out


def _infer_tensor_scatter(inputs, *, mode, axis):
    cache, upd = inputs[0].type, inputs[1].type
    if mode not in ("linear", "circular"):
        _fail("TensorScatter", f"mode {mode!r} is not 'linear' or 'circular'")
    a = norm_axis("TensorScatter", axis, cache.rank)
    if a == 0 or upd.rank != cache.rank or upd.dtype != cache.dtype or upd.shape[a] > \
            cache.shape[a] or any(u != c for k, (u, c) in enumerate(
                zip(upd.shape, cache.shape)) if k != a):
        _fail("TensorScatter", f"update {upd} does not fit past_cache {cache} along axis {axis}")
    if len(inputs) > 2 and inputs[2] is not None:
        w = inputs[2].type
        _index_type("TensorScatter", w, "write_indices")
        if w.shape != (cache.shape[0],):
            _fail("TensorScatter", f"write_indices {w} must hold one index per batch")
    return cache


@op("TensorScatter", inputs=(2, 3), infer=_infer_tensor_scatter, traits=("indices",),
    attrs={"mode": Attr.str("linear"), "axis": Attr.int(-2)})
def tensor_scatter(past_cache, update, write_indices=None, *, mode, axis):
    """A cache update: y = past_cache, then y[b, .., w[b] + s, ..] = update[b, .., s, ..] for
    each batch b and step s (positions modulo the axis size in circular mode, clamped into
    it in linear mode, in order: a step past the end overwrites the last row)."""
    a = norm_axis("TensorScatter", axis, past_cache.ndim)
    n, steps = past_cache.shape[a], update.shape[a]
    w = np.zeros(past_cache.shape[0], np.int64) if write_indices is None else \
        write_indices.astype(np.int64)
    out = past_cache.copy()
    for b in range(past_cache.shape[0]):
        pos = w[b] + np.arange(steps)
        pos = pos % n if mode == "circular" else np.clip(pos, 0, n - 1)
        rows, src = np.moveaxis(out[b], a - 1, 0), np.moveaxis(update[b], a - 1, 0)  # views
        for s in range(steps):  # in order: clamped positions repeat, and the last step wins
            rows[pos[s]] = src[s]
    return out


def _infer_one_hot(inputs, *, axis):
    idx, values = inputs[0].type, inputs[2].type
    if idx.dtype.np.kind not in "fiu":
        _fail("OneHot", f"indices must be numeric, got {idx}")
    depth = one_hot_depth(inputs)
    if values.numel != 2:
        _fail("OneHot", f"values must hold [off_value, on_value], got {values}")
    a = norm_axis("OneHot", axis, idx.rank + 1)
    return values.with_shape(idx.shape[:a] + (depth,) + idx.shape[a:])


def one_hot_depth(inputs) -> int:
    depth = const_input(inputs, 1, "OneHot's 'depth' input")
    if depth.size != 1 or depth.dtype.kind not in "fiu" or depth.reshape(()) < 1:
        _fail("OneHot", f"depth must be one positive number, got {depth.tolist()}")
    return int(depth.reshape(()))


@op("OneHot", inputs=3, attrs={"axis": Attr.int(-1)}, infer=_infer_one_hot, traits=("indices",))
def one_hot(indices, depth, values, *, axis):
    """y = on_value where the new axis' position equals the index (negative indices count
    from depth; float indices truncate), off_value elsewhere, out-of-range indices included."""
    d = int(np.asarray(depth).reshape(()))
    a = norm_axis("OneHot", axis, indices.ndim + 1)
    idx = indices.astype(np.int64)
    idx = np.where(idx < 0, idx + d, idx)
    hot = np.moveaxis(idx[..., None] == np.arange(d), -1, a)
    off, on = values.reshape(-1)
    return np.where(hot, on, off).astype(values.dtype)


# -- rearrangements ---------------------------------------------------------------------------

def depth_space_view(opname: str, shape: tuple[int, ...], b: int,
                     mode: str = "DCR") -> tuple[tuple[int, ...], list[int], tuple[int, ...]]:
    """(6-D view of the input, the permutation that rearranges it, output shape)."""
    if len(shape) != 4 or b < 1:
        _fail(opname, f"needs a 4-D input and blocksize >= 1, got {list(shape)}, {b}")
    n, c, h, w = shape
    if opname == "SpaceToDepth":
        if h % b or w % b:
            _fail(opname, f"H={h} and W={w} must be multiples of blocksize {b}")
        return (n, c, h // b, b, w // b, b), [0, 3, 5, 1, 2, 4], (n, c * b * b, h // b, w // b)
    if c % (b * b):
        _fail(opname, f"C={c} must be a multiple of blocksize^2 = {b * b}")
    if mode == "DCR":
        return (n, b, b, c // (b * b), h, w), [0, 3, 4, 1, 5, 2], (n, c // (b * b), h * b, w * b)
    if mode == "CRD":
        return (n, c // (b * b), b, b, h, w), [0, 1, 4, 2, 5, 3], (n, c // (b * b), h * b, w * b)
    _fail(opname, f"mode {mode!r} is not 'DCR' or 'CRD'")


@op("DepthToSpace", attrs={"blocksize": Attr.int(), "mode": Attr.str("DCR")},
    infer=lambda inputs, *, blocksize, mode: inputs[0].type.with_shape(
        depth_space_view("DepthToSpace", inputs[0].shape, blocksize, mode)[2]))
def depth_to_space(x, *, blocksize, mode):
    """Moves blocks of channels into b x b spatial blocks (DCR: depth-major, CRD: channel-major)."""
    view, perm, out = depth_space_view("DepthToSpace", x.shape, blocksize, mode)
    return x.reshape(view).transpose(perm).reshape(out)


@op("SpaceToDepth", attrs={"blocksize": Attr.int()},
    infer=lambda inputs, *, blocksize: inputs[0].type.with_shape(
        depth_space_view("SpaceToDepth", inputs[0].shape, blocksize)[2]))
def space_to_depth(x, *, blocksize):
    """The inverse of DepthToSpace in DCR mode: b x b spatial blocks become channels."""
    view, perm, out = depth_space_view("SpaceToDepth", x.shape, blocksize)
    return x.reshape(view).transpose(perm).reshape(out)


def _infer_reverse_sequence(inputs, *, batch_axis, time_axis):
    x, lens = inputs[0].type, inputs[1].type
    if x.rank < 2 or {batch_axis, time_axis} != {0, 1}:
        _fail("ReverseSequence", f"needs rank >= 2 and batch/time axes 0 and 1, got {x}, "
                                 f"batch_axis={batch_axis}, time_axis={time_axis}")
    _index_type("ReverseSequence", lens, "sequence_lens")
    if lens.shape != (x.shape[batch_axis],):
        _fail("ReverseSequence", f"sequence_lens {lens} must hold one length per batch of {x}")
    return x


@op("ReverseSequence", inputs=2, infer=_infer_reverse_sequence,
    attrs={"batch_axis": Attr.int(1), "time_axis": Attr.int(0)})
def reverse_sequence(x, sequence_lens, *, batch_axis, time_axis):
    """Reverses the first sequence_lens[b] steps of each batch b along the time axis
    (lengths clamped into [0, T]); later steps are copied."""
    t = x.shape[time_axis]
    out = x.copy()
    for b, n in enumerate(np.clip(sequence_lens.astype(np.int64), 0, t)):
        src = [slice(None)] * x.ndim
        src[batch_axis], src[time_axis] = b, slice(None, None)
        rev = np.take(x[tuple(src)], np.arange(n)[::-1], axis=0)
        dst = list(src)
        dst[time_axis] = slice(0, n)
        out[tuple(dst)] = rev
    return out


def _infer_trilu(inputs, *, upper):
    x = inputs[0].type
    if x.rank < 2:
        _fail("Trilu", f"input must have rank >= 2, got {x}")
    if len(inputs) > 1 and inputs[1] is not None and (
            inputs[1].type.numel != 1 or inputs[1].dtype is not DType.I64):
        _fail("Trilu", f"k must be an int64 scalar, got {inputs[1].type}")
    return x


@op("Trilu", inputs=(1, 2), attrs={"upper": Attr.int(1)}, infer=_infer_trilu)
def trilu(x, k=None, *, upper):
    """Keeps x[.., i, j] where j - i >= k (upper) or j - i <= k (lower), zeros the rest."""
    kk = 0 if k is None else int(np.asarray(k).reshape(()))
    i, j = np.indices(x.shape[-2:], sparse=True)
    keep = (j - i >= kk) if upper else (j - i <= kk)
    return np.where(keep, x, np.zeros((), x.dtype))


def _infer_eye_like(inputs, *, dtype, k):
    x = inputs[0].type
    if x.rank != 2:
        _fail("EyeLike", f"input must be 2-D, got {x}")
    return TensorType(x.shape, x.dtype if dtype is None else onnx_dtypes.from_onnx(dtype))


@op("EyeLike", attrs={"dtype": Attr.int(None), "k": Attr.int(0)}, infer=_infer_eye_like)
def eye_like(x, *, dtype, k):
    """Ones on diagonal k (above the main one for k > 0), zeros elsewhere, x's shape."""
    dt = x.dtype if dtype is None else onnx_dtypes.from_onnx(dtype).np
    return np.eye(x.shape[0], x.shape[1], k, dtype=dt)


# -- selections with a compile-time count ---------------------------------------------------

def compress_selection(inputs, axis: int | None) -> tuple[int | None, list[int]]:
    """(normalized axis or None for the flattened input, the positions selected)."""
    cond = const_input(inputs, 1, "Compress's 'condition' input (its count of true values "
                                  "fixes the output shape)")
    if cond.ndim != 1:
        _fail("Compress", f"condition must be 1-D, got shape {list(cond.shape)}")
    x = inputs[0].type
    a = None if axis is None else norm_axis("Compress", axis, x.rank)
    n = x.numel if a is None else x.shape[a]
    picked = [int(i) for i in np.flatnonzero(cond)]
    if picked and picked[-1] >= n:
        _fail("Compress", f"condition selects position {picked[-1]} of an axis of size {n}")
    return a, picked


def _infer_compress(inputs, *, axis):
    x = inputs[0].type
    a, picked = compress_selection(inputs, axis)
    if a is None:
        return x.with_shape((len(picked),))
    return x.with_shape(x.shape[:a] + (len(picked),) + x.shape[a + 1:])


@op("Compress", inputs=2, attrs={"axis": Attr.int(None)}, infer=_infer_compress)
def compress(x, condition, *, axis):
    """The slices along `axis` (of the flattened input without one) whose condition is true;
    a condition shorter than the axis selects nothing past its end."""
    a, picked = compress_selection(_consts(x, condition), axis)
    idx = np.array(picked, np.int64)
    return np.take(x.reshape(-1), idx) if a is None else np.take(x, idx, axis=a)


def _infer_nonzero(inputs):
    x = const_input(inputs, 0, "NonZero's input (its count of nonzeros fixes the output shape)")
    return TensorType((x.ndim, int(np.count_nonzero(x))), DType.I64)


@op("NonZero", infer=_infer_nonzero)
def nonzero(x):
    """The coordinates of the nonzero elements, one row per axis, in row-major order."""
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


# -- Col2Im ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Col2ImGeometry:
    """Col2Im's shapes: image and block dims, and the count of blocks along each dim."""

    image: tuple[int, ...]
    block: tuple[int, ...]
    blocks: tuple[int, ...]
    channels: int


def col2im_geometry(inputs, *, dilations, pads, strides) -> Col2ImGeometry:
    x = inputs[0].type
    image = _ints("Col2Im", inputs, 1, "image_shape")
    block = _ints("Col2Im", inputs, 2, "block_shape")
    n = len(image)
    dil, st = dilations or [1] * n, strides or [1] * n
    pd = pads or [0] * (2 * n)
    if x.rank != 3 or len(block) != n or len(dil) != n or len(st) != n or len(pd) != 2 * n:
        _fail("Col2Im", f"input {x} must be [N, C * prod(block), L] and image_shape {image}, "
                        f"block_shape {block}, dilations, strides and pads must agree in rank")
    k = math.prod(block)
    blocks = tuple((image[d] + pd[d] + pd[d + n] - dil[d] * (block[d] - 1) - 1) // st[d] + 1
                   for d in range(n))
    if k < 1 or x.shape[1] % k or math.prod(blocks) != x.shape[2] or min(blocks) < 1:
        _fail("Col2Im", f"input {x} does not hold {list(blocks)} blocks of {block} for an image "
                        f"of {image}")
    return Col2ImGeometry(tuple(image), tuple(block), blocks, x.shape[1] // k)


_COL2IM = {"dilations": Attr.ints(None), "pads": Attr.ints(None), "strides": Attr.ints(None)}


def _infer_col2im(inputs, **attrs):
    x = inputs[0].type
    geo = col2im_geometry(inputs, **attrs)
    return x.with_shape((x.shape[0], geo.channels) + geo.image)


@op("Col2Im", inputs=3, attrs=_COL2IM, infer=_infer_col2im)
def col2im(x, image_shape, block_shape, *, dilations, pads, strides):
    """The inverse of im2col: each column of x is a block, added back at its place in the
    image: y[n, c, l * s - pad + k * dil] += x[n, c * K + k, l] (where that is inside)."""
    geo = col2im_geometry(_consts(x, image_shape, block_shape), dilations=dilations, pads=pads,
                          strides=strides)
    n = len(geo.image)
    dil, st, pd = dilations or [1] * n, strides or [1] * n, pads or [0] * (2 * n)
    y = np.zeros((x.shape[0], geo.channels) + geo.image, x.dtype)
    cols = x.reshape((x.shape[0], geo.channels) + geo.block + geo.blocks)
    grid = np.indices(geo.blocks)
    for k in np.ndindex(*geo.block):
        pos = [grid[d] * st[d] - pd[d] + k[d] * dil[d] for d in range(n)]
        inside = np.logical_and.reduce([(p >= 0) & (p < geo.image[d]) for d, p in enumerate(pos)])
        # within one block offset k, distinct blocks land on distinct pixels: no collisions
        y[(slice(None), slice(None)) + tuple(p[inside] for p in pos)] += \
            cols[(slice(None), slice(None)) + k][..., inside]
    return y


def _unique(x: np.ndarray, axis: int | None, sorted_: int):
    """(unique values or slices, first indices, inverse indices, counts) as ONNX has them."""
    if axis is None:
        rows = x.reshape(-1)
    else:
        a = norm_axis("Unique", axis, x.ndim)
        rows = np.moveaxis(x, a, 0).reshape(x.shape[a], -1)
    uniq, first, inverse, counts = np.unique(rows, axis=None if axis is None else 0,
                                             return_index=True, return_inverse=True,
                                             return_counts=True)
    inverse = inverse.reshape(-1)
    if not sorted_:  # in order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        uniq, first, counts, inverse = uniq[order], first[order], counts[order], rank[inverse]
    if axis is not None:
        moved = np.moveaxis(x, a, 0).shape[1:]
        uniq = np.moveaxis(uniq.reshape((len(uniq),) + moved), 0, a)
    return (uniq.astype(x.dtype), first.astype(np.int64), inverse.astype(np.int64),
            counts.astype(np.int64))


def _infer_unique(inputs, *, axis, sorted):
    x = const_input(inputs, 0, "Unique's input (its count of distinct values fixes the output "
                               "shapes)")
    outs = _unique(x, axis, sorted)
    return [TensorType(o.shape, DType.from_numpy(o.dtype)) for o in outs]


@op("Unique", outputs=(1, 4), attrs={"axis": Attr.int(None), "sorted": Attr.int(1)},
    infer=_infer_unique)
def unique(x, *, axis, sorted):
    """The distinct elements (slices along `axis`), ascending or in order of first occurrence,
    with the index of each one's first occurrence, each input's index into the result, and
    the counts."""
    return _unique(x, axis, sorted)
