"""Mixed precision by sensitivity analysis for `quantize{keep=sensitivity,budget=DB}`: which
layers stay float so that the outputs' SQNR on the samples meets `budget`, keeping at least
`min_quantized_macs` of the multiply-accumulates quantized.

The unit measured is a quantization point: a layer's weight, or an activation tensor that
the layers reading or writing it quantize. A point's sensitivity is the outputs' SQNR with
that point alone quantized, everything else float. Quantization noise of the points is nearly
independent, so the outputs' noise power with a set Q of points quantized is close to the sum
of theirs alone:

    N(Q) ~ sum_{p in Q} N_p,   N_p = 10^(-sqnr_p / 10) (relative to the signal).

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

The greedy choice takes the points in order of sensitivity (lowest SQNR first); removing one
keeps float every layer that quantizes it, skipped where their MACs would bring the quantized
share under `min_quantized_macs`; once the noise predicted by the sum over the points left
meets the budget the outputs are measured, and the noise measured is the base of the next
prediction, until the measurement meets the budget or no point is left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# samples the per-point measurements run on (each reruns the model from its point on; every
# value of the float model is held for them: memory grows with SAMPLES x activations)
SAMPLES = 8


@dataclass(frozen=True)
class Point:
    """A quantized tensor: a layer's weight or an activation."""

    name: str  # "weight of NODE" or the activation's value name
    layers: tuple[str, ...]  # the layers that quantize it: all float, it is float
    sensitivity_db: float  # the outputs' SQNR with this point alone quantized


@dataclass(frozen=True)
class Kept:
    """A layer kept float, for the point whose noise it removes."""

    name: str
    macs: int
    point: str
    sensitivity_db: float


@dataclass(frozen=True)
class MixedPrecision:
    """The choice: the layers kept float (for the most sensitive points first), the outputs'
    SQNR with them float, the quantized share of the MACs, and whether the budget was met."""

    budget_db: float
    min_quantized_macs: float
    points: list[Point]  # every point, most sensitive first
    kept: list[Kept]
    output_sqnr_db: float
    quantized_mac_share: float
    met: bool
    measurements: int  # model runs over the samples the choice took, beyond the per-point ones

    def record(self) -> dict:
        """The quantization record's entry (graph.record.quantization.mixed_precision)."""
        return {"method": "sensitivity", "budget_db": self.budget_db,
                "min_quantized_macs": self.min_quantized_macs, "met": bool(self.met),
                "output_sqnr_db": _finite(self.output_sqnr_db),
                "quantized_mac_share": round(self.quantized_mac_share, 4),
                "kept_float": [{"node": x.name, "macs": x.macs, "for": x.point,
                                "sensitivity_db": _finite(x.sensitivity_db)}
                               for x in self.kept],
                "points": [{"point": p.name, "sensitivity_db": _finite(p.sensitivity_db)}
                           for p in self.points]}


def noise(sqnr: float) -> float:
    """The noise power relative to the signal of an SQNR in dB."""
    return 0.0 if not np.isfinite(sqnr) else 10.0 ** (-sqnr / 10.0)


def db(n: float) -> float:
    return float("inf") if n <= 0 else -10.0 * np.log10(n)


def choose(points: list[Point], macs: dict[str, int], measure: Callable[[set[str]], float],
           budget_db: float, min_quantized_macs: float, fixed: set[str] = frozenset()
           ) -> MixedPrecision:
    """Keep the fewest layers (`macs`: every candidate layer's MACs) float, for the most
    sensitive `points` first, for the outputs' SQNR that `measure(float layers)` gives to
    reach `budget_db` with at least `min_quantized_macs` of the MACs quantized; `fixed`:
    layers float whatever the choice."""
    order = sorted(points, key=lambda p: p.sensitivity_db)
    total = sum(macs.values()) or 1
    floats = set(fixed)
    kept: list[Kept] = []
    current = measure(floats)
    runs = 1
    base, removed = noise(current), 0.0  # measured with `floats`; removed since
    gone: set[str] = {p.name for p in order if set(p.layers) <= floats}
    for p in order:
        if current >= budget_db:
            break
        if p.name in gone:
            continue
        need = [x for x in p.layers if x not in floats]
        if (sum(macs[x] for x in floats | set(need))) / total > 1 - min_quantized_macs:
            continue
        floats |= set(need)
        kept += [Kept(x, macs[x], p.name, p.sensitivity_db) for x in need]
        now = {q.name for q in order if q.name not in gone and set(q.layers) <= floats}
        removed += sum(noise(q.sensitivity_db) for q in order if q.name in now)
        gone |= now
        if db(base - removed) >= budget_db:
            current = measure(floats)
            runs += 1
            base, removed = noise(current), 0.0
    if removed:  # layers kept float since the last measurement
        current = measure(floats)
        runs += 1
    share = 1 - sum(macs[x] for x in floats) / total
    return MixedPrecision(budget_db, min_quantized_macs, order, kept, current, share,
                          current >= budget_db, runs)


def _finite(x: float) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 2)
