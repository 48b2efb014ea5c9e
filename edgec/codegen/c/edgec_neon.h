/* edgec_neon.h: the helpers of edgec's NEON kernels, aarch64 and Armv7 (renderers/c.py NEON):
 * vector tails, 4-byte broadcasts, exact int8 dot products, narrowing stores, vector exp and tanh */
#ifndef EDGEC_NEON_H
#define EDGEC_NEON_H
#include <arm_neon.h>
#include "edgec_runtime.h"

#include <string.h>
#define EDGEC_NEON_TAIL(t, vtype, ctype)                                            \
    static inline vtype edgec_vld1q_##t##_n(const ctype *p, ptrdiff_t n)             \
    {                                                                               \
        ctype lane[4] = {0, 0, 0, 0};                                               \
        for (ptrdiff_t i = 0; i < n && i < 4; ++i)                                  \
            lane[i] = p[i];                                                         \
        return vld1q_##t(lane);                                                     \
    }                                                                               \
    static inline void edgec_vst1q_##t##_n(ctype *p, vtype v, ptrdiff_t n)          \
    {                                                                               \
        ctype lane[4];                                                              \
        vst1q_##t(lane, v);                                                         \
        for (ptrdiff_t i = 0; i < n && i < 4; ++i)                                  \
            p[i] = lane[i];                                                         \
    }
EDGEC_NEON_TAIL(f32, float32x4_t, float)
EDGEC_NEON_TAIL(s32, int32x4_t, int32_t)
/* the 4 bytes at p in every 32-bit lane (memcpy: p need not be aligned) */
/* lane l = p[i[l]]: NEON has no gather instruction */
static inline float32x4_t edgec_gather4_f32(const float *p, int32x4_t i)
{
    float32x4_t v = vdupq_n_f32(p[vgetq_lane_s32(i, 0)]);
    v = vsetq_lane_f32(p[vgetq_lane_s32(i, 1)], v, 1);
    v = vsetq_lane_f32(p[vgetq_lane_s32(i, 2)], v, 2);
    return vsetq_lane_f32(p[vgetq_lane_s32(i, 3)], v, 3);
}

static inline uint32x4_t edgec_vdupq_4bytes(const void *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return vdupq_n_u32(w);
}
/* 4 bytes widened to 4 int32 lanes, zero- or sign-extended */
static inline int32x4_t edgec_vld4_u8_s32(const void *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    uint16x8_t h = vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w)));
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(h)));
}
static inline int32x4_t edgec_vld4_s8_s32(const void *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    int16x8_t h = vmovl_s8(vreinterpret_s8_u32(vdup_n_u32(w)));
    return vmovl_s16(vget_low_s16(h));
}
/* acc + the 4 byte products of each 32-bit lane, exactly: 16-bit products (|255 * 128| and
   128 * 128 fit), pairwise widening sums to 32 bits, then pairs of those */
static inline int32x4_t edgec_dot4_fold(int32x4_t acc, int16x8_t lo, int16x8_t hi)
{
    int32x4_t l = vpaddlq_s16(lo), h = vpaddlq_s16(hi);
    return vaddq_s32(acc, vcombine_s32(vpadd_s32(vget_low_s32(l), vget_high_s32(l)),
                                       vpadd_s32(vget_low_s32(h), vget_high_s32(h))));
}
static inline int32x4_t edgec_dot4_s8s8(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    return edgec_dot4_fold(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)),
                           vmull_s8(vget_high_s8(a), vget_high_s8(b)));
}
static inline int32x4_t edgec_dot4_u8s8(int32x4_t acc, uint8x16_t a, int8x16_t b)
{
    int16x8_t a_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(a)));
    int16x8_t a_hi = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(a)));
    return edgec_dot4_fold(acc, vmulq_s16(a_lo, vmovl_s8(vget_low_s8(b))),
                           vmulq_s16(a_hi, vmovl_s8(vget_high_s8(b))));
}
/* kernel-IR pairdot: the byte products of one or two k-groups summed in int16 (exact for
   weights in [-127, 127]: |2 * 128 * 127| < 32768), then pairwise into int32 lanes (sadalp),
   bytes 0-7 (lo) or 8-15 (hi); pairfold adds the lane pairs of both halves at the end */
static inline int32x4_t edgec_pairdot1_lo(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    return vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
}
static inline int32x4_t edgec_pairdot2_lo(int32x4_t acc, int8x16_t a0, int8x16_t b0,
                                          int8x16_t a1, int8x16_t b1)
{
    int16x8_t p = vmull_s8(vget_low_s8(a0), vget_low_s8(b0));
    return vpadalq_s16(acc, vmlal_s8(p, vget_low_s8(a1), vget_low_s8(b1)));
}
#if defined(__aarch64__)
static inline int32x4_t edgec_pairdot1_hi(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}
static inline int32x4_t edgec_pairdot2_hi(int32x4_t acc, int8x16_t a0, int8x16_t b0,
                                          int8x16_t a1, int8x16_t b1)
{
    return vpadalq_s16(acc, vmlal_high_s8(vmull_high_s8(a0, b0), a1, b1));
}
static inline int32x4_t edgec_pairfold(int32x4_t lo, int32x4_t hi)
{
    return vpaddq_s32(lo, hi);
}
#else /* Armv7: the high halves as d registers, the fold by 64-bit pairwise adds */
static inline int32x4_t edgec_pairdot1_hi(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    return vpadalq_s16(acc, vmull_s8(vget_high_s8(a), vget_high_s8(b)));
}
static inline int32x4_t edgec_pairdot2_hi(int32x4_t acc, int8x16_t a0, int8x16_t b0,
                                          int8x16_t a1, int8x16_t b1)
{
    int16x8_t p = vmull_s8(vget_high_s8(a0), vget_high_s8(b0));
    return vpadalq_s16(acc, vmlal_s8(p, vget_high_s8(a1), vget_high_s8(b1)));
}
static inline int32x4_t edgec_pairfold(int32x4_t lo, int32x4_t hi)
{
    return vcombine_s32(vpadd_s32(vget_low_s32(lo), vget_high_s32(lo)),
                        vpadd_s32(vget_low_s32(hi), vget_high_s32(hi)));
}
#endif
/* the first n int32 lanes, already in the byte range (requantized), stored as bytes */
#define EDGEC_NARROW4(t, ctype)                                                     \
    static inline void edgec_vst1q_s32_narrow_##t(ctype *p, int32x4_t v, ptrdiff_t n) \
    {                                                                               \
        int32_t lane[4];                                                            \
        vst1q_s32(lane, v);                                                         \
        for (ptrdiff_t i = 0; i < n && i < 4; ++i)                                  \
            p[i] = (ctype)lane[i];                                                  \
    }
EDGEC_NARROW4(u8, uint8_t)
EDGEC_NARROW4(s8, int8_t)
/* kernel-IR mulshift (edgec_mulshift of each lane): 64-bit products, vaddhn adds the rounding
   term and keeps the high words, which shift right by s - 32 */
static inline int32x4_t edgec_mulshift4(int32x4_t a, int32x4_t m, int32_t s)
{
    const int64x2_t r = vdupq_n_s64((int64_t)1 << (s - 1));
    int32x2_t lo = vaddhn_s64(vmull_s32(vget_low_s32(a), vget_low_s32(m)), r);
    int32x2_t hi = vaddhn_s64(vmull_s32(vget_high_s32(a), vget_high_s32(m)), r);
    return vshlq_s32(vcombine_s32(lo, hi), vdupq_n_s32(32 - s));
}
static inline uint32x4_t edgec_vcneq_f32(float32x4_t a, float32x4_t b)
{
    return vmvnq_u32(vceqq_f32(a, b));  /* unordered: true when either is NaN, as C's != */
}
EDGEC_BY_LANES(edgec_exp4, edgec_expf, float32x4_t, 4, vst1q_f32, vld1q_f32)
EDGEC_BY_LANES(edgec_tanh4, edgec_tanhf, float32x4_t, 4, vst1q_f32, vld1q_f32)
#endif
