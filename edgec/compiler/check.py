"""An artifact's outputs against onnxruntime's on a model: the one comparison behind
`edgec run --check` and `edgec bench --vs`.

Per output, rel = max |edgec - onnxruntime| / max |onnxruntime| (passes/calibration.py
`relative_error`), held against a tolerance: the user's (--tolerance), or for a build edgec
quantized on samples twice the relative error the quantization measured on them (its own
error budget; the inputs checked are not those samples), or else one by the output's dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import EdgecError
from ..passes.calibration import relative_error

# float32 sums in another order differ by a few ulps per term; 8-bit outputs by a step
DTYPE_TOLERANCE = {"f64": 1e-6, "f32": 1e-3, "f16": 1e-2, "u8": 1e-2, "i8": 1e-2}
QUANT_MARGIN = 2.0


@dataclass(frozen=True)
class Tolerance:
    value: float
    why: str  # where the value comes from, for the message that quotes it


@dataclass(frozen=True)
class OutputError:
    rel: float
    abs: float


def tolerances(manifest: dict, given: float | None = None) -> dict[str, Tolerance]:
    """Each output's tolerance: `given`, else the quantization's own budget, else its
    dtype's (integers and bools: exact)."""
    if given is not None:
        if not given >= 0:
            raise EdgecError(f"--tolerance must be 0 or more, not {given}")
        return {o["name"]: Tolerance(given, "--tolerance") for o in manifest["outputs"]}
    q = manifest.get("quantization") or {}
    out = {}
    for o in manifest["outputs"]:
        own = DTYPE_TOLERANCE.get(o["dtype"], 0.0)
        out[o["name"]] = Tolerance(own, f"the default for {o['dtype']} outputs")
        if q.get("output_rel_error") is not None:
            err = q["output_rel_error"]
            out[o["name"]] = Tolerance(
                max(own, QUANT_MARGIN * err),
                f"twice the error {err:.3g} the {q['bits']}-bit quantization measured on its "
                "calibration samples" + _end_to_end(q))
    return out


def _end_to_end(q: dict) -> str:
    e = q.get("end_to_end_rel_error")
    return "" if e is None else f"; end to end, pruning included, {e:.3g}"


def output_errors(got: dict[str, np.ndarray], want: dict[str, np.ndarray]
                  ) -> dict[str, OutputError]:
    """Each of edgec's outputs `got` against onnxruntime's `want`."""
    errs = {}
    for k, g in got.items():
        if k not in want:
            raise EdgecError(f"onnxruntime gives no output named '{k}' (it has "
                             f"{', '.join(want) or 'none'}): is it the model compiled?")
        w = np.asarray(want[k], np.float64)
        diff = np.abs(np.asarray(g, np.float64) - w) if w.size else np.zeros(1)
        errs[k] = OutputError(relative_error(w, g), float(diff.max()))
    return errs


def check_outputs(errs: dict[str, OutputError], tols: dict[str, Tolerance],
                  then: str = "") -> float:
    """The worst relative error of `errs`; EdgecError, saying by how much and how to accept
    it, at the first output past its tolerance (`then`: what that stops, appended)."""
    for k, e in errs.items():
        t = tols.get(k, Tolerance(0.0, "exact: an output the artifact does not declare"))
        if not e.rel <= t.value:
            accept = (f"--tolerance {_round_up(e.rel)} would accept it" if math.isfinite(e.rel)
                      else "edgec's outputs are not finite where onnxruntime's are")
            raise EdgecError(
                f"output '{k}' departs from onnxruntime's by {e.rel:.3g} (relative; max abs "
                f"error {e.abs:.3g}), past the tolerance {t.value:.3g} ({t.why}); "
                f"{accept}{then}")
    return max((e.rel for e in errs.values()), default=0.0)


def _round_up(x: float) -> str:
    """`x` (finite, positive) rounded up to two significant digits."""
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return f"{round(math.ceil(x / step - 1e-9) * step, 12):g}"
