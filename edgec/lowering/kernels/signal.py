"""Kernel builders of the signal and sampling family (edgec/ir/ops/signal.py): window functions,
DFT, STFT, GridSample and AffineGrid.

The transforms are direct sums X[k] = sum_j x[j] (cos - +i sin)(2 pi j k / n) in float64 over a
constant table of cos and sin of 2 pi r / n, r = j k mod n, so no angle is ever large; the real
inverse of a half spectrum counts each bin 0 < k < n / 2 twice (its mirror image). GridSample
maps each output point to per-axis taps (index, weight, in-range flag) once, then for every
channel sums the weighted taps, nested axis by axis in the order of the numpy reference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...ir.ops.signal import (
    CUBIC_A,
    WINDOWS,
    base_grid,
    dft_geometry,
    grid_borders,
    stft_geometry,
)
from ...ir.types import TensorType
from ...kernel_ir.kernel import INDEX, Buffer, Expr, call, cast, const, maximum, minimum, select
from ..lower import NodeKernelBuilder, kernel
from .common import named, row_major_strides

F32, F64 = DType.F32, DType.F64


def _window(kb: NodeKernelBuilder, node: Node) -> None:
    """w[i] = a0 - a1 cos(2 pi i / N') + a2 cos(4 pi i / N') in float64, rounded through
    float32 as the reference is."""
    y = kb.bind(node.output, "w")
    size = y.shape[0]
    a0, a1, a2 = WINDOWS[node.op]
    den = size if node.attrs["periodic"] else size - 1
    with kb.loop(size, "i") as i:
        angle = kb.local("angle", cast(i, F64) * const(2 * math.pi / den if den else math.inf,
                                                       F64))
        v = const(a0, F64) - const(a1, F64) * call("cos", angle)
        if a2:
            v = v + const(a2, F64) * call("cos", angle * 2.0)
        kb.store(y, i, cast(v, F32))


for _op in WINDOWS:
    kernel(_op)(_window)


# -- DFT and STFT -------------------------------------------------------------------------------

def _twiddles(kb: NodeKernelBuilder, node: Node, n: int) -> tuple[Buffer, Buffer]:
    """Constant tables cos(2 pi r / n) and sin(2 pi r / n), r < n, in float64; the angles that
    are multiples of pi / 2 get their exact values."""
    cache = node.meta.setdefault("twiddles", {})
    if n not in cache:
        r = np.arange(n)
        angle = 2 * np.pi * r / n
        cos, sin = np.cos(angle), np.sin(angle)
        quarter = (4 * r) % n == 0
        cos[quarter] = np.round(cos[quarter])
        sin[quarter] = np.round(sin[quarter])
        cache[n] = [Value(f"{node.name}_{nm}{n}", TensorType((n,), F64), arr)
                    for nm, arr in (("cos", cos), ("sin", sin))]
    return kb.bind(cache[n][0], "cos"), kb.bind(cache[n][1], "sin")


def _complex_at(x: Buffer, index: Expr, complex_in: bool) -> tuple[Expr, Expr]:
    """(real, imaginary) of element `index` of a [..., 1 or 2] signal, in float64."""
    re = cast(x[index * (2 if complex_in else 1)], F64)
    im = cast(x[index * 2 + 1], F64) if complex_in else const(0.0, F64)
    return re, im


def _dft_sum(kb: NodeKernelBuilder, x: Buffer, tw: tuple[Buffer, Buffer], n: int, count: int,
             k: Expr, at, complex_in: bool, inverse: bool, scale=None) -> tuple[Expr, Expr]:
    """sum over j < count of x[at(j)] e^(-+2 pi i j k / n) as float64 (re, im) locals;
    `scale(j)` weights x[at(j)] (a window)."""
    cos, sin = tw
    re, im = kb.local("re", const(0.0, F64)), kb.local("im", const(0.0, F64))
    with kb.loop(count, "j") as j:
        r = named(kb, "r", (j * k) % n)
        a, b = _complex_at(x, at(j), complex_in)
        if scale is not None:
            w = named(kb, "win", cast(scale(j), F64))
            a, b = a * w, (b * w if complex_in else b)
        a, b = named(kb, "a", a), named(kb, "b", b) if complex_in else b
        c, s = cos[r], sin[r]
        if inverse:
            kb.assign(re, re + (a * c - b * s if complex_in else a * c))
            kb.assign(im, im + (a * s + b * c if complex_in else a * s))
        else:
            kb.assign(re, re + (a * c + b * s if complex_in else a * c))
            kb.assign(im, im + (b * c - a * s if complex_in else -(a * s)))
    return re, im


@kernel("DFT")
def dft(kb: NodeKernelBuilder, node: Node) -> None:
    """x viewed as [outer, m, inner, 1 or 2] around the axis; per (outer, bin, inner) one
    direct sum over the first min(m, n) samples (zero padding costs nothing)."""
    x_v, at = node.inputs[0], node.attrs
    length, axis = (None if node.input(i) is None else int(node.input(i).const.reshape(()))
                    for i in (1, 2))
    shape = x_v.shape
    a, n, out = dft_geometry(shape, length, -2 if axis is None else axis, at["inverse"],
                             at["onesided"])
    outer, m, inner = math.prod(shape[:a]), shape[a], math.prod(shape[a + 1:-1])
    complex_in = shape[-1] == 2
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    tw = _twiddles(kb, node, n)
    bins = out[a]
    with kb.loops([outer, bins, inner], ["o", "k", "i"]) as (o, k, i):
        def at_(j: Expr) -> Expr:
            return (o * m + j) * inner + i

        dst = (o * bins + k) * inner + i
        if at["inverse"] and at["onesided"]:
            # real inverse: bins 0 < k < n/2 stand for themselves and their mirror n - k
            kmax = min(m, n // 2 + 1)
            cos, sin = tw
            acc = kb.local("acc", const(0.0, F64))
            with kb.loop(kmax, "j") as j:
                r = named(kb, "r", (j * k) % n)
                re, im = _complex_at(x, at_(j), complex_in)
                twice = (j > 0) & (j * 2).ne(n)
                term = re * cos[r] - im * sin[r] if complex_in else re * cos[r]
                kb.assign(acc, acc + select(twice, term * 2.0, term))
            kb.store(y, dst, acc / float(n))
        else:
            re, im = _dft_sum(kb, x, tw, n, min(m, n), k, at_, complex_in, bool(at["inverse"]))
            if at["inverse"]:
                re, im = re / float(n), im / float(n)
            kb.store(y, dst * 2, re)
            kb.store(y, dst * 2 + 1, im)


@kernel("STFT")
def stft(kb: NodeKernelBuilder, node: Node) -> None:
    """Per (batch, frame, bin): the direct DFT sum over the frame's samples times the window."""
    x_v, at = node.inputs[0], node.attrs
    w_v = node.input(2)
    step = int(node.input(1).const.reshape(()))
    flen = None if node.input(3) is None else int(node.input(3).const.reshape(()))
    frames, flen, bins = stft_geometry(x_v.shape, step, None if w_v is None else w_v.shape[0],
                                       flen, at["onesided"])
    batch, length, ci = x_v.shape
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    win = kb.bind(w_v, "window") if w_v is not None else None
    tw = _twiddles(kb, node, flen)
    with kb.loops([batch, frames, bins], ["b", "f", "k"]) as (b, f, k):
        start = named(kb, "start", b * length + f * step)
        re, im = _dft_sum(kb, x, tw, flen, flen, k, lambda j: start + j, ci == 2, False,
                          None if win is None else (lambda j: win[j]))
        dst = ((b * frames + f) * bins + k) * 2
        kb.store(y, dst, re)
        kb.store(y, dst + 1, im)


# -- GridSample ---------------------------------------------------------------------------------

def _reflect(kb: NodeKernelBuilder, p: Expr, lo: float, hi: float, name: str) -> Expr:
    """p reflected by the borders lo and hi until it lies between them."""
    dt = p.dtype
    span = hi - lo
    if span <= 0:
        return const(lo, dt)
    p = named(kb, f"{name}_p", p)
    below, above = p < lo, p > hi
    d = kb.local(f"{name}_d", select(below, const(lo, dt) - p,
                                     select(above, p - const(hi, dt), const(0.0, dt))))
    flips = kb.local(f"{name}_f", call("floor", d / const(span, dt)))
    r = kb.local(f"{name}_r", d - flips * const(span, dt))
    odd = call("fmod", flips, const(2.0, dt)).eq(1.0)
    from_lo = select(odd, const(hi, dt) - r, const(lo, dt) + r)
    from_hi = select(odd, const(lo, dt) + r, const(hi, dt) - r)
    return kb.local(f"{name}_x", select(below, from_lo, select(above, from_hi, p)))


def _cubic_weights(t: Expr) -> list[Expr]:
    a = CUBIC_A
    one = const(1.0, t.dtype)

    def near(d: Expr) -> Expr:
        return (const(a + 2, t.dtype) * d - const(a + 3, t.dtype)) * d * d + one

    def far(d: Expr) -> Expr:
        return ((const(a, t.dtype) * d - const(5 * a, t.dtype)) * d
                + const(8 * a, t.dtype)) * d - const(4 * a, t.dtype)

    return [far(t + one), near(t), near(one - t), far(const(2.0, t.dtype) - t)]


def _grid_taps(kb: NodeKernelBuilder, g: Expr, size: int, attrs: dict, name: str):
    """[(address, weight or None, in-range flag or None)] of one axis at grid value `g`."""
    mode, padding, ac = attrs["mode"], attrs["padding_mode"], attrs["align_corners"]
    one, two = const(1.0, F32), const(2.0, F32)
    if ac:
        p = (g + one) / two * const(float(size - 1), F32)
    else:
        p = ((g + one) * const(float(size), F32) - one) / two
    p = kb.local(f"p{name}", p)
    if mode == "nearest":
        p = kb.local(f"q{name}", call("round", p))
    lo, hi = grid_borders(size, ac)
    if padding == "border" and mode != "cubic":
        p = kb.local(f"c{name}", minimum(maximum(p, const(0.0, F32)), const(size - 1.0, F32)))
    elif padding == "reflection":
        p = _reflect(kb, p, lo, hi, f"r{name}")
    if mode == "nearest":
        raw = [(kb.local(f"i{name}", cast(p, INDEX)), None)]
    else:
        base = kb.local(f"f{name}", call("floor", p))
        t = kb.local(f"t{name}", p - base)
        i0 = kb.local(f"i{name}", cast(base, INDEX))
        if mode == "linear":
            raw = [(i0, const(1.0, F32) - t), (i0 + 1, t)]
        else:
            raw = [(i0 + (k - 1), w) for k, w in enumerate(_cubic_weights(t))]
    taps = []
    for k, (idx, w) in enumerate(raw):
        valid = None
        if padding == "zeros":
            valid = named(kb, f"v{name}_{k}", (idx >= 0) & (idx < size))
        elif padding == "reflection":
            idx = kb.local(f"j{name}_{k}",
                           cast(_reflect(kb, cast(idx, F32), lo, hi, f"r{name}_{k}"), INDEX))
        addr = named(kb, f"a{name}_{k}", minimum(maximum(idx, 0), size - 1))
        taps.append((addr, None if w is None else named(kb, f"w{name}_{k}", w), valid))
    return taps


@kernel("GridSample")
def grid_sample(kb: NodeKernelBuilder, node: Node) -> None:
    """Per (image, output point): the taps of each axis (grid component nsp - 1 - axis); per
    channel, the weighted sum of the taps, the first axis outermost; a tap out of range reads
    0 under zeros padding."""
    x_v, g_v = node.inputs
    n_, c_, *sizes = x_v.shape
    nsp = len(sizes)
    points = math.prod(g_v.shape[1:-1])
    x, grid, y = kb.bind(x_v, "x"), kb.bind(g_v, "grid"), kb.bind(node.output, "y")
    plane = math.prod(sizes)
    strides = row_major_strides(sizes)
    with kb.loops([n_, points], ["n", "p"]) as (n, p):
        taps = [_grid_taps(kb, cast(grid[(n * points + p) * nsp + (nsp - 1 - a)], F32), size,
                           node.attrs, str(a))
                for a, size in enumerate(sizes)]
        with kb.loop(c_, "c") as c:
            src = named(kb, "src", (n * c_ + c) * plane)

            def interp(a: int, addr: Expr, valid: Sequence[Expr]) -> Expr:
                if a == nsp:
                    v = cast(x[src + addr], F32)
                    if valid:
                        ok = valid[0]
                        for f in valid[1:]:
                            ok = ok & f
                        v = select(ok, v, const(0.0, F32))
                    return v
                total = None
                for idx, w, ok in taps[a]:
                    term = interp(a + 1, addr + idx * strides[a],
                                  [*valid, ok] if ok is not None else valid)
                    term = term if w is None else w * term
                    total = term if total is None else total + term
                return total

            kb.store(y, (n * c_ + c) * points + p, interp(0, const(0), []))


@kernel("AffineGrid")
def affine_grid(kb: NodeKernelBuilder, node: Node) -> None:
    """grid[n, point, k] = sum_j theta[n, k, j] * base_j + theta[n, k, nsp] in float64, the
    base coordinates start + i * step as the reference's arange makes them."""
    theta_v = node.inputs[0]
    n_, nsp = theta_v.shape[0], theta_v.shape[1]
    sizes = node.output.shape[1:-1]
    theta, y = kb.bind(theta_v, "theta"), kb.bind(node.output, "grid")
    ac = node.attrs["align_corners"]
    with kb.loops([n_, *sizes], ["n", *(f"s{a}" for a in range(nsp))]) as (n, *idx):
        base = []
        for a, (i, size) in enumerate(zip(idx, sizes, strict=True)):
            first = base_grid(size, ac)[0]
            step = (2.0 / (size - 1) if size > 1 else 0.0) if ac else 2.0 / size
            base.append(named(kb, f"b{a}", const(first, F64) + cast(i, F64) * step))
        coords = base[::-1]  # x (last axis) first
        point = 0
        for i, size in zip(idx, sizes, strict=True):
            point = point * size + i
        for k in range(nsp):
            row = (n * nsp + k) * (nsp + 1)
            acc = None
            for j, b in enumerate(coords):
                term = cast(theta[row + j], F64) * b
                acc = term if acc is None else acc + term
            acc = acc + cast(theta[row + nsp], F64)
            kb.store(y, (n * math.prod(sizes) + point) * nsp + k, cast(acc, F32))
