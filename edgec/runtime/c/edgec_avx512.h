/* edgec_avx512.h: the helpers of edgec's AVX-512 kernels (renderers/c.py AVX512): masks of a
 * vector tail, vector exp and tanh through the runtime's edgec_expf and edgec_tanhf */
#ifndef EDGEC_AVX512_H
#define EDGEC_AVX512_H
#include <immintrin.h>
#include "edgec_runtime.h"

#define EDGEC_MASK16(n) ((__mmask16)((1u << (n)) - 1u))
static inline __m512 edgec_exp16(__m512 v)
{
    float x[16];
    _mm512_storeu_ps(x, v);
    for (int i = 0; i < 16; ++i)
        x[i] = edgec_expf(x[i]);
    return _mm512_loadu_ps(x);
}
static inline __m512 edgec_tanh16(__m512 v)
{
    float x[16];
    _mm512_storeu_ps(x, v);
    for (int i = 0; i < 16; ++i)
        x[i] = edgec_tanhf(x[i]);
    return _mm512_loadu_ps(x);
}
#endif
