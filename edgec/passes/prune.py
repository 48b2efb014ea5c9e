"""Magnitude pruning: the weights of convolutions and matrix products set to zero where they
matter least, for models that were not pruned in training (the `sparsify` pass then runs the
layers whose zeros pay on the sparse kernels).

Each layer's weight is seen output-major, W [outputs, inputs] (a Conv's [M, C*KH*KW], a
Gemm's B transposed as needed), and scored by pattern:

- `unstructured`: each weight by |w|;
- `Rx1` (2x1, 4x1, 8x1, 16x1): blocks of R consecutive outputs at one input by their L2 norm
  (the blocks of the sparse kernels' `bcsr Rx1`: one input load serves R channels);
- `Rx4` (1x4, 16x4, ...): blocks of R consecutive outputs x 4 consecutive input channels at
  one tap by their L2 norm (1x4: the float kernels' `bcsr 1x4`; Rx4: the int8 kernels' dot4
  groups, R their lanes);
- `N:M` (2:4, 1:4, ...): within every M consecutive input channels of an output at one tap
  of a convolution's window (a Gemm's M consecutive inputs), all but the N largest |w|
  (the sparsity is 1 - N/M, whatever `sparsity` says): the groups of the sparse kernels'
  `nm N:M` and of N:M hardware, which take a convolution's channels innermost.

With `scope` layer, each layer loses `sparsity` of its blocks; with global, one threshold on
the scores, each divided by its layer's root-mean-square weight, is set for all layers
together so that `sparsity` of all blocks go (layers whose weights matter less lose more).
Depthwise and grouped convolutions stay dense, as do the layers named in `exclude`.

Given calibration samples (`samples`: an .npz; `feeds` from Python), the pruning is
data-aware instead (prune_data.py): per layer, the weights whose removal costs the layer's
output the least on those inputs go, and the remaining ones are updated to make up for them
(OBS, in SparseGPT's form), in the same patterns, per layer. The pass says which mode runs
(on `log`), and the data-aware one, minutes on a ResNet, shows its progress on a terminal.

`channel` removes whole output channels (neurons) with the least weight norm and rewires
the layers that read them, so that the shapes shrink (prune_channels.py). `channel` and the
Rx4 groups prune by magnitude even when samples are given (they may be there to calibrate
the quantization); the layers' record.pruned says so. graph.record.pruning records each
pruned layer's share of zero weights for the reports (the HTML report's sparsity section).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PassError
from ..ir import DType, Graph, Node
from ..ir.records import PrunedLayer, PruneNote, PruningRecord
from ..ir.sparse import pad_channels
from .manager import register_pass
from .prune_channels import prune_channels
from .prune_data import layer_hessians, obs_prune

_WEIGHT_INPUT = {"Conv": 1, "FusedConv": 1, "Gemm": 1, "MatMul": 1, "FusedMatMul": 1}


def _weight(node: Node) -> np.ndarray | None:
    """The node's constant float weight, output-major [outputs, inputs], or None."""
    if node.op not in _WEIGHT_INPUT or len(node.inputs) < 2:
        return None
    w = node.inputs[1]
    if w is None or not w.is_const or w.dtype is not DType.F32:
        return None
    a = w.const
    if node.op in ("Conv", "FusedConv"):
        if node.attrs["group"] != 1 or a.ndim < 3:
            return None
        return a.reshape(a.shape[0], -1)
    if a.ndim != 2:
        return None
    if node.op == "Gemm":
        return a if node.attrs.get("transB") else a.T
    return a.T


def _back(node: Node, wo: np.ndarray) -> np.ndarray:
    """An output-major weight in the node's own layout."""
    shape = node.inputs[1].shape
    if node.op in ("Conv", "FusedConv"):
        return wo.reshape(shape)
    if node.op == "Gemm" and node.attrs.get("transB"):
        return wo
    return np.ascontiguousarray(wo.T)


def parse_pattern(pattern: str) -> tuple[str, int, int]:
    """("unstructured", 1, 0), ("rows", R, 0), ("groups", R, 4), ("nm", N, M) or
    ("channel", 1, 0)."""
    if pattern in ("unstructured", "channel"):
        return pattern, 1, 0
    try:
        if pattern.endswith("x1") and int(pattern[:-2]) in (1, 2, 4, 8, 16):
            return "rows", int(pattern[:-2]), 0
        if pattern.endswith("x4") and int(pattern[:-2]) in (1, 2, 4, 8, 16):
            return "groups", int(pattern[:-2]), 4
        n, m = (int(p) for p in pattern.split(":"))
        if 0 < n < m <= 16:
            return "nm", n, m
    except ValueError:
        pass
    raise PassError(f"prune: pattern {pattern!r} is not 'unstructured', 'Rx1' or 'Rx4' (R in "
                    "1, 2, 4, 8, 16), 'N:M' (0 < N < M <= 16) or 'channel'")


def prune_groups(wo: np.ndarray, sparsity: float, rows: int, taps: int = 1) -> np.ndarray:
    """`wo` [outputs, C * taps] (a convolution's, C-major) with `sparsity` of its blocks of
    `rows` outputs x 4 consecutive input channels at one tap zeroed, by L2 norm: the dot4
    groups of the int8 kernels (lowering/kernels/blocked_quant.py), rows = their lanes."""
    o, i = wo.shape
    c = i // taps
    w = np.zeros((-(-o // rows) * rows, -(-c // 4) * 4, taps), np.float64)
    w[:o, :c] = wo.reshape(o, c, taps)
    blocks = w.reshape(-1, rows, w.shape[1] // 4, 4, taps)
    keep = _keep(np.sqrt((blocks ** 2).sum(axis=(1, 3))), sparsity)
    mask = np.broadcast_to(keep[:, None, :, None, :], blocks.shape).reshape(w.shape)
    return np.where(mask[:o, :c].reshape(o, i), wo, 0).astype(wo.dtype)


def _scores(wo: np.ndarray, rows: int) -> np.ndarray:
    """Per block of `rows` outputs x one input: the L2 norm, [ceil(outputs/R), inputs]."""
    w = pad_channels(wo, rows)
    return np.sqrt((w.astype(np.float64) ** 2).reshape(-1, rows, wo.shape[1]).sum(axis=1))


def _apply(wo: np.ndarray, keep: np.ndarray, rows: int) -> np.ndarray:
    mask = np.repeat(keep, rows, axis=0)[:wo.shape[0]]
    return np.where(mask, wo, 0).astype(wo.dtype)


def _nm(wo: np.ndarray, n: int, m: int, taps: int = 1) -> np.ndarray:
    """All but the N largest |w| of every M consecutive input channels at one tap (`wo`
    [outputs, C * taps], C-major: a Gemm's taps are 1)."""
    o, i = wo.shape
    c = i // taps
    w = np.zeros((o, taps, -(-c // m) * m), np.float64)
    w[:, :, :c] = np.abs(wo.reshape(o, c, taps).transpose(0, 2, 1))
    groups = w.reshape(o, taps, -1, m)
    order = np.argsort(-groups, axis=3, kind="stable")
    keep = np.zeros_like(groups, bool)
    np.put_along_axis(keep, order[..., :n], True, axis=3)
    keep = keep.reshape(o, taps, -1)[:, :, :c].transpose(0, 2, 1).reshape(o, i)
    return np.where(keep, wo, 0).astype(wo.dtype)


def _taps(node: Node) -> int:
    """The window positions of a convolution's weight (C-major inputs); 1 for the rest."""
    return int(np.prod(node.inputs[1].shape[2:])) if node.op in ("Conv", "FusedConv") else 1


def _tap_major(taps: int, inputs: int) -> np.ndarray:
    """The permutation of C-major inputs [C * taps] that puts each tap's channels together."""
    return np.arange(inputs).reshape(inputs // taps, taps).T.reshape(-1)


def prune_weight(wo: np.ndarray, sparsity: float, pattern: str = "unstructured",
                 taps: int = 1) -> np.ndarray:
    """One output-major weight [outputs, inputs] pruned by magnitude, alone (scope layer);
    `taps`: a convolution's KH * KW (its inputs are C-major), for the Rx4 groups."""
    kind, a, b = parse_pattern(pattern)
    if kind == "nm":
        return _nm(wo, a, b, taps)
    if kind == "channel":
        keep = _keep(np.sqrt((wo.astype(np.float64) ** 2).sum(axis=1, keepdims=True)), sparsity)
        return np.where(keep, wo, 0).astype(wo.dtype)
    if kind == "groups":
        return prune_groups(wo, sparsity, a, taps)
    rows = a if kind == "rows" else 1
    return _apply(wo, _keep(_scores(wo, rows), sparsity), rows)


def _keep(scores: np.ndarray, sparsity: float) -> np.ndarray:
    """The blocks that stay: all but the `sparsity` share with the lowest scores."""
    cut = int(round(sparsity * scores.size))
    keep = np.ones(scores.size, bool)
    keep[np.argsort(scores.reshape(-1), kind="stable")[:cut]] = False
    return keep.reshape(scores.shape)


@register_pass("prune", writes=("pruning",))
@dataclass(frozen=True)
class Prune:
    """Set the smallest weights (or blocks of them) of convolutions and matrix products to
    zero: `sparsity` of them per layer, or over all layers together."""

    sparsity: float = 0.5
    pattern: str = "unstructured"
    scope: str = "layer"
    exclude: str = ""
    samples: str = ""  # an .npz of calibration samples: data-aware pruning
    damp: float = 1.0  # data-aware: H += damp * mean(diag(H)) (prune_data.py: why 1)
    feeds: Any = field(default=None, compare=False, metadata={"option": False})
    log: Any = field(default=None, compare=False, metadata={"option": False})

    def run(self, graph: Graph) -> bool:
        kind, a, b = parse_pattern(self.pattern)
        if not 0.0 <= self.sparsity < 1.0:
            raise PassError(f"prune: sparsity must be in [0, 1), not {self.sparsity}")
        if self.scope not in ("layer", "global"):
            raise PassError(f"prune: scope must be 'layer' or 'global', not {self.scope!r}")
        skip = {s for s in self.exclude.split(",") if s}
        unknown = skip - {n.name for n in graph.nodes}
        if unknown:
            raise PassError(f"prune: exclude names no node of the graph: {sorted(unknown)}")
        if kind == "channel":
            if self.sparsity > 0:
                self._say(f"prune: channel, sparsity {self.sparsity}, by weight norm" +
                          ("; the samples calibrate only the quantization"
                           if self.samples or self.feeds is not None else ""))
            return self.sparsity > 0 and prune_channels(graph, self.sparsity, skip)
        layers = [(n, w) for n in graph.nodes if n.name not in skip
                  and (w := _weight(n)) is not None and w.size]
        if not layers or (kind != "nm" and self.sparsity == 0.0):
            return False
        feeds = self._feeds(graph)
        if kind == "groups" and self.scope == "global":
            raise PassError(f"prune: pattern {self.pattern} prunes per layer (scope=layer)")
        # the samples may be there for quantization: the groups are pruned by magnitude,
        # and each layer's meta says so
        by_magnitude = "magnitude: data-aware pruning takes unstructured, Rx1 and N:M" \
            if feeds and kind == "groups" else ""
        feeds = [] if by_magnitude else feeds
        if feeds and self.scope == "global":
            raise PassError("prune: data-aware pruning (with samples) is per layer; use "
                            "scope=layer")
        amount = self.pattern if kind == "nm" else f"{self.pattern}, sparsity {self.sparsity}"
        self._say(f"prune: {len(layers)} layers, {amount}, "
                  + (f"data-aware (OBS on {len(feeds)} calibration samples)" if feeds else
                     f"by magnitude ({by_magnitude.split(': ')[1]}; the samples calibrate "
                     "only the quantization)" if by_magnitude else "by magnitude"))
        bar = self._bar(len(feeds) + len(layers)) if feeds else None
        hess = layer_hessians(graph, [n for n, _ in layers], feeds,
                              done=bar.update if bar else None) if feeds else {}
        rows = a if kind == "rows" else 1
        threshold = None
        if self.scope == "global" and kind != "nm":
            norm = [_scores(w, rows) / _rms(w) for _, w in layers]
            threshold = np.quantile(np.concatenate([s.reshape(-1) for s in norm]),
                                    self.sparsity)
        for node, wo in layers:
            if hess and kind == "nm":  # its groups: consecutive channels at one tap
                perm = _tap_major(_taps(node), wo.shape[1])
                new = np.empty_like(wo)
                new[:, perm] = obs_prune(wo[:, perm], hess[node.name][np.ix_(perm, perm)],
                                         self.sparsity, kind, a, b, damp=self.damp)
            elif hess:
                new = obs_prune(wo, hess[node.name], self.sparsity, kind, a, b,
                                damp=self.damp)
            elif kind == "nm":
                new = _nm(wo, a, b, _taps(node))
            elif kind == "groups":
                new = prune_groups(wo, self.sparsity, a, _taps(node))
            else:
                s = _scores(wo, rows)
                keep = s / _rms(wo) > threshold if threshold is not None else \
                    _keep(s, self.sparsity)
                new = _apply(wo, keep, rows)
            node.record.pruned = PruneNote(
                self.pattern, round(1 - np.count_nonzero(new) / new.size, 4),
                data_aware=bool(hess), by_magnitude=by_magnitude)
            wv = node.inputs[1]
            graph.set_input(node, 1, graph.const(_back(node, new), f"{wv.name}_pruned"))
            if bar:
                bar.update()
        if bar:
            bar.close()
        # for the reports: a layer keeps its zeros when a later pass (quantize, fuse) makes
        # another node of it, or a kernel without a sparse form runs it
        graph.record.pruning = PruningRecord(
            self.pattern, self.scope, self.sparsity,
            [PrunedLayer(n.name, n.op, n.outputs[0].name, int(w.size),
                         n.record.pruned.sparsity) for n, w in layers])
        return True

    def _say(self, text: str) -> None:
        print(text, file=self.log if self.log is not None else sys.stderr)

    def _bar(self, steps: int):
        """A progress bar over the samples run for the second moments, then the layers, on
        `log` where it is a terminal (tqdm's disable=None)."""
        from tqdm import tqdm

        return tqdm(total=steps, desc="prune: data-aware", unit="step", leave=False,
                    disable=None, file=self.log if self.log is not None else sys.stderr)

    def _feeds(self, graph: Graph) -> list[dict]:
        from .quantize import load_samples, sample_feeds

        if self.feeds is not None and self.samples:
            raise PassError("prune: give calibration samples once (feeds or samples)")
        if self.samples:
            return sample_feeds(graph, load_samples(self.samples))
        return sample_feeds(graph, dict(self.feeds)) if self.feeds is not None else []


def _rms(w: np.ndarray) -> float:
    return max(float(np.sqrt(np.mean(w.astype(np.float64) ** 2))), 1e-30)
