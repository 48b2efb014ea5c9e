"""The compile record: what passes leave on a graph for later stages (codegen, the driver,
the reports), one typed field per concern, each written by the one pass that owns it.

`graph.record` holds it. A stage that cannot work without a field asks for it with
`record.need(field, reader)`, which names the pass that writes it when the pipeline did not
run that pass.

What a pass leaves on one node for later stages is typed too: `node.record`, a NodeRecord
(sparsify's plan, reorder's figures, the nodes a fused kernel does the work of, the prune
passes' note), which a pass that replaces the node hands on to the new one (Node.inherit).
Facts that only other passes read stay in the free `node.meta` and `value.meta`
(fold-batchnorm's statistics, equalize's and smooth's marks, quantize's input means for the
bias correction), as do the lowering's own caches (derived constants, tables).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import PassError


@dataclass
class MemoryPlan:
    """Where each activation lives. `offsets`: planned value -> byte offset in the arena;
    `aliases`: view value -> the value whose bytes it reads (planned, or a graph input,
    constant or output); `lifetimes`: planned value -> (first, last) node position;
    `sizes`: planned value -> bytes; `strategy`: the placement order that won."""

    offsets: dict[str, int]
    aliases: dict[str, str]
    arena_bytes: int
    total_bytes: int
    lower_bound_bytes: int
    alignment: int
    lifetimes: dict[str, tuple[int, int]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    strategy: str = ""

    def report(self) -> str:
        ratio = self.arena_bytes / self.lower_bound_bytes if self.lower_bound_bytes else 1.0
        lines = [f"memory plan: {len(self.offsets)} activations in a {_kib(self.arena_bytes)} "
                 f"arena ({ratio:.1%} of the lower bound {_kib(self.lower_bound_bytes)}; "
                 f"{_kib(self.total_bytes)} without reuse), {len(self.aliases)} views aliased, "
                 f"{self.alignment}-byte aligned, {self.strategy or 'no values'}"]
        width = max([5] + [len(n) for n in self.offsets])
        lines.append(f"  {'value':<{width}}  {'offset':>10}  {'bytes':>10}  live")
        for name, off in sorted(self.offsets.items(), key=lambda kv: (kv[1], kv[0])):
            a, b = self.lifetimes.get(name, (0, 0))
            lines.append(f"  {name:<{width}}  {off:>10}  {self.sizes.get(name, 0):>10}  "
                         f"[{a}, {b}]")
        for view, root in sorted(self.aliases.items()):
            lines.append(f"  {view:<{width}}  -> %{root}")
        return "\n".join(lines)


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


@dataclass(frozen=True)
class PrunedLayer:
    """A layer the prune pass zeroed: its node, op and output as they were then, its weight
    count and the share of them that is zero."""

    node: str
    op: str
    output: str
    weights: int
    zeros: float


@dataclass
class PruningRecord:
    """The prune pass's options and each pruned layer's share of zeros (for the manifest and
    the HTML report's sparsity section)."""

    pattern: str
    scope: str
    sparsity: float
    layers: list[PrunedLayer]

    def to_json(self) -> dict[str, Any]:
        """The manifest's `pruning` entry."""
        return {"pattern": self.pattern, "scope": self.scope, "sparsity": self.sparsity,
                "layers": [dict(vars(x)) for x in self.layers]}


@dataclass(frozen=True)
class EndToEnd:
    """The quantized outputs against the model as the user gave it (before pruning, say)."""

    sqnr_db: float | None  # None: no error at all (infinite SQNR)
    rel_error: float


@dataclass(frozen=True)
class LatencyShares:
    """The driver's timing of the built library, per quantization record: the share of the
    kernels of no layer (None where not measured) and, where not measured, why."""

    other: float | None
    note: str | None = None


@dataclass
class QuantizationRecord:
    """The quantize pass's summary: its options, the outputs' error on the samples and a row
    per candidate layer. `layers` and `smoothed` rows and `mixed_precision` are written out
    as they are (quantization.json), so they stay JSON objects; the driver adds each layer's
    `mac_share` and `latency_share` to its row and sets `latency`."""

    bits: int
    weights: str
    granularity: str
    calibration: str
    samples: int
    budget_db: float | None
    output_sqnr_db: float | None
    output_rel_error: float
    kept_float: list[str]
    quantized_mac_share: float  # int8 and int16 together
    adaround: bool
    smoothed: list[dict[str, Any]]
    layers: list[dict[str, Any]]
    # the MACs by precision ("int8", "int16", "float") and the layers with int16 activations
    mac_shares: dict[str, float] = field(default_factory=dict)
    int16_layers: list[str] = field(default_factory=list)
    mixed_precision: dict[str, Any] | None = None  # sensitivity.py's choice of float layers
    pairs_fitted: int | None = None  # AVX2 pair fitting ran: the channels it scaled
    end_to_end: EndToEnd | None = None
    latency: LatencyShares | None = None

    def to_json(self) -> dict[str, Any]:
        """quantization.json's object (the keys in the order the reports have always had)."""
        out = {"bits": self.bits, "weights": self.weights, "granularity": self.granularity,
               "calibration": self.calibration, "samples": self.samples,
               "budget_db": self.budget_db, "output_sqnr_db": self.output_sqnr_db,
               "output_rel_error": self.output_rel_error, "kept_float": self.kept_float,
               "quantized_mac_share": self.quantized_mac_share,
               "mac_shares": self.mac_shares, "int16_layers": self.int16_layers,
               "adaround": self.adaround,
               "smoothed": self.smoothed, "layers": self.layers}
        if self.mixed_precision is not None:
            out["mixed_precision"] = self.mixed_precision
        if self.pairs_fitted is not None:
            out["pairs_fitted"] = self.pairs_fitted
        if self.end_to_end is not None:
            out["end_to_end_sqnr_db"] = self.end_to_end.sqnr_db
            out["end_to_end_rel_error"] = self.end_to_end.rel_error
        if self.latency is not None:
            out["other_latency_share"] = self.latency.other
            if self.latency.note is not None:
                out["latency_note"] = self.latency.note
        return out


@dataclass(frozen=True)
class BlockPlan:
    """How the sparse convolution stores a layer's weights: blocks of `rows` output channels
    x `cols` input channels (`step`: the phases the staged window was split into), or N:M
    groups (`nm`: N, M; rows = cols = 1); `padded_channels`: zero channels added to make the
    output channels a multiple of `rows`."""

    rows: int
    cols: int
    step: int
    nm: tuple[int, int] | None = None
    padded_channels: int = 0


@dataclass(frozen=True)
class KernelTimes:
    """Microseconds per call of a layer alone on its sparse and its dense kernel, measured on
    the build host (compiler/tune.py)."""

    sparse: float
    dense: float


@dataclass(frozen=True)
class SparsePlan:
    """sparsify's cost model for a convolution or matrix product whose weights hold zeros:
    `layer`: the node's name then (a rewritten node's may differ); `density`: the share of
    non-zero weights; `block_density`: the entries the sparse kernel would store over the
    weights; the estimates of each kernel and whether the sparse one runs. `blocks`: the
    convolution's stored form (a matrix product's when it runs as a convolution over its
    rows; None: on the gathering kernel). `close`: the estimates lie within the model's
    error, the layer is to be timed under `key`; `measured_us`: its timing, which decided."""

    layer: str
    density: float
    block_density: float
    dense_cost: float
    sparse_cost: float
    runs_sparse: bool
    blocks: BlockPlan | None = None
    close: bool = False
    key: str = ""
    measured_us: KernelTimes | None = None


@dataclass(frozen=True)
class ReorderRecord:
    """The reorder pass's figures for a sparse layer: the imbalance (max / mean work per
    thread at `threads` contiguous parts, or per PE) before and after, and for a
    SparseMatMul the padding (stored / non-zero values) before and after."""

    threads: int
    imbalance: tuple[float, float]
    padding: tuple[float, float] | None = None
    # reorder{pes=P}: the channel each stored row of an FPGA's sparse unit computes, PE p
    # taking rows p, p + P, ... (-1: none); `threads` is then P
    pe_order: tuple[int, ...] = ()


@dataclass(frozen=True)
class PruneNote:
    """What the prune passes did to a layer: its pattern; the share of its weights that are
    zero and whether the pruning used samples (`data_aware`), or why not though they were
    given (`by_magnitude`); channel pruning's output channels before and after, or why it
    kept them all (`kept`)."""

    pattern: str
    sparsity: float | None = None
    data_aware: bool = False
    by_magnitude: str = ""
    channels: tuple[int, int] | None = None
    kept: str = ""


@dataclass
class NodeRecord:
    """What passes leave on one node for later stages; each field None (or empty) until the
    pass that writes it has run."""

    sparse: SparsePlan | None = None  # sparsify: tune and the reports read it
    reorder: ReorderRecord | None = None  # reorder: the sparse kernels' report notes
    # fuse-residual: the nodes whose work this node's kernel does, the first the one that
    # takes the time (the driver's and the HTML report's per-layer rows)
    fused: tuple[str, ...] = ()
    # prune, prune{pattern=channel}: for whoever inspects the graph (the pruning record
    # is what the reports read)
    pruned: PruneNote | None = None


@dataclass(frozen=True)
class RecordKind:
    """A field of the compile record: the pass that writes it, what it is (for messages),
    and whether any later edit of the graph makes it stale (a plan of the values does; a
    summary of what a pass did does not)."""

    writer: str
    what: str
    stale_after_edit: bool


RECORDS: dict[str, RecordKind] = {
    "memory_plan": RecordKind("plan-memory", "memory plan", True),
    "quantization": RecordKind("quantize", "quantization record", False),
    "pruning": RecordKind("prune", "pruning record", False),
}


@dataclass
class CompileRecord:
    """One field per entry of RECORDS; None until its pass has run."""

    memory_plan: MemoryPlan | None = None
    quantization: QuantizationRecord | None = None
    pruning: PruningRecord | None = None

    def need(self, name: str, reader: str) -> Any:
        """The field `name`, or a PassError saying that `reader` needs the pass that
        writes it."""
        kind = record_kind(name)
        value = getattr(self, name)
        if value is None:
            where = " (after every pass that edits the graph)" if kind.stale_after_edit else ""
            raise PassError(f"{reader} reads the {kind.what}, which pass '{kind.writer}' "
                            f"writes, and the graph has none: run {kind.writer} before "
                            f"{reader}{where}")
        return value

    def held(self) -> list[str]:
        """The fields that hold a value."""
        return [name for name in RECORDS if getattr(self, name) is not None]

    def forget(self, names: Iterable[str]) -> None:
        """Set the fields `names` to None (a pass invalidated them)."""
        for name in names:
            record_kind(name)
            setattr(self, name, None)


def record_kind(name: str) -> RecordKind:
    """RECORDS[name], or a PassError listing the fields there are."""
    if name not in RECORDS:
        raise PassError(f"the compile record has no field '{name}'; its fields: "
                        f"{', '.join(RECORDS)}")
    return RECORDS[name]
