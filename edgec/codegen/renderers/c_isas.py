"""The vector ISAs of the C renderer: per ISA, the C type of each vector and the intrinsic of
each vector operation, and the runtime header with the helpers they call (edgec/runtime/c).
Their widths, register files and vector types are the target's facts (target.py VECTOR_UNITS).

Int8 dot products (`dot4`): VNNI `vpdpbusd` on AVX-512 (int8 x int8 as (a ^ 0x80) x b minus
128 * sum(b), both exact); on AVX2 each 16-bit half of a 32-bit lane is widened and
`vpmaddwd` sums the even and the odd byte products exactly (`vpmaddubsw` would saturate),
except where the weights' byte pairs fit int16 (kernel IR `dot4p`): `vpmaddubsw` of the
uint8 bytes by the weights, then `vpmaddwd` by ones, exact and 3 instructions instead of 4
and the widening (benchmarks/peak_int8_avx2.c, BENCHMARKS.md), and a `dot4p` of re-centred
int8 bytes against weights within +-127 by the sign trick (`vpsignb`, `vpmaddubsw` of |a|);
in scalar C a 4-lane 8-bit vector is a 32-bit word and dot4 the sum of its 4 byte products.
On NEON dot4 is exact too (16-bit products, widening pairwise sums; the int8 tiles re-centre
uint8 rows to int8, kernel IR `recentre`, for the cheaper int8 x int8 form), and kernel IR
`pairdot` sums two k-groups' products in int16 (`smull`, `smlal`) before one `sadalp`, its
lane pairs folded once per tile (`pairfold`, `addp`); `arm64-dotprod` also
renders each micro-kernel with a dot4 for Armv8.2-A `sdot` and calls one of the two versions as
the CPU says at run time (`Dispatch`, `CRenderer.dispatched`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from ...ir.dtypes import DType
from ...kernel_ir.ops import Op
from ...targets.target import VECTOR_UNITS, VectorUnit


class Form(StrEnum):
    """The vector operations an ISA's table spells besides the kernel IR's ops (`Op`): the
    forms the C renderer writes an op or a statement as."""

    STORE = "store"
    LOAD_N = "load_n"  # the first {n} lanes (masked)
    STORE_N = "store_n"
    STORE_NARROW_N = "store_narrow_n"  # int32 lanes stored as bytes, the first {n}
    LOAD_WIDEN = "load_widen"  # bytes (or uint16) widened to int32 lanes
    BROADCAST4 = "broadcast4"  # a 4-byte group in every 32-bit lane
    GATHER = "gather"
    SELECT_CMP = "select_cmp"  # a select on a comparison ({pred})
    HREDUCE_ADD = "hreduce_add"
    HREDUCE_MAX = "hreduce_max"
    HREDUCE_MIN = "hreduce_min"
    NIBBLE_LO = "nibble_lo"
    NIBBLE_HI = "nibble_hi"
    TO_F32 = "to_f32"
    TO_I32 = "to_i32"
    ROUND = "round"
    ROUND_TO_I32 = "round_to_i32"
    ABS = "abs"
    EXP = "exp"
    TANH = "tanh"


def ops_key(name: str) -> Op | Form:
    """The op or form an ISA table's entry is for; a ValueError for a name that is neither."""
    for kind in (Op, Form):
        if name in kind.__members__.values():
            return kind(name)
    raise ValueError(f"vector ISA table: '{name}' is neither a kernel-IR op nor a form of "
                     f"c_isas.Form ({', '.join(Form)})")


@dataclass(frozen=True)
class VectorISA:
    """The intrinsics of one vector ISA, the target's vector unit of the same name
    (target.py VECTOR_UNITS: width, registers, types) as C: per element type, the register
    type and a template per operation ({a} {b} {c}: operands, {p}: pointer, {n}: lane count of
    a masked tail, {v}: stored value).
    `helpers` are the runtime's C headers (edgec/runtime/c) that define the helper functions
    the templates call, in include order. `predicates` spell the comparisons of a select
    ({pred})."""

    name: str
    header: str
    types: dict[DType, str]
    ops: dict[tuple[Op | Form, DType], str]  # given as text: each name is checked
    helpers: tuple[str, ...] = ()
    predicates: dict[str, str] | None = None  # None: the x86 ones (CMP_PREDICATES)

    def __post_init__(self) -> None:
        keys = {(ops_key(op), dt): text for (op, dt), text in self.ops.items()}
        bad = [dt for _, dt in keys if not isinstance(dt, DType)]
        if bad:
            raise ValueError(f"vector ISA {self.name}: {bad[0]!r} is no DType")
        object.__setattr__(self, "ops", keys)

    @property
    def unit(self) -> VectorUnit:
        return VECTOR_UNITS[self.name]

    @property
    def width(self) -> int:
        return self.unit.width

    def lanes(self, dtype: DType) -> int:
        return self.unit.lanes(dtype)


def _float_ops(pre: str, suffix: str, extra: dict[str, str]) -> dict[tuple[str, DType], str]:
    ops = {op: f"{pre}_{op}_{suffix}({{a}}, {{b}})" for op in ("add", "sub", "mul", "div",
                                                               "max", "min")}
    ops |= {"load": f"{pre}_loadu_{suffix}({{p}})", "store": f"{pre}_storeu_{suffix}({{p}}, {{v}})",
            "broadcast": f"{pre}_set1_{suffix}({{a}})",
            "fma": f"{pre}_fmadd_{suffix}({{a}}, {{b}}, {{c}})"} | extra
    return {(k, DType.F32): v for k, v in ops.items()}


def _int32_ops(pre: str, extra: dict[str, str]) -> dict[tuple[str, DType], str]:
    ops = {op: f"{pre}_{op}_epi32({{a}}, {{b}})" for op in ("add", "sub", "max", "min")}
    # mul16: a's high halves are 0, so the 16-bit multiply-add is the product (kernel IR)
    ops |= {"mul": f"{pre}_mullo_epi32({{a}}, {{b}})", "mul16": f"{pre}_madd_epi16({{a}}, {{b}})",
            "mulshift": f"edgec_mulshift{16 if pre == '_mm512' else 8}({{a}}, {{b}}, {{c}})",
            "broadcast": f"{pre}_set1_epi32({{a}})"} | extra
    return {(k, DType.I32): v for k, v in ops.items()}


def _int8_ops(pre: str, si: str, dot4: dict[DType, str],
              narrow: dict[DType, str]) -> dict[tuple[str, DType], str]:
    """Loads and stores of uint8/int8 vectors, the broadcast of a 4-byte group (`{p}`),
    `dot4` per type of its operand a ({c} += {a} . {b}), and the store of int32 lanes
    (already in the 8-bit range: requantized) narrowed to bytes, the first {n} of them."""
    ops: dict[tuple[str, DType], str] = {}
    for t in (DType.U8, DType.I8):
        ops[("load", t)] = f"{pre}_loadu_{si}((const void *)({{p}}))"
        ops[("store", t)] = f"{pre}_storeu_{si}((void *)({{p}}), {{v}})"
        ops[("broadcast4", t)] = f"{pre}_broadcastd_epi32(_mm_loadu_si32({{p}}))"
        ops[("dot4", t)] = dot4[t]
        ops[("store_narrow_n", t)] = narrow[t]
        # L bytes widened to L int32 lanes (zero- or sign-extended)
        ext = "epu8" if t is DType.U8 else "epi8"
        load = "_mm_loadl_epi64" if pre == "_mm256" else "_mm_loadu_si128"  # 8 or 16 bytes
        ops[("load_widen", t)] = f"{pre}_cvt{ext}_epi32({load}((const __m128i *)({{p}})))"
    # L uint16 widened to L int32 lanes (a sparse matrix product's input columns)
    ops[("load_widen", DType.U16)] = (
        "_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)({p})))" if pre == "_mm512"
        else "_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)({p})))")
    # kernel-IR nibble: x86 has no byte shift (the header's helper: GFNI's affine map, or a
    # 16-bit shift and a mask)
    ops[("nibble_lo", DType.I8)] = f"edgec_nibble_lo{64 if pre == '_mm512' else 32}({{a}})"
    ops[("nibble_hi", DType.I8)] = f"{pre}_and_{si}({{a}}, {pre}_set1_epi8((char)0xF0))"
    ops[("recentre", DType.U8)] = f"{pre}_xor_{si}({{a}}, {pre}_set1_epi8((char)0x80))"
    # int32 <-> float32 conversions (C's: to nearest, truncating back) and round half even
    ops[("to_f32", DType.I32)] = f"{pre}_cvtepi32_ps({{a}})"
    ops[("to_i32", DType.F32)] = f"{pre}_cvttps_epi32({{a}})"
    # round half to even and convert in one instruction: AVX-512's embedded rounding, AVX2's
    # conversion in the current mode (to nearest, as the scalar path's nearbyintf assumes)
    ops[("round_to_i32", DType.F32)] = (
        f"{pre}_cvt_roundps_epi32({{a}}, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)"
        if pre == "_mm512" else f"{pre}_cvtps_epi32({{a}})")
    ops[("round", DType.F32)] = (f"{pre}_round_ps({{a}}, _MM_FROUND_TO_NEAREST_INT | "
                                 "_MM_FROUND_NO_EXC)" if pre == "_mm256" else
                                 f"{pre}_roundscale_ps({{a}}, _MM_FROUND_TO_NEAREST_INT | "
                                 "_MM_FROUND_NO_EXC)")
    return ops


AVX512 = VectorISA(
    "avx512", "immintrin.h", {DType.F32: "__m512", DType.I32: "__m512i",
                                  DType.U8: "__m512i", DType.I8: "__m512i"},
    _float_ops("_mm512", "ps", {
        "load_n": "_mm512_maskz_loadu_ps(EDGEC_MASK16({n}), {p})",
        "gather": "_mm512_i32gather_ps({a}, {p}, 4)",
        "store_n": "_mm512_mask_storeu_ps({p}, EDGEC_MASK16({n}), {v})",
        "hreduce_add": "_mm512_reduce_add_ps({a})", "hreduce_max": "_mm512_reduce_max_ps({a})",
        "hreduce_min": "_mm512_reduce_min_ps({a})",
        "select_cmp": "_mm512_mask_blend_ps(_mm512_cmp_ps_mask({a}, {b}, {pred}), {y}, {x})",
        "exp": "edgec_exp16({a})", "tanh": "edgec_tanh16({a})", "abs": "_mm512_abs_ps({a})",
        "neg": "_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512({a}), "
               "_mm512_set1_epi32(INT32_MIN)))",
    }) | _int32_ops("_mm512", {
        "load": "_mm512_loadu_si512((const void *)({p}))",
        "store": "_mm512_storeu_si512((void *)({p}), {v})",
        "hreduce_add": "_mm512_reduce_add_epi32({a})",
        "store_n": "_mm512_mask_storeu_epi32({p}, EDGEC_MASK16({n}), {v})",
    }) | _int8_ops("_mm512", "si512", {
        DType.U8: "_mm512_dpbusd_epi32({c}, {a}, {b})",
        DType.I8: "_mm512_sub_epi32(_mm512_dpbusd_epi32({c}, _mm512_xor_si512({a}, "
                  "_mm512_set1_epi8(-128)), {b}), _mm512_dpbusd_epi32(_mm512_setzero_si512(), "
                  "_mm512_set1_epi8(-128), {b}))",
    }, {t: "_mm512_mask_cvtepi32_storeu_epi8({p}, EDGEC_MASK16({n}), {v})"
        for t in (DType.U8, DType.I8)}),
    ("edgec_avx512.h",))

AVX2 = VectorISA(
    "avx2", "immintrin.h", {DType.F32: "__m256", DType.I32: "__m256i",
                                DType.U8: "__m256i", DType.I8: "__m256i"},
    _float_ops("_mm256", "ps", {
        "load_n": "_mm256_maskload_ps({p}, edgec_mask8({n}))",
        "gather": "_mm256_i32gather_ps({p}, {a}, 4)",
        "store_n": "_mm256_maskstore_ps({p}, edgec_mask8({n}), {v})",
        "hreduce_add": "edgec_hadd8({a})", "hreduce_max": "edgec_hmax8({a})",
        "hreduce_min": "edgec_hmin8({a})",
        "select_cmp": "_mm256_blendv_ps({y}, {x}, _mm256_cmp_ps({a}, {b}, {pred}))",
        "exp": "edgec_exp8({a})", "tanh": "edgec_tanh8({a})",
        "abs": "_mm256_andnot_ps(_mm256_set1_ps(-0.0f), {a})",
        "neg": "_mm256_xor_ps({a}, _mm256_set1_ps(-0.0f))",
    }) | _int32_ops("_mm256", {
        "load": "_mm256_loadu_si256((const __m256i *)({p}))",
        "store": "_mm256_storeu_si256((__m256i *)({p}), {v})",
        "hreduce_add": "edgec_hadd8i({a})",
        "store_n": "_mm256_maskstore_epi32((int *)({p}), edgec_mask8({n}), {v})",
    }) | _int8_ops("_mm256", "si256", {DType.U8: "edgec_dot4_u8i8({c}, {a}, {b})",
                                       DType.I8: "edgec_dot4_i8i8({c}, {a}, {b})"},
                   {DType.U8: "edgec_store8_u8((uint8_t *)({p}), {v}, {n})",
                    DType.I8: "edgec_store8_i8((int8_t *)({p}), {v}, {n})"})
    | {("dot4p", DType.U8): "edgec_dot4p_u8i8({c}, {a}, {b})",
       ("dot4p", DType.I8): "edgec_dot4s_i8i8({c}, {a}, {b})"},
    ("edgec_avx2.h",))


def _neon_ops(extra: dict[tuple[str, DType], str]) -> dict[tuple[str, DType], str]:
    """The intrinsics both NEON ISAs share (aarch64 and Armv7, 4 lanes of 32 bits). NEON
    has no masked loads or stores: a tail goes through a 4-element array, touching exactly
    `n` elements of memory."""
    ops: dict[tuple[str, DType], str] = {}
    for dt, t in ((DType.F32, "f32"), (DType.I32, "s32")):
        ops |= {(op, dt): f"v{op}q_{t}({{a}}, {{b}})" for op in ("add", "sub", "mul")}
        ops |= {("load", dt): f"vld1q_{t}({{p}})", ("store", dt): f"vst1q_{t}({{p}}, {{v}})",
                ("load_n", dt): f"edgec_vld1q_{t}_n({{p}}, {{n}})",
                ("store_n", dt): f"edgec_vst1q_{t}_n({{p}}, {{v}}, {{n}})",
                ("broadcast", dt): f"vdupq_n_{t}({{a}})"}
    for dt, t in ((DType.U8, "u8"), (DType.I8, "s8")):
        ops |= {("load", dt): f"vld1q_{t}({{p}})", ("store", dt): f"vst1q_{t}({{p}}, {{v}})",
                ("broadcast4", dt): f"vreinterpretq_{t}_u32(edgec_vdupq_4bytes({{p}}))",
                ("dot4", dt): f"edgec_dot4_{t}s8({{c}}, {{a}}, {{b}})",
                ("store_narrow_n", dt): f"edgec_vst1q_s32_narrow_{t}({{p}}, {{v}}, {{n}})",
                ("load_widen", dt): f"edgec_vld4_{t}_s32({{p}})"}
    ops[("load_widen", DType.U16)] = "vreinterpretq_s32_u32(vmovl_u16(vld1_u16({p})))"
    ops[("recentre", DType.U8)] = "vreinterpretq_s8_u8(veorq_u8({a}, vdupq_n_u8(0x80)))"
    # kernel-IR pairdot (smull, smlal into int16, sadalp: {n} pairs, {h} half) and pairfold
    ops[("pairdot", DType.I8)] = "edgec_pairdot{n}_{h}({c}, {a})"
    ops[("pairfold", DType.I32)] = "edgec_pairfold({a}, {b})"
    ops |= {("nibble_lo", DType.I8): "vshlq_n_s8({a}, 4)",
            ("nibble_hi", DType.I8): "vandq_s8({a}, vdupq_n_s8((int8_t)0xF0))"}
    ops |= {("to_f32", DType.I32): "vcvtq_f32_s32({a})",
            ("to_i32", DType.F32): "vcvtq_s32_f32({a})"}  # truncating, as C's conversion
    ops |= {("mulshift", DType.I32): "edgec_mulshift4({a}, {b}, {c})",
            ("max", DType.I32): "vmaxq_s32({a}, {b})", ("min", DType.I32): "vminq_s32({a}, {b})",
            ("fma", DType.F32): "vfmaq_f32({c}, {a}, {b})",
            ("gather", DType.F32): "edgec_gather4_f32({p}, {a})",
            ("select_cmp", DType.F32): "vbslq_f32({pred}({a}, {b}), {x}, {y})",
            ("exp", DType.F32): "edgec_exp4({a})", ("tanh", DType.F32): "edgec_tanh4({a})",
            ("abs", DType.F32): "vabsq_f32({a})",
            ("neg", DType.F32): "vnegq_f32({a})"}
    return ops | extra
# ordered comparisons (false on NaN), as x86's _CMP_*_OQ and C's scalar comparisons
NEON_PREDICATES = {"lt": "vcltq_f32", "le": "vcleq_f32", "gt": "vcgtq_f32", "ge": "vcgeq_f32",
                   "eq": "vceqq_f32", "ne": "edgec_vcneq_f32"}

NEON_TYPES = {DType.F32: "float32x4_t", DType.I32: "int32x4_t", DType.U8: "uint8x16_t",
              DType.I8: "int8x16_t"}

# aarch64: 32 registers, IEEE division and across-vector reductions. max/min are maxNum/minNum
# (vmaxnm: a NaN operand gives the other one, as C's fmaxf does)
NEON = VectorISA(
    "neon", "arm_neon.h", NEON_TYPES,
    _neon_ops({("div", DType.F32): "vdivq_f32({a}, {b})",
               ("max", DType.F32): "vmaxnmq_f32({a}, {b})",
               ("min", DType.F32): "vminnmq_f32({a}, {b})",
               ("hreduce_add", DType.F32): "vaddvq_f32({a})",
               ("hreduce_max", DType.F32): "vmaxvq_f32({a})",
               ("hreduce_min", DType.F32): "vminvq_f32({a})",
               ("hreduce_add", DType.I32): "vaddvq_s32({a})",
               ("round", DType.F32): "vrndnq_f32({a})",  # to nearest, ties to even
               ("round_to_i32", DType.F32): "vcvtnq_s32_f32({a})"}),
    ("edgec_neon.h",), predicates=NEON_PREDICATES)

# Armv7 NEON: 16 q registers, no division (only a reciprocal estimate, which would not round
# as the other targets do: lanes are divided by VFP instead), no across-vector reductions (pairwise
# folds), and vmax gives NaN for a NaN operand: max/min select as x86's maxps/minps do
NEON_ARMV7 = VectorISA(
    "neon-armv7", "arm_neon.h", NEON_TYPES,
    _neon_ops({("div", DType.F32): "edgec_vdivq_f32({a}, {b})",
               ("max", DType.F32): "edgec_vmaxq_f32({a}, {b})",
               ("min", DType.F32): "edgec_vminq_f32({a}, {b})",
               ("hreduce_add", DType.F32): "edgec_vaddvq_f32({a})",
               ("hreduce_max", DType.F32): "edgec_vmaxvq_f32({a})",
               ("hreduce_min", DType.F32): "edgec_vminvq_f32({a})",
               ("hreduce_add", DType.I32): "edgec_vaddvq_s32({a})",
               ("round", DType.F32): "edgec_vrndnq_f32({a})"}),
    ("edgec_neon.h", "edgec_neon_armv7.h"), predicates=NEON_PREDICATES)

VECTOR_ISAS = {isa.name: isa for isa in (AVX512, AVX2, NEON, NEON_ARMV7)}

# x86's masked loads and stores and gathers, which AddressSanitizer does not see, and whether
# each writes (NEON's go through C arrays and loads, which it sees)
_UNSEEN = {"load_n": 0, "store_n": 1, "store_narrow_n": 1, "gather": 0}


def sanitized(isa: VectorISA) -> VectorISA:
    """An x86 `isa` for a build with AddressSanitizer (edgec compile --sanitize): each of its
    masked loads and stores checks the bytes of its {n} lanes first, each gather those of
    its lanes (edgec_runtime.h edgec_asan_check, the ISA header's edgec_asan_gather<L>)."""
    ops = {}
    for (op, dt), text in isa.ops.items():
        if op == "gather":
            text = f"(edgec_asan_gather{isa.lanes(dt)}({{p}}, {{a}}), {text})"
        elif op in _UNSEEN:
            size = 1 if op == "store_narrow_n" else dt.itemsize
            text = f"(edgec_asan_check({{p}}, (size_t)({{n}}) * {size}, {_UNSEEN[op]}), {text})"
        ops[(op, dt)] = text
    return replace(isa, ops=ops)


@dataclass(frozen=True)
class Dispatch:
    """Micro-kernels built twice and chosen at run time: for an ISA extension (`isa`, whose
    functions carry the compiler attribute `attribute`; suffix `tag`) and for the library's
    own ISA (suffix `base_tag`); `test` is the C expression, true where the CPU has the
    extension. `helpers` (a runtime header) defines the attribute, the extension's helpers
    and the test."""

    isa: VectorISA
    tag: str
    base_tag: str
    attribute: str
    test: str
    helpers: str


# Armv8.2-A dot product: `sdot` adds 4 int8 x int8 products to each int32 lane, exactly
# (uint8 x int8 through it: edgec_dotprod.h)
NEON_DOTPROD = replace(NEON, name="neon-dotprod", ops=NEON.ops | {
    ("dot4", DType.I8): "vdotq_s32({c}, {a}, {b})",
    ("dot4", DType.U8): "edgec_sdot_u8s8({c}, {a}, {b})"})
DOTPROD = Dispatch(NEON_DOTPROD, "sdot", "neon", "EDGEC_DOTPROD", "edgec_has_dotprod()",
                   "edgec_dotprod.h")
# AVX-VNNI: the 256-bit `vpdpbusd` of CPUs without AVX-512 (Alder Lake, Zen 5's AVX2 builds),
# for the int8 kernels of an AVX2 library (int8 x int8 through edgec_avxvnni.h)
AVX2_VNNI = replace(AVX2, name="avx2-vnni", ops={
    k: v for k, v in AVX2.ops.items() if k[0] != "dot4p"} | {  # (dot4p: vpdpbusd as dot4)
    ("dot4", DType.U8): "_mm256_dpbusd_avx_epi32({c}, {a}, {b})",
    ("dot4", DType.I8): "edgec_dpbssd_avx({c}, {a}, {b})"})
AVXVNNI = Dispatch(AVX2_VNNI, "avxvnni", "avx2", "EDGEC_AVXVNNI", "edgec_has_avxvnni()",
                   "edgec_avxvnni.h")
# the ordered, quiet x86 comparison predicates of the vector selects (NaN compares false,
# as C's scalar comparisons do, except !=)
CMP_PREDICATES = {"lt": "_CMP_LT_OQ", "le": "_CMP_LE_OQ", "gt": "_CMP_GT_OQ",
                  "ge": "_CMP_GE_OQ", "eq": "_CMP_EQ_OQ", "ne": "_CMP_NEQ_UQ"}
