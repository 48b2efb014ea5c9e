"""Kernel builders of the pools: MaxPool and AveragePool row by row like the convolutions
(taps in the padding cut off by loop bounds), and the global pools.
"""

from __future__ import annotations

import math

from ...ir.graph import Node
from ...kernel_ir.kernel import (
    Expr,
    cast,
    const,
    select,
)
from ..lower import SCALARS, NodeKernelBuilder, kernel
from ..strategies import Candidate, Kind
from .common import (
    _axis_names,
    _lowest,
    independent_loops,
    named,
    offset,
    row_major_strides,
    window,
)
from .pool_unit import pool_unit, pool_unit_candidate

# -- pooling --------------------------------------------------------------------------------

def _pool(kb: NodeKernelBuilder, node: Node, kind: str) -> None:
    """MaxPool / AveragePool, row by row like Conv. Taps outside the input are skipped (max:
    padding never wins); the average divides by the taps inside the input, or inside the
    explicit pads with count_include_pad (never the cells ceil mode hangs past them)."""
    x_v, y_v = node.inputs[0], node.outputs[0]
    ind_v = node.outputs[1] if len(node.outputs) > 1 else None
    ksz, strides = node.attrs["kernel_shape"], node.attrs["strides"]
    dil, pads = node.attrs["dilations"], node.attrs["pads"]
    n_, c_, *isp = x_v.shape
    osp = list(y_v.shape[2:])
    nsp = len(ksz)
    x = kb.bind(x_v, "x")
    y = kb.bind(y_v, "y")
    ind = kb.bind(ind_v, "ind") if ind_v is not None else None
    xs, ys = row_major_strides(x_v.shape), row_major_strides(y_v.shape)
    names = _axis_names(nsp)
    with_pad = kind == "avg" and node.attrs["count_include_pad"]

    def taps(i: int, o: Expr, what: str, bases=None) -> tuple[Expr, Expr]:
        bases = bases if bases is not None else range(0, osp[i] * strides[i], strides[i])
        if what == "count" and with_pad:  # positions inside [-p0, n + p1)
            return window(kb, f"k{names[i]}", o * strides[i], 0, dil[i],
                          isp[i] + pads[i] + pads[i + nsp], ksz[i], bases)
        return window(kb, f"k{names[i]}", o * strides[i], -pads[i], dil[i], isp[i], ksz[i],
                      bases)

    if kb.gpu_rows:  # a GPU thread an output element, over its taps inside the input
        kb.strategy = "pooling, a GPU thread an output"
        with independent_loops(kb, [n_, c_, *osp], ["n", "c", *(f"o{a}" for a in names)],
                               math.prod(ksz)) as (n, c, *oo):
            rng = [taps(i, o, "read") for i, o in enumerate(oo)]
            acc = kb.local("acc", _lowest(y.dtype) if kind == "max" else const(0, y.dtype))
            best = kb.local("best", const(-1, ind.dtype)) if ind is not None else None
            with kb.loops([t[1] for t in rng], [f"k{a}" for a in names]) as kk:
                ipos = [named(kb, f"i{a}", o * s + (t[0] + k) * d - p) for a, o, t, k, s, d, p
                        in zip(names, oo, rng, kk, strides, dil, pads, strict=False)]
                v = named(kb, "v", x[offset([n, c, *ipos], xs)])
                if kind == "avg":
                    kb.assign(acc, acc + v)
                else:
                    if best is not None:  # the first maximum wins, as in the reference
                        st = (row_major_strides(isp) if not node.attrs["storage_order"]
                              else row_major_strides(isp[::-1])[::-1])
                        flat = (n * c_ + c) * math.prod(isp) + offset(ipos, st)
                        kb.assign(best, select(v > acc, cast(flat, best.dtype), best))
                    kb.assign(acc, select(v > acc, v, acc))
            at = named(kb, "at", offset([n, c, *oo], ys))
            if kind == "avg":
                count = const(1)
                for i, o in enumerate(oo):
                    count = count * (taps(i, o, "count")[1] if with_pad else rng[i][1])
                kb.assign(acc, acc / cast(count, y.dtype))
            kb.store(y, at, acc)
            if best is not None:
                kb.store(ind, at, best)
        return
    with independent_loops(kb, [n_, c_, *osp[:-1]], ["n", "c", *(f"o{a}" for a in names[:-1])],
                           osp[-1] * math.prod(ksz)) as vs:
        n, c, *oo = vs
        rng = [taps(i, o, "read") for i, o in enumerate(oo)]
        yrow = named(kb, "yrow", offset([n, c, *oo, 0], ys))
        with kb.loop(osp[-1], "ow") as ow:
            kb.store(y, yrow + ow, _lowest(y.dtype) if kind == "max" else const(0, y.dtype))
            if ind is not None:
                kb.store(ind, yrow + ow, const(-1, ind.dtype))
        with kb.loops([t[1] for t in rng], [f"k{a}" for a in names[:-1]]) as kk:
            ipos = [o * s + (t[0] + k) * d - p
                    for o, t, k, s, d, p in zip(oo, rng, kk, strides, dil, pads, strict=False)]
            xrow = named(kb, "xrow", offset([n, c, *ipos, 0], xs))
            with kb.loop(ksz[-1], f"k{names[-1]}") as kw:
                lo, cnt = window(kb, f"o{names[-1]}", kw * dil[-1], -pads[nsp - 1],
                                 strides[-1], isp[-1], osp[-1], range(0, ksz[-1] * dil[-1],
                                                                      dil[-1]))
                with kb.loop(cnt, "j") as j:
                    ow = lo + j
                    iw = ow * strides[-1] + kw * dil[-1] - pads[nsp - 1]
                    v, yi = x[xrow + iw], yrow + ow
                    if kind == "avg":
                        kb.store(y, yi, y[yi] + v)
                    elif ind is not None:  # the first maximum wins, as in the reference
                        spatial = [*ipos, iw]
                        st = (row_major_strides(isp) if not node.attrs["storage_order"]
                              else row_major_strides(isp[::-1])[::-1])
                        flat = (n * c_ + c) * math.prod(isp) + offset(spatial, st)
                        kb.store(ind, yi, select(v > y[yi], cast(flat, ind.dtype), ind[yi]))
                    if kind == "max":
                        kb.store(y, yi, select(v > y[yi], v, y[yi]))
        if kind == "avg":
            outer = const(1)
            for i, o in enumerate(oo):
                outer = outer * (taps(i, o, "count")[1] if with_pad else rng[i][1])
            with kb.loop(osp[-1], "ow") as ow:
                cnt = taps(nsp - 1, ow, "count")[1]
                kb.store(y, yrow + ow, y[yrow + ow] / cast(outer * cnt, y.dtype))


@kernel("MaxPool")
def max_pool(kb: NodeKernelBuilder, node: Node) -> None:
    if kb.target.arch == "hls" and (kb.forced is None or kb.forced.kind is Kind.HLS_POOL):
        chosen = kb.choose([pool_unit_candidate(node), Candidate.of(Kind.DIRECT)])
        if chosen.kind is Kind.HLS_POOL:
            pool_unit(kb, node, int(chosen["simd"]))
            return
    _pool(kb, node, "max")


@kernel("AveragePool")
def average_pool(kb: NodeKernelBuilder, node: Node) -> None:
    _pool(kb, node, "avg")


def _global_pool(kb: NodeKernelBuilder, node: Node, kind: str) -> None:
    x_v = node.inputs[0]
    rows, plane = math.prod(x_v.shape[:2]), math.prod(x_v.shape[2:])
    x, y = kb.bind(x_v, "x"), kb.bind(node.output, "y")
    with independent_loops(kb, [rows], ["r"], plane) as (r,):
        acc = kb.local("acc", x[r * plane] if kind == "max" else const(0, y.dtype))
        with kb.loop(plane - 1 if kind == "max" else plane, "p") as p:
            v = x[r * plane + p + (1 if kind == "max" else 0)]
            kb.assign(acc, SCALARS["Max"](acc, v) if kind == "max" else acc + v)
        kb.store(y, r, acc if kind == "max" else acc / const(plane, y.dtype))


@kernel("GlobalAveragePool")
def global_average_pool(kb: NodeKernelBuilder, node: Node) -> None:
    _global_pool(kb, node, "avg")


@kernel("GlobalMaxPool")
def global_max_pool(kb: NodeKernelBuilder, node: Node) -> None:
    _global_pool(kb, node, "max")
