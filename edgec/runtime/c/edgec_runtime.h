/* edgec_runtime.h: the minimal runtime that generated model code includes (not apps).
 * Header-only and static, so several models linked into one app never clash. */
#ifndef EDGEC_RUNTIME_H
#define EDGEC_RUNTIME_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "edgec_types.h"

/* A hint that *p is read soon (the kernel IR's Prefetch): into every cache level where the
 * compiler has a prefetch builtin, nothing elsewhere (or what the build defines instead). */
#ifndef EDGEC_PREFETCH
#if defined(__GNUC__) || defined(__clang__)
#define EDGEC_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define EDGEC_PREFETCH(p) ((void)(p))
#endif
#endif

/* A FIFO between kernels (the kernel IR's Stream), a ring of `depth` elements. Kernels run one
 * after the other on a CPU, so a stream holds what its producer pushes before its consumer
 * pops. */
typedef struct {
    void *data;
    ptrdiff_t depth, head, tail;
} edgec_stream;
#define EDGEC_PUSH(s, T, v) (((T *)(s)->data)[(s)->tail++ % (s)->depth] = (v))
#define EDGEC_POP(s, T) (((T *)(s)->data)[(s)->head++ % (s)->depth])

/* expf without libm and without branches, so that a loop calling it vectorizes (libm's expf
 * is a call per element): x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, the first exact
 * in 9 bits), exp(r) by Cephes' polynomial, times 2^n built as 2^a 2^b, a + b = n, so that
 * results in the denormal range and past FLT_MAX round and overflow as libm's do. Within
 * 1.4 ulp of exp over all floats (1.5e-45 absolute below FLT_MIN); exp(NaN) is NaN. The
 * kernel IR's "exp" on float32 is this function in both the C and the LLVM renderer, which
 * compute it with the same IEEE operations in the same order. */
static inline float edgec_expf(float x)
{
    float c = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x;
    c = c == c ? c : 0.0f;
    float n = floorf(c * 1.44269504088896341f + 0.5f);
    float r = c - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    int32_t k = (int32_t)n + 256, a = k >> 1, b = k - a; /* k > 0: a shift, not a division */
    union { int32_t i; float f; } sa = { (a - 1) * 8388608 }, sb = { (b - 1) * 8388608 };
    float y = p * sa.f * sb.f;
    return x == x ? y : x;
}

/* tanhf the same way (Cephes' tanhf without its branches): |x| > 0.625 from edgec_expf,
 * 1 - 2 / (exp(2|x|) + 1) with the sign of x (1 once exp overflows), else an odd polynomial.
 * Within 1 ulp of tanh over all floats; tanh(-0) is -0 and tanh(NaN) NaN. */
static inline float edgec_tanhf(float x)
{
    float a = fabsf(x);
    float e = edgec_expf(a + a);
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = x < 0.0f ? -big : big;
    float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = p * z * x + x;
    small = a == 0.0f ? x : small;
    return a > 0.625f ? big : small;
}

static inline const char *edgec_status_string(int status)
{
    switch (status) {
    case EDGEC_OK: return "ok";
    case EDGEC_ERR_NULL_ARGUMENT: return "a NULL pointer was passed for inputs, outputs or the workspace";
    case EDGEC_ERR_MISALIGNED: return "the workspace is not aligned to the required boundary";
    case EDGEC_ERR_THREADS: return "the thread pool could not be started";
    case EDGEC_ERR_LOOP_EXIT:
        return "a Loop ended before its trip count; edgec compiles fixed-count loops only";
    default: return "unknown status";
    }
}

static inline int edgec_is_aligned(const void *p, size_t align)
{
    return ((uintptr_t)p & (uintptr_t)(align - 1)) == 0;
}
#endif
