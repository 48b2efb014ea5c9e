/* edgec_dotprod.h: Armv8.2-A dot-product kernels chosen at run time (renderers/c.py DOTPROD): the
 * function attribute, uint8 x int8 through sdot, and whether the CPU has it */
#ifndef EDGEC_DOTPROD_H
#define EDGEC_DOTPROD_H
#include "edgec_neon.h"

#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20) /* Linux's AT_HWCAP bit of the Armv8.2 dot product */
#endif
/* the micro-kernels with int8 dot products are compiled twice, with sdot for Armv8.2-A (this
   attribute: the rest of the library stays Armv8-A) and with plain NEON; each call picks one */
#define EDGEC_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
/* uint8 x int8: a ^ 0x80 read as int8 is a - 128, so sum a*b = sdot(a ^ 0x80, b) + 128 * sum b,
   and 128 * sum b = -sdot(-128, b) (exact too: |4 * 128 * 128| fits in int32) */
EDGEC_DOTPROD static inline int32x4_t edgec_sdot_u8s8(int32x4_t acc, uint8x16_t a, int8x16_t b)
{
    int8x16_t a_signed = vreinterpretq_s8_u8(veorq_u8(a, vdupq_n_u8(0x80)));
    int32x4_t minus_128_sum_b = vdotq_s32(vdupq_n_s32(0), vdupq_n_s8(-128), b);
    return vsubq_s32(vdotq_s32(acc, a_signed, b), minus_128_sum_b);
}
/* whether the CPU has the dot product, asked of the kernel once (0: not asked yet, 1: no,
   2: yes); threads asking at the same time store the same value, through atomic accesses */
static int edgec_dotprod_state;
static inline int edgec_has_dotprod(void)
{
    int state = __atomic_load_n(&edgec_dotprod_state, __ATOMIC_RELAXED);
    if (state == 0) {
        state = getauxval(AT_HWCAP) & HWCAP_ASIMDDP ? 2 : 1;
        __atomic_store_n(&edgec_dotprod_state, state, __ATOMIC_RELAXED);
    }
    return state == 2;
}
#endif
