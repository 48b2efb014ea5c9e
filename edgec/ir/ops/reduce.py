"""Reductions and scans along axes: Reduce*, ArgMax/ArgMin, TopK, CumSum/CumProd, Einsum.

Opset-18 form: the axes are an optional constant input; no axes reduce every axis, unless
noop_with_empty_axes=1, which makes the op the identity. Results keep the input dtype
(integer ReduceMean truncates like C division, as onnxruntime does); float16 accumulates in
float32 and is rounded once at the end, as onnxruntime does. The derived reductions are
    L1 = sum |x|,  L2 = sqrt(sum x^2),  SumSquare = sum x^2,  LogSum = log(sum x),
    LogSumExp = m + log(sum exp(x - m)) with m = max x (0 when m is infinite),
the shifted form keeping exp from overflowing; reductions over an empty set give their sum's
value at 0 (LogSum and LogSumExp: -inf).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


def accumulator_dtype(dt: np.dtype) -> np.dtype:
    """float16 sums, products and means are accumulated in float32."""
    return np.dtype(np.float32) if dt == np.float16 else dt


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
        with np.errstate(all="ignore"):  # overflow to inf is the answer, as in onnxruntime
            y = fn(x.astype(accumulator_dtype(x.dtype), copy=False), ax, bool(keepdims))
            return np.asarray(y).astype(x.dtype, copy=False)

    op(name, inputs=(1, 2), attrs=_ATTRS, infer=infer)(ref)


def _mean(x: np.ndarray, axes, keepdims: bool) -> np.ndarray:
    if x.dtype.kind == "f":
        return np.mean(x, axis=axes, keepdims=keepdims, dtype=np.promote_types(x.dtype, "f4"))
    s = np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)
    n = int(np.prod([x.shape[a] for a in axes]))
    return np.trunc(s / n) if n else s  # C integer division truncates toward zero


def _sum(x: np.ndarray, axes, keepdims: bool) -> np.ndarray:
    return np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)


def _float(x: np.ndarray) -> np.ndarray:
    """Integer inputs of sqrt/log/exp reductions compute in float64 (then truncate back)."""
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def _log_sum_exp(x: np.ndarray, axes, keepdims: bool) -> np.ndarray:
    x = _float(x)
    m = np.max(x, axis=axes, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
    y = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return y if keepdims else np.squeeze(y, axis=axes)


def _bound(dtype: np.dtype, lowest: bool):
    """What ReduceMax (lowest) or ReduceMin gives over an empty set, as ONNX says: -inf (+inf)
    where the type has it, else the type's minimum (maximum); False (True) for bool."""
    if dtype.kind == "f":
        return -np.inf if lowest else np.inf
    if dtype.kind == "b":
        return not lowest
    info = np.iinfo(dtype)
    return info.min if lowest else info.max


_NUM = "fiu"
_declare("ReduceSum", _sum, _NUM)
_declare("ReduceProd", lambda x, a, k: np.prod(x, axis=a, keepdims=k, dtype=x.dtype), _NUM)
_declare("ReduceMax", lambda x, a, k: np.max(x, axis=a, keepdims=k, initial=_bound(x.dtype, True)),
         _NUM + "b")
_declare("ReduceMin", lambda x, a, k: np.min(x, axis=a, keepdims=k, initial=_bound(x.dtype, False)),
         _NUM + "b")
_declare("ReduceMean", _mean, _NUM)
_declare("ReduceL1", lambda x, a, k: _sum(np.abs(x), a, k), _NUM)
_declare("ReduceSumSquare", lambda x, a, k: _sum(x * x, a, k), _NUM)
_declare("ReduceL2", lambda x, a, k: np.sqrt(_sum(_float(x) * _float(x), a, k)), _NUM)
_declare("ReduceLogSum", lambda x, a, k: np.log(_sum(_float(x), a, k)), _NUM)
_declare("ReduceLogSumExp", _log_sum_exp, _NUM)


# -- ArgMax / ArgMin --------------------------------------------------------------------------

def _axis(opname: str, axis: int, rank: int) -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise ShapeError(f"{opname}: axis {axis} is out of range for rank {rank}")
    return a


def _declare_arg(name: str, pick) -> None:
    def infer(inputs, *, axis, keepdims, select_last_index):
        x = inputs[0].type
        a = _axis(name, axis, x.rank)
        if x.shape[a] == 0:
            raise ShapeError(f"{name}: axis {axis} of {x} is empty")
        return TensorType(_reduced_shape(x.shape, (a,), keepdims), DType.I64)

    def ref(x, *, axis, keepdims, select_last_index):
        a = _axis(name, axis, x.ndim)
        k = bool(keepdims)
        if select_last_index:
            return (x.shape[a] - 1 - pick(np.flip(x, axis=a), axis=a, keepdims=k)).astype(
                np.int64)
        return pick(x, axis=a, keepdims=k).astype(np.int64)

    ref.__doc__ = (f"Index of the first {name[3:].lower()}imum (the last one when "
                   "select_last_index); NaN wins, as in numpy.")
    op(name, infer=infer, attrs={"axis": Attr.int(0), "keepdims": Attr.int(1),
                                 "select_last_index": Attr.int(0)})(ref)


_declare_arg("ArgMax", np.argmax)
_declare_arg("ArgMin", np.argmin)


# -- TopK -------------------------------------------------------------------------------------

def topk_k(inputs) -> int:
    k = const_input(inputs, 1, "TopK's 'K' input")
    if k.size != 1 or k.dtype.kind not in "iu":
        raise ShapeError(f"TopK: K must hold one integer, got {k.dtype}{list(k.shape)}")
    return int(k.reshape(()))


def _infer_topk(inputs, *, axis, largest, sorted):
    x = inputs[0].type
    a = _axis("TopK", axis, x.rank)
    k = topk_k(inputs)
    if not 0 <= k <= x.shape[a]:
        raise ShapeError(f"TopK: K={k} is out of range for axis {axis} of {x}")
    shape = x.shape[:a] + (k,) + x.shape[a + 1:]
    return [x.with_shape(shape), TensorType(shape, DType.I64)]


@op("TopK", inputs=2, outputs=2, infer=_infer_topk,
    attrs={"axis": Attr.int(-1), "largest": Attr.int(1), "sorted": Attr.int(1)})
def topk(x, k, *, axis, largest, sorted):
    """The K largest (or smallest) along `axis`, best first; equal values keep their order
    (the lower index first), as onnxruntime returns them. NaN ranks above every number.
    With sorted=0 ONNX allows any order; this returns the sorted one."""
    a = _axis("TopK", axis, x.ndim)
    n, kk = x.shape[a], int(np.asarray(k).reshape(()))
    if largest:
        # a stable ascending sort of the reversed axis, read backwards: descending values,
        # ties by ascending index (negating would wrap unsigned values)
        order = np.flip(np.argsort(np.flip(x, axis=a), axis=a, kind="stable"), axis=a)
        order = n - 1 - order
    else:
        order = np.argsort(x, axis=a, kind="stable")
    idx = np.take(order, np.arange(kk), axis=a).astype(np.int64)
    return np.take_along_axis(x, idx, axis=a), idx


# -- CumSum / CumProd -------------------------------------------------------------------------

def cum_axis(opname: str, inputs) -> int:
    arr = const_input(inputs, 1, f"{opname}'s 'axis' input")
    if arr.size != 1 or arr.dtype.kind not in "iu":
        raise ShapeError(f"{opname}: axis must hold one integer, got {arr.dtype}"
                         f"{list(arr.shape)}")
    return _axis(opname, int(arr.reshape(())), inputs[0].type.rank)


def _declare_cum(name: str, fn, neutral: int) -> None:
    def infer(inputs, *, exclusive, reverse):
        x = inputs[0].type
        if x.rank == 0 or x.dtype.np.kind not in "fiu":
            raise ShapeError(f"{name}: input {x} must be a numeric tensor of rank >= 1")
        cum_axis(name, inputs)
        return x

    def ref(x, axis, *, exclusive, reverse):
        a = _axis(name, int(np.asarray(axis).reshape(())), x.ndim)
        acc = accumulator_dtype(x.dtype)
        y = np.flip(x, a) if reverse else x
        y = fn(y, axis=a, dtype=acc)
        if exclusive:  # shift by one along the axis, the neutral element first
            first = np.full_like(np.take(y, [0], axis=a), neutral)
            y = np.concatenate([first, np.take(y, np.arange(y.shape[a] - 1), axis=a)], axis=a)
        return (np.flip(y, a) if reverse else y).astype(x.dtype)

    ref.__doc__ = (f"Running {name[3:].lower()} along `axis`, sequentially; exclusive starts "
                   "from the neutral element, reverse runs from the end.")
    op(name, inputs=2, infer=infer, attrs={"exclusive": Attr.int(0), "reverse": Attr.int(0)})(ref)


_declare_cum("CumSum", np.cumsum, 0)
_declare_cum("CumProd", np.cumprod, 1)


# -- Einsum -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class EinsumSpec:
    """An einsum equation resolved against input shapes: each operand's index letters (the
    ellipsis expanded into digits '0'.. for broadcast dims), the output's, and every letter's
    extent. Letters absent from the output are summed over."""

    inputs: tuple[str, ...]
    output: str
    sizes: dict[str, int]

    @property
    def summed(self) -> str:
        seen = dict.fromkeys(c for term in self.inputs for c in term)
        return "".join(c for c in seen if c not in self.output)


def einsum_spec(equation: str, shapes: list[tuple[int, ...]]) -> EinsumSpec:
    """Parse `equation` (numpy/ONNX einsum syntax) for operands of `shapes`."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ShapeError(f"Einsum: equation '{equation}' has {len(terms)} operands, the node "
                         f"{len(shapes)} inputs")
    for t in terms + ([rhs] if arrow else []):
        if not re.fullmatch(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*", t):
            raise ShapeError(f"Einsum: cannot parse term '{t}' of '{equation}'")
    ell_rank = 0
    for t, s in zip(terms, shapes, strict=True):
        named = len(t.replace("...", ""))
        if ("..." in t and named > len(s)) or ("..." not in t and named != len(s)):
            raise ShapeError(f"Einsum: term '{t}' of '{equation}' does not fit an operand of "
                             f"shape {list(s)}")
        if "..." in t:
            ell_rank = max(ell_rank, len(s) - named)
    ell = "".join(str(d) for d in range(ell_rank))
    sizes: dict[str, int] = {}
    expanded = []
    for t, s in zip(terms, shapes, strict=True):
        k = len(s) - len(t.replace("...", ""))
        full = t.replace("...", ell[ell_rank - k:]) if "..." in t else t
        for c, d in zip(full, s, strict=True):
            prev = sizes.get(c)
            if c.isdigit() and (prev == 1 or (prev is not None and d == 1)):
                sizes[c] = max(prev, d)  # ellipsis dims broadcast
            elif prev is not None and prev != d:
                raise ShapeError(f"Einsum: index '{c}' of '{equation}' is {prev} in one operand "
                                 f"and {d} in another")
            else:
                sizes[c] = d
        expanded.append(full)
    if arrow:
        out = rhs.replace("...", ell)
        if len(set(out)) != len(out) or any(c not in sizes for c in out):
            raise ShapeError(f"Einsum: output '{rhs}' of '{equation}' repeats an index or names "
                             "one no operand has")
    else:
        letters = "".join(c for t in terms for c in t if c.isalpha())
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return EinsumSpec(tuple(expanded), out, sizes)


def _infer_einsum(inputs, *, equation):
    ts = [v.type for v in inputs]
    if len({t.dtype for t in ts}) > 1 or ts[0].dtype.np.kind not in "fiu":
        raise ShapeError(f"Einsum: operands {', '.join(map(str, ts))} must share one numeric "
                         "dtype")
    spec = einsum_spec(equation, [t.shape for t in ts])
    return ts[0].with_shape(tuple(spec.sizes[c] for c in spec.output))


@op("Einsum", inputs=(1, 2**31 - 1), attrs={"equation": Attr.str()}, infer=_infer_einsum)
def einsum(*xs, equation):
    """Sum over the indices absent from the output of the product of the operands."""
    spec = einsum_spec(equation, [x.shape for x in xs])
    # numpy's einsum wants letters: map the ellipsis digits to unused capitals
    free = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec.sizes)
    rename = {c: next(free) for c in spec.sizes if c.isdigit()}
    sub = lambda t: "".join(rename.get(c, c) for c in t)  # noqa: E731
    eq = ",".join(sub(t) for t in spec.inputs) + "->" + sub(spec.output)
    acc = accumulator_dtype(xs[0].dtype)
    return np.einsum(eq, *[x.astype(acc, copy=False) for x in xs]).astype(xs[0].dtype)
