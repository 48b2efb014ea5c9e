"""The sparse convolution tile: R output channels x V vectors of L flattened output pixels
over a staged input (ir/sparse.py), one stored block of R x C weights at a time:

    for each block j of the block row:  o = offsets[j]
        for each of its C columns c:     (their planes `cstep` elements apart)
            xv[v] = x[o + c*cstep + v*L ...]                  V loads, shared by the R rows
            acc[r][v] += values[(j*C + c)*R + r] * xv[v]      R broadcasts, R*V FMAs

The N:M tile computes one output channel whose weights come N to each group of M input
channels at one tap: per group j, its offset o = base[j] (a table all channels share), then
for each of its N entries the input channel within the group from a byte:

    for each group j:  o = base[j]
        for t < N:  xv[v] = x[o + idx[j*N + t]*cstep + v*L ...]; acc[v] += values[j*N + t] * xv[v]

The sums go to a scratch row s[r * lds + v*L ...], partial until the last chunk of input
planes; the caller drops the Wq - OW columns and applies the epilogue while it copies them
out. A band's last tile has as many vectors as its pixels need, its last one masked to
`count` pixels, so no read passes the staged input's end.
"""

from __future__ import annotations

from ..ir.dtypes import DType
from ..kernel_ir.kernel import INDEX, Kernel, KernelBuilder, broadcast, cast, fma, vload
from .microkernels import _cached

F32, I32, U8 = DType.F32, DType.I32, DType.U8


def sparse_conv_tile(lanes: int, rows: int, nv: int, masked: bool, cols: int = 1) -> Kernel:
    """The tile (see the module doc). It starts from zero where `first` is not 0, else from
    the partial sums in s (an earlier chunk of input planes); `masked`: the last vector
    reads only its first `count` pixels; blocks of `cols` > 1 columns take `cstep` (after
    `first`, before `count`)."""
    key = ("spconv", lanes, rows, nv, masked, cols)

    def build() -> Kernel:
        shape = f"r{rows}" + (f"c{cols}" if cols > 1 else "")
        name = f"mk_spconv_f32x{lanes}_{shape}_v{nv}{'_tail' if masked else ''}"
        kb = KernelBuilder(name, f"sparse conv tile: {rows} channels x {nv} vectors of "
                                 f"{lanes} pixels, blocks of {cols} inputs")
        x, vals = kb.pointer("x", F32), kb.pointer("vals", F32)
        offs = kb.pointer("offs", I32)
        s = kb.pointer("s", F32, "out")
        nnz, lds, first = kb.scalar("nnz"), kb.scalar("lds"), kb.scalar("first")
        cstep = kb.scalar("cstep") if cols > 1 else None
        counts = [None] * nv
        if masked:
            counts[-1] = kb.scalar("count")
        acc = [[kb.local(f"acc{r}_{v}_", broadcast(0.0, lanes)) for v in range(nv)]
               for r in range(rows)]
        with kb.if_(first.eq(0)):
            for r in range(rows):
                for v in range(nv):
                    kb.assign(acc[r][v], vload(s, r * lds + v * lanes, lanes))
        with kb.loop(nnz, "j") as j:
            o = kb.local("o", cast(offs[j], INDEX))
            for c in range(cols):
                oc = o if c == 0 else kb.local("oc", o + c * cstep)
                xv = [kb.local(f"x{v}_", vload(x, oc + v * lanes, lanes, counts[v]))
                      for v in range(nv)]
                for r in range(rows):
                    wb = kb.local(f"w{r}_", broadcast(vals[(j * cols + c) * rows + r], lanes))
                    for v in range(nv):
                        kb.assign(acc[r][v], fma(wb, xv[v], acc[r][v]))
        for r in range(rows):
            for v in range(nv):
                kb.store(s, r * lds + v * lanes, acc[r][v])
        return kb.build()

    return _cached(key, build)


def sparse_nm_tile(lanes: int, n: int, nv: int, masked: bool) -> Kernel:
    """The N:M tile (see the module doc): one channel, `nv` vectors of pixels, over `ngroups`
    groups; `first` and `count` as in sparse_conv_tile."""
    key = ("spconv_nm", lanes, n, nv, masked)

    def build() -> Kernel:
        name = f"mk_spconv_nm_f32x{lanes}_n{n}_v{nv}{'_tail' if masked else ''}"
        kb = KernelBuilder(name, f"N:M sparse conv tile: {n} weights a group, {nv} vectors "
                                 f"of {lanes} pixels")
        x, vals = kb.pointer("x", F32), kb.pointer("vals", F32)
        idx, base = kb.pointer("idx", U8), kb.pointer("base", I32)
        s = kb.pointer("s", F32, "out")
        ngroups, first, cstep = kb.scalar("ngroups"), kb.scalar("first"), kb.scalar("cstep")
        counts = [None] * nv
        if masked:
            counts[-1] = kb.scalar("count")
        acc = [kb.local(f"acc{v}_", broadcast(0.0, lanes)) for v in range(nv)]
        with kb.if_(first.eq(0)):
            for v in range(nv):
                kb.assign(acc[v], vload(s, v * lanes, lanes))
        with kb.loop(ngroups, "j") as j:
            o = kb.local("o", cast(base[j], INDEX))
            for t in range(n):
                oc = kb.local("oc", o + cast(idx[j * n + t], INDEX) * cstep)
                wb = kb.local("w", broadcast(vals[j * n + t], lanes))
                for v in range(nv):
                    xv = kb.local(f"x{v}_", vload(x, oc + v * lanes, lanes, counts[v]))
                    kb.assign(acc[v], fma(wb, xv, acc[v]))
        for v in range(nv):
            kb.store(s, v * lanes, acc[v])
        return kb.build()

    return _cached(key, build)
