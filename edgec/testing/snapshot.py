"""What edgec generates for the zoo models on every target, as hashes of the files of each
build, so that a change meant to leave the generated code alone (a move, a refactoring) can be
shown to: run it before and after, then compare.

    python scripts/snapshot_codegen.py before.json              # at the old commit
    python scripts/snapshot_codegen.py after.json --against before.json

Each build is a zoo model compiled for one target and backend, float, `--quantize int8`,
`--prune 0.8`, or as onnxruntime's QDQ model (`edgec.zoo.quantize_qdq`), with
`--emit-kernels` and EDGEC_TUNE=0 (no timing decides a kernel). Every file of the artifact is
hashed but the archive (the same objects, with dates) and manifest.json; report.txt without its
timings. With `--keep DIR` the files are kept, one folder per build, for reading a difference.
About 140 builds: 15-20 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TARGETS = ("c-generic", "x86", "x86-avx2", "x86-avx512", "arm64", "arm64-dotprod", "armv7")
LLVM_TARGETS = ("x86-avx512", "arm64")
VARIANTS = {"float": {}, "int8": {"quantize": "int8"}, "pruned": {"prune": 0.8}, "qdq": {}}
VARIANT_MODELS = ("mlp", "tiny_cnn", "mobilenet_v2")
SKIPPED = {"manifest.json"}
# the lines of report.txt that time the compile
TIMING = re.compile(r"^(\S+\s+[0-9.]+\s+[0-9.]+%|total\s|compile time:)")


def builds() -> list[tuple[str, str, str, str]]:
    """(model, target, backend, variant) of every build."""
    from edgec.zoo import FAMILIES, MODELS

    out = []
    for model in [*MODELS, *FAMILIES]:
        out += [(model, t, "c", "float") for t in TARGETS]
        out += [(model, t, "llvm", "float") for t in LLVM_TARGETS]
    for model in VARIANT_MODELS:
        out += [(model, t, "c", v) for t in TARGETS for v in ("int8", "pruned", "qdq")]
    return out


def digest(path: Path) -> str:
    data = path.read_bytes()
    if path.name == "report.txt":
        data = "\n".join(line for line in data.decode().splitlines()
                         if not TIMING.match(line)).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def build(job: tuple[str, str, str, str], keep: str | None) -> tuple[str, dict[str, str]]:
    import onnx

    from edgec import compile as compile_model
    from edgec.errors import EdgecError
    from edgec.zoo import FAMILIES, MODELS, quantize_qdq

    model, target, backend, variant = job
    key = "|".join(job)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{model}.onnx"
        m = {**MODELS, **FAMILIES}[model]()
        onnx.save(m, path)
        if variant == "qdq":
            path = quantize_qdq(m, tmp)
        out = Path(tmp) / "out"
        try:
            compile_model(str(path), str(out), target=target, backend=backend,
                          emit_kernels=True, log=io.StringIO(), **VARIANTS[variant])
        except EdgecError as e:
            return key, {"error": str(e)[:300]}
        files = {}
        for f in sorted(out.iterdir()):
            if f.suffix == ".a" or f.name in SKIPPED:
                continue
            files[f.name] = digest(f)
            if keep:
                folder = Path(keep) / key.replace("|", "-")
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f.name).write_bytes(f.read_bytes())
        return key, files


def compare(old: dict, new: dict) -> list[str]:
    """'build: file' for each file whose hash differs, is new or is gone."""
    lines = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            lines.append(f"{key}: {'new' if a is None else 'gone'} build")
            continue
        lines += [f"{key}: {f}" for f in sorted(set(a) | set(b)) if a.get(f) != b.get(f)]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="where the hashes go (JSON)")
    ap.add_argument("--against", help="hashes of an earlier run: print what differs")
    ap.add_argument("--keep", help="keep each build's files under this folder")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    os.environ["EDGEC_TUNE"] = "0"
    jobs = builds()
    with ProcessPoolExecutor(args.jobs) as ex:
        hashes = dict(ex.map(build, jobs, [args.keep] * len(jobs)))
    Path(args.out).write_text(json.dumps(hashes, indent=1, sort_keys=True))
    errors = sum("error" in v for v in hashes.values())
    print(f"{len(hashes)} builds, {errors} refused; hashes in {args.out}")
    if args.against:
        diff = compare(json.loads(Path(args.against).read_text()), hashes)
        print("\n".join(diff) if diff else "no file differs")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
