"""Target descriptions: the ISA, its vector features and how to build C for it.

`x86` means the host's best x86 ISA (`-march=native`); `x86-avx2` and `x86-avx512` pin one;
`c-generic` is portable C99 with no ISA assumption.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    isa: str = ""  # the renderer's vector ISA (renderers/c.py VECTOR_ISAS); "" for none
    # for --backend llvm: LLVM's target triple, CPU ("host": this machine's) and features
    llvm_triple: str = ""
    llvm_cpu: str = ""
    llvm_features: str = ""

    def lanes(self, dtype) -> int:
        """Lanes of a vector register of `dtype`; 1 (scalar code) without a vector ISA or
        for a type the ISA's micro-kernels do not cover."""
        from .renderers.c import VECTOR_ISAS

        return VECTOR_ISAS[self.isa].lanes(dtype) if self.isa else 1


_X86 = "x86_64-unknown-linux-gnu"
_COMMON = ("-O3", "-std=c99", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off")

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("c-generic", "generic", "cc", ("-O2", "-std=c99"), doc="portable C99"),
    Target("x86", "x86_64", "cc", _COMMON + ("-march=native",), frozenset({"host"}), 64,
           "the host's best x86-64 vector ISA", llvm_triple=_X86, llvm_cpu="host"),
    Target("x86-avx2", "x86_64", "cc", _COMMON + ("-march=haswell",),
           frozenset({"avx2", "fma"}), 32, "x86-64 with AVX2 and FMA (Haswell and later)",
           "avx2", _X86, "haswell"),
    Target("x86-avx512", "x86_64", "cc", _COMMON + ("-march=icelake-server",),
           frozenset({"avx2", "fma", "avx512f", "avx512vnni"}), 64,
           "x86-64 with AVX-512 and VNNI (Ice Lake server and later)", "avx512", _X86,
           "icelake-server"),
)}


def host_x86_isa() -> str:
    """The best vector ISA of this machine's CPU that edgec has micro-kernels for."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        flags = []
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(flags):
        return "avx512"
    if {"avx2", "fma"} <= set(flags):
        return "avx2"
    return ""


def get_target(name: str | Target) -> Target:
    """The target called `name`; `x86` is resolved to the host's vector ISA."""
    if isinstance(name, Target):
        return name
    try:
        t = TARGETS[name]
    except KeyError:
        raise EdgecError(f"unknown target '{name}'; edgec knows: {', '.join(TARGETS)}") from None
    if "host" in t.features and not t.isa:
        isa = host_x86_isa()
        t = replace(t, vector_bytes=64 if isa == "avx512" else 32, isa=isa)
    return t
