"""Model-level code generation: a planned graph becomes C sources for one static library.

The graph becomes a `Program` (program.py: kernel launches, copies and control flow over
named storage), which a backend renders. Outputs: `NAME.c` (the kernels and `NAME_run`, which
runs the program on the input, output, weight and workspace pointers), `NAME.h` (the whole
API), `NAME_weights.S` with `NAME.weights.bin` (each weight a 64-byte aligned, read-only
symbol filled by `.incbin`, so large models compile in seconds) and the runtime headers.

Backends (`BACKENDS`, by name): "c" prints the kernels as C into `NAME.c`; on `arm64-dotprod`
each micro-kernel with int8 dot products is built for plain NEON and for Armv8.2-A `sdot`, on
`x86-avx2` for AVX2 and for AVX-VNNI, chosen at run time (`renderers/c.py` `Dispatch`), and
the library exports `NAME_dot_product_kernels()`, which says which of the two it runs.
"llvm" compiles the kernels with `renderers/llvm.py` into `NAME_kernels.o`; `NAME.c` keeps
the entry points, the kernels' declarations and a trampoline into its pool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from .. import __version__
from ..errors import EdgecError
from ..ir.graph import Graph, Value
from ..ir.onnx_dtypes import to_onnx
from ..ir.registry import get_op
from ..kernel_ir.program import (
    ALIGN,
    Branch,
    ExitUnless,
    Launch,
    Program,
    Ref,
    Repeat,
    SetScalar,
)
from ..kernel_ir.program_printer import print_program
from ..lowering.lower import Strategy
from ..lowering.program import build_program
from ..targets.target import Target
from .ctext import c_comment, c_string
from .renderers.c import CRenderer
from .renderers.c_isas import AVXVNNI, DOTPROD, VECTOR_ISAS, sanitized
from .runtime_c import c_source

# bytes after each weight array that a sanitized build poisons (generate)
REDZONE = 64


@dataclass
class Sources:
    name: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    c_sources: list[str] = field(default_factory=list)  # files to compile into the library
    objects: list[str] = field(default_factory=list)  # object files ready to archive with them
    workspace_bytes: int = 0
    weights_bytes: int = 0
    kernels: list[str] = field(default_factory=list)  # the kernel functions NAME_run calls
    # per lowered node: its name, op, kernel and Strategy (lowering.py), in graph order
    strategies: list[dict] = field(default_factory=list)
    dot_product_kernels: bool = False  # micro-kernels dispatched to sdot/AVX-VNNI at run time
    kernel_ir: str | None = None  # the program and its kernels as text (emit_kernels)
    coded_bytes: int | None = None  # --compress: the coded weights' bytes
    weights_buffer_bytes: int = 0  # --compress: the static buffer they are decoded into
    # a CUDA library's launches per run, in order: {"kernel", "blocks", "threads"}
    gpu_launches: list[dict] = field(default_factory=list)
    # an HLS project's record for the manifest (codegen/hls_project.py); None for a library
    hls: dict | None = None


class CBackend:
    """Kernels printed as C into NAME.c by the C renderer of the target's vector ISA."""

    name = "c"

    def __init__(self, target: Target, lib: str, sanitize: bool = False):
        self.target = target
        isa = VECTOR_ISAS.get(target.isa)
        # a sanitized build checks the vector accesses AddressSanitizer does not see
        self.renderer = CRenderer(sanitized(isa) if sanitize and isa else isa)
        # int8 micro-kernels built twice, picked at run time: sdot on Armv8.2-A, AVX-VNNI on
        # an AVX2 build's CPUs that have it
        self.dispatch = DOTPROD if "dotprod" in target.features else \
            AVXVNNI if target.isa == "avx2" else None
        if sanitize and self.dispatch:
            self.dispatch = replace(self.dispatch, isa=sanitized(self.dispatch.isa))
        self.prefix = ""  # kernels are static functions of NAME.c

    def glue(self, lib: str) -> list[str]:
        return []

    def finish(self, src: Sources) -> None:
        pass


class LLVMBackend(CBackend):
    """Kernels compiled by LLVM (llvmlite) into NAME_kernels.o; NAME.c declares them."""

    name = "llvm"

    def __init__(self, target: Target, lib: str, sanitize: bool = False):
        if not target.llvm_triple:
            raise EdgecError(f"target {target.name} has no LLVM triple; use --backend c")
        try:
            from .renderers.llvm import KernelDeclarations, LLVMRenderer
        except ImportError as e:
            raise EdgecError(f"--backend llvm needs llvmlite ({e}); install it with "
                             "`pip install 'edgec[llvm]'` (llvmlite), or use --backend c") from None
        self.target = target
        self.llvm = LLVMRenderer(target, f"{lib}_parallel_for")
        self.renderer = KernelDeclarations(VECTOR_ISAS.get(target.isa), self.llvm)
        self.dispatch = None  # the plain NEON form (no run-time dispatch)
        self.prefix = f"{lib}_"  # the kernels are global symbols of the object: no clash

    def glue(self, lib: str) -> list[str]:
        return [f"/* kernels: compiled by LLVM into {lib}_kernels.o; their parallel loops run "
                "on this library's pool */",
                f"void {lib}_parallel_for(edgec_task task, void *ctx, ptrdiff_t n);",
                f"void {lib}_parallel_for(edgec_task task, void *ctx, ptrdiff_t n)", "{",
                "    edgec_parallel_for(task, ctx, n);", "}", ""]

    def finish(self, src: Sources) -> None:
        try:
            src.files[f"{src.name}_kernels.o"] = self.llvm.compile()
        except (ValueError, TypeError, RuntimeError) as e:  # a kernel form it cannot render
            raise EdgecError(f"the LLVM backend cannot build this model for "
                             f"{self.target.name}: {e}; compile it with --backend c") from None
        src.objects = [f"{src.name}_kernels.o"]


BACKENDS: dict[str, type[CBackend]] = {"c": CBackend, "llvm": LLVMBackend}


class _RunPrinter:
    """NAME_run's statements for a program, and the kernels it launches as C text (each
    once, micro-kernels apart and first)."""

    def __init__(self, backend: CBackend):
        self.r, self.dispatch = backend.renderer, backend.dispatch
        self.kernels: list[str] = []
        self.micro: dict[str, str] = {}
        self.dispatched: set[str] = set()  # micro-kernels built twice, chosen at run time
        self.vectors = False  # whether any kernel has vector code (the ISA's header then)

    def ref(self, x: Ref) -> str:
        t = self.r.type(x.dtype)
        const = "const " if x.read_only else ""
        if x.space == "input":
            e = f"({const}{t} *)inputs[{x.where}]"
        elif x.space == "output":
            e = f"({t} *)outputs[{x.where}]"
        elif x.space == "weight":
            e = x.where if x.dtype is self._weight_dtypes[x.where] else f"(const {t} *){x.where}"
        elif x.space == "workspace":
            e = f"({const}{t} *)(ws + {x.where})"
        else:
            e = f"({t} *)NULL"
        if x.step is not None:
            at = x.step.var if x.step.last is None else f"({x.step.last} - {x.step.var})"
            e = f"{e} + {at} * {x.step.per}"
        return e

    def ops(self, ops: list, indent: str) -> list[str]:
        out: list[str] = []
        for op in ops:
            if isinstance(op, Launch):
                out.append(f"{indent}{op.kernel.name}({', '.join(map(self.ref, op.args))});")
                self.launch(op.kernel)
            elif isinstance(op, Branch):
                out += [f"{indent}if (({self.ref(op.cond)})[0]) {{",
                        *self.ops(op.then, indent + "    "), f"{indent}}} else {{",
                        *self.ops(op.orelse, indent + "    "), f"{indent}}}"]
            elif isinstance(op, Repeat):
                v = op.var
                out += [f"{indent}for (int64_t {v} = 0; {v} < {op.count}; ++{v}) {{",
                        *self.ops(op.body, indent + "    "), f"{indent}}}"]
            elif isinstance(op, SetScalar):
                value = "true" if op.value is True else "false" if op.value is False \
                    else str(op.value)
                out.append(f"{indent}*{self.ref(op.dst)} = {value};")
            elif isinstance(op, ExitUnless):
                out += [f"{indent}if (!({self.ref(op.cond)})[0])",
                        f"{indent}    return {op.status};"]
            else:
                raise ValueError(f"codegen: unknown program op {type(op).__name__}")
        return out

    def launch(self, k) -> None:
        for fn in k.callees():
            if fn.name not in self.micro:
                text = self.r.dispatched(fn, self.dispatch) if self.dispatch else None
                if text is not None:
                    self.dispatched.add(fn.name)
                self.micro[fn.name] = text or self.r.kernel(fn)
        self.vectors = self.vectors or Strategy.of(k).lanes > 1
        self.kernels.append(self.r.kernel(k))

    def run(self, prog: Program) -> list[str]:
        self._weight_dtypes = {sym: v.dtype for sym, v in prog.weights}
        return self.ops(prog.body, "    ")


def generate(graph: Graph, plan, target: Target, name: str, source: str = "",
             threads: bool = True, backend: str = "c", compress: bool = False,
             sanitize: bool = False, emit_kernels: bool = False,
             strategies: Mapping[str, str] | None = None) -> Sources:
    """C sources of the library for `graph`, laid out by the memory plan `plan`; with
    `threads` False the library runs on the caller's thread only and needs no pthreads.
    `backend` names an entry of BACKENDS. With `compress` the weights are stored Huffman
    coded (huffman.py) and decoded by NAME_init (or the first run) into a static buffer.
    With `sanitize` (a build with AddressSanitizer) each weight array is followed by a
    redzone of REDZONE bytes, which NAME.c poisons at start-up: the sanitizer sees no other
    memory than the C it compiles, and the weights are assembled. With `emit_kernels` the
    program IR and its kernels as text go to `kernel_ir` (program_printer.py). `strategies`
    forces nodes' strategies ({node: KIND{k=v,...}}, lowering/strategies.py)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise EdgecError(f"library name '{name}' is not a C identifier; pass --name")
    if backend not in BACKENDS:
        raise EdgecError(f"unknown backend '{backend}'; one of {', '.join(BACKENDS)}")
    be = BACKENDS[backend](target, name, sanitize)
    prog = build_program(graph, plan, target, name, be.prefix, strategies)
    printer = _RunPrinter(be)
    calls = printer.run(prog)
    dispatch = be.dispatch if printer.dispatched else None  # None: no dot product in use
    micro = printer.micro if backend == "c" else {}  # LLVM: compiled with their callers
    r, isa = be.renderer, VECTOR_ISAS.get(target.isa)
    vectors = isa is not None and backend == "c" and (bool(micro) or printer.vectors)
    # the runtime headers of the vector helpers the kernels call
    helpers = [*(isa.helpers if vectors else ()), *([dispatch.helpers] if dispatch else [])]
    up = name.upper()
    ws = prog.workspace_bytes
    redzone = REDZONE if sanitize else 0
    coded = _coded_weights(prog.weights, name, redzone) if compress else None
    blob, asm = coded[:2] if coded else _weights(prog.weights, name, redzone)
    externs = [f"extern {'' if coded else 'const '}{r.type(v.dtype)} {sym}"
               f"[{max(v.type.numel, 1)}];" for sym, v in prog.weights]
    nbytes = sum(v.const.nbytes for _, v in prog.weights)
    c = [f"/* {name}.c: generated by edgec {__version__}"
         f"{' from ' + c_comment(source) if source else ''}.",
         " * Kernels in graph order, then the entry points declared in "
         f"{name}.h. Do not edit. */",
         *([] if threads else ["#define EDGEC_SINGLE_THREADED 1"]),
         "#include <math.h>", "#include <stdbool.h>", "#include <stddef.h>", "#include <stdint.h>",
         *(["#include <string.h>"] if coded else []),
         *([f"#include <{isa.header}>"] if vectors else []),
         f'#include "{name}.h"', '#include "edgec_runtime.h"', '#include "edgec_threads.h"',
         *[f'#include "{h}"' for h in helpers],
         *(['#include "edgec_huffman.h"'] if coded else []), "",
         f"/* weights: {len(prog.weights)} arrays, {nbytes} bytes, "
         f"in {name}_weights.S */", *externs, "",
         *(["/* micro-kernels: the hot inner loops, shared by the kernels below */"]
           if micro else []),
         *(k + "\n" for k in micro.values()), *be.glue(name),
         *(k + "\n" for k in printer.kernels)]
    c += _api_functions(graph, name, up) + _init_function(name, coded[2] if coded else None)
    if sanitize:
        c += _poison_redzones(name, prog.weights)
    if dispatch:
        c += [f"int {name}_dot_product_kernels(void)", "{", f"    return {dispatch.test};", "}",
              ""]
    c += [f"int {name}_run(const void *const *inputs, void *const *outputs, void *workspace)", "{",
          "    if (inputs == NULL || outputs == NULL)", "        return EDGEC_ERR_NULL_ARGUMENT;",
          f"    for (int i = 0; i < {up}_NUM_INPUTS; ++i)",
          "        if (inputs[i] == NULL)", "            return EDGEC_ERR_NULL_ARGUMENT;",
          f"    for (int i = 0; i < {up}_NUM_OUTPUTS; ++i)",
          "        if (outputs[i] == NULL)", "            return EDGEC_ERR_NULL_ARGUMENT;"]
    if ws:
        c += ["    if (workspace == NULL)", "        return EDGEC_ERR_NULL_ARGUMENT;",
              f"    if (!edgec_is_aligned(workspace, {up}_WORKSPACE_ALIGN))",
              "        return EDGEC_ERR_MISALIGNED;", "    char *ws = (char *)workspace;"]
    else:
        c += ["    (void)workspace;"]
    if coded:
        c += [f"    int status = {name}_init();", "    if (status != EDGEC_OK)",
              "        return status;"]
    c += calls + ["    return EDGEC_OK;", "}", ""]

    src = Sources(name)
    src.files[f"{name}.c"] = "\n".join(c)
    src.files[f"{name}.h"] = _header(graph, name, up, ws, source, dispatch is not None,
                                     coded[3] if coded else 0)
    src.files[f"{name}_weights.S"] = asm
    src.files[f"{name}.weights.bin"] = blob
    for h in ("edgec_runtime.h", "edgec_types.h", "edgec_threads.h", *helpers,
              *(["edgec_huffman.h"] if coded else [])):
        src.files[h] = c_source(h)
    src.c_sources = [f"{name}.c", f"{name}_weights.S"]
    be.finish(src)
    src.workspace_bytes = ws
    src.weights_bytes = nbytes
    src.dot_product_kernels = dispatch is not None
    if coded:
        src.coded_bytes, src.weights_buffer_bytes = len(blob), coded[3]
    src.kernels = prog.kernels
    src.strategies = prog.strategies
    src.kernel_ir = print_program(prog) if emit_kernels else None
    return src


def _weights(weights: list[tuple[str, Value]], name: str, redzone: int = 0
             ) -> tuple[bytes, str]:
    parts, offset = [], 0
    asm = [f"/* {name}_weights.S: generated by edgec. Each weight is a read-only, "
           f"{ALIGN}-byte aligned array",
           f" * filled from {name}.weights.bin; assemble with this folder as the working",
           " * directory (or pass -Wa,-I,<folder>). */",
           "    .section .rodata", ""]
    for sym, v in weights:
        data = np.ascontiguousarray(v.const).astype(v.dtype.np.newbyteorder("<")).tobytes()
        asm += [f"    .balign {ALIGN}", f"    .globl {sym}", f"    .hidden {sym}",
                f"    .type {sym}, %object", f"    .size {sym}, {max(len(data), 1)}", f"{sym}:"]
        asm.append(f'    .incbin "{name}.weights.bin", {offset}, {len(data)}' if data
                   else "    .zero 1")
        asm += [f"    .zero {redzone}"] if redzone else []
        pad = -len(data) % ALIGN
        parts += [data, b"\0" * pad]
        offset += len(data) + pad
    asm += ["", '    .section .note.GNU-stack,"",%progbits', ""]
    return b"".join(parts), "\n".join(asm)


def _coded_weights(weights: list[tuple[str, Value]], name: str, redzone: int = 0
                   ) -> tuple[bytes, str, list[tuple[int, int, int, int, int]], int]:
    """(coded blob, NAME_weights.S, [(buffer offset, bytes, blob offset, blob bytes,
    alphabet: 0 stored as it is, else its symbols)] per array, buffer bytes): each array
    coded on its own (huffman.py) into
    NAME_weights_coded (read-only), the weights' symbols laid out in NAME_weights_buffer, a
    zero-filled static buffer that NAME_init decodes them into."""
    from .huffman import code_array

    blob, arrays, at = [], [], 0
    asm = [f"/* {name}_weights.S: generated by edgec. The weights, Huffman coded, are read-only "
           f"in {name}_weights_coded",
           f" * (from {name}.weights.bin); {name}_init decodes them into "
           f"{name}_weights_buffer, where each",
           f" * weight's symbol is a {ALIGN}-byte aligned array. Assemble with this folder as "
           "the working directory. */",
           "    .section .rodata", f"    .balign {ALIGN}", f"    .globl {name}_weights_coded",
           f"    .hidden {name}_weights_coded", f"{name}_weights_coded:",
           f'    .incbin "{name}.weights.bin"', "    .zero 1", "", "    .bss",
           f"    .balign {ALIGN}", f"    .globl {name}_weights_buffer",
           f"    .hidden {name}_weights_buffer", f"{name}_weights_buffer:"]
    off = 0
    for sym, v in weights:
        data = np.ascontiguousarray(v.const).astype(v.dtype.np.newbyteorder("<")).tobytes()
        off += -off % ALIGN
        asm += [f"    .balign {ALIGN}", f"    .globl {sym}", f"    .hidden {sym}",
                f"    .type {sym}, %object", f"    .size {sym}, {max(len(data), 1)}", f"{sym}:",
                f"    .zero {max(len(data), 1) + redzone}"]
        ca = code_array(data)
        arrays.append((off, len(data), at, len(ca.data), ca.alphabet))
        blob.append(ca.data)
        at += len(ca.data)
        off += max(len(data), 1) + redzone
    off += -off % ALIGN
    asm += [f"    .balign {ALIGN}", "", '    .section .note.GNU-stack,"",%progbits', ""]
    return b"".join(blob), "\n".join(asm), arrays, off


def _poison_redzones(name: str, weights: list[tuple[str, Value]]) -> list[str]:
    """A constructor that poisons the redzone after each weight array (`generate`): from the
    array's end to the next array's start, REDZONE bytes or more."""
    if not weights:
        return []
    zones = [(sym, max(v.const.size * v.dtype.np.itemsize, 1)) for sym, v in weights]
    return ["#ifdef __SANITIZE_ADDRESS__", "#include <sanitizer/asan_interface.h>",
            "/* --sanitize: a kernel that reads past a weight array reads poisoned memory */",
            f"__attribute__((constructor)) static void {name}_poison_redzones(void)", "{",
            "    static const struct { const char *end; size_t bytes; } zones[] = {",
            *(f"        {{(const char *){sym} + {n}, {REDZONE + -n % ALIGN}}},"
              for sym, n in zones), "    };",
            "    for (size_t k = 0; k < sizeof zones / sizeof zones[0]; ++k)",
            "        ASAN_POISON_MEMORY_REGION(zones[k].end, zones[k].bytes);", "}", "#endif", ""]


def _init_function(name: str, arrays: list | None) -> list[str]:
    """NAME_init: decodes the coded weights once (thread-safe: a second caller waits for the
    first); EDGEC_OK at once for a library whose weights are stored as they are."""
    if arrays is None:
        return [f"int {name}_init(void)", "{", "    return EDGEC_OK;", "}", ""]
    rows = [f"    {{{o}u, {n}u, {i}u, {m}u, {c}}}," for o, n, i, m, c in arrays]
    return [
        f"extern const uint8_t {name}_weights_coded[];",
        f"extern uint8_t {name}_weights_buffer[];",
        "/* per weight: where it goes in the buffer, its bytes, where its data is in the coded",
        "   blob, the data's bytes, and its Huffman alphabet (256: bytes, 512: bytes and runs",
        "   of zeros; 0: stored as it is) */",
        f"static const struct {{ size_t out, size, in, in_size; int symbols; }} "
        f"{name}_arrays[] = {{",
        *(rows or ["    {0u, 0u, 0u, 0u, 0},"]), "};",
        f"static int {name}_weights_state; /* 0 coded, 1 decoding, 2 ready, 3 damaged */", "",
        f"int {name}_init(void)", "{",
        f"    int state = __atomic_load_n(&{name}_weights_state, __ATOMIC_ACQUIRE), zero = 0;",
        "    if (state == 2)", "        return EDGEC_OK;",
        f"    if (state == 0 && __atomic_compare_exchange_n(&{name}_weights_state, &zero, 1, 0,",
        "                                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {",
        "        int bad = 0;",
        f"        for (size_t k = 0; k < sizeof {name}_arrays / sizeof {name}_arrays[0]; ++k) {{",
        f"            const uint8_t *in = {name}_weights_coded + {name}_arrays[k].in;",
        f"            uint8_t *out = {name}_weights_buffer + {name}_arrays[k].out;",
        f"            if ({name}_arrays[k].symbols)",
        f"                bad |= edgec_huffman_decode(in, {name}_arrays[k].in_size, out,",
        f"                                            {name}_arrays[k].size,",
        f"                                            {name}_arrays[k].symbols) != 0;",
        f"            else if ({name}_arrays[k].size)",
        f"                memcpy(out, in, {name}_arrays[k].size);",
        "        }",
        f"        __atomic_store_n(&{name}_weights_state, bad ? 3 : 2, __ATOMIC_RELEASE);",
        "        return bad ? EDGEC_ERR_CORRUPT_WEIGHTS : EDGEC_OK;", "    }",
        f"    while ((state = __atomic_load_n(&{name}_weights_state, __ATOMIC_ACQUIRE)) == 1)",
        "        ;",
        "    return state == 2 ? EDGEC_OK : EDGEC_ERR_CORRUPT_WEIGHTS;", "}", ""]


def _dims(v: Value) -> str:
    return "{" + ", ".join(str(d) for d in v.shape) + "}" if v.shape else "{0}"


def _api_functions(graph: Graph, name: str, up: str) -> list[str]:
    out = io_functions(graph, name)
    out += [f"size_t {name}_workspace_size(void)", "{", f"    return {up}_WORKSPACE_BYTES;", "}",
            "", f"const char *{name}_status_string(int status)", "{",
            "    return edgec_status_string(status);", "}", "",
            f"const char *{name}_version(void)", "{", f'    return "edgec {__version__}";', "}", "",
            f"void {name}_set_num_threads(int n)", "{", "    edgec_set_num_threads(n);", "}", "",
            f"int {name}_get_num_threads(void)", "{", "    return edgec_get_num_threads();", "}",
            ""]
    return out


def io_functions(graph: Graph, name: str) -> list[str]:
    """NAME_input_name(i) ... NAME_output_bytes(i): what the header says of each input and
    output, as functions."""
    out = []
    for kind, vals in (("input", graph.inputs), ("output", graph.outputs)):
        shapes = [f"static const int64_t {name}_{kind}{i}_shape[] = {_dims(v)};"
                  for i, v in enumerate(vals)]
        n = len(vals)
        names = ", ".join(c_string(v.name) for v in vals)
        dtypes = ", ".join(str(to_onnx(v.dtype)) for v in vals)
        ranks = ", ".join(str(len(v.shape)) for v in vals)
        sizes = ", ".join(str(v.type.nbytes) for v in vals)
        ptrs = ", ".join(f"{name}_{kind}{i}_shape" for i in range(n))
        out += shapes + [
            f"static const char *const {name}_{kind}_names[] = {{{names}}};",
            f"static const int {name}_{kind}_dtypes[] = {{{dtypes}}};",
            f"static const int {name}_{kind}_ranks[] = {{{ranks}}};",
            f"static const size_t {name}_{kind}_sizes[] = {{{sizes}}};",
            f"static const int64_t *const {name}_{kind}_shapes[] = {{{ptrs}}};", ""]
        for fn, ret, arr, bad in (("name", "const char *", "names", "NULL"),
                                  ("dtype", "int", "dtypes", "0"), ("rank", "int", "ranks", "-1"),
                                  ("bytes", "size_t", "sizes", "0"),
                                  ("shape", "const int64_t *", "shapes", "NULL")):
            out += [f"{ret}{'' if ret.endswith('*') else ' '}{name}_{kind}_{fn}(int i)", "{",
                    f"    return i >= 0 && i < {n} ? {name}_{kind}_{arr}[i] : {bad};", "}", ""]
    return out


def _index_ops(graph: Graph) -> set[str]:
    """The ops of `graph` and its subgraphs that read index tensors (the "indices" trait)."""
    ops = set()
    for n in graph.nodes:
        if "indices" in get_op(n.op).traits:
            ops.add(n.op)
        for a in n.attrs.values():
            for g in a if isinstance(a, list) else [a]:
                if isinstance(g, Graph):
                    ops |= _index_ops(g)
    return ops


def _out_of_range_note(graph: Graph) -> list[str]:
    """The header's paragraph on out-of-range indices (ir/ops/tensor.py), for a model that
    reads indices at run time."""
    ops = sorted(_index_ops(graph))
    if not ops:
        return []
    return [f"/* Out-of-range indices ({', '.join(ops)} in this model): ONNX leaves them",
            " * undefined; here an index i into an axis of n elements reads, or a scatter",
            " * writes, element clamp(i < 0 ? i + n : i, 0, n - 1) (i + n only where ONNX lets",
            " * indices count from the end), never outside the buffer: past the end is the last",
            " * element, before the start the first. OneHot gives off_value, as ONNX says. */"]


def _header(graph: Graph, name: str, up: str, ws: int, source: str,
            dot_product_kernels: bool = False, weights_buffer: int = 0) -> str:
    lines = [f"/* {name}.h: the API of lib{name}.a, generated by edgec {__version__}"
             f"{' from ' + c_comment(source) if source else ''}.",
             " *",
             " * Buffers are contiguous, row-major, in the model's own layout. Call",
             f" * {name}_run(inputs, outputs, workspace) with one pointer per input and output",
             f" * (in the order below) and a workspace of {name}_workspace_size() bytes aligned to",
             f" * {up}_WORKSPACE_ALIGN; the library never allocates. It returns EDGEC_OK (0) or",
             f" * a status that {name}_status_string() explains. Not reentrant on one",
             f" * workspace. Inputs and outputs aligned to {up}_WORKSPACE_ALIGN run fastest",
             " * (a vector store that straddles two cache lines costs two). */",
             *_out_of_range_note(graph),
             f"#ifndef {up}_H", f"#define {up}_H", "", "#include <stddef.h>", "#include <stdint.h>",
             "", c_source("edgec_types.h").strip(), "",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
             f"#define {up}_NUM_INPUTS  {len(graph.inputs)}",
             f"#define {up}_NUM_OUTPUTS {len(graph.outputs)}",
             f"#define {up}_WORKSPACE_BYTES {ws}",
             f"#define {up}_WORKSPACE_ALIGN {ALIGN}",
             "/* bytes of static memory the library decodes its coded weights into (built with",
             "   --compress; 0: the weights are stored as they are, read-only) */",
             f"#define {up}_WEIGHTS_BUFFER_BYTES {weights_buffer}", "", *io_defines(graph, up)]
    lines += ["/* Decodes the coded weights (--compress) once, at set-up; the first run calls it",
              "   when the app has not. EDGEC_OK, or EDGEC_ERR_CORRUPT_WEIGHTS. Thread-safe. */",
              f"int {name}_init(void);",
              f"int {name}_run(const void *const *inputs, void *const *outputs, void *workspace);",
              f"size_t {name}_workspace_size(void);",
              f"const char *{name}_status_string(int status);",
              f"const char *{name}_version(void);",
              "/* Threads the next runs use, the caller included (default: the environment",
              "   variable EDGEC_NUM_THREADS, else 1; below 1 means 1, above 64 means 64); call",
              "   it between runs, not during one. Two app threads may run at once, each with",
              "   its own workspace: while one run's loop holds the threads, the other's runs",
              "   on its caller alone. */",
              f"void {name}_set_num_threads(int n);", f"int {name}_get_num_threads(void);", ""]
    if dot_product_kernels:
        lines += ["/* 1 when the int8 kernels run with the CPU's dot-product extension (Armv8.2-A",
                  "   sdot, AVX-VNNI: the CPU has it), 0 when they run on the library's base ISA",
                  "   (plain NEON, AVX2); the CPU is asked once. */",
                  f"int {name}_dot_product_kernels(void);", ""]
    lines += io_declarations(name)
    lines += ["#ifdef __cplusplus", "}", "#endif", f"#endif /* {up}_H */", ""]
    return "\n".join(lines)


def io_defines(graph: Graph, up: str) -> list[str]:
    """The header's macros of each input and output: name, dtype, rank, shape, size."""
    lines = []
    for kind, vals in (("INPUT", graph.inputs), ("OUTPUT", graph.outputs)):
        for i, v in enumerate(vals):
            p = f"{up}_{kind}{i}"
            lines += [f"/* {kind.lower()} {i}: {c_comment(v.name)} {v.type} */",
                      f"#define {p}_NAME  {c_string(v.name)}",
                      f"#define {p}_DTYPE EDGEC_DTYPE_{v.dtype.name}",
                      f"#define {p}_RANK  {len(v.shape)}",
                      f"#define {p}_SHAPE {_dims(v)}",
                      f"#define {p}_SIZE  {v.type.numel}  /* elements */",
                      f"#define {p}_BYTES {v.type.nbytes}", ""]
    return lines


def io_declarations(name: str) -> list[str]:
    """The header's declarations of io_functions."""
    lines = []
    for kind in ("input", "output"):
        lines += [f"/* {kind} i: name, dtype (EDGEC_DTYPE_*), rank, shape, size in bytes */",
                  f"const char *{name}_{kind}_name(int i);", f"int {name}_{kind}_dtype(int i);",
                  f"int {name}_{kind}_rank(int i);", f"const int64_t *{name}_{kind}_shape(int i);",
                  f"size_t {name}_{kind}_bytes(int i);", ""]
    return lines
