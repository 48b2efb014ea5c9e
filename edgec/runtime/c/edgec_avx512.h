/* edgec_avx512.h: the helpers of edgec's AVX-512 kernels (renderers/c.py AVX512): masks of a
 * vector tail, vector exp and tanh through the runtime's edgec_expf and edgec_tanhf */
#ifndef EDGEC_AVX512_H
#define EDGEC_AVX512_H
#include <immintrin.h>
#include "edgec_runtime.h"

#define EDGEC_MASK16(n) ((__mmask16)((1u << (n)) - 1u))
EDGEC_BY_LANES(edgec_exp16, edgec_expf, __m512, 16, _mm512_storeu_ps, _mm512_loadu_ps)
EDGEC_BY_LANES(edgec_tanh16, edgec_tanhf, __m512, 16, _mm512_storeu_ps, _mm512_loadu_ps)
#endif
