"""An HLS project from a planned integer graph: one dataflow process per layer, joined by
streams, for Vitis HLS C synthesis and for C-simulation with g++.

The design is the graph without its edges: a float input's QuantizeLinear and a float
output's DequantizeLinear run on the host (the runner NAME_csim.cpp, as the CPU library
computes them), and the integer values between them are the top function's AXI-stream
ports. Every other node is a process of the top function NAME_top (`#pragma HLS DATAFLOW`):

    static void L3_conv(edgec::stream<uint8_t> &i0, edgec::stream<uint8_t> &o0, ...)
        reads each input stream whole into an array, runs the node's kernel (the kernel IR
        of the lowering, printed by codegen/renderers/hls.py; weights are `static const`
        arrays in it, ROM), and writes its output array to one stream per consumer (the
        fork of a value with several consumers)

A view (Reshape, Flatten: the memory plan's aliases) is no process: its consumers read the
stream of the value it views, whose elements come in the same order. A float model, or a
node that would compute in float inside the design, is refused with what to do
(`--quantize`).

Stream depths (`wire`, then hls_units.size_for_throughput): a process reads its input streams one
after another, so a stream it reads first drains as it fills and needs 2 places not to
deadlock, while one it reads later must hold all that arrives meanwhile: its whole tensor (a
residual branch joining a convolution's output). Those depths are enough for one frame, not
for frames back to back: with 2 places, neighbouring processes of equal time alternate (a
producer cannot write its next frame until its consumer has finished the last), and a
branch holding one frame stalls its producer until the join has read it; the dataflow
simulation showed frames 1.7 times slower than the slowest process once folding balanced
the convolutions. So each stream between processes then holds the frames in flight on it by
the cycle model (hls_estimate.stream_frames: one, plus one per interval the consumer reads
it after the producer wrote it), as ping-pong buffers would; the output ports' streams keep
their depths. Each depth is a macro NAME_DEPTH_<stream> of the header that a build may
override (the tests set one smaller and see the C-simulation say deadlock).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import EdgecError
from ..ir.graph import Graph, Node, Value
from ..kernel_ir.kernel import Expr, Kernel, Local, walk
from ..lowering.lower import c_identifier, lower_node
from ..lowering.strategies import Kind, unknown_nodes
from ..targets.target import Target
from .hls_estimate import URAM_WORD_BITS
from .hls_host import ports_header, runner, tcl, testbench, testbench_data
from .hls_units import (
    DENSE_KINDS,
    REQUANTIZING,
    accumulator_bound,
    ap_type,
    array_partitions,
    bind_fifos,
    estimate_design,
    fold_of,
    models,
    plan_folds,
    size_for_throughput,
    uram_arrays,
)
from .library import Sources
from .renderers.hls import PRELUDE, HlsRenderer

HLS_DIR = Path(__file__).parent / "hls"  # edgec_stream.h (package data)
FIRST_DEPTH = 2


@dataclass
class StreamSpec:
    """A stream of the top function: `value` (the producer's output, by name) to `consumer`
    (a process, or the port it feeds), `depth` places."""

    name: str
    value: Value
    producer: str
    consumer: str
    depth: int
    uram: bool = False  # its FIFO bound to URAM (_bind_fifos)

    @property
    def port(self) -> str | None:
        """The top function's argument it is (outK, for an output port), or None."""
        kind, _, k = self.consumer.partition(" ")
        return f"out{k}" if kind == "output" else None

    @property
    def arg(self) -> str:
        """What a process call passes for it: the port, or the region's stream."""
        return self.port or self.name

    def record(self) -> dict:
        return {"name": self.name, "value": self.value.name, "producer": self.producer,
                "consumer": self.consumer, "depth": self.depth,
                "dtype": self.value.dtype.value, "elements": self.value.type.numel}


class Design:
    def __init__(self, graph: Graph, plan, target: Target, name: str,
                 strategies=None):
        self.graph, self.plan, self.target, self.name = graph, plan, target, name
        self.forced = dict(strategies or {})
        self.by_name = {v.name: v for v in graph.values()}
        self.edge_in: list[Node] = []   # host-side QuantizeLinear of float inputs
        self.edge_out: list[Node] = []  # host-side DequantizeLinear of float outputs
        self.port_in: list[Value] = []
        self.port_out: list[Value] = []
        self.streams: list[StreamSpec] = []
        self.strategies: list[dict] = []
        self.rom_bytes = 0
        # (node, PE): the busiest PE's work and the mean PE's
        self.sparse_loads: dict[tuple[str, int], tuple[int, float]] = {}
        self.uram: set[tuple[str, str]] = set()  # (process, array): frames in URAM

    # -- what is host, port, view and process --------------------------------------------
    def source(self, v: Value) -> Value:
        """The value whose stream carries `v` (itself, or what the view `v` aliases)."""
        root = self.plan.aliases.get(v.name)
        return self.by_name[root] if root is not None else v

    def split_edges(self) -> None:
        g = self.graph
        for v in g.inputs:
            if not v.dtype.is_float:
                self.port_in.append(v)
                continue
            users = v.users()
            bad = [n for n in users if n.op != "QuantizeLinear" or not _const_params(n)]
            if bad:
                raise EdgecError(
                    f"--target hls computes in integers only, and input {v.name} "
                    f"({v.type}) goes to {bad[0].op} node {bad[0].name} in float: quantize the "
                    "model (`--quantize int8 --calib SAMPLES`, or an ONNX QDQ model) so that "
                    "its inputs go to QuantizeLinear")
            for n in users:
                self.edge_in.append(n)
                self.port_in.append(n.output)
        for o in g.outputs:
            p = o.producer
            if not o.dtype.is_float:
                self.port_out.append(o)
            elif p is not None and p.op == "DequantizeLinear" and _const_params(p) and \
                    not p.inputs[0].is_const:
                self.edge_out.append(p)
                self.port_out.append(p.inputs[0])
            else:
                raise EdgecError(
                    f"--target hls computes in integers only, and output {o.name} ({o.type}) "
                    f"is computed in float{f' by {p.op} node {p.name}' if p else ''}: quantize "
                    "the model (`--quantize int8 --calib SAMPLES`) so that its outputs come "
                    "from DequantizeLinear")
        edges = {id(n) for n in self.edge_in + self.edge_out}
        self.nodes = [n for n in g.nodes if id(n) not in edges
                      and not all(o.name in self.plan.aliases for o in n.outputs)]
        if any(p.is_const for p in self.port_out):
            raise EdgecError("--target hls: an output of the model is a constant; nothing "
                             "computes it")

    # -- streams -------------------------------------------------------------------------
    def wire(self, lowered: list) -> None:
        """One stream per (value, consumer), depths by the read order of each consumer."""
        consumers: dict[int, list[tuple[str, int]]] = {}  # source id -> (consumer, index)
        self.reads: dict[str, list[StreamSpec]] = {}
        self.writes: dict[int, list[StreamSpec]] = {}
        producer = {id(v): f"port {k}" for k, v in enumerate(self.port_in)}
        for proc, ln in lowered:
            for v in ln.node.outputs:
                producer[id(v)] = proc
        order: list[tuple[str, Value]] = []
        for proc, ln in lowered:
            seen: set[int] = set()
            for v in ln.bindings:
                if v.is_const or v.producer is ln.node:
                    continue
                s = self.source(v)
                if id(s) in seen:
                    continue
                seen.add(id(s))
                if id(s) not in producer:
                    raise EdgecError(f"--target hls: node {ln.node.name} reads {v.name}, which "
                                     "no process of the design produces")
                order.append((proc, s))
        order += [(f"output {k}", self.source(v)) for k, v in enumerate(self.port_out)]
        first: set[str] = set()
        for n, (consumer, s) in enumerate(order):
            depth = FIRST_DEPTH if consumer not in first else max(s.type.numel, FIRST_DEPTH)
            first.add(consumer)
            spec = StreamSpec(f"s{n}_{c_identifier(s.name)}"[:48], s, producer[id(s)],
                              consumer, depth)
            consumers.setdefault(id(s), []).append((consumer, n))
            self.streams.append(spec)
            self.reads.setdefault(consumer, []).append(spec)
            self.writes.setdefault(id(s), []).append(spec)

    def depth_macro(self, s: StreamSpec) -> str:
        return f"{self.name.upper()}_DEPTH_{s.name}"


def copy_hls_headers(out: Path) -> None:
    """Put the headers every project includes into `out`: edgec_stream.h, and ap_types/
    (Xilinx's ap_int and ap_fixed, for g++; Vitis HLS has its own)."""
    shutil.copyfile(HLS_DIR / "edgec_stream.h", Path(out) / "edgec_stream.h")
    shutil.copytree(HLS_DIR / "ap_types", Path(out) / "ap_types", dirs_exist_ok=True)


def _const_params(n: Node) -> bool:
    return all(v is None or v.is_const for v in n.inputs[1:])


def _float_use(k: Kernel) -> str | None:
    """Where kernel `k` (or a callee) computes in float: a parameter's, local's or
    expression's name, or None where it is integer arithmetic throughout."""
    for kk in [*k.callees(), k]:
        for p in kk.params:
            if p.dtype.is_float:
                return f"parameter {p.name} ({p.dtype})"
        for s in walk(kk.body):
            if isinstance(s, Local) and s.dtype.is_float:
                return f"local {s.name} ({s.dtype})"
            for e in vars(s).values():
                bad = _float_expr(e)
                if bad is not None:
                    return bad
    return None


def _float_expr(e) -> str | None:
    if not isinstance(e, Expr):
        return None
    if e.dtype.is_float:
        return f"a {e.dtype} {e.op}"
    for a in e.args:
        bad = _float_expr(a)
        if bad is not None:
            return bad
    return None


def _array_text(arr: np.ndarray) -> str:
    flat = np.asarray(arr).reshape(-1)
    if flat.dtype == np.bool_:
        flat = flat.astype(np.uint8)
    if flat.dtype.kind == "f":
        raise EdgecError("--target hls: a float array among the design's ROMs")
    items = [str(int(x)) for x in flat]
    lines = [", ".join(items[i:i + 24]) for i in range(0, len(items), 24)]
    return ",\n    ".join(lines) or "0"


def generate_hls(graph: Graph, plan, target: Target, name: str, *, part: str,
                 clock_mhz: float, strategies=None, target_fps: float = 0.0,
                 seed: int = 0) -> Sources:
    """The HLS project of `graph` (planned, integer) named `name`, for FPGA `part` at
    `clock_mhz`, its matrix-vector units folded to `target_fps` (0: as fast as the rest of
    the design allows, within the part: codegen/hls_fold.py); testbench data from edgec's
    interpreter on a random input (`seed`)."""
    d = Design(graph, plan, target, name, strategies)
    d.split_edges()
    given = set(d.forced)  # (the user's; the folds below are the compiler's own)
    for node_name, (kind, pe, simd) in plan_folds(d, part, clock_mhz, target_fps).items():
        if (pe, simd) != (1, 1) or kind in DENSE_KINDS:
            d.forced[node_name] = f"{kind}{{pe={pe}}}" if kind == "hls-sparse-mvau" else \
                f"{kind}{{simd={simd}}}" if kind == Kind.HLS_POOL.value else \
                f"{kind}{{pe={pe}}}" if kind == Kind.HLS_DEPTHWISE.value else \
                f"{kind}{{pe={pe},simd={simd}}}"
    r = HlsRenderer()
    lowered = []
    for i, node in enumerate(d.nodes):
        if node.op in REQUANTIZING and not node.attrs.get("rq_shift") and \
                node.output.dtype.itemsize == 1:
            raise EdgecError(
                f"--target hls computes in integers only, and node {node.name} ({node.op}) "
                "requantizes by a multiplier (input scales / output scale) that fixed point "
                "cannot hold: one of 0.25 or more (for QLinearAdd, a ratio of 16 or more), or "
                "per-channel multipliers more than 2^16 apart; quantize it with a larger "
                "output scale (a wider calibration range), or keep the model off this target")
        ln = lower_node(node, i, target, d.forced.get(node.name))
        bad = _float_use(ln.kernel)
        if bad is not None:
            raise EdgecError(
                f"--target hls computes in integers only; node {node.name} ({node.op}) would "
                f"compute in float ({bad}): quantize the model (`--quantize int8 --calib "
                "SAMPLES`) so that every layer between the inputs' QuantizeLinear and the "
                f"outputs' DequantizeLinear has an integer form")
        proc = f"L{i}_{c_identifier(node.name)}"[:48]
        lowered.append((proc, ln))
        s = ln.strategy
        d.strategies.append({
            "node": node.name, "op": node.op, "kernel": ln.kernel.name, "strategy": s.name,
            "kind": s.kind, "lanes": s.lanes, "parallel": False,
            "micro_kernels": list(s.micro_kernels), "choice": s.choice.record(),
            "forced": node.name in given, "candidates": [c.record() for c in s.candidates]})
    unused = sorted(given - {n.name for n in d.nodes})
    if unused:  # (an edge node runs on the host, a view is no process)
        raise EdgecError(unknown_nodes("--strategy", unused, [n.name for n in d.nodes]))
    d.wire(lowered)
    t = r.types
    ctype = lambda v: t[v.dtype]  # noqa: E731
    layers = [_narrow(r, proc, ln) for proc, ln in lowered]
    kernels_text = r.functions([ln.kernel for _, ln in lowered])
    processes, calls = [], []
    for k, v in enumerate(d.port_in):  # the port readers: the fork of an input port
        outs = d.writes.get(id(v), [])
        proc = f"P_in{k}"
        params = [f"edgec::stream<{ctype(v)}> &port"] + \
            [f"edgec::stream<{ctype(v)}> &o{j}" for j in range(len(outs))]
        writes = " ".join(f"o{j}.write(x);" for j in range(len(outs)))
        processes.append("\n".join([
            f"/* input port {k} ({v.name}, {v.type}) to its {len(outs)} consumer(s) */",
            f"static void {proc}({', '.join(params)})", "{",
            f"    for (ptrdiff_t i = 0; i < {v.type.numel}; ++i) {{",
            "#pragma HLS PIPELINE II=1", f"        {ctype(v)} x = port.read();",
            f"        {writes}", "    }", "}"]))
        calls.append(f"    EDGEC_PROCESS({', '.join([proc, f'in{k}', *(s.arg for s in outs)])});")
    d.uram = uram_arrays(d, lowered, part)
    for proc, ln in lowered:
        text, args = _process(d, r, proc, ln)
        processes.append(text)
        calls.append(f"    EDGEC_PROCESS({', '.join([proc, *args])});")
    size_for_throughput(d, *models(d, lowered, layers))
    bind_fifos(d, lowered, layers, part)
    est = estimate_design(d, lowered, layers, part, clock_mhz)
    ports = [f"edgec::stream<{ctype(v)}> &in{k}" for k, v in enumerate(d.port_in)] + \
        [f"edgec::stream<{ctype(v)}> &out{k}" for k, v in enumerate(d.port_out)]
    internal = [s for s in d.streams if s.port is None]
    top = [f"void {name}_top({', '.join(ports)})", "{",
           *(f"#pragma HLS INTERFACE mode=axis port={p.split('&')[1]}" for p in ports),
           "#pragma HLS DATAFLOW",
           # (the streams inside the region: C-simulation checks that they end empty)
           f"    EDGEC_DATAFLOW_BEGIN(\"{name}_top\")",
           *(f"    edgec::stream<{ctype(s.value)}> {s.name}(\"{s.name}\", \"{s.name}\", "
             f"{d.depth_macro(s)});\n#pragma HLS STREAM variable={s.name} depth="
             f"{d.depth_macro(s)}" + (f"\n#pragma HLS BIND_STORAGE variable={s.name} "
                                      "type=fifo impl=uram" if s.uram else "")
             for s in internal)]
    top += [*calls, "    EDGEC_DATAFLOW_END", "}"]
    guard = f"{name.upper()}_HLS_H"
    header = "\n".join([
        f"/* {name}_hls.h: the top function of {name}'s HLS design (written by edgec): "
        "its ports are AXI streams of the model's integer inputs and outputs */",
        f"#ifndef {guard}", f"#define {guard}", "", "#include <stddef.h>", "#include <stdint.h>",
        "", '#include "edgec_stream.h"', "",
        "/* each stream's depth (edgec's depth sizing; a build may set one with -D) */",
        *(f"#ifndef {d.depth_macro(s)}\n#define {d.depth_macro(s)} {s.depth}\n#endif"
          for s in internal), "",
        *(f"#define {name.upper()}_INPUT{k}_ELEMENTS {v.type.numel}  /* {v.name}: {v.type} */"
          for k, v in enumerate(d.port_in)),
        *(f"#define {name.upper()}_OUTPUT{k}_ELEMENTS {v.type.numel}  /* {v.name}: {v.type} */"
          for k, v in enumerate(d.port_out)), "",
        f"void {name}_top({', '.join(ports)});", "", f"#endif /* {guard} */", ""])
    source = "\n\n".join([
        f"/* {name}_hls.cpp: {name}'s HLS design (written by edgec): one dataflow process "
        f"per layer joined by streams; part {part} at {clock_mhz:g} MHz */",
        PRELUDE + f'\n#include "{name}_hls.h"', kernels_text, *processes, "\n".join(top)]) + "\n"
    files: dict[str, str | bytes] = {
        f"{name}_hls.h": header, f"{name}_hls.cpp": source,
        f"{name}_ports.h": ports_header(d, ctype),
        f"{name}_csim.cpp": runner(d, r, ctype),
        f"{name}_tb.cpp": testbench(d, ctype),
        "run_hls.tcl": tcl(name, part, clock_mhz)}
    files |= testbench_data(d, seed)
    files["hls_estimate.json"] = json.dumps(est, indent=1) + "\n"
    io = lambda v: {"value": v.name, "shape": list(v.shape), "dtype": v.dtype.value}  # noqa: E731
    record = {"part": part, "clock_mhz": clock_mhz, "top": f"{name}_top",
              "design": f"{name}_hls.cpp",
              "tcl": "run_hls.tcl", "testbench": f"{name}_tb.cpp",
              "csim_runner": f"{name}_csim.cpp", "rom_bytes": d.rom_bytes,
              "ports": {"inputs": [io(v) for v in d.port_in],
                        "outputs": [io(v) for v in d.port_out]},
              "processes": [p for p, _ in lowered], "layers": layers,
              "streams": [s.record() for s in d.streams], "estimate": est}
    return Sources(name, files, weights_bytes=d.rom_bytes,
                   kernels=[ln.kernel.name for _, ln in lowered], strategies=d.strategies,
                   hls=record)


def _narrow(r: HlsRenderer, proc: str, ln) -> dict:
    """Give a process's kernel ROMs of their values' width and accumulators of their proved
    width (where narrower than the C types); the layer's record of both."""
    k, node = ln.kernel, ln.node
    roms: dict[str, int] = {}
    for b, v in zip(k.params, ln.bindings, strict=True):
        if v.is_const and np.dtype(v.dtype.np).kind in "iu":
            ctype, bits = ap_type(np.asarray(v.const))
            if bits < 8 * v.dtype.itemsize:
                r.param_types.setdefault(k.name, {})[b.name] = ctype
            roms[b.name] = min(bits, 8 * v.dtype.itemsize)
    bound = accumulator_bound(node)
    acc_bits = None if bound is None else bound.bit_length() + 1
    if acc_bits is not None and acc_bits < 32:
        r.local_types.setdefault(k.name, {})["acc"] = f"ap_int<{acc_bits}>"
    # (None: the kernel has no sums, or their bound is unknown: its C types)
    return {"process": proc, "node": node.name, "op": node.op, "accumulator_bits": acc_bits,
            "rom_bits": roms}


def _process(d: Design, r: HlsRenderer, proc: str, ln) -> tuple[str, list[str]]:
    """A layer's process function and the streams its call passes."""
    node, k = ln.node, ln.kernel
    ctype = lambda v: r.types[v.dtype]  # noqa: E731
    reads = d.reads.get(proc, [])
    params, args, body, arrays = [], [], [], {}
    for j, s in enumerate(reads):
        params.append(f"edgec::stream<{ctype(s.value)}> &i{j}")
        args.append(s.arg)
        arrays[id(s.value)] = f"a{j}"
        body.append(f"    static {ctype(s.value)} a{j}[{s.value.type.numel}];")
    outs = []
    for j, v in enumerate(node.outputs):
        arrays[id(v)] = f"y{j}"
        body.append(f"    static {ctype(v)} y{j}[{max(v.type.numel, 1)}];")
        streams = d.writes.get(id(v), [])
        outs.append((v, f"y{j}", [f"o{j}_{m}" for m in range(len(streams))]))
        for m, s in enumerate(streams):
            params.append(f"edgec::stream<{ctype(v)}> &o{j}_{m}")
            args.append(s.arg)
    choice = ln.strategy.choice
    pe, simd = fold_of(choice)
    parts = array_partitions(choice, [s.value.type.numel for s in reads])
    body += [f"#pragma HLS ARRAY_PARTITION variable={a} {how}" for a, how in parts.items()]
    for a, v in [(f"a{j}", s.value) for j, s in enumerate(reads)] + \
            [(f"y{j}", v) for j, v in enumerate(node.outputs)]:
        if (proc, a) in d.uram:  # (hls_units.uram_arrays)
            body += [f"#pragma HLS ARRAY_RESHAPE variable={a} cyclic factor="
                     f"{URAM_WORD_BITS // (8 * v.dtype.itemsize)}",
                     f"#pragma HLS BIND_STORAGE variable={a} type=ram_2p impl=uram"]
    call_args = []
    for b, v in zip(k.params, ln.bindings, strict=True):
        if v.is_const:
            wname = f"w_{b.name}"
            rom_type = r.param_types.get(k.name, {}).get(b.name) or ctype(v)
            body.append(f"    static const {rom_type} {wname}[{max(v.const.size, 1)}] = {{\n"
                        f"    {_array_text(v.const)}}};")
            body.append(f"#pragma HLS BIND_STORAGE variable={wname} type=rom_2p impl=bram")
            if pe * simd > 1 and b.name.startswith(("mvau", "dwu")):
                body.append(f"#pragma HLS ARRAY_PARTITION variable={wname} cyclic "
                            f"factor={pe * simd}")
            elif pe > 1 and choice.kind is Kind.HLS_DEPTHWISE and \
                    v.const.size == node.inputs[0].shape[1]:  # a table a channel (bias,
                # multiplier): lane s reads the channels of block s, each pixel
                body.append(f"#pragma HLS ARRAY_PARTITION variable={wname} block "
                            f"factor={pe}")
            elif pe > 1 and b.name.startswith(("sval", "sterm", "sout")):  # a PE's entries
                body.append(f"#pragma HLS ARRAY_PARTITION variable={wname} block "
                            f"factor={pe}")
            d.rom_bytes += v.const.size * v.dtype.itemsize
            call_args.append(wname)
        else:
            call_args.append(arrays[id(d.source(v)) if v.producer is not node else id(v)])
    for j, s in enumerate(reads):
        body += [f"    for (ptrdiff_t i = 0; i < {s.value.type.numel}; ++i) {{",
                 "#pragma HLS PIPELINE II=1", f"        a{j}[i] = i{j}.read();", "    }"]
    body.append(f"    {k.name}({', '.join(call_args)});")
    for v, arr, names in outs:
        if names:
            body += [f"    for (ptrdiff_t i = 0; i < {v.type.numel}; ++i) {{",
                     "#pragma HLS PIPELINE II=1",
                     *(f"        {n}.write({arr}[i]);" for n in names), "    }"]
    doc = f"/* {node.op} {node.name}: {ln.strategy.name} */"
    return "\n".join([doc, f"static void {proc}({', '.join(params) or 'void'})", "{", *body,
                      "}"]), args


# the matrix-vector units: PE x SIMD folds (a sparse unit's PE only)
