"""Model-level code generation: a planned graph becomes C sources for one static library.

Outputs: `NAME.c` (one kernel function per node and `NAME_run`, which calls them on the
input, output, weight and workspace pointers), `NAME.h` (the whole API), `NAME_weights.S` with
`NAME.weights.bin` (each weight a 64-byte aligned, read-only symbol filled by `.incbin`, so
large models compile in seconds) and `edgec_runtime.h`/`edgec_types.h`. Storage: graph inputs
are read where the app put them, outputs are written in place, every other value lives at its
planned offset in the workspace, and views share the storage of the value they alias.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .. import __version__
from ..errors import EdgecError
from ..ir.dtypes import DType
from ..ir.graph import Graph, Value
from ..runtime import c_source
from .kernel_ir import Kernel, KernelBuilder
from .lowering import c_identifier, lower_node
from .renderers.c import CRenderer
from .target import Target

ALIGN = 64

ONNX_DTYPE_CODES = {
    DType.F32: 1, DType.U8: 2, DType.I8: 3, DType.U16: 4, DType.I16: 5, DType.I32: 6,
    DType.I64: 7, DType.BOOL: 9, DType.F16: 10, DType.F64: 11, DType.U32: 12, DType.U64: 13,
}


@dataclass
class Sources:
    name: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    c_sources: list[str] = field(default_factory=list)  # files to compile into the library
    workspace_bytes: int = 0
    weights_bytes: int = 0
    kernels: list[str] = field(default_factory=list)


def _copy_kernel(name: str, v: Value) -> Kernel:
    kb = KernelBuilder(name, f"copy {v.type} into a graph output")
    x = kb.input("x", v.dtype, (v.type.numel,))
    y = kb.output("y", v.dtype, (v.type.numel,))
    with kb.loop(v.type.numel) as i:
        kb.store(y, i, x[i])
    return kb.build()


class _Storage:
    """Where each value lives, as a C expression."""

    def __init__(self, graph: Graph, plan, name: str):
        self.graph, self.plan, self.name = graph, plan, name
        self.weights: dict[int, str] = {}
        self.weight_values: list[Value] = []
        self.symbols: set[str] = set()

    def weight_symbol(self, v: Value) -> str:
        if id(v) not in self.weights:
            base = f"{self.name}_w_{c_identifier(v.name)}"[:80]
            sym, k = base, 1
            while sym in self.symbols:
                sym, k = f"{base}_{k}", k + 1
            self.symbols.add(sym)
            self.weights[id(v)] = sym
            self.weight_values.append(v)
        return self.weights[id(v)]

    def expr(self, v: Value, renderer: CRenderer, out_slot: dict[int, int]) -> str:
        ctype = renderer.type(v.dtype)
        if v.is_const:
            return self.weight_symbol(v)
        for i, inp in enumerate(self.graph.inputs):
            if inp is v:
                return f"(const {ctype} *)inputs[{i}]"
        if id(v) in out_slot:
            return f"({ctype} *)outputs[{out_slot[id(v)]}]"
        root = self.plan.aliases.get(v.name)
        if root is not None:
            rv = self._value(root)
            return f"({ctype} *){self.expr(rv, renderer, out_slot)}"
        if v.name not in self.plan.offsets:
            raise EdgecError(f"value %{v.name} has no storage in the memory plan; "
                             "run plan-memory as the last pass of the pipeline")
        return f"({ctype} *)(ws + {self.plan.offsets[v.name]})"

    def _value(self, name: str) -> Value:
        for v in self.graph.values():
            if v.name == name:
                return v
        raise EdgecError(f"memory plan names an unknown value %{name}")


def generate(graph: Graph, plan, target: Target, name: str, source: str = "") -> Sources:
    """C sources of the library for `graph`, laid out by the memory plan `plan`."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise EdgecError(f"library name '{name}' is not a C identifier; pass --name")
    r = CRenderer()
    store = _Storage(graph, plan, name)
    out_slot: dict[int, int] = {}
    for j, v in enumerate(graph.outputs):
        if v.producer is not None and id(v) not in out_slot:
            out_slot[id(v)] = j

    kernels, calls = [], []

    def emit(k: Kernel, args: list[str]) -> None:
        kernels.append(r.kernel(k))
        calls.append(f"    {k.name}({', '.join(args)});")

    for i, node in enumerate(graph.nodes):
        if all(o.name in plan.aliases for o in node.outputs):
            continue  # a view: its output shares its input's storage
        ln = lower_node(node, i)
        emit(ln.kernel, [store.expr(v, r, out_slot) for v in ln.bindings])
    # Outputs that are inputs, constants, views or repeated get a copy at the end.
    for j, v in enumerate(graph.outputs):
        if out_slot.get(id(v)) != j:
            emit(_copy_kernel(f"k_copy_output{j}", v),
                 [store.expr(v, r, out_slot), f"({r.type(v.dtype)} *)outputs[{j}]"])

    up = name.upper()
    ws = plan.arena_bytes
    blob, asm = _weights(store, name)
    externs = [f"extern const {r.type(v.dtype)} {store.weights[id(v)]}[{max(v.type.numel, 1)}];"
               for v in store.weight_values]
    c = [f"/* {name}.c: generated by edgec {__version__}{' from ' + source if source else ''}.",
         " * Kernels in graph order, then the entry points declared in "
         f"{name}.h. Do not edit. */",
         "#include <math.h>", "#include <stdbool.h>", "#include <stddef.h>", "#include <stdint.h>",
         f'#include "{name}.h"', '#include "edgec_runtime.h"', "",
         f"/* weights: {len(store.weight_values)} arrays, {store_bytes(store)} bytes, "
         f"in {name}_weights.S */", *externs, "", *(k + "\n" for k in kernels)]
    c += _api_functions(graph, name, up)
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
    c += calls + ["    return EDGEC_OK;", "}", ""]

    src = Sources(name)
    src.files[f"{name}.c"] = "\n".join(c)
    src.files[f"{name}.h"] = _header(graph, name, up, ws, source)
    src.files[f"{name}_weights.S"] = asm
    src.files[f"{name}.weights.bin"] = blob
    src.files["edgec_runtime.h"] = c_source("edgec_runtime.h")
    src.files["edgec_types.h"] = c_source("edgec_types.h")
    src.c_sources = [f"{name}.c", f"{name}_weights.S"]
    src.workspace_bytes = ws
    src.weights_bytes = store_bytes(store)
    src.kernels = [k.split("(")[0].split()[-1] for k in kernels]
    return src


def store_bytes(store: _Storage) -> int:
    return sum(v.const.nbytes for v in store.weight_values)


def _weights(store: _Storage, name: str) -> tuple[bytes, str]:
    parts, offset = [], 0
    asm = [f"/* {name}_weights.S: generated by edgec. Each weight is a read-only, "
           f"{ALIGN}-byte aligned array",
           f" * filled from {name}.weights.bin; assemble with this folder as the working",
           " * directory (or pass -Wa,-I,<folder>). */",
           "    .section .rodata", ""]
    for v in store.weight_values:
        data = np.ascontiguousarray(v.const).astype(v.dtype.np.newbyteorder("<")).tobytes()
        sym = store.weights[id(v)]
        asm += [f"    .balign {ALIGN}", f"    .globl {sym}", f"    .hidden {sym}",
                f"    .type {sym}, %object", f"    .size {sym}, {max(len(data), 1)}", f"{sym}:"]
        asm.append(f'    .incbin "{name}.weights.bin", {offset}, {len(data)}' if data
                   else "    .zero 1")
        pad = -len(data) % ALIGN
        parts += [data, b"\0" * pad]
        offset += len(data) + pad
    asm += ["", '    .section .note.GNU-stack,"",%progbits', ""]
    return b"".join(parts), "\n".join(asm)


def _dims(v: Value) -> str:
    return "{" + ", ".join(str(d) for d in v.shape) + "}" if v.shape else "{0}"


def _api_functions(graph: Graph, name: str, up: str) -> list[str]:
    out = []
    for kind, vals in (("input", graph.inputs), ("output", graph.outputs)):
        shapes = [f"static const int64_t {name}_{kind}{i}_shape[] = {_dims(v)};"
                  for i, v in enumerate(vals)]
        n = len(vals)
        names = ", ".join(_c_string(v.name) for v in vals)
        dtypes = ", ".join(str(ONNX_DTYPE_CODES[v.dtype]) for v in vals)
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
    out += [f"size_t {name}_workspace_size(void)", "{", f"    return {up}_WORKSPACE_BYTES;", "}",
            "", f"const char *{name}_status_string(int status)", "{",
            "    return edgec_status_string(status);", "}", "",
            f"const char *{name}_version(void)", "{", f'    return "edgec {__version__}";', "}", ""]
    return out


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _header(graph: Graph, name: str, up: str, ws: int, source: str) -> str:
    lines = [f"/* {name}.h: the API of lib{name}.a, generated by edgec {__version__}"
             f"{' from ' + source if source else ''}.",
             " *",
             " * Buffers are contiguous, row-major, in the model's own layout. Call",
             f" * {name}_run(inputs, outputs, workspace) with one pointer per input and output",
             f" * (in the order below) and a workspace of {name}_workspace_size() bytes aligned to",
             f" * {up}_WORKSPACE_ALIGN; the library never allocates. It returns EDGEC_OK (0) or",
             f" * a status that {name}_status_string() explains. Not reentrant on one",
             " * workspace. */",
             f"#ifndef {up}_H", f"#define {up}_H", "", "#include <stddef.h>", "#include <stdint.h>",
             "", c_source("edgec_types.h").strip(), "",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
             f"#define {up}_NUM_INPUTS  {len(graph.inputs)}",
             f"#define {up}_NUM_OUTPUTS {len(graph.outputs)}",
             f"#define {up}_WORKSPACE_BYTES {ws}",
             f"#define {up}_WORKSPACE_ALIGN {ALIGN}", ""]
    for kind, vals in (("INPUT", graph.inputs), ("OUTPUT", graph.outputs)):
        for i, v in enumerate(vals):
            p = f"{up}_{kind}{i}"
            lines += [f"/* {kind.lower()} {i}: {v.name} {v.type} */",
                      f"#define {p}_NAME  {_c_string(v.name)}",
                      f"#define {p}_DTYPE EDGEC_DTYPE_{v.dtype.name}",
                      f"#define {p}_RANK  {len(v.shape)}",
                      f"#define {p}_SHAPE {_dims(v)}",
                      f"#define {p}_SIZE  {v.type.numel}  /* elements */",
                      f"#define {p}_BYTES {v.type.nbytes}", ""]
    lines += [f"int {name}_run(const void *const *inputs, void *const *outputs, void *workspace);",
              f"size_t {name}_workspace_size(void);",
              f"const char *{name}_status_string(int status);",
              f"const char *{name}_version(void);", ""]
    for kind in ("input", "output"):
        lines += [f"/* {kind} i: name, dtype (EDGEC_DTYPE_*), rank, shape, size in bytes */",
                  f"const char *{name}_{kind}_name(int i);", f"int {name}_{kind}_dtype(int i);",
                  f"int {name}_{kind}_rank(int i);", f"const int64_t *{name}_{kind}_shape(int i);",
                  f"size_t {name}_{kind}_bytes(int i);", ""]
    lines += ["#ifdef __cplusplus", "}", "#endif", f"#endif /* {up}_H */", ""]
    return "\n".join(lines)
