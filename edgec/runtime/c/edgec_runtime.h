/* edgec_runtime.h: the minimal runtime that generated model code includes (not apps).
 * Header-only and static, so several models linked into one app never clash. */
#ifndef EDGEC_RUNTIME_H
#define EDGEC_RUNTIME_H
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
