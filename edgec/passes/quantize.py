"""The `quantize` pass: post-training quantization of a float model, calibrated on samples.

It writes the model as a QDQ graph, the form onnxruntime's `quantize_static` produces and
`fuse-qdq` (next in the pipeline) turns into integer ops, so that a model edgec quantizes and
one quantized elsewhere land on the same integer kernels:

- the weights of Conv, Gemm and MatMul (constant) become DequantizeLinear(codes, scales) with
  int8 codes of `bits` (8, 7, 4, 3 or 2; symmetric, per output channel or per tensor, by
  min-max or the ADMM projection: `calibration.py`; 7 bits keep every byte pair of the
  weights within what AVX2's vpmaddubsw sums exactly, kernel_ir.pairs_fit16, for the
  cheaper dot4 there; with `pairs` 8-bit codes keep within it too, each channel that needs it
  taking the least larger scale that does: calibration.py fit_pairs); biases stay float
  (fuse-qdq quantizes
  them to int32 with the product of the input's and the weight's scales);
- each activation those ops (and Add) read or write gets one QuantizeLinear/DequantizeLinear
  pair, uint8 with the scale and zero point of the range observed on the samples (minmax,
  percentile or KL calibration); an op's output is observed after the Relu or Clip that
  follows it, so the activation is part of the integer op; ops that commute with
  quantization (MaxPool, Reshape, Flatten, ...) pass their input's parameters on.

Activations read by the layers named in `int16` (W8A16: their inputs held in int16, minmax
range, and fuse-qdq's integer ops taking 16 bits) and those keep=sensitivity raises are int16
instead of uint8; their weights stay 8-bit.

Calibration runs the float graph in the reference interpreter over the samples. Without
samples the pass quantizes the weights only (data-free) and says so: the model then computes
in float with weights of `bits` precision, which shows the accuracy low-bit weights cost
(the default pipeline's dequantize-weights folds them, so the float kernels run them).
Nodes named in `skip` keep float. A graph that already has QuantizeLinear or
DequantizeLinear ops is left as it is.

Two data-free remedies of Nagel et al. (ICCV 2019) run on request: `equalize` balances the
weight ranges of consecutive layers first (cross-layer equalization, equalize.py; the float
model computes the same), `bias_correct` takes the mean shift that quantizing each weight
causes off its bias (bias_correction.py; E[x] measured on the samples, or without them from
the batch norms fold-batchnorm folded). Each layer's record says which ran on it.

With samples, the quantized graph is run on them too: each layer's output against the float
model's (its SQNR: the error of that layer and of all before it) and the graph outputs'
SQNR and relative error (max |error| / max |float output|, the figure `edgec run --check`
holds against its tolerance), recorded in graph.record.quantization (the driver writes it as
quantization.json and .png). Given `original`, the model as the user gave it (before pruning,
say), the outputs are measured against it too: the end-to-end error beside the error of
quantization alone. With a `budget` (dB), the layer of worst SQNR is kept in float and the graph
quantized again until the outputs' SQNR meets it; with `keep=sensitivity`, the fewest
activations in int16, then layers in float (`rungs`), by their measured effect on the
outputs, at least `min_quantized_macs` of the MACs in int8 (sensitivity.py; each layer's
record says its precision, and for which point and its sensitivity). The
float values of the observed tensors are held over all samples for this: memory grows with
samples x activations.

With `adaround`, each layer's weights are rounded up or down to minimise its output error on
the samples (AdaRound, Nagel et al., ICML 2020: adaround.py) instead of to nearest; the
codes are worked out once, for every trial graph. With `smooth` (alpha), the inputs of
MatMuls and Gemms have their channels' ranges evened out against the weights' first
(SmoothQuant: smooth.py; the float model computes the same).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EdgecError, PassError
from ..ir import DType, Graph, Node, QuantParams, Value
from ..ir.interpreter import interpret, run_node
from ..ir.records import EndToEnd, QuantizationRecord
from .adaround import round_layer
from .bias_correction import channel_mean, correct_bias
from .calibration import (
    ACT_METHODS,
    PAIR_LIMIT,
    Observer,
    activation_params,
    activation_params16,
    fit_pairs,
    relative_error,
    sqnr_db,
    weight_params,
)
from .equalize import equalize as equalize_layers
from .manager import register_pass
from .sensitivity import MIN_GAIN_DB, RUNGS, MixedPrecision, Point, choose, mac_shares
from .sensitivity import SAMPLES as SENSITIVITY_SAMPLES
from .smooth import smooth as smooth_inputs

BITS = (8, 7, 4, 3, 2)
GRANULARITIES = ("channel", "tensor")
CALIBRATIONS = (*ACT_METHODS, "admm")
ACTIVATIONS = ("Relu", "Clip")
KEEPS = ("worst", "sensitivity")
# ops whose result on quantized values is the quantization of their result (same parameters)
TRANSPARENT = ("MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze")


def load_samples(path: str | Path, what: str = "calibration samples") -> dict[str, np.ndarray]:
    """The arrays of an .npz file (`what` it holds, for the error), by input name."""
    try:
        data = np.load(path)
    except (OSError, ValueError, EOFError) as e:  # EOFError: an empty file
        raise EdgecError(f"cannot read {what} {path}: {e or 'empty file'}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise EdgecError(f"cannot read {what} {path}: not an .npz of named arrays (np.savez "
                         "writes one, an array per input name)")
    with data:
        return {k: data[k] for k in data.files}


def sample_feeds(graph: Graph, samples: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """One feed per sample: each array's first axis indexes samples (a model input of batch
    1 also takes arrays without that batch axis)."""
    want = {v.name: v for v in graph.inputs}
    missing = sorted(set(want) - set(samples))
    if missing:
        raise EdgecError(f"calibration samples lack input(s) {', '.join(missing)} (they have "
                         f"{', '.join(sorted(samples)) or 'none'}); save one array per model "
                         "input, its first axis indexing the samples")
    counts = set()
    per_input = {}
    for name, v in want.items():
        a = np.asarray(samples[name])
        if a.shape[1:] == v.shape:
            per_input[name] = [a[i] for i in range(a.shape[0])]
        elif v.shape[:1] == (1,) and a.shape[1:] == v.shape[1:]:
            per_input[name] = [a[i:i + 1] for i in range(a.shape[0])]
        else:
            raise EdgecError(f"calibration samples of input {name!r} have shape {a.shape}; "
                             f"expected [samples, {', '.join(map(str, v.shape))}]")
        per_input[name] = [x.astype(v.dtype.np) for x in per_input[name]]
        counts.add(len(per_input[name]))
    if len(counts) != 1 or 0 in counts:
        raise EdgecError(f"calibration samples differ in count between inputs or are empty: "
                         f"{ {k: len(x) for k, x in per_input.items()} }")
    n = counts.pop()
    return [{k: per_input[k][i] for k in per_input} for i in range(n)]


@dataclass(frozen=True)
class Quantize:
    """Quantize convolutions, GEMMs and Adds to integer ops, calibrated on samples."""

    bits: int = 8
    granularity: str = "channel"
    calib: str = "minmax"
    symmetric: bool = False
    skip: str = ""  # node names kept in float, separated by commas
    samples: str = ""  # an .npz of calibration samples (or `feeds` from Python)
    percentile: float = 99.99
    weights: str = "auto"  # minmax or admm; auto: admm below 8 bits (or with calib=admm)
    equalize: bool = False  # cross-layer equalization before calibration
    bias_correct: bool = False  # remove the output mean shift of quantized weights
    # 8-bit codes whose byte pairs AVX2's vpmaddubsw sums exactly, by a larger scale for the
    # channels that need one (calibration.py fit_pairs), so that the layers run on the
    # cheaper dot4 there; the driver sets it for AVX2 targets
    pairs: bool = False
    budget: float = 0.0  # dB: the least output SQNR; layers stay float until it holds
    # which layers stay float for the budget: worst (the layer of least SQNR, in turn) or
    # sensitivity (the fewest layers by their own effect on the outputs: sensitivity.py)
    keep: str = "worst"
    # keep=sensitivity: the least share of the MACs in int8 (int16 and float count against it)
    min_quantized_macs: float = 0.9
    # keep=sensitivity: the samples each point and step is measured on (the first N of them;
    # more carry better to other inputs, each measurement costing N runs from the point on)
    search_samples: int = SENSITIVITY_SAMPLES
    # keep=sensitivity: the higher precisions tried, in order ("float": no int16 activations)
    rungs: str = ",".join(RUNGS)
    int16: str = ""  # node names whose activation inputs are int16 (W8A16), separated by commas
    adaround: bool = False  # weights rounded up or down for each layer's output (adaround.py)
    smooth: float = 0.0  # alpha of SmoothQuant's activation smoothing (smooth.py); 0: off
    feeds: Any = field(default=None, compare=False, metadata={"option": False})
    log: Any = field(default=None, compare=False, metadata={"option": False})
    # the model as given (a Graph, same inputs and outputs), for the end-to-end error
    original: Any = field(default=None, compare=False, metadata={"option": False})

    def run(self, graph: Graph) -> bool:
        self._check()
        if any(n.op in ("QuantizeLinear", "DequantizeLinear") for n in graph.nodes):
            self._say("quantize: the model is already quantized (it has QuantizeLinear/"
                      "DequantizeLinear ops); left as it is")
            return False
        skip = {s.strip() for s in self.skip.split(",") if s.strip()}
        unknown = skip - {n.name for n in graph.nodes}
        if unknown:
            raise PassError(f"quantize: skip names no node: {', '.join(sorted(unknown))}")
        candidates = [n.name for n in graph.nodes if _quantizable(n)]
        if not set(candidates) - skip:
            return False
        forced = {s.strip() for s in self.int16.split(",") if s.strip()}
        bad = forced - (set(candidates) - skip)
        if bad:
            raise PassError(f"quantize: int16 names no layer this pass quantizes: "
                            f"{', '.join(sorted(bad))} (Conv, Gemm, MatMul with a constant "
                            "weight, or Add, not in skip)")
        wide = {v.name for n in graph.nodes if n.name in forced for v in _read_points(n)}
        if self.equalize:
            pairs = equalize_layers(graph)
            self._say(f"quantize: cross-layer equalization of {len(pairs)} pairs of layers")
        feeds = self._feeds(graph)
        wmethod = self.weights if self.weights != "auto" else \
            "admm" if self.calib == "admm" or self.bits < 8 else "minmax"
        if not feeds:
            if self.adaround or self.keep == "sensitivity" or self.smooth:
                what = "adaround" if self.adaround else "smooth" if self.smooth else \
                    "keep=sensitivity"
                raise PassError(f"quantize: {what} needs calibration samples (samples=FILE.npz, "
                                "--calib, or calib= in Python): it measures the layers' outputs "
                                "on them")
            layers = [n for n in graph.nodes if n.name in candidates and n.name not in skip
                      and n.op != "Add"]
            codes = {n.name: self._codes(n, wmethod) for n in layers}
            done = [self._weight(graph, n, codes) for n in list(graph.nodes) if n.name in codes]
            if self.bias_correct:
                k = sum(d["bias_correction"] is not None for d in done)
                self._say(f"quantize: bias correction (data-free, from batch norms) of {k} "
                          f"of {len(done)} layers")
            self._say(f"quantize: no calibration samples: data-free, weights only "
                      f"({self.bits}-bit, {wmethod}); activations stay float. This previews "
                      "the accuracy of the weights: the default pipeline's dequantize-weights "
                      "computes them at compile time, so the layers run the float kernels, "
                      "at the float build's speed, most reading the weights as one-byte "
                      "codes; give samples (--calib SAMPLES.npz) for the integer kernels")
            return True
        smoothed = []
        if self.smooth:
            smoothed = smooth_inputs(graph, feeds, self.smooth,
                                     lambda n: n.name in candidates and n.name not in skip)
            self._say(f"quantize: activation smoothing (alpha {self.smooth}) of "
                      f"{len(smoothed)} inputs of {sum(len(x['layers']) for x in smoothed)} "
                      "layers" + "".join(f"; {x['input']} by {x['by']}, range "
                                         f"{x['range_before']:.3g} -> {x['range_after']:.3g}"
                                         for x in smoothed[:3])
                      + ("; ..." if len(smoothed) > 3 else ""))
        # ranges are observed once, on the float model, for every tensor any choice of skipped
        # layers may quantize
        all_points = _activation_points([n for n in graph.nodes if n.name in candidates])
        observers = _calibrate(graph, feeds, all_points)
        observed = {v.name: observers[id(v)] for v in all_points}
        reference = _point_values(graph, feeds, {v.name for v in all_points} |
                                  {v.name for v in graph.outputs})
        if self.bias_correct:  # E[x] of each layer's input, for the trial graphs too
            for n in graph.nodes:
                if n.name in candidates and n.op != "Add":
                    n.meta["input_mean"] = channel_mean(n, reference[n.inputs[0].name])
        codes = self._all_codes(graph, candidates, wmethod, reference)
        mixed = None
        if self.keep == "sensitivity" and self.budget > 0:
            mixed = self._by_sensitivity(graph, candidates, skip, wide, observed, codes,
                                         feeds, reference)
            skip |= mixed.floats
            wide |= set(mixed.wide)
            signals = _signals(graph)
        while True:  # skip the worst layer until the output's SQNR meets the budget
            trial = graph.copy()
            layers = self._apply(trial, skip, observed, codes, wide=wide)
            out_sqnr, got = _measure(trial, feeds, reference, layers)
            if self.budget <= 0 or out_sqnr >= self.budget or mixed is not None:
                break
            left = [x for x in layers if x["node"] not in skip]
            if not left:
                self._say(f"quantize: the output SQNR {out_sqnr:.1f} dB stays below the "
                          f"budget of {self.budget} dB with every layer in float")
                break
            worst = min(left, key=lambda x: x["sqnr_db"])
            self._say(f"quantize: output SQNR {out_sqnr:.1f} dB < {self.budget} dB: "
                      f"{worst['node']} ({worst['sqnr_db']:.1f} dB) stays float")
            skip.add(worst["node"])
        measured = {x["node"]: x["sqnr_db"] for x in layers}  # on the trial, the same graph
        layers = self._apply(graph, skip, observed, codes, wide=wide)
        for x in layers:
            x["sqnr_db"] = _finite(measured[x["node"]])
        shares = mac_shares({x["node"]: x["macs"] for x in layers}, skip & {
            x["node"] for x in layers}, {x["node"] for x in layers if x["precision"] == "int16"})
        share = shares["int8"] + shares["int16"]
        q = graph.record.quantization = QuantizationRecord(
            bits=self.bits, weights=wmethod, granularity=self.granularity,
            calibration="minmax" if self.calib == "admm" else self.calib,
            samples=len(feeds), budget_db=self.budget or None,
            output_sqnr_db=_finite(out_sqnr),
            output_rel_error=_output_error(graph, reference, got, relative_error),
            kept_float=sorted(skip), quantized_mac_share=round(share, 4),
            mac_shares={k: round(v, 4) for k, v in shares.items()},
            int16_layers=[x["node"] for x in layers if x["precision"] == "int16"],
            adaround=self.adaround, smoothed=smoothed, layers=layers)
        if mixed is not None:
            q.mixed_precision = mixed.record() | {"measured_on": signals}
            why = {(x.name, x.precision): x for x in mixed.kept}
            for x in layers:
                k = why.get((x["node"], x["precision"]))
                if k is not None:
                    x[f"kept_{x['precision']}_for"] = {
                        "point": k.point, "sensitivity_db": _finite(k.sensitivity_db)}
        if self.pairs:
            q.pairs_fitted = sum(x.get("pairs_fitted") or 0 for x in layers)
        figures = f"output SQNR {out_sqnr:.1f} dB, relative error {q.output_rel_error:.3g}"
        if self.original is not None:
            given = _point_values(self.original, feeds, {v.name for v in graph.outputs})
            e2e = q.end_to_end = EndToEnd(_finite(_output_error(graph, given, got, sqnr_db)),
                                          _output_error(graph, given, got, relative_error))
            figures = (f"{figures} from quantization alone (against the float model it "
                       f"quantized); end to end, against the model as given: SQNR "
                       f"{_db(e2e.sqnr_db)}, relative error {e2e.rel_error:.3g}")
        done = [x for x in layers if not x["float"]]
        self._say(f"quantize: {len(done)} ops to {self.bits}-bit weights ({wmethod}"
                  + (", adaround" if self.adaround else "") + f", per "
                  f"{self.granularity}) and uint8 activations ({q.calibration}, "
                  f"{len(feeds)} samples); {figures}"
                  + (f"; {len(skip)} kept float, {share:.1%} of the MACs quantized"
                     if skip else "")
                  + (f"; {len(q.int16_layers)} layers W8A16 (int16 activations), MACs "
                     f"{shares['int8']:.1%} int8, {shares['int16']:.1%} int16, "
                     f"{shares['float']:.1%} float" if wide else "")
                  + (f"; {q.pairs_fitted} channels scaled so that their weight pairs "
                     "fit AVX2's exact 16-bit sums" if self.pairs else ""))
        return True

    def _apply(self, graph: Graph, skip: set[str], observed: dict[str, Observer],
               codes: dict[str, WeightCodes], only: set[str] | None = None,
               wide: set[str] = frozenset()) -> list[dict]:
        """Quantize `graph` (a copy, or the graph itself) leaving `skip` in float; returns a
        row per candidate layer (its parameters; SQNR filled in by _measure). `only`: the
        quantization points (_points) to quantize, the others left float; `wide`: the
        activation points held in int16 (with those that share their parameters)."""
        targets = [n for n in graph.nodes if n.name not in skip and _quantizable(n)]
        if only is not None:
            targets = [n for n in targets if any(k in only for k in _points_of(n))]
        rows = []
        reads = {n.name: {v.name for v in _read_points(n)} for n in graph.nodes
                 if _quantizable(n)}
        for n in graph.nodes:
            if not _quantizable(n):
                continue
            rows.append({"node": n.name, "op": n.op, "float": n.name in skip,
                         "macs": _macs(n), "output": _after_activation(n.output).name,
                         "equalized": bool(n.meta.get("equalized")),
                         "smoothed": bool(n.meta.get("smoothed")), "bias_correction": None})
        done = {n.name: self._weight(graph, n, codes) for n in targets if n.op != "Add"
                and (only is None or _weight_point(n) in only)}
        for r in rows:
            r |= done.get(r["node"], {})
        points = _activation_points(targets)
        wide = _wide_closure(points, wide)
        method = "minmax" if self.calib == "admm" else self.calib
        params: dict[int, tuple[np.float32, np.uint8 | np.int16]] = {}
        for v in points:
            src = _transparent_source(v, points)
            if src is not None and id(src) in params:
                params[id(v)] = params[id(src)]
                continue
            if v.name in wide:  # 65535 steps: the whole range, nothing clipped
                params[id(v)] = activation_params16(*observed[v.name].range("minmax"))
                continue
            # the graph's outputs keep their whole range: clipping them is the user's call
            out = any(o is v for o in graph.outputs)
            lo, hi = observed[v.name].range("minmax" if out else method, self.percentile)
            params[id(v)] = activation_params(lo, hi, self.symmetric)
        dq_of = {}
        for v in points:
            if only is not None and v.name not in only:
                continue
            name = v.name
            dq_of[name] = _insert_qdq(graph, v, *params[id(v)]).name
            s, z = params[id(v)]
            for r in rows:
                if r["output"] == name:
                    r |= {"scale": float(s), "zero_point": int(z), "dequantized": dq_of[name],
                          "bits": self.bits if not r["float"] else 32}
        for r in rows:
            r.setdefault("bits", 32)
            r["precision"] = "float" if r["float"] else "int16" if reads[r["node"]] & wide \
                else "int8"
        return rows

    def _weight(self, graph: Graph, n: Node, codes: dict[str, WeightCodes]) -> dict:
        """Quantize `n`'s weight to its `codes`, its bias corrected if asked; the record's
        entries."""
        w = n.inputs[1].const
        c = codes[n.name]
        wq = _quantize_weight(graph, n, c, self.bits)
        rec = {"pairs_fitted": c.fitted} if c.fitted is not None else {}
        if c.adarounded is not None:
            rec["adarounded"] = c.adarounded
        return rec | (correct_bias(graph, n, w, wq) if self.bias_correct else {})

    def _codes(self, n: Node, wmethod: str, xs: list[np.ndarray] | None = None
               ) -> WeightCodes:
        """The codes of `n`'s weight: by `wmethod`, fitted to AVX2's pairs if asked, and
        given its inputs `xs` on the samples, rounded by AdaRound."""
        w = n.inputs[1].const
        axis = _weight_axis(n) if self.granularity == "channel" else None
        codes, scales = weight_params(w, self.bits, axis, wmethod)
        fitted = None
        k = _reduction_axis(n, codes.ndim)
        if self.pairs and self.bits == 8 and k is not None:
            codes, scales, fitted = fit_pairs(w, scales, axis, k)
        changed = None
        if xs is not None:
            better = round_layer(n, w, scales, axis, self.bits, xs)
            if better is not None:
                if fitted is not None:  # channels whose pairs no longer fit keep theirs
                    better = _keep_pairs(better, codes, axis, k)
                changed = round(float(np.mean(better != codes)), 4)
                codes = better
        return WeightCodes(codes, scales, axis, fitted, changed)

    def _all_codes(self, graph: Graph, candidates: list[str], wmethod: str,
                   reference: dict[str, list]) -> dict[str, WeightCodes]:
        """The codes of every candidate layer's weight, once for all the trial graphs."""
        layers = [n for n in graph.nodes if n.name in candidates and n.op != "Add"]
        if not self.adaround:
            return {n.name: self._codes(n, wmethod) for n in layers}
        out = {}
        t0 = time.perf_counter()
        for n in layers:
            out[n.name] = self._codes(n, wmethod, reference[n.inputs[0].name])
        changed = [c.adarounded for c in out.values() if c.adarounded is not None]
        self._say(f"quantize: adaround of {len(changed)} of {len(layers)} layers in "
                  f"{time.perf_counter() - t0:.1f} s ({np.mean(changed or [0]):.1%} of their "
                  "weights rounded the other way than to nearest, on average)")
        return out

    def _by_sensitivity(self, graph: Graph, candidates: list[str], skip: set[str],
                        wide: set[str], observed: dict[str, Observer],
                        codes: dict[str, WeightCodes], feeds: list[dict],
                        reference: dict[str, list]) -> MixedPrecision:
        """The activations to hold in int16 and the layers to keep float by the sensitivity
        of their quantization points (sensitivity.py), said on the log."""
        few = feeds[:self.search_samples]
        signals = _signals(graph)
        outs = _point_values(graph, few, set(signals))
        t0 = time.perf_counter()
        nodes = [n for n in graph.nodes if n.name in candidates and n.name not in skip]
        layers_of: dict[str, list[str]] = {}
        for n in nodes:
            for k in _points_of(n):
                layers_of.setdefault(k, []).append(n.name)
        # the layers that run W8A16 when a point is int16: its readers, and those of every
        # point sharing its parameters (through data movement: _wide_closure)
        values = _activation_points(nodes)
        readers = {k: tuple(n.name for n in nodes if n.op != "Add" and
                            {v.name for v in _read_points(n)} & _wide_closure(values, {k}))
                   for k in layers_of if not k.startswith("weight of ")}
        cache = _all_values(graph, few)
        points = []
        for k, layers in layers_of.items():
            trial = graph.copy()
            self._apply(trial, skip, observed, codes, only={k})
            got = _rerun(graph, trial, cache, set(outs))
            points.append(Point(k, tuple(layers), _least_sqnr(outs, got), readers.get(k)))

        def output_sqnr(floats: set[str], wide: set[str]) -> float:
            trial = graph.copy()
            self._apply(trial, floats, observed, codes, wide=wide)
            return _least_sqnr(outs, _rerun(graph, trial, cache, set(outs)))

        macs = {n.name: _macs(n) for n in graph.nodes if n.name in candidates}
        rungs = tuple(r.strip() for r in self.rungs.split(",") if r.strip())
        mixed = choose(points, macs, output_sqnr, self.budget, self.min_quantized_macs, skip,
                       wide, rungs)
        cache.clear()  # (every value of the float model on the samples)
        said = {"int16": [], "float": []}
        for x in mixed.steps:
            said[x.rung].append(f"{x.point.name} ({x.point.sensitivity_db:.1f} dB alone; "
                                f"outputs {x.before_db:.1f} -> {x.after_db:.1f} dB"
                                + (f"; {', '.join(x.layers)}" if x.layers else "") + ")")
        worst = ", ".join(f"{p.name} {p.sensitivity_db:.1f} dB" for p in mixed.points[:3])
        on = "" if set(signals) == {v.name for v in graph.outputs} else \
            f", measured on {', '.join(sorted(set(signals)))} before the final Softmax"
        sh = mixed.mac_shares
        self._say(f"quantize: sensitivity of {len(points)} quantization points on {len(few)} "
                  f"samples (the outputs' SQNR with each alone quantized{on}; the worst: {worst}) "
                  f"and {mixed.measurements} measurements in {time.perf_counter() - t0:.1f} s; "
                  f"for {self.budget} dB, int16: {'; '.join(said['int16']) or 'none'}; float: "
                  f"{'; '.join(said['float']) or 'none'}; outputs {mixed.output_sqnr_db:.1f} dB "
                  f"on those samples with MACs {sh['int8']:.1%} int8, {sh['int16']:.1%} int16, "
                  f"{sh['float']:.1%} float"
                  + ("" if mixed.met else " (budget not met: no point left gains "
                     f"{MIN_GAIN_DB} dB within min_quantized_macs={self.min_quantized_macs} "
                     "of the MACs in int8)"))
        return mixed

    def _say(self, text: str) -> None:
        print(text, file=self.log if self.log is not None else sys.stderr)

    def _check(self) -> None:
        if self.bits not in BITS:
            raise PassError(f"quantize: bits={self.bits}; edgec quantizes weights to "
                            f"{', '.join(map(str, BITS))} bits")
        if self.granularity not in GRANULARITIES:
            raise PassError(f"quantize: granularity={self.granularity!r}; choose channel or "
                            "tensor")
        if self.calib not in CALIBRATIONS:
            raise PassError(f"quantize: calib={self.calib!r}; choose from "
                            f"{', '.join(CALIBRATIONS)}")
        if self.weights not in ("auto", "minmax", "admm"):
            raise PassError(f"quantize: weights={self.weights!r}; choose auto, minmax or admm")
        if not 50.0 < self.percentile <= 100.0:
            raise PassError(f"quantize: percentile={self.percentile} must be in (50, 100]")
        if self.keep not in KEEPS:
            raise PassError(f"quantize: keep={self.keep!r}; choose {' or '.join(KEEPS)}")
        bad = {r.strip() for r in self.rungs.split(",") if r.strip()} - set(RUNGS)
        if bad or not self.rungs.strip():
            raise PassError(f"quantize: rungs={self.rungs!r}; a list of {' and '.join(RUNGS)}, "
                            "the precisions keep=sensitivity tries in that order")
        if self.keep == "sensitivity" and self.budget <= 0:
            raise PassError("quantize: keep=sensitivity needs budget=DB, the least SQNR of the "
                            "outputs against float (25 to 35 dB keeps most answers)")
        if not 0.0 <= self.smooth <= 1.0:
            raise PassError(f"quantize: smooth={self.smooth} must be SmoothQuant's alpha in "
                            "(0, 1] (0.5 splits the ranges evenly; 0: no smoothing)")
        if self.search_samples < 1:
            raise PassError(f"quantize: search_samples={self.search_samples} must be at least "
                            f"1 (the samples keep=sensitivity measures on; default "
                            f"{SENSITIVITY_SAMPLES})")
        if not 0.0 <= self.min_quantized_macs <= 1.0:
            raise PassError(f"quantize: min_quantized_macs={self.min_quantized_macs} must be "
                            "a share of the MACs in [0, 1] (0.9: 90% stay quantized)")

    def _feeds(self, graph: Graph) -> list[dict[str, np.ndarray]]:
        if self.feeds is not None and self.samples:
            raise PassError("quantize: give calibration samples once (feeds or samples)")
        if self.samples:
            return sample_feeds(graph, load_samples(self.samples))
        if self.feeds is not None:
            return sample_feeds(graph, dict(self.feeds))
        return []


register_pass("quantize", writes=("quantization",))(Quantize)


# -- what is quantized ---------------------------------------------------------------------------

def _quantizable(n: Node) -> bool:
    float_in = n.inputs and n.inputs[0] is not None and n.inputs[0].dtype is DType.F32
    if not float_in:
        return False
    if n.op == "Conv":
        return n.inputs[1].is_const and n.inputs[0].type.rank >= 3
    if n.op == "Gemm":
        return n.inputs[1].is_const and not n.attrs["transA"]
    if n.op == "MatMul":
        return n.inputs[1].is_const and n.inputs[1].type.rank == 2
    if n.op == "Add":
        a, b = n.inputs
        return not a.is_const and not b.is_const and a.shape == b.shape
    return False


def _after_activation(v: Value) -> Value:
    """The output of the Relu or Clip (constant bounds) that alone reads `v`, else `v`."""
    users = v.users()
    if len(v.uses) == 1 and users[0].op in ACTIVATIONS:
        act = users[0]
        if act.op == "Relu" or all(x is None or x.is_const for x in act.inputs[1:]):
            return act.output
    return v


def _activation_points(targets: list[Node]) -> list[Value]:
    """The activations to quantize: the targets' activation inputs and their outputs (after
    a following activation), each once, in graph order of first mention."""
    seen: dict[int, Value] = {}
    for n in targets:
        ins = list(n.inputs[:2]) if n.op == "Add" else [n.inputs[0]]
        for v in [*ins, _after_activation(n.output)]:
            if v is not None and v.dtype is DType.F32 and not v.is_const:
                seen.setdefault(id(v), v)
    return list(seen.values())


def _read_points(n: Node) -> list[Value]:
    """The activations a candidate layer reads (its input; an Add's two)."""
    return [v for v in (n.inputs[:2] if n.op == "Add" else n.inputs[:1])
            if v is not None and v.dtype is DType.F32 and not v.is_const]


def _wide_closure(points: list[Value], names: set[str]) -> set[str]:
    """`names` (activation points held in int16) and every point of `points` that shares
    parameters with one of them through data movement or MaxPool (_transparent_source: the
    integers pass through those ops, so one type for all)."""
    root: dict[str, str] = {}
    for v in points:
        src, seen = v, set()
        while (s := _transparent_source(src, points)) is not None and s.name not in seen:
            seen.add(src.name)
            src = s
        root[v.name] = src.name
    roots = {root.get(k, k) for k in names}
    return set(names) | {k for k, r in root.items() if r in roots}


def _weight_point(n: Node) -> str:
    return f"weight of {n.name}"


def _points_of(n: Node) -> list[str]:
    """The quantization points a candidate layer quantizes: its weight ("weight of NODE"),
    and the activations it reads and writes (by value name)."""
    return ([_weight_point(n)] if n.op != "Add" else []) + \
        [v.name for v in _activation_points([n])]


def _transparent_source(v: Value, points: list[Value]) -> Value | None:
    """The quantized input of the data-movement op or MaxPool that produced `v`, if any."""
    p = v.producer
    if p is None or p.op not in TRANSPARENT:
        return None
    src = p.inputs[0]
    # a chain of such ops (Relu -> MaxPool -> ...) passes the parameters along
    while id(src) not in {id(x) for x in points}:
        if src.producer is None or src.producer.op not in TRANSPARENT:
            return None
        src = src.producer.inputs[0]
    return src


def _calibrate(graph: Graph, feeds: list[dict], points: list[Value]) -> dict[int, Observer]:
    """Observers of `points` over the samples, through the reference interpreter."""
    observers = {id(v): Observer() for v in points}
    by_output = {id(v): v for v in points}
    inputs = [v for v in graph.inputs if id(v) in observers]

    def hook(node: Node, outs: list) -> None:
        for v, o in zip(node.outputs, outs):
            if id(v) in by_output:
                observers[id(v)].update(o)

    try:
        from tqdm import tqdm

        # (no bar for a few samples, nor where stderr is no terminal)
        it = tqdm(feeds, desc="calibrating", unit="sample", file=sys.stderr, leave=False,
                  disable=None if len(feeds) >= 4 else True)
    except ImportError:  # tqdm is optional: no progress bar
        it = feeds
    for feed in it:
        for v in inputs:
            observers[id(v)].update(feed[v.name])
        interpret(graph, feed, hook=hook)
    return observers


# -- the rewrite ---------------------------------------------------------------------------------

def _weight_axis(n: Node) -> int:
    if n.op == "Conv":
        return 0
    if n.op == "Gemm":
        return 0 if n.attrs["transB"] else 1
    return 1  # MatMul: a column per output


def _reduction_axis(n: Node, ndim: int) -> int | None:
    """The axis of `n`'s weight that its dot products run along (the dot4 groups' bytes),
    or None where the int8 kernels do not pair it (grouped convolutions)."""
    if n.op == "Conv":
        return 1 if n.attrs.get("group", 1) == 1 else None
    if n.op == "Gemm":
        return 1 if n.attrs["transB"] else 0
    return ndim - 2 if ndim >= 2 else None  # MatMul: B [..., K, N]


@dataclass(frozen=True)
class WeightCodes:
    """A layer's quantized weight: codes, scales along `axis` (None: one scale), how many
    channels took a larger scale for AVX2's pairs (None: none could) and the share of the
    codes AdaRound rounded the other way (None: not run)."""

    codes: np.ndarray
    scales: np.ndarray
    axis: int | None
    fitted: int | None = None
    adarounded: float | None = None


def _keep_pairs(codes: np.ndarray, fitted: np.ndarray, axis: int | None, k: int) -> np.ndarray:
    """`codes`, but `fitted`'s in each slice along `axis` where a byte pair along `k` would
    leave what vpmaddubsw sums exactly (calibration.fit_pairs)."""
    m = np.moveaxis(codes.astype(np.int32), k, 0)
    n = m.shape[0] - m.shape[0] % 2
    pos = np.maximum(m[0:n:2], 0) + np.maximum(m[1:n:2], 0)
    neg = np.minimum(m[0:n:2], 0) + np.minimum(m[1:n:2], 0)
    bad = np.moveaxis((pos > PAIR_LIMIT) | (neg < -PAIR_LIMIT), 0, k)
    if axis is None:
        return fitted if bad.any() else codes
    others = tuple(d for d in range(codes.ndim) if d != axis)
    shape = [-1 if d == axis else 1 for d in range(codes.ndim)]
    return np.where(bad.any(axis=others).reshape(shape), fitted, codes)


def _quantize_weight(graph: Graph, n: Node, c: WeightCodes, bits: int) -> np.ndarray:
    """Read `n`'s weight through DequantizeLinear of its codes `c`; returns the dequantized
    weight (float32)."""
    w = n.inputs[1]
    codes, scales, axis = c.codes, c.scales, c.axis
    q = graph.const(codes, f"{w.name}_quantized")
    # the codes' type says what they are: `bits`-bit integers held in int8, and their scales
    q.type = q.type.with_quant(QuantParams.of(scales, None, axis, bits))
    s = graph.const(scales, f"{w.name}_scale")
    z = graph.const(np.zeros(scales.shape, np.int8), f"{w.name}_zero_point")
    dq = graph.add_node("DequantizeLinear", [q, s, z], {"axis": axis or 0},
                        name=f"{w.name}_DequantizeLinear", before=n)
    graph.set_input(n, 1, dq.output)
    shape = [-1 if d == axis else 1 for d in range(codes.ndim)] if axis is not None else []
    return codes.astype(np.float32) * scales.reshape(shape)


def _insert_qdq(graph: Graph, v: Value, scale: np.float32, zp: np.uint8 | np.int16) -> Value:
    """v -> QuantizeLinear -> DequantizeLinear, read by every reader of v and, where v is a
    graph output, as the output (as onnxruntime's QDQ models end)."""
    users = list(v.uses)
    if v.producer is None:
        at = graph.nodes[0]
    else:
        k = graph.nodes.index(v.producer) + 1
        at = graph.nodes[k] if k < len(graph.nodes) else None
    s = graph.const(np.asarray(scale, np.float32), f"{v.name}_scale")
    z = graph.const(np.asarray(zp), f"{v.name}_zero_point")  # (its type: uint8 or int16)
    q = graph.add_node("QuantizeLinear", [v, s, z], name=f"{v.name}_QuantizeLinear", before=at)
    dq = graph.add_node("DequantizeLinear", [q.output, s, z],
                        name=f"{v.name}_DequantizeLinear", before=at)
    for node, i in users:
        graph.set_input(node, i, dq.output)
    if any(o is v for o in graph.outputs):  # the output keeps its name, read through Q/DQ
        graph.outputs = [dq.output if o is v else o for o in graph.outputs]
        dq.output.name, v.name = v.name, graph.fresh_name(v.name)
    return dq.output


# -- measuring -----------------------------------------------------------------------------------

def _macs(n: Node) -> int:
    """Multiply-accumulates of a Conv, Gemm or MatMul (0 for an Add)."""
    if n.op == "Conv":
        w = n.inputs[1].shape
        return int(np.prod(n.output.shape)) * int(np.prod(w[1:]))
    if n.op in ("Gemm", "MatMul"):
        k = n.inputs[0].shape[-1] if n.op == "MatMul" or not n.attrs["transA"] else \
            n.inputs[0].shape[0]
        return int(np.prod(n.output.shape)) * int(k)
    return 0


def _point_values(graph: Graph, feeds: list[dict], names: set[str]) -> dict[str, list]:
    """The values named `names` on each sample (graph inputs included)."""
    out: dict[str, list] = {k: [] for k in names}
    for feed in feeds:
        for k, x in feed.items():
            if k in out:
                out[k].append(np.asarray(x))

        def hook(node: Node, outs: list) -> None:
            for v, o in zip(node.outputs, outs):
                if v.name in out:
                    out[v.name].append(o)

        interpret(graph, feed, hook=hook)
    return out


def _all_values(graph: Graph, feeds: list[dict]) -> list[dict[str, np.ndarray]]:
    """Every value of `graph` (by name) on each sample."""
    out = []
    for feed in feeds:
        env = {k: np.asarray(x) for k, x in feed.items()}

        def hook(node: Node, outs: list, env=env) -> None:
            env.update({v.name: o for v, o in zip(node.outputs, outs)})

        interpret(graph, feed, hook=hook)
        out.append(env)
    return out


def _signals(graph: Graph) -> list[str]:
    """The values whose SQNR the sensitivity analysis measures: the graph's outputs, but the
    logits of an output that a Softmax or LogSoftmax makes (through data movement), whose
    error adds up from the layers' where the probabilities' saturates and jumps."""
    out = []
    for v in graph.outputs:
        u = v
        while u.producer is not None and u.producer.op in TRANSPARENT[1:]:
            u = u.producer.inputs[0]
        p = u.producer
        out.append(p.inputs[0].name if p is not None and p.op in ("Softmax", "LogSoftmax")
                   else v.name)
    return out


def _least_sqnr(want: dict[str, list], got: dict[str, list]) -> float:
    def flat(values: list) -> np.ndarray:
        return np.concatenate([np.asarray(a, np.float64).ravel() for a in values])

    return min((sqnr_db(flat(want[k]), flat(got[k])) for k in want), default=float("inf"))


def _rerun(graph: Graph, trial: Graph, cache: list[dict[str, np.ndarray]], names: set[str]
           ) -> dict[str, list]:
    """The values named `names` of `trial` (a copy of `graph` that quantizes some points) on
    the samples whose values of `graph` are `cache`: the nodes whose inputs the change does
    not reach take their values from the cache."""
    old = {n.name for n in graph.nodes}
    consts = {v.name for n in graph.nodes for v in n.inputs if v is not None and v.is_const}
    out: dict[str, list] = {k: [] for k in names}
    for values in cache:
        env: dict[int, np.ndarray] = {id(v): values[v.name] for v in trial.inputs}
        dirty: set[int] = set()
        for node in trial.nodes:
            fresh = node.name not in old or any(
                v is not None and (id(v) in dirty or (v.is_const and v.name not in consts))
                for v in node.inputs) or any(v.name not in values for v in node.outputs)
            if fresh:
                args = [None if v is None else (v.const if v.is_const else env[id(v)])
                        for v in node.inputs]
                results = run_node(node, args)
                dirty |= {id(v) for v in node.outputs}
            else:
                results = [values[v.name] for v in node.outputs]
            env.update({id(v): r for v, r in zip(node.outputs, results)})
            for v, r in zip(node.outputs, results):
                if v.name in out:
                    out[v.name].append(r)
    return out


def _measure(graph: Graph, feeds: list[dict], reference: dict[str, list],
             layers: list[dict]) -> tuple[float, dict[str, list]]:
    """Fill each quantized layer's `sqnr_db` (its dequantized output against the float
    model's, over the samples: the error of it and of every layer before it); returns the
    least SQNR of the graph's outputs, and the values they took."""
    names = {r["dequantized"] for r in layers if "dequantized" in r}
    names |= {v.name for v in graph.outputs}
    got = _point_values(graph, feeds, names)
    for r in layers:
        if "dequantized" in r:
            ref = np.concatenate([a.ravel() for a in reference[r["output"]]])
            q = np.concatenate([a.ravel() for a in got[r["dequantized"]]])
            r["sqnr_db"] = sqnr_db(ref, q)
        else:
            r["sqnr_db"] = float("inf")
    outs = [sqnr_db(np.concatenate([a.ravel() for a in reference[v.name]]),
                    np.concatenate([a.ravel() for a in got[v.name]])) for v in graph.outputs]
    return (min(outs) if outs else float("inf")), got


def _output_error(graph: Graph, want: dict[str, list], got: dict[str, list], measure) -> float:
    """The worst over the graph's outputs of `measure` (sqnr_db: the least; relative_error:
    the largest, rounded to 4 digits) of their values `got` against `want`, over the
    samples."""
    def flat(values: list) -> np.ndarray:
        return np.concatenate([np.asarray(a, np.float64).ravel() for a in values])

    errs = [measure(flat(want[v.name]), flat(got[v.name])) for v in graph.outputs]
    if measure is sqnr_db:
        return min(errs, default=float("inf"))
    return float(f"{max(errs, default=0.0):.4g}")


def _db(x: float | None) -> str:
    return "inf dB" if x is None else f"{x:.1f} dB"


def _finite(x: float) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 2)
