"""What the kernel builders share: strides and offsets, operands and fused epilogues, loop
windows that cut taps in the padding off by their bounds, named locals, and constants derived
at compile time (weight layouts).

Taps that land in padding are cut off by loop bounds computed once per row or pixel
(`window`), never tested in an inner loop: j in [0, extent) reads position a + j*step,
valid iff 0 <= a + j*step < limit, i.e.
j in [ceil(max(0, -a) / step), min(extent, ceil(max(0, limit - a) / step))).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ...ir.dtypes import DType
from ...ir.encodings import weight_codes
from ...ir.graph import Value
from ...ir.types import TensorType
from ...kernel_ir.kernel import (
    Buffer,
    Expr,
    LoopKind,
    const,
    maximum,
    minimum,
)
from ..lower import NodeKernelBuilder, operand

Activation = Callable[[Expr], Expr]


# -- indexing helpers -----------------------------------------------------------------------

def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def broadcast_strides(shape: Sequence[int], out_shape: Sequence[int]) -> tuple[int, ...]:
    """Strides of a row-major `shape` read at `out_shape` coordinates (numpy broadcasting):
    0 along dims the operand broadcasts over."""
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    return tuple(0 if d == 1 else s for d, s in zip(padded, row_major_strides(padded), strict=True))


def offset(coords: Sequence, strides: Sequence[int]) -> Expr:
    e = const(0)
    for c, s in zip(coords, strides, strict=True):
        if s:
            e = e + c * s
    return e


@contextmanager
def independent_loops(kb: NodeKernelBuilder, extents: Sequence[int], names: Sequence[str],
                      per: int):
    """Nested loops over `extents` whose iterations write apart (`per` elements of work
    each): on a GPU target one parallel loop over all of them, a thread each, its index
    taken apart into the loop variables; elsewhere plain loops. Yields the variables."""
    if not kb.gpu_rows:
        with kb.loops(list(extents), list(names)) as vs:
            yield vs
        return
    with kb.rows(math.prod(extents), per, "t") as t:
        yield [named(kb, nm, t // st % ext) for nm, st, ext in
               zip(names, row_major_strides(extents), extents, strict=True)]


# warps per block of `warp_rows` launches (a row each)
WARP_ROWS_PER_BLOCK = 8


@contextmanager
def warp_rows(kb: NodeKernelBuilder, rows: int):
    """On a GPU target, a launch of a warp per row: blocks of up to WARP_ROWS_PER_BLOCK
    warps, the threads of a warp (its lanes) striding along their row together and meeting
    in `KernelBuilder.warp_reduce`s. Yields (row, lane, warp width); a warp past the last
    row skips its row whole, so its exchanges stay in step."""
    width = kb.target.gpu.warp
    per = min(WARP_ROWS_PER_BLOCK, rows)
    blocks = -(-rows // per)
    with kb.loop(blocks, "rb", kind=LoopKind.GRID) as b, \
            kb.loop(per, "w", kind=LoopKind.BLOCK) as w, \
            kb.loop(width, "lane", kind=LoopKind.BLOCK) as lane:
        row = named(kb, "row", b * per + w)
        if rows % per:
            with kb.if_(row < rows):
                yield row, lane, width
        else:
            yield row, lane, width


@contextmanager
def lane_steps(kb: NodeKernelBuilder, lane: Expr, width: int, n: int, name: str = "j"):
    """The elements lane `lane` of a warp takes of a row of `n`: lane, lane + width, ...
    Yields the element index."""
    with kb.loop(-(-n // width), "a" + name) as a:
        j = named(kb, name, a * width + lane)
        if n % width:
            with kb.if_(j < n):
                yield j
        else:
            yield j


def parallel_split(n: int, grain: int = 16384, most: int = 64) -> tuple[int, int]:
    """(tasks, elements per task) for a loop of `n` elements on the thread pool: the most
    tasks (up to `most`) that divide n evenly with at least `grain` elements each; (1, n)
    for a loop too small to be worth waking the pool. A kernel left serial between parallel
    ones also lets the workers fall asleep, and the next kernel pays their waking (ResNet-18
    int8: each 7 us padding ran 17-20 us at two threads after a serial residual add)."""
    tasks = max((t for t in range(1, most + 1) if n % t == 0 and n // t >= grain), default=1)
    return tasks, n // tasks


@dataclass(frozen=True)
class Operand:
    """A tensor read at output coordinates; a one-element constant is a literal."""

    src: Buffer | Expr
    strides: tuple[int, ...]

    def at(self, coords: Sequence) -> Expr:
        if isinstance(self.src, Expr):
            return self.src
        return self.src[offset(coords, self.strides)]


def bind_operand(kb: NodeKernelBuilder, value: Value, name: str,
                 out_shape: Sequence[int]) -> Operand:
    return Operand(operand(kb, value, name), broadcast_strides(value.shape, out_shape))


@dataclass
class Epilogue:
    """y = act(scale * acc + sum(factor * addend)), applied to an accumulator before its
    final store. Coordinates are those of the node's output."""

    scale: float = 1.0
    addends: list[tuple[Operand, float]] = field(default_factory=list)
    activation: Activation | None = None

    @property
    def is_identity(self) -> bool:
        return self.scale == 1.0 and not self.addends and self.activation is None

    def __call__(self, kb: NodeKernelBuilder, acc: Expr, coords: Sequence) -> Expr:
        v = acc if self.scale == 1.0 else acc * const(self.scale, acc.dtype)
        for opd, factor in self.addends:
            t = opd.at(coords)
            v = v + (t if factor == 1.0 else t * const(factor, acc.dtype))
        if self.activation is None:
            return v
        return self.activation(named(kb, "v", v))  # activations read their input twice


def window(kb: NodeKernelBuilder, name: str, base: Expr, off: int, step: int, limit: int,
           extent: int, bases: Sequence[int]) -> tuple[Expr, Expr]:
    """(first, count) of the j in [0, extent) whose position base + off + j*step lies in
    [0, limit). `bases` lists the values `base` takes; bounds that never cut fold away."""
    lo, hi = const(0), const(extent)
    if not len(bases):
        return lo, const(0)
    if min(bases) + off < 0:
        lo = kb.local(f"{name}_lo", _ceil_div(maximum(const(-off) - base, 0), step))
    if max(bases) + off + (extent - 1) * step >= limit:
        room = const(limit - off) - base  # may be negative only when the pads are wide
        hi = minimum(_ceil_div(room if limit - off - max(bases) >= 0 else maximum(room, 0),
                               step), extent)
    if lo.is_const and hi.is_const:
        return lo, hi - lo
    return lo, kb.local(f"{name}_n", hi - lo)


def named(kb: NodeKernelBuilder, name: str, e: Expr) -> Expr:
    """`e` held in a local (read once, printed once) unless it is a variable or constant."""
    return e if e.op in ("var", "const") else kb.local(name, e)


def _letter(k: int) -> str:
    """a, b, ..., z, ba, bb, ...: a base-26 name that ends in a letter."""
    return (_letter(k // 26) if k >= 26 else "") + chr(ord("a") + k % 26)


def _ceil_div(e: Expr, d: int) -> Expr:
    return (e + (d - 1)) // d


def _axis_names(nsp: int) -> list[str]:
    return list("dhw"[-nsp:]) if nsp <= 3 else [str(i) for i in range(nsp)]


def _lowest(dtype: DType) -> Expr:
    return const(-math.inf if dtype.is_float else np.iinfo(dtype.np).min, dtype)


def derived_constant(kb: NodeKernelBuilder, source: Value, key: str,
                     make: Callable[[np.ndarray], np.ndarray], name: str = "wp") -> Buffer:
    """A buffer for a compile-time transform of constant `source` (a weight layout), made
    once per source and layout so that nodes sharing a weight share its transform; its type
    is the transform's (int8 codes of a float weight: int8)."""
    cache = source.meta.setdefault("derived_constants", {})
    if key not in cache:
        arr = make(source.const)
        arr.setflags(write=False)
        cache[key] = Value(f"{source.name}_{key}",
                           TensorType(arr.shape, DType.from_numpy(arr.dtype)), arr)
    return kb.bind(cache[key], name)


# a weight whose float values take fewer bytes is not stored as codes: a few kilobytes to
# save, against a conversion that is not free where a tile reads the weight once or twice
CODES_MIN_BYTES = 16 * 1024


def weight_codes_along(value: Value, axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(int8 codes, one scale per index of `axis`: the kernel's output channels) of a float
    constant weight recorded by `dequantize-weights` (`WeightCodes`), for a tile that stores
    them and converts in registers; None where the weight has none, takes under
    CODES_MIN_BYTES as float, or has scales that vary along another axis."""
    small = value.type.numel * value.dtype.itemsize < CODES_MIN_BYTES
    wc = weight_codes(value) if value.is_const and not small else None
    scales = wc.channel_scales(axis) if wc is not None else None
    return None if scales is None else (wc.codes, scales)


def code_scales(kb: NodeKernelBuilder, source: Value, scales: np.ndarray, padded: int) -> Buffer:
    """The codes' scales of `source`'s output channels, zero past them up to `padded`."""
    def make(_):
        out = np.zeros(padded, np.float32)
        out[:scales.size] = scales
        return out

    return derived_constant(kb, source, f"scales{padded}", make, "s")
