"""What the cost models know of a CPU: the micro-architecture's measured figures, per family.

A sparse kernel that gathers its inputs wins or loses against the dense one by the CPU's
gather cost against the rate at which a dense matrix-vector product streams its weights, and
these differ from one CPU family to the next by more than the zeros save: the MLP's gathering
kernel ran 1.4x (70% zeros) and 3x (90%) faster than the dense one on the Intel Xeon
(Emerald Rapids) the rates were tuned on, and 2.6x and 1.3x slower on an AMD Zen 4, whose
dense product streams its 2.1 MB of weights at 3 times the Xeon's share of the FMA peak
(BENCHMARKS.md, "Sparse kernels per CPU family"). So a target names its micro-architecture
(`Target.uarch`: the build host's, detected from /proc/cpuinfo, or `--cpu NAME`) and
`sparsify{uarch=NAME}` takes its rates from the figures here.

Both figures are shares of the family's float32 FMA peak (the unit of sparsify's rates),
measured on one core from the MLP of benchmarks/bench_sparse.py (784-512-256-10, batch 1,
pruned by magnitude to 70% and 90%, unstructured and 4x1) with the peak of
benchmarks/peak_fma.c:
- `gemv_share`: the dense build's multiply-adds per second (535 k per inference);
- `gather_share`: the gathering build's stored slots (sliced ELLPACK, padding included) per
  second, by vector lanes (16: AVX-512, 8: AVX2).
benchmarks/peak_gather.c gives the gather's own cost beside them.

A CPU without figures here gets the reference family's and, where the build host runs the
target, every close call timed (compiler/tune.py); two estimates within `MODEL_ERROR` of
each other are close for every family.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# two estimates within this factor of each other are a tie for the model (its rates fit the
# kernels' measured times to within about 1.3x)
MODEL_ERROR = 1.5
UNKNOWN_ERROR = float("inf")  # a CPU without figures: every estimate is a tie


@dataclass(frozen=True)
class Microarch:
    """One CPU family's figures for the cost models, and where they come from."""

    name: str
    doc: str
    gemv_share: float  # one row of A: the dense kernel's share of the FMA peak
    gather_share: dict[int, float] = field(default_factory=dict)  # by vector lanes
    source: str = ""  # the host, date and commands of the measurements
    error: float = MODEL_ERROR
    # whether an AVX2 int8 tile of full-range weights (pairs past int16) ran faster by the
    # sign trick (vpsignb, vpmaddubsw of |x - 128|) than widened (two vpmaddwd), measured on
    # real layers: the AVX2 fallback of such tiles takes it there (blocked_quant.py)
    int8_sign: bool = False
    # the sparse convolution tile's share of the FMA peak per block (rows, cols), by vector
    # lanes, where it is below sparsify's SPARSE_RATE (which held on the Xeon, Zen 4 and the
    # AVX2 builds measured): fitted per layer of bench_sparse.py's pruned ResNet-18
    conv_share: dict[int, dict[tuple[int, int], float]] = field(default_factory=dict)

    def gather_rate(self, lanes: int) -> float:
        """The gathering kernel's share of the FMA peak per stored slot, with `lanes`-wide
        vectors (the widest measured where that width was not)."""
        return self.gather_share.get(lanes) or self.gather_share[max(self.gather_share)]


MICROARCHS: dict[str, Microarch] = {m.name: m for m in (
    Microarch("emerald-rapids", "Intel Xeon, Sapphire and Emerald Rapids (AVX-512 VNNI)",
              0.076, {16: 0.032},
              "Intel Xeon (Emerald Rapids) host, 2026-11-26: bench_sparse.py --models mlp "
              "(dense 0.079 ms; gathers 0.055 ms at 70%, 0.026 ms at 90%), peak 178 GFLOP/s "
              "(BENCHMARKS.md, 'Sparse weights on the AVX-512 host'); Sapphire Rapids taken "
              "to be the same"),
    Microarch("zen4", "AMD Zen 4 (EPYC 9004, Ryzen 7000): AVX-512 on 256-bit datapaths",
              0.29, {16: 0.032, 8: 0.040},
              "AMD EPYC Zen 4 host (family 25 model 17), 2026-11-27: bench_sparse.py --models "
              "mlp --target x86 / x86-avx2 (dense 0.027-0.036 ms; gathers 0.093 / 0.084 ms at "
              "70%, 0.037 / 0.024 ms at 90%), peak_fma.c 117 GFLOP/s; peak_gather.c: a "
              "gathered float costs 21 (AVX-512) and 24 (AVX2) FMA lanes"),
    Microarch("zen5", "AMD Zen 5 (EPYC 9005, Ryzen 9000 and AI 300): AVX-512 on 512-bit "
              "datapaths, AVX-VNNI", 0.20, {16: 0.023, 8: 0.019},
              "AMD EPYC Zen 5 host (family 26 model 2), 2026-12-07: bench_sparse.py --models "
              "mlp --rounds 300 --threads 1 --target x86 / x86-avx2 (each product timed "
              "alone: 784x512 dense 15.9-17.0 us AVX-512 and AVX2 alike; gathers 43.2 / 51.5 us "
              "at 70% (132 k / 130 k slots), 16.5 / 18.5 us at 90% (48 k / 47 k)), peak_fma.c "
              "252 GFLOP/s AVX-512 (127 AVX2), the shares of the AVX-512 peak; peak_gather.c: "
              "a gathered float costs 48 (AVX-512) and 32 (AVX2) FMA lanes of its own width. "
              "conv_share: ResNet-18 pruned to 70% and 90% (unstructured, 1x4, 4x1), each "
              "layer's sparse and dense kernels timed in the whole network "
              "(edgec.compiler.profile.kernel_times): with AVX-512 the 1x1 and 1x4 blocks "
              "ran 1.3-1.4x and 1.1-1.3x the time SPARSE_RATE gives them (1.5-2.3x on 7x7 "
              "and strided 1x1 layers), 4x1 blocks as it gives; at 70% unstructured the "
              "sparse ResNet-18 ran 0.97x the dense one",
              conv_share={16: {(1, 1): 0.26, (1, 4): 0.31}}),
    Microarch("zen3", "AMD Zen 3 and Zen 3+ (EPYC 7003, Ryzen 5000/6000): AVX2 on 256-bit "
              "datapaths, no AVX-512", 0.22, {8: 0.026},
              "AMD EPYC Zen 3 host (family 25 model 1), 2026-11-28: bench_sparse.py --models "
              "mlp --rounds 300 --threads 1 (dense MLP 0.044-0.067 ms; each product timed "
              "alone: 784x512 dense 35-44 us, gathers 99.6 us at 70% (130 k slots) and 38.2 "
              "us at 90% (47 k)), peak_fma.c 92 GFLOP/s; peak_gather.c: a gathered float "
              "costs 28-35 FMA lanes. int8_sign: onnxruntime's full-range QDQ ResNet-18 "
              "and MobileNetV2 with their convolutions on the sign trick ran 0.87x and 0.92x "
              "the widened builds' time (libraries round-robin in one process, 20-40 rounds; "
              "peak_int8_avx2.c: sign 93-101 GOP/s, widened 88-107)",
              int8_sign=True),
    Microarch("zen1", "AMD Zen 1 and Zen+ (EPYC 7001, Ryzen 1000/2000): AVX2 on 128-bit "
              "datapaths", 0.30, {8: 0.027},
              "AMD EPYC Zen 1 host (family 23 model 1), at 39cd900 (issue 30): the MLP dense "
              "0.081 ms, its 90%-sparse gathers 0.104 ms (0.78x), FMA peak 44 GFLOP/s"),
)}
REFERENCE = MICROARCHS["emerald-rapids"]
UNKNOWN = Microarch("unknown", "a CPU edgec has no figures for: the reference family's, every "
                    "close call timed", REFERENCE.gemv_share, REFERENCE.gather_share,
                    "emerald-rapids's", UNKNOWN_ERROR)


def microarch(name: str) -> Microarch:
    """The figures of CPU family `name`: "" (none named: a target the build host does not
    run) gives the reference family's; "unknown" (the build host's CPU, which edgec has no
    figures for) the same with every estimate a tie, to be timed."""
    if not name:
        return REFERENCE
    if name == UNKNOWN.name:
        return UNKNOWN
    try:
        return MICROARCHS[name]
    except KeyError:
        raise ValueError(f"unknown CPU family '{name}'; edgec has figures for: "
                         f"{', '.join(MICROARCHS)}") from None


def identify(vendor: str, family: int, model: int) -> str:
    """The family in MICROARCHS of a CPU by its /proc/cpuinfo vendor_id, cpu family and model;
    "unknown" where edgec has no figures for it."""
    if vendor == "AuthenticAMD":
        if family == 23:
            return "zen1" if model < 0x30 else "unknown"  # Zen 2 (0x31 and up): not measured
        if family == 25 and (0x10 <= model <= 0x1f or 0x60 <= model <= 0xaf):
            return "zen4"  # Genoa 0x10-0x1f, Raphael and Phoenix 0x60-0x7f, Bergamo 0xa0-
        if family == 25:
            return "zen3"  # Milan 0x00-0x0f, Vermeer 0x20-0x2f, Rembrandt 0x40-, Cezanne 0x50-
        if family == 26 and model < 0x80:
            return "zen5"  # Turin 0x00-0x1f, Strix 0x20-0x2f, Granite Ridge 0x40-, Krackan 0x60-
    if vendor == "GenuineIntel" and family == 6 and model in (143, 207):
        return "emerald-rapids"  # Sapphire Rapids (143) and Emerald Rapids (207)
    return "unknown"
