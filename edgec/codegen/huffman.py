"""Canonical Huffman coding of a library's weights (`edgec compile --compress`).

Each weight array's bytes are coded on their own (int8 codes are one byte each, so a pruned
and quantized weight's zeros and small codes get short codes), with code lengths limited to
`MAX_BITS` so that the decoder (codegen/c/edgec_huffman.h) resolves a symbol with one lookup
in a 2^MAX_BITS table. The code is canonical, as in DEFLATE (RFC 1951, 3.2.2): only the 256
code lengths are stored; codes of one length are consecutive, in symbol order, and a shorter
code precedes a longer one. Bits are packed most significant first.

Two alphabets; each array takes the one that codes it smaller:

- `BYTES` (256 symbols): the bytes themselves;
- `RUNS` (512 symbols): bytes 1..255 as themselves, and symbol 256 + r for a run of r + 1
  zero bytes (r < 256; longer runs take several). A byte can cost no less than one bit, so
  an array that is mostly zero bytes (pruned weights) codes its zeros far smaller as runs.

A coded array is stored as its code lengths, two to a byte (symbol 2i in the low nibble:
128 bytes for BYTES, 256 for RUNS), followed by its bit stream; an array that neither would
make smaller is stored as it is (`CodedArray.alphabet` 0).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ..errors import EdgecError

MAX_BITS = 12
BYTES, RUNS = 256, 512  # the alphabets' sizes (and their codes in the library's table)


def code_lengths(freq: np.ndarray, limit: int = MAX_BITS) -> np.ndarray:
    """Huffman code lengths (0: symbol unused) for symbol counts `freq`, none
    longer than `limit`: where Huffman's would be, those are cut to `limit` and the least
    frequent shorter codes lengthened until the lengths form a code again (Kraft)."""
    freq = np.asarray(freq, np.int64)
    used = np.flatnonzero(freq)
    depth = np.zeros(freq.size, np.int64)
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
    """The code of each symbol for code `lengths` (RFC 1951's construction)."""
    lengths = np.asarray(lengths, np.int64)
    count = np.bincount(lengths, minlength=MAX_BITS + 1)
    count[0] = 0
    nxt, code = np.zeros(MAX_BITS + 2, np.int64), 0
    for bits in range(1, MAX_BITS + 1):
        code = (code + int(count[bits - 1])) << 1
        nxt[bits] = code
    codes = np.zeros(lengths.size, np.int64)
    for s in range(lengths.size):
        if lengths[s]:
            codes[s] = nxt[lengths[s]]
            nxt[lengths[s]] += 1
    return codes


def run_symbols(data: bytes) -> np.ndarray:
    """`data` in the RUNS alphabet: each non-zero byte itself, each run of zero bytes as
    symbols 256 + r (r + 1 zeros), runs longer than 256 split."""
    sym = np.frombuffer(data, np.uint8)
    nz = np.flatnonzero(sym)
    # the zeros before each non-zero byte, and after the last one
    gaps = np.diff(np.concatenate([[-1], nz, [sym.size]])) - 1
    full, rem = gaps // 256, gaps % 256
    lit = np.concatenate([np.ones(nz.size, np.int64), [0]])
    size = full + (rem > 0) + lit
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    out = np.full(int(size.sum()), RUNS - 1, np.int64)  # a run of 256
    r = rem > 0
    out[(start + full)[r]] = 255 + rem[r]
    out[(start + full + r)[:-1]] = sym[nz]
    return out


def from_run_symbols(symbols: np.ndarray) -> bytes:
    symbols = np.asarray(symbols, np.int64)
    count = np.where(symbols >= 256, symbols - 255, 1)
    return np.repeat(np.where(symbols >= 256, 0, symbols), count).astype(np.uint8).tobytes()


def encode_symbols(sym: np.ndarray, size: int) -> tuple[np.ndarray, bytes]:
    """(code lengths [size], bit stream) of the symbols `sym` (ints < size)."""
    sym = np.asarray(sym, np.int64)
    lengths = code_lengths(np.bincount(sym, minlength=size))
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


def encode_bytes(data: bytes) -> tuple[np.ndarray, bytes]:
    """(code lengths [256], bit stream) of `data` in the BYTES alphabet."""
    return encode_symbols(np.frombuffer(data, np.uint8), BYTES)


def _symbols(lengths: np.ndarray, stream: bytes):
    """The symbols of `stream`, one by one (the Python twin of the C decoder)."""
    lengths = np.asarray(lengths, np.int64)
    codes = canonical_codes(lengths)
    table = {(int(lengths[s]), int(codes[s])): int(s) for s in np.flatnonzero(lengths)}
    bits = np.unpackbits(np.frombuffer(stream, np.uint8))
    pos = 0
    while True:
        code, size = 0, 0
        while (size, code) not in table:
            if size == MAX_BITS or pos >= bits.size:
                raise EdgecError("coded weights do not decode: the stream is damaged")
            code, size, pos = (code << 1) | int(bits[pos]), size + 1, pos + 1
        yield table[(size, code)]


def decode_symbols(lengths: np.ndarray, stream: bytes, n: int) -> np.ndarray:
    """The `n` symbols that `encode_symbols` coded."""
    it = _symbols(lengths, stream)
    return np.array([next(it) for _ in range(n)], np.int64)


def decode_bytes(lengths: np.ndarray, stream: bytes, n: int) -> bytes:
    return decode_symbols(lengths, stream, n).astype(np.uint8).tobytes()


@dataclass
class CodedArray:
    """One weight array in the coded blob: `data` as stored (code lengths + bit stream, or
    the bytes themselves when `alphabet` is 0), `size` its bytes when decoded, `alphabet`
    BYTES or RUNS."""

    data: bytes
    size: int
    alphabet: int

    @property
    def coded(self) -> bool:
        return self.alphabet != 0


def pack_lengths(lengths: np.ndarray) -> bytes:
    lengths = np.asarray(lengths, np.uint8)
    return (lengths[0::2] | (lengths[1::2] << 4)).astype(np.uint8).tobytes()


def unpack_lengths(packed: bytes, size: int) -> np.ndarray:
    b = np.frombuffer(packed[:size // 2], np.uint8)
    out = np.empty(size, np.uint8)
    out[0::2], out[1::2] = b & 15, b >> 4
    return out


def code_array(data: bytes) -> CodedArray:
    """`data` coded in the alphabet that makes it smaller, or as it is when neither does."""
    best = CodedArray(data, len(data), 0)
    if not data:
        return best
    for size, sym in ((BYTES, np.frombuffer(data, np.uint8)), (RUNS, run_symbols(data))):
        lengths, stream = encode_symbols(sym, size)
        if size // 2 + len(stream) < len(best.data):
            best = CodedArray(pack_lengths(lengths) + stream, len(data), size)
    return best


def decode_array(ca: CodedArray) -> bytes:
    """The bytes `code_array` coded (Python; the library decodes in C)."""
    if not ca.coded:
        return ca.data
    lengths = unpack_lengths(ca.data, ca.alphabet)
    stream = ca.data[ca.alphabet // 2:]
    if ca.alphabet == BYTES:
        return decode_bytes(lengths, stream, ca.size)
    sym, have, it = [], 0, _symbols(lengths, stream)
    while have < ca.size:  # the symbols' count is not stored: the bytes' is
        s = next(it)
        sym.append(s)
        have += s - 255 if s >= 256 else 1
    out = from_run_symbols(np.array(sym, np.int64))
    if len(out) != ca.size:
        raise EdgecError("coded weights do not decode: a run passes the array's end")
    return out
