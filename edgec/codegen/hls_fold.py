"""Folding an HLS design: how many outputs (PE) and terms (SIMD) each matrix-vector unit
computes a cycle (lowering/kernels/quant_mvau.py), and how many channels a pooling unit
(SIMD) or a depthwise convolution's unit (PE) takes a cycle (lowering/kernels/pool_unit.py,
dividing its channels), chosen before the kernels are built.

The design's frames per second are set by its slowest process (codegen/hls_estimate.py), so
folding works on the slowest: while the slowest process is a matrix-vector unit that can
fold further (SIMD to the next divisor of its K, then PE to the next divisor of its N; a
convolution's K here is its input channels, SIMD of which its unit reads a cycle) and that
makes it faster, it is folded, unless the design would then no longer fit the part (LUT,
DSP, BRAM18 by the estimate's formulas; a resource the unfolded design exceeds already is
left out of that test: folding cannot mend it, and the estimate says it), its computing
already takes under a quarter of the time its reads and writes take (each process reads and
writes a value a cycle), or the target is met: `target_fps` (its interval at the clock),
else the slowest process that cannot fold (an average pool, an addition: one element a
cycle today). What a node was given by `--strategy` stays as given.

A sparse unit (lowering/kernels/quant_sparse_pe.py) folds only to PE counts whose busiest
PE, under the reorder pass's interleaved order, works within SPARSE_BALANCE of the mean PE
(the counts that divide its channels first, then the others). Where it is the slowest and
no such count makes it faster, its dense unit (quant_mvau.py) takes its place, at the first
fold faster than it, if that fits: a sparse unit is never left slower than the dense one
could be (a layer with few channels, one of them far heavier than the rest, cannot spread
its zeros' savings over many PEs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..ir.graph import Node
from .hls_estimate import ProcessModel, fifo_resources, part_of, resources

# a unit is folded no further once its computing takes less than 1/IO_SHARE of the time its
# reads and writes take (what folding can still gain is then under a fifth)
IO_SHARE = 4
# a sparse unit folds to P PEs only where the interleaved order gets its busiest PE's work
# within this of the mean PE's (ir/sparse_pe.py): PEs idle more than that on average are
# area without speed. (Channels alone are too coarse a rule: with 2 a PE, tiny_cnn's stem,
# 22 non-zeros in 8 channels, one of them 10, ran its busiest PE at 2.0x the mean; with 8 a
# PE, ResNet-18's stem stopped at 8 PEs, 250 ms a frame against 167.)
SPARSE_BALANCE = 1.05
# whether folds that do not divide a dimension (padded to whole folds: operator padding) are
# tried (benchmarks/bench_hls.py --ablate turns it off to measure what padding gives)
PADDING = True


@dataclass
class Foldable:
    """A matrix-vector unit's process: its model at the current fold, its K and N."""

    node: Node
    model: ProcessModel
    k: int
    n: int
    extra: int = 0  # compute cycles that do not fold (a convolution's copy of its frame)
    kind: str = "hls-mvau"  # its strategy's kind
    # its compute cycles at (PE, SIMD) where the MACs do not say (a sparse unit)
    cost: Callable[[int, int], int] | None = None
    folds_simd: bool = True  # whether SIMD folds (not a sparse matrix product's)
    # a sparse unit's busiest PE's work over the mean PE's, at P PEs
    balance: Callable[[int], float] | None = None
    divisors: bool = False  # whether its folds divide its dimensions (a pooling unit's)
    # its (URAM frames, memories) at (PE, SIMD): its arrays partitioned as the fold asks
    layout: Callable[[int, int], tuple[list, list]] | None = None
    # a sparse unit's dense form, which folding takes where the sparse one cannot keep up
    dense: Foldable | None = None

    def compute(self, pe: int, simd: int) -> int:
        if self.cost is not None:
            return self.cost(pe, simd)
        return fold_compute(self.model.macs, self.k, self.n, pe, simd) + self.extra

    def cycles(self, pe: int, simd: int) -> int:
        m = self.model
        return sum(x for _, x in m.reads) + self.compute(pe, simd) + m.out_elements

    def folds(self, pe: int, simd: int):
        """The (PE, SIMD) past (`pe`, `simd`), in the order they are tried: SIMD up to K
        first, then PE up to N, each a divisor or a power of two (padded to whole folds)."""
        if self.folds_simd:
            yield from ((pe, d) for d in _steps(self.k, not self.divisors) if d > simd)
        steps = _steps(self.n, not self.divisors)
        if self.balance is None:
            yield from ((d, simd) for d in steps if d > pe)
            return
        # sparse PEs: only as many as the interleaved order keeps evenly busy; the counts
        # that do not divide the channels (rows past them compute nothing) after the rest
        odd = [d for d in range(1, self.n + 1) if d not in steps] if PADDING else []
        yield from ((d, simd) for d in steps + odd
                    if d > pe and self.balance(d) <= SPARSE_BALANCE)

    def faster(self, pe: int, simd: int, cycles: int) -> tuple[int, int] | None:
        """The first fold past (`pe`, `simd`) under `cycles`, taking its faster folds one
        after another as `fold` does, or None."""
        while self.cycles(pe, simd) >= cycles:
            step = next((f for f in self.folds(pe, simd)
                         if self.cycles(*f) < self.cycles(pe, simd)), None)
            if step is None:
                return None
            pe, simd = step
        return pe, simd

    def folded(self, pe: int, simd: int) -> ProcessModel:
        m = replace(self.model, pe=pe, simd=simd, compute=self.compute(pe, simd))
        if self.layout is not None:
            frames, memories = self.layout(pe, simd)
            m = replace(m, uram_frames=frames, buffers=memories)
        return m


def _steps(size: int, pad: bool = True) -> list[int]:
    """The folds of a dimension of `size`: its divisors and (`pad` and PADDING) the powers
    of two below it."""
    return sorted({d for d in range(1, size + 1) if size % d == 0} |
                  {1 << b for b in range(size.bit_length())
                   if 1 << b < size and pad and PADDING})


def fold_compute(macs: int, k: int, n: int, pe: int, simd: int) -> int:
    """The cycles a matrix-vector unit of K terms and N outputs computes for, at PE x SIMD
    (padded to whole folds: ceil(N / PE) x ceil(K / SIMD) a vector)."""
    return macs // (k * n) * -(-n // pe) * -(-k // simd)


def fold(fixed: list[ProcessModel], foldable: list[Foldable], part: str, clock_mhz: float,
         target_fps: float = 0.0, fifos: list[tuple[int, int]] = ()
         ) -> dict[str, tuple[Foldable, int, int]]:
    """{node name: (its unit, PE, SIMD)} for the `foldable` units, given the processes that
    cannot fold (`fixed`), the part and the clock; `target_fps` 0 for as fast as the rest
    allows; `fifos` the streams' (depth, width) as far as they are known before lowering
    (their BRAM counts against the part)."""
    limits = part_of(part)
    target = clock_mhz * 1e6 / target_fps if target_fps > 0 else \
        max((p.cycles for p in fixed), default=0)
    base = {"lut": 0, "dsp": 0, "bram18": 0, "uram": 0}
    for r in [resources(p) for p in fixed] + [fifo_resources(*f) for f in fifos]:
        for k in base:
            base[k] += r[k]

    def totals(units: list[Foldable]) -> dict[str, int]:
        total = dict(base)
        for u in units:
            r = resources(u.model)
            for k in total:
                total[k] += r[k]
        return total

    # a resource the unfolded design already exceeds (BRAM, where the weights alone do not
    # fit) is reported as over the part; folding, which cannot mend it, still spends the rest
    over = set() if limits is None else \
        {k for k, v in totals(foldable).items() if v > getattr(limits, k)}

    def fits(units: list[Foldable]) -> bool:
        if limits is None:
            return True
        return all(v <= getattr(limits, k) for k, v in totals(units).items() if k not in over)

    while foldable:
        slowest = max(foldable, key=lambda u: u.model.cycles)
        now = slowest.model.cycles
        io = now - slowest.model.compute
        if now <= target or slowest.model.compute * IO_SHARE <= io:
            break  # (its reads and writes already take most of its time)
        # the first fold that makes it faster (its reads and writes bound what folding gives)
        m = slowest.model
        step = next((f for f in slowest.folds(m.pe, m.simd) if slowest.cycles(*f) < now), None)
        if step is None and slowest.dense is not None:
            # a sparse unit that cannot get faster with its PEs evenly busy: the dense unit,
            # at its first fold faster than that, where one fits
            unit, dense = foldable.index(slowest), slowest.dense
            fast = dense.faster(1, 1, now)
            if fast is not None:
                dense.model = dense.folded(*fast)
                foldable[unit] = dense
                if fits(foldable):
                    continue
                foldable[unit] = slowest
            break
        if step is None:
            break
        before = slowest.model
        slowest.model = slowest.folded(*step)
        if not fits(foldable):
            slowest.model = before
            break
    return {u.node.name: (u, u.model.pe, u.model.simd) for u in foldable}
