"""The HLS C++ renderer: prints kernel IR as C++ for high-level synthesis (Vitis HLS), the C
renderer's tables with the entries an FPGA changes.

A kernel is a `static` function whose buffers are arrays of their size (`const int8_t
w[576]`), so that the synthesis tool sees each memory whole; loops carry their pragmas (a
pipeline loop `#pragma HLS PIPELINE II=n`, an unrolled one `#pragma HLS UNROLL`); a loop the
CPU runs on its thread pool is a plain loop (hardware parallelism comes from the dataflow
and from unrolling, not from threads); streams are edgec's own `edgec::stream` (codegen/hls/
edgec_stream.h) read and written by `.read()` and `.write()`; a kernel that another calls (a
micro-kernel) is printed before it. A project may give some parameters and locals narrower
types (`param_types`, `local_types`: Xilinx's `ap_int<N>`, codegen/hls/ap_types): ROMs of
their values' width, accumulators of the width proved for them. The same text compiles with
g++ for C-simulation, where the pragmas are ignored. GPU constructs (grid and block loops,
barriers, warp exchanges) are refused.
"""

from __future__ import annotations

from ...kernel_ir.kernel import (
    Alloc,
    Barrier,
    Buffer,
    Expr,
    Kernel,
    Local,
    Loop,
    LoopKind,
    Op,
    Pop,
    Prefetch,
    Push,
    Role,
    Scalar,
    Stream,
    walk,
)
from ...kernel_ir.passes import used_params
from ..ctext import c_comment
from .c import CRenderer

# what the kernels use of the C runtime (edgec_runtime.h), for the HLS sources
PRELUDE = """#include <ap_int.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#ifndef EDGEC_HLS_PRELUDE
#define EDGEC_HLS_PRELUDE
/* a ROM's element: its values' width in synthesis; in C-simulation the narrowest C type
 * that holds the same values (g++ compiles a large initializer of ap_int slowly) */
#ifdef __SYNTHESIS__
#define EDGEC_ROM_INT(bits, native) ap_int<bits>
#define EDGEC_ROM_UINT(bits, native) ap_uint<bits>
#else
#define EDGEC_ROM_INT(bits, native) native
#define EDGEC_ROM_UINT(bits, native) native
#endif

/* round(a * m / 2^s) from the exact 64-bit product, half up: edgec_runtime.h's */
static inline int32_t edgec_mulshift(int32_t a, int32_t m, int32_t s)
{
    int64_t p = (int64_t)a * m + ((int64_t)1 << (s - 1));
    return (int32_t)(p >> 32) >> (s - 32);
}

/* the bits of `x` read as a `To` */
template <typename To, typename From> static inline To edgec_bitcast(From x)
{
    To y;
    memcpy(&y, &x, sizeof y);
    return y;
}
#endif
"""


DOC_CHARS = 240  # a kernel's comment (its node's types, with every scale) cut to this


class HlsRenderer(CRenderer):
    function_prefix = "static void"

    def __init__(self) -> None:
        super().__init__(None)
        # per kernel: C++ types for some of its parameters (narrow ROMs, `ap_int<N>`) and for
        # its locals whose names start with a prefix (an accumulator's proved width)
        self.param_types: dict[str, dict[str, str]] = {}
        self.local_types: dict[str, dict[str, str]] = {}
        self._kernel = ""

    # -- expressions -------------------------------------------------------------------
    def _bitcast(self, e: Expr, x: Expr) -> tuple[str, int]:
        return f"edgec_bitcast<{self.type(e.dtype)}>({self.expr(x)})", 16

    def _shfl_xor(self, e: Expr, x: Expr, mask: int) -> tuple[str, int]:
        raise ValueError("HLS renderer: shfl_xor exchanges values between a GPU warp's "
                         "threads and has no FPGA form")

    expressions = CRenderer.expressions | {Op.BITCAST: _bitcast, Op.SHFL_XOR: _shfl_xor}

    # -- statements --------------------------------------------------------------------
    def _loop(self, s: Loop, indent: str) -> list[str]:
        if s.kind in (LoopKind.GRID, LoopKind.BLOCK):
            raise ValueError(f"HLS renderer: {s.kind} loop {s.var} is a GPU construct; "
                             "an FPGA kernel has serial, unrolled and pipeline loops")
        v, n = s.var, self.expr(s.extent, 11)
        inner = indent + "    "
        pragmas = []
        if s.kind is LoopKind.PIPELINE:
            pragmas.append(f"{inner}#pragma HLS PIPELINE II={s.ii or 1}")
        if s.kind is LoopKind.UNROLL:
            pragmas.append(f"{inner}#pragma HLS UNROLL")
        elif s.unroll > 1:
            pragmas.append(f"{inner}#pragma HLS UNROLL factor={s.unroll}")
        return [f"{indent}for (ptrdiff_t {v} = 0; {v} < {n}; ++{v}) {{", *pragmas,
                *self.stmts(s.body, inner), f"{indent}}}"]

    def _local(self, s: Local, indent: str) -> list[str]:
        for prefix, ctype in self.local_types.get(self._kernel, {}).items():
            if s.name.startswith(prefix) and s.lanes == 1:
                return [f"{indent}{ctype} {s.name} = {self.expr(s.init)};"]
        return super()._local(s, indent)

    def _alloc(self, s: Alloc, indent: str) -> list[str]:
        """A local array; a partitioned one `static` (a frame buffer: off a C-simulation
        thread's stack) with its ARRAY_PARTITION pragma."""
        b = s.buf
        if s.partition > 1:
            return [f"{indent}static {self.type(b.dtype)} {b.name}[{b.numel}];",
                    f"#pragma HLS ARRAY_PARTITION variable={b.name} cyclic "
                    f"factor={s.partition}"]
        return [f"{indent}{self.type(b.dtype)} {b.name}[{b.numel}]; /* {b.space} */"]

    def _barrier(self, s: Barrier, indent: str) -> list[str]:
        raise ValueError("HLS renderer: a barrier synchronizes a GPU block's threads; an FPGA "
                         "kernel has none")

    def _prefetch(self, s: Prefetch, indent: str) -> list[str]:
        return []  # on-chip memories are not fetched ahead

    def _push(self, s: Push, indent: str) -> list[str]:
        return [f"{indent}{s.stream.name}.write({self.expr(s.value)});"]

    def _pop(self, s: Pop, indent: str) -> list[str]:
        return [f"{indent}{self.type(s.stream.dtype)} {s.name} = {s.stream.name}.read();"]

    statements = CRenderer.statements | {Loop: _loop, Local: _local, Alloc: _alloc,
                                         Barrier: _barrier, Prefetch: _prefetch, Push: _push,
                                         Pop: _pop}

    # -- kernels -----------------------------------------------------------------------
    def param(self, b: Buffer | Scalar | Stream, restrict: bool = True) -> str:
        if isinstance(b, Scalar):
            return f"{self.type(b.dtype)} {b.name}"
        if isinstance(b, Stream):
            return f"edgec::stream<{self.type(b.dtype)}> &{b.name}"
        const = "const " if b.role in (Role.IN, Role.CONST) else ""
        ctype = self.param_types.get(self._kernel, {}).get(b.name) or self.type(b.dtype)
        return f"{const}{ctype} {b.name}[{max(b.numel, 1)}]"

    def signature(self, k: Kernel) -> str:
        params = ", ".join(self.param(b) for b in k.params) or "void"
        return f"{self.function_prefix} {k.name}({params})"

    def kernel(self, k: Kernel) -> str:
        """The function of `k`: its loops as they are (a parallel loop is a plain loop)."""
        self._kernel = k.name
        doc = k.doc if len(k.doc) <= DOC_CHARS else k.doc[:DOC_CHARS] + " ..."
        lines = ["/* " + c_comment(doc) + " */"] if doc else []
        lines += [self.signature(k), "{"]
        used = used_params(k)
        lines += [f"    (void){b.name};" for b in k.params if b.name not in used]
        lines += self.stmts(k.body, "    ")
        lines += [f'    EDGEC_CSIM_COUNTS("{s.counts}", {s.buf.name}, {s.buf.numel});'
                  for s in walk(k.body) if isinstance(s, Alloc) and s.counts]
        return "\n".join([*lines, "}"])

    def functions(self, kernels: list[Kernel]) -> str:
        """Each kernel's callees (once) and then the kernel."""
        out: list[str] = []
        seen: set[str] = set()
        for k in kernels:
            for c in [*k.callees(), k]:
                if c.name not in seen:
                    seen.add(c.name)
                    out.append(self.kernel(c))
        return "\n\n".join(out)
