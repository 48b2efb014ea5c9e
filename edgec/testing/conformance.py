"""ONNX conformance: the backend node tests of the onnx 1.22.0 wheel, run through edgec's C.

Each test's model is compiled by the real driver (`edgec.compiler.driver.compile`, the test's
input shapes fixed) into `libNAME.a`; the libraries of a batch of tests are linked into one
runner executable that feeds each library the test's inputs, and the outputs are compared
with the expected ones as the ONNX backend runner does: shape and dtype equal, then
|got - want| <= atol + rtol * |want| elementwise (NaN equals NaN).

    python scripts/conformance.py                      # run all, print a summary
    python scripts/conformance.py --filter 'test_(sin|cos)'   # a subset, one line per test
    python scripts/conformance.py --write CONFORMANCE.md      # regenerate the report
    python scripts/conformance.py --check CONFORMANCE.md      # CI: fail if the report is stale
    python scripts/conformance.py --target x86-avx2 --emulator "qemu-x86_64 -cpu Haswell"
    python scripts/conformance.py --target arm64       # under qemu-aarch64 (armv7: qemu-arm)
    python scripts/conformance.py --sanitize           # built and run with ASan + UBSan

`python -m edgec.testing.conformance` takes the same arguments (scripts/conformance.py calls
this module's `main`); the tests import the harness as `edgec.testing.conformance`.

This file compiles each test (in worker processes) and drives the suite; its siblings hold the
rest: conformance_common.py (the tests, the categories left out, tolerances, a result),
conformance_runner.py (a batch linked, run and compared), conformance_report.py
(CONFORMANCE.md written, read back, checked for staleness).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import io
import json
import os
import queue
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import networkx as nx
import numpy as np
import onnx
import onnx.backend.test
from onnx import numpy_helper

# mismatch and tolerances are imported for the tests, which use them from here
from .conformance_common import (  # noqa: F401
    BATCH,
    COMPILE_TIMEOUT_S,
    DEFAULT_PLATFORM,
    NODE_DIR,
    Platform,
    Prepared,
    Result,
    _inputs_of,
    _np_dtype,
    _shorten,
    _value_kinds,
    left_out_category,
    load_tensors,
    mismatch,
    op_of,
    test_names,
    tolerances,
)
from .conformance_report import report, staleness
from .conformance_runner import _run_batch, _signal_name

# -- one test -----------------------------------------------------------------------------

def _compiler_error(msg: str) -> str:
    """The first diagnostic of a failed gcc run, without its path and line."""
    for line in msg.splitlines():
        m = re.search(r"(?:error|warning): (.*)", line)
        if m:
            return _shorten(m.group(1), 90)
    return _shorten(msg.splitlines()[-1] if msg else "", 90)


def _fold(model: onnx.ModelProto, names: set[str], feeds: dict[str, np.ndarray]) -> None:
    """Turn graph inputs `names` into initializers holding the test's data."""
    keep = [i for i in model.graph.input if i.name not in names]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    for n in sorted(names):
        model.graph.initializer.append(numpy_helper.from_array(feeds[n], n))


def _input_ancestors(model: onnx.ModelProto, value: str, inputs: set[str]) -> set[str]:
    """Graph inputs that `value` (an ONNX tensor name) is computed from (itself, if one)."""
    tensors = nx.DiGraph((i, o) for n in model.graph.node for o in n.output for i in n.input if i)
    tensors.add_node(value)
    return ({value} | nx.ancestors(tensors, value)) & inputs


def _constant_culprits(msg: str, model: onnx.ModelProto, inputs: set[str],
                       feeds: dict[str, np.ndarray]) -> set[str]:
    """The graph inputs to bake in so that the value named in a 'must be a constant' error
    becomes one; all the non-float inputs when the name cannot be traced."""
    m = re.search(r"computed from %(\S+) at run time", msg)
    if m:
        name = m.group(1)
        for cand in (name, re.sub(r"_\d+$", "", name)):
            found = _input_ancestors(model, cand, inputs)
            if found:
                return found
    return {n for n in inputs if not np.issubdtype(feeds[n].dtype, np.floating)}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def prepare(test: str, work: str, target: str = "x86", backend: str = "c",
            sanitize: bool = False) -> Prepared:
    """Compile one test into `work/<test>/`; never raises."""
    op, expanded = op_of(test)
    res = Result(test, op, expanded, "unsupported")
    folder = NODE_DIR / test
    try:
        model = onnx.load(folder / "model.onnx")
        res.left_out = left_out_category(test, model)
        if _value_kinds(model) - {"tensor_type"}:
            res.reason = "sequence/optional types"
            return Prepared(res)
        graph_inputs = [i.name for i in _inputs_of(model)]
        data = folder / "test_data_set_0"
        arrays = load_tensors(data, "input", len(model.graph.input))
        feeds = {i.name: a for i, a in zip(model.graph.input, arrays)}
    except Exception as e:  # an unreadable test is the harness's problem, said as such
        res.reason = _shorten(f"cannot read the test: {type(e).__name__}: {e}")
        return Prepared(res)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(COMPILE_TIMEOUT_S)
    try:
        return _compile(res, model, graph_inputs, feeds, Path(work) / test, target, backend,
                        sanitize)
    except _Timeout:
        res.status, res.reason = "fail", f"timeout: compiling took over {COMPILE_TIMEOUT_S} s"
        return Prepared(res)
    except Exception as e:  # the harness's own bug: one test fails, the run goes on
        res.status, res.reason = "fail", _shorten(f"crash: harness: {type(e).__name__}: {e}")
        return Prepared(res)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _compile(res: Result, model: onnx.ModelProto, graph_inputs: list[str],
             feeds: dict[str, np.ndarray], out: Path, target: str,
             backend: str = "c", sanitize: bool = False) -> Prepared:
    from edgec.compiler.driver import compile as edgec_compile
    from edgec.errors import EdgecError, FrontendError, ShapeError, ToolchainError

    folded: set[str] = set()
    while True:
        live = [n for n in graph_inputs if n not in folded]
        try:
            art = edgec_compile(model, out, name=res.test, log=io.StringIO(), target=target,
                                input_shapes={n: list(feeds[n].shape) for n in live},
                                backend=backend, sanitize=sanitize)
            break
        except (ShapeError, FrontendError) as e:
            more = _constant_culprits(str(e), model, set(live), feeds) - folded \
                if "must be a constant" in str(e) else set()
            if not more:
                res.reason, res.folded = _shorten(str(e)), tuple(sorted(folded))
                return Prepared(res)
            folded |= more
            _fold(model, more, feeds)
        except ToolchainError as e:
            res.status, res.reason = "fail", "C build error: " + _compiler_error(str(e))
            res.folded = tuple(sorted(folded))
            return Prepared(res)
        except EdgecError as e:
            res.reason = _shorten(str(e))
            res.folded = tuple(sorted(folded))
            return Prepared(res)
        except Exception as e:  # a bug in edgec: recorded, and the run goes on
            res.status, res.reason = "fail", _shorten(f"crash: {type(e).__name__}: {e}")
            res.folded = tuple(sorted(folded))
            return Prepared(res)
    res.folded = tuple(sorted(folded))
    res.all_folded = bool(folded) and folded == set(graph_inputs)
    man = art.manifest
    blobs = []
    for spec in man["inputs"]:
        a = feeds.get(spec["name"])
        if a is None:
            res.status, res.reason = "fail", f"crash: compiled input '{spec['name']}' unknown"
            return Prepared(res)
        want = np.dtype(_np_dtype(spec["dtype"]))
        if a.dtype != want or list(a.shape) != spec["shape"]:
            res.reason = (f"input {spec['name']} {a.dtype}{list(a.shape)} compiled as "
                          f"{want}{spec['shape']}")
            return Prepared(res)
        blobs.append(np.ascontiguousarray(a).tobytes())
    with open(out / "inputs.bin", "wb") as f:
        for b in blobs:
            f.write(b + b"\0" * (-len(b) % 64))
    res.status = "built"
    return Prepared(res, res.test, str(out), [len(b) for b in blobs], man["outputs"])


# -- the whole suite ----------------------------------------------------------------------

class _Worker:
    """A compiler process (`--serve`): one test name in a line, one JSON `Prepared` out. If it
    dies or hangs, the test it was on is the culprit and a fresh process takes the next."""

    def __init__(self, work: Path, index: int, target: str = "x86", backend: str = "c",
                 sanitize: bool = False):
        self.work, self.proc, self.target, self.backend = work, None, target, backend
        self.sanitize = sanitize
        self.log = open(work / f"worker{index}.log", "a")  # its warnings, for a reader

    def command(self) -> list[str]:
        return [sys.executable, "-m", "edgec.testing.conformance", "--serve", str(self.work),
                "--target", self.target, "--backend", self.backend,
                *(["--sanitize"] if self.sanitize else [])]

    def prepare(self, test: str) -> Prepared:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.proc.stdin.write(test + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], COMPILE_TIMEOUT_S + 60)
        line = self.proc.stdout.readline() if ready else ""
        if line:
            return _prepared_from_json(line)
        if not ready:
            self.proc.kill()
            why = f"timeout: compiling took over {COMPILE_TIMEOUT_S + 60} s"
        else:
            why = f"crash: the compiler process died ({_signal_name(self.proc.wait())})"
        self.proc = None
        op, expanded = op_of(test)
        return Prepared(Result(test, op, expanded, "fail", why))

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()
        self.log.close()


def _prepared_from_json(line: str) -> Prepared:
    d = json.loads(line)
    r = d.pop("result")
    return Prepared(Result(**{**r, "folded": tuple(r["folded"])}), **d)


def serve(work: str, target: str = "x86", backend: str = "c", sanitize: bool = False) -> None:
    """The compiler process's loop (see `_Worker`)."""
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies on the pipe
    for line in sys.stdin:
        p = prepare(line.strip(), work, target, backend, sanitize)
        out.write(json.dumps(dataclasses.asdict(p)) + "\n")
        out.flush()


def run_suite(names: Sequence[str], jobs: int, work: Path,
              progress: Callable[[str], None] | None = None,
              platform: Platform = DEFAULT_PLATFORM) -> list[Result]:
    """Compile, build, run and compare the tests `names` in the folder `work`."""
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    todo: queue.Queue[str] = queue.Queue()
    for n in names:
        todo.put(n)
    prepared: list[Prepared] = []
    lock = threading.Lock()

    def drain(index: int) -> None:
        worker = _Worker(work, index, platform.target, platform.backend, platform.sanitize)
        try:
            while True:
                try:
                    test = todo.get_nowait()
                except queue.Empty:
                    return
                p = worker.prepare(test)
                with lock:
                    prepared.append(p)
                    if len(prepared) % 200 == 0:
                        say(f"compiled {len(prepared)}/{len(names)}")
        finally:
            worker.close()

    with cf.ThreadPoolExecutor(max(jobs, 1)) as pool:
        list(pool.map(drain, range(max(jobs, 1))))
    built = sorted((p for p in prepared if p.result.status == "built"),
                   key=lambda p: p.result.test)
    batches = [built[i:i + BATCH] for i in range(0, len(built), BATCH)]
    t1 = time.perf_counter()
    say(f"compiled {len(names)} tests in {t1 - t0:.0f} s; linking and running {len(built)} "
        f"in {len(batches)} batches")
    with cf.ThreadPoolExecutor(max(jobs, 1)) as pool:
        list(pool.map(lambda ib: _run_batch(ib[1], work, ib[0], platform), enumerate(batches)))
    say(f"linked, ran and compared in {time.perf_counter() - t1:.0f} s")
    return sorted((p.result for p in prepared), key=lambda r: r.test)


# -- the command line ---------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filter", help="run only the tests whose name matches this regex")
    ap.add_argument("--write", metavar="FILE", help="write the report (CONFORMANCE.md)")
    ap.add_argument("--check", metavar="FILE", help="fail if FILE differs from a fresh report")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel workers")
    ap.add_argument("--keep", metavar="DIR", help="keep the generated libraries in DIR")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ap.add_argument("--target", default="x86", help="the edgec target to compile for")
    ap.add_argument("--emulator", metavar="CMD",
                    help='run the runners, linked -static, under this command, e.g. '
                         '"qemu-x86_64 -cpu Haswell"')
    ap.add_argument("--backend", default="c", choices=("c", "llvm"),
                    help="what compiles the kernels (edgec compile --backend)")
    ap.add_argument("--sanitize", action="store_true",
                    help="build the tests and the runners with AddressSanitizer and "
                         "UndefinedBehaviorSanitizer (edgec compile --sanitize): a finding "
                         "fails its test")
    ap.add_argument("--serve", metavar="WORK", help=argparse.SUPPRESS)  # a compiler process
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve, args.target, args.backend, args.sanitize)
        return 0
    from edgec.targets.target import TARGETS

    if args.target not in TARGETS:
        ap.error(f"unknown target {args.target!r}; edgec knows: {', '.join(TARGETS)}")
    try:
        emulator = None if args.emulator is None else tuple(shlex.split(args.emulator))
    except ValueError as e:
        ap.error(f"--emulator: {e}")
    if emulator is None:  # a cross target's runners run under its qemu
        from edgec.targets.target import get_target

        emulator = get_target(args.target).emulator or None
    if emulator and shutil.which(emulator[0]) is None:
        ap.error(f"emulator {emulator[0]!r} not found (qemu-* come in `apt-get install qemu-user`)")
    if args.sanitize and emulator:
        ap.error("--sanitize runs the tests natively: an x86 target, no --emulator")
    platform = Platform(args.target, emulator, args.backend, args.sanitize)
    if args.filter and (args.write or args.check):
        ap.error("--write and --check run the whole suite; drop --filter")
    names = test_names(args.filter)
    if not names:
        ap.error(f"no test matches {args.filter!r}")
    t0 = time.perf_counter()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="edgec-conf-"))
    work.mkdir(parents=True, exist_ok=True)
    verbose = bool(args.filter)
    try:
        results = run_suite(names, args.jobs, work,
                            progress=None if verbose else lambda s: print(s, file=sys.stderr),
                            platform=platform)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.perf_counter() - t0
    if verbose:
        for r in results:
            every = "all " if r.all_folded else ""
            folded = f" [folded {every}{', '.join(r.folded)}]" if r.folded else ""
            print(f"{r.status:12} {r.test}{folded}" + (f": {r.reason}" if r.reason else ""))
    counts = Counter(r.status for r in results)
    print(f"conformance: {counts['pass']} of {len(results)} node tests pass "
          f"({counts['fail']} give a wrong result, {counts['unsupported']} are refused), "
          f"in {elapsed:.0f} s with {args.jobs} jobs"
          + ("" if platform == Platform() else f", target {platform.target}"
             + (f" under {shlex.join(emulator)}" if emulator is not None else "")
             + f", backend {platform.backend}"
             + (", sanitized" if platform.sanitize else "")))
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in results], indent=1) + "\n")
    text = report(results, platform)
    if args.write:
        Path(args.write).write_text(text)
        print(f"wrote {args.write}")
    if args.check:
        try:
            old = Path(args.check).read_text()
        except OSError:
            old = ""
        stale = staleness(old, text, args.check)
        if stale:
            print(stale, file=sys.stderr)
            return 1
        print(f"{args.check} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
