"""Model-level code generation: a planned graph becomes C sources for one static library.

Outputs: `NAME.c` (one kernel function per node and `NAME_run`, which calls them on the
input, output, weight and workspace pointers), `NAME.h` (the whole API), `NAME_weights.S` with
`NAME.weights.bin` (each weight a 64-byte aligned, read-only symbol filled by `.incbin`, so
large models compile in seconds) and `edgec_runtime.h`/`edgec_types.h`. Storage: graph inputs
are read where the app put them, outputs are written in place, every other value lives at its
planned offset in the workspace, and views share the storage of the value they alias. With the
LLVM backend the kernels are compiled by `renderers/llvm.py` into `NAME_kernels.o` instead, and
`NAME.c` keeps the entry points, the kernels' declarations and a trampoline into its pool.
On `arm64-dotprod` (C backend) each micro-kernel with int8 dot products is built for plain
NEON and for Armv8.2-A `sdot`, chosen at run time (`renderers/c.py` `Dispatch`), and the
library exports `NAME_dot_product_kernels()`, which says which of the two it runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .. import __version__
from ..errors import EdgecError
from ..ir.dtypes import DType
from ..ir.graph import Graph, Value
from .kernel_ir import Kernel, KernelBuilder
from .lowering import c_identifier, lower_node
from .renderers.c import DOTPROD, VECTOR_ISAS, CRenderer, Dispatch
from .runtime_c import c_source
from .target import Target

ALIGN = 64
BACKENDS = ("c", "llvm")

ONNX_DTYPE_CODES = {
    DType.F32: 1, DType.U8: 2, DType.I8: 3, DType.U16: 4, DType.I16: 5, DType.I32: 6,
    DType.I64: 7, DType.BOOL: 9, DType.F16: 10, DType.F64: 11, DType.U32: 12, DType.U64: 13,
}


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
    dot_product_kernels: bool = False  # micro-kernels dispatched to sdot at run time


def _copy_kernel(name: str, v: Value) -> Kernel:
    kb = KernelBuilder(name, f"copy {v.type}")
    x = kb.input("x", v.dtype, (v.type.numel,))
    y = kb.output("y", v.dtype, (v.type.numel,))
    with kb.loop(v.type.numel) as i:
        kb.store(y, i, x[i])
    return kb.build()


class _Weights:
    """The weight symbols of one library, shared by the graph and its subgraphs."""

    def __init__(self, name: str):
        self.name = name
        self.symbols: dict[int, str] = {}
        self.values: list[Value] = []
        self._taken: set[str] = set()

    def symbol(self, v: Value) -> str:
        if id(v) not in self.symbols:
            base = f"{self.name}_w_{c_identifier(v.name)}"[:80]
            sym, k = base, 1
            while sym in self._taken:
                sym, k = f"{base}_{k}", k + 1
            self._taken.add(sym)
            self.symbols[id(v)] = sym
            self.values.append(v)
        return self.symbols[id(v)]

    @property
    def nbytes(self) -> int:
        return sum(v.const.nbytes for v in self.values)


class _Emitter:
    """Kernels and the calls of `NAME_run` for one graph, given where its inputs and outputs
    live (`inputs`, `outputs`: C pointer expressions) and the base of its arena (`ws`).

    Control-flow nodes emit their bodies as nested C blocks; a body's own activations live in
    a region after this graph's arena (`extra` bytes, the largest any control node needs).
    """

    def __init__(self, graph: Graph, plan, weights: _Weights, r: CRenderer, kernels: list[str],
                 inputs: list[str], outputs: list[str], ws: str, prefix: str = "",
                 indent: str = "    ", target: Target | None = None,
                 micro: dict[str, str] | None = None, dispatch: Dispatch | None = None,
                 dispatched: set[str] | None = None):
        self.graph, self.plan, self.weights, self.r = graph, plan, weights, r
        self.target = target
        self.micro = micro if micro is not None else {}  # micro-kernels by name, emitted once
        # micro-kernels built twice, chosen at run time (names, shared with the subgraphs)
        self.dispatch = dispatch
        self.dispatched = dispatched if dispatched is not None else set()
        self.kernels, self.ws, self.prefix, self.indent = kernels, ws, prefix, indent
        self.lines: list[str] = []
        self.names: list[str] = []  # of the kernels called, shared with nested emitters
        self.strategies: list[dict] = []  # likewise
        self.extra = 0
        self.bound: dict[int, str] = {id(v): e for v, e in zip(graph.inputs, inputs, strict=True)}
        self.copies: list[tuple[Value, str]] = []  # outputs not written in place by a producer
        for v, e in zip(graph.outputs, outputs, strict=True):
            if v.producer is not None and id(v) not in self.bound:
                self.bound[id(v)] = e
            else:
                self.copies.append((v, e))
        self._by_name = {v.name: v for v in graph.values()}
        self._ncopy = 0

    @property
    def total_bytes(self) -> int:
        return _align(self.plan.arena_bytes) + self.extra

    def expr(self, v: Value) -> str:
        ctype = self.r.type(v.dtype)
        if v.is_const:
            return self.weights.symbol(v)
        if id(v) in self.bound:
            return self.bound[id(v)]
        root = self.plan.aliases.get(v.name)
        if root is not None:
            return f"({ctype} *){self.expr(self._by_name[root])}"
        if v.type.nbytes == 0:  # an empty tensor: no storage (the workspace may be empty)
            return f"({ctype} *)NULL"
        if v.name not in self.plan.offsets:
            raise EdgecError(f"value %{v.name} has no storage in the memory plan; "
                             "run plan-memory as the last pass of the pipeline")
        return f"({ctype} *)({self.ws} + {self.plan.offsets[v.name]})"

    def call(self, k: Kernel, args: list[str]) -> None:
        for fn in k.callees():
            if fn.name not in self.micro:
                text = self.r.dispatched(fn, self.dispatch) if self.dispatch else None
                if text is not None:
                    self.dispatched.add(fn.name)
                self.micro[fn.name] = text or self.r.kernel(fn)
        self.kernels.append(self.r.kernel(k))
        self.names.append(k.name)
        self.lines.append(f"{self.indent}{k.name}({', '.join(args)});")

    def copy(self, v: Value, src: str, dst: str) -> None:
        self._ncopy += 1
        self.call(_copy_kernel(f"{self.prefix}copy{self._ncopy}", v), [src, dst])

    def run(self) -> _Emitter:
        for i, node in enumerate(self.graph.nodes):
            if all(o.name in self.plan.aliases for o in node.outputs):
                continue  # a view: its output shares its input's storage
            if node.op in _CONTROL:
                _CONTROL[node.op](self, node, i)
                continue
            ln = lower_node(node, i, self.target)
            ln.kernel.name = f"{self.prefix}{ln.kernel.name}"
            self.call(ln.kernel, [self.expr(v) for v in ln.bindings])
            s = ln.strategy
            self.strategies.append({"node": node.name, "op": node.op, "kernel": ln.kernel.name,
                                    "strategy": s.name, "kind": s.kind, "lanes": s.lanes,
                                    "parallel": s.parallel,
                                    "micro_kernels": list(s.micro_kernels)})
        for v, dst in self.copies:
            self.copy(v, self.expr(v), dst)
        return self

    # -- control flow ------------------------------------------------------------------
    def body(self, g: Graph, inputs: list[str], outputs: list[str], ws: str, prefix: str,
             indent: str) -> _Emitter:
        from ..passes.plan_memory import plan

        child = _Emitter(g, plan(g), self.weights, self.r, self.kernels, inputs, outputs, ws,
                         prefix, indent, self.target, self.micro, self.dispatch,
                         self.dispatched)
        child.names, child.strategies = self.names, self.strategies
        child.run()
        self.lines += child.lines
        return child

    def region(self) -> _Region:
        return _Region(f"({self.ws} + {_align(self.plan.arena_bytes)})")

    def emit_if(self, node, i: int) -> None:
        ind, region = self.indent, self.region()
        captured = [self.expr(v) for v in node.inputs[1:]]
        outs = [self.expr(v) for v in node.outputs]
        self.lines.append(f"{ind}if (({self.expr(node.inputs[0])})[0]) {{")
        then = self.body(node.attrs["then_branch"], captured, outs, region.base,
                         f"{self.prefix}k{i}_then_", ind + "    ")
        self.lines.append(f"{ind}}} else {{")
        other = self.body(node.attrs["else_branch"], captured, outs, region.base,
                          f"{self.prefix}k{i}_else_", ind + "    ")
        self.lines.append(f"{ind}}}")
        self.extra = max(self.extra, then.total_bytes, other.total_bytes)

    def _state(self, region: _Region, values) -> tuple[list[str], list[str]]:
        """Slots for loop-carried values: what the body reads and what it writes."""
        ins = [region.slot(v, const=True) for v in values]
        outs = [region.slot(v) for v in values]
        return ins, outs

    def emit_loop(self, node, i: int) -> None:
        from ..ir.ops.control import loop_layout, trip_count

        body = node.attrs["body"]
        n, _ = loop_layout(node.inputs, body, node.attrs["captured"])
        m, carried = trip_count(node.inputs), node.inputs[2:2 + n]
        region, ind, it = self.region(), self.indent, f"it{len(self.indent) // 4}"
        iter_slot, cond_slot = region.slot(body.inputs[0]), region.slot(body.inputs[1])
        cond_out = region.slot(body.outputs[0])
        s_in, s_out = self._state(region, carried)
        for v, src, dst in zip(carried, map(self.expr, carried), s_in, strict=True):
            self.copy(v, src, _mutable(dst))
        scans = [f"{self.expr(o)} + {it} * {o.type.numel // max(o.shape[0], 1)}"
                 for o in node.outputs[n:]]
        self.lines += [f"{ind}for (int64_t {it} = 0; {it} < {m}; ++{it}) {{",
                       f"{ind}    *{_mutable(iter_slot)} = {it};",
                       f"{ind}    *{_mutable(cond_slot)} = true;"]
        inner = self._nested(ind)
        child = inner.body(body, [iter_slot, cond_slot, *s_in,
                                  *[self.expr(v) for v in node.inputs[2 + n:]]],
                           [_mutable(cond_out), *s_out, *scans], region.end,
                           f"{self.prefix}k{i}_body_", ind + "    ")
        if not _always_true(body):
            inner.lines += [f"{ind}    if (!({cond_out})[0])",
                            f"{ind}        return EDGEC_ERR_LOOP_EXIT;"]
        for v, src, dst in zip(carried, s_out, s_in, strict=True):
            inner.copy(v, src, _mutable(dst))
        self._finish_state(inner, node.outputs[:n], s_in, carried, ind, region, child)

    def emit_scan(self, node, i: int) -> None:
        from ..ir.ops.control import scan_layout

        body, a = node.attrs["body"], node.attrs
        n, k = scan_layout(node.inputs, body, a["num_scan_inputs"], a["captured"])
        xs = node.inputs[n:n + a["num_scan_inputs"]]
        length = xs[0].shape[0]
        region, ind, t = self.region(), self.indent, f"t{len(self.indent) // 4}"
        s_in, s_out = self._state(region, node.inputs[:n])
        for v, dst in zip(node.inputs[:n], s_in, strict=True):
            self.copy(v, self.expr(v), _mutable(dst))
        step = lambda d: f"({length - 1} - {t})" if d else t  # noqa: E731
        in_dirs = a["scan_input_directions"] or [0] * len(xs)
        out_dirs = a["scan_output_directions"] or [0] * k
        slices = [f"{self.expr(x)} + {step(d)} * {x.type.numel // max(length, 1)}"
                  for x, d in zip(xs, in_dirs, strict=True)]
        outs = [f"{self.expr(o)} + {step(d)} * {o.type.numel // max(length, 1)}"
                for o, d in zip(node.outputs[n:], out_dirs, strict=True)]
        self.lines.append(f"{ind}for (ptrdiff_t {t} = 0; {t} < {length}; ++{t}) {{")
        inner = self._nested(ind)
        child = inner.body(body, [*s_in, *slices,
                                  *[self.expr(v) for v in node.inputs[n + len(xs):]]],
                           [*s_out, *outs], region.end, f"{self.prefix}k{i}_body_", ind + "    ")
        for v, src, dst in zip(node.inputs[:n], s_out, s_in, strict=True):
            inner.copy(v, src, _mutable(dst))
        self._finish_state(inner, node.outputs[:n], s_in, node.inputs[:n], ind, region, child)

    def _nested(self, ind: str) -> _Emitter:
        """An emitter sharing this one's storage whose calls are indented one level deeper."""
        inner = _Emitter.__new__(_Emitter)
        inner.__dict__.update(self.__dict__)
        inner.lines, inner.indent, inner.prefix = [], ind + "    ", self.prefix
        return inner

    def _finish_state(self, inner: _Emitter, outputs, s_in, values, ind, region, child) -> None:
        self.lines += inner.lines
        self._ncopy = inner._ncopy
        self.lines.append(f"{ind}}}")
        for v, src, out in zip(values, s_in, outputs, strict=True):
            self.copy(v, src, self.expr(out))
        self.extra = max(self.extra, region.size + child.total_bytes)


class _Region:
    """A bump allocator of 64-byte aligned slots after an arena."""

    def __init__(self, base: str):
        self.base, self.size = base, 0

    def slot(self, v: Value, const: bool = False) -> str:
        off, self.size = self.size, self.size + _align(max(v.type.nbytes, 1))
        ctype = CRenderer.types[v.dtype]
        return f"({'const ' if const else ''}{ctype} *)({self.base} + {off})"

    @property
    def end(self) -> str:
        return f"({self.base} + {self.size})"


def _mutable(ptr: str) -> str:
    return ptr.replace("(const ", "(", 1)


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _always_true(body: Graph) -> bool:
    """Whether a Loop body's condition output can never be false."""
    c = body.outputs[0]
    if c is body.inputs[1]:
        return True
    if c.is_const:
        return bool(c.const.reshape(-1)[0])
    p = c.producer
    return p is not None and p.op == "Identity" and p.inputs[0] is body.inputs[1]


_CONTROL = {"If": _Emitter.emit_if, "Loop": _Emitter.emit_loop, "Scan": _Emitter.emit_scan}


def generate(graph: Graph, plan, target: Target, name: str, source: str = "",
             threads: bool = True, backend: str = "c") -> Sources:
    """C sources of the library for `graph`, laid out by the memory plan `plan`; with
    `threads` False the library runs on the caller's thread only and needs no pthreads.
    `backend` "llvm" compiles the kernels with LLVM into an object file (see module doc)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise EdgecError(f"library name '{name}' is not a C identifier; pass --name")
    if backend not in BACKENDS:
        raise EdgecError(f"unknown backend '{backend}'; one of {', '.join(BACKENDS)}")
    isa = VECTOR_ISAS.get(target.isa)
    r = CRenderer(isa)
    # the LLVM backend builds the plain NEON form (no run-time dispatch)
    dispatch = DOTPROD if "dotprod" in target.features and backend == "c" else None
    prefix = ""
    if backend == "llvm":
        if not target.llvm_triple:
            raise EdgecError(f"target {target.name} has no LLVM triple; use --backend c")
        try:
            from .renderers.llvm import KernelDeclarations, LLVMRenderer
        except ImportError as e:
            raise EdgecError(f"--backend llvm needs llvmlite ({e}); install it with "
                             "`pip install llvmlite`, or use --backend c") from None

        llvm_kernels = LLVMRenderer(target, f"{name}_parallel_for")
        r = KernelDeclarations(isa, llvm_kernels)
        prefix = f"{name}_"  # the kernels are global symbols of the object: no clash at link
    weights = _Weights(name)
    kernels: list[str] = []
    micro: dict[str, str] = {}
    ins = [f"(const {r.type(v.dtype)} *)inputs[{i}]" for i, v in enumerate(graph.inputs)]
    outs = [f"({r.type(v.dtype)} *)outputs[{j}]" for j, v in enumerate(graph.outputs)]
    top = _Emitter(graph, plan, weights, r, kernels, ins, outs, "ws", prefix, target=target,
                   micro=micro, dispatch=dispatch).run()
    dispatch = dispatch if top.dispatched else None  # None: no micro-kernel has a dot product
    glue: list[str] = []
    if backend == "llvm":
        micro.clear()  # compiled into the object with the kernels that call them
        glue = [f"/* kernels: compiled by LLVM into {name}_kernels.o; their parallel loops run "
                "on this library's pool */",
                f"void {name}_parallel_for(edgec_task task, void *ctx, ptrdiff_t n);",
                f"void {name}_parallel_for(edgec_task task, void *ctx, ptrdiff_t n)", "{",
                "    edgec_parallel_for(task, ctx, n);", "}", ""]
    # the runtime headers of the vector helpers the micro-kernels call
    helpers = [*(isa.helpers if isa and micro else ()), *([dispatch.helpers] if dispatch else [])]
    calls = top.lines
    store = weights

    up = name.upper()
    ws = plan.arena_bytes if not top.extra else top.total_bytes
    blob, asm = _weights(store, name)
    externs = [f"extern const {r.type(v.dtype)} {store.symbols[id(v)]}[{max(v.type.numel, 1)}];"
               for v in store.values]
    c = [f"/* {name}.c: generated by edgec {__version__}{' from ' + source if source else ''}.",
         " * Kernels in graph order, then the entry points declared in "
         f"{name}.h. Do not edit. */",
         *([] if threads else ["#define EDGEC_SINGLE_THREADED 1"]),
         "#include <math.h>", "#include <stdbool.h>", "#include <stddef.h>", "#include <stdint.h>",
         *([f"#include <{isa.header}>"] if isa and micro else []),
         f'#include "{name}.h"', '#include "edgec_runtime.h"', '#include "edgec_threads.h"',
         *[f'#include "{h}"' for h in helpers], "",
         f"/* weights: {len(store.values)} arrays, {store.nbytes} bytes, "
         f"in {name}_weights.S */", *externs, "",
         *(["/* micro-kernels: the hot inner loops, shared by the kernels below */"]
           if micro else []),
         *(k + "\n" for k in micro.values()), *glue, *(k + "\n" for k in kernels)]
    c += _api_functions(graph, name, up)
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
    c += calls + ["    return EDGEC_OK;", "}", ""]

    src = Sources(name)
    src.files[f"{name}.c"] = "\n".join(c)
    src.files[f"{name}.h"] = _header(graph, name, up, ws, source, dispatch is not None)
    src.files[f"{name}_weights.S"] = asm
    src.files[f"{name}.weights.bin"] = blob
    src.files["edgec_runtime.h"] = c_source("edgec_runtime.h")
    src.files["edgec_types.h"] = c_source("edgec_types.h")
    src.files["edgec_threads.h"] = c_source("edgec_threads.h")
    for h in helpers:
        src.files[h] = c_source(h)
    src.c_sources = [f"{name}.c", f"{name}_weights.S"]
    if backend == "llvm":
        try:
            src.files[f"{name}_kernels.o"] = llvm_kernels.compile()
        except (ValueError, TypeError, RuntimeError) as e:  # a kernel form it cannot render
            raise EdgecError(f"the LLVM backend cannot build this model for {target.name}: "
                             f"{e}; compile it with --backend c") from None
        src.objects = [f"{name}_kernels.o"]
    src.workspace_bytes = ws
    src.weights_bytes = store.nbytes
    src.dot_product_kernels = dispatch is not None
    src.kernels = top.names
    src.strategies = top.strategies
    return src


def _weights(store: _Weights, name: str) -> tuple[bytes, str]:
    parts, offset = [], 0
    asm = [f"/* {name}_weights.S: generated by edgec. Each weight is a read-only, "
           f"{ALIGN}-byte aligned array",
           f" * filled from {name}.weights.bin; assemble with this folder as the working",
           " * directory (or pass -Wa,-I,<folder>). */",
           "    .section .rodata", ""]
    for v in store.values:
        data = np.ascontiguousarray(v.const).astype(v.dtype.np.newbyteorder("<")).tobytes()
        sym = store.symbols[id(v)]
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
            f"const char *{name}_version(void)", "{", f'    return "edgec {__version__}";', "}", "",
            f"void {name}_set_num_threads(int n)", "{", "    edgec_set_num_threads(n);", "}", "",
            f"int {name}_get_num_threads(void)", "{", "    return edgec_get_num_threads();", "}",
            ""]
    return out


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _header(graph: Graph, name: str, up: str, ws: int, source: str,
            dot_product_kernels: bool = False) -> str:
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
              f"const char *{name}_version(void);",
              "/* Threads the next runs use, the caller included (default: the environment",
              "   variable EDGEC_NUM_THREADS, else 1); call it between runs, not during one. */",
              f"void {name}_set_num_threads(int n);", f"int {name}_get_num_threads(void);", ""]
    if dot_product_kernels:
        lines += ["/* 1 when the int8 kernels run with the Armv8.2-A dot product (sdot: the CPU",
                  "   has it), 0 when they run on plain NEON; the CPU is asked once. */",
                  f"int {name}_dot_product_kernels(void);", ""]
    for kind in ("input", "output"):
        lines += [f"/* {kind} i: name, dtype (EDGEC_DTYPE_*), rank, shape, size in bytes */",
                  f"const char *{name}_{kind}_name(int i);", f"int {name}_{kind}_dtype(int i);",
                  f"int {name}_{kind}_rank(int i);", f"const int64_t *{name}_{kind}_shape(int i);",
                  f"size_t {name}_{kind}_bytes(int i);", ""]
    lines += ["#ifdef __cplusplus", "}", "#endif", f"#endif /* {up}_H */", ""]
    return "\n".join(lines)
