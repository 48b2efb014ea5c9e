"""Kernels of the channel-blocked (NCHWc) ops: reorders, convolutions and pools.

A blocked convolution is a driver around a micro-kernel (`lowering/microkernels.py`): its
outer loop, over (image, group of output blocks, output row), is parallel; each row is cut
at compile time into segments: the pixels near the left and right edges, whose taps are
clipped by the padding, one at a time, and the interior in register tiles of R pixels. The
rows of taps that padding clips depend on the output row and are computed at run time.
Weights are packed at compile time in the order the micro-kernel reads them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.graph import Node
from ...kernel_ir.kernel import (
    Buffer,
    Expr,
    KernelBuilder,
    broadcast,
    cast,
    const,
    maximum,
    minimum,
    select,
    vload,
)
from ...targets.target import Target
from .. import microkernels as mk
from ..lower import NodeKernelBuilder, kernel
from ..strategies import Candidate, Kind, roofline
from .activation import activation_key, activation_of
from .common import (
    code_scales,
    derived_constant,
    parallel_split,
    weight_codes_along,
    window,
)

F32 = DType.F32


# -- reorders -------------------------------------------------------------------------------

@kernel("ReorderToBlocked")
def reorder_to_blocked(kb: NodeKernelBuilder, node: Node) -> None:
    x = kb.bind(node.inputs[0], "x")
    y = kb.bind(node.output, "y")
    n, cb, *sp, b = y.shape
    c, plane = x.shape[1], int(np.prod(sp))
    shift = node.attrs.get("shift", 0)

    def value(index):
        src = x[index]
        return cast(cast(src, DType.I32) + shift, y.dtype) if shift else src  # int8 + 128

    if cb == 1 and b <= 16:  # one block (a stem's few channels): the lanes written out,
        # the pixels in even slices on the thread pool
        tasks, per = parallel_split(plane, 4096)
        with kb.loop(tasks, "t", kind="parallel") as t, \
                kb.loops([n, per], ["n", "p"]) as (i, pt):
            p = kb.local("px", t * per + pt) if tasks > 1 else pt
            for lane in range(b):
                kb.store(y, (i * plane + p) * b + lane,
                         value((i * c + lane) * plane + p) if lane < c else const(0, y.dtype))
        return
    with kb.loops([n, cb, plane, b], ["n", "cb", "p", "l"]) as (i, j, p, lane):
        ch = j * b + lane
        src = value((i * c + minimum(ch, c - 1)) * plane + p)
        kb.store(y, ((i * cb + j) * plane + p) * b + lane,
                 select(ch < c, src, const(0, y.dtype)) if c % b else src)


@kernel("ReorderFromBlocked")
def reorder_from_blocked(kb: NodeKernelBuilder, node: Node) -> None:
    x = kb.bind(node.inputs[0], "x")
    y = kb.bind(node.output, "y")
    n, cb, *sp, b = x.shape
    c, plane = y.shape[1], int(np.prod(sp))
    shift = node.attrs.get("shift", 0)
    with kb.loops([n, c, plane], ["n", "c", "p"]) as (i, ch, p):
        v = x[((i * cb + ch // b) * plane + p) * b + ch % b]
        if shift:  # uint8 + 128 back to int8
            v = cast(cast(v, DType.I32) + shift, y.dtype)
        kb.store(y, (i * c + ch) * plane + p, v)


# -- convolution -----------------------------------------------------------------------------

@dataclass
class _Geo:
    n: int
    c: int
    h: int
    w: int
    m: int
    oh: int
    ow: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    ph: int
    pw: int

    @staticmethod
    def of(node: Node) -> _Geo:
        a = node.attrs
        w = node.inputs[1].shape
        y = node.output.shape
        x = node.inputs[0].shape
        return _Geo(x[0], a["channels"], x[2], x[3], w[0], y[2], y[3], w[2], w[3],
                    *a["strides"], *a["dilations"], *a["pads"][:2])

    def merged_rows(self, max_pixels: int = 128) -> _Geo:
        """A pointwise convolution (1x1, stride 1, no padding) reads and writes the pixels of
        a plane in one order, so k rows can be one row of k*W pixels: fewer, fuller tiles
        (a 7x7 plane is one row of 49 pixels instead of seven rows of 6 + 1)."""
        if (self.kh, self.kw, self.sh, self.sw) != (1, 1, 1, 1) or \
                (self.oh, self.ow) != (self.h, self.w):
            return self
        k = max(d for d in range(1, self.oh + 1)
                if self.oh % d == 0 and (d == 1 or d * self.ow <= max_pixels))
        return dataclasses.replace(self, h=self.h // k, w=self.w * k, oh=self.oh // k,
                                   ow=self.ow * k)

    @staticmethod
    def _interior(size: int, out: int, k: int, s: int, d: int, p: int) -> tuple[int, int]:
        """[lo, hi): the outputs along one axis whose k taps all fall inside the input."""
        lo = min(-(-p // s), out)
        room = size - 1 + p - (k - 1) * d
        return lo, max(lo, min(out, room // s + 1 if room >= 0 else 0))

    def segments(self, r_max: int) -> list[tuple[int, int, int, int, int]]:
        """(first output column, pixels, first tap, taps, repeats) of the calls along a row:
        edge pixels alone with their clipped taps, the interior in `repeats` tiles of r_max
        pixels (one call site in a loop) and a shorter tile for the rest."""
        out = []
        lo, hi = self._interior(self.w, self.ow, self.kw, self.sw, self.dw, self.pw)
        for ow in list(range(lo)) + list(range(hi, self.ow)):
            a = ow * self.sw - self.pw
            k0 = min(self.kw, -(-max(0, -a) // self.dw))
            k1 = min(self.kw, -(-max(0, self.w - a) // self.dw))
            out.append((ow, 1, k0, max(0, k1 - k0), 1))
        full, rest = divmod(hi - lo, r_max)
        if full:
            out.append((lo, r_max, 0, self.kw, full))
        if rest:
            out.append((lo + full * r_max, rest, 0, self.kw, 1))
        return sorted(out)


def _pack_dense(w: np.ndarray, lanes: int, mb: int, blocked_input: bool) -> np.ndarray:
    """W [M, C, KH, KW] as groups of mb output blocks (fewer in the last group), each
    [cb][kh][kw][ci][block j][lane] (plain input: [ci][kh][kw][block j][lane]), zero where a
    channel runs past M or C."""
    m, c, kh, kw = w.shape
    mblocks = -(-m // lanes)
    cin = lanes if blocked_input else c
    cblocks = -(-c // cin)
    wp = np.zeros((mblocks * lanes, cblocks * cin, kh, kw), w.dtype)
    wp[:m, :c] = w
    parts = []
    # blocked input: [cb][kh][kw][ci]; plain input (one "block" of all C): [ci][kh][kw]
    order = (2, 4, 5, 3, 0, 1) if blocked_input else (2, 3, 4, 5, 0, 1)
    for g0 in range(0, mblocks, mb):
        g1 = min(mblocks, g0 + mb)
        blk = wp[g0 * lanes:g1 * lanes].reshape(g1 - g0, lanes, cblocks, cin, kh, kw)
        parts.append(blk.transpose(order).reshape(-1))
    return np.ascontiguousarray(np.concatenate(parts))


def pack_depthwise(w: np.ndarray, lanes: int) -> np.ndarray:
    """W [C, 1, KH, KW] as [cb][kh][kw][lane], zero past C."""
    c, _, kh, kw = w.shape
    cb = -(-c // lanes)
    wp = np.zeros((cb * lanes, kh, kw), w.dtype)
    wp[:c] = w[:, 0]
    return np.ascontiguousarray(wp.reshape(cb, lanes, kh, kw).transpose(0, 2, 3, 1).reshape(-1))


def _bias(kb: NodeKernelBuilder, node: Node, lanes: int) -> Buffer:
    """The bias padded to whole blocks (zeros where the node has none)."""
    m = node.inputs[1].shape[0]
    mpad = -(-m // lanes) * lanes
    b_v = node.input(2)
    src = b_v if b_v is not None else node.inputs[1]

    def make(_):
        out = np.zeros(mpad, np.float32)
        if b_v is not None:
            out[:m] = b_v.const
        return out

    return derived_constant(kb, src, f"bias{lanes}{'' if b_v is not None else 'zero'}", make, "b")


@kernel("BlockedConv")
def blocked_conv(kb: NodeKernelBuilder, node: Node) -> None:
    lanes = node.attrs["block"]
    if kb.lanes(F32) != lanes:
        raise EdgecError(f"node {node.name}: a BlockedConv of block {lanes} needs a target "
                         f"with {lanes}-lane float vectors (this one has {kb.lanes(F32)}); "
                         "run the layout-nchwc pass with the target's block")
    c = kb.choose(blocked_candidates(kb.target, node))
    if c.kind is Kind.BLOCKED_DEPTHWISE:
        kb.strategy = "blocked depthwise conv"
        _blocked_depthwise(kb, node, lanes, int(c["r"]))
    else:
        kb.strategy = "blocked conv"
        _blocked_dense(kb, node, lanes, int(c["mb"]), int(c["r"]))


def blocked_candidates(target: Target, node: Node) -> list[Candidate]:
    """A BlockedConv's two micro-kernel drivers, one for grouped (depthwise: layout-nchwc
    blocks only those) and one for dense convolutions: tiles of `mb` output blocks x `r`
    pixels (the register file's most, `microkernels.py`), costed by the roofline at full
    vectors."""
    lanes, regs = node.attrs["block"], target.registers
    blocked_in = bool(node.attrs["blocked_input"])
    g = _Geo.of(node)
    depthwise = node.attrs["group"] > 1
    cin = 1 if depthwise else g.c
    macs = g.n * g.m * g.oh * g.ow * cin * g.kh * g.kw
    nbytes = F32.itemsize * (g.n * g.c * g.h * g.w + g.m * cin * g.kh * g.kw
                             + g.n * g.m * g.oh * g.ow)
    cost = roofline(target, macs, nbytes, lanes)
    mb, r = mk.conv_tiles(lanes, regs) if blocked_in else mk.stem_tiles(lanes, regs)
    return [
        Candidate.of(Kind.BLOCKED_CONV, {"block": lanes, "mb": mb, "r": r},
                     "a grouped convolution (its channels are reduced within their block)"
                     if depthwise else "", None if depthwise else cost, ("mb", "r")),
        Candidate.of(Kind.BLOCKED_DEPTHWISE,
                     {"block": lanes, "r": mk.depthwise_pixels(lanes, regs)},
                     "" if depthwise else "not a grouped convolution",
                     cost if depthwise else None, ("r",)),
    ]


def _row_taps(kb: NodeKernelBuilder, g: _Geo, oh: Expr) -> tuple[Expr, Expr]:
    """(first kernel row, valid kernel rows) of output row oh."""
    return window(kb, "kh", oh * g.sh, -g.ph, g.dh, g.h, g.kh,
                  range(0, g.oh * g.sh, g.sh))


# Cache budgets of the dense driver, from the target's caches: a chunk of input blocks whose
# packed weights take half of L1 (beside the tile's inputs), and a band of output rows whose
# partial sums take half of L1 while the chunks sweep over them; the band halves until the
# pool has Tiles.parallel_min_tasks tasks.


def _chunks(cblocks: int, block_bytes: int, budget: int) -> tuple[int, int]:
    """(input blocks per chunk, chunks): as few even chunks as the weight budget allows."""
    per = max(1, min(cblocks, budget // block_bytes))
    n = -(-cblocks // per)
    return -(-cblocks // n), n


def _band(rows: int, row_bytes: int, other_tasks: int, budget: int, min_tasks: int) -> int:
    """Output rows per parallel task."""
    bh = max(1, min(rows, budget // row_bytes))
    while bh > 1 and other_tasks * -(-rows // bh) < min_tasks:
        bh = -(-bh // 2)
    return bh


# int8 weight codes (WeightCodes) are converted once per task, for the pixels of its band:
# under this many, the conversion costs more than a float weight read from cache (zoo
# tiny_cnn's 16 x 16 convolution, 2 rows a task: 1.24x the float weights' time on Zen 4);
# codes are kept there anyway where the float weights would not fit in L2
CODES_MIN_PIXELS = 64


def _blocked_dense(kb: NodeKernelBuilder, node: Node, lanes: int, mb_max: int,
                   r_max: int) -> None:
    """Parallel over (image, group of output blocks, band of output rows). Within a task the
    input blocks are reduced in chunks, each chunk sweeping the band's rows, so a chunk's
    weights are read from L1 by every row; the partial sums live in y until the last chunk
    applies the epilogue."""
    blocked_in = bool(node.attrs["blocked_input"])
    g = _Geo.of(node).merged_rows() if blocked_in else _Geo.of(node)
    mblocks = -(-g.m // lanes)
    cin = lanes if blocked_in else g.c
    cblocks = -(-g.c // cin)
    x = kb.bind(node.inputs[0], "x")
    ngroups = -(-mblocks // mb_max)
    fsize = F32.itemsize
    caches = kb.target.caches
    per_chunk, nchunks = _chunks(cblocks, mb_max * lanes * g.kh * g.kw * cin * fsize,
                                 caches.l1d // 2)
    bh = _band(g.oh, mb_max * g.ow * lanes * fsize, g.n * ngroups, caches.l1d // 2,
               kb.target.tiles.parallel_min_tasks)
    nbands = -(-g.oh // bh)
    partial = nchunks > 1
    codes = weight_codes_along(node.inputs[1], 0)
    if codes and bh * g.ow < CODES_MIN_PIXELS and \
            node.inputs[1].type.numel * fsize <= caches.l2:
        codes = None  # converted for too few pixels, and the float weights are in cache
    w = derived_constant(kb, node.inputs[1], f"nchwc{lanes}m{mb_max}{'b' if blocked_in else 'p'}"
                         f"{'q8' if codes else ''}",
                         lambda a: _pack_dense(codes[0] if codes else a, lanes, mb_max,
                                               blocked_in))
    s = code_scales(kb, node.inputs[1], codes[1], mblocks * lanes) if codes else None
    if codes:
        kb.strategy += ", int8 weights"
    b = _bias(kb, node, lanes)
    z = kb.bind(node.input(3), "z") if node.input(3) is not None else None
    y = kb.bind(node.output, "y")
    act, act_name = activation_of(node), activation_key(node)
    pix = lanes if blocked_in else 1  # elements between input pixels along a row
    x_row, x_cb = g.w * pix, g.h * g.w * pix if blocked_in else 0
    x_img = cblocks * g.h * g.w * cin
    y_mb = g.oh * g.ow * lanes
    segs = g.segments(r_max)
    wsize = w.dtype.itemsize  # (codes: 1)

    def emit(mb: int, n: Expr, grp: Expr, band: Expr, rows: Expr, wf: Buffer | None) -> None:
        """One task's work for a group of mb output blocks: chunks of input blocks, each
        over the rows of the band (int8 codes: each chunk converted into `wf` first)."""
        w_kw = (cin if blocked_in else 1) * mb * lanes
        w_kh, w_cb = g.kw * w_kw, g.kh * g.kw * w_kw  # plain input: w_cb steps ci
        with kb.loop(nchunks, "cc") as cc:
            wgrp = grp * (mb_max * cblocks * g.kh * g.kw * cin * lanes) + cc * per_chunk * w_cb
            ncb = minimum(cblocks - cc * per_chunk, per_chunk) if cblocks % per_chunk \
                else const(per_chunk)
            wt, wbase = (w, wgrp) if wf is None else (wf, const(0))
            if wf is not None:  # codes x scales, per group of mb vectors
                # (a plain input's chunk is all C channels, w_cb apart)
                kb.call(mk.widen_codes(lanes, mb), (w, wgrp), (s, grp * mb_max * lanes),
                        (wf, 0), (ncb if blocked_in else g.c) * (w_cb // (mb * lanes)))

            def call(seg, oh, kh0, nkh) -> None:
                """The tiles of segment `seg` of row `oh`."""
                ow_first, npx, k0, nkw, rep = seg
                with kb.loop(rep, "s") as si:
                    tile(ow_first + si * npx, npx, k0, nkw, oh, kh0, nkh)

            def tile(ow0, npx, k0, nkw, oh, kh0, nkh) -> None:
                ih0 = oh * g.sh - g.ph + kh0 * g.dh
                iw0 = ow0 * g.sw - g.pw + k0 * g.dw
                xo = n * x_img + cc * per_chunk * x_cb + ih0 * x_row + iw0 * pix
                yo = ((n * mblocks + grp * mb_max) * g.oh + oh) * g.ow * lanes + ow0 * lanes
                fixed = (g.kw, g.dw) if not blocked_in and nkw == g.kw else None
                fn = mk.conv_tile(lanes, mb, npx, g.sw * pix,
                                  1 if blocked_in else None, lanes if blocked_in else None,
                                  z is not None, act_name, act, fixed, partial)
                args = [(x, xo), (wt, wbase + kh0 * w_kh + k0 * w_kw), (b, grp * mb_max * lanes)]
                args += [(z, yo)] if z is not None else []
                args += [(y, yo), ncb, nkh, nkw]
                args += [] if blocked_in else [g.c, g.h * g.w]
                args += [x_cb, g.dh * x_row, g.dw * pix, w_cb, w_kh, w_kw, y_mb]
                args += [cc, nchunks - 1 - cc] if partial else []
                kb.call(fn, *args)

            # The weights are read in one sequential sweep, chunk after chunk. A chunk is
            # fetched by the first row and hit by the others, which is also when the hardware
            # prefetcher stops running ahead, so each new chunk would start with misses to
            # memory (ResNet-18's 512-channel convolutions: 3.0 ms instead of 2.3 from
            # cache). Each row asks for its share of the next chunk's lines instead.
            lines = -(-per_chunk * w_cb * wsize // caches.line)
            per_row = -(-lines // bh)
            step = caches.line // wsize
            with kb.loop(rows, "r") as r:
                if w.numel * wsize >= kb.target.tiles.prefetch_min_bytes:
                    prefetch_lines(kb, w, wgrp + ncb * w_cb + r * (per_row * step), per_row, step)
                oh = kb.local("oh", band * bh + r)
                kh0, nkh = _row_taps(kb, g, oh)
                for seg in segs:
                    call(seg, oh, kh0, nkh)

    with kb.loop(g.n * ngroups * nbands, "t", kind="parallel") as t:
        band = kb.local("band", t % nbands) if nbands > 1 else const(0)
        grp = kb.local("grp", (t // nbands) % ngroups)
        n = kb.local("n", t // (nbands * ngroups))
        rows = minimum(g.oh - band * bh, bh) if g.oh % bh else const(bh)
        # every group has mb_max blocks but the last, which may have fewer
        full, rest = mblocks // mb_max, mblocks % mb_max
        variants = [(mb_max, grp < full)] if full else []
        variants += [(rest, grp >= full)] if rest else []
        # a chunk of codes converted to float, on the stack (at most half of L1)
        wf = kb.alloc("wf", F32, (per_chunk * mb_max * g.kh * g.kw * cin * lanes,)) \
            if s is not None else None
        for mb, cond in variants:
            with kb.if_(cond if len(variants) > 1 else const(True)):
                emit(mb, n, grp, band, rows, wf)


def prefetch_lines(kb: KernelBuilder, w: Buffer, start: Expr, lines: int, step: int) -> None:
    """Prefetch `lines` cache lines of w from element `start` on, none past its end."""
    first = kb.local("pf0", start)
    n = minimum(lines, maximum(w.numel - first + (step - 1), 0) // step)
    with kb.loop(n, "pf") as q:
        kb.prefetch(w, first + q * step)


def _blocked_depthwise(kb: NodeKernelBuilder, node: Node, lanes: int, r_max: int) -> None:
    g = _Geo.of(node)
    cblocks = -(-g.c // lanes)
    x = kb.bind(node.inputs[0], "x")
    # float weights, also where they are int8 codes (WeightCodes): a depthwise layer's are
    # few, and its tiles, inlined into the driver, lose the weights' registers when they
    # read a converted copy on the stack (MobileNetV2's first one: 1.6x slower, Zen 4)
    w = derived_constant(kb, node.inputs[1], f"nchwc{lanes}dw",
                         lambda a: pack_depthwise(a, lanes))
    b = _bias(kb, node, lanes)
    z = kb.bind(node.input(3), "z") if node.input(3) is not None else None
    y = kb.bind(node.output, "y")
    act, act_name = activation_of(node), activation_key(node)
    x_row = g.w * lanes
    with kb.loop(g.n * cblocks * g.oh, "t", kind="parallel") as t:
        oh = kb.local("oh", t % g.oh)
        nc = kb.local("nc", t // g.oh)  # image * blocks + block
        kh0, nkh = _row_taps(kb, g, oh)
        ih0 = kb.local("ih0", oh * g.sh - g.ph + kh0 * g.dh)
        for ow_first, r, k0, nkw, rep in g.segments(r_max):
            with kb.loop(rep, "s") as si:
                ow0 = ow_first + si * r
                iw0 = ow0 * g.sw - g.pw + k0 * g.dw
                xo = (nc * g.h + ih0) * x_row + iw0 * lanes
                yo = (nc * g.oh + oh) * g.ow * lanes + ow0 * lanes
                fn = mk.depthwise_tile(lanes, r, g.sw * lanes, z is not None, act_name, act)
                args = [(x, xo), (w, (nc % cblocks) * (g.kh * g.kw * lanes)
                                  + kh0 * (g.kw * lanes) + k0 * lanes), (b, (nc % cblocks) * lanes)]
                args += [(z, yo)] if z is not None else []
                args += [(y, yo), nkh, nkw, g.dh * x_row, g.dw * lanes, g.kw * lanes]
                kb.call(fn, *args)


# -- pools -----------------------------------------------------------------------------------

@kernel("BlockedPool")
def blocked_pool(kb: NodeKernelBuilder, node: Node) -> None:
    a = node.attrs
    x = kb.bind(node.inputs[0], "x")
    y = kb.bind(node.output, "y")
    n, cb, h, w, lanes = x.shape
    is_max = a["mode"] == "max"
    # integer (max) pools run on int32 lanes, the bytes widened as they are loaded
    acc_t = x.dtype if x.dtype.is_float else DType.I32
    vl = lanes if kb.lanes(acc_t) == lanes else 1  # vector code needs a matching ISA
    if not x.dtype.is_float:
        init = const(int(np.iinfo(x.dtype.np).min), acc_t)
    else:
        init = const(-np.inf if is_max else 0.0, x.dtype)

    def lanes_at(index):
        v = vload(x, index, vl)
        return cast(v, acc_t) if v.dtype != acc_t else v

    def combine(acc: Expr, v: Expr) -> Expr:
        return maximum(acc, v) if is_max else acc + v

    if not a["kernel_shape"]:
        with kb.loop(n * cb, "t", kind="parallel") as t, kb.loop(lanes // vl, "l") as lane:
            acc = kb.local("acc", broadcast(init, vl))
            base = t * (h * w * lanes) + lane * vl
            with kb.loop(h * w, "p") as p:
                kb.assign(acc, combine(acc, lanes_at(base + p * lanes)))
            val = acc if is_max else acc * const(1.0 / (h * w), x.dtype)
            kb.store(y, t * lanes + lane * vl, val)
        return
    (kh, kw), (sh, sw), pads = a["kernel_shape"], a["strides"], a["pads"]
    _, _, oh_n, ow_n, _ = y.shape
    with kb.loop(n * cb * oh_n, "t", kind="parallel") as t:
        oh = kb.local("oh", t % oh_n)
        nc = kb.local("nc", t // oh_n)
        r0, nr = window(kb, "kh", oh * sh, -pads[0], 1, h, kh, range(0, oh_n * sh, sh))
        with kb.loop(ow_n, "ow") as ow, kb.loop(lanes // vl, "l") as lane:
            c0, nq = window(kb, "kw", ow * sw, -pads[1], 1, w, kw, range(0, ow_n * sw, sw))
            acc = kb.local("acc", broadcast(init, vl))
            with kb.loop(nr, "i") as i, kb.loop(nq, "j") as j:
                ih = oh * sh - pads[0] + r0 + i
                iw = ow * sw - pads[1] + c0 + j
                kb.assign(acc, combine(acc, lanes_at(((nc * h + ih) * w + iw) * lanes
                                                    + lane * vl)))
            if is_max:
                val = acc
            elif a["count_include_pad"]:
                val = acc * const(1.0 / (kh * kw), x.dtype)
            else:
                cnt = (nr * nq).cast(x.dtype)
                val = acc / broadcast(cnt, vl, x.dtype) if vl > 1 else acc / cnt
            kb.store(y, ((nc * oh_n + oh) * ow_n + ow) * lanes + lane * vl, val)

