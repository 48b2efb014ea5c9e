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

Stream depths (`wire`, then `_size_for_throughput`): a process reads its input streams one
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
import math
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import EdgecError
from ..ir.graph import Graph, Node, Value
from ..kernel_ir.kernel import Expr, Kernel, Local, walk
from ..lowering.lower import c_identifier, lower_node
from ..lowering.strategies import Kind, unknown_nodes
from ..targets.target import Target
from .hls_estimate import (
    URAM_WORD_BITS,
    ProcessModel,
    estimate,
    part_of,
    resources,
    stream_frames,
    uram_fifos,
    uram_frame,
)
from .hls_fold import Foldable, fold, fold_compute
from .hls_host import ports_header, runner, tcl, testbench, testbench_data
from .library import Sources
from .renderers.hls import PRELUDE, HlsRenderer

HLS_DIR = Path(__file__).parent / "hls"  # edgec_stream.h (package data)
# the integer ops whose requantization is float unless fixed-point held it (rq_shift)
REQUANTIZING = ("QLinearConv", "QGemm", "QLinearMatMul", "QLinearAdd",
                "QLinearGlobalAveragePool")
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


class _Design:
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
    d = _Design(graph, plan, target, name, strategies)
    d.split_edges()
    given = set(d.forced)  # (the user's; the folds below are the compiler's own)
    for node_name, (kind, pe, simd) in _plan_folds(d, part, clock_mhz, target_fps).items():
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
    for proc, ln in lowered:
        text, args = _process(d, r, proc, ln)
        processes.append(text)
        calls.append(f"    EDGEC_PROCESS({', '.join([proc, *args])});")
    _size_for_throughput(d, *_models(d, lowered, layers))
    _bind_fifos(d, lowered, layers, part)
    est = _estimate(d, lowered, layers, part, clock_mhz)
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


def ap_type(arr: np.ndarray) -> tuple[str, int]:
    """The narrowest arbitrary-precision type that holds every value of the integer array
    `arr`, as the macro EDGEC_ROM_INT / EDGEC_ROM_UINT (renderers/hls.py PRELUDE: `ap_int<N>`
    in synthesis, the narrowest C type in C-simulation), and N."""
    lo, hi = (int(arr.min()), int(arr.max())) if arr.size else (0, 0)
    if lo >= 0:
        bits = max(1, hi.bit_length())
        return f"EDGEC_ROM_UINT({bits}, uint{_native(bits)}_t)", bits
    bits = max(hi.bit_length(), (-lo - 1).bit_length()) + 1
    return f"EDGEC_ROM_INT({bits}, int{_native(bits)}_t)", bits


def _native(bits: int) -> int:
    return next(n for n in (8, 16, 32, 64) if bits <= n)


def accumulator_bound(node: Node) -> int | None:
    """The largest magnitude any partial sum of `node`'s integer kernel can take, proved from
    its constant weights, bias and zero points (the `acc` locals: bias + sum (x - zx)(w - zw),
    or a mean's sum of x); None where they are not all constants."""
    from ..ir.ops.quant import QUANT_RANGES, centred_conv_weights

    x = node.inputs[0]
    if x.dtype not in QUANT_RANGES:
        return None
    qmin, qmax = QUANT_RANGES[x.dtype]
    if node.op == "QLinearGlobalAveragePool":
        return max(-qmin, qmax) * int(np.prod(x.shape[2:]))
    spec = {"QLinearConv": (2, 3, 5, 8), "QGemm": (2, 3, 5, 6), "QLinearMatMul": (2, 3, 5, None)}
    if node.op not in spec:
        return None
    zx_i, w_i, zw_i, b_i = spec[node.op]
    zx, w, zw = node.input(zx_i), node.inputs[w_i], node.input(zw_i)
    b = node.input(b_i) if b_i is not None else None
    if node.attrs.get("benc") or any(v is not None and not v.is_const for v in (zx, w, zw, b)):
        return None
    z = 0 if zx is None else int(zx.const.reshape(-1)[0])
    span = max(qmax - z, z - qmin)
    if node.op == "QLinearConv":
        wc = centred_conv_weights(w.const, None if zw is None else zw.const)
        l1 = np.abs(wc.reshape(wc.shape[0], -1).astype(np.int64)).sum(1)
    else:
        bm = w.const.astype(np.int64)
        if node.attrs.get("transB"):
            bm = bm.T
        bm = bm - (0 if zw is None else zw.const.astype(np.int64).reshape(-1))
        l1 = np.abs(bm).sum(0)
    bias = 0 if b is None else np.abs(np.broadcast_to(b.const.astype(np.int64).reshape(-1),
                                                      l1.shape))
    return int((bias + span * l1).max(initial=0))


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


def _process(d: _Design, r: HlsRenderer, proc: str, ln) -> tuple[str, list[str]]:
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
    pe, simd = _fold_of(choice)
    parts = _array_partitions(choice, [s.value.type.numel for s in reads])
    body += [f"#pragma HLS ARRAY_PARTITION variable={a} {how}" for a, how in parts.items()]
    for a, v in [(f"a{j}", s.value) for j, s in enumerate(reads)] + \
            [(f"y{j}", v) for j, v in enumerate(node.outputs)]:
        if a not in parts and uram_frame(v.type.numel, 8 * v.dtype.itemsize):
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
UNITS = (Kind.HLS_MVAU, Kind.HLS_CONV_MVAU, Kind.HLS_SPARSE_MVAU, Kind.HLS_SPARSE_CONV,
         Kind.HLS_POOL, Kind.HLS_DEPTHWISE)
SPARSE_UNITS = (Kind.HLS_SPARSE_MVAU, Kind.HLS_SPARSE_CONV)
# (a dense unit folding chose where a sparse one would be the default: given as a strategy)
DENSE_KINDS = (Kind.HLS_MVAU.value, Kind.HLS_CONV_MVAU.value)
SPARSE_COMPLETE = 4096  # a sparse unit's input of at most this many values is registers


def _array_partitions(choice, reads: list[int]) -> dict[str, str]:
    """How a process partitions its frame arrays (a{j}, its inputs of `reads` elements, and
    y0) for its unit's folds: {array: ARRAY_PARTITION's arguments}. A folded matrix-vector
    unit reads SIMD inputs a cycle (cyclic; a convolution's unit partitions its own HWC copy
    instead); a pooling or depthwise unit's lane s the channels of block s (block, the
    output too); sparse PEs PE terms anywhere in A (registers where A is small, a bank per
    PE otherwise)."""
    pe, simd = _fold_of(choice)
    ins = [f"a{j}" for j in range(len(reads))]
    if simd > 1 and choice.kind is Kind.HLS_MVAU:
        return {a: f"cyclic factor={simd}" for a in ins}
    lanes = simd if choice.kind is Kind.HLS_POOL else pe \
        if choice.kind is Kind.HLS_DEPTHWISE else 1
    if lanes > 1:
        return {a: f"block factor={lanes}" for a in [*ins, "y0"]}
    if pe > 1 and choice.kind is Kind.HLS_SPARSE_MVAU:
        return {a: "complete" if n <= SPARSE_COMPLETE else f"cyclic factor={pe}"
                for a, n in zip(ins, reads, strict=True)}
    return {}


def _fold_of(choice) -> tuple[int, int]:
    """A strategy's (PE, SIMD): (1, 1) but for the units."""
    if choice.kind not in UNITS:
        return 1, 1
    params = dict(choice.params)
    return int(params.get("pe", 1)), int(params.get("simd", 1))


def _sparse_loads(d: _Design, node: Node, pe: int) -> tuple[int, float]:
    """A sparse unit's (busiest PE's entries, mean PE's) at `pe` PEs under the interleaved
    order (ir/sparse_pe.py), a row of A or a pixel."""
    from ..ir.sparse_pe import (
        interleaved_pe_order,
        pe_loads,
        sparse_conv_rows,
        sparse_rows,
        sparse_work,
    )

    key = (node.name, pe)  # (folding asks again and again)
    if key not in d.sparse_loads:
        if node.op == "QLinearConv":  # (the work per channel does not depend on the padding)
            w = node.inputs[3]
            rows = sparse_conv_rows(w, node.input(5), w.shape[1])
        else:
            rows = sparse_rows(node.inputs[3], node.input(5),
                               bool(node.attrs.get("transB")))
        work = sparse_work(rows)
        d.sparse_loads[key] = (int(pe_loads(work, interleaved_pe_order(work, pe), pe).max()),
                               float(work.sum()) / pe)
    return d.sparse_loads[key]


def _spread(busiest: int, mean: float) -> float:
    return busiest / mean if mean else 1.0


def _sparse_cycles(d: _Design, node: Node, pe: int, simd: int) -> int:
    """A sparse unit's compute cycles at `pe` PEs (quant_sparse_pe.py): its busiest PE's
    entries under the interleaved order, a row of A; a convolution's, plus its window's
    load (taps x channels / SIMD), a pixel, and the frame's copy into HWC order."""
    length = _sparse_loads(d, node, pe)[0]
    if node.op != "QLinearConv":
        return node.inputs[0].shape[0] * length
    y, (m, c, kh, kw) = node.output, node.inputs[3].shape
    pixels = y.type.numel // m
    return pixels * (length + kh * kw * -(-c // simd)) + node.inputs[0].type.numel


def _unit_shape(node: Node) -> tuple[int, int, int]:
    """A unit's (K, N, cycles besides its folds): a matrix product's terms and outputs; a
    convolution's input channels (SIMD runs over them) and output channels, and the frame's
    copy into HWC order (a cycle an element)."""
    if node.op == "QLinearConv":
        w, x = node.inputs[3], node.inputs[0]
        return w.shape[1], w.shape[0], x.type.numel
    b = node.inputs[3].const
    k, n = b.shape[::-1] if node.attrs.get("transB") else b.shape
    return k, n, 0


def _unit_candidates(node: Node) -> list:
    """The units a node could fold as, the sparse one (quant_sparse_pe.py) before the dense
    one (quant_mvau.py), those that apply."""
    from ..lowering.kernels.pool_unit import depthwise_unit_candidate, pool_unit_candidate
    from ..lowering.kernels.quant_mvau import conv_mvau_candidate, mvau_candidate
    from ..lowering.kernels.quant_sparse_pe import sparse_conv_candidate, sparse_mvau_candidate

    if node.op == "MaxPool":
        return [c for c in (pool_unit_candidate(node),) if c.applies]
    if node.op in ("QGemm", "QLinearMatMul"):
        bias = node.input(6) if node.op == "QGemm" else None
        args = (node, node.inputs[0], node.inputs[3], bias)
        makers = (sparse_mvau_candidate, mvau_candidate)
    elif node.op == "QLinearConv":
        args = (node, node.inputs[0], node.input(2), node.inputs[3], node.input(8))
        makers = (sparse_conv_candidate, conv_mvau_candidate, depthwise_unit_candidate)
    else:
        return []
    return [c for c in (make(*args) for make in makers) if c.applies]


def _work(node: Node) -> tuple[int, int]:
    """(MACs, compute cycles at one MAC or one element a cycle) of a process's node."""
    out = node.outputs[0].type.numel
    x = node.inputs[0]
    if node.op == "QLinearConv":
        macs = out * math.prod(node.inputs[3].shape[1:])
    elif node.op == "QGemm":
        macs = out * x.shape[0 if node.attrs.get("transA") else 1]
    elif node.op == "QLinearMatMul":
        macs = out * x.shape[-1]
    else:
        taps = math.prod(node.attrs.get("kernel_shape") or [1]) if node.op == "MaxPool" else 1
        return 0, x.type.numel if node.op == "QLinearGlobalAveragePool" else out * taps
    return macs, macs


def _foldable(d: _Design, node: Node, model: ProcessModel, unit) -> Foldable:
    """`node`'s process (`model` before folding) as the unit of candidate `unit`."""
    c_ = node.inputs[0].shape[1]
    if unit.kind is Kind.HLS_POOL:  # SIMD channels a cycle (the taps one after another)
        return Foldable(node, replace(model, pools=True), c_, 1, kind=unit.kind.value,
                        cost=lambda pe, simd: model.compute // simd, divisors=True)
    if unit.kind is Kind.HLS_DEPTHWISE:  # PE channels a cycle (FINN's vector-vector unit)
        w = node.inputs[3].const
        bound = accumulator_bound(node)
        return Foldable(node, replace(
            model, weight_bits=ap_type(w)[1], weights=w.size, requantizes=True,
            acc_bits=bound.bit_length() + 1 if bound is not None else 32), 1, c_,
            kind=unit.kind.value, cost=lambda pe, simd: model.compute // pe,
            folds_simd=False, divisors=True)
    b = node.inputs[3].const
    k, n, copy = _unit_shape(node)
    bound = accumulator_bound(node)
    cost, balance, sparse = None, None, {}
    if unit.kind in SPARSE_UNITS:  # the busiest PE's entries (and a window's load)
        cost = lambda pe, simd: _sparse_cycles(d, node, pe, simd)  # noqa: E731
        balance = lambda pe: _spread(*_sparse_loads(d, node, pe))  # noqa: E731
        rows = b.reshape(n, -1) if node.op == "QLinearConv" else \
            b if node.attrs.get("transB") else b.T
        sparse = {"lanes": 1, "index_bits": (b.size // n).bit_length() + (n + 1).bit_length(),
                  "weights": int(np.maximum(np.count_nonzero(rows, axis=1), 1).sum())}
    return Foldable(node, replace(
        model, weight_bits=ap_type(b)[1], weights=sparse.pop("weights", b.size),
        requantizes=True, **sparse, compute=cost(1, 1) if cost else model.compute + copy,
        buffers=model.buffers + [(copy, 8)] * bool(copy),
        acc_bits=bound.bit_length() + 1 if bound is not None else 32), k, n, copy,
        unit.kind.value, cost, unit.kind is not Kind.HLS_SPARSE_MVAU, balance)


def _plan_folds(d: _Design, part: str, clock_mhz: float,
                target_fps: float) -> dict[str, tuple[str, int, int]]:
    """Each matrix-vector unit's (kind, PE, SIMD) (codegen/hls_fold.py), from the processes
    as the cycle model sees them before their kernels are built; a node whose strategy was
    given keeps it."""
    fixed, foldable = [], []
    for v in d.port_in:
        fixed.append(ProcessModel("port", [("port", v.type.numel)], [], v.type.numel, 0,
                                  forwards=True))
    for node in d.nodes:
        if node.name in d.forced:
            continue
        srcs = {id(d.source(v)): d.source(v) for v in node.inputs
                if v is not None and not v.is_const}
        reads = [(s.name, s.type.numel) for s in srcs.values()]
        out = sum(v.type.numel for v in node.outputs)
        macs, compute = _work(node)
        model = ProcessModel(node.name, reads, [], out, compute, macs,
                             requantizes=node.op in REQUANTIZING,
                             frames=[(n, 8) for _, n in reads] + [(out, 8)])
        units = [_foldable(d, node, model, c) for c in _unit_candidates(node)]
        if not units:
            fixed.append(model)
            continue
        if len(units) == 2:  # (where the sparse unit cannot keep up: hls_fold.py)
            units[0].dense = units[1]
        foldable.append(units[0])
    return {name: (u.kind, pe, simd) for name, (u, pe, simd) in
            fold(fixed, foldable, part, clock_mhz, target_fps).items()}


def _size_for_throughput(d: _Design, procs: list[ProcessModel],
                         producers: dict[str, str]) -> None:
    """Each stream between two processes deep enough for the frames in flight on it (module
    doc), never shallower than `wire` made it."""
    frames = stream_frames(procs, producers)
    for s in d.streams:
        if s.port is None and s.name in frames:
            s.depth = max(s.depth, frames[s.name] * s.value.type.numel)


def _estimate(d: _Design, lowered: list, layers: list[dict], part: str,
              clock_mhz: float) -> dict:
    """codegen/hls_estimate.py's estimate of the design: its processes as the cycle model
    sees them, its FIFOs, latency, frames per second, resources."""
    procs, producers = _models(d, lowered, layers)
    port_streams = {s.name for s in d.streams if s.port is not None}
    fifos = {s.name: (s.depth, 8 * s.value.dtype.itemsize, s.uram) for s in d.streams
             if s.name not in port_streams}
    return estimate(procs, producers, fifos, sorted(port_streams), part, clock_mhz)


def _bind_fifos(d: _Design, lowered: list, layers: list[dict], part: str) -> None:
    """The FIFOs hls_estimate.uram_fifos binds to URAM, given what the processes take."""
    limits = part_of(part)
    if limits is None:
        return
    procs, _ = _models(d, lowered, layers)
    used = [resources(p) for p in procs]
    internal = [s for s in d.streams if s.port is None]
    chosen = uram_fifos([(s.name, s.depth, 8 * s.value.dtype.itemsize) for s in internal],
                        sum(r["bram18"] for r in used), sum(r["uram"] for r in used), limits)
    for s in internal:
        s.uram = s.name in chosen


def _models(d: _Design, lowered: list, layers: list[dict]
            ) -> tuple[list[ProcessModel], dict[str, str]]:
    """The design's processes as the cycle model sees them (at their folds), and the process
    writing each stream."""
    procs: list[ProcessModel] = []
    producers: dict[str, str] = {}
    for k, v in enumerate(d.port_in):
        outs = [s.name for s in d.writes.get(id(v), [])]
        procs.append(ProcessModel(f"P_in{k}", [(f"port_in{k}", v.type.numel)], outs,
                                  v.type.numel, 0, forwards=True))
    for (proc, ln), layer in zip(lowered, layers, strict=True):
        node = ln.node
        macs, compute = _work(node)
        reads = [(s.name, s.value.type.numel) for s in d.reads.get(proc, [])]
        writes = [s.name for v in node.outputs for s in d.writes.get(id(v), [])]
        roms = layer["rom_bits"]
        choice = ln.strategy.choice
        pe, simd = _fold_of(choice)
        copy = 0
        weights = max((b for b, v in zip(ln.kernel.params, ln.bindings, strict=True)
                       if v.is_const and b.name in roms), default=None,
                      key=lambda b: b.numel)
        weight_bits = roms[weights.name] if weights is not None and macs else 0
        sparse = {}
        if choice.kind in SPARSE_UNITS:  # a PE's entry: weight, term, channel
            compute = _sparse_cycles(d, node, pe, simd)
            weight_bits = next(bits for name, bits in roms.items() if name.startswith("sval"))
            sparse = {"lanes": 1, "index_bits": sum(
                bits for name, bits in roms.items() if name.startswith(("sterm", "sout")))}
        elif choice.kind is Kind.HLS_POOL:  # (SIMD divides the channels)
            compute //= simd
        elif choice.kind is Kind.HLS_DEPTHWISE:  # (PE divides the channels)
            compute //= pe
        elif choice.kind in UNITS:  # (padded to whole folds where they do not divide)
            k, n, copy = _unit_shape(node)
            compute = fold_compute(macs, k, n, pe, simd) + copy
        pools = choice.kind is Kind.HLS_POOL
        # its frame arrays: whole (large ones in URAM), or partitioned into banks
        ins = [(x.value.type.numel, 8 * x.value.dtype.itemsize) for x in d.reads.get(proc, [])]
        arrays = [(f"a{j}", n, w) for j, (n, w) in enumerate(ins)] + \
            [(f"y{j}", v.type.numel, 8 * v.dtype.itemsize) for j, v in enumerate(node.outputs)]
        banks = {a: int(how.rsplit("=", 1)[1]) if "=" in how else n for a, how in
                 _array_partitions(choice, [n for n, _ in ins]).items()
                 for a2, n, _ in arrays if a2 == a}
        procs.append(ProcessModel(
            proc, reads, writes, sum(v.type.numel for v in node.outputs), compute, macs,
            pe=pe, simd=simd, weight_bits=weight_bits, **sparse, pools=pools,
            weights=weights.numel if weights is not None and macs else 0,
            act_bits=8 * node.inputs[0].dtype.itemsize, acc_bits=layer["accumulator_bits"] or 0,
            requantizes=node.op in REQUANTIZING,
            frames=[(n, w) for a, n, w in arrays if a not in banks],
            buffers=[(-(-n // banks[a]), w) for a, n, w in arrays if a in banks
                     for _ in range(banks[a])] +
                    # a convolution's unit: its HWC copy of the frame, in SIMD memories
                    [(-(-copy // simd), 8)] * (simd if copy else 0)))
    for p in procs:
        for s in p.writes:
            producers[s] = p.name
    return procs, producers


