/* edgec_runtime.h: the minimal runtime that generated model code includes (not apps).
 * Header-only and static, so several models linked into one app never clash. */
#ifndef EDGEC_RUNTIME_H
#define EDGEC_RUNTIME_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "edgec_types.h"

/* a function the compiler must not specialise on a caller's constants (kernel IR `opaque`):
   gcc's noipa; clang has no such attribute, and noinline is the nearest. These are the int8
   micro-kernels, whose loops carry a dozen or more sums: gcc 12's partial redundancy
   elimination (-ftree-pre) gave the GEMM tile's one-loop form two registers per sum and 24
   register copies per iteration beside its 12 vpdpbusd (front-end bound at 0.75 of the peak),
   so it is off for them */
#ifndef EDGEC_OPAQUE
#if defined(__clang__)
#define EDGEC_OPAQUE __attribute__((noinline))
#elif defined(__GNUC__)
#define EDGEC_OPAQUE __attribute__((noipa, optimize("no-tree-pre")))
#else
#define EDGEC_OPAQUE
#endif
#endif

/* a function never inlined into its callers (kernel IR `outlined`), which the compiler may
   still specialise on their constants: a register tile whose caller's loops would crowd
   the registers if inlined beside it */
#ifndef EDGEC_NOINLINE
#if defined(__GNUC__) || defined(__clang__)
#define EDGEC_NOINLINE __attribute__((noinline))
#else
#define EDGEC_NOINLINE
#endif
#endif

/* A hint that *p is read soon (the kernel IR's Prefetch): into every cache level where the
 * compiler has a prefetch builtin, nothing elsewhere (or what the build defines instead). */
#ifndef EDGEC_PREFETCH
#if defined(__GNUC__) || defined(__clang__)
#define EDGEC_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define EDGEC_PREFETCH(p) ((void)(p))
#endif
#endif

/* A kernel-local array's alignment (the kernel IR's Alloc): a cache line, so that the vector
 * loads of a buffer the tiles read (a chunk of int8 weights converted to float) never split
 * one; nothing where the compiler has no attribute for it. */
#ifndef EDGEC_ALIGNED
#if defined(__GNUC__) || defined(__clang__)
#define EDGEC_ALIGNED __attribute__((aligned(64)))
#else
#define EDGEC_ALIGNED
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

/* round(a * m / 2^s) rounded half toward +infinity, from the exact 64-bit product: the kernel
 * IR's mulshift (fixed-point requantization, 33 <= s <= 62). The high word of the rounded
 * product shifted right by s - 32 is the same value (the low word cannot carry into it), and
 * is what the vector ISAs compute. Right shifts of negative values are arithmetic, as on
 * every compiler edgec targets. */
static inline int32_t edgec_mulshift(int32_t a, int32_t m, int32_t s)
{
    int64_t p = (int64_t)a * m + ((int64_t)1 << (s - 1));
    return (int32_t)(p >> 32) >> (s - 32);
}

/* `name`: the float function `fn` applied to each of the `lanes` lanes of a vector, through
 * memory (`store`, `load`); with a branch-free `fn` the compiler turns the loop back into
 * vector code where the ISA allows, and every lane gets what scalar code computes. */
#define EDGEC_BY_LANES(name, fn, vtype, lanes, store, load)                         \
    static inline vtype name(vtype v)                                               \
    {                                                                               \
        float x[lanes];                                                             \
        store(x, v);                                                                \
        for (int i = 0; i < (lanes); ++i)                                           \
            x[i] = fn(x[i]);                                                        \
        return load(x);                                                             \
    }

/* float32 exp and tanh without libm and without branches, so that loops calling them
 * vectorize; within 1.4 and 1 ulp. Defined once, in the kernel IR (edgec/kernel_ir/mathlib.py
 * gives the method), and printed here; the LLVM backend builds the same operations. */
/* BEGIN edgec/codegen/mathlib_c.py: generated, do not edit */
static inline float edgec_expf(float x)
{
    float c = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x;
    c = c == c ? c : 0.0f;
    float n = floorf(c * 1.442695f + 0.5f);
    float r = c - n * 0.6933594f;
    r = r - n * -0.00021219444f;
    float p = 0.00019875691f;
    p = p * r + 0.0013981999f;
    p = p * r + 0.008333452f;
    p = p * r + 0.041665796f;
    p = p * r + 0.16666666f;
    p = p * r + 0.5f;
    p = p * (r * r) + r + 1.0f;
    int32_t k = (int32_t)n + 256;
    int32_t a = k >> 1;
    int32_t b = k - a;
    float sa = ((union { int32_t from; float to; }){ .from = (a - 1) * 8388608 }).to;
    float sb = ((union { int32_t from; float to; }){ .from = (b - 1) * 8388608 }).to;
    float y = p * sa * sb;
    return x == x ? y : x;
}
static inline float edgec_tanhf(float x)
{
    float a = fabsf(x);
    float e = edgec_expf(a + a);
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = x < 0.0f ? -big : big;
    float z = x * x;
    float p = -0.0057049887f;
    p = p * z + 0.020639088f;
    p = p * z + -0.053739715f;
    p = p * z + 0.13331442f;
    p = p * z + -0.3333328f;
    float small = p * z * x + x;
    small = a == 0.0f ? x : small;
    return a > 0.625f ? big : small;
}
/* END edgec/codegen/mathlib_c.py */

static inline const char *edgec_status_string(int status)
{
    switch (status) {
    case EDGEC_OK: return "ok";
    case EDGEC_ERR_NULL_ARGUMENT: return "a NULL pointer was passed for inputs, outputs or the workspace";
    case EDGEC_ERR_MISALIGNED: return "the workspace is not aligned to the required boundary";
    case EDGEC_ERR_THREADS: return "the thread pool could not be started";
    case EDGEC_ERR_LOOP_EXIT:
        return "a Loop ended before its trip count; edgec compiles fixed-count loops only";
    case EDGEC_ERR_CORRUPT_WEIGHTS:
        return "the library's coded weights do not decode: its data is damaged; rebuild it";
    case EDGEC_ERR_NO_DEVICE:
        return "no CUDA device: this machine has no NVIDIA GPU, or no driver for CUDA 13.0";
    case EDGEC_ERR_CUDA: return "a CUDA call failed (NAME_cuda_error() says which)";
    default: return "unknown status";
    }
}

static inline int edgec_is_aligned(const void *p, size_t align)
{
    return ((uintptr_t)p & (uintptr_t)(align - 1)) == 0;
}

/* edgec compile --sanitize: AddressSanitizer checks C's memory accesses, but not x86's masked
 * loads and stores or gathers (builtins, not accesses it instruments); a sanitized library
 * checks their bytes first (renderers/c_isas.py `sanitized`): an access to a poisoned byte,
 * made here through C, stops the program with the sanitizer's report. */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
__attribute__((always_inline)) static inline void edgec_asan_check(const void *p, size_t bytes,
                                                                   int write)
{
    volatile char *bad = (volatile char *)__asan_region_is_poisoned((void *)p, bytes);
    if (bad != NULL && write)
        *bad = 0;
    else if (bad != NULL)
        (void)*bad;
}
#else
#define edgec_asan_check(p, bytes, write) ((void)(p), (void)(bytes), (void)(write))
#endif
#endif
