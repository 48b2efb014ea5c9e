/* edgec_avxvnni.h: AVX-VNNI (256-bit vpdpbusd, Intel Alder Lake and later, AMD Zen 5) int8
 * kernels of an AVX2 library, chosen at run time (renderers/c_isas.py AVXVNNI): the function
 * attribute, int8 x int8 through the uint8 x int8 instruction, and whether the CPU has it */
#ifndef EDGEC_AVXVNNI_H
#define EDGEC_AVXVNNI_H
#include "edgec_avx2.h"

/* the micro-kernels with int8 dot products are compiled twice, with AVX-VNNI (this attribute:
   the rest of the library stays AVX2) and with AVX2's widening form; each call picks one */
#define EDGEC_AVXVNNI __attribute__((target("avxvnni")))
/* int8 x int8: a ^ 0x80 read as uint8 is a + 128, so sum a*b = dpbusd(a ^ 0x80, b) - 128 sum b,
   and 128 * sum b = dpbusd(128, b) (|4 * 128 * 128| fits in int32) */
EDGEC_AVXVNNI static inline __m256i edgec_dpbssd_avx(__m256i acc, __m256i a, __m256i b)
{
    __m256i flipped = _mm256_xor_si256(a, _mm256_set1_epi8(-128));
    __m256i sum_b = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(-128), b);
    return _mm256_sub_epi32(_mm256_dpbusd_avx_epi32(acc, flipped, b), sum_b);
}
/* whether the CPU has AVX-VNNI, asked once (0: not asked yet, 1: no, 2: yes); threads asking
   at the same time store the same value, through atomic accesses */
static int edgec_avxvnni_state;
static inline int edgec_has_avxvnni(void)
{
    int state = __atomic_load_n(&edgec_avxvnni_state, __ATOMIC_RELAXED);
    if (state == 0) {
        __builtin_cpu_init();
        state = __builtin_cpu_supports("avxvnni") ? 2 : 1;
        __atomic_store_n(&edgec_avxvnni_state, state, __ATOMIC_RELAXED);
    }
    return state == 2;
}
#endif
