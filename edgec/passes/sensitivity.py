"""Mixed precision by sensitivity analysis for `quantize{keep=sensitivity,budget=DB}`: which
activations are held in 16 bits and which layers stay float so that the outputs' SQNR on the
samples meets `budget`, keeping at least `min_quantized_macs` of the multiply-accumulates in
int8 (W8A16 and float layers count against it).

The unit measured is a quantization point: a layer's weight, or an activation tensor that
the layers reading or writing it quantize. A point's sensitivity is the outputs' SQNR with
that point alone quantized, everything else float; it ranks the points. As a first
approximation the outputs' noise power with a set Q of points quantized is the sum of theirs
alone,

    N(Q) ~ sum_{p in Q} N_p,   N_p = 10^(-sqnr_p / 10) (relative to the signal),

but only as a ranking: on real models neighbouring points are far from independent (below).

Points, not layers: an activation between two layers stays quantized while either of them is,
so a layer's own effect cannot be told from its neighbours' (the worst tensor of a real model
is often one whose clipping both its writer and its reader suffer). The reverse measure,
everything quantized but one layer, ranks badly on real models: where the error comes from
many layers, removing any one of them barely moves the outputs (issue 30: budget=25 dB kept
every layer of one network float that way).

The outputs are measured before a final Softmax (on the logits) where the model ends with
one: the probabilities saturate, and a time step whose best class flips moves their SQNR by
a jump, so that on a recognizer's softmax the SQNR is no sum (keeping its most sensitive layer
float there lowered it, 16.4 -> 15.5 dB), where the logits' error adds up from the layers'.
The budget is then on the logits too.

Two rungs above int8, tried in order (`rungs`, "int16,float" by default): an activation point
held in 16 bits (int16, minmax range: 256 times finer steps, about 48 dB less noise) costs
only the MACs of the layers that read it, which then run W8A16, and nothing where its readers
are Adds; float costs every layer that quantizes the point. The greedy choice takes the points
in order of sensitivity (lowest SQNR first), first giving each activation point int16, then,
where the outputs still miss the budget, keeping float the layers of each point int16 did not
cover (weights, and activations whose readers did not fit), each step skipped where it would
bring the int8 share of the MACs under `min_int8_macs`. The outputs are measured again after
every step, and the next step taken from that measurement: the points' noises are not
independent (a layer's output and the residual sum it feeds pass each other's errors on, so
either alone looks decisive and removing one barely moves the outputs), so no prediction from
their sum decides; each step's measured gain is recorded. A step that gains under 0.1 dB is
undone (it costs MACs, or at least the 8-bit tiles of the layer that writes a 16-bit tensor),
and tried again together with the next step that gains nothing alone: a neighbour's noise can
hide a point's until both are raised. Points whose noise alone is under a
hundredth of the budget's (sensitivity over budget + 20 dB) are not tried: each step costs a
measurement. The int16 rung takes the points whose readers have no MACs (Adds) first, in
the same order, and then the others, so that the MACs the budget leaves go where they are
needed (on MiniLM a LayerNorm's output read by three MatMuls took most of them for 0.5 dB
before the free residual sums were reached).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# samples the per-point measurements run on by default (quantize's search_samples; each reruns
# the model from its point on; every value of the float model is held for them: memory grows
# with the samples x activations)
SAMPLES = 8


@dataclass(frozen=True)
class Point:
    """A quantized tensor: a layer's weight or an activation."""

    name: str  # "weight of NODE" or the activation's value name
    layers: tuple[str, ...]  # the layers that quantize it: all float, it is float
    sensitivity_db: float  # the outputs' SQNR with this point alone quantized
    # the layers whose MACs run W8A16 when this activation is held in 16 bits (its readers
    # among the Convs, Gemms and MatMuls); None for a weight, which has no int16 rung
    readers: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Kept:
    """A layer kept float, or run W8A16 ("int16": it reads a 16-bit point), for the point
    whose noise it removes."""

    name: str
    macs: int
    point: str
    sensitivity_db: float
    precision: str = "float"


@dataclass(frozen=True)
class Step:
    """One step of the choice: a point raised to `rung`, the layers that took a higher
    precision for it (none where the 16-bit point's readers are Adds), and the outputs' SQNR
    measured before and after."""

    point: Point
    rung: str
    layers: tuple[str, ...]
    before_db: float
    after_db: float


@dataclass(frozen=True)
class MixedPrecision:
    """The choice: the layers kept float and those run W8A16 (for the most sensitive points
    first), the activation points held in 16 bits, the outputs' SQNR, the shares of the MACs
    per precision, and whether the budget was met."""

    budget_db: float
    min_int8_macs: float
    points: list[Point]  # every point, most sensitive first
    steps: list[Step]
    kept: list[Kept]
    wide: list[str]  # the activation points held in 16 bits
    output_sqnr_db: float
    mac_shares: dict[str, float]  # int8, int16, float
    met: bool
    measurements: int  # model runs over the samples the choice took, beyond the per-point ones

    @property
    def floats(self) -> set[str]:
        return {k.name for k in self.kept if k.precision == "float"}

    @property
    def quantized_mac_share(self) -> float:
        return self.mac_shares["int8"] + self.mac_shares["int16"]

    def record(self) -> dict:
        """The quantization record's entry (graph.record.quantization.mixed_precision)."""
        def row(x: Kept) -> dict:
            return {"node": x.name, "macs": x.macs, "for": x.point,
                    "sensitivity_db": _finite(x.sensitivity_db)}

        return {"method": "sensitivity", "budget_db": self.budget_db,
                "min_int8_macs": self.min_int8_macs, "met": bool(self.met),
                "output_sqnr_db": _finite(self.output_sqnr_db),
                "quantized_mac_share": round(self.quantized_mac_share, 4),
                "mac_shares": {k: round(v, 4) for k, v in self.mac_shares.items()},
                "int16_points": list(self.wide),
                "kept_float": [row(x) for x in self.kept if x.precision == "float"],
                "kept_int16": [row(x) for x in self.kept if x.precision == "int16"],
                "steps": [{"point": x.point.name, "to": x.rung, "layers": list(x.layers),
                           "outputs_db": [_finite(x.before_db), _finite(x.after_db)]}
                          for x in self.steps],
                "measurements": self.measurements,
                "points": [{"point": p.name, "sensitivity_db": _finite(p.sensitivity_db)}
                           for p in self.points]}


RUNGS = ("int16", "float")
TRIED_ABOVE_BUDGET_DB = 20.0  # points less sensitive than budget + this are not tried
MIN_GAIN_DB = 0.1  # a step that moves layers off int8 for less is undone


def noise(sqnr: float) -> float:
    """The noise power relative to the signal of an SQNR in dB."""
    return 0.0 if not np.isfinite(sqnr) else 10.0 ** (-sqnr / 10.0)


def db(n: float) -> float:
    return float("inf") if n <= 0 else -10.0 * np.log10(n)


def mac_shares(macs: dict[str, int], floats: set[str], wide_layers: set[str]
               ) -> dict[str, float]:
    """The shares of the MACs in int8, int16 (W8A16) and float."""
    total = sum(macs.values()) or 1
    f = sum(macs[x] for x in floats)
    w = sum(macs[x] for x in wide_layers - floats)
    return {"int8": 1 - (f + w) / total, "int16": w / total, "float": f / total}


def choose(points: list[Point], macs: dict[str, int],
           measure: Callable[[set[str], set[str]], float], budget_db: float,
           min_int8_macs: float, fixed: set[str] = frozenset(),
           fixed_wide: set[str] = frozenset(), rungs: tuple[str, ...] = RUNGS
           ) -> MixedPrecision:
    """Raise the fewest points (`macs`: every candidate layer's MACs) to int16 or float, the
    most sensitive `points` first, rung by rung (`rungs`, module doc), until the outputs'
    SQNR that `measure(float layers, 16-bit points)` gives reaches `budget_db`, keeping at
    least `min_int8_macs` of the MACs in int8; `fixed`: layers float whatever the choice,
    `fixed_wide`: points held in 16 bits whatever the choice."""
    order = sorted(points, key=lambda p: p.sensitivity_db)
    floats, wide = set(fixed), set(fixed_wide)
    readers = {p.name: set(p.readers or ()) for p in order}

    def wide_layers(names: set[str]) -> set[str]:
        return set().union(*(readers.get(k, set()) for k in names))

    steps: list[Step] = []
    current = measure(floats, wide)
    runs = 1
    tried = [p for p in order if p.sensitivity_db < budget_db + TRIED_ABOVE_BUDGET_DB]
    # the int16 steps that cost no MAC first (points read by Adds only), so that the MACs go
    # to the points that need them
    free = [p for p in tried if p.readers is not None and not sum(macs[x] for x in p.readers)]
    passes = [(r, free + [p for p in tried if p not in free]) if r == "int16" else (r, tried)
              for r in rungs]

    def raised(p: Point, rung: str, floats: set[str], wide: set[str]):
        """(the layers raised, float layers, 16-bit points) with `p` raised to `rung`, or
        None where that is no step (already there, no such rung for it, past the MACs)."""
        if set(p.layers) <= floats or p.name in wide or (rung == "int16" and p.readers is None):
            return None  # (float already, its noise removed by int16, or a weight)
        if rung == "int16":
            need = sorted(readers[p.name] - floats - wide_layers(wide))
            floats, wide = floats, wide | {p.name}
        else:
            need = sorted(set(p.layers) - floats)
            floats, wide = floats | set(need), wide
        if mac_shares(macs, floats, wide_layers(wide))["int8"] < min_int8_macs:
            return None
        return need, floats, wide

    held: tuple[Point, str] | None = None  # the last step undone for want of a gain
    for rung, candidates in passes:
        for p in candidates:
            if current >= budget_db:
                break
            step = raised(p, rung, floats, wide)
            if step is None:
                continue
            now = measure(*step[1:])
            runs += 1
            if now >= current + MIN_GAIN_DB:
                steps.append(Step(p, rung, tuple(step[0]), current, now))
                (_, floats, wide), current = step, now
                continue
            # no gain: a neighbour's noise may hide this point's (a layer's output and the
            # residual sum it feeds): the two together, with the last point that gained nothing
            both = held and raised(held[0], held[1], *step[1:])
            if both:
                together = measure(*both[1:])
                runs += 1
                if together >= current + MIN_GAIN_DB:
                    steps += [Step(p, rung, tuple(step[0]), current, now),
                              Step(held[0], held[1], tuple(both[0]), now, together)]
                    (_, floats, wide), current, held = both, together, None
                    continue
            held = (p, rung)
    shares = mac_shares(macs, floats, wide_layers(wide))
    kept = [Kept(x, macs[x], s.point.name, s.point.sensitivity_db, s.rung)
            for s in steps for x in s.layers if s.rung == "float" or x not in floats]
    return MixedPrecision(budget_db, min_int8_macs, order, steps, kept, sorted(wide), current,
                          shares, current >= budget_db, runs)


def _finite(x: float) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 2)
