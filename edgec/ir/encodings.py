"""Weight encodings: the stored form of a constant weight that a kernel reads as it is.

The `pack-weights` pass replaces the weight of a blocked integer convolution by a 1-D int8
constant in the order its tile reads it and names the encoding in the node's `wenc`
attribute (the logical shape in `wshape`), so the text IR shows what the artifact stores and
the interpreter decodes it back (`decode_qconv`) to run the op's definition. The weights are
centred (W - zw: the op's zero point input is then absent).

- `dot4 l16 x16 m2`: the dense convolution tile of `microkernels_int8.qconv_tile`, for
  output blocks of L lanes and input blocks of X channels, in groups of M output blocks (the
  last group may hold fewer): per group [input block][kh][kw][g][j][lane][4], input channel
  X*cb + 4g + q at q, zero past the channels;
- `... nib`: the same int8 vectors two to a byte, for weights in [-8, 7]: per (input block,
  kh, kw) the group's vectors are taken C at a time (C groups of 4 input channels, 1, or 2
  when M is odd), their sequence [g][j] padded to an even count, and vector 2p goes to the
  low nibbles of packed vector p, vector 2p+1 to the high ones. The tile unpacks a byte with
  kernel-IR `nibble` into 16 * w (the requantization divides by 16 exactly);
- `... sparse`: the `dot4` bytes, and the kernel runs the sparse tile over the dot4 groups
  (L output channels x 4 input channels at one tap) that hold a weight only, skipping the
  rest (its tables of stored groups derived from these bytes); chosen where at most
  `SPARSE_GROUPS` of the groups hold one (`qconv_group_share`);
- `dw l16`: a depthwise weight [C, 1, KH, KW] as [cb][kh][kw][lane], zero past C.

The constant int8 B [K, N] of an integer GEMM (MatMulInteger, QLinearMatMul, QGemm: attributes
`benc` and `bshape` = [K, N]; B itself, not centred: its zero point stays an input):

- `gemm l16 v2`: the panels of `microkernels_int8.gemm_tile`, W = V*L columns each (zero past
  N): per panel [K/4][W][4] (the 4 consecutive k of a column side by side: one 4L-byte vector
  per k-group and L columns); then, where K % 4 is not 0 (K >= 4), one more k-group per panel
  for the rows K-4 .. K-1, those already in the last whole group zero: the tile reads A's last
  4 bytes against it, one dot4 instead of K % 4 int32 multiplies;
- `... nib`: for B in [-8, 7], each k-group's V vectors two to a byte (vector 2p in the low
  nibbles of packed vector p, 2p+1 in the high ones, V padded to even), unpacked with
  `nibble` into 16 * b.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EdgecError


@dataclass(frozen=True)
class QConvWeights:
    """The encoding of a BlockedQLinearConv's weights (see the module doc)."""

    kind: str  # "dot4" or "dw"
    lanes: int
    xb: int = 0  # input block (dot4)
    mb: int = 0  # output blocks per group (dot4)
    nibbles: bool = False
    sparse: bool = False  # the kernel skips the dot4 groups whose bytes are all 0

    def __str__(self) -> str:
        if self.kind == "dw":
            return f"dw l{self.lanes}"
        return f"dot4 l{self.lanes} x{self.xb} m{self.mb}" + (" nib" if self.nibbles else "") \
            + (" sparse" if self.sparse else "")

    @staticmethod
    def parse(text: str) -> QConvWeights:
        words = text.split()
        try:
            if words[0] == "dw" and len(words) == 2:
                return QConvWeights("dw", _num(words[1], "l"))
            if words[0] == "dot4" and len(words) in (4, 5) and \
                    words[4:] in ([], ["nib"], ["sparse"]):
                return QConvWeights("dot4", _num(words[1], "l"), _num(words[2], "x"),
                                    _num(words[3], "m"), words[4:] == ["nib"],
                                    words[4:] == ["sparse"])
        except (IndexError, ValueError):
            pass
        raise EdgecError(f"weight encoding {text!r} is not one of 'dot4 lL xX mM [nib|sparse]' "
                         "or 'dw lL'")

    def chunk(self, groups: int, mb: int) -> int:
        """Groups of 4 input channels packed together for M output blocks: 2 when two
        halves of M vectors each make whole bytes only together."""
        return 2 if self.nibbles and mb % 2 and groups % 2 == 0 else 1

    def kw_bytes(self, mb: int) -> int:
        """Bytes per (input block, kh, kw) of a group of `mb` output blocks."""
        groups, vec = self.xb // 4, 4 * self.lanes
        if not self.nibbles:
            return groups * mb * vec
        c = self.chunk(groups, mb)
        return groups // c * -(-c * mb // 2) * vec


def _num(word: str, prefix: str) -> int:
    if not word.startswith(prefix) or int(word[len(prefix):]) <= 0:
        raise ValueError(word)
    return int(word[len(prefix):])


def fits_nibbles(wc: np.ndarray) -> bool:
    return bool(wc.size) and int(wc.min()) >= -8 and int(wc.max()) <= 7


def encode_qconv(wc: np.ndarray, enc: QConvWeights) -> np.ndarray:
    """Centred weights [M, C/group, KH, KW] (int8 range) in encoding `enc`, as 1-D int8."""
    m, c, kh, kw = wc.shape
    lanes = enc.lanes
    mblocks = -(-m // lanes)
    if enc.kind == "dw":
        wp = np.zeros((mblocks * lanes, kh, kw), np.int8)
        wp[:m] = wc[:, 0]
        return np.ascontiguousarray(wp.reshape(mblocks, lanes, kh, kw)
                                    .transpose(0, 2, 3, 1).reshape(-1))
    xb, groups = enc.xb, enc.xb // 4
    cbin = -(-c // xb)
    wp = np.zeros((mblocks * lanes, cbin * xb, kh, kw), np.int8)
    wp[:m, :c] = wc
    parts = []
    for g0 in range(0, mblocks, enc.mb):
        mb = min(mblocks, g0 + enc.mb) - g0
        blk = wp[g0 * lanes:(g0 + mb) * lanes].reshape(mb, lanes, cbin, groups, 4, kh, kw)
        # (j, lane, cb, g, q, kh, kw) -> (cb, kh, kw, g, j, lane, q): vectors of 4L bytes
        vecs = blk.transpose(2, 5, 6, 3, 0, 1, 4).reshape(cbin, kh, kw, groups * mb, -1)
        if enc.nibbles:
            vecs = _pack_nibbles(vecs, groups, mb, enc.chunk(groups, mb))
        parts.append(vecs.reshape(-1))
    return np.ascontiguousarray(np.concatenate(parts))


def _pack_nibbles(vecs: np.ndarray, groups: int, mb: int, c: int) -> np.ndarray:
    """[..., groups * mb, 4L] int8 in [-8, 7] -> [..., packed vectors, 4L], chunk by chunk."""
    out = []
    for k in range(groups // c):
        seq = vecs[..., k * c * mb:(k + 1) * c * mb, :]
        if seq.shape[-2] % 2:
            seq = np.concatenate([seq, np.zeros_like(seq[..., :1, :])], axis=-2)
        lo = seq[..., 0::2, :].astype(np.uint8) & 0x0F
        hi = seq[..., 1::2, :].astype(np.uint8) << 4
        out.append((lo | hi).view(np.int8))
    return np.concatenate(out, axis=-2)


def decode_qconv(data: np.ndarray, enc: QConvWeights, shape) -> np.ndarray:
    """The centred weights [M, C/group, KH, KW] (int32) that `encode_qconv` stored."""
    m, c, kh, kw = (int(d) for d in shape)
    lanes = enc.lanes
    mblocks = -(-m // lanes)
    data = np.asarray(data, np.int8).reshape(-1)
    if data.size != encoded_size(enc, shape):
        raise EdgecError(f"weights encoded as '{enc}' for {list(shape)} take "
                         f"{encoded_size(enc, shape)} bytes, not {data.size}")
    if enc.kind == "dw":
        w = data.reshape(mblocks, kh, kw, lanes).transpose(0, 3, 1, 2).reshape(-1, kh, kw)
        return w[:m, None].astype(np.int32)
    xb, groups = enc.xb, enc.xb // 4
    cbin = -(-c // xb)
    blocks, at = [], 0
    for g0 in range(0, mblocks, enc.mb):
        mb = min(mblocks, g0 + enc.mb) - g0
        size = cbin * kh * kw * enc.kw_bytes(mb)
        vecs = data[at:at + size].reshape(cbin, kh, kw, -1, 4 * lanes)
        at += size
        if enc.nibbles:
            vecs = _unpack_nibbles(vecs, groups, mb, enc.chunk(groups, mb))
        blk = vecs.reshape(cbin, kh, kw, groups, mb, lanes, 4).transpose(4, 5, 0, 3, 6, 1, 2)
        blocks.append(blk.reshape(mb * lanes, cbin * xb, kh, kw))
    return np.concatenate(blocks)[:m, :c].astype(np.int32)


def _unpack_nibbles(vecs: np.ndarray, groups: int, mb: int, c: int) -> np.ndarray:
    per = -(-c * mb // 2)
    out = []
    for k in range(groups // c):
        p = vecs[..., k * per:(k + 1) * per, :].view(np.uint8)
        lo = ((p << 4).view(np.int8) >> 4)
        hi = (p.view(np.int8) >> 4)
        seq = np.stack([lo, hi], axis=-2).reshape(*p.shape[:-2], 2 * per, p.shape[-1])
        out.append(seq[..., :c * mb, :])
    return np.concatenate(out, axis=-2)


def encoded_size(enc: QConvWeights, shape) -> int:
    m, c, kh, kw = (int(d) for d in shape)
    mblocks = -(-m // enc.lanes)
    if enc.kind == "dw":
        return mblocks * kh * kw * enc.lanes
    cbin = -(-c // enc.xb)
    full, rest = divmod(mblocks, enc.mb)
    return cbin * kh * kw * (full * enc.kw_bytes(enc.mb) + (enc.kw_bytes(rest) if rest else 0))


# -- the tile a blocked int8 convolution gets (the encoding's M follows it) ---------------------

def qconv_tiles(lanes: int, registers: int) -> tuple[int, int]:
    """(MB, R): output blocks and pixels of the int8 convolution tile: MB*R accumulators, MB
    weight vectors and one broadcast (AVX2's and NEON's exact dot4 widen into temporaries:
    4 registers more)."""
    if lanes >= 16:
        return 2, 14
    if registers >= 32:
        return 4, 4
    return 2, 4 if lanes >= 8 else 3


def row_tiles(ow: int, r_max: int) -> list[tuple[int, int]]:
    """(first pixel, pixels) of the tiles along a row: as few as R allows, of even sizes (a
    row of 14 is two tiles of 7, not 12 and a 2-pixel tile that wastes the registers)."""
    n = -(-ow // r_max)
    base, extra = divmod(ow, n)
    sizes = [base + 1] * extra + [base] * (n - extra)
    return [(sum(sizes[:k]), r) for k, r in enumerate(sizes)]


def qconv_blocks(lanes: int, registers: int, ow: int, mblocks: int) -> tuple[int, int]:
    """(MB, R max) of the dense int8 convolution tile for output rows of `ow` pixels."""
    mb_max, r_max = qconv_tiles(lanes, registers)
    # short rows (14 and 7 pixels: tiles of 7) leave accumulators free: more output blocks
    # per tile keep as many sums in flight (3 x 7 = 21 on AVX-512 instead of 2 x 7 = 14)
    r = max(t for _, t in row_tiles(ow, r_max))
    if r < r_max:  # as many blocks as the registers hold: MB*R sums, MB weights, a broadcast
        spare = registers - 1 - (4 if lanes < 16 else 0)  # (widening dot4 temps)
        mb_max = max(mb_max, min(4, spare // (r + 1), mb_max * r_max // r))
    return min(mb_max, mblocks), r_max


def qconv_encoding(lanes: int, depthwise: bool, xb: int, mblocks: int, ow: int,
                   wc: np.ndarray, registers: int, sparse: int = -1) -> QConvWeights:
    """The encoding a blocked int8 convolution's kernel reads: output blocks of `lanes`,
    input blocks of `xb`, `mblocks` output blocks, rows of `ow`, centred weights `wc`; int8
    weights run sparse where `sparse` is 1 and a group is empty, or -1 and at most
    `SPARSE_GROUPS` of the groups hold a weight (0: never)."""
    if depthwise:
        return QConvWeights("dw", lanes)
    mb, _ = qconv_blocks(lanes, registers, ow, mblocks)
    if fits_nibbles(wc):
        return QConvWeights("dot4", lanes, xb, mb, True)
    share = qconv_group_share(wc, lanes) if sparse else 1.0
    return QConvWeights("dot4", lanes, xb, mb,
                        sparse=share <= SPARSE_GROUPS if sparse == -1 else share < 1)


def qconv_group_share(wc: np.ndarray, lanes: int) -> float:
    """The share of the dot4 groups of centred conv weights `wc` [M, C, KH, KW] (blocks of
    `lanes` output channels x 4 input channels at one tap; channels zero-padded to whole
    groups) that hold a weight."""
    m, c, kh, kw = wc.shape
    w = np.zeros((-(-m // lanes) * lanes, -(-c // 4) * 4, kh, kw), bool)
    w[:m, :c] = wc != 0
    groups = w.reshape(-1, lanes, w.shape[1] // 4, 4, kh, kw).any(axis=(1, 3))
    return float(groups.mean()) if groups.size else 1.0


# -- integer GEMM weights -------------------------------------------------------------------------

@dataclass(frozen=True)
class GemmWeights:
    """The encoding of an integer GEMM's constant B (see the module doc)."""

    lanes: int
    nv: int
    nibbles: bool = False
    sparse: bool = False  # the kernel reads only the dot4 groups whose bytes are not all 0

    def __str__(self) -> str:
        return f"gemm l{self.lanes} v{self.nv}" + (" nib" if self.nibbles else "") + \
            (" sparse" if self.sparse else "")

    @staticmethod
    def parse(text: str) -> GemmWeights:
        words = text.split()
        try:
            if words[0] == "gemm" and len(words) in (3, 4) and words[3:] in ([], ["nib"],
                                                                             ["sparse"]):
                return GemmWeights(_num(words[1], "l"), _num(words[2], "v"),
                                   words[3:] == ["nib"], words[3:] == ["sparse"])
        except (IndexError, ValueError):
            pass
        raise EdgecError(f"weight encoding {text!r} is not 'gemm lL vV [nib|sparse]'")

    @property
    def width(self) -> int:
        return self.lanes * self.nv

    @property
    def group_vectors(self) -> int:
        """4L-byte vectors stored per k-group of a panel."""
        return -(-self.nv // 2) if self.nibbles else self.nv

    def sizes(self, k: int, n: int) -> tuple[int, int]:
        """(bytes of the whole k-groups, bytes of the tail groups of the K % 4 rows)."""
        panels = -(-n // self.width)
        group = self.group_vectors * 4 * self.lanes
        return panels * (k // 4) * group, panels * group if k % 4 else 0


def encode_gemm(b: np.ndarray, enc: GemmWeights) -> np.ndarray:
    """B [K, N] (int8; K >= 4 where K % 4 is not 0) in encoding `enc`, as 1-D int8."""
    k, n = b.shape
    w = enc.width
    panels = -(-n // w)
    bpad = np.zeros((k, panels * w), np.int8)
    bpad[:, :n] = b
    g, kt = k // 4, k % 4
    parts = [_gemm_groups(bpad[:g * 4], enc, panels)]
    if kt:  # rows K-4 .. K-1, the ones of the last whole group zero
        if k < 4:
            raise EdgecError(f"an int8 GEMM panel needs K >= 4, not {k}")
        tail = np.zeros((4, panels * w), np.int8)
        tail[4 - kt:] = bpad[g * 4:]
        parts.append(_gemm_groups(tail, enc, panels))
    return np.ascontiguousarray(np.concatenate(parts))


def _gemm_groups(rows: np.ndarray, enc: GemmWeights, panels: int) -> np.ndarray:
    """Rows [4G, P*W] of B as P panels of G k-groups of 4L-byte vectors (nibble-packed)."""
    g = rows.shape[0] // 4
    # (g, q, p, v, lane) -> (p, g, v, lane, q): vectors of 4L bytes
    full = rows.reshape(g, 4, panels, enc.nv, enc.lanes).transpose(2, 0, 3, 4, 1)
    full = full.reshape(panels, g, enc.nv, 4 * enc.lanes)
    if enc.nibbles:
        full = _pack_nibbles(full, 1, enc.nv, 1)
    return full.reshape(-1)


def _gemm_rows(data: np.ndarray, enc: GemmWeights, panels: int, g: int) -> np.ndarray:
    """The inverse of _gemm_groups: rows [4G, P*W]."""
    full = data.reshape(panels, g, enc.group_vectors, 4 * enc.lanes)
    if enc.nibbles:
        full = _unpack_nibbles(full, 1, enc.nv, 1)
    full = full.reshape(panels, g, enc.nv, enc.lanes, 4).transpose(1, 4, 0, 2, 3)
    return full.reshape(g * 4, panels * enc.width)


def decode_gemm(data: np.ndarray, enc: GemmWeights, shape) -> np.ndarray:
    """The B [K, N] (int8) that `encode_gemm` stored."""
    k, n = (int(d) for d in shape)
    full_size, tail_size = enc.sizes(k, n)
    data = np.asarray(data, np.int8).reshape(-1)
    if data.size != full_size + tail_size:
        raise EdgecError(f"weights encoded as '{enc}' for {[k, n]} take "
                         f"{full_size + tail_size} bytes, not {data.size}")
    g, kt = k // 4, k % 4
    panels = -(-n // enc.width)
    rows = [_gemm_rows(data[:full_size], enc, panels, g)]
    if kt:
        rows.append(_gemm_rows(data[full_size:], enc, panels, 1)[4 - kt:])
    return np.ascontiguousarray(np.concatenate(rows)[:, :n]).astype(np.int8)


# the share of dot4 groups (L output channels or columns x 4 inputs, at one tap of a
# convolution) with a weight that is not zero under which the int8 kernels read only the
# stored ones: a stored group costs what a dense one does (one weight vector, a broadcast
# and a dot4 per row or pixel) plus its index, and the dense tiles share their broadcasts
# between several vectors of outputs
SPARSE_GROUPS = 0.5


def gemm_groups(b: np.ndarray, lanes: int, nv: int) -> np.ndarray:
    """[panels * nv, K // 4] bool: which dot4 groups of B [K, N] (4 rows x `lanes` columns,
    per vector of each panel of nv vectors) hold a weight; the K % 4 tail rows not counted."""
    k, n = b.shape
    w = lanes * nv
    panels = -(-n // w)
    bpad = np.zeros((k // 4 * 4, panels * w), bool)
    bpad[:, :n] = b[:k // 4 * 4] != 0
    return bpad.reshape(k // 4, 4, panels * nv, lanes).any(axis=(1, 3)).T


def gemm_encoding(lanes: int, b: np.ndarray, sparse: int = -1) -> GemmWeights:
    """The encoding the int8 GEMM micro-kernel reads for B at `lanes` int32 lanes: the
    tile's V vectors (`gemm_tile_shape`), two to a byte where B fits 4 bits, else the stored
    dot4 groups only (`sparse`: 1 always, 0 never, -1 where at most `SPARSE_GROUPS` of the
    groups of the real columns hold a weight)."""
    nv = gemm_tile_shape(lanes)[1]
    if fits_nibbles(b) or b.shape[0] < 4:
        return GemmWeights(lanes, nv, True) if fits_nibbles(b) else GemmWeights(lanes, nv)
    if sparse == -1:
        groups = gemm_groups(b, lanes, nv)[:-(-b.shape[1] // lanes)]
        sparse = int(groups.size > 0 and groups.mean() <= SPARSE_GROUPS)
    return GemmWeights(lanes, nv, sparse=bool(sparse))


def gemm_tile_shape(lanes: int) -> tuple[int, int]:
    """(MR, NV) of the int8 GEMM register tile: MR*NV accumulators, NV panel vectors and a
    broadcast row (AVX2's dot4 needs 4 more registers for its widened halves). AVX-512: 6 x 4
    (24 sums, 4 panel vectors, a broadcast: 29 of the 32 registers), 4-10% faster than 6 x 2
    on six of the eight GEMM suite shapes, 3% slower on two (benchmarks/bench_int8_gemm.py)."""
    return (6, 4) if lanes >= 16 else (4, 2) if lanes >= 8 else (2, 2)


def gemm_pairs(b: np.ndarray) -> np.ndarray:
    """[..., 2]: the byte pairs of B [K, N] (K >= 4) as the GEMM tile's k-groups hold them
    (rows 4g, 4g+1 and 4g+2, 4g+3 of each column; the K % 4 tail rows as the last 2 or 4
    bytes of one more group, its rows before 4 * (K // 4) zero), for int8 dot products
    whose 16-bit pair sums must not saturate (kernel_ir/kernel.py pairs_fit16)."""
    k, n = b.shape
    full = np.asarray(b[:k // 4 * 4], np.int64).reshape(-1, 2, n)
    tail = np.asarray(b[k - 4:], np.int64).copy()
    tail[:4 - k % 4] = 0
    return np.concatenate([full, tail.reshape(2, 2, n)]).transpose(0, 2, 1)


def qconv_pairs(wc: np.ndarray) -> np.ndarray:
    """[..., 2]: the byte pairs of conv weights `wc` [M, C, KH, KW] as the dot4 encodings
    hold them (input channels 4q, 4q+1 and 4q+2, 4q+3 at one tap; C padded with zeros)."""
    m, c, kh, kw = wc.shape
    w = np.zeros((m, -(-c // 4) * 4, kh, kw), np.int64)
    w[:, :c] = wc
    return np.moveaxis(w.reshape(m, -1, 2, kh, kw), 2, -1)


# -- float weights stored as their integer codes ---------------------------------------------

CODES = "codes"  # the Value.meta key of a float constant's WeightCodes


@dataclass(frozen=True)
class WeightCodes:
    """The integer codes a float constant was dequantized from: const == codes * scale, the
    product in float32 with one scale per index of `axis` (the `dequantize-weights` pass
    records them on the constant it folds, for kernels that store the codes and convert them
    in the tile: a quarter of the float weights' bytes). Passes that move the constant's
    elements carry them with `mapped`; a kernel takes them only through `weight_codes`, which
    checks that they still give the constant exactly."""

    codes: np.ndarray  # int8, the constant's shape
    scale: np.ndarray  # float32, [shape[axis]]
    axis: int

    def full_scale(self) -> np.ndarray:
        shape = [1] * self.codes.ndim
        shape[self.axis] = -1
        return np.broadcast_to(self.scale.reshape(shape), self.codes.shape)

    def dequantized(self) -> np.ndarray:
        return self.codes.astype(np.float32) * self.full_scale()

    def channel_scales(self, axis: int) -> np.ndarray | None:
        """One scale per index of `axis` (a kernel's output channels), or None where the
        scales vary along another axis."""
        axis %= self.codes.ndim
        if axis == self.axis:
            return self.scale
        if np.all(self.scale == self.scale[0]):
            return np.full(self.codes.shape[axis], self.scale[0], np.float32)
        return None

    def mapped(self, fn, axis: int) -> WeightCodes:
        """The codes of `fn(constant)`, where `fn` only moves elements (a transpose, a
        permutation, padding with zeros) and the scales run along `axis` of the result."""
        codes, full = fn(self.codes), fn(np.ascontiguousarray(self.full_scale()))
        pick = [0] * codes.ndim
        pick[axis] = slice(None)
        return WeightCodes(np.ascontiguousarray(codes), np.ascontiguousarray(full[tuple(pick)]),
                           axis % codes.ndim)


def weight_codes(value) -> WeightCodes | None:
    """The codes recorded on constant `value` (`WeightCodes`), where they still give its
    values exactly; None where there are none or a pass changed the constant without them."""
    wc = value.meta.get(CODES) if value.is_const else None
    if wc is None or wc.codes.shape != value.const.shape or value.const.dtype != np.float32:
        return None
    return wc if np.array_equal(wc.dequantized(), value.const) else None


def carry_codes(src, dst, fn, axis: int) -> None:
    """Record on constant `dst` = fn(src's constant) the codes of `src` moved the same way
    (`WeightCodes.mapped`), where `src` has codes."""
    wc = weight_codes(src)
    if wc is not None:
        dst.meta[CODES] = wc.mapped(fn, axis)
