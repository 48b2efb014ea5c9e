"""A node's ways to be built, as data: typed candidates, their modelled cost, and the chooser.

A kernel builder with more than one way to build a node lists them (`Candidate`: a `Kind` and
its parameters, with the `reason` where one does not apply), `choose` picks one, and the
builder's emitter for that kind writes it. The choice is printed (`explain`), recorded in
report.txt and manifest.json, and can be forced (`--strategy NODE=KIND{k=v,...}`, parsed by
`Forced.parse`).

The cost model is a roofline of one core (`roofline`), fed by the Target's facts:

    seconds = max(MACs / (lanes_used * fma_per_cycle * hz), bytes / bandwidth)

where `lanes_used` is the width a kind's inner loop really runs at (a scalar dot product: 1)
and `bytes` what the kind moves past the L1 (a row kept in the output is re-read once per
tap). It cannot tell apart candidates within `MODEL_ERROR` of each other; the chooser then
keeps the builder's order of preference (its first listed candidate is its default).
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..errors import EdgecError
from ..targets.target import Target
from ..targets.uarch import MODEL_ERROR

Param = int | float | str


class Kind(enum.Enum):
    """Every way edgec builds a node, by the builder that emits it."""

    # float convolutions (kernels/conv.py)
    CONV_POINTWISE = "conv-pointwise"  # a 1x1 convolution as GEMM tiles over pixels
    CONV_TILES = "conv-tiles"  # register tiles of output channels x pixels
    CONV_ROWS = "conv-rows"  # a row at a time, accumulated in the output
    CONV_THREADS = "conv-threads"  # a GPU's: one thread an output element
    CONV_GPU_GEMM = "conv-gemm-tiles"  # a GPU's: implicit GEMM in shared-memory tiles
    CONV_GPU_DEPTHWISE = "conv-depthwise-tiles"  # a GPU's: an input tile in shared memory
    # blocked (NCHWc) float convolutions (kernels/blocked.py)
    BLOCKED_CONV = "blocked-conv"
    BLOCKED_DEPTHWISE = "blocked-depthwise"
    # integer convolutions (kernels/quant_conv.py)
    INT_CONV_TILES = "int-conv-tiles"
    INT_CONV_ROWS_UNROLLED = "int-conv-rows-unrolled"
    INT_CONV_ROWS = "int-conv-rows"
    INT_CONV_THREADS = "int-conv-threads"  # a GPU's: one thread an output element
    INT_CONV_GPU_GEMM = "int-conv-gemm-tiles"  # a GPU's: implicit GEMM, shared-memory tiles
    # blocked int8 convolutions (kernels/blocked_quant.py; the encoding is pack-weights')
    BLOCKED_INT8_DOT4 = "blocked-int8-dot4"
    BLOCKED_INT8_DEPTHWISE = "blocked-int8-depthwise"
    SPARSE_INT8_DOT4 = "sparse-int8-dot4"
    # sparse weights (kernels/sparse.py; the encoding is sparsify's)
    SPARSE_CONV = "sparse-conv"
    SPARSE_GATHER = "sparse-gather"
    # matrix products (kernels/gemm.py, quant_gemm.py, matmul.py)
    VECTOR_GEMM = "vector-gemm"
    INT8_GEMM = "int8-gemm"
    MATMUL_ROWS = "matmul-rows"
    MATMUL_DOTS = "matmul-dots"
    MATMUL_WARPS = "matmul-warps"  # a GPU's: a warp an output, its lanes along K
    GPU_TILED_GEMM = "gpu-tiled-gemm"  # a GPU's: T x T tiles of A and B staged in shared memory
    INT_MATMUL_ROWS = "int-matmul-rows"  # kernels/quant.py, where the int8 GEMM does not
    # an FPGA's matrix-vector unit: PE outputs x SIMD inputs a cycle (kernels/quant_mvau.py)
    HLS_MVAU = "hls-mvau"
    # a convolution as that unit over each output pixel's window (kernels/quant_mvau.py)
    HLS_CONV_MVAU = "hls-conv-mvau"
    # a matrix product on sparse PEs that skip the weights' zeros (kernels/quant_sparse_pe.py)
    HLS_SPARSE_MVAU = "hls-sparse-mvau"
    HLS_SPARSE_CONV = "hls-sparse-conv"  # a convolution on sparse PEs (quant_sparse_pe.py)
    HLS_POOL = "hls-pool"  # a MaxPool over SIMD channels a cycle (kernels/pool_unit.py)
    HLS_DEPTHWISE = "hls-depthwise"  # a depthwise convolution, PE channels a cycle (same)
    # an op whose builder has one way
    DIRECT = "direct"

    @staticmethod
    def parse(text: str) -> Kind:
        try:
            return Kind(text)
        except ValueError:
            raise EdgecError(f"unknown strategy kind '{text}'; edgec's kinds: "
                             f"{', '.join(k.value for k in Kind)}") from None


@dataclass(frozen=True)
class Candidate:
    """One way to build a node: its kind and parameters; `reason` says why it does not apply
    ("" where it does); `cost` is the model's seconds (None: not modelled); `tunable` names
    the parameters a `--strategy` override may set (the emitter takes any positive value)."""

    kind: Kind
    params: tuple[tuple[str, Param], ...] = ()
    reason: str = ""
    cost: float | None = None
    tunable: frozenset[str] = field(default=frozenset(), compare=False)

    @staticmethod
    def of(kind: Kind, params: Mapping[str, Param] | None = None, reason: str = "",
           cost: float | None = None, tunable: Sequence[str] = ()) -> Candidate:
        # numpy scalars as Python's, so that the manifest's JSON takes them
        plain = {k: v.item() if hasattr(v, "item") else v for k, v in (params or {}).items()}
        return Candidate(kind, tuple(plain.items()), reason,
                         None if cost is None else float(cost), frozenset(tunable))

    @property
    def applies(self) -> bool:
        return not self.reason

    def __getitem__(self, name: str) -> Param:
        for k, v in self.params:
            if k == name:
                return v
        raise KeyError(f"strategy {self.kind.value} has no parameter '{name}'")

    def text(self) -> str:
        """KIND{k=v,...}, as `--strategy` takes it."""
        inner = ",".join(f"{k}={_show(v)}" for k, v in self.params)
        return self.kind.value + (f"{{{inner}}}" if inner else "")

    def record(self) -> dict:
        """The candidate as manifest.json keeps it."""
        return {"kind": self.kind.value, "params": dict(self.params),
                **({"cost_s": self.cost} if self.cost is not None else {}),
                **({"reason": self.reason} if self.reason else {})}

    @staticmethod
    def from_record(r: Mapping) -> Candidate:
        """The candidate `record` wrote."""
        return Candidate(Kind.parse(r["kind"]), tuple(r["params"].items()), r.get("reason", ""),
                         r.get("cost_s"))


def _show(v: Param) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


# -- the cost model --------------------------------------------------------------------------

def roofline(target: Target, macs: float, nbytes: float, lanes: int = 1) -> float:
    """Seconds of one core: the slower of the multiply-adds at `lanes` per FMA and the bytes
    at the stream bandwidth (Target.rates)."""
    r = target.rates
    return max(macs / (max(1, lanes) * r.fma_per_cycle * r.hz), nbytes / r.bandwidth)


# -- the chooser -----------------------------------------------------------------------------

def choose(candidates: Sequence[Candidate]) -> Candidate:
    """The first candidate (in the builder's order of preference) that applies and whose cost
    is within MODEL_ERROR of the cheapest applicable one: the model decides only where it
    can tell. The builder's last candidate always applies."""
    ok = [c for c in candidates if c.applies]
    if not ok:
        raise EdgecError("no strategy applies: " + "; ".join(
            f"{c.kind.value}: {c.reason}" for c in candidates))
    costs = [c.cost for c in ok if c.cost is not None]
    best = min(costs, default=None)
    for c in ok:
        if best is None or c.cost is None or c.cost <= best * MODEL_ERROR:
            return c
    return ok[0]  # unreachable: the cheapest is within MODEL_ERROR of itself


@dataclass(frozen=True)
class Forced:
    """A `--strategy` override: a kind and the parameters it sets."""

    kind: Kind
    params: tuple[tuple[str, Param], ...] = ()

    _SYNTAX = re.compile(r"^\s*([a-z0-9-]+)\s*(?:\{(.*)\})?\s*$")

    @staticmethod
    def parse(text: str | Forced | Candidate) -> Forced:
        """`KIND` or `KIND{k=v,...}` (values: integers, numbers or words)."""
        if isinstance(text, Forced):
            return text
        if isinstance(text, Candidate):
            return Forced(text.kind, text.params)
        m = Forced._SYNTAX.match(text)
        if not m:
            raise EdgecError(f"strategy '{text}': expected KIND or KIND{{name=value,...}}, "
                             "such as conv-tiles{tile_m=8,tile_p=4}")
        params = []
        for item in filter(None, (s.strip() for s in (m.group(2) or "").split(","))):
            k, eq, v = item.partition("=")
            if not eq or not k.strip():
                raise EdgecError(f"strategy '{text}': parameter '{item}' is not name=value")
            params.append((k.strip(), _value(v.strip())))
        return Forced(Kind.parse(m.group(1)), tuple(params))

    def pick(self, node: str, candidates: Sequence[Candidate]) -> Candidate:
        """The candidate this override names, with its parameters set; an EdgecError naming
        the reason where it does not apply, or the candidates where the node has none of
        this kind."""
        same = [c for c in candidates if c.kind is self.kind]
        if not same:
            raise EdgecError(f"node {node}: strategy {self.kind.value} is not one of its "
                             f"candidates ({', '.join(c.text() for c in candidates)})")
        c = next((c for c in same if c.applies), same[0])
        if not c.applies:
            raise EdgecError(f"node {node}: strategy {self.kind.value} does not apply: "
                             f"{c.reason}")
        params = dict(c.params)
        for k, v in self.params:
            if k not in params:
                raise EdgecError(f"node {node}: strategy {self.kind.value} has no parameter "
                                 f"'{k}' (it has: {', '.join(params) or 'none'})")
            if v == params[k]:
                continue
            if k not in c.tunable:
                raise EdgecError(f"node {node}: {self.kind.value}'s '{k}' is {params[k]} "
                                 f"here and cannot be set (settable: "
                                 f"{', '.join(sorted(c.tunable)) or 'none'})")
            if not isinstance(v, int) or v < 1:
                raise EdgecError(f"node {node}: {self.kind.value}'s '{k}' must be a positive "
                                 f"integer, not {v!r}")
            params[k] = v
        return replace(c, params=tuple(params.items()),
                       cost=c.cost if params == dict(c.params) else None)

    def text(self) -> str:
        return Candidate(self.kind, self.params).text()


def _value(text: str) -> Param:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def explain(node: str, op: str, candidates: Sequence[Candidate], chosen: Candidate,
            forced: bool = False) -> list[str]:
    """The lines `--explain` and report.txt print for one node: each candidate with its
    parameters, modelled cost or reason, the chosen one marked."""
    lines = [f"{node} ({op}): {chosen.text()}" + (" (forced)" if forced else "")]
    for c in candidates:
        picked = c.kind is chosen.kind and c.applies
        c = chosen if picked else c  # with the parameters an override set
        cost = f"{c.cost * 1e6:.3g} us" if c.cost is not None else "not modelled"
        what = f"cost {cost}" if c.applies else f"does not apply: {c.reason}"
        lines.append(f"  {'*' if picked else ' '} {c.text()}: {what}")
    return lines


def near_names(name: str, known: Sequence[str], n: int = 3) -> list[str]:
    """The names of `known` a user who wrote `name` may mean: those that begin with it (the
    node a pass made of it: `/conv1/Conv_nchwc`), else the closest spellings."""
    return [k for k in known if k.startswith(name)][:n] or \
        difflib.get_close_matches(name, list(known), n)


def unknown_nodes(what: str, names: Sequence[str], known: Sequence[str]) -> str:
    """The error of `what` (`--strategy`, `--explain`) naming nodes that no kernel builds."""
    hints = [f"for {m} did you mean {' or '.join(near)}?" for m in names
             if (near := near_names(m, known))]
    return (f"{what} names node(s) {', '.join(names)}, which no kernel builds (after the "
            "passes: fused, folded or a view); " + " ".join(hints) +
            (" " if hints else "") + "report.txt's kernel list names the nodes that have "
            "kernels")

