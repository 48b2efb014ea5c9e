"""The CUDA renderer: prints kernel IR as CUDA C++, the C renderer's tables with the entries a
GPU changes.

A kernel becomes one `__global__` function per launch (kernel_ir/gpu.py: a nest of grid loops
around the block's shared arrays and a nest of block loops; `bind_threads` makes one of a CPU
lowering's kernel) and a host function of the kernel's name and parameters plus a
`cudaStream_t` (extern "C", or static in a library), which launches them in order on the
stream and returns the launch's `cudaError_t`. Grid loop variables are `blockIdx`, block
loop variables `threadIdx` (the innermost loop is x), shared arrays `__shared__`, a
`Barrier` is `__syncthreads()`: the block's
threads run its body themselves, so nothing is split at barriers as on a CPU. A kernel that
another calls (a micro-kernel) is a `__device__` function. The preamble defines the runtime's
scalar helpers for the device (`edgec_mulshift`, and exp and tanh printed from their kernel-IR
definitions, so that device code computes what the interpreter and the CPU libraries do).
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ...kernel_ir.gpu import Launch, launches
from ...kernel_ir.kernel import (
    Alloc,
    AtomicAdd,
    Barrier,
    Buffer,
    Expr,
    Kernel,
    Loop,
    LoopKind,
    Mma,
    Op,
    Prefetch,
    Space,
    walk,
)
from ...kernel_ir.mathlib import expf, tanhf
from ...kernel_ir.passes import names, used_params
from ..ctext import c_comment
from .c import C_TYPES, CRenderer

CUDA_TYPES = C_TYPES | {DType.F16: "__half", DType.BF16: "__nv_bfloat16"}

# an Mma's operand types: the helper that renders it (the suffix of edgec_mma_*) and PTX's
# mma.sync shape and types (D, A, B, C)
MMA_FORMS = {
    (DType.F16, DType.F16): ("f16", "m16n8k16", "f32.f16.f16.f32"),
    (DType.BF16, DType.BF16): ("bf16", "m16n8k16", "f32.bf16.bf16.f32"),
    (DType.F32, DType.F32): ("tf32", "m16n8k8", "f32.tf32.tf32.f32"),
    **{(a, b): (f"{a.value[0]}8{b.value[0]}8".replace("i", "s"), "m16n8k32",
                f"s32.{'s' if a is DType.I8 else 'u'}8.{'s' if b is DType.I8 else 'u'}8.s32")
       for a in (DType.I8, DType.U8) for b in (DType.I8, DType.U8)},
}


def _mma_helper(a: DType, b: DType) -> str:
    """The device function of an Mma of `a` by `b`: each lane reads its four words of A and
    two of B (kernel_ir/mma.py's layout; TF32 operands rounded by cvt.rna) and the warp's
    mma.sync adds the product into the lane's four accumulators."""
    suffix, shape, types = MMA_FORMS[(a, b)]
    ta, tb = CUDA_TYPES[a], CUDA_TYPES[b]
    per = 4 // a.itemsize
    acc, con = ("float", "f") if a.is_float else ("int32_t", "r")
    word = "edgec_tf32(*(const float *)(p))" if a is DType.F32 else "*(const uint32_t *)(p)"
    return f"""__device__ __forceinline__ void edgec_mma_{suffix}({acc} *c, const {ta} *a, \
ptrdiff_t lda, const {tb} *b, ptrdiff_t ldb)
{{
    const unsigned lane = edgec_laneid(), g = lane >> 2, t = lane & 3;
    uint32_t x[4], y[2];
#define EDGEC_WORD(p) {word}
#pragma unroll
    for (int r = 0; r < 4; ++r)
        x[r] = EDGEC_WORD(a + (g + 8 * (r & 1)) * lda + (r >> 1) * {4 * per} + {per} * t);
#pragma unroll
    for (int r = 0; r < 2; ++r)
        y[r] = EDGEC_WORD(b + g * ldb + r * {4 * per} + {per} * t);
#undef EDGEC_WORD
    asm volatile("mma.sync.aligned.{shape}.row.col.{types} {{%0, %1, %2, %3}}, "
                 "{{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};"
                 : "+{con}"(c[0]), "+{con}"(c[1]), "+{con}"(c[2]), "+{con}"(c[3])
                 : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]));
}}""".replace("\\\n", "")


MMA_PREAMBLE = "\n\n".join([
    """/* Mma (kernel_ir/mma.py): a warp's C[16 x 8] += A[16 x K] B[K x 8] on tensor cores,
   A row-major and B column-major (K-contiguous), each lane's accumulators at c; sm_80 on */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ unsigned edgec_laneid(void)
{
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

__device__ __forceinline__ uint32_t edgec_tf32(float x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}""", *(_mma_helper(a, b) for a, b in MMA_FORMS), "#endif"])

PREAMBLE = """#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stddef.h>
#include <stdint.h>

/* the runtime's scalar helpers (edgec_runtime.h), for device code */
__device__ __forceinline__ int32_t edgec_mulshift(int32_t a, int32_t m, int32_t s)
{
    int64_t p = (int64_t)a * m + ((int64_t)1 << (s - 1));
    return (int32_t)(p >> 32) >> (s - 32);
}

/* dot4 (kernel_ir): c + the sum of the 4 byte products of the words at a and b (4-byte
   aligned), uint8 or int8 a times int8 b: the GPU's dp4a */
__device__ __forceinline__ int32_t edgec_dp4a_us(const uint8_t *a, const int8_t *b, int32_t c)
{
    int32_t d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d)
        : "r"(*(const uint32_t *)a), "r"(*(const int32_t *)b), "r"(c));
    return d;
}

__device__ __forceinline__ int32_t edgec_dp4a_ss(const int8_t *a, const int8_t *b, int32_t c)
{
    return __dp4a(*(const int32_t *)a, *(const int32_t *)b, c);
}
"""


class CudaRenderer(CRenderer):
    types = CUDA_TYPES
    restrict = "__restrict__"
    function_prefix = "static __device__ void"
    launcher_prefix = 'extern "C"'  # the host functions that launch a kernel

    def __init__(self) -> None:
        super().__init__(None)

    # -- statements --------------------------------------------------------------------
    def _loop(self, s: Loop, indent: str) -> list[str]:
        if s.kind in (LoopKind.GRID, LoopKind.BLOCK):
            raise ValueError(f"CUDA renderer: {s.kind} loop {s.var} inside a launch's threads "
                             "(kernel_ir/gpu.py launches says where they go)")
        v, n = s.var, self.expr(s.extent, 11)
        out = []
        if s.kind is LoopKind.UNROLL or s.unroll > 1:
            out.append(f"{indent}#pragma unroll {s.unroll}" if s.unroll else
                       f"{indent}#pragma unroll")
        return out + [f"{indent}for (ptrdiff_t {v} = 0; {v} < {n}; ++{v}) {{",
                      *self.stmts(s.body, indent + "    "), f"{indent}}}"]

    def _alloc(self, s: Alloc, indent: str) -> list[str]:
        b = s.buf
        shared = "__shared__ __align__(16) " if b.space is Space.SHARED else ""
        return [f"{indent}{shared}{self.type(b.dtype)} {b.name}[{b.numel}];"]

    def _barrier(self, s: Barrier, indent: str) -> list[str]:
        return [f"{indent}__syncthreads();"]

    def _prefetch(self, s: Prefetch, indent: str) -> list[str]:
        return []  # the GPU's caches are not asked ahead

    def _atomic_add(self, s: AtomicAdd, indent: str) -> list[str]:
        return [f"{indent}atomicAdd({self.pointer(s.buf, s.index)}, {self.expr(s.value)});"]

    def _mma(self, s: Mma, indent: str) -> list[str]:
        suffix = MMA_FORMS[(s.a.dtype, s.b.dtype)][0]
        return [f"{indent}edgec_mma_{suffix}({self.pointer(s.acc, s.acc_at)}, "
                f"{self.pointer(s.a, s.a_at)}, {s.a_ld}, {self.pointer(s.b, s.b_at)}, "
                f"{s.b_ld});"]

    def _shfl_xor(self, e, x, mask: int) -> tuple[str, int]:
        return f"__shfl_xor_sync(0xffffffffu, {self.expr(x)}, {mask})", 16

    def _dot4(self, e: Expr, acc: Expr, a: Expr, b: Expr) -> tuple[str, int]:
        """One int32 lane of two 4-byte loads: dp4a (the arrays' words are 4-byte aligned:
        shared arrays are declared so, and the kernels index whole words)."""
        if e.lanes == 1 and all(x.op is Op.VLOAD and x.field("count") is None for x in (a, b)):
            fn = "edgec_dp4a_us" if a.dtype is DType.U8 else "edgec_dp4a_ss"
            pa, pb = (self.pointer(x.field("buf"), x.field("index")) for x in (a, b))
            return f"{fn}({pa}, {pb}, {self.expr(acc)})", 16
        return super()._dot4(e, acc, a, b)

    expressions = CRenderer.expressions | {Op.SHFL_XOR: _shfl_xor, Op.DOT4: _dot4}
    statements = CRenderer.statements | {Loop: _loop, Alloc: _alloc, Barrier: _barrier,
                                         Prefetch: _prefetch, Mma: _mma,
                                         AtomicAdd: _atomic_add}

    # -- kernels -----------------------------------------------------------------------
    def signature(self, k: Kernel) -> str:
        opaque = "__noinline__ " if k.opaque else ""
        params = ", ".join(self.param(b) for b in k.params) or "void"
        return f"{opaque}{self.function_prefix} {k.name}({params})"

    def device_function(self, k: Kernel) -> str:
        """A kernel that launched code calls (a micro-kernel), as a `__device__` function."""
        if any(isinstance(s, Loop) and s.kind not in (LoopKind.SERIAL, LoopKind.UNROLL)
               for s in walk(k.body)):
            raise ValueError(f"CUDA renderer: {k.name} is called from device code and has "
                             "parallel, grid or block loops")
        return CRenderer.kernel(self, k)

    def launched(self, k: Kernel) -> str:
        """`k` (bound: kernel_ir/gpu.py) as its `__global__` functions and the host function
        that launches them on a stream."""
        parts, calls = [], []
        scalars = {p.name for p in k.params if not isinstance(p, Buffer)}
        for n, launch in enumerate(launches(k)):
            name = f"{k.name}_launch{n}"
            used = used_params(Kernel(name, k.params, [launch.grid[0]]))
            params = [p for p in k.params if p.name in used]
            parts.append(self._global(name, params, launch, k.doc))
            calls += self._launch(k, name, params, launch, scalars)
        doc = c_comment(k.doc) or k.name
        params = ", ".join([*(self.param(b) for b in k.params), "cudaStream_t stream"])
        parts.append("\n".join([
            f"/* {doc}: its launches in order on `stream` */",
            f"{self.launcher_prefix} cudaError_t {k.name}({params})", "{", *calls,
            "    return cudaGetLastError();", "}"]))
        return "\n\n".join(parts)

    def _global(self, name: str, params: list, launch: Launch, doc: str) -> str:
        threads = 1
        for loop in launch.block:
            threads *= int(loop.extent.field("value"))
        lines = [f"/* {c_comment(doc) or name} */"] if doc else []
        lines += [f"static __global__ void __launch_bounds__({threads}) {name}("
                  f"{', '.join(self.param(p) for p in params) or 'void'})", "{"]
        read = names(Kernel(name, params, [*launch.prologue, *launch.body]))[0]
        for loops, index in ((launch.grid, "blockIdx"), (launch.block, "threadIdx")):
            for loop, axis in zip(reversed(loops), "xyz", strict=False):
                if loop.var in read:
                    lines.append(f"    const ptrdiff_t {loop.var} = (ptrdiff_t){index}.{axis};")
        lines += self.stmts(launch.prologue, "    ") + self.stmts(launch.body, "    ")
        return "\n".join([*lines, "}"])

    def _launch(self, k: Kernel, name: str, params: list, launch: Launch,
                scalars: set[str]) -> list[str]:
        dims = []
        for loops in (launch.grid, launch.block):
            for loop in loops:
                free = names(Kernel(name, [], [Loop("_", loop.extent, [])]))[0] - scalars
                if free:
                    raise ValueError(f"CUDA renderer: kernel {k.name}: the extent of {loop.var}"
                                     f" reads {', '.join(sorted(free))}; a launch's "
                                     "dimensions are the kernel's scalars and constants")
            sizes = [self.expr(loop.extent) for loop in reversed(loops)]
            dims.append(f"dim3({', '.join(sizes + ['1'] * (3 - len(sizes)))})")
        args = ", ".join(p.name for p in params)
        grid = [loop.extent for loop in launch.grid]
        call = f"{name}<<<{dims[0]}, {dims[1]}, 0, stream>>>({args});"
        if all(e.op is Op.CONST for e in grid):  # an empty grid is no launch
            return [f"    {call}"] if all(e.field("value") > 0 for e in grid) else []
        cond = " && ".join(f"({self.expr(e)}) > 0" for e in grid)
        return [f"    if ({cond})", f"        {call}"]

    def source(self, kernels: list[Kernel]) -> str:
        """A .cu file: the preamble, the device math functions, then each kernel's callees
        (once) and the kernel itself."""
        out = [PREAMBLE, MMA_PREAMBLE, self._mathlib()]
        seen: set[str] = set()
        for k in kernels:
            for c in k.callees():
                if c.name not in seen:
                    seen.add(c.name)
                    out.append(self.device_function(c))
            out.append(self.launched(k))
        return "\n\n".join(out) + "\n"

    def _mathlib(self) -> str:
        parts = []
        for fn in (expf(), tanhf()):
            parts += [f"__device__ __forceinline__ float {fn.name}(float x)", "{",
                      *self.stmts(list(fn.body), "    "), f"    return {self.expr(fn.result)};",
                      "}"]
        return "\n".join(parts)

