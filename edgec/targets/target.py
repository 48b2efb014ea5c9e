"""Target descriptions: the ISA, its vector features and how to build C for it.

`x86` means the host's best x86 ISA (`-march=native`); `x86-avx2` and `x86-avx512` pin one;
`c-generic` is portable C99 with no ISA assumption.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import EdgecError


@dataclass(frozen=True)
class Target:
    name: str
    arch: str  # "x86_64", "generic"
    cc: str
    cflags: tuple[str, ...]
    features: frozenset[str] = frozenset()
    vector_bytes: int = 16
    doc: str = ""


_COMMON = ("-O3", "-std=c99", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off")

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("c-generic", "generic", "cc", ("-O2", "-std=c99"), doc="portable C99"),
    Target("x86", "x86_64", "cc", _COMMON + ("-march=native",), frozenset({"host"}), 64,
           "the host's best x86-64 vector ISA"),
    Target("x86-avx2", "x86_64", "cc", _COMMON + ("-march=haswell",),
           frozenset({"avx2", "fma"}), 32, "x86-64 with AVX2 and FMA (Haswell and later)"),
    Target("x86-avx512", "x86_64", "cc", _COMMON + ("-march=icelake-server",),
           frozenset({"avx2", "fma", "avx512f", "avx512vnni"}), 64,
           "x86-64 with AVX-512 and VNNI (Ice Lake server and later)"),
)}


def get_target(name: str | Target) -> Target:
    if isinstance(name, Target):
        return name
    try:
        return TARGETS[name]
    except KeyError:
        raise EdgecError(f"unknown target '{name}'; edgec knows: {', '.join(TARGETS)}") from None
