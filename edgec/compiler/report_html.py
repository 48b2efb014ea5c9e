"""`edgec compile --report html`: one self-contained page about a compile: the graph before and
after the passes (drawn, and as text IR), each kernel's latency measured on this host, the
arena's memory timeline and, where they apply, each layer's quantization error and weight
sparsity. The page loads nothing (no scripts, no other files: the plots are inline SVG drawn
with matplotlib) and every name from the model is HTML-escaped.

The graph drawing puts a node in the row of its depth, d(n) = 1 + max d(producers of its
inputs) (graph inputs at 0, a graph output one row below its producer): the rows are the
topological generations of the drawing's DAG (networkx). Each row is ordered once by the mean
column of the nodes' producers (the barycentre), which keeps chains straight.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html import escape
from pathlib import Path

import networkx as nx
import numpy as np

from ..errors import EdgecError
from ..ir.dtypes import DType
from ..ir.graph import Graph
from ..ir.printer import print_graph, print_value
from ..ir.records import MemoryPlan, QuantizationRecord
from ..targets.target import Target, missing_host_flags

LATENCY_RUNS = 5  # timed passes over one random input, after a warm-up pass
BOX_W, BOX_H, GAP_X, GAP_Y = 176, 44, 14, 26  # the graph drawing's boxes and gaps, px
NAME_CHARS = 25  # of a line of a node's box: its op, then its name on two lines (the
# tooltip has all of it)
LABEL_CHARS = 60  # of a name as a plot's label (a kernel's is cut at 60)
# a node's fill by what its op is: the first row with a word in the op's name
FILLS = ((("Sparse",), "#d3f0d3"), (("Quant", "QLinear", "QGemm"), "#fde2c8"),
         (("Conv", "MatMul", "Gemm"), "#d5e5f6"),
         (("Reorder", "Pad", "Stage", "Reshape", "Flatten", "Transpose"), "#ececec"))
EDGE_FILL = "#fff8d0"  # graph inputs and outputs
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em 2em;color:#222}
h2{margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;max-width:100%}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.name{overflow-wrap:anywhere;min-width:12em}
tr.total td{font-style:italic}
.wide{overflow-x:auto}
.scroll{overflow:auto;max-height:85vh;border:1px solid #ddd;margin:.5em 0}
svg.plot{max-width:100%;height:auto}
.graph text{font:11px monospace;text-anchor:middle}
.graph .op{font-weight:bold}
pre{font-size:12px;overflow:auto;max-height:70vh;background:#f6f6f6;padding:.5em}
.note{color:#a04000}
"""
NO_MATPLOTLIB = "<p class=\"note\">(no plot: it needs matplotlib, pip install 'edgec[report]')</p>"


def write_report(out: Path, before: Graph, after: Graph, manifest: dict,
                 target: Target) -> Path:
    """out/report.html on the compile of `before` into `after` (the graph the pipeline left,
    its memory plan and quantization record in its compile record), whose artifact is in
    `out`."""
    latency, note = kernel_latency(out, manifest, target)
    text = page(before, after, manifest, after.record.need("memory_plan", "the HTML report"),
                after.record.quantization, latency, note)
    path = out / "report.html"
    path.write_text(text, encoding="utf-8")
    return path


def kernel_latency(out: Path, manifest: dict,
                   target: Target) -> tuple[dict[str, float] | None, str]:
    """Nanoseconds per run of each kernel of the artifact in `out`, at one thread on one
    random input (compiler/profile.py); None and why where they cannot be measured."""
    from .profile import kernel_times

    if manifest.get("artifact") == "hls-project":
        return None, "not measured: an HLS design's cycles are estimated (its section below)"
    if missing_host_flags(target) or target.cross:
        return None, f"not measured: this host cannot run {target.name} code"
    if manifest.get("sanitize"):
        return None, "not measured: the library is built with --sanitize (its times would " \
                     "be the sanitizers')"
    rng = np.random.default_rng(0)
    feed = {}
    for x in manifest["inputs"]:
        dt = DType(x["dtype"]).np
        # integers (indices, token ids) as zeros: in range whatever they index
        feed[x["name"]] = rng.standard_normal(x["shape"]).astype(dt) \
            if np.issubdtype(dt, np.floating) else np.zeros(x["shape"], dt)
    try:
        times = kernel_times(out, [feed], runs=LATENCY_RUNS)
    except (EdgecError, OSError, KeyError, ValueError, StopIteration) as e:
        return None, f"not measured: timing failed: {e}"
    if not times:
        return None, f"not measured: no kernel call to time in {manifest['name']}.c"
    return times, ""


def page(before: Graph, after: Graph, manifest: dict, plan: MemoryPlan,
         quantization: QuantizationRecord | None, latency: Mapping[str, float] | None,
         latency_note: str = "") -> str:
    """The report as one HTML page: `plan` the memory plan (passes/plan_memory.py),
    `quantization` the quantize pass's record (or None), `latency` ns per kernel (or None,
    `latency_note` saying why)."""
    kernels = {s["node"]: s for s in manifest["kernel_strategies"]}
    notes = {node: f"kernel {s['kernel']}: {s['strategy']}" +
             (f", {latency[s['kernel']] / 1e3:.2f} us" if latency and s["kernel"] in latency
              else "") for node, s in kernels.items()}
    sections = [
        ("summary", "Summary", _summary(before, after, manifest)),
        ("graph-before", "The graph before the passes", _graph(before, "before")),
        ("graph-after", "The graph after the passes", _graph(after, "after", notes)),
        ("latency", "Latency per kernel", _latency(manifest, latency, latency_note)),
        ("memory", "Memory: the arena over time", _memory(after, plan, manifest))]
    if quantization is not None:
        sections.append(("quantization", "Quantization error per layer",
                         _quantization(quantization)))
    sparse = sparse_layers(after, kernels)
    if sparse:
        sections.append(("sparsity", "Weight sparsity per layer", _sparsity(sparse)))
    if "hls" in manifest:
        sections.append(("hls", "The HLS design: estimates before synthesis",
                         _hls(manifest["hls"])))
    nav = " | ".join(f'<a href="#{key}">{escape(title)}</a>' for key, title, _ in sections)
    body = "\n".join(f'<section id="{key}">\n<h2>{escape(title)}</h2>\n{html}\n</section>'
                     for key, title, html in sections)
    name = escape(manifest["name"])
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            # nothing may load or run, whatever a name smuggled in
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">\n"
            f"<title>edgec report: {name}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"<h1>edgec report: {name} for {escape(manifest['target'])}</h1>\n"
            f"<nav>{nav}</nav>\n{body}\n</body>\n</html>\n")


# -- the sections ---------------------------------------------------------------------------
def _summary(before: Graph, after: Graph, m: dict) -> str:
    facts = [("model", m["name"]), ("source", m["source"] or "-"),
             ("edgec", m["edgec_version"]),
             ("target", f"{m['target']} ({m['backend']} backend, vector ISA "
                        f"{m['vector_isa'] or 'none'}, {'' if m['threads'] else 'no '}threads)"),
             ("pipeline", m["pipeline"]), ("inputs", _tensors(m["inputs"])),
             ("outputs", _tensors(m["outputs"])),
             ("nodes", f"{len(before.nodes)} before the passes, {len(after.nodes)} after; "
                       f"{m['kernels']} kernels"),
             ("workspace", f"{m['workspace_bytes']} bytes"),
             ("weights", f"{m['weights']['packed_bytes']} bytes as stored "
                         f"({m['weights']['float32_bytes']} as float32)")]
    ops_before, ops_after = before.op_counts(), after.op_counts()
    ops = sorted(set(ops_before) | set(ops_after))
    return (_table("facts", [], facts) +
            "<p>Ops before and after the passes:</p>" +
            _table("ops", ["op", "before", "after"],
                   [(op, ops_before.get(op, 0), ops_after.get(op, 0)) for op in ops]))


def _tensors(xs: list[dict]) -> str:
    return ", ".join(f"{x['name']}: {x['dtype']}{x['shape']}" for x in xs)


def _graph(graph: Graph, key: str, notes: Mapping[str, str] | None = None) -> str:
    return (f"<p>{len(graph.nodes)} nodes; hover over a node for its types and attributes.</p>"
            f'<div class="scroll">{graph_svg(graph, key, notes)}</div>'
            f"<details><summary>text IR</summary><pre>"
            f"{escape(print_graph(graph, elide=True))}</pre></details>")


def _latency(m: dict, latency: Mapping[str, float] | None, note: str) -> str:
    rows = m["kernel_strategies"]
    total = sum(latency.values()) if latency else 0.0
    table = _table("latency-kernels", ["kernel", "node", "op", "strategy", "us per run",
                                       "share"],
                   [(Name(s["kernel"]), Name(s["node"]), s["op"], s["strategy"],
                     *((f"{latency[s['kernel']] / 1e3:.3f}",
                        f"{latency[s['kernel']] / (total or 1):.1%}")
                       if latency and s["kernel"] in latency else ("-", "-")))
                    for s in rows])
    if latency is None:
        return f'<p class="note">Latency {escape(note)}.</p>{table}'
    head = (f"<p>Measured on this host: one thread, the mean of {LATENCY_RUNS} runs on a "
            f"random input after a warm-up run; {total / 1e3:.2f} us in all kernels.</p>")
    plot = _plot("latency-plot", _latency_figure, [s["kernel"] for s in rows],
                 [latency.get(s["kernel"], 0.0) / 1e3 for s in rows])
    return f'{head}<div class="scroll">{plot}</div>{table}'


def _memory(after: Graph, plan: MemoryPlan, m: dict) -> str:
    order = sorted(plan.offsets, key=lambda v: (plan.offsets[v], v))
    facts = [("arena bytes", m["memory"]["arena_bytes"]),
             ("activations without reuse, bytes", plan.total_bytes),
             ("lower bound (the most bytes live at once)", plan.lower_bound_bytes),
             ("buffers", len(order)), ("views aliased", len(plan.aliases)),
             ("alignment, bytes", plan.alignment),
             ("placement order", plan.strategy or "-")]
    def at(i: int) -> str:  # a position in the program, and its node
        return f"{i} {after.nodes[i].name}" if i < len(after.nodes) else str(i)

    buffers = _table("memory-buffers", ["value", "offset", "bytes", "first use", "last use"],
                     [(Name(v), plan.offsets[v], plan.sizes.get(v, 0),
                       *(Name(at(i)) for i in plan.lifetimes.get(v, (0, 0)))) for v in order])
    views = _table("memory-views", ["view", "reads the bytes of"],
                   [(Name(v), Name(a)) for v, a in sorted(plan.aliases.items())])
    plot = _plot("memory-plot", _memory_figure, plan, order, len(after.nodes)) if order else ""
    return (_table("memory-summary", [], facts) + plot +
            f"<details><summary>{len(order)} buffers</summary>{buffers}</details>" +
            f"<details><summary>{len(plan.aliases)} views</summary>{views}</details>")


def _quantization(q: QuantizationRecord) -> str:
    layers = q.layers
    head = (f"<p>{q.bits}-bit weights ({escape(str(q.weights))}, per "
            f"{escape(str(q.granularity))}), uint8 activations "
            f"({escape(str(q.calibration))}, {q.samples} samples): the outputs' SQNR "
            f"against float {_number(q.output_sqnr_db)} dB"
            + (f", budget {q.budget_db} dB" if q.budget_db else "")
            + (f"; kept float: {escape(', '.join(q.kept_float))}" if q.kept_float else "")
            + ". A layer's SQNR is that of its output: its error and that of all before it.</p>")
    other = q.latency.other if q.latency is not None else None
    note = q.latency.note if q.latency is not None else None
    table = _table("quantization-layers", ["layer", "op", "kept float", "SQNR (dB)",
                                           "share of MACs", "share of latency"],
                   [(Name(x["node"]), x["op"], "yes" if x["float"] else "no",
                     _number(x["sqnr_db"]), _number(x.get("mac_share"), ".1%"),
                     _latency_share(x)) for x in layers],
                   total=("other kernels", "-", "-", "-", "-", _number(other, ".1%")))
    if other is not None:
        head += ("<p>A layer's share of latency is that of the kernels that run it, timed on "
                 "the calibration samples; a layer fused into another's kernel (a residual add "
                 "in its convolution's) takes its time there. The other kernels (layout "
                 "changes, padding, pooling, quantize and dequantize at the edges) make the "
                 "column add up to 100%.</p>")
    elif note:
        head += f'<p class="note">{escape(note)}.</p>'
    return head + _plot("quantization-plot", _quantization_figure, q) + table


def _latency_share(x: dict) -> str:
    if x.get("in_kernel_of"):
        return f"in the kernel of {x['in_kernel_of']}"
    return _number(x.get("latency_share"), ".1%")


def _number(x: float | None, spec: str = "") -> str:
    return "-" if x is None else format(x, spec)


@dataclass(frozen=True)
class SparseLayer:
    """A row of the sparsity section: a layer whose weights hold zeros, and the kernel that
    runs it (its manifest entry; None where no kernel is named after it)."""
    name: str
    op: str
    zeros: float  # the share of its weights that are zero
    kernel: dict | None
    stored: str  # its weights' encoding (a wenc or benc attribute), or "dense"
    cost: float | None = None  # the cost model's sparse / dense estimate (float layers)

    @property
    def density(self) -> float | None:
        """The share of the layer's weights its kernel stores and computes, as the kernel's
        strategy gives it ('sparse int8 conv dot4 groups, density 0.20'); None: dense."""
        m = re.search(r"\bsparse\b.*?\bdensity (\d+(?:\.\d+)?)", self.strategy)
        return float(m.group(1)) if m else None

    @property
    def strategy(self) -> str:
        return self.kernel["strategy"] if self.kernel else "-"


def sparse_layers(graph: Graph, kernels: Mapping[str, dict]) -> list[SparseLayer]:
    """The layers whose weights hold zeros: those the sparsify pass planned (float, their
    node's record.sparse), then those the prune pass zeroed (graph.record.pruning) that it
    did not plan (a quantized layer is another node by then: the integer op named after its
    fused output, whose kernel may run its zeros sparse too; a convolution whose kernel
    does a residual add too is named after the add's output: its record.fused names the
    nodes it took in)."""
    nodes = {n.name: n for n in graph.nodes}
    nodes |= {f: n for n in graph.nodes for f in n.record.fused if f not in nodes}
    out = []
    for n in graph.nodes:
        s = n.record.sparse
        if s is not None:
            out.append(SparseLayer(n.name, n.op, 1 - s.density,
                                   kernels.get(n.name) or kernels.get(n.name + "_nchwc"),
                                   n.attrs.get("wenc") or "dense", s.sparse_cost / s.dense_cost))
    pruning = graph.record.pruning
    if pruning is None:
        return out
    seen = {n.record.sparse.layer for n in graph.nodes if n.record.sparse is not None}
    quant = graph.record.quantization
    quantized = {x["node"]: x["output"] for x in (quant.layers if quant else []) if not x["float"]}
    for x in pruning.layers:
        if x.node in seen or not x.zeros:
            continue
        names = [x.node] + [o + q for o in (x.output, quantized.get(x.node, ""))
                            if o for q in ("_QuantizeLinear", "")]
        node = next((nodes[k] for n in names for k in (n, n + "_nchwc")
                     if k in nodes and nodes[k].name in kernels), None)
        enc = node and (node.attrs.get("wenc") or node.attrs.get("benc"))
        out.append(SparseLayer(x.node, x.op, x.zeros,
                               kernels[node.name] if node else None, enc or "dense"))
    return out


def _sparsity(layers: list[SparseLayer]) -> str:
    rows = [(Name(x.name), x.op, f"{x.zeros:.4f}", Name(x.kernel["kernel"]) if x.kernel else "-",
             x.strategy, Name(x.stored), _number(x.density, ".2f"), _number(x.cost, ".2f"))
            for x in layers]
    head = ("<p>Each convolution and matrix product whose weights hold zeros: the share of "
            "them that are zero, the kernel that runs it and how (its strategy, as in the "
            "latency table and report.txt), how its weights are stored, the share of them "
            "the sparse kernel stores and computes (its blocks or groups, zeros they hold "
            "included; -: the kernel runs dense), and for float layers the cost model's "
            "estimate of the sparse kernel against the dense one (passes/sparsify.py; below 1 "
            "runs sparse). Integer convolutions and matrix products run sparse where at most "
            "half of their dot4 groups (a vector of output channels x 4 inputs) hold a "
            "weight.</p>")
    table = _table("sparsity-layers", ["layer", "op", "zero weights", "kernel",
                                       "kernel strategy", "stored as", "density",
                                       "sparse / dense cost"], rows)
    plot = _plot("sparsity-plot", _sparsity_figure, [x.name for x in layers],
                 [x.zeros for x in layers], [x.density is not None for x in layers])
    return head + plot + table


class Name(str):
    """A table cell that holds a name from the model: shown whole, and wrapped after its
    separators where the column is narrower ('/layer2/layer2.0/bn2/Batch...')."""


def _hls(h: dict) -> str:
    """The design's estimate (codegen/hls_estimate.py): the whole, each process, each FIFO."""
    e = h["estimate"]
    m, sim, t = e["model"], e["simulation"], e["total"]
    part = e.get("part_resources")
    fit = "unknown part" if part is None else "yes" if e["fits"] else "no"
    facts = [("part, clock", f"{h['part']}, {h['clock_mhz']:g} MHz"),
             ("latency (cycle model)", f"{m['latency_cycles']} cycles, "
                                       f"{m['latency_ms']:.4g} ms"),
             ("frames per second", f"{m['fps']:.4g} (interval {m['interval_cycles']} cycles)"),
             ("dataflow simulation", "deadlocked" if sim["latency_cycles"] is None else
              f"latency {sim['latency_cycles']} cycles ({sim['latency_vs_model']:+.1%}), "
              f"interval {sim['interval_cycles']} cycles ({sim['interval_vs_model']:+.1%}), "
              f"{sim['frames']} frames"),
             ("LUT, DSP, BRAM18, URAM", f"{t['lut']}, {t['dsp']}, {t['bram18']}, {t['uram']}" +
              (f" of {part['lut']}, {part['dsp']}, {part['bram18']}, {part['uram']}"
               if part else "")),
             ("fits the part", fit)]
    warn = "".join(f"<p class=\"note\">warning: {escape(w)}</p>" for w in e["warnings"])
    widths = {x["process"]: x for x in h["layers"]}
    layers = [(Name(x["process"]), x["cycles"], x["compute_cycles"], x["macs"], x["pe"],
               x["simd"], widths.get(x["process"], {}).get("accumulator_bits") or "",
               x["lut"], x["dsp"], x["bram18"]) for x in e["layers"]]
    fifos = [(Name(k), f["depth"], f["width"], f.get("peak", ""), f["lut"], f["bram18"])
             for k, f in e["fifos"].items()]
    return (warn + _table("hls-summary", [], facts) +
            _table("hls-layers", ["process", "cycles", "computing", "MACs", "PE", "SIMD",
                                  "sum bits", "LUT", "DSP", "BRAM18"], layers) +
            _table("hls-fifos", ["stream", "depth", "bits", "peak", "LUT", "BRAM18"], fifos))


def _table(key: str, head: list[str], rows, total: tuple | None = None) -> str:
    """An HTML table `key` of `rows` (numbers right-aligned, `Name`s wrapped) under the
    column names `head` (none: a table of facts, name then value), in a box that scrolls
    sideways rather than widen the page; `total`: a last row, set apart."""
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(map(_cell, r)) + "</tr>\n" for r in rows)
    if total:
        body += '<tr class="total">' + "".join(map(_cell, total)) + "</tr>\n"
    return (f'<div class="wide"><table id="{key}">' +
            (f"<thead><tr>{th}</tr></thead>" if th else "") +
            f"<tbody>\n{body}</tbody></table></div>")


def _cell(x) -> str:
    if isinstance(x, int | float):
        return f'<td class="n">{x}</td>'
    if isinstance(x, Name):
        return f'<td class="name">{_wrappable(x)}</td>'
    return f"<td>{escape(str(x))}</td>"


def _wrappable(name: str) -> str:
    """`name` as HTML that may break after each '/', '_' or '.' (and anywhere, by the
    stylesheet, in a run too long for its column)."""
    return "".join(escape(part) + ("<wbr>" if part[-1:] in "/_." else "")
                   for part in re.split(r"(?<=[/_.])", name) if part)


# -- the graph drawing ----------------------------------------------------------------------
def _fill(op: str) -> str:
    return next((c for words, c in FILLS if any(w in op for w in words)), "#ffffff")


def _clip(text: str, n: int = NAME_CHARS) -> str:
    """`text` in `n` characters at most, cut in the middle: its start says where in the
    model ('/layer2/layer2.0/bn2/...'), its end what the passes made of it
    ('..._QuantizeLinear_nchwc'); a cut at either end would leave names alike."""
    if len(text) <= n:
        return text
    head = (n - 1) // 2
    return text[:head] + "\u2026" + text[len(text) - (n - 1 - head):]


def _name_lines(name: str) -> list[str]:
    """A node's name in its box: one line, or two of `NAME_CHARS` (cut in the middle past
    that)."""
    if len(name) <= NAME_CHARS:
        return [name]
    text = _clip(name, 2 * NAME_CHARS)
    half = -(-len(text) // 2)
    return [text[:half], text[half:]]


def _attr_text(value) -> str:
    if isinstance(value, Graph):
        return f"graph @{value.name} ({len(value.nodes)} nodes)"
    if isinstance(value, np.ndarray):
        return f"array{list(value.shape)}"
    text = str(value)
    return text if len(text) <= 80 else text[:79] + "\u2026"


def graph_svg(graph: Graph, key: str, notes: Mapping[str, str] | None = None) -> str:
    """`graph` drawn top to bottom as SVG (the module docstring); `key` makes its ids unique
    in the page; `notes`: a line more in a node's tooltip, by node name."""
    notes = notes or {}
    boxes: list[tuple[str, str, str, str]] = []  # (first line, name, tooltip, fill)
    edges: dict[tuple[int, int], str] = {}  # (from box, to box) -> the value's text
    box_of: dict[int, int] = {}  # id(node or graph input) -> box
    below_inputs: list[int] = []  # nodes of constants only: a row below the inputs'

    def add(line: str, name: str, tip: str, fill: str, sources: list) -> None:
        i = len(boxes)
        boxes.append((line, name, tip, fill))
        for s, v in sources:
            edges.setdefault((s, i), print_value(v))

    def source(v) -> int | None:
        return box_of.get(id(v.producer if v.producer is not None else v))

    for v in graph.inputs:
        box_of[id(v)] = len(boxes)
        add("input", v.name, print_value(v), EDGE_FILL, [])
    for n in graph.nodes:
        box_of[id(n)] = len(boxes)
        tip = "\n".join([f"{n.op} {n.name}", *(print_value(v) for v in n.outputs),
                         *(f"{k} = {_attr_text(a)}" for k, a in n.attrs.items()),
                         *([notes[n.name]] if n.name in notes else [])])
        ins = [(source(v), v) for v in n.inputs if v is not None and not v.is_const]
        sources = [(s, v) for s, v in ins if s is not None]
        if not sources:
            below_inputs.append(len(boxes))
        add(n.op, n.name, tip, _fill(n.op), sources)
    for v in graph.outputs:
        s = source(v)
        add("output", v.name, print_value(v), EDGE_FILL, [(s, v)] if s is not None else [])

    dag = nx.DiGraph(list(edges))
    dag.add_nodes_from(range(len(boxes)))
    dag.add_edges_from((-1, i) for i in below_inputs)  # -1: a box-less node in the inputs' row
    rows = {d: sorted(i for i in gen if i >= 0)
            for d, gen in enumerate(nx.topological_generations(dag))}
    depth = {i: d for d, row in rows.items() for i in row}
    preds: dict[int, list[int]] = {}
    for s, t in edges:
        preds.setdefault(t, []).append(s)
    col: dict[int, float] = {}
    for d in sorted(rows):
        row = sorted(rows[d], key=lambda i: (np.mean([col[s] for s in preds[i]])
                                             if i in preds else 0.0, i))
        col |= {i: k - (len(row) - 1) / 2 for k, i in enumerate(row)}
    width = max(map(len, rows.values()), default=1) * (BOX_W + GAP_X) + GAP_X + 2 * GAP_Y
    height = (max(rows, default=0) + 1) * (BOX_H + GAP_Y) + GAP_Y
    x = {i: width / 2 + c * (BOX_W + GAP_X) for i, c in col.items()}
    y = {i: GAP_Y + depth[i] * (BOX_H + GAP_Y) for i in col}

    out = [f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
           f'height="{height}" viewBox="0 0 {width:.0f} {height}">',
           f'<defs><marker id="{key}-arrow" viewBox="0 0 8 8" refX="8" refY="4" '
           'markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L8,4L0,8z" '
           'fill="#888"/></marker></defs>']
    for (s, t), tip in edges.items():
        x1, y1, x2, y2 = x[s], y[s] + BOX_H, x[t], y[t]
        if depth[t] - depth[s] < 2:
            g = (y2 - y1) / 2
            d = f"M{x1:.0f},{y1} C{x1:.0f},{y1 + g} {x2:.0f},{y2 - g} {x2:.0f},{y2}"
        else:  # over rows between: down a lane beside the source's column, past its boxes
            lane = x1 + (BOX_W / 2 + 6) * (-1 if col[t] < 0 else 1)
            d = (f"M{x1:.0f},{y1} C{x1:.0f},{y1 + GAP_Y} {lane:.0f},{y1} {lane:.0f},"
                 f"{y1 + GAP_Y} L{lane:.0f},{y2 - GAP_Y} C{lane:.0f},{y2} {x2:.0f},"
                 f"{y2 - GAP_Y} {x2:.0f},{y2}")
        out.append(f'<path d="{d}" fill="none" stroke="#999" '
                   f'marker-end="url(#{key}-arrow)"><title>{escape(tip)}</title></path>')
    for i, (line, name, tip, fill) in enumerate(boxes):
        round_ = BOX_H / 2 if fill == EDGE_FILL else 4
        lines = _name_lines(name)
        text = "".join(f'<text x="{x[i]:.0f}" y="{y[i] + 27 + 12 * k + 6 * (2 - len(lines))}"'
                       f'>{escape(t)}</text>' for k, t in enumerate(lines))
        out.append(f'<g><title>{escape(tip)}</title><rect x="{x[i] - BOX_W / 2:.0f}" '
                   f'y="{y[i]}" width="{BOX_W}" height="{BOX_H}" rx="{round_:.0f}" '
                   f'fill="{fill}" stroke="#555"/><text x="{x[i]:.0f}" y="{y[i] + 14}" '
                   f'class="op">{escape(_clip(line))}</text>{text}</g>')
    out.append("</svg>")
    return "\n".join(out)


# -- the plots ------------------------------------------------------------------------------
def _plot(key: str, draw: Callable, *args) -> str:
    """The matplotlib figure `draw(*args)` makes, as inline SVG (its text as text), its ids
    (matplotlib's 'axes_1', 'ytick_3', ... in every figure) starting with `key`-."""
    try:
        import matplotlib
    except ImportError:
        return NO_MATPLOTLIB
    fig = draw(*args)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "edgec"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg[svg.index("<svg"):], flags=re.S)
    svg = re.sub(r'(\bid="|url\(#|href="#)', rf"\g<1>{key}-", svg)
    return svg.replace("<svg ", f'<svg class="plot" id="{key}" ', 1)


def _label(name: str) -> str:
    """A name as a plot label: clipped, printable, its $ escaped (matplotlib reads $...$ as
    mathematics)."""
    text = "".join(c if c.isprintable() else "?" for c in _clip(name, LABEL_CHARS))
    return text.replace("$", r"\$")


def _bars(n: int, height: float = 3.0):
    """A figure for `n` horizontal bars, tall enough for a label each."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, max(height, 0.6 + 0.18 * n)), layout="constrained")
    ax = fig.add_subplot()
    ax.invert_yaxis()  # the first one at the top
    return fig, ax


def _latency_figure(kernels: list[str], us: list[float]):
    fig, ax = _bars(len(kernels))
    ax.barh(range(len(kernels)), us, color="tab:blue")
    ax.set_yticks(range(len(kernels)), [_label(k) for k in kernels], fontsize=7)
    ax.set_xlabel("microseconds per run (one thread)")
    return fig


def _memory_figure(plan: MemoryPlan, order: list[str], positions: int):
    """Each buffer of `order` a box: its bytes in the arena over the nodes it lives across
    (`gid` buffer-<index>), with the arena's top and the bytes live at each node."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    fig = Figure(figsize=(9, 4), layout="constrained")
    ax = fig.add_subplot()
    live = np.zeros(positions + 1)
    colors = [f"C{i % 10}" for i in range(len(order))]
    for i, v in enumerate(order):
        a, b = plan.lifetimes.get(v, (0, 0))
        kib = plan.sizes.get(v, 0) / 1024
        live[a:b + 1] += kib
        ax.add_patch(Rectangle((a - 0.45, plan.offsets[v] / 1024), b - a + 0.9, kib,
                               facecolor=colors[i], edgecolor="black", lw=0.4, alpha=0.8,
                               gid=f"buffer-{i}"))
    arena = plan.arena_bytes / 1024
    ax.axhline(arena, color="tab:red", ls="--", lw=1, label=f"arena: {plan.arena_bytes} bytes")
    ax.step(range(positions + 1), live, where="mid", color="dimgray", lw=1, ls=":",
            label="KiB live (the lower bound: its peak)")
    ax.set_xlim(-1, max(positions, 1))
    ax.set_ylim(0, max(arena, live.max(), 1e-3) * 1.08)
    ax.set_xlabel("node (program order)")
    ax.set_ylabel("offset in the arena (KiB)")
    ax.legend(loc="upper right", fontsize=8)
    return fig


def _quantization_figure(q: QuantizationRecord):
    layers = q.layers
    fig, ax = _bars(len(layers))
    sqnr = [x["sqnr_db"] if x["sqnr_db"] is not None else 0 for x in layers]
    ax.barh(range(len(layers)), sqnr,
            color=["tab:gray" if x["float"] else "tab:orange" for x in layers])
    ax.set_yticks(range(len(layers)), [_label(x["node"]) for x in layers], fontsize=7)
    if q.budget_db:
        ax.axvline(q.budget_db, color="tab:red", ls="--", lw=1)
    ax.set_xlabel("SQNR of the layer's output against float (dB); grey: kept float")
    return fig


def _sparsity_figure(names: list[str], zeros: list[float], sparse: list[bool]):
    fig, ax = _bars(len(names), 2.0)
    ax.barh(range(len(names)), [100 * z for z in zeros],
            color=["tab:green" if s else "tab:gray" for s in sparse])
    ax.set_yticks(range(len(names)), [_label(n) for n in names], fontsize=7)
    ax.set_xlim(0, 100)
    ax.set_xlabel("zero weights (%); green: on a sparse kernel, grey: dense")
    return fig
