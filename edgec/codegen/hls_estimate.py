"""Estimates of an HLS design before synthesis: each process's cycles and resources, the
design's latency and frames per second at its clock, whether it fits the part; and a
discrete-event simulation of its dataflow (SimPy) that checks the cycle model.

The model of a process (codegen/hls_project.py: it reads its input streams whole, one after
another, computes, then writes its output to all its streams at once), with PE output
channels and SIMD input channels computed per cycle (1 and 1 until folding chooses them):

    cycles   = sum of its input elements (one a cycle) + compute + output elements (a port's
               reader, which writes each value on as it reads it: its input elements)
    compute  = MACs / (PE x SIMD) for a convolution or matrix product (the innermost loop
               pipelined at II=1), else one output element a cycle (times the taps of a
               pooling window, or the elements summed for a global mean)

The design runs one frame at a time through each process: its initiation interval is the
slowest process's cycles, frames per second = clock / that; the latency of one frame follows
the streams: a process finishes reading an input no sooner than the stream's producer
finishes writing it (reading as it is written), then computes and writes:

    read_end  = max over its inputs in order of max(read_end + elements, producer's write end)
    write_end = read_end + compute + output elements

Resources, FINN-R's formulas (Blott et al., "FINN-R", ACM TRETS 2018, as FINN implements
them for its matrix-vector unit) with W weight bits, A activation bits, P = PE, Q = SIMD:

    LUT   = 300 + 1.1 P (Q (2 ceil((W + A) / 6) - 1)(W + A) [LUT multipliers only]
                         + (W + A)(2 Q - 1) + accumulator bits)  per convolution or product;
            300 per other process (a pooling unit: + 1.1 x 2 A a lane, its comparator and
            multiplexer); plus LUTRAM of the small memories (ceil(depth / 64) x width)
    DSP   = ceil(P Q / 2) where W and A are 5 to 8 bits: two 8-bit products that share an
            operand packed into one DSP48E2 (Xilinx WP486); none at 4 bits and below (LUT
            multipliers); P Q ceil((W + A) / 48) above 8 bits; plus 4 per requantizing
            process (its 32 x 31-bit multiply, 27 x 18 DSP slices 2 x 2)
    BRAM18 per memory of `depth` words of `width` bits over 1024 bits (weights ROM: depth
            = weights / (P Q), width = W P Q; each frame buffer that URAM does not take, a
            bank of a partitioned one; a stream deeper than 32):
            ceil(depth / D) x ceil(width / B), (B, D) the RAMB18 shape that suits the width:
            (1, 16384), (2, 8192), (4, 4096), (9, 2048), (18, 1024), (36, 512); a memory
            of one word is registers (an array partitioned completely)
    URAM  ceil(elements / (64 / width) / 4096) per whole frame array (a process's input or
            output array, unpartitioned) of 128 Kbit or more, the largest first while the
            part's URAMs last (none on a part without): the project reshapes it to 64-bit
            words (ARRAY_RESHAPE cyclic 8 for bytes) and binds it to URAM (BIND_STORAGE
            impl=uram), 8 bytes of a URAM word's 72 bits, 4096 words a URAM; a byte written
            alone takes the URAM's byte write enable (that Vitis keeps II=1 there is assumed,
            not checked: no synthesis here). ROMs stay BRAM (URAM has no initial contents on
            UltraScale+), and partitioned banks; FIFOs too, but where the design's BRAM is
            over the part, whose deepest FIFOs (4096 places or more) the project binds to
            URAM (ceil(depth / 4096) x ceil(width / 72) URAMs) while that brings it under
            and the URAMs last

A sparse unit (lowering/kernels/quant_sparse_pe.py) is costed as a unit of Q = 1 (one
multiplier a PE, whatever SIMD its window loads at), its ROM's depth its PEs' entries (the
busiest's), its width per PE the weight's bits plus the entry's term and channel bits; its
compute is the busiest PE's entries a row (a pixel), plus a convolution's window loads and
frame copy. The multiplexer that picks each PE's term from the window or the input is not
costed (P x K / 4 LUT6 or so: small beside the rest at the folds chosen, not checked).

Known parts' resources are in PARTS; a design over one of them is warned about. The
simulation (`simulate`) runs the same processes with the streams' real depths, element by
element (or by chunks of elements for large tensors), for a few frames back to back, and
gives the latency of the first, the interval between the last ones and each FIFO's largest
occupancy; `estimate` reports both and by how much they differ.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

LUT_BASE, LUT_FACTOR = 300, 1.1  # FINN-R's c0 and c1
REQUANT_DSPS = 4  # a 32 x 31-bit multiply on 27 x 18 DSP slices
SRL_DEPTH = 32  # a FIFO this shallow is shift registers (LUTs), deeper ones BRAM
LUTRAM_BITS = 1024  # a memory this small is LUTRAM
# a whole frame array (not partitioned) of this many bits or more is bound to URAM, reshaped
# to URAM_WORD_BITS a word (8 bytes of a URAM's 72 bits; a URAM is 4096 words)
URAM_MIN_BITS, URAM_WORD_BITS, URAM_DEPTH = 16 * 8192, 64, 4096
URAM_FIFO_MIN = URAM_DEPTH  # a FIFO at least this deep may be bound to URAM (hls_project)
SIM_SLOWER = 0.05  # a simulated interval this much above the model's is warned about
RAMB18 = ((1, 16384), (2, 8192), (4, 4096), (9, 2048), (18, 1024), (36, 512))


@dataclass(frozen=True)
class Part:
    """An FPGA's resources (its data sheet)."""

    name: str
    lut: int
    dsp: int
    bram18: int
    uram: int


# by the prefix of the part's name, as Vitis names parts (AMD data sheets DS962, DS890, DS190)
PARTS = {p.name: p for p in (
    Part("xcu250", 1_728_000, 12_288, 5_376, 1_280),  # Alveo U250
    Part("xcu280", 1_303_680, 9_024, 4_032, 960),  # Alveo U280
    Part("xcu50", 871_680, 5_952, 2_688, 640),  # Alveo U50
    Part("xcvu9p", 1_182_240, 6_840, 4_320, 960),  # VCU118
    Part("xczu9eg", 274_080, 2_520, 1_824, 0),  # ZCU102
    Part("xczu7ev", 230_400, 1_728, 624, 96),  # ZCU104
    Part("xczu3eg", 70_560, 360, 432, 0),  # Ultra96
    Part("xc7z020", 53_200, 220, 280, 0),  # PYNQ-Z1/Z2
)}


def part_of(name: str) -> Part | None:
    """The resources of part `name` (matched by prefix), or None where edgec has none."""
    key = name.lower()
    return next((p for prefix, p in PARTS.items() if key.startswith(prefix)), None)


@dataclass
class ProcessModel:
    """A process as the model sees it: the streams it reads (name, elements) in order, the
    streams it writes (all at once) and their elements, its compute cycles at PE x SIMD, and
    what its resources depend on."""

    name: str
    reads: list[tuple[str, int]]
    writes: list[str]
    out_elements: int
    compute: int
    macs: int = 0
    pe: int = 1
    simd: int = 1
    weight_bits: int = 0
    weights: int = 0
    act_bits: int = 8
    acc_bits: int = 0
    requantizes: bool = False
    buffers: list[tuple[int, int]] = field(default_factory=list)  # (depth, width) of arrays
    # (elements, width) of its whole frame arrays bound to URAM (hls_units.uram_arrays)
    uram_frames: list[tuple[int, int]] = field(default_factory=list)
    # multipliers a PE has (0: SIMD); a sparse unit's one, whatever its SIMD (which loads its
    # window), and the bits of each weight's term and channel stored beside it
    lanes: int = 0
    index_bits: int = 0
    # it writes each value as it reads it (a port's reader forking it to its consumers)
    forwards: bool = False
    # a pooling unit: SIMD lanes, a comparator and a multiplexer each
    pools: bool = False

    @property
    def cycles(self) -> int:
        reads = sum(n for _, n in self.reads)
        if self.forwards:
            return max(reads, self.out_elements) + self.compute
        return reads + self.compute + self.out_elements


def _memory(depth: int, width: int) -> tuple[int, int]:
    """(BRAM18, LUT) of a memory of `depth` words of `width` bits: LUTRAM when small, else
    RAMB18s in the shape that suits the width; one word is registers (an array partitioned
    completely: a unit's weights at PE x SIMD = all of them), counted in neither."""
    if depth <= 1 or width <= 0:
        return 0, 0
    if depth * width <= LUTRAM_BITS:
        return 0, math.ceil(depth / 64) * width
    for bits, words in RAMB18[:4]:  # 1, 2, 4, 9 bits wide
        if width <= bits:
            return math.ceil(depth / words), 0
    if width <= 18 or depth > 512:
        return math.ceil(depth / 1024) * math.ceil(width / 18), 0
    return math.ceil(depth / 512) * math.ceil(width / 36), 0


def uram_frame(elements: int, width: int) -> bool:
    """Whether a whole (unpartitioned) frame array may be bound to URAM: URAM_MIN_BITS or
    more (below, its RAMB18s are fewer than 8, and a URAM holds 16 of them)."""
    return elements * width >= URAM_MIN_BITS


def uram_blocks(elements: int, width: int) -> int:
    """The URAMs of a frame array reshaped to URAM_WORD_BITS a word."""
    return math.ceil(elements / (URAM_WORD_BITS // width) / URAM_DEPTH)


def resources(p: ProcessModel) -> dict:
    """LUT, DSP, BRAM18 and URAM of process `p` (the module's formulas)."""
    lut, dsp, bram = LUT_BASE, 0, 0
    if p.macs:
        w, a, q = p.weight_bits, p.act_bits, p.lanes or p.simd
        lut_mults = w <= 4 and a <= 8
        mult = q * (2 * math.ceil((w + a) / 6) - 1) * (w + a) if lut_mults else 0
        tree = (w + a) * (2 * q - 1)
        lut += math.ceil(LUT_FACTOR * p.pe * (mult + tree + p.acc_bits))
        dsp += 0 if lut_mults else math.ceil(p.pe * q / 2) if max(w, a) <= 8 else \
            p.pe * q * math.ceil((w + a) / 48)
        b, lr = _memory(math.ceil(p.weights / (p.pe * q)), (w + p.index_bits) * p.pe * q)
        bram, lut = bram + b, lut + lr
    if p.pools:
        lut += math.ceil(LUT_FACTOR * p.simd * 2 * p.act_bits)
    if p.requantizes:
        dsp += REQUANT_DSPS
    for depth, width in p.buffers:
        b, lr = _memory(depth, width)
        bram, lut = bram + b, lut + lr
    uram = sum(uram_blocks(*f) for f in p.uram_frames)
    return {"lut": lut, "dsp": dsp, "bram18": bram, "uram": uram}


def fifo_resources(depth: int, width: int, uram: bool = False) -> dict:
    """A stream's FIFO: shift registers up to SRL_DEPTH places, else BRAM, or URAM where the
    project binds it there (`uram`: 4096 words of up to 72 bits a URAM)."""
    if uram:
        return {"lut": 0, "dsp": 0, "bram18": 0,
                "uram": math.ceil(depth / URAM_DEPTH) * math.ceil(width / 72)}
    if depth <= SRL_DEPTH:
        return {"lut": math.ceil(depth / 32) * width, "dsp": 0, "bram18": 0, "uram": 0}
    b, lr = _memory(depth, width)
    return {"lut": lr, "dsp": 0, "bram18": b, "uram": 0}


def uram_fifos(fifos: list[tuple[str, int, int]], bram18: int, uram: int, part: Part
               ) -> set[str]:
    """The FIFOs (name, depth, width) to bind to URAM where the design's BRAM18 (`bram18`
    taken by its processes, plus the FIFOs') is over `part`'s: the deepest first, of
    URAM_FIFO_MIN places or more, one after another while BRAM is over and the part's URAMs
    (less the `uram` the processes take) last."""
    bram18 += sum(fifo_resources(depth, width)["bram18"] for _, depth, width in fifos)
    chosen = set()
    for name, depth, width in sorted(fifos, key=lambda f: -f[1]):
        if bram18 <= part.bram18 or depth < URAM_FIFO_MIN:
            break
        need = fifo_resources(depth, width, uram=True)["uram"]
        if uram + need <= part.uram:
            chosen.add(name)
            bram18 -= fifo_resources(depth, width)["bram18"]
            uram += need
    return chosen


def analytic(procs: list[ProcessModel], producers: dict[str, str]) -> dict:
    """The cycle model: each process's write end for one frame, the latency (the last write
    end) and the initiation interval (the slowest process)."""
    write_end: dict[str, int] = {}
    for p in procs:  # (in dataflow order: producers first)
        t = 0
        for s, n in p.reads:
            src = producers.get(s)
            t = max(t + n, write_end.get(src, n) if src is not None else n)
        write_end[p.name] = t + p.compute + (0 if p.forwards else p.out_elements)
    return {"latency_cycles": max(write_end.values(), default=0),
            "interval_cycles": max((p.cycles for p in procs), default=0),
            "write_end": write_end}


def stream_frames(procs: list[ProcessModel], producers: dict[str, str]) -> dict[str, int]:
    """The frames each stream between processes holds at once when frames come back to back
    at the model's interval T: its consumer reads a frame `lag` cycles after the producer
    has written it (0 where it reads as it is written; a residual branch: the time the other
    path takes), while the producer goes on writing one frame every T, so the stream holds
    1 + ceil(lag / T) frames."""
    model = analytic(procs, producers)
    write_end, interval = model["write_end"], max(model["interval_cycles"], 1)
    frames: dict[str, int] = {}
    for p in procs:
        t = 0
        # (a join: frames back to back, it reads its earlier input's next frame only once
        # its later input's frame has come and it is done with it, so the earlier input
        # waits the difference whatever order it reads them in: one frame the single
        # frame's order misses, MobileNetV2's skip branches read first: simulated 18% slower)
        last = max((write_end[producers[s]] for s, _ in p.reads if s in producers),
                   default=0)
        for s, n in p.reads:
            src = producers.get(s)
            t = max(t + n, write_end.get(src, n) if src is not None else n)
            if src is not None:
                lag = max(t - write_end[src], last - write_end[src])
                frames[s] = 1 + -(-max(0, lag) // interval)
    return frames


def simulate(procs: list[ProcessModel], depths: dict[str, int], outputs: list[str],
             frames: int = 5, max_events: int = 400_000) -> dict:
    """The dataflow run by SimPy: `procs` as processes over stores of the streams' `depths`
    (the port streams, absent there, unbounded), `frames` frames back to back; elements move
    one a cycle, in chunks where the tensors are large (at most about `max_events` moves).
    Returns the first frame's latency, the mean interval between the last three frames' ends
    (MobileNetV2's frames end 2.5 M and 1.2 M cycles apart by turns, 1.84 M on average, as
    its residual joins take one frame and then the next) and each stream's largest occupancy
    (in elements)."""
    import simpy

    sizes = [n for p in procs for _, n in p.reads] + [p.out_elements for p in procs]
    chunk = max(1, math.ceil(sum(sizes) * frames / max_events))
    env = simpy.Environment()
    per_frame = {s: n for p in procs for s, n in p.reads}  # a stream's elements a frame

    def capacity(s: str) -> float:
        """A stream's depth in chunks: its whole frames' chunks and the rest's (a frame's
        last chunk may be short: counting elements alone would hold fewer frames)."""
        if s not in depths:
            return float("inf")
        n = per_frame.get(s) or depths[s]
        whole, rest = divmod(depths[s], n)
        return max(1, whole * math.ceil(n / chunk) + math.ceil(rest / chunk))

    stores = {s: simpy.Store(env, capacity=capacity(s))
              for p in procs for s in [*(r for r, _ in p.reads), *p.writes]}
    peak = dict.fromkeys(stores, 0)
    done: list[list[float]] = [[] for _ in outputs]

    def put(s: str):
        def after(_event):
            peak[s] = max(peak[s], len(stores[s].items) * chunk)
        ev = stores[s].put(1)
        ev.callbacks.append(after)
        return ev

    def run(p: ProcessModel):
        if p.forwards:  # each value written on as it is read
            s, n = p.reads[0]
            for _ in range(frames * math.ceil(n / chunk)):
                t0 = env.now
                yield stores[s].get()
                if env.now - t0 < chunk:
                    yield env.timeout(chunk - (env.now - t0))
                yield env.all_of([put(w) for w in p.writes])
            return
        for _ in range(frames):
            for s, n in p.reads:
                for _ in range(math.ceil(n / chunk)):
                    t0 = env.now
                    yield stores[s].get()
                    if env.now - t0 < chunk:  # (reading as it is written costs no more)
                        yield env.timeout(chunk - (env.now - t0))
            yield env.timeout(p.compute)
            for _ in range(math.ceil(p.out_elements / chunk)):
                yield env.timeout(chunk)
                yield env.all_of([put(s) for s in p.writes])

    def source(s: str, n: int):
        for _ in range(frames):
            for _ in range(math.ceil(n / chunk)):
                yield env.timeout(chunk)
                yield put(s)

    def sink(k: int, s: str, n: int):
        for _ in range(frames):
            for _ in range(math.ceil(n / chunk)):
                yield stores[s].get()
            done[k].append(env.now)

    written = {s for p in procs for s in p.writes}
    for p in procs:
        for s, n in p.reads:
            if s not in written:
                env.process(source(s, n))
        env.process(run(p))
    out_sizes = {s: p.out_elements for p in procs for s in p.writes}
    for k, s in enumerate(outputs):
        env.process(sink(k, s, out_sizes[s]))
    env.run()
    ends = [max(d[f] for d in done) for f in range(frames)] if all(done) else []
    return {"latency_cycles": int(ends[0]) if ends else None,
            "interval_cycles": int((ends[-1] - ends[-3]) / 2) if len(ends) > 2 else
            int(ends[-1] - ends[-2]) if len(ends) > 1 else None,
            "fifo_peak": {s: v for s, v in peak.items() if s in depths},
            "frames": frames, "chunk": chunk}


def estimate(procs: list[ProcessModel], producers: dict[str, str], fifos: dict[str, tuple],
             outputs: list[str], part_name: str, clock_mhz: float) -> dict:
    """The design's estimate as JSON: per process (cycles, resources), per FIFO, the totals,
    the part's resources and whether the design fits, latency and frames per second from
    the cycle model and from the simulation, and how far apart they are."""
    layers = []
    total = {"lut": 0, "dsp": 0, "bram18": 0, "uram": 0}
    for p in procs:
        r = resources(p)
        layers.append({"process": p.name, "macs": p.macs, "pe": p.pe, "simd": p.simd,
                       "compute_cycles": p.compute, "cycles": p.cycles, **r})
        for k in total:
            total[k] += r[k]
    streams = {}
    for s, (depth, width, *uram) in fifos.items():
        r = fifo_resources(depth, width, *uram)
        streams[s] = {"depth": depth, "width": width, **r}
        for k in total:
            total[k] += r[k]
    model = analytic(procs, producers)
    sim = simulate(procs, {s: f[0] for s, f in fifos.items()}, outputs)
    for s, v in sim["fifo_peak"].items():
        streams[s]["peak"] = v
    part = part_of(part_name)
    period_us = 1.0 / clock_mhz
    out = {"clock_mhz": clock_mhz, "part": part_name, "layers": layers, "fifos": streams,
           "total": total,
           "model": {"latency_cycles": model["latency_cycles"],
                     "interval_cycles": model["interval_cycles"],
                     "latency_ms": model["latency_cycles"] * period_us / 1000,
                     "fps": clock_mhz * 1e6 / max(1, model["interval_cycles"])},
           "simulation": {k: sim[k] for k in ("latency_cycles", "interval_cycles", "frames",
                                              "chunk")},
           "warnings": []}
    for k in ("latency_cycles", "interval_cycles"):
        a, b = model[k], sim[k]
        out["simulation"][f"{k.split('_')[0]}_vs_model"] = \
            None if b is None or not a else round(b / a - 1, 4)
    if part is None:
        out["warnings"].append(f"edgec has no resource figures for part {part_name}: the fit "
                               f"is not checked (it knows {', '.join(PARTS)})")
    else:
        out["part_resources"] = asdict(part)
        over = [f"{k.upper()} {total[k]} of {getattr(part, k)}" for k in total
                if total[k] > getattr(part, k)]
        out["fits"] = not over
        if over:
            out["warnings"].append(f"the design does not fit {part_name}: " + ", ".join(over))
    slower = out["simulation"].get("interval_vs_model")
    if slower is not None and slower > SIM_SLOWER:
        out["warnings"].append(
            f"frames back to back, the dataflow simulation's interval is {slower:+.1%} the "
            f"cycle model's ({sim['interval_cycles']} cycles, "
            f"{clock_mhz * 1e6 / sim['interval_cycles']:.4g} frames/s): processes joined by "
            "one-frame FIFOs wait on each other's reads and writes, which the model does "
            "not see; deeper FIFOs (-D the depth macros) give the model's rate")
    return out


def report_lines(e: dict) -> list[str]:
    """The estimate in words, for report.txt."""
    m, s, t = e["model"], e["simulation"], e["total"]
    lines = [f"HLS estimate ({e['part']} at {e['clock_mhz']:g} MHz; codegen/hls_estimate.py "
             "says how): latency "
             f"{m['latency_cycles']} cycles = {m['latency_ms']:.4f} ms, "
             f"{m['fps']:.1f} frames/s (interval {m['interval_cycles']} cycles); "
             f"LUT {t['lut']}, DSP {t['dsp']}, BRAM18 {t['bram18']}, URAM {t['uram']}"]
    if s["latency_cycles"] is not None:
        lines.append(f"  dataflow simulation ({s['frames']} frames, {s['chunk']} element(s) "
                     f"a step): latency {s['latency_cycles']} cycles "
                     f"({s['latency_vs_model']:+.2%} of the model), interval "
                     f"{s['interval_cycles']} cycles ({s['interval_vs_model']:+.2%})")
    for x in e["layers"]:
        lines.append(f"  {x['process']}: {x['cycles']} cycles ({x['compute_cycles']} computing"
                     f", PE {x['pe']} x SIMD {x['simd']}), LUT {x['lut']}, DSP {x['dsp']}, "
                     f"BRAM18 {x['bram18']}")
    lines += [f"  warning: {w}" for w in e["warnings"]]
    return lines
