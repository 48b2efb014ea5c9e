"""Target descriptions: the ISA, its vector features and how to build C for it.

`x86` means the host's best x86 ISA (`-march=native`); `x86-avx2` and `x86-avx512` pin one;
`c-generic` is portable C99 with no ISA assumption. `arm64` (Armv8-A with NEON),
`arm64-dotprod` (the same, plus Armv8.2 dot-product kernels chosen at run time) and `armv7`
(32-bit Armv7-A with NEON and VFPv4) are cross targets: built with the Debian cross compilers
and run, off the device, under their qemu-user `emulator`.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, replace

from ..errors import EdgecError
from ..ir.dtypes import DType
from .uarch import MICROARCHS, UNKNOWN, identify


@dataclass(frozen=True)
class VectorUnit:
    """What a vector ISA offers the kernel builders, whatever renders it: the register width
    and count (which bound register tiles), the element types it has vectors of, and how it
    forms int8 dot products (`dot4`, see kernel_ir)."""

    name: str
    width: int  # bytes per register
    registers: int
    dtypes: frozenset[DType]
    dot4: str  # the instructions of one dot4: "vpdpbusd", "vpmaddwd", "smull+addp", "sdot"
    # those of a dot4 whose weight pairs fit int16 (kernel IR dot4p), where cheaper than dot4's
    dot4_pairs16: str = ""
    # whether uint8 x int8 costs more than int8 x int8 (NEON: the widening of a; sdot's
    # correction term), so that the int8 tiles re-centre uint8 rows (kernel_ir.recentre)
    dot4_recentre: bool = False

    def lanes(self, dtype: DType) -> int:
        return self.width // dtype.itemsize if dtype in self.dtypes else 1


_VECTOR_TYPES = frozenset({DType.F32, DType.I32, DType.U8, DType.I8})
VECTOR_UNITS: dict[str, VectorUnit] = {u.name: u for u in (
    VectorUnit("avx512", 64, 32, _VECTOR_TYPES, "vpdpbusd"),
    VectorUnit("avx2", 32, 16, _VECTOR_TYPES, "vpmaddwd",  # bytes widened to 16 bits
               "vpmaddubsw+vpmaddwd"),
    VectorUnit("avx2-vnni", 32, 16, _VECTOR_TYPES, "vpdpbusd"),  # AVX-VNNI, chosen at run time
    VectorUnit("neon", 16, 32, _VECTOR_TYPES, "smull+addp", dot4_recentre=True),  # aarch64
    # Armv8.2-A, chosen at run time
    VectorUnit("neon-dotprod", 16, 32, _VECTOR_TYPES, "sdot", dot4_recentre=True),
    VectorUnit("neon-armv7", 16, 16, _VECTOR_TYPES, "smull+addp", dot4_recentre=True),
)}


@dataclass(frozen=True)
class Caches:
    """The data caches kernel builders size their blocks for: the L1 and L2 of one core and
    the line. The defaults are the common x86 and Arm sizes (32 KB L1, 512 KB L2 and up)."""

    l1d: int = 32 * 1024
    l2: int = 512 * 1024
    line: int = 64


@dataclass(frozen=True)
class Tiles:
    """The tile sizes kernel builders start from (lowering/strategies.py's candidates read
    them), measured on one host: the Intel Xeon the convolutions were tuned on. A target may
    set its own; a `--strategy` override may set a node's."""

    # float register tiles (kernels/conv.py): output channels (one vector of accumulators
    # per pixel), pixels along a row (with more, gcc's register allocator sometimes spills
    # accumulators inside the innermost loop), and the widest row interior that is one tile
    # (the 5 pixels of a 7x7 map)
    conv_m: int = 8
    conv_p: int = 4
    conv_p_one: int = 8
    # pointwise convolutions as GEMM tiles: output channels a pass updates per load of an x
    # row, input channels it adds per load and store of a y row, the share of L2 a tile of
    # x takes (192 KB of 512) and the bounds of its pixels
    pointwise_rows: int = 8
    pointwise_depth: int = 4
    pointwise_l2_share: float = 3 / 8
    pointwise_min: int = 64
    pointwise_max: int = 1024
    # integer convolutions (kernels/quant_conv.py): output channels per register tile (8
    # int32 accumulators are one AVX2 vector); outputs of at most `int_unroll_terms` terms
    # written out for `int_unroll_channels` channels at a time, unless they have more than
    # `int_tile_terms` terms and fit register tiles
    int_conv_m: int = 8
    int_unroll_terms: int = 49
    int_unroll_channels: int = 4
    int_tile_terms: int = 12
    # pixels per tile of the blocked int8 depthwise convolution (kernels/blocked_quant.py)
    int8_depthwise_pixels: int = 8
    # sparse gathers (kernels/sparse.py): rows of A per pass over a slice, its values and
    # indices loaded once for them
    sparse_row_block: int = 4
    # int4 weights of a blocked int8 convolution (kernels/blocked_quant.py) are unpacked once
    # per task into a stack buffer when a group's take at most this many bytes, else by the
    # tile as it reads them
    int4_unpack_bytes: int = 128 * 1024
    # the blocked float convolution (kernels/blocked.py) halves its bands of output rows
    # until the thread pool has this many tasks to balance, and prefetches the next chunk of
    # weights only for weights this large (smaller ones are re-read from L2 anyway; the
    # prefetch costs about 150 bytes of code a convolution)
    parallel_min_tasks: int = 16
    prefetch_min_bytes: int = 256 * 1024
    # transposes (kernels/tensor.py): walked in tiles from this many elements of the two
    # swapped dims (smaller ones stay in cache: a plain loop nest is as fast), and a 2-D
    # transpose given to the thread pool from this many
    transpose_tile_min: int = 4096
    transpose_parallel_min: int = 16384
    # float accumulators per output of a reduction over the innermost axis (kernels/reduce.py)
    reduce_lanes: int = 8


@dataclass(frozen=True)
class Rates:
    """What the strategies' cost model (lowering/strategies.py `roofline`) knows of one core:
    its clock, the vector FMAs it issues per cycle and the bandwidth it streams memory at.
    The defaults are a 3 GHz core with two FMA pipes and 20 GB/s: the model ranks one node's
    candidates, so only the ratios matter."""

    hz: float = 3.0e9
    fma_per_cycle: int = 2
    bandwidth: float = 20.0e9  # bytes per second


@dataclass(frozen=True)
class GpuUnit:
    """What a GPU offers its kernels (kernel_ir/gpu.py launches within these): streaming
    multiprocessors, shared memory a block may take, threads per warp and per block, 32-bit
    registers per multiprocessor, the architectures the library is built for (nvcc's
    sm_XY, each with its PTX so that newer GPUs take it too), and the precision of its
    matrix products."""

    name: str
    sms: int
    shared_per_block: int  # bytes, without opting in to more
    warp: int = 32
    max_threads_per_block: int = 1024
    registers_per_sm: int = 65536
    archs: tuple[str, ...] = ("sm_90",)
    # the operands of float GEMMs and convolutions (--precision): fp32 on the CUDA cores, or
    # fp16, bf16, tf32 on tensor cores (sm_80 on) with float32 sums
    precision: str = "fp32"


# the GPUs edgec knows; the default is the H100 (SXM) the GPU checks run on
GPU_UNITS: dict[str, GpuUnit] = {g.name: g for g in (
    GpuUnit("h100", 132, 48 * 1024, archs=("sm_90",)),
    GpuUnit("a100", 108, 48 * 1024, archs=("sm_80",)),
)}


@dataclass(frozen=True)
class Target:
    name: str
    arch: str  # "x86_64", "generic"
    cc: str
    cflags: tuple[str, ...]
    features: frozenset[str] = frozenset()
    vector_bytes: int = 16
    doc: str = ""
    isa: str = ""  # the vector ISA (VECTOR_UNITS); "" for none
    ar: str = "ar"
    package: str = "gcc"  # the Debian package with `cc` and `ar`, named when they are missing
    # how a program built for the target runs on this machine: the default argv prefix
    # (qemu-user for a cross target); () runs it directly
    emulator: tuple[str, ...] = ()
    # for --backend llvm: LLVM's target triple, CPU ("host": this machine's) and features
    llvm_triple: str = ""
    llvm_cpu: str = ""
    llvm_features: str = ""
    caches: Caches = Caches()
    # the CPU family whose measured costs the cost models use (targets/uarch.py): the build
    # host's where its CPU runs the target's code, else "" (the figures the rates were
    # tuned with); `--cpu` names another
    uarch: str = ""
    tiles: Tiles = Tiles()
    rates: Rates = Rates()
    gpu: GpuUnit | None = None  # a GPU target's device (arch "cuda")

    @property
    def cross(self) -> bool:
        """Whether the library's code cannot run in this (x86-64) Python process."""
        return bool(self.emulator)

    @property
    def vector(self) -> VectorUnit | None:
        """The target's vector unit; None for scalar code."""
        return VECTOR_UNITS[self.isa] if self.isa else None

    @property
    def registers(self) -> int:
        """Vector registers of the ISA, which bound the micro-kernels' register tiles."""
        return self.vector.registers if self.vector else 16

    def lanes(self, dtype) -> int:
        """Lanes of a vector register of `dtype`; 1 (scalar code) without a vector ISA or
        for a type the ISA's micro-kernels do not cover."""
        return self.vector.lanes(dtype) if self.vector else 1


_X86 = "x86_64-unknown-linux-gnu"
_COMMON = ("-O3", "-std=c99", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off")
_AARCH64 = dict(ar="aarch64-linux-gnu-ar", package="gcc-aarch64-linux-gnu",
                emulator=("qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"),
                llvm_triple="aarch64-unknown-linux-gnu", llvm_cpu="generic", llvm_features="+neon")

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("c-generic", "generic", "cc", ("-O2", "-std=c99"), doc="portable C99"),
    Target("x86", "x86_64", "cc", _COMMON + ("-march=native",), frozenset({"host"}), 64,
           "the host's best x86-64 vector ISA", llvm_triple=_X86, llvm_cpu="host"),
    Target("x86-avx2", "x86_64", "cc", _COMMON + ("-march=haswell",),
           frozenset({"avx2", "fma"}), 32, "x86-64 with AVX2 and FMA (Haswell and later)",
           "avx2", llvm_triple=_X86, llvm_cpu="haswell"),
    # x86-64-v4 (AVX-512 F, BW, CD, DQ, VL) and VNNI, and no more: the ISA every AVX-512 host
    # edgec runs on shares (Cascade Lake lacks Ice Lake's VBMI, which gcc would use unasked)
    Target("x86-avx512", "x86_64", "cc",
           _COMMON + ("-march=x86-64-v4", "-mavx512vnni", "-mtune=icelake-server"),
           frozenset({"avx2", "fma", "avx512f", "avx512vnni"}), 64,
           "x86-64 with AVX-512 and VNNI (Intel Cascade Lake and later, AMD Zen 4 and later)",
           "avx512", llvm_triple=_X86, llvm_cpu="x86-64-v4", llvm_features="+avx512vnni"),
    Target("arm64", "aarch64", "aarch64-linux-gnu-gcc", _COMMON + ("-march=armv8-a",),
           frozenset({"neon"}), 16, "aarch64 (Armv8-A) with NEON", "neon", **_AARCH64),
    # the library stays Armv8-A: only its dot-product kernels are compiled for Armv8.2-A
    # (a function attribute), and it calls them when the CPU says it has them
    Target("arm64-dotprod", "aarch64", "aarch64-linux-gnu-gcc", _COMMON + ("-march=armv8-a",),
           frozenset({"neon", "dotprod"}), 16,
           "aarch64 with NEON, and Armv8.2-A dot-product kernels chosen at run time", "neon",
           **_AARCH64),
    # -mfpu=neon-vfpv4 gives NEON's fused multiply-add (vfma), so that kernels round as on
    # the other targets
    Target("armv7", "armv7", "arm-linux-gnueabihf-gcc",
           _COMMON + ("-march=armv7-a", "-mfpu=neon-vfpv4", "-mfloat-abi=hard",
                      "-mfp16-format=ieee"),  # _Float16 as IEEE half (as on x86)
           frozenset({"neon", "vfpv4"}), 16, "32-bit Armv7-A with NEON and VFPv4 (hard float)",
           "neon-armv7", ar="arm-linux-gnueabihf-ar", package="gcc-arm-linux-gnueabihf",
           emulator=("qemu-arm", "-L", "/usr/arm-linux-gnueabihf")),
    # NVIDIA GPUs through CUDA: scalar kernels bound to grids of thread blocks
    # (kernel_ir/gpu.py), built by nvcc 13.0 (codegen/toolchain.py) for --gpu-arch
    Target("cuda", "cuda", "nvcc", (), frozenset({"cuda"}), 4,
           "NVIDIA GPUs through CUDA 13.0 (sm_90 by default; --gpu-arch)",
           package="pip install 'edgec[cuda]'", gpu=GPU_UNITS["h100"]),
    # FPGAs through HLS C++ (codegen/hls_project.py): integer models as a dataflow of one
    # process per layer, C-simulated with g++ (`cc`); the part and clock are compile options
    Target("hls", "hls", "g++", ("-std=c++14", "-O2", "-pthread", "-Iap_types"),
           frozenset({"hls"}), 4,
           "FPGAs through HLS C++ (Vitis HLS; C-simulation with g++); integer models only",
           package="g++"),
)}


# the /proc/cpuinfo flags a target's code needs, by the feature names of `Target.features`
_CPU_FLAGS = {"avx2": ("avx2",), "fma": ("fma",),
              "avx512f": ("avx512f", "avx512bw", "avx512dq", "avx512vl"),
              "avx512vnni": ("avx512_vnni",)}


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo ({} where it cannot be read)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def host_cpu_flags() -> frozenset[str]:
    """This machine's CPU flags as /proc/cpuinfo lists them (empty where it cannot be read)."""
    return frozenset(_cpuinfo().get("flags", "").split())


def host_uarch() -> str:
    """This machine's CPU family in costs.MICROARCHS; "unknown" where edgec has no figures
    for it."""
    info = _cpuinfo()
    try:
        return identify(info.get("vendor_id", ""), int(info.get("cpu family", "-1")),
                        int(info.get("model", "-1")))
    except ValueError:
        return "unknown"


def host_cpu_name() -> str:
    """This machine's CPU as /proc/cpuinfo names it, with its family and model."""
    info = _cpuinfo()
    return (f"{info.get('model name', 'unknown CPU')} (family {info.get('cpu family', '?')} "
            f"model {info.get('model', '?')})")


def missing_host_flags(target: Target) -> list[str]:
    """The CPU flags `target`'s code needs that this machine lacks; [] for a target that does
    not run on this machine's CPU directly (a cross target, c-generic, or the host's own)."""
    if target.arch != "x86_64" or "host" in target.features:
        return []
    have = host_cpu_flags()
    return [f for feat in sorted(target.features) for f in _CPU_FLAGS.get(feat, ())
            if f not in have]


def host_x86_isa() -> str:
    """The best vector ISA of this machine's CPU that edgec has micro-kernels for."""
    # VNNI too: the int8 micro-kernels use vpdpbusd (Skylake-SP, which lacks it, gets AVX2)
    for name, isa in (("x86-avx512", "avx512"), ("x86-avx2", "avx2")):
        if not missing_host_flags(TARGETS[name]):
            return isa
    return ""


def pair_sums(target: Target) -> bool:
    """Whether 8-bit weights should be fitted to the pair sums of AVX2's vpmaddubsw (quantize
    {pairs=1}): the target's int8 dot products are AVX2's, and the library is not known to run
    on a CPU with AVX-VNNI, where its dot products run vpdpbusd (chosen at run time), which
    sums any weights exactly: the build host's own target (`x86`) on such a host."""
    if target.isa != "avx2":
        return False
    return not ("host" in target.features and "avx_vnni" in host_cpu_flags())


def runs_on_host(target: Target) -> bool:
    """Whether `target`'s code runs on this machine's CPU, natively."""
    return target.arch == "x86_64" and not target.cross and platform.machine() == "x86_64" \
        and not missing_host_flags(target)


def get_target(name: str | Target, cpu: str | None = None) -> Target:
    """The target called `name`; `x86` is resolved to the host's vector ISA. Its CPU family
    (`uarch`) is `cpu` where given, else the host's where the host runs the target."""
    if isinstance(name, Target):
        t = name
    else:
        try:
            t = TARGETS[name]
        except KeyError:
            raise EdgecError(f"unknown target '{name}'; edgec knows: "
                             f"{', '.join(TARGETS)}") from None
        if "host" in t.features and not t.isa:
            isa = host_x86_isa()
            t = replace(t, vector_bytes=64 if isa == "avx512" else 32, isa=isa)
        if runs_on_host(t):
            t = replace(t, uarch=host_uarch())
    if cpu is not None:
        if cpu and cpu not in MICROARCHS and cpu != UNKNOWN.name:
            raise EdgecError(f"unknown CPU family '{cpu}' (--cpu); edgec has figures for: "
                             f"{', '.join(MICROARCHS)}")
        t = replace(t, uarch=cpu)
    return t
