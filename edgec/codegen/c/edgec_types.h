/* edgec_types.h: the dtype and status codes every edgec-generated header shares.
 * Guarded, so that an app can include the headers of several models. */
#ifndef EDGEC_TYPES_DEFINED
#define EDGEC_TYPES_DEFINED
/* Element types; the numbers are ONNX's TensorProto codes. */
enum edgec_dtype {
    EDGEC_DTYPE_F32 = 1, EDGEC_DTYPE_U8 = 2, EDGEC_DTYPE_I8 = 3, EDGEC_DTYPE_U16 = 4,
    EDGEC_DTYPE_I16 = 5, EDGEC_DTYPE_I32 = 6, EDGEC_DTYPE_I64 = 7, EDGEC_DTYPE_BOOL = 9,
    EDGEC_DTYPE_F16 = 10, EDGEC_DTYPE_F64 = 11, EDGEC_DTYPE_U32 = 12, EDGEC_DTYPE_U64 = 13
};
/* What NAME_run returns. */
enum edgec_status {
    EDGEC_OK = 0,
    EDGEC_ERR_NULL_ARGUMENT = 1,     /* inputs, outputs, one of their pointers, or workspace is NULL */
    EDGEC_ERR_MISALIGNED = 2,        /* workspace is not aligned to NAME_WORKSPACE_ALIGN bytes */
    EDGEC_ERR_THREADS = 3,           /* the thread pool could not be started */
    EDGEC_ERR_LOOP_EXIT = 4,         /* a Loop's condition turned false before its trip count */
    EDGEC_ERR_CORRUPT_WEIGHTS = 5,   /* the coded weights (--compress) do not decode */
    EDGEC_ERR_NO_DEVICE = 6,         /* a CUDA library: no GPU (or no driver) to run on */
    EDGEC_ERR_CUDA = 7               /* a CUDA library: a CUDA call failed (NAME_cuda_error) */
};
#endif
