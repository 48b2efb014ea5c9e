"""manifest.json: what an artifact holds, written, read and checked here only.

The driver writes it (`write`) beside the library, with its JSON Schema as
manifest.schema.json; the loader, `edgec inspect`, `edgec bench` and the report read it
(`read`). Both check it against `SCHEMA` (validated with fastjsonschema), so that a key
added on one side without the other, or an artifact of another edgec, is one clear error
instead of a KeyError deep in a reader. `VERSION` counts incompatible changes of the layout.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import fastjsonschema

from ..errors import EdgecError

VERSION = 2  # 2: each kernel's typed strategy (choice, candidates, forced)

_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_BOOL = {"type": "boolean"}
_STRS = {"type": "array", "items": _STR}


def _object(required: dict, optional: dict | None = None, extra: bool = False) -> dict:
    return {"type": "object", "required": sorted(required),
            "properties": {**required, **(optional or {})}, "additionalProperties": extra}


_TENSOR = _object({"name": _STR, "shape": {"type": "array", "items": _INT}, "dtype": _STR,
                   "onnx_dtype": {"type": "integer"}})
# a candidate of lowering/strategies.py: its kind and parameters, its modelled cost (absent
# where not modelled), the reason it does not apply (absent where it does)
_CANDIDATE = _object({"kind": _STR, "params": {"type": "object", "additionalProperties": {
    "type": ["integer", "number", "string"]}}},
    {"cost_s": {"type": "number"}, "reason": _STR})
_STRATEGY = _object({"node": _STR, "op": _STR, "kernel": _STR, "strategy": _STR, "kind": _STR,
                     "lanes": _INT, "parallel": _BOOL, "choice": _CANDIDATE, "forced": _BOOL,
                     "candidates": {"type": "array", "items": _CANDIDATE}},
                    {"micro_kernels": _STRS}, extra=True)
_TIMED = _object({"layer": _STR, "kernel": {"enum": ["sparse", "dense"]},
                  "model_ratio": {"type": "number"}},
                 {"measured_us": _object({"sparse": {"type": "number"},
                                          "dense": {"type": "number"}})})

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "edgec artifact manifest",
    **_object({
        "manifest_version": {"const": VERSION},
        "name": _STR,
        "edgec_version": _STR,
        "source": _STR,  # the model file's name; "" for a graph or bytes
        "target": _STR,
        "cflags": _STRS,
        "vector_isa": _STR,
        "backend": {"enum": ["c", "llvm"]},
        "threads": _BOOL,
        "sanitize": _BOOL,
        "link_flags": _STRS,
        "pipeline": _STR,
        "inputs": {"type": "array", "items": _TENSOR},
        "outputs": {"type": "array", "items": _TENSOR},
        "workspace_bytes": _INT,
        "weights_bytes": _INT,
        "weights": _object({"float32_bytes": _INT, "packed_bytes": _INT,
                            "coded_bytes": {"type": ["integer", "null"]},
                            "decoded_buffer_bytes": _INT}),
        "memory": _object({"arena_bytes": _INT, "activations_bytes": _INT,
                           "lower_bound_bytes": _INT}),
        "ops": {"type": "object", "additionalProperties": _INT},
        "kernels": _INT,
        "kernel_strategies": {"type": "array", "items": _STRATEGY},
        "dot_product_kernels": _BOOL,
        "library": _STR,
        "header": _STR,
        "sources": _STRS,
        "cmake_config": _STR,
        "pkg_config": _STR,
    }, {
        # the prune pass's record and the quantization report's (passes/prune.py,
        # compiler/driver.py write_quantization_report): their own layouts
        "pruning": {"type": "object"},
        "quantization": {"type": "object"},
        "report_html": _STR,
        "sparse_timed": {"type": "array", "items": _TIMED},
        # a CUDA library's GPU architectures (nvcc's sm_XY); absent or [] for a CPU target
        "gpu_archs": _STRS,
        # its kernels' launches per run, in order
        "gpu_launches": {"type": "array", "items": _object(
            {"kernel": _STR, "blocks": _INT, "threads": _INT})},
        # NAME_run_device replays its launches as a captured CUDA graph (--cuda-graph)
        "cuda_graph": {"type": "boolean"},
        # the operands of its float matrix products (--precision)
        "precision": {"enum": ["fp32", "tf32", "fp16", "bf16"]},
        # what the folder holds: a static library (absent) or an HLS project (--target hls:
        # library, cmake_config and pkg_config are ""; `hls` says what the design is)
        "artifact": {"enum": ["library", "hls-project"]},
        "hls": _object({"part": _STR, "clock_mhz": {"type": "number"}, "top": _STR,
                        "design": _STR,
                        "tcl": _STR, "testbench": _STR, "csim_runner": _STR,
                        "rom_bytes": _INT, "ports": {"type": "object"},
                        "processes": _STRS,
                        # per process: its accumulator's and ROMs' widths in bits
                        "layers": {"type": "array", "items": {"type": "object"}},
                        # codegen/hls_estimate.py's estimate (hls_estimate.json)
                        "estimate": {"type": "object"},
                        "streams": {"type": "array", "items": _object(
                            {"name": _STR, "value": _STR, "producer": _STR,
                             "consumer": _STR, "depth": _INT, "dtype": _STR,
                             "elements": _INT})}}),
    }),
}


@cache
def _validator():
    return fastjsonschema.compile(SCHEMA)


def check(manifest: dict, where: str) -> dict:
    """`manifest` if it matches SCHEMA; else an EdgecError saying where and what."""
    if isinstance(manifest, dict) and manifest.get("manifest_version") != VERSION:
        got = manifest.get("manifest_version", "none")
        raise EdgecError(f"{where}: manifest version {got}, this edgec reads version "
                         f"{VERSION}: compile the model again with this edgec")
    try:
        return _validator()(manifest)
    except fastjsonschema.JsonSchemaValueException as e:
        raise EdgecError(f"{where} does not match the manifest's schema: "
                         f"{e.message.replace('data', 'manifest', 1)}") from None


def write(out_dir: Path, manifest: dict) -> dict:
    """Check `manifest` (a key the schema lacks is edgec's bug, found here) and write it,
    with manifest.schema.json, into `out_dir`; the manifest as written (with its version)."""
    manifest = {"manifest_version": VERSION, **manifest}
    check(manifest, "the manifest being written")
    out = Path(out_dir)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (out / "manifest.schema.json").write_text(json.dumps(SCHEMA, indent=1) + "\n")
    return manifest


def read(out_dir) -> dict:
    """The checked manifest of the artifact in `out_dir`."""
    path = Path(out_dir) / "manifest.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise EdgecError(f"{out_dir} is not an edgec artifact (no manifest.json); "
                         "create one with `edgec compile`") from None
    except (OSError, json.JSONDecodeError) as e:
        raise EdgecError(f"cannot read {path}: {e}") from None
    return check(data, str(path))
