"""The units of an HLS design as the cycle model sees them (codegen/hls_estimate.py): which
unit each node can fold as (the matrix-vector, sparse, pooling and depthwise units of
lowering/kernels/), their folds chosen before lowering (codegen/hls_fold.py), how each
process partitions its frame arrays and which go to URAM, the stream depths for frames back
to back, the FIFOs bound to URAM, and the processes' models once lowered; and the integer
arithmetic they rest on (the narrowest ROM types, the accumulators' proved bounds)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..ir.graph import Node
from ..lowering.strategies import Kind
from .hls_estimate import (
    ProcessModel,
    estimate,
    part_of,
    resources,
    stream_frames,
    uram_blocks,
    uram_fifos,
    uram_frame,
)
from .hls_fold import Foldable, fold, fold_compute

if TYPE_CHECKING:
    from .hls_project import Design

# the integer ops whose requantization is float unless fixed-point held it (rq_shift)
REQUANTIZING = ("QLinearConv", "QGemm", "QLinearMatMul", "QLinearAdd",
                "QLinearGlobalAveragePool")

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


UNITS = (Kind.HLS_MVAU, Kind.HLS_CONV_MVAU, Kind.HLS_SPARSE_MVAU, Kind.HLS_SPARSE_CONV,
         Kind.HLS_POOL, Kind.HLS_DEPTHWISE)
SPARSE_UNITS = (Kind.HLS_SPARSE_MVAU, Kind.HLS_SPARSE_CONV)
# (a dense unit folding chose where a sparse one would be the default: given as a strategy)
DENSE_KINDS = (Kind.HLS_MVAU.value, Kind.HLS_CONV_MVAU.value)
SPARSE_COMPLETE = 4096  # a sparse unit's input of at most this many values is registers


def array_partitions(choice, reads: list[int]) -> dict[str, str]:
    """How a process partitions its frame arrays for its strategy `choice`:
    partitions_of(its kind, PE, SIMD, its inputs' elements)."""
    return partitions_of(choice.kind, *fold_of(choice), reads)


def partitions_of(kind: Kind, pe: int, simd: int, reads: list[int]) -> dict[str, str]:
    """How a unit of `kind` at (`pe`, `simd`) partitions its frame arrays (a{j}, its inputs
    of `reads` elements, and y0): {array: ARRAY_PARTITION's arguments}. A folded
    matrix-vector unit reads SIMD inputs a cycle (cyclic; a convolution's unit partitions
    its own HWC copy instead); a pooling or depthwise unit's lane s the channels of block s
    (block, the output too); sparse PEs PE terms anywhere in A (registers where A is small,
    a bank per PE otherwise)."""
    ins = [f"a{j}" for j in range(len(reads))]
    if simd > 1 and kind is Kind.HLS_MVAU:
        return {a: f"cyclic factor={simd}" for a in ins}
    lanes = simd if kind is Kind.HLS_POOL else pe if kind is Kind.HLS_DEPTHWISE else 1
    if lanes > 1:
        return {a: f"block factor={lanes}" for a in [*ins, "y0"]}
    if pe > 1 and kind is Kind.HLS_SPARSE_MVAU:
        return {a: "complete" if n <= SPARSE_COMPLETE else f"cyclic factor={pe}"
                for a, n in zip(ins, reads, strict=True)}
    return {}


def split_arrays(arrays: list[tuple[str, int, int]], parts: dict[str, str],
                 in_uram: Callable[[str, int, int], bool]
                 ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """A process's frame arrays (name, elements, width) as the estimate costs them: (those
    bound to URAM whole, the rest as (depth, width) memories: a bank each of a partitioned
    array, else the array)."""
    frames, memories = [], []
    for a, n, w in arrays:
        if a in parts:
            how = parts[a]
            banks = int(how.rsplit("=", 1)[1]) if "=" in how else n  # ("complete": n)
            memories += [(-(-n // banks), w)] * banks
        elif in_uram(a, n, w):
            frames.append((n, w))
        else:
            memories.append((n, w))
    return frames, memories


def uram_arrays(d: Design, lowered: list, part: str) -> set[tuple[str, str]]:
    """The whole frame arrays (process, a{j} or y{j}) to bind to URAM: those of
    URAM_MIN_BITS or more that the process does not partition, the largest first while the
    part's URAMs last (none where the part has none, or is not one edgec knows)."""
    limits = part_of(part)
    budget = limits.uram if limits is not None else 0
    found = []
    for proc, ln in lowered:
        reads = [s.value for s in d.reads.get(proc, [])]
        parts = array_partitions(ln.strategy.choice, [v.type.numel for v in reads])
        for a, v in [(f"a{j}", v) for j, v in enumerate(reads)] + \
                [(f"y{j}", v) for j, v in enumerate(ln.node.outputs)]:
            if a not in parts and uram_frame(v.type.numel, 8 * v.dtype.itemsize):
                found.append((v.type.numel * v.dtype.itemsize, proc, a,
                              uram_blocks(v.type.numel, 8 * v.dtype.itemsize)))
    chosen = set()
    for _, proc, a, blocks in sorted(found, reverse=True):
        if blocks <= budget:
            chosen.add((proc, a))
            budget -= blocks
    return chosen


def fold_of(choice) -> tuple[int, int]:
    """A strategy's (PE, SIMD): (1, 1) but for the units."""
    if choice.kind not in UNITS:
        return 1, 1
    params = dict(choice.params)
    return int(params.get("pe", 1)), int(params.get("simd", 1))


def _sparse_loads(d: Design, node: Node, pe: int) -> tuple[int, float]:
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


def _sparse_cycles(d: Design, node: Node, pe: int, simd: int) -> int:
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


def _foldable(d: Design, node: Node, model: ProcessModel, unit, uram: bool) -> Foldable:
    """`node`'s process (`model` before folding) as the unit of candidate `unit`; its frame
    arrays partitioned as its folds ask (partitions_of), whole ones of URAM_MIN_BITS or more
    in URAM where the part has URAM (`uram`)."""
    c_ = node.inputs[0].shape[1]
    arrays = [(f"a{j}", n, 8) for j, (_, n) in enumerate(model.reads)] + \
        [("y0", model.out_elements, 8)]
    copy = _unit_shape(node)[2] if unit.kind in (Kind.HLS_CONV_MVAU,
                                                  Kind.HLS_SPARSE_CONV) else 0

    def layout(pe: int, simd: int) -> tuple[list, list]:
        frames, memories = split_arrays(
            arrays, partitions_of(unit.kind, pe, simd, [n for _, n in model.reads]),
            lambda a, n, w: uram and uram_frame(n, w))
        # (a convolution's unit: its HWC copy of the frame, in SIMD memories)
        return frames, memories + [(-(-copy // simd), 8)] * (simd if copy else 0)

    frames, memories = layout(1, 1)
    model = replace(model, uram_frames=frames, buffers=memories)
    if unit.kind is Kind.HLS_POOL:  # SIMD channels a cycle (the taps one after another)
        return Foldable(node, replace(model, pools=True), c_, 1, kind=unit.kind.value,
                        cost=lambda pe, simd: model.compute // simd, divisors=True,
                        layout=layout)
    if unit.kind is Kind.HLS_DEPTHWISE:  # PE channels a cycle (FINN's vector-vector unit)
        w = node.inputs[3].const
        bound = accumulator_bound(node)
        return Foldable(node, replace(
            model, weight_bits=ap_type(w)[1], weights=w.size, requantizes=True,
            acc_bits=bound.bit_length() + 1 if bound is not None else 32), 1, c_,
            kind=unit.kind.value, cost=lambda pe, simd: model.compute // pe,
            folds_simd=False, divisors=True, layout=layout)
    b = node.inputs[3].const
    k, n, _ = _unit_shape(node)
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
        acc_bits=bound.bit_length() + 1 if bound is not None else 32), k, n, copy,
        unit.kind.value, cost, unit.kind is not Kind.HLS_SPARSE_MVAU, balance, layout=layout)


def plan_folds(d: Design, part: str, clock_mhz: float,
                target_fps: float) -> dict[str, tuple[str, int, int]]:
    """Each matrix-vector unit's (kind, PE, SIMD) (codegen/hls_fold.py), from the processes
    as the cycle model sees them before their kernels are built; a node whose strategy was
    given keeps it."""
    fixed, foldable = [], []
    limits = part_of(part)
    uram = limits is not None and limits.uram > 0
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
        frames, memories = split_arrays(
            [(f"a{j}", n, 8) for j, (_, n) in enumerate(reads)] + [("y0", out, 8)], {},
            lambda a, n, w: uram and uram_frame(n, w))
        model = ProcessModel(node.name, reads, [], out, compute, macs,
                             requantizes=node.op in REQUANTIZING, uram_frames=frames,
                             buffers=memories)
        units = [_foldable(d, node, model, c, uram) for c in _unit_candidates(node)]
        if not units:
            fixed.append(model)
            continue
        if len(units) == 2:  # (where the sparse unit cannot keep up: hls_fold.py)
            units[0].dense = units[1]
        foldable.append(units[0])
    # (each process's inputs through a FIFO of a frame, as size_for_throughput will make
    # most of them; the deepest may move to URAM later, which the plan does not count on)
    fifos = [(n, 8) for p in fixed + [u.model for u in foldable] if not p.forwards
             for _, n in p.reads if n > 0]
    return {name: (u.kind, pe, simd) for name, (u, pe, simd) in
            fold(fixed, foldable, part, clock_mhz, target_fps, fifos).items()}


def size_for_throughput(d: Design, procs: list[ProcessModel],
                         producers: dict[str, str]) -> None:
    """Each stream between two processes deep enough for the frames in flight on it (module
    doc), never shallower than `wire` made it."""
    frames = stream_frames(procs, producers)
    for s in d.streams:
        if s.port is None and s.name in frames:
            s.depth = max(s.depth, frames[s.name] * s.value.type.numel)


def estimate_design(d: Design, lowered: list, layers: list[dict], part: str,
              clock_mhz: float) -> dict:
    """codegen/hls_estimate.py's estimate of the design: its processes as the cycle model
    sees them, its FIFOs, latency, frames per second, resources."""
    procs, producers = models(d, lowered, layers)
    port_streams = {s.name for s in d.streams if s.port is not None}
    fifos = {s.name: (s.depth, 8 * s.value.dtype.itemsize, s.uram) for s in d.streams
             if s.name not in port_streams}
    return estimate(procs, producers, fifos, sorted(port_streams), part, clock_mhz)


def bind_fifos(d: Design, lowered: list, layers: list[dict], part: str) -> None:
    """The FIFOs hls_estimate.uram_fifos binds to URAM, given what the processes take."""
    limits = part_of(part)
    if limits is None:
        return
    procs, _ = models(d, lowered, layers)
    used = [resources(p) for p in procs]
    internal = [s for s in d.streams if s.port is None]
    chosen = uram_fifos([(s.name, s.depth, 8 * s.value.dtype.itemsize) for s in internal],
                        sum(r["bram18"] for r in used), sum(r["uram"] for r in used), limits)
    for s in internal:
        s.uram = s.name in chosen


def models(d: Design, lowered: list, layers: list[dict]
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
        pe, simd = fold_of(choice)
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
        # its frame arrays: whole (in URAM where uram_arrays bound them), or in banks
        ins = [(x.value.type.numel, 8 * x.value.dtype.itemsize) for x in d.reads.get(proc, [])]
        arrays = [(f"a{j}", n, w) for j, (n, w) in enumerate(ins)] + \
            [(f"y{j}", v.type.numel, 8 * v.dtype.itemsize) for j, v in enumerate(node.outputs)]
        frames, memories = split_arrays(arrays, array_partitions(choice, [n for n, _ in ins]),
                                        lambda a, n, w, proc=proc: (proc, a) in d.uram)
        procs.append(ProcessModel(
            proc, reads, writes, sum(v.type.numel for v in node.outputs), compute, macs,
            pe=pe, simd=simd, weight_bits=weight_bits, **sparse, pools=pools,
            weights=weights.numel if weights is not None and macs else 0,
            act_bits=8 * node.inputs[0].dtype.itemsize, acc_bits=layer["accumulator_bits"] or 0,
            requantizes=node.op in REQUANTIZING, uram_frames=frames,
            buffers=memories +
                    # a convolution's unit: its HWC copy of the frame, in SIMD memories
                    [(-(-copy // simd), 8)] * (simd if copy else 0)))
    for p in procs:
        for s in p.writes:
            producers[s] = p.name
    return procs, producers


