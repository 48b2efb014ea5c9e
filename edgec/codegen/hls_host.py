"""What runs an HLS design on a host (codegen/hls_project.py makes the design): the
C-simulation runner NAME_csim.cpp (the model on float inputs, its edges computed as the CPU
library computes them, by edgec's runner protocol), NAME_ports.h (the design run once on
arrays of its ports), the testbench NAME_tb.cpp and its data (the interpreter's port values),
and the Vitis HLS Tcl script."""

from __future__ import annotations

import numpy as np

from ..lowering.lower import lower_node
from .renderers.hls import PRELUDE, HlsRenderer


def ports_header(d, ctype) -> str:
    """NAME_run_ports: the design run once on arrays of its ports (the testbench's streams
    hold a whole tensor)."""
    name = d.name
    params = [f"const {ctype(v)} *in{k}" for k, v in enumerate(d.port_in)] + \
        [f"{ctype(v)} *out{k}" for k, v in enumerate(d.port_out)]
    lines = [f"/* {name}_ports.h: {name}_top run once on arrays (C-simulation) */",
             f'#include "{name}_hls.h"', "",
             f"static void {name}_run_ports({', '.join(params)})", "{"]
    for k, v in enumerate(d.port_in):
        n = v.type.numel
        lines += [f"    edgec::stream<{ctype(v)}> s_in{k}(\"in{k}\", \"port_in{k}\", {max(n, 1)});",
                  f"    for (ptrdiff_t i = 0; i < {n}; ++i)", f"        s_in{k}.write(in{k}[i]);"]
    for k, v in enumerate(d.port_out):
        lines.append(f"    edgec::stream<{ctype(v)}> s_out{k}(\"out{k}\", \"port_out{k}\", "
                     f"{max(v.type.numel, 1)});")
    args = [f"s_in{k}" for k in range(len(d.port_in))] + \
        [f"s_out{k}" for k in range(len(d.port_out))]
    lines.append(f"    {name}_top({', '.join(args)});")
    for k, v in enumerate(d.port_out):
        n = v.type.numel
        lines += [f"    if (s_out{k}.size() != {n})",
                  f"        edgec::fail(\"output port {k} carried \" + "
                  f"std::to_string(s_out{k}.size()) + \" values, not {n}\");",
                  f"    for (ptrdiff_t i = 0; i < {n}; ++i)",
                  f"        out{k}[i] = s_out{k}.read();"]
    return "\n".join([*lines, "}", ""])


def runner(d, r: HlsRenderer, ctype) -> str:
    """NAME_csim.cpp: the model run as edgec's runner protocol says (codegen/c/edgecrunner.c:
    input files, output files, a status line), the float edges computed on the host by their
    kernels, the design by C-simulation."""
    name = d.name
    edge_kernels, quantize, dequantize, consts = [], [], [], []
    for i, node in enumerate(d.edge_in + d.edge_out):
        ln = lower_node(node, 1000 + i, d.target)
        edge_kernels.append(ln.kernel)
        args = []
        for b, v in zip(ln.kernel.params, ln.bindings, strict=True):
            if v.is_const:
                cname = f"c{i}_{b.name}"
                consts.append(f"static const {r.types[v.dtype]} {cname}[{max(v.const.size, 1)}] = "
                              f"{{{const_text(v.const)}}};")
                args.append(cname)
            elif node in d.edge_in and v is node.inputs[0]:
                args.append(f"(const {r.types[v.dtype]} *)in[{d.graph.inputs.index(v)}]")
            elif node in d.edge_in:
                args.append(f"p_in{d.port_in.index(v)}")
            elif v is node.output:
                args.append(f"({r.types[v.dtype]} *)out[{d.graph.outputs.index(v)}]")
            else:
                args.append(f"p_out{d.port_out.index(v)}")
        (quantize if node in d.edge_in else dequantize).append(
            f"    {ln.kernel.name}({', '.join(args)});")
    lines = [f"/* {name}_csim.cpp: {name} run by C-simulation of its HLS design (written by "
             "edgec): usage NAME_csim IN_0 ... OUT_0 ...; each file the raw tensor; prints "
             "'status 0 ok' */", PRELUDE, f'#include "{name}_ports.h"', "#include <cstdio>",
             "#include <cstdlib>", "#include <vector>", "", *consts, "",
             HlsRenderer().functions(edge_kernels) if edge_kernels else "", "",
             "static std::vector<unsigned char> buffer(size_t n) "
             "{ return std::vector<unsigned char>(n ? n : 1); }", "",
             "int main(int argc, char **argv)", "{"]
    nin, nout = len(d.graph.inputs), len(d.graph.outputs)
    lines += [f"    if (argc != {1 + nin + nout}) {{",
              f"        std::fprintf(stderr, \"usage: %s {nin} input file(s), {nout} output "
              "file(s)\\n\", argv[0]);", "        return 2;", "    }",
              f"    std::vector<unsigned char> bufs[{nin + nout}];",
              f"    void *in[{max(nin, 1)}], *out[{max(nout, 1)}];"]
    for k, v in enumerate(d.graph.inputs):
        n = v.type.nbytes
        lines += [f"    bufs[{k}] = buffer({n}); in[{k}] = bufs[{k}].data();",
                  f"    {{ FILE *f = std::fopen(argv[{1 + k}], \"rb\");",
                  f"      if (!f || std::fread(in[{k}], 1, {n}, f) != {n} || std::fgetc(f) != EOF)"
                  f" {{ std::fprintf(stderr, \"input %s must hold exactly {n} bytes\\n\", "
                  f"argv[{1 + k}]); return 2; }}", "      std::fclose(f); }"]
    for k, v in enumerate(d.graph.outputs):
        lines.append(f"    bufs[{nin + k}] = buffer({v.type.nbytes}); "
                     f"out[{k}] = bufs[{nin + k}].data();")
    for k, v in enumerate(d.port_in):
        if v in d.graph.inputs:
            lines.append(f"    const {ctype(v)} *p_in{k} = (const {ctype(v)} *)"
                         f"in[{d.graph.inputs.index(v)}];")
        else:
            lines.append(f"    static {ctype(v)} p_in{k}[{max(v.type.numel, 1)}];")
    for k, v in enumerate(d.port_out):
        if v in d.graph.outputs:
            lines.append(f"    {ctype(v)} *p_out{k} = ({ctype(v)} *)"
                         f"out[{d.graph.outputs.index(v)}];")
        else:
            lines.append(f"    static {ctype(v)} p_out{k}[{max(v.type.numel, 1)}];")
    ports = [f"p_in{k}" for k in range(len(d.port_in))] + \
        [f"p_out{k}" for k in range(len(d.port_out))]
    lines += [*quantize, f"    {name}_run_ports({', '.join(ports)});", *dequantize]
    for k, v in enumerate(d.graph.outputs):
        n = v.type.nbytes
        lines += [f"    {{ FILE *f = std::fopen(argv[{1 + nin + k}], \"wb\");",
                  f"      if (!f || std::fwrite(out[{k}], 1, {n}, f) != {n}) "
                  f"{{ std::fprintf(stderr, \"cannot write %s\\n\", argv[{1 + nin + k}]); "
                  "return 2; }", "      std::fclose(f); }"]
    lines += ["    std::printf(\"status 0 ok\\n\");", "    return 0;", "}", ""]
    return "\n".join(lines)


def const_text(arr: np.ndarray) -> str:
    flat = np.asarray(arr).reshape(-1)
    if flat.dtype.kind == "f":
        return ", ".join(repr(float(np.float32(x))) + "f" if np.isfinite(x) else "0.0f"
                         for x in flat.astype(np.float32)) or "0"
    return ", ".join(str(int(x)) for x in flat) or "0"


def testbench(d, ctype) -> str:
    """NAME_tb.cpp: Vitis HLS's C-simulation testbench: the ports' values of one input
    (tb/in*.bin, from edgec's interpreter) through the design, its outputs compared with
    tb/out*.bin; exit status 1 on a mismatch."""
    name = d.name
    lines = [f"/* {name}_tb.cpp: the C-simulation testbench of {name} (written by edgec): "
             "compares the design's outputs with edgec's interpreter's; exit status 1 on a "
             "mismatch */", f'#include "{name}_ports.h"', "#include <cstdio>", "",
             "template <typename T> static bool load(const char *path, T *dst, size_t n)",
             "{", "    FILE *f = std::fopen(path, \"rb\");",
             "    bool ok = f && std::fread(dst, sizeof(T), n, f) == n && std::fgetc(f) == EOF;",
             "    if (f) std::fclose(f);",
             "    if (!ok) std::fprintf(stderr, \"%s must hold %zu values\\n\", path, n);",
             "    return ok;", "}", "", "int main()", "{"]
    for k, v in enumerate(d.port_in):
        lines += [f"    static {ctype(v)} in{k}[{max(v.type.numel, 1)}];",
                  f"    if (!load(\"tb/in{k}.bin\", in{k}, {v.type.numel})) return 2;"]
    for k, v in enumerate(d.port_out):
        lines += [f"    static {ctype(v)} out{k}[{max(v.type.numel, 1)}], "
                  f"want{k}[{max(v.type.numel, 1)}];",
                  f"    if (!load(\"tb/out{k}.bin\", want{k}, {v.type.numel})) return 2;"]
    ports = [f"in{k}" for k in range(len(d.port_in))] + \
        [f"out{k}" for k in range(len(d.port_out))]
    lines += [f"    {name}_run_ports({', '.join(ports)});", "    long bad = 0;"]
    for k, v in enumerate(d.port_out):
        lines += [f"    for (ptrdiff_t i = 0; i < {v.type.numel}; ++i)",
                  f"        if (out{k}[i] != want{k}[i] && bad++ < 10)",
                  f"            std::printf(\"output {k} [%ld]: %ld, expected %ld\\n\", "
                  f"(long)i, (long)out{k}[i], (long)want{k}[i]);"]
    lines += ["    std::printf(bad ? \"FAIL: %ld values differ\\n\" : \"PASS\\n\", bad);",
              "    return bad ? 1 : 0;", "}", ""]
    return "\n".join(lines)


def testbench_data(d, seed: int) -> dict[str, bytes]:
    """tb/in*.bin and tb/out*.bin: the ports' values on one random input of the model, by
    edgec's interpreter (the integer graph as the design computes it)."""
    from ..ir.interpreter import interpret

    rng = np.random.default_rng(seed)
    feeds = {}
    for v in d.graph.inputs:
        if v.dtype.is_float:
            feeds[v.name] = rng.standard_normal(v.shape).astype(v.dtype.np)
        else:
            info = np.iinfo(v.dtype.np)
            feeds[v.name] = rng.integers(info.min, int(info.max) + 1, v.shape,
                                         dtype=v.dtype.np)
    values: dict[str, np.ndarray] = {}
    interpret(d.graph, feeds, values=values)
    files: dict[str, bytes] = {}
    for k, v in enumerate(d.port_in):
        files[f"tb/in{k}.bin"] = np.ascontiguousarray(values[v.name], v.dtype.np).tobytes()
    for k, v in enumerate(d.port_out):
        files[f"tb/out{k}.bin"] = np.ascontiguousarray(values[v.name], v.dtype.np).tobytes()
    return files


def tcl(name: str, part: str, clock_mhz: float) -> str:
    period = 1000.0 / clock_mhz
    return "\n".join([
        f"# run_hls.tcl: Vitis HLS C-simulation and C synthesis of {name} (written by edgec)",
        "#   vitis_hls -f run_hls.tcl", f"open_project -reset {name}_prj",
        f"set_top {name}_top", f"add_files {name}_hls.cpp -cflags \"-std=c++14 -I.\"",
        f"add_files -tb {name}_tb.cpp -cflags \"-std=c++14 -I.\"", "add_files -tb tb",
        "open_solution -reset solution1 -flow_target vivado", f"set_part {{{part}}}",
        f"create_clock -period {period:.3f} -name default",
        "# the C-simulation runs each dataflow process as a thread (edgec_stream.h)",
        "csim_design -ldflags \"-pthread\"", "csynth_design", "exit", ""])
