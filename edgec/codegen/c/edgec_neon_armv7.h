/* edgec_neon_armv7.h: what Armv7 NEON lacks beside aarch64's (renderers/c.py NEON_ARMV7): division
 * lane by lane, NaN-propagating max/min, pairwise folds, rounding to nearest */
#ifndef EDGEC_NEON_ARMV7_H
#define EDGEC_NEON_ARMV7_H
#include "edgec_neon.h"

static inline float32x4_t edgec_vdivq_f32(float32x4_t a, float32x4_t b)
{
    float x[4], y[4];
    vst1q_f32(x, a);
    vst1q_f32(y, b);
    for (int i = 0; i < 4; ++i)
        x[i] /= y[i];
    return vld1q_f32(x);
}
static inline float32x4_t edgec_vmaxq_f32(float32x4_t a, float32x4_t b)
{
    return vbslq_f32(vcgtq_f32(a, b), a, b);
}
static inline float32x4_t edgec_vminq_f32(float32x4_t a, float32x4_t b)
{
    return vbslq_f32(vcltq_f32(a, b), a, b);
}
#define EDGEC_FOLD4(name, t, base, pair)                                            \
    static inline base##_t name(base##x4_t v)                                       \
    {                                                                               \
        base##x2_t x = pair(vget_low_##t(v), vget_high_##t(v));                     \
        return vget_lane_##t(pair(x, x), 0);                                        \
    }
EDGEC_FOLD4(edgec_vaddvq_f32, f32, float32, vpadd_f32)
EDGEC_FOLD4(edgec_vmaxvq_f32, f32, float32, vpmax_f32)
EDGEC_FOLD4(edgec_vminvq_f32, f32, float32, vpmin_f32)
EDGEC_FOLD4(edgec_vaddvq_s32, s32, int32, vpadd_s32)
/* vrndn is Armv8: round each lane with nearbyintf (the default mode: ties to even) */
EDGEC_BY_LANES(edgec_vrndnq_f32, nearbyintf, float32x4_t, 4, vst1q_f32, vld1q_f32)
#endif
