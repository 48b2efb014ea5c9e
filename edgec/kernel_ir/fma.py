"""float32 fused multiply-add for the kernel-IR interpreter, rounded once as the hardware's
is (numpy has no fma): the float64 sum where rounding it to float32 cannot differ from the
exact sum's rounding, the exact sum (fractions) for the few where it can."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np


def fma32(a, b, c):
    """a * b + c for float32 values (given as float64), rounded once to float32, as the
    hardware's fused multiply-add rounds it. In float64 the product is exact (24-bit by 24-bit
    significands) and the sum rounds once; rounding that to float32 again is a second rounding,
    wrong only where the float64 sum is exactly halfway between two float32 values (its low 29
    bits 1 then zeros) or in float32's subnormal range: those few are rounded from the exact
    sum (fractions), the others as they are."""
    s = a * b + c
    if np.ndim(s) == 0:  # a scalar: Python's float, no array calls
        v = float(s)
        bits = struct.unpack("<Q", struct.pack("<d", v))[0]
        if v != 0 and (bits & 0x1FFFFFFF == 0x10000000 or abs(v) < _TINY) and math.isfinite(v):
            return _round_f32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))
        return np.float32(v)
    s = np.asarray(s, np.float64)
    r = s.astype(np.float32)
    u = s.view(np.uint64)
    # halfway (low 29 bits 1 then zeros), or nonzero below float32's normal range (its
    # exponent under 2^-126, the exponent field 1 to 896, 0 wrapping round as unsigned)
    suspect = (u & _LOW29) == _HALF
    suspect |= ((u & _EXP) - _ONE) < _SUB
    if suspect.any():
        a, b, c = np.broadcast_arrays(a, b, c)
        for i in zip(*np.nonzero(suspect & np.isfinite(s))):
            r[i] = _round_f32(Fraction(float(a[i])) * Fraction(float(b[i]))
                              + Fraction(float(c[i])))
    return r


_LOW29, _HALF = np.uint64(0x1FFFFFFF), np.uint64(0x10000000)  # fma32's suspects
_TINY = 2.0 ** -126
_EXP, _ONE, _SUB = (np.uint64(v) for v in (0x7FF << 52, 1 << 52, 896 << 52))


def _round_f32(q: Fraction) -> np.float32:
    """The float32 nearest the exact nonzero value `q`, ties to even (inf past FLT_MAX)."""
    m = abs(q)
    e = m.numerator.bit_length() - m.denominator.bit_length()  # 2^(e-1) < m < 2^(e+1)
    if m < Fraction(2) ** e:
        e -= 1
    if m >= Fraction(2) ** (e + 1):
        e += 1
    ulp = Fraction(2) ** (max(e, -126) - 23)
    n, rest = divmod(m, ulp)
    n = int(n)
    if rest > ulp / 2 or (rest == ulp / 2 and n % 2):
        n += 1
    v = float(n * ulp)  # n < 2^25: exact in float64
    with np.errstate(over="ignore"):
        return np.float32(v if q > 0 else -v)
