"""Canonical Huffman coding of a library's weights (`edgec compile --compress`).

Each weight array's bytes are coded on their own (int8 codes are one byte each, so a pruned
and quantized weight's zeros and small codes get short codes), with code lengths limited to
`MAX_BITS` so that the decoder (runtime/c/edgec_huffman.h) resolves a symbol with one lookup
in a 2^MAX_BITS table. The code is canonical, as in DEFLATE (RFC 1951, 3.2.2): only the 256
code lengths are stored; codes of one length are consecutive, in symbol order, and a shorter
code precedes a longer one. Bits are packed most significant first.

A coded array is stored as its 256 code lengths, two to a byte (symbol 2i in the low
nibble), followed by its bit stream; an array that this would not make smaller is stored
as it is (`CodedArray.coded` False).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ..errors import EdgecError

MAX_BITS = 12
TABLE_BYTES = 128  # 256 code lengths of 4 bits


def code_lengths(freq: np.ndarray, limit: int = MAX_BITS) -> np.ndarray:
    """Huffman code lengths [256] (0: symbol unused) for symbol counts `freq` [256], none
    longer than `limit`: where Huffman's would be, those are cut to `limit` and the least
    frequent shorter codes lengthened until the lengths form a code again (Kraft)."""
    freq = np.asarray(freq, np.int64)
    used = np.flatnonzero(freq)
    depth = np.zeros(256, np.int64)
    if used.size == 1:
        depth[used[0]] = 1
    heap = [(int(freq[s]), int(s), [int(s)]) for s in used]
    heapq.heapify(heap)
    while len(heap) > 1:
        wa, ta, sa = heapq.heappop(heap)
        wb, tb, sb = heapq.heappop(heap)
        depth[sa + sb] += 1
        heapq.heappush(heap, (wa + wb, min(ta, tb), sa + sb))
    if used.size and depth.max() > limit:
        depth[used] = np.minimum(depth[used], limit)
        room = 1 << limit
        kraft = int(sum(1 << (limit - int(d)) for d in depth[used]))
        rare = used[np.argsort(freq[used], kind="stable")]
        while kraft > room:
            s = next(s for s in rare if depth[s] < limit)
            kraft -= 1 << (limit - int(depth[s]) - 1)
            depth[s] += 1
    return depth.astype(np.uint8)


def canonical_codes(lengths: np.ndarray) -> np.ndarray:
    """The code [256] of each symbol for code `lengths` (RFC 1951's construction)."""
    lengths = np.asarray(lengths, np.int64)
    count = np.bincount(lengths, minlength=MAX_BITS + 1)
    count[0] = 0
    nxt, code = np.zeros(MAX_BITS + 2, np.int64), 0
    for bits in range(1, MAX_BITS + 1):
        code = (code + int(count[bits - 1])) << 1
        nxt[bits] = code
    codes = np.zeros(256, np.int64)
    for s in range(256):
        if lengths[s]:
            codes[s] = nxt[lengths[s]]
            nxt[lengths[s]] += 1
    return codes


def encode_bytes(data: bytes) -> tuple[np.ndarray, bytes]:
    """(code lengths [256], bit stream) of `data`."""
    sym = np.frombuffer(data, np.uint8)
    lengths = code_lengths(np.bincount(sym, minlength=256))
    codes = canonical_codes(lengths)
    # row s: the code of s, most significant bit first, in its first lengths[s] places
    j = np.arange(MAX_BITS)[None, :]
    shift = np.maximum(lengths.astype(np.int64)[:, None] - 1 - j, 0)
    rows = ((codes[:, None] >> shift) & 1).astype(np.uint8)
    keep = np.arange(MAX_BITS)[None, :] < lengths[:, None]
    out = []
    for lo in range(0, sym.size, 1 << 20):  # chunks of 1 Mi symbols: 12 MB of bits at most
        part = sym[lo:lo + (1 << 20)]
        out.append(rows[part][keep[part]])
    stream = np.concatenate(out) if out else np.zeros(0, np.uint8)
    return lengths, np.packbits(stream).tobytes()


def decode_bytes(lengths: np.ndarray, stream: bytes, n: int) -> bytes:
    """The `n` bytes that `encode_bytes` coded (the Python twin of the C decoder)."""
    lengths = np.asarray(lengths, np.int64)
    codes = canonical_codes(lengths)
    table = {(int(lengths[s]), int(codes[s])): s for s in np.flatnonzero(lengths)}
    bits = np.unpackbits(np.frombuffer(stream, np.uint8))
    out, pos = bytearray(), 0
    while len(out) < n:
        code, size = 0, 0
        while (size, code) not in table:
            if size == MAX_BITS or pos >= bits.size:
                raise EdgecError("coded weights do not decode: the stream is damaged")
            code, size, pos = (code << 1) | int(bits[pos]), size + 1, pos + 1
        out.append(table[(size, code)])
    return bytes(out)


@dataclass
class CodedArray:
    """One weight array in the coded blob: `data` as stored (code lengths + bit stream when
    `coded`, else the bytes themselves) and `size`, its bytes when decoded."""

    data: bytes
    size: int
    coded: bool


def pack_lengths(lengths: np.ndarray) -> bytes:
    lengths = np.asarray(lengths, np.uint8)
    return (lengths[0::2] | (lengths[1::2] << 4)).astype(np.uint8).tobytes()


def unpack_lengths(packed: bytes) -> np.ndarray:
    b = np.frombuffer(packed[:TABLE_BYTES], np.uint8)
    out = np.empty(256, np.uint8)
    out[0::2], out[1::2] = b & 15, b >> 4
    return out


def code_array(data: bytes) -> CodedArray:
    """`data` coded, or as it is when coding would not make it smaller."""
    if not data:
        return CodedArray(b"", 0, False)
    lengths, stream = encode_bytes(data)
    if TABLE_BYTES + len(stream) >= len(data):
        return CodedArray(data, len(data), False)
    return CodedArray(pack_lengths(lengths) + stream, len(data), True)
