"""Kernel builders of sparse convolution (ops: ir/ops/sparse.py; layouts: ir/sparse.py).

SparseMatMul gathers: per slice of C outputs (sliced ELLPACK), each stored column is C values
against C inputs of A's row, read by one gather.

ConvStage copies each input plane into its padded stride phases, row by row (vector copies
where the stride along the row is 1). SparseConv runs, per task (image, block row of R output
channels, band of output rows), the sparse tile (microkernels_sparse.py) over the band's
flattened pixels into a scratch row, then copies the OW kept columns of each output row to y
through the epilogue act(sum + bias + residual). Tasks go to the thread pool.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.graph import Node
from ...ir.ops.sparse import staging_of
from ...ir.sparse import (
    ConvTasks,
    NMWeights,
    SlicedWeights,
    SparseWeights,
    block_row_work,
    channel_order_work,
    conv_encoding,
)
from ...kernel_ir.kernel import INDEX, broadcast, cast, const, fma, minimum, vgather, vload
from ..lower import NodeKernelBuilder, kernel
from ..microkernels import _apply
from ..microkernels_sparse import sparse_conv_tile, sparse_nm_tile
from ..strategies import Candidate, Kind
from .activation import activation_of
from .common import derived_constant, parallel_split

F32 = DType.F32


def _valid(off: int, step: int, limit: int, extent: int) -> tuple[int, int]:
    """(first, count) of the j in [0, extent) with 0 <= off + j*step < limit."""
    lo = min(extent, max(0, -(off // step)))
    hi = min(extent, max(0, -(-(limit - off) // step)))
    return lo, max(0, hi - lo)


def _copy_row(kb: NodeKernelBuilder, dst, d0, src, s0, n: int, step: int, lanes: int) -> None:
    """dst[d0 + j] = src[s0 + j*step] for j < n: vectors with a masked tail where step is 1."""
    if step == 1 and lanes > 1:
        with kb.loop(-(-n // lanes), "v") as v:
            cnt = minimum(n - v * lanes, lanes) if n % lanes else None
            kb.store(dst, d0 + v * lanes, vload(src, s0 + v * lanes, lanes, cnt), cnt)
        return
    with kb.loop(n, "j") as j:
        kb.store(dst, d0 + j, src[s0 + j * step])


def _zero_row(kb: NodeKernelBuilder, dst, d0, n: int, lanes: int) -> None:
    if n <= 0:
        return
    if lanes > 1:
        with kb.loop(-(-n // lanes), "v") as v:
            cnt = minimum(n - v * lanes, lanes) if n % lanes else None
            kb.store(dst, d0 + v * lanes, broadcast(0.0, lanes), cnt)
        return
    with kb.loop(n, "j") as j:
        kb.store(dst, d0 + j, const(0.0, F32))


@kernel("ConvStage")
def conv_stage(kb: NodeKernelBuilder, node: Node) -> None:
    xv = node.inputs[0]
    n, c, h, w = xv.shape
    pads, strides = node.attrs["pads"], node.attrs["strides"]
    st = staging_of(xv.type, node.attrs["kernel_shape"], pads, strides)
    x, y = kb.bind(xv, "x"), kb.bind(node.output, "y")
    lanes = kb.lanes(F32)
    kb.strategy = "stage (pad, stride phases)"
    plane = st.hq * st.wq
    tasks, per = parallel_split(n * c, max(1, 16384 // (plane * st.phases)))
    with kb.loop(tasks, "t", kind="parallel") as t, kb.loop(per, "p") as p:
        nc = kb.local("nc", t * per + p)
        for a in range(st.sa):
            i_lo, i_n = _valid(a - pads[0], st.sh, h, st.hq)
            for b in range(st.sb):
                j_lo, j_n = _valid(b - pads[1], st.sw, w, st.wq)
                base = kb.local("d", (nc * st.phases + a * st.sb + b) * plane)
                _zero_row(kb, y, base, i_lo * st.wq, lanes)
                with kb.loop(i_n, "i") as i:
                    d0 = kb.local("d0", base + (i + i_lo) * st.wq)
                    r = (i + i_lo) * st.sh + (a - pads[0])
                    _zero_row(kb, y, d0, j_lo, lanes)
                    src = nc * (h * w) + r * w + (j_lo * st.sw + b - pads[1])
                    _copy_row(kb, y, d0 + j_lo, x, src, j_n, st.sw, lanes)
                    _zero_row(kb, y, d0 + (j_lo + j_n), st.wq - j_lo - j_n, lanes)
                _zero_row(kb, y, base + (i_lo + i_n) * st.wq, (st.hq - i_lo - i_n) * st.wq,
                          lanes)


def _chunk_pointers(offsets: np.ndarray, rowptr: np.ndarray, plane: int, gc: int,
                    chunks: int) -> np.ndarray:
    """[block rows, chunks + 1] int32: where each block row's entries for input planes
    [c*gc, (c+1)*gc) begin (a row's offsets ascend with the plane)."""
    out = np.empty((rowptr.size - 1, chunks + 1), np.int32)
    bounds = np.arange(chunks + 1) * gc * plane
    for br in range(rowptr.size - 1):
        lo, hi = int(rowptr[br]), int(rowptr[br + 1])
        out[br] = lo + np.searchsorted(offsets[lo:hi], bounds, side="left")
    return out.reshape(-1)


def sparse_notes(node: Node, imbalance: tuple[float, float] | None = None) -> str:
    """The report's figures of a sparse kernel: the share of the weight's entries stored
    (density of blocks or slices), the values stored as padding (zeros of a block, of a
    padding channel or of a slice's short rows) per non-zero, and, after the reorder pass,
    the load imbalance across threads (and for slices the padding) before and after it."""
    ro = node.record.reorder
    vals = node.inputs[1].const
    nnz = max(int(np.count_nonzero(vals)), 1)
    weights = int(np.prod(node.attrs["wshape"]))
    stage = node.inputs[0].producer
    if node.op == "SparseConv" and stage is not None and stage.op == "ConvStage":
        # of the layer's own weights, not the staged ones (a 3x3 stride-2 window staged as
        # 16 taps, 7 of them zero, would read 80%-pruned weights as density 0.11)
        weights = node.attrs["wshape"][0] * stage.inputs[0].shape[1] * \
            int(np.prod(stage.attrs["kernel_shape"]))
    text = f", density {vals.size / weights:.2f}, padding "
    if ro and ro.padding is not None:
        text += f"{ro.padding[0] - 1:.0%} -> "
    text += f"{(vals.size - nnz) / nnz:.0%}"
    if node.op == "SparseConv":
        m, enc = node.attrs["wshape"][0], conv_encoding(node.attrs["wenc"])
        rows = enc.rows if isinstance(enc, SparseWeights) else 1
        if m % rows:
            text += f" (channels padded {m} -> {m + -m % rows})"
    if ro:
        a, b = imbalance or ro.imbalance
        text += f", imbalance {a:.2f} -> {b:.2f} at {ro.threads} threads"
    return text


@kernel("SparseConv")
def sparse_conv(kb: NodeKernelBuilder, node: Node) -> None:
    """Parallel over (image, band of output rows, group of block rows). A task reduces the
    input planes in chunks whose band of rows fits L1, each chunk over every block
    row of the group: the chunk's input is read from L1 by all of them, the partial sums
    wait in the scratch rows."""
    enc = conv_encoding(node.attrs["wenc"])
    nm = isinstance(enc, NMWeights)
    rows, cols = (1, 1) if nm else (enc.rows, enc.cols)
    n, g, hq, wq = node.inputs[0].shape
    _, m, oh, ow = node.output.shape
    khq = node.attrs["wshape"][2]
    lanes = kb.lanes(F32)
    fsize = F32.itemsize
    split = ConvTasks.of(n, m, oh, wq, rows, lanes, kb.target.registers)
    tile, nbands, bh, lds = split.tile, split.nbands, split.bh, split.lds
    nv = tile // lanes
    brows, per_group, ngroups = split.brows, split.per_group, split.ngroups
    gc = max(1, (kb.target.caches.l1d - tile * fsize * rows) // ((bh + khq - 1) * wq * fsize))
    chunks = -(-g // gc)
    xs = kb.bind(node.inputs[0], "x")
    vals, offs = kb.bind(node.inputs[1], "vals"), kb.bind(node.inputs[2], "offs")
    if nm:  # the groups of each chunk of planes, the same for every channel
        base = kb.bind(node.inputs[3], "base")
        ngrp = node.inputs[3].shape[0]
        ptr = derived_constant(
            kb, node.inputs[3], f"chunks{gc}x{chunks}",
            lambda bs: np.searchsorted(bs, np.arange(chunks + 1) * gc * hq * wq)
            .astype(np.int32), "cp")
    else:
        ptr = derived_constant(
            kb, node.inputs[3], f"chunks{gc}x{chunks}",
            lambda rp: _chunk_pointers(node.inputs[2].const, rp, hq * wq, gc, chunks), "cp")
    b = kb.bind(node.input(4), "b") if node.input(4) is not None else None
    z = kb.bind(node.input(5), "z") if node.input(5) is not None else None
    y = kb.bind(node.output, "y")
    act = activation_of(node)
    order = node.attrs.get("order", [])
    cb = derived_constant(kb, node.inputs[3], "order",
                          lambda rp: np.asarray(order, np.int32), "cb") if order else None
    ro = node.record.reorder
    spread = None
    if ro:  # the threads' shares of this kernel's tasks (row bands first, then channels)
        work = block_row_work(node.inputs[3].const)
        spread = (split.imbalance(channel_order_work(work, order), ro.threads),
                  split.imbalance(work, ro.threads))
    # sparsify chose the sparse kernel over the dense one (a graph rewrite): one candidate
    kb.choose([Candidate.of(Kind.SPARSE_CONV, {"encoding": str(enc), "tile": tile,
                                                "bands": nbands, "band_rows": bh})])
    kb.strategy = f"sparse {enc}" + sparse_notes(node, spread)

    def nm_tiles(nrows: int, x0, s, br, c, q) -> None:
        """The N:M tiles over a band of `nrows` rows for channel br, chunk c."""
        npix = nrows * wq
        lo = kb.local("lo", cast(ptr[c], INDEX))
        cnt = kb.local("cnt", cast(ptr[c + 1], INDEX) - lo)
        first = c.eq(0) if chunks > 1 else const(1)
        at = kb.local("at", (br * ngrp + lo) * enc.n)
        cstep = enc.step * hq * wq
        full, rest = divmod(npix, tile)
        with kb.loop(full, "k") as k:
            kb.call(sparse_nm_tile(lanes, enc.n, nv, False), (xs, x0 + k * tile), (vals, at),
                    (offs, at), (base, lo), (s, q * lds + k * tile), cnt, first, cstep)
        if rest:
            tv = -(-rest // lanes)
            kb.call(sparse_nm_tile(lanes, enc.n, tv, True), (xs, x0 + full * tile),
                    (vals, at), (offs, at), (base, lo), (s, q * lds + full * tile), cnt,
                    first, cstep, rest - (tv - 1) * lanes)

    def band_tiles(nrows: int, x0, s, br, c, q) -> None:
        """The tiles over a band of `nrows` rows for block row br, chunk c."""
        if nm:
            nm_tiles(nrows, x0, s, br, c, q)
            return
        npix = nrows * wq
        lo = kb.local("lo", cast(ptr[br * (chunks + 1) + c], INDEX))
        cnt = kb.local("cnt", cast(ptr[br * (chunks + 1) + c + 1], INDEX) - lo)
        first = c.eq(0) if chunks > 1 else const(1)
        so = q * (rows * lds)
        full, rest = divmod(npix, tile)
        step = (enc.step * hq * wq,) if cols > 1 else ()
        with kb.loop(full, "k") as k:
            kb.call(sparse_conv_tile(lanes, rows, nv, False, cols), (xs, x0 + k * tile),
                    (vals, lo * enc.block), (offs, lo), (s, so + k * tile), cnt, lds, first,
                    *step)
        if rest:
            tv = -(-rest // lanes)
            kb.call(sparse_conv_tile(lanes, rows, tv, True, cols), (xs, x0 + full * tile),
                    (vals, lo * enc.block), (offs, lo), (s, so + full * tile), cnt, lds,
                    first, *step, rest - (tv - 1) * lanes)

    def band(nrows: int, img, grp, oh0) -> None:
        s = kb.alloc("s", F32, (per_group * rows * lds,))
        x0 = kb.local("x0", img * (g * hq * wq) + oh0 * wq)
        # group grp: block rows [grp * B / G, (grp + 1) * B / G), sizes within one of each
        # other (ConvTasks)
        if brows % ngroups:
            br0 = kb.local("br0", grp * brows // ngroups)
            count = kb.local("nbr", (grp + 1) * brows // ngroups - br0)
        else:
            br0, count = kb.local("br0", grp * per_group), const(per_group)
        with kb.loop(chunks, "c") as c, kb.loop(count, "q") as q:
            band_tiles(nrows, x0, s, br0 + q, c, q)
        with kb.loop(count, "q") as q:
            store_rows(s, q * (rows * lds), br0 + q, img, oh0, nrows)

    def store_rows(s, s0, br, img, oh0, nrows: int) -> None:
        """y[img, co, oh0 + i, :OW] = act(s[s0 + r*lds + i*Wq, :OW] + b[co] + z[...]) for the
        R channels co = br*R + r of block row br (but padding channels, co >= M): the
        Wq - OW computed columns dropped."""
        blk = kb.local("blk", cast(cb[br], INDEX)) if cb is not None else br
        for r in range(rows):
            co = kb.local("co", blk * rows + r)
            with kb.if_(co < m) if r >= m % rows > 0 else nullcontext():
                store_row(s, s0 + r * lds, co, img, oh0, nrows)

    def store_row(s, s0, co, img, oh0, nrows: int) -> None:
        nvec = -(-ow // lanes)
        bias = kb.local("bias", b[co]) if b is not None else None
        with kb.loop(nrows, "i") as i:
            yrow = kb.local("yo", ((img * m + co) * oh + oh0 + i) * ow)
            with kb.loop(nvec, "v") as v:
                cnt = minimum(ow - v * lanes, lanes) if ow % lanes else None
                val = vload(s, s0 + i * wq + v * lanes, lanes, cnt)
                if bias is not None:
                    val = val + bias
                if z is not None:
                    val = val + vload(z, yrow + v * lanes, lanes, cnt)
                kb.store(y, yrow + v * lanes, _apply(kb, act, val), cnt)

    with kb.loop(n * nbands * ngroups, "t", kind="parallel") as t:
        grp = kb.local("grp", t % ngroups) if ngroups > 1 else const(0)
        bnd = kb.local("band", (t // ngroups) % nbands) if nbands > 1 else const(0)
        img = kb.local("img", t // (ngroups * nbands)) if n > 1 else const(0)
        if oh % nbands == 0:
            band(bh, img, grp, kb.local("oh0", bnd * bh))
        else:
            oh0 = kb.local("oh0", bnd * oh // nbands)
            with kb.if_(((bnd + 1) * oh // nbands - oh0).eq(bh)):
                band(bh, img, grp, oh0)
            with kb.else_():
                band(bh - 1, img, grp, oh0)


@kernel("SparseMatMul")
def sparse_matmul(kb: NodeKernelBuilder, node: Node) -> None:
    """Parallel over runs of slices of C outputs (C: the vector's lanes), an even number of
    runs whose lengths differ by one slice at most (the threads take contiguous runs of
    them). Per slice, up to `row_block` (Target.tiles) rows of A at once, two accumulators a
    row taking alternate columns of the slice: each column is C values and C input indices,
    loaded once for the rows, and one gather of each row. Stored slice q computes the outputs
    of slice `order[q]` (the reorder pass balances the threads with it) and writes them there."""
    enc = SlicedWeights.parse(node.attrs["wenc"])
    c = enc.c
    if c != kb.lanes(F32) and c != 1:
        raise EdgecError(f"node {node.name}: weights encoded as '{enc}' need {c}-lane float "
                         f"vectors (this target has {kb.lanes(F32)}); run sparsify with the "
                         "target's lanes")
    m, k = node.inputs[0].shape
    n = node.output.shape[1]
    slices = -(-n // c)
    a = kb.bind(node.inputs[0], "a")
    vals, cols, ptr = (kb.bind(node.inputs[j], nm) for j, nm in
                       ((1, "vals"), (2, "cols"), (3, "ptr")))
    bias = kb.bind(node.input(4), "bias") if node.input(4) is not None else None
    z = kb.bind(node.input(5), "z") if node.input(5) is not None else None
    y = kb.bind(node.output, "y")
    act = activation_of(node)
    order = node.attrs.get("order", [])
    so = derived_constant(kb, node.inputs[3], "order",
                          lambda p: np.asarray(order, np.int32), "so") if order else None
    # sparsify chose the gathers over the dense product (a graph rewrite): one candidate,
    # whose rows of A per pass over a slice (their values and indices loaded once) may be set
    row_block = int(kb.choose([Candidate.of(
        Kind.SPARSE_GATHER, {"encoding": str(enc), "row_block": kb.target.tiles.sparse_row_block},
        tunable=("row_block",))])["row_block"])
    kb.strategy = f"sparse {enc} gather" + sparse_notes(node)
    tasks = slice_tasks(slices)
    # prefetch distance (entries) and stride; none where the weights stay in L1 or several
    # passes of rows read them
    entries = node.inputs[1].shape[0]
    line = kb.target.caches.line
    ahead = 512 if c > 1 and m <= row_block and entries * 4 > kb.target.caches.l1d else 0

    def rows(s, os, base, width, r0, nr: int) -> None:
        """Rows r0 .. r0 + nr - 1 of A against stored slice s (outputs of slice os)."""
        acc = [[kb.local(f"acc{i}_{u}_", broadcast(0.0, c)) for u in range(2)]
               for i in range(nr)]
        with kb.loop(width // 2, "j") as j:
            if ahead:
                # the values and columns stream from memory once per run; across a page
                # the hardware prefetcher stops and starts again, so ask ahead
                at = kb.local("pf", minimum(base + 2 * j * c + ahead, entries - 2 * c))
                for off in range(0, 2 * c * vals.dtype.itemsize, line):
                    kb.prefetch(vals, at + off // vals.dtype.itemsize)
                for off in range(0, 2 * c * cols.dtype.itemsize, line):
                    kb.prefetch(cols, at + off // cols.dtype.itemsize)
            for u in range(2):
                e = kb.local(f"e{u}_", base + (2 * j + u) * c)
                w = kb.local(f"w{u}_", vload(vals, e, c))
                idx = kb.local(f"i{u}_", cast(vload(cols, e, c), DType.I32))
                for i in range(nr):
                    x = vgather(a, (r0 + i) * k, idx)
                    kb.assign(acc[i][u], fma(w, x, acc[i][u]))
        cnt = minimum(n - os * c, c) if n % c else None
        for i in range(nr):
            v = acc[i][0] + acc[i][1]
            if bias is not None:
                v = v + vload(bias, os * c, c, cnt)
            if z is not None:
                v = v + vload(z, (r0 + i) * n + os * c, c, cnt)
            kb.store(y, (r0 + i) * n + os * c, _apply(kb, act, v), cnt)

    with kb.loop(tasks, "t", kind="parallel") as t:
        lo = kb.local("lo", t * slices // tasks) if tasks > 1 else const(0)
        hi = (t + 1) * slices // tasks if tasks > 1 else const(slices)
        with kb.loop(hi - lo, "q") as q:
            s = kb.local("s", lo + q)
            os = kb.local("os", cast(so[s], INDEX)) if so is not None else s
            base = kb.local("base", cast(ptr[s], INDEX) * c)
            width = kb.local("wd", cast(ptr[s + 1], INDEX) - cast(ptr[s], INDEX))
            full = m // row_block
            if full:
                with kb.loop(full, "r") as r:
                    rows(s, os, base, width, kb.local("r0", r * row_block), row_block)
            if m % row_block:
                rows(s, os, base, width, const(full * row_block), m % row_block)


def slice_tasks(slices: int) -> int:
    """The thread pool's tasks over `slices` slices: runs of 2 slices or more, an even
    number of them (up to 64) where there are 2 or more, so that the threads' contiguous
    halves hold equal counts (a prime count of 23 slices had been one serial task)."""
    tasks = max(1, min(64, slices // 2))
    return tasks - tasks % 2 if tasks > 1 else tasks
