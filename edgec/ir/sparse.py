"""Sparse weights of a convolution: the staged input a sparse kernel reads, and the stored
form of the weights that skips their zeros.

A sparse convolution vectorizes over output pixels, not channels: each stored weight
w[m, c, kh, kw] adds w * (a shifted run of input pixels) to a run of output pixels of channel
m. For the runs to be plain vector loads, the input is first *staged* (op ConvStage): padded
and, for a stride s, split into its s x s phases, so that the convolution becomes a stride-1,
unpadded one over G = C * sa * sb planes of Hq x Wq (sa = min(sh, KH), sb = min(sw, KW)):

    staged[n, (c * sa + a) * sb + b, i, j] = Xpad[n, c, sh * i + a, sw * j + b]   (0 outside X)
    Hq = OH + (KH - 1) // sh,   Wq = OW + (KW - 1) // sw

and the weight becomes W' [M, G, KH', KW'] with KH' = (KH - 1) // sh + 1:

    W'[m, (c * sa + a) * sb + b, i, j] = W[m, c, sh * i + a, sw * j + b]   (0 past KH, KW)

Output pixel (oh, ow) at flattened position p = oh * Wq + ow then reads staged plane g at
p + i * Wq + j: one offset per stored weight, the same for every pixel. Positions with
ow >= OW are computed and dropped (Wq - OW of every Wq).

Encodings (node attribute `wenc`; the logical W' in `wshape`), three constant inputs:

- `bcsr RxC` (`csr` is 1x1): blocks of R output channels x C input channels at one tap
  of the window, stored when any of their R * C weights is not zero: values [nnzb * C * R]
  float32 ([block][c][r]: column c's R weights together), offsets [nnzb] int32 (where the
  block's first column reads: g * Hq * Wq + i * Wq + j), rowptr [ceil(M / R) + 1] int32.
  A block's columns are C consecutive input channels, whose planes lie `step` planes apart
  (the stride phases between them): `bcsr 1x4 step 4` for a 3 x 3 stride-2 convolution.
  Rx1 blocks share one input load among R channels; 1xC blocks share one offset among C
  inputs (the `1x4` pruning pattern's blocks, the int8 kernels' dot4 groups). Where
  M % R != 0 the channels are padded: the last block row holds M % R channels and
  R - M % R whose weights are zero (the kernel computes them with the block and stores
  none), so that R-row blocks serve a layer of, say, 255 channels.

- `nm N:M [step S]`: every output channel keeps at most N weights in each group of M
  consecutive input channels at one tap (N:M pruning, 2:4 and the like), so each channel
  stores exactly N entries per group and no row pointers: values [M_out * groups * N]
  float32 ([channel][group][n]), indices [M_out * groups * N] uint8 (the entry's input
  channel within its group: 1 byte where CSR stores a 4-byte offset), and the one table of
  the groups' offsets [groups] int32 (where a group's first channel reads, ascending), which
  all channels share; a group no channel uses (a stride phase's taps past the window) is
  left out. A group with fewer than N weights stores zeros at inputs it does not use. The
  channels' planes lie S apart as in `bcsr`.

The weight of a matrix product with a constant B (W = B as [K, N]) is stored output-major
for a gathering kernel (SparseMatMul): a vector of C outputs reads C gathered inputs at once.

- `sell C` (sliced ELLPACK): the outputs in slices of C; a slice's entries in columns of C
  (one per output), as many columns as its row with the most non-zeros has, rounded up to
  a multiple of 2 (the kernel's two accumulators): entry (column j, row r) of a slice holds
  a value (values, float32) and its input (columns: uint16 where K <= 65536, which halves
  the index bytes a memory-bound kernel streams, else int32); padding entries are 0 at
  input 0. P [slices + 1] int32 counts columns: a slice's entries start at P[s] * C. C = 1 is
  plain CSR with rows padded to even lengths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EdgecError

BLOCK_ROWS = (1, 2, 4, 8, 16)
BLOCK_COLS = (1, 4)


@dataclass(frozen=True)
class SparseWeights:
    """Block-CSR with blocks of `rows` output channels by `cols` input channels (their
    planes `step` apart) at one position of the window."""

    rows: int = 1
    cols: int = 1
    step: int = 1

    def __str__(self) -> str:
        if (self.rows, self.cols) == (1, 1):
            return "csr"
        text = f"bcsr {self.rows}x{self.cols}"
        return text + (f" step {self.step}" if self.cols > 1 and self.step != 1 else "")

    @property
    def block(self) -> int:
        """Values per stored block."""
        return self.rows * self.cols

    @staticmethod
    def parse(text: str) -> SparseWeights:
        words = text.split()
        if words == ["csr"]:
            return SparseWeights()
        step = 1
        if len(words) == 4 and words[2] == "step" and words[3].isdigit():
            step, words = int(words[3]), words[:2]
        if len(words) == 2 and words[0] == "bcsr" and "x" in words[1] and step > 0:
            r, _, c = words[1].partition("x")
            if r.isdigit() and c.isdigit() and int(r) in BLOCK_ROWS and int(c) in BLOCK_COLS:
                return SparseWeights(int(r), int(c), step if int(c) > 1 else 1)
        raise EdgecError(f"sparse weight encoding {text!r} is not 'csr' or 'bcsr RxC [step S]' "
                         f"with R in {list(BLOCK_ROWS)} and C in {list(BLOCK_COLS)}")

    def blocks(self, ws: np.ndarray) -> np.ndarray:
        """Staged weights W' [M, G, KH', KW'] as blocks [ceil(M / R), G / (C * step), step,
        KH', KW', C, R] (channels padded to a multiple of R)."""
        m, g, kh, kw = ws.shape
        r, c, s = self.rows, self.cols, self.step
        if g % (c * s):
            raise EdgecError(f"sparse weights '{self}': {g} input planes are not whole blocks "
                             f"of {c} channels {s} planes apart")
        w = pad_channels(ws, r).reshape(-(-m // r), r, g // (c * s), c, s, kh, kw)
        return w.transpose(0, 2, 4, 5, 6, 3, 1)


@dataclass(frozen=True)
class Staging:
    """How ConvStage lays out a convolution's input (see the module doc)."""

    sh: int
    sw: int
    sa: int
    sb: int
    hq: int
    wq: int

    @staticmethod
    def of(kernel, pads, strides, out_hw) -> Staging:
        (kh, kw), (sh, sw), (oh, ow) = kernel, strides, out_hw
        return Staging(sh, sw, min(sh, kh), min(sw, kw), oh + (kh - 1) // sh, ow + (kw - 1) // sw)

    @property
    def phases(self) -> int:
        return self.sa * self.sb

    def stage(self, x: np.ndarray, pads) -> np.ndarray:
        """X [N, C, H, W] as the staged [N, C * sa * sb, Hq, Wq]."""
        n, c, h, w = x.shape
        pt, pl = pads[0], pads[1]
        rows, cols = self.sh * self.hq + self.sa, self.sw * self.wq + self.sb
        xp = np.zeros((n, c, rows, cols), x.dtype)
        ht, wt = min(h, rows - pt), min(w, cols - pl)
        xp[:, :, pt:pt + ht, pl:pl + wt] = x[:, :, :ht, :wt]
        out = np.empty((n, c, self.sa, self.sb, self.hq, self.wq), x.dtype)
        for a in range(self.sa):
            for b in range(self.sb):
                out[:, :, a, b] = xp[:, :, a::self.sh, b::self.sw][:, :, :self.hq, :self.wq]
        return out.reshape(n, c * self.phases, self.hq, self.wq)

    def weights(self, w: np.ndarray) -> np.ndarray:
        """W [M, C, KH, KW] as the staged W' [M, C * sa * sb, KH', KW']."""
        m, c, kh, kw = w.shape
        khq, kwq = (kh - 1) // self.sh + 1, (kw - 1) // self.sw + 1
        out = np.zeros((m, c, self.sa, self.sb, khq, kwq), w.dtype)
        for a in range(self.sa):
            for b in range(self.sb):
                part = w[:, :, a::self.sh, b::self.sw]
                out[:, :, a, b, :part.shape[2], :part.shape[3]] = part
        return out.reshape(m, c * self.phases, khq, kwq)


def encode_sparse(ws: np.ndarray, enc: SparseWeights, hq: int, wq: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, offsets, rowptr) of staged weights W' [M, G, KH', KW'] over planes of Hq x Wq."""
    blocks = enc.blocks(ws)
    nb, ncb, s, kh, kw = blocks.shape[:5]
    keep = np.any(blocks != 0, axis=(5, 6)).reshape(nb, -1)
    cb, ph, ii, jj = np.unravel_index(np.arange(keep.shape[1]), (ncb, s, kh, kw))
    where = ((cb * enc.cols * s + ph) * hq + ii) * wq + jj
    rows, cols = np.nonzero(keep)
    values = blocks.reshape(nb, keep.shape[1], -1)[rows, cols].reshape(-1).astype(np.float32)
    offsets = where[cols].astype(np.int32)
    rowptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int32)
    return values, offsets, rowptr


def decode_sparse(values: np.ndarray, offsets: np.ndarray, rowptr: np.ndarray,
                  enc: SparseWeights, wshape, hq: int, wq: int) -> np.ndarray:
    """The staged weights W' (`wshape`) that `encode_sparse` stored, in the order of the
    stored block rows and with the padding channels (ceil(M / R) * R rows; the first M are
    the weights when the block rows are in channel order)."""
    m, g, kh, kw = (int(d) for d in wshape)
    r, c, s = enc.rows, enc.cols, enc.step
    m = -(-m // r) * r
    nnzb = int(offsets.size)
    if (rowptr.size != m // r + 1 or values.size != nnzb * enc.block or int(rowptr[0]) != 0
            or int(rowptr[-1]) != nnzb or np.any(np.diff(rowptr) < 0)):
        raise EdgecError(f"sparse weights '{enc}' of {list(wshape)}: {values.size} values, "
                         f"{nnzb} offsets and {rowptr.size} row pointers do not fit together")
    if g % (c * s):
        raise EdgecError(f"sparse weights '{enc}': {g} input planes are not whole blocks of "
                         f"{c} channels {s} planes apart")
    gg, rest = np.divmod(offsets.astype(np.int64), hq * wq)
    ii, jj = np.divmod(rest, wq)
    if nnzb and (gg.max() >= g or ii.max() >= kh or jj.max() >= kw or offsets.min() < 0
                 or np.any(gg % (c * s) >= s)):
        raise EdgecError(f"sparse weights '{enc}': an offset lies outside the {g} planes of "
                         f"{hq} x {wq} and the {kh} x {kw} window, or not at a block's "
                         "first channel")
    out = np.zeros((m // r, g // (c * s), s, kh, kw, c, r), np.float32)
    brow = np.repeat(np.arange(m // r), np.diff(rowptr))
    out[brow, gg // (c * s), gg % (c * s), ii, jj] = values.reshape(nnzb, c, r)
    return out.transpose(0, 6, 1, 5, 2, 3, 4).reshape(m, g, kh, kw)


@dataclass(frozen=True)
class SlicedWeights:
    """Sliced ELLPACK with slices of `c` outputs (see the module doc)."""

    c: int

    def __str__(self) -> str:
        return f"sell {self.c}"

    @staticmethod
    def parse(text: str) -> SlicedWeights:
        words = text.split()
        if len(words) == 2 and words[0] == "sell" and words[1].isdigit() and int(words[1]) > 0:
            return SlicedWeights(int(words[1]))
        raise EdgecError(f"sparse weight encoding {text!r} is not 'sell C' (C > 0)")


def column_dtype(k: int) -> type:
    """The type of the input columns of a `sell C` weight with K inputs."""
    return np.uint16 if k <= 1 << 16 else np.int32


def encode_sliced(b: np.ndarray, enc: SlicedWeights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, columns, slice pointers) of B [K, N] (see the module doc)."""
    k, n = b.shape
    c = enc.c
    slices = -(-n // c)
    wo = np.zeros((slices * c, k), np.float32)
    wo[:n] = b.T
    nz = wo != 0
    widths = nz.reshape(slices, c, k).sum(axis=2).max(axis=1)
    widths = widths + widths % 2
    ptr = np.concatenate([[0], np.cumsum(widths)]).astype(np.int32)
    values = np.zeros(int(ptr[-1]) * c, np.float32)
    cols = np.zeros(int(ptr[-1]) * c, column_dtype(k))
    for s in range(slices):
        for r in range(c):
            idx = np.flatnonzero(nz[s * c + r])
            at = ptr[s] * c + np.arange(idx.size) * c + r
            values[at], cols[at] = wo[s * c + r, idx], idx
    return values, cols, ptr


def decode_sliced(values: np.ndarray, cols: np.ndarray, ptr: np.ndarray, enc: SlicedWeights,
                  wshape, order=()) -> np.ndarray:
    """The B [K, N] that `encode_sliced` stored; `order`: stored slice q holds the outputs
    of slice order[q] (a slice's padding lanes, where C does not divide N, go with it)."""
    k, n = (int(d) for d in wshape)
    c = enc.c
    slices = -(-n // c)
    if (ptr.size != slices + 1 or int(ptr[0]) != 0 or np.any(np.diff(ptr) < 0) or
            values.size != int(ptr[-1]) * c or cols.size != values.size):
        raise EdgecError(f"sparse weights '{enc}' of {[k, n]}: {values.size} values, "
                         f"{cols.size} columns and {ptr.size} slice pointers do not fit together")
    if cols.size and (cols.min() < 0 or cols.max() >= k):
        raise EdgecError(f"sparse weights '{enc}': a column lies outside the {k} inputs")
    wo = np.zeros((slices * c, k), np.float32)
    rows = np.tile(np.arange(c), int(ptr[-1])) + np.repeat(
        np.repeat(np.arange(slices) * c, np.diff(ptr)), c)
    np.add.at(wo, (rows, cols), values)
    if len(order):
        out = np.empty_like(wo)
        out.reshape(slices, c, k)[np.asarray(order)] = wo.reshape(slices, c, k)
        wo = out
    return np.ascontiguousarray(wo[:n].T)


@dataclass(frozen=True)
class NMWeights:
    """At most `n` weights in every group of `m` input channels (`step` planes apart) at
    one tap, per output channel (see the module doc)."""

    n: int
    m: int
    step: int = 1

    def __str__(self) -> str:
        return f"nm {self.n}:{self.m}" + (f" step {self.step}" if self.step != 1 else "")

    @staticmethod
    def parse(text: str) -> NMWeights:
        words = text.split()
        step = 1
        if len(words) == 4 and words[2] == "step" and words[3].isdigit():
            step, words = int(words[3]), words[:2]
        if len(words) == 2 and words[0] == "nm" and ":" in words[1] and step > 0:
            n, _, m = words[1].partition(":")
            if n.isdigit() and m.isdigit() and 0 < int(n) < int(m) <= NM_GROUP_MAX:
                return NMWeights(int(n), int(m), step)
        raise EdgecError(f"sparse weight encoding {text!r} is not 'nm N:M [step S]' with "
                         f"0 < N < M <= {NM_GROUP_MAX}")

    def groups(self, ws: np.ndarray) -> np.ndarray:
        """Staged weights W' [M_out, G, KH', KW'] as [M_out, groups, M] (groups ordered as
        their offsets: channel group, phase, row, column of the window)."""
        mo, g, kh, kw = ws.shape
        if g % (self.m * self.step):
            raise EdgecError(f"sparse weights '{self}': {g} input planes are not whole "
                             f"groups of {self.m} channels {self.step} planes apart")
        w = ws.reshape(mo, g // (self.m * self.step), self.m, self.step, kh, kw)
        return w.transpose(0, 1, 3, 4, 5, 2).reshape(mo, -1, self.m)

    def offsets(self, wshape, hq: int, wq: int) -> np.ndarray:
        """Where each group of W' (`wshape`) reads its first channel: int32 [groups]."""
        _, g, kh, kw = wshape
        cg, ph, ii, jj = np.unravel_index(np.arange(g // self.m * kh * kw),
                                          (g // (self.m * self.step), self.step, kh, kw))
        return (((cg * self.m * self.step + ph) * hq + ii) * wq + jj).astype(np.int32)

    def fits(self, ws: np.ndarray) -> bool:
        """Whether no group of `ws` holds more than N weights."""
        return bool(np.count_nonzero(self.groups(ws), axis=2).max(initial=0) <= self.n)


NM_GROUP_MAX = 16


def encode_nm(ws: np.ndarray, enc: NMWeights, hq: int, wq: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, indices, group offsets) of staged weights W' [M_out, G, KH', KW'] whose
    groups hold N weights at most."""
    mo, g, kh, kw = ws.shape
    grp = enc.groups(ws)
    nz = grp != 0
    if nz.sum(axis=2).max(initial=0) > enc.n:
        raise EdgecError(f"sparse weights '{enc}': a group of {enc.m} input channels holds "
                         f"{int(nz.sum(axis=2).max())} weights, more than {enc.n}")
    # per group the N entries: its weights first, then zeros at inputs it leaves out, each
    # part by input (a stable sort on "is zero")
    used = np.flatnonzero(nz.any(axis=(0, 2)))
    grp, nz = grp[:, used], nz[:, used]
    idx = np.argsort(~nz, axis=2, kind="stable")[:, :, :enc.n]
    idx = np.sort(idx, axis=2)
    values = np.take_along_axis(grp, idx, axis=2).astype(np.float32).reshape(-1)
    return values, idx.astype(np.uint8).reshape(-1), enc.offsets(ws.shape, hq, wq)[used]


def decode_nm(values: np.ndarray, indices: np.ndarray, base: np.ndarray, enc: NMWeights,
              wshape, hq: int, wq: int) -> np.ndarray:
    """The staged weights W' (`wshape`) that `encode_nm` stored."""
    mo, g, kh, kw = (int(d) for d in wshape)
    if g % (enc.m * enc.step) or values.size != mo * base.size * enc.n or \
            indices.size != values.size:
        raise EdgecError(f"sparse weights '{enc}' of {list(wshape)}: {values.size} values, "
                         f"{indices.size} indices and {base.size} group offsets do not fit "
                         f"together (groups of {enc.m} channels {enc.step} planes apart)")
    every = enc.offsets(wshape, hq, wq)
    at = np.searchsorted(every, base)
    if np.any(at >= every.size) or not np.array_equal(every[np.minimum(at, every.size - 1)],
                                                      base) or np.any(np.diff(at) <= 0) or \
            (indices.size and int(indices.max()) >= enc.m):
        raise EdgecError(f"sparse weights '{enc}': a group offset is not a group's (ascending) "
                         f"or an input index lies outside its group of {enc.m} channels")
    grp = np.zeros((mo, every.size, enc.m), np.float32)
    part = np.zeros((mo, base.size, enc.m), np.float32)
    np.put_along_axis(part, indices.reshape(mo, base.size, enc.n).astype(np.int64),
                      values.reshape(mo, base.size, enc.n), axis=2)
    grp[:, at] = part
    w = grp.reshape(mo, g // (enc.m * enc.step), enc.step, kh, kw, enc.m)
    return w.transpose(0, 1, 5, 2, 3, 4).reshape(mo, g, kh, kw)


def conv_encoding(text: str) -> SparseWeights | NMWeights:
    """A SparseConv's weight encoding (`bcsr`/`csr` or `nm`)."""
    return NMWeights.parse(text) if text.split()[:1] == ["nm"] else SparseWeights.parse(text)


def encode_conv(ws: np.ndarray, enc: SparseWeights | NMWeights, hq: int, wq: int):
    """The three constant inputs of a SparseConv that stores `ws` as `enc`."""
    return (encode_nm if isinstance(enc, NMWeights) else encode_sparse)(ws, enc, hq, wq)


def decode_conv(v: np.ndarray, i: np.ndarray, p: np.ndarray, enc: SparseWeights | NMWeights,
                wshape, hq: int, wq: int) -> np.ndarray:
    """The staged weights a SparseConv's three constant inputs hold (for `bcsr` in the
    stored block rows' order, with its padding channels)."""
    return (decode_nm if isinstance(enc, NMWeights) else decode_sparse)(v, i, p, enc, wshape,
                                                                         hq, wq)


def pad_channels(w: np.ndarray, rows: int) -> np.ndarray:
    """w [M, ...] with zero channels appended up to a multiple of `rows`."""
    pad = -w.shape[0] % rows
    return np.concatenate([w, np.zeros((pad, *w.shape[1:]), w.dtype)]) if pad else w


def density(w: np.ndarray, rows: int = 1, cols: int = 1, step: int = 1) -> float:
    """The share of blocks (`rows` output channels x `cols` inputs `step` planes apart at
    one position, as SparseWeights.blocks) of staged weights w [M, G, KH', KW'] that are not
    all zero (channels padded to a multiple of `rows`)."""
    if not w.size:
        return 1.0
    blocks = SparseWeights(rows, cols, step).blocks(w)
    return float(np.any(blocks != 0, axis=(5, 6)).mean())


def balanced_order(work: np.ndarray, runs: int = 0) -> np.ndarray:
    """An order of items (block rows, slices) with weights `work` that balances every split
    of it into 2, 4, 8, ... contiguous parts of equal count (the thread pool's slices):
    recursive bisection, each half filled heaviest item first into the lighter side with
    room. Equal weights keep their order. With `runs`, the items move in that many runs of
    consecutive ones (about), each kept in order: a kernel that writes its outputs in the
    order it computes them then writes long runs in place, not scattered rows."""
    work = np.asarray(work, np.float64)
    if runs and work.size > runs:
        starts = np.arange(runs) * work.size // runs
        order = balanced_order(np.add.reduceat(work, starts))
        bounds = np.append(starts, work.size)
        return np.concatenate([np.arange(bounds[q], bounds[q + 1]) for q in order])

    def split(idx: np.ndarray) -> np.ndarray:
        if idx.size < 2:
            return idx
        half = idx.size // 2
        sides: tuple[list[int], list[int]] = ([], [])
        load = [0.0, 0.0]
        for i in idx[np.argsort(-work[idx], kind="stable")]:
            s = 0 if len(sides[1]) >= idx.size - half or \
                (len(sides[0]) < half and load[0] <= load[1]) else 1
            sides[s].append(int(i))
            load[s] += work[i]
        return np.concatenate([split(np.sort(np.array(sides[0], np.int64))),
                               split(np.sort(np.array(sides[1], np.int64)))])

    return split(np.arange(work.size))


def imbalance(work: np.ndarray, parts: int) -> float:
    """max / mean of the work per part when `work` (per item, in order) is split into `parts`
    contiguous parts as the thread pool splits a loop: part k takes [n*k/parts, n*(k+1)/parts)."""
    work = np.asarray(work, np.float64)
    n = work.size
    if n == 0 or parts < 2 or work.sum() == 0:
        return 1.0
    cuts = [n * k // parts for k in range(parts + 1)]
    loads = [work[cuts[k]:cuts[k + 1]].sum() for k in range(parts)]
    return float(max(loads) / (sum(loads) / parts))


def sparse_tile_shape(lanes: int, registers: int, rows: int) -> int:
    """V, the vectors of pixels per tile of the sparse convolution for blocks of `rows`
    channels: R*V accumulators, V input vectors and a broadcast in the register file, and 8
    accumulators or more where the rows allow (FMA latency x throughput)."""
    budget = 24 if registers >= 32 else 10
    return max(1, min(8, budget // rows))


MIN_TASKS = 16  # enough tasks for the thread pool to balance
SCRATCH_BYTES = 128 * 1024  # most of a task's scratch rows (on a worker's stack)


@dataclass(frozen=True)
class ConvTasks:
    """How the sparse convolution splits its work into the thread pool's tasks: (image,
    band of output rows, group of block rows), bands first. Bands hold one tile of pixels
    at least; there is an even number of them, their heights within one row of each other
    and spread so that every first half, quarter.. of them holds its share of the rows (the
    threads take contiguous runs of tasks: 28 rows as 6 bands of 5, 5, 5, 5, 5, 3 gave 2
    threads 15 and 13). Groups likewise: `ngroups` of them, group k holds block rows
    [k * B / G, (k + 1) * B / G), `per_group` or one fewer (120 rows in groups of at most 7
    as 17 of 7 and a last one of 1 left 2 threads 63 and 57 rows), and an even number where
    the images and bands are odd."""

    n: int
    oh: int
    nbands: int
    bh: int  # the tallest band
    lds: int  # scratch row stride: a band's pixels in whole vectors
    tile: int  # pixels per tile
    per_group: int  # the most block rows a group holds
    brows: int
    ngroups: int

    @staticmethod
    def of(n: int, m: int, oh: int, wq: int, rows: int, lanes: int,
           registers: int) -> ConvTasks:
        tile = sparse_tile_shape(lanes, registers, rows) * lanes
        nbands = -(-oh // min(oh, -(-tile // wq)))
        nbands -= nbands % 2 if nbands > 1 else 0
        if nbands > 1 and oh % 2 and oh < 20:
            # an odd number of rows leaves the threads' halves one row apart, 1 + 1/OH (3
            # rows: 2 to 1, a recognizer's 3 x 80 maps); under 20 rows (5%), one band, and
            # the tasks cut across the channels instead
            nbands = 1
        bh = -(-oh // nbands)
        lds = -(-bh * wq // lanes) * lanes
        brows = -(-m // rows)  # the last one holds padding channels where M % R != 0
        per_group = max(1, brows // max(1, -(-MIN_TASKS // (n * nbands))))
        per_group = min(per_group, max(1, SCRATCH_BYTES // (rows * lds * 4)))
        ngroups = -(-brows // per_group)
        if (n * nbands) % 2 and ngroups % 2 and 1 < ngroups < brows:
            ngroups += 1
        return ConvTasks(n, oh, nbands, bh, lds, tile, -(-brows // ngroups), brows, ngroups)

    @property
    def group_starts(self) -> np.ndarray:
        return np.arange(self.ngroups) * self.brows // self.ngroups

    @property
    def band_rows(self) -> np.ndarray:
        return np.diff(np.arange(self.nbands + 1) * self.oh // self.nbands)

    def imbalance(self, work: np.ndarray, threads: int) -> float:
        """max / mean work of `threads` contiguous slices of the tasks, for block rows (in
        the stored order) with `work` blocks each; a task's work is its band's rows x its
        block rows' blocks."""
        groups = np.add.reduceat(np.asarray(work, np.float64), self.group_starts)
        tasks = np.outer(np.tile(self.band_rows, self.n), groups).reshape(-1)
        parts = [tasks[tasks.size * k // threads:tasks.size * (k + 1) // threads].sum()
                 for k in range(threads)]
        return float(max(parts) / max(np.mean(parts), 1e-30))


# a block row's fixed cost in blocks, whatever its entries: its tile call per band and the
# copy of its rows out through the epilogue. Fitted on products over 40 rows run as
# convolutions ([40, 120] x [120, 6625], [40, 512] x [512, 512] at 90%): 5.5 ns a row
# against 1.64 ns an entry
ROW_COST = 3


def block_row_work(rowptr: np.ndarray) -> np.ndarray:
    """The work of each block row of a `bcsr` SparseConv in blocks: its stored blocks and
    `ROW_COST` (what the reorder pass balances and the report's imbalance counts)."""
    return np.diff(rowptr).astype(np.int64) + ROW_COST


def channel_order_work(work: np.ndarray, order) -> np.ndarray:
    """The work of stored block rows (stored row q computes channel block order[q]) in the
    channels' order."""
    out = np.empty_like(work)
    out[np.asarray(order, np.int64) if len(order) else np.arange(len(work))] = work
    return out
