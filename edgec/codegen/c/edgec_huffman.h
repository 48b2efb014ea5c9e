/* edgec_huffman.h: the decoder of a library's coded weights (`edgec compile --compress`;
 * the coder: edgec/codegen/huffman.py). Header-only, included by NAME.c of such a library.
 *
 * An array is coded as its canonical Huffman code lengths (4 bits each, symbol 2i in the low
 * nibble of byte i, at most EDGEC_HUFFMAN_BITS) and a bit stream, most significant bit
 * first, in one of two alphabets: 256 symbols (the bytes), or 512 (bytes 1..255, and
 * 256 + r for a run of r + 1 zero bytes). The decoder resolves each symbol with one lookup
 * in a table of 2^EDGEC_HUFFMAN_BITS entries (8 KB, on the stack). */
#ifndef EDGEC_HUFFMAN_H
#define EDGEC_HUFFMAN_H

#include <stddef.h>
#include <stdint.h>

#define EDGEC_HUFFMAN_BITS 12

/* Decode `n` bytes into `out` from `in` (`in_len` bytes: the lengths, then the stream) in
 * the alphabet of `symbols` (256 or 512). Returns 0, or -1 when the lengths do not form a
 * code, or the stream ends early, holds a code no symbol has or a run past `n`. */
static int edgec_huffman_decode(const uint8_t *in, size_t in_len, uint8_t *out, size_t n,
                                int symbols)
{
    enum { BITS = EDGEC_HUFFMAN_BITS, TABLE = 1 << EDGEC_HUFFMAN_BITS };
    uint16_t table[TABLE]; /* symbol << 4 | code length; 0: no code */
    unsigned count[16] = {0}, next[BITS + 1] = {0};
    size_t lengths = (size_t)symbols / 2;
    if ((symbols != 256 && symbols != 512) || in_len < lengths)
        return -1;
    for (int s = 0; s < symbols; ++s)
        ++count[(in[s >> 1] >> (4 * (s & 1))) & 15u];
    if (count[13] + count[14] + count[15] != 0)
        return -1;
    unsigned code = 0, room = 0;
    count[0] = 0;
    for (int len = 1; len <= BITS; ++len) {
        code = (code + count[len - 1]) << 1;
        next[len] = code;
        room += count[len] << (BITS - len);
    }
    if (room > TABLE)
        return -1; /* more codes than a prefix code can have */
    for (int i = 0; i < TABLE; ++i)
        table[i] = 0;
    for (int s = 0; s < symbols; ++s) {
        unsigned len = (in[s >> 1] >> (4 * (s & 1))) & 15u;
        if (len == 0)
            continue;
        unsigned first = next[len]++ << (BITS - len);
        for (unsigned j = 0; j < 1u << (BITS - len); ++j)
            table[first + j] = (uint16_t)((unsigned)s << 4 | len);
    }
    const uint8_t *p = in + lengths, *end = in + in_len;
    uint64_t buf = 0; /* the next `have` bits of the stream, from the top */
    int have = 0;
    for (size_t i = 0; i < n;) {
        while (have <= 56 && p < end) {
            buf |= (uint64_t)*p++ << (56 - have);
            have += 8;
        }
        unsigned e = table[buf >> (64 - BITS)];
        int len = (int)(e & 15u);
        if (len == 0 || len > have)
            return -1;
        unsigned sym = e >> 4;
        buf <<= len;
        have -= len;
        if (sym < 256) {
            out[i++] = (uint8_t)sym;
            continue;
        }
        size_t run = sym - 255;
        if (run > n - i)
            return -1;
        for (size_t k = 0; k < run; ++k)
            out[i + k] = 0;
        i += run;
    }
    return 0;
}

#endif /* EDGEC_HUFFMAN_H */
