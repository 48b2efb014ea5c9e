"""The library of a planned graph for a CUDA target: `NAME.cu`, `NAME.h`, the weights.

The graph becomes a `Program` (lowering/program.py) whose kernels, bound to grids of thread
blocks (kernel_ir/gpu.py), the CUDA renderer prints into `NAME.cu` with the entry points:

- `NAME_init()` finds a device (EDGEC_ERR_NO_DEVICE where there is none), allocates one device
  arena of `NAME_DEVICE_BYTES` (the workspace, the weights, the staged inputs and outputs)
  and uploads the weights from the library's read-only data (`NAME_weights.S`, as on a CPU);
  nothing else is allocated afterwards;
- `NAME_run_device(d_inputs, d_outputs, stream)` launches the kernels on `stream` over device
  pointers, and returns once they are queued. Built with `--cuda-graph` (`graph_mode`), the
  first call captures the launches into a CUDA graph and every call launches that graph,
  captured again (and the executable graph updated in place, or instantiated anew) when the
  device pointers differ from the last capture's; stream 0, which cannot be captured, is
  replaced by the library's own blocking stream, which the legacy default stream orders
  with;
- `NAME_run(inputs, outputs, workspace)` is the CPU libraries' call on host pointers: it
  initialises the library where the app has not, copies the inputs in, runs on the default
  stream, copies the outputs back and returns when they are there (`workspace` is unused:
  NAME_WORKSPACE_BYTES is 0);
- `NAME_release()` frees the arena; `NAME_cuda_error()` names the last CUDA error
  (EDGEC_ERR_CUDA).

A program with control flow (If, Loop, Scan) is refused: its branches would read device
memory on the host between launches, which this backend does not do yet.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import __version__
from ..errors import EdgecError
from ..ir.graph import Graph
from ..kernel_ir.gpu import bind_program, kernels_of
from ..kernel_ir.gpu import launches as launches_of
from ..kernel_ir.program import Launch, Program, Ref
from ..kernel_ir.program_printer import print_program
from ..lowering.program import build_program
from ..targets.target import Target
from .ctext import c_comment
from .library import Sources, _weights, io_declarations, io_defines, io_functions
from .renderers.cuda import CudaRenderer
from .runtime_c import c_source

ALIGN = 256  # the device arena's alignment of each region (cudaMalloc gives 256)


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class _Arena:
    """Offsets in the device arena: the workspace, each weight, each staged input and
    output."""

    def __init__(self, prog: Program):
        self.workspace = 0  # the workspace first, then the rest, each ALIGN-aligned
        at = _align(prog.workspace_bytes)
        self.weights = {}
        for sym, v in prog.weights:
            self.weights[sym] = (at, v.const.nbytes)
            at = _align(at + v.const.nbytes)
        self.inputs, self.outputs = [], []
        for vals, offsets in ((prog.inputs, self.inputs), (prog.outputs, self.outputs)):
            for v in vals:
                offsets.append(at)
                at = _align(at + v.type.nbytes)
        self.bytes = max(at, ALIGN)


def generate_cuda(graph: Graph, plan, target: Target, name: str, source: str = "",
                  emit_kernels: bool = False,
                  strategies: Mapping[str, str] | None = None,
                  graph_mode: bool = False) -> Sources:
    """The sources of the CUDA library for `graph` laid out by the memory plan `plan`;
    `graph_mode`: NAME_run_device replays a captured CUDA graph (module doc)."""
    prog = build_program(graph, plan, target, name, f"{name}_", strategies)
    flow = [type(op).__name__ for op in prog.body if not isinstance(op, Launch)]
    if flow:
        raise EdgecError(f"the CUDA target runs straight-line models so far; this one has "
                         f"control flow ({', '.join(sorted(set(flow)))}: an If, Loop or Scan); "
                         "compile it for a CPU target")
    body = bind_program(prog.body)
    r = CudaRenderer()
    r.launcher_prefix = "static"
    arena = _Arena(prog)
    up = name.upper()
    blob, asm = _weights(prog.weights, name)
    weight_types = {sym: v.dtype for sym, v in prog.weights}

    def ref(x: Ref) -> str:
        t = r.type(x.dtype)
        const = "const " if x.read_only else ""
        if x.step is not None:
            raise EdgecError("the CUDA target runs straight-line models so far")
        if x.space == "input":
            return f"({const}{t} *)d_inputs[{x.where}]"
        if x.space == "output":
            return f"({t} *)d_outputs[{x.where}]"
        if x.space == "weight":
            return f"(const {t} *)({name}_dev + {arena.weights[x.where][0]})"
        if x.space == "workspace":
            return f"({const}{t} *)({name}_dev + {x.where})"
        return f"({t} *)NULL"

    launches = []
    for op in body:
        launches += [f"    e = {op.kernel.name}({', '.join(map(ref, op.args))}, stream);",
                     "    if (e != cudaSuccess)", f"        return {name}_failed(e);"]
    uploads = []
    for sym, (off, nbytes) in arena.weights.items():
        if nbytes:
            uploads += ["    if (e == cudaSuccess)",
                        f"        e = cudaMemcpy({name}_dev + {off}, {sym}, {nbytes}, "
                        "cudaMemcpyHostToDevice);"]
    externs = [f'extern "C" const {r.type(weight_types[s])} {s}[];' for s in arena.weights]
    n_in, n_out = len(prog.inputs), len(prog.outputs)
    cu = [f"/* {name}.cu: generated by edgec {__version__}"
          f"{' from ' + c_comment(source) if source else ''}. The kernels, then the entry "
          f"points declared in {name}.h. Do not edit. */",
          f'#include "{name}.h"', r.source(kernels_of(body)),
          f"/* weights: read-only host data in {name}_weights.S, uploaded by {name}_init */",
          *externs, "",
          f"static char *{name}_dev; /* the device arena ({up}_DEVICE_BYTES), or NULL */",
          f"static cudaError_t {name}_last = cudaSuccess;", "",
          f"static int {name}_failed(cudaError_t e)", "{", f"    {name}_last = e;",
          "    return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver"
          " ? EDGEC_ERR_NO_DEVICE : EDGEC_ERR_CUDA;", "}", "",
          f'extern "C" int {name}_init(void)', "{",
          f"    if ({name}_dev != NULL)", "        return EDGEC_OK;",
          "    int devices = 0;", "    cudaError_t e = cudaGetDeviceCount(&devices);",
          "    if (e == cudaSuccess && devices == 0)", "        e = cudaErrorNoDevice;",
          "    if (e == cudaSuccess)",
          f"        e = cudaMalloc((void **)&{name}_dev, {up}_DEVICE_BYTES);",
          *uploads,
          "    if (e != cudaSuccess) {",
          f"        cudaFree({name}_dev);", f"        {name}_dev = NULL;",
          f"        return {name}_failed(e);", "    }", "    return EDGEC_OK;", "}", "",
          f"static int {name}_queue(const void *const *d_inputs, "
          "void *const *d_outputs, cudaStream_t stream)", "{",
          "    cudaError_t e;", "    (void)e;", "    (void)d_inputs;", "    (void)d_outputs;",
          *launches, "    return EDGEC_OK;", "}", "",
          *(_graph_functions(name, n_in, n_out) if graph_mode else []),
          f'extern "C" int {name}_run_device(const void *const *d_inputs, '
          "void *const *d_outputs, cudaStream_t stream)", "{",
          "    if (d_inputs == NULL || d_outputs == NULL)",
          "        return EDGEC_ERR_NULL_ARGUMENT;",
          f"    if ({name}_dev == NULL) {{", f"        int status = {name}_init();",
          "        if (status != EDGEC_OK)", "            return status;", "    }",
          f"    return {name}_{'replay' if graph_mode else 'queue'}(d_inputs, d_outputs, "
          "stream);", "}", "",
          f'extern "C" int {name}_run(const void *const *inputs, void *const *outputs, '
          "void *workspace)", "{", "    (void)workspace;",
          "    if (inputs == NULL || outputs == NULL)",
          "        return EDGEC_ERR_NULL_ARGUMENT;",
          f"    for (int i = 0; i < {up}_NUM_INPUTS; ++i)",
          "        if (inputs[i] == NULL)", "            return EDGEC_ERR_NULL_ARGUMENT;",
          f"    for (int i = 0; i < {up}_NUM_OUTPUTS; ++i)",
          "        if (outputs[i] == NULL)", "            return EDGEC_ERR_NULL_ARGUMENT;",
          f"    int status = {name}_init();", "    if (status != EDGEC_OK)",
          "        return status;",
          f"    const void *d_in[{max(n_in, 1)}] = {{"
          f"{', '.join(f'{name}_dev + {o}' for o in arena.inputs) or 'NULL'}}};",
          f"    void *d_out[{max(n_out, 1)}] = {{"
          f"{', '.join(f'{name}_dev + {o}' for o in arena.outputs) or 'NULL'}}};",
          "    cudaError_t e = cudaSuccess;",
          f"    for (int i = 0; i < {up}_NUM_INPUTS && e == cudaSuccess; ++i)",
          f"        e = cudaMemcpy((void *)d_in[i], inputs[i], {name}_input_bytes(i), "
          "cudaMemcpyHostToDevice);",
          "    if (e != cudaSuccess)", f"        return {name}_failed(e);",
          f"    status = {name}_run_device(d_in, d_out, 0);",
          "    if (status != EDGEC_OK)", "        return status;",
          f"    for (int i = 0; i < {up}_NUM_OUTPUTS && e == cudaSuccess; ++i)",
          f"        e = cudaMemcpy(outputs[i], d_out[i], {name}_output_bytes(i), "
          "cudaMemcpyDeviceToHost);",
          f"    return e == cudaSuccess ? EDGEC_OK : {name}_failed(e);", "}", "",
          f'extern "C" void {name}_release(void)', "{",
          *([f"    {name}_drop_graph();"] if graph_mode else []),
          f"    cudaFree({name}_dev);",
          f"    {name}_dev = NULL;", "}", "",
          f'extern "C" const char *{name}_cuda_error(void)', "{",
          f"    return cudaGetErrorString({name}_last);", "}", "",
          f'extern "C" size_t {name}_workspace_size(void)', "{", "    return 0;", "}", "",
          f'extern "C" const char *{name}_version(void)', "{",
          f'    return "edgec {__version__}";', "}", "",
          f'extern "C" const char *{name}_status_string(int status)', "{",
          "    switch (status) {", '    case EDGEC_OK: return "ok";',
          '    case EDGEC_ERR_NULL_ARGUMENT: return "a NULL pointer was passed for inputs or '
          'outputs";',
          "    case EDGEC_ERR_NO_DEVICE:",
          '        return "no CUDA device: this machine has no NVIDIA GPU, or no driver for '
          'CUDA 13.0";',
          f'    case EDGEC_ERR_CUDA: return "a CUDA call failed ({name}_cuda_error() says '
          'which)";',
          '    default: return "unknown status";', "    }", "}", "",
          'extern "C" {', *io_functions(graph, name), "}", ""]

    src = Sources(name)
    src.files[f"{name}.cu"] = "\n".join(cu)
    src.files[f"{name}.h"] = _header(graph, name, up, arena.bytes, source)
    src.files[f"{name}_weights.S"] = asm
    src.files[f"{name}.weights.bin"] = blob
    src.files["edgec_types.h"] = c_source("edgec_types.h")
    src.c_sources = [f"{name}.cu", f"{name}_weights.S"]
    src.workspace_bytes = 0
    src.weights_bytes = sum(v.const.nbytes for _, v in prog.weights)
    src.kernels = prog.kernels
    src.strategies = prog.strategies
    src.gpu_launches = [{"kernel": op.kernel.name, "blocks": _threads(launch.grid),
                         "threads": _threads(launch.block)}
                        for op in body for launch in launches_of(op.kernel)]
    bound = Program(prog.name, prog.inputs, prog.outputs, prog.workspace_bytes, prog.weights,
                    body, prog.strategies, prog.kernels)
    src.kernel_ir = print_program(bound) if emit_kernels else None
    return src


def _graph_functions(name: str, n_in: int, n_out: int) -> list[str]:
    """NAME_replay: the launches captured into a CUDA graph (again where the pointers have
    changed since the last capture) and the graph launched; NAME_drop_graph."""
    return [
        f"static cudaGraphExec_t {name}_exec; /* the captured run, or NULL */",
        f"static cudaStream_t {name}_stream; /* capturing and replaying where given 0 */",
        f"static const void *{name}_captured_in[{max(n_in, 1)}];",
        f"static void *{name}_captured_out[{max(n_out, 1)}];", "",
        f"static void {name}_drop_graph(void)", "{",
        f"    if ({name}_exec != NULL)", f"        cudaGraphExecDestroy({name}_exec);",
        f"    if ({name}_stream != NULL)", f"        cudaStreamDestroy({name}_stream);",
        f"    {name}_exec = NULL;", f"    {name}_stream = NULL;", "}", "",
        f"static int {name}_replay(const void *const *d_inputs, void *const *d_outputs, "
        "cudaStream_t stream)", "{", "    cudaError_t e = cudaSuccess;",
        "    if (stream == 0) { /* the legacy default stream cannot be captured */",
        f"        if ({name}_stream == NULL)",
        f"            e = cudaStreamCreate(&{name}_stream); /* blocking: ordered with it */",
        "        if (e != cudaSuccess)", f"            return {name}_failed(e);",
        f"        stream = {name}_stream;", "    }",
        f"    int same = {name}_exec != NULL;",
        f"    for (int i = 0; i < {n_in} && same; ++i)",
        f"        same = d_inputs[i] == {name}_captured_in[i];",
        f"    for (int i = 0; i < {n_out} && same; ++i)",
        f"        same = d_outputs[i] == {name}_captured_out[i];",
        "    if (!same) {",
        "        cudaGraph_t g = NULL;",
        "        e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);",
        "        if (e != cudaSuccess)", f"            return {name}_failed(e);",
        f"        int status = {name}_queue(d_inputs, d_outputs, stream);",
        "        e = cudaStreamEndCapture(stream, &g);",
        "        if (status != EDGEC_OK || e != cudaSuccess) {",
        "            if (g != NULL)", "                cudaGraphDestroy(g);",
        f"            return status != EDGEC_OK ? status : {name}_failed(e);", "        }",
        f"        if ({name}_exec != NULL) {{ /* the same kernels, other pointers */",
        "            cudaGraphExecUpdateResultInfo info;",
        f"            if (cudaGraphExecUpdate({name}_exec, g, &info) != cudaSuccess) {{",
        "                (void)cudaGetLastError(); /* the failed update's, not sticky */",
        f"                cudaGraphExecDestroy({name}_exec);",
        f"                {name}_exec = NULL;", "            }", "        }",
        f"        if ({name}_exec == NULL)",
        f"            e = cudaGraphInstantiate(&{name}_exec, g, 0);",
        "        cudaGraphDestroy(g);", "        if (e != cudaSuccess) {",
        f"            {name}_exec = NULL;", f"            return {name}_failed(e);", "        }",
        f"        for (int i = 0; i < {n_in}; ++i)",
        f"            {name}_captured_in[i] = d_inputs[i];",
        f"        for (int i = 0; i < {n_out}; ++i)",
        f"            {name}_captured_out[i] = d_outputs[i];", "    }",
        f"    e = cudaGraphLaunch({name}_exec, stream);",
        f"    return e == cudaSuccess ? EDGEC_OK : {name}_failed(e);", "}", ""]


def _header(graph: Graph, name: str, up: str, device_bytes: int, source: str) -> str:
    lines = [f"/* {name}.h: the API of lib{name}.a, a CUDA library generated by edgec "
             f"{__version__}{' from ' + c_comment(source) if source else ''}.",
             " *",
             f" * {name}_init() finds the GPU, allocates {up}_DEVICE_BYTES of device memory",
             " * and uploads the weights (once; later calls return at once).",
             f" * {name}_run_device(d_inputs, d_outputs, stream) queues a run on device",
             f" * pointers; {name}_run(inputs, outputs, workspace) runs on host pointers and",
             f" * returns when the outputs are there (workspace unused: {up}_WORKSPACE_BYTES",
             f" * is 0). Each returns EDGEC_OK (0) or a status that {name}_status_string()",
             " * explains. Link with -lcudart_static -ldl -lrt -pthread -lstdc++. */",
             f"#ifndef {up}_H", f"#define {up}_H", "", "#include <stddef.h>",
             "#include <stdint.h>", "", c_source("edgec_types.h").strip(), "",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
             "struct CUstream_st; /* cudaStream_t is struct CUstream_st * */", "",
             f"#define {up}_NUM_INPUTS  {len(graph.inputs)}",
             f"#define {up}_NUM_OUTPUTS {len(graph.outputs)}",
             f"#define {up}_WORKSPACE_BYTES 0",
             f"#define {up}_WORKSPACE_ALIGN 64",
             f"#define {up}_DEVICE_BYTES {device_bytes}", "", *io_defines(graph, up),
             f"int {name}_init(void);",
             f"int {name}_run_device(const void *const *d_inputs, void *const *d_outputs, "
             "struct CUstream_st *stream);",
             f"int {name}_run(const void *const *inputs, void *const *outputs, void *workspace);",
             f"void {name}_release(void);",
             f"const char *{name}_cuda_error(void);",
             f"size_t {name}_workspace_size(void);",
             f"const char *{name}_status_string(int status);",
             f"const char *{name}_version(void);", "", *io_declarations(name),
             "#ifdef __cplusplus", "}", "#endif", f"#endif /* {up}_H */", ""]
    return "\n".join(lines)


def _threads(loops) -> int:
    """The blocks of a grid, or the threads of a block: the product of its loops' extents
    (each a constant: the program's shapes are static)."""
    n = 1
    for loop in loops:
        n *= int(loop.extent.field("value"))
    return n
