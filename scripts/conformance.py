#!/usr/bin/env python3
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
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnx.backend.test
from onnx import numpy_helper

NODE_DIR = Path(onnx.backend.test.__file__).parent / "data" / "node"
REGENERATE = "python scripts/conformance.py --write CONFORMANCE.md"

# Tolerances. onnx/backend/test/loader/__init__.py gives every node test rtol=1e-3 and
# atol=1e-7 (no node test ships a data.json overriding them), and Runner.assert_similar_outputs
# applies them with np.testing.assert_allclose. onnxruntime's backend test series keeps
# rtol=1e-3 and loosens atol for a few tests in onnx_backend_test_series_overrides.jsonc;
# those per-test values are taken over here (the DFT/STFT outputs sum many float32 terms).
RTOL, ATOL = 1e-3, 1e-7
ATOL_OVERRIDES = {
    "test_dft": 1e-3, "test_dft_axis": 1e-3, "test_dft_inverse": 1e-3,
    "test_dft_opset19": 1e-3, "test_dft_axis_opset19": 1e-3, "test_dft_inverse_opset19": 1e-3,
    "test_stft": 1e-4, "test_stft_with_window": 1e-4,
}
RTOL_OVERRIDES: dict[str, float] = {}

COMPILE_TIMEOUT_S = 120  # per test, import to static library
RUN_TIMEOUT_S = 120  # per runner executable (one batch of tests)
EMULATED_SLOWDOWN = 5  # run timeouts are this much longer under an emulator
BATCH = 48  # tests linked into one runner executable

# What edgec deliberately leaves out, by the element types, value kinds, domains and ops that
# mark a test as belonging there (see the "Left out" section of the report).
LEFT_OUT_DTYPES = {
    onnx.TensorProto.BFLOAT16: "bfloat16", onnx.TensorProto.STRING: "string",
    onnx.TensorProto.COMPLEX64: "complex64", onnx.TensorProto.COMPLEX128: "complex128",
}
for _name in ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT8E8M0",
              "INT4", "UINT4", "INT2", "UINT2", "FLOAT4E2M1"):
    if hasattr(onnx.TensorProto, _name):
        LEFT_OUT_DTYPES[getattr(onnx.TensorProto, _name)] = _name.lower()
RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
              "Multinomial", "Bernoulli"}
SEQUENCE_OPS = {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
                "SequenceInsert", "SequenceLength", "SequenceMap", "SplitToSequence",
                "ConcatFromSequence", "Optional", "OptionalGetElement", "OptionalHasElement"}
TRAINING_DOMAIN = "ai.onnx.preview.training"
# Tests whose expected outputs (made by onnx's reference implementation) onnxruntime 1.31 does
# not reproduce either; edgec gives onnxruntime's result to the bit (checked when this list
# was made). MaxUnpool: the ONNX spec says the indices are flat positions in MaxPool's input,
# i.e. in `output_shape`, as onnxruntime and torch read them; the reference places them in the
# default-sized output and pads that. Resize: downsampling with align_corners, which
# onnxruntime's own backend-test filters exclude.
FOLLOWS_ONNXRUNTIME = {"test_maxunpool_export_with_output_shape",
                       "test_resize_downsample_scales_cubic_align_corners",
                       "test_resize_downsample_scales_linear_align_corners"}


# -- one test -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Platform:
    """What the tests are compiled for and how their runners execute: `emulator` is a command
    prefix (e.g. qemu-x86_64 -cpu Haswell) under which the statically linked runner runs, or
    None to run it directly."""

    target: str = "x86"
    emulator: tuple[str, ...] | None = None
    backend: str = "c"  # what compiles the kernels: "c" or "llvm"


@dataclass
class Result:
    test: str
    op: str  # the ONNX op type the test is about ("domain.Op" outside the default domain)
    expanded: bool  # the model is the op's function body (a "_expanded" test)
    status: str  # "pass", "fail" (wrong result, crash, build error) or "unsupported"
    reason: str = ""
    folded: tuple[str, ...] = ()  # graph inputs baked in as constants from the test data
    all_folded: bool = False  # every input folded: the outputs are computed at compile time
    left_out: str = ""  # the deliberately left-out category the test falls in, if any


@dataclass
class Prepared:
    """A test compiled to a static library, waiting to be linked and run."""

    result: Result
    cname: str = ""
    out_dir: str = ""
    input_bytes: list[int] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)  # manifest outputs: shape, dtype


def test_names(pattern: str | None = None) -> list[str]:
    names = sorted(p.name for p in NODE_DIR.iterdir() if (p / "model.onnx").exists())
    if pattern:
        rx = re.compile(pattern)
        names = [n for n in names if rx.search(n)]
    return names


def _op_label(model: onnx.ModelProto) -> str:
    ops = sorted({(n.domain, n.op_type) for n in model.graph.node} - {("", "Constant")})
    domain, op = ops[0] if len(ops) == 1 else ("", "Constant")
    return f"{domain}.{op}" if domain not in ("", "ai.onnx") else op


def op_of(test: str) -> tuple[str, bool]:
    """The op a test exercises, and whether the test runs its expanded function body."""
    if "_expanded" in test:
        for twin in (test.replace("_expanded", ""), test[:test.index("_expanded")]):
            if (NODE_DIR / twin / "model.onnx").exists():
                return _op_label(onnx.load(NODE_DIR / twin / "model.onnx")), True
    return _op_label(onnx.load(NODE_DIR / test / "model.onnx")), "_expanded" in test


def _value_kinds(model: onnx.ModelProto) -> set[str]:
    return {vi.type.WhichOneof("value") for vi in [*model.graph.input, *model.graph.output]}


def _elem_types(model: onnx.ModelProto) -> set[int]:
    types = {vi.type.tensor_type.elem_type for vi in [*model.graph.input, *model.graph.output]
             if vi.type.WhichOneof("value") == "tensor_type"}
    types |= {t.data_type for t in model.graph.initializer}
    for g in _graphs(model.graph):
        for n in g.node:
            for a in n.attribute:
                if a.name in ("to", "output_dtype", "dtype") and a.type == a.INT:
                    types.add(a.i)
                if a.type == a.TENSOR:
                    types.add(a.t.data_type)
    return types


def _graphs(g: onnx.GraphProto) -> Iterable[onnx.GraphProto]:
    yield g
    for n in g.node:
        for a in n.attribute:
            if a.type == a.GRAPH:
                yield from _graphs(a.g)
            for sub in a.graphs:
                yield from _graphs(sub)


def left_out_category(test: str, model: onnx.ModelProto) -> str:
    """The deliberately left-out category `test` belongs to ("" if none)."""
    nodes = [n for g in _graphs(model.graph) for n in g.node]
    if any(n.domain == TRAINING_DOMAIN for n in nodes) or "training" in test:
        return "training"
    if _value_kinds(model) - {"tensor_type"} or any(n.op_type in SEQUENCE_OPS for n in nodes):
        return "sequences/optionals"
    odd = {LEFT_OUT_DTYPES[t] for t in _elem_types(model) if t in LEFT_OUT_DTYPES}
    if "string" in odd:
        return "string"
    if odd:
        return "narrow or complex dtypes"
    if any(n.op_type in RANDOM_OPS for n in nodes):
        return "random"
    if test in FOLLOWS_ONNXRUNTIME:
        return "follows onnxruntime"
    return ""


def load_tensors(folder: Path, prefix: str, count: int) -> list[np.ndarray]:
    return [numpy_helper.to_array(onnx.load_tensor(str(folder / f"{prefix}_{i}.pb")))
            for i in range(count)]


def _inputs_of(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _shorten(msg: str, limit: int = 110) -> str:
    msg = " ".join(msg.split())
    m = re.search(r"unsupported ONNX ops: (.*?); edgec supports", msg)
    if m:
        return "unsupported op " + re.sub(r" \(x\d+\)", "", m.group(1))
    m = re.search(r"no kernel yet for op\(s\): (.*)", msg)
    if m:
        return "no kernel for " + re.sub(r" \(x\d+\)", "", m.group(1))
    m = re.search(r"uses ONNX opset (\d+)", msg)
    if m:
        return f"opset {m.group(1)} < 11"
    m = re.search(r"ONNX element type (\d+) \((\w+)\) is not supported", msg)
    if m:
        code = int(m.group(1))
        known = code in onnx.TensorProto.DataType.values()
        return "unsupported dtype " + (onnx.TensorProto.DataType.Name(code) if known
                                       else m.group(2)).lower()
    msg = re.sub(r"node \S+ \((\w+)\): (\1's |\1: )?", r"\1: ", msg)
    m = re.search(r"^(.*?) must be a constant", msg)
    if m:
        return "non-constant input: " + m.group(1)
    msg = re.sub(r"^model '[^']*' ", "model ", msg)
    msg = re.sub(r"; edgec supports: .*", "", msg)
    msg = msg.replace("<bytes>: ", "")
    return msg if len(msg) <= limit else msg[:limit - 3].rstrip() + "..."


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
    """Graph inputs that `value` (an ONNX tensor name) is computed from."""
    producer = {o: n for n in model.graph.node for o in n.output}
    found, stack, seen = set(), [value], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in inputs:
            found.add(v)
        elif v in producer:
            stack.extend(i for i in producer[v].input if i)
    return found


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


def prepare(test: str, work: str, target: str = "x86", backend: str = "c") -> Prepared:
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
        return _compile(res, model, graph_inputs, feeds, Path(work) / test, target, backend)
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
             backend: str = "c") -> Prepared:
    from edgec.compiler.driver import compile as edgec_compile
    from edgec.errors import EdgecError, FrontendError, ShapeError, ToolchainError

    folded: set[str] = set()
    while True:
        live = [n for n in graph_inputs if n not in folded]
        try:
            art = edgec_compile(model, out, name=res.test, log=io.StringIO(), target=target,
                                input_shapes={n: list(feeds[n].shape) for n in live},
                                backend=backend)
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


def _np_dtype(name: str) -> np.dtype:
    from edgec.ir.dtypes import DType

    return DType(name).np


# -- batches: link, run, compare ----------------------------------------------------------

RUNNER_MAIN = r"""/* Conformance runner: runs each test's library on its inputs, writes outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*run_fn)(const void *const *, void *const *, void *);
typedef size_t (*size_fn)(void);
typedef size_t (*bytes_fn)(int);
struct test { run_fn run; size_fn workspace; bytes_fn in_bytes, out_bytes; int nin, nout; };

%(decls)s

static const struct test TESTS[] = {
%(table)s
};

static size_t up64(size_t n) { return (n + 63) / 64 * 64; }

static void *zalloc(size_t n)
{
    void *p = aligned_alloc(64, up64(n) + 64);
    if (p) memset(p, 0, up64(n) + 64);
    return p;
}

static int run_one(const struct test *t, const char *dir)
{
    char path[4096];
    const void *in[64];
    void *out[64];
    size_t total = 0, off = 0;
    for (int i = 0; i < t->nin; ++i) total += up64(t->in_bytes(i));
    char *ibuf = zalloc(total);
    snprintf(path, sizeof path, "%%s/inputs.bin", dir);
    FILE *f = fopen(path, "rb");
    if (!f || !ibuf || fread(ibuf, 1, total, f) != total) return -1;
    fclose(f);
    for (int i = 0; i < t->nin; ++i) { in[i] = ibuf + off; off += up64(t->in_bytes(i)); }
    total = off = 0;
    for (int i = 0; i < t->nout; ++i) total += up64(t->out_bytes(i));
    char *obuf = zalloc(total);
    for (int i = 0; i < t->nout; ++i) { out[i] = obuf + off; off += up64(t->out_bytes(i)); }
    void *ws = zalloc(t->workspace());
    int status = t->run(in, out, ws);
    snprintf(path, sizeof path, "%%s/outputs.bin", dir);
    f = fopen(path, "wb");
    if (!f || fwrite(obuf, 1, total, f) != total) return -2;
    fclose(f);
    free(ibuf); free(obuf); free(ws);
    return status;
}

int main(int argc, char **argv)
{
    /* arguments: INDEX DIR pairs */
    for (int a = 1; a + 1 < argc; a += 2) {
        int k = atoi(argv[a]);
        printf("BEGIN %%d\n", k);
        fflush(stdout);
        int status = run_one(&TESTS[k], argv[a + 1]);
        printf("END %%d %%d\n", k, status);
        fflush(stdout);
    }
    return 0;
}
"""


def _link(batch: list[Prepared], work: Path, index: int, platform: Platform
          ) -> tuple[Path | None, str]:
    from edgec.targets.target import get_target
    from edgec.targets.toolchain import cc

    decls, table = [], []
    for p in batch:
        n = p.cname
        decls.append(f"int {n}_run(const void *const *, void *const *, void *);\n"
                     f"size_t {n}_workspace_size(void);\n"
                     f"size_t {n}_input_bytes(int);\nsize_t {n}_output_bytes(int);")
        table.append(f"    {{{n}_run, {n}_workspace_size, {n}_input_bytes, {n}_output_bytes, "
                     f"{len(p.input_bytes)}, {len(p.outputs)}}},")
    src = work / f"runner{index}.c"
    src.write_text(RUNNER_MAIN % {"decls": "\n".join(decls), "table": "\n".join(table)})
    exe = work / f"runner{index}"
    libs = [str(Path(p.out_dir) / f"lib{p.cname}.a") for p in batch]
    # linked static under an emulator, which then needs no sysroot for the target's libc
    static = ["-static"] if platform.emulator is not None else []
    res = subprocess.run([cc(get_target(platform.target)), "-O1", "-std=c11", str(src), *libs,
                          *static, "-lm", "-lpthread", "-o", str(exe)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        return None, _shorten("link error: " + (res.stderr or res.stdout), 90)
    return exe, ""


def _run_batch(batch: list[Prepared], work: Path, index: int, platform: Platform) -> None:
    """Link and run a batch; set each test's status. A test that crashes the runner is
    recorded and the rest of the batch runs on in a fresh process."""
    exe, err = _link(batch, work, index, platform)
    if exe is None:
        if len(batch) == 1:
            batch[0].result.status, batch[0].result.reason = "fail", err
            return
        for p in batch:  # find the culprit: link each alone
            _run_batch([p], work, index * 1000 + batch.index(p) + 1, platform)
        return
    timeout = RUN_TIMEOUT_S * (EMULATED_SLOWDOWN if platform.emulator is not None else 1)
    todo = list(range(len(batch)))
    while todo:
        args = [*(platform.emulator or ()), str(exe)]
        for k in todo:
            args += [str(k), batch[k].out_dir]
        started, ended = [], {}
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
            stdout, why = proc.stdout, _signal_name(proc.returncode)
        except subprocess.TimeoutExpired as e:
            out = e.stdout or b""
            stdout = out.decode() if isinstance(out, bytes) else out
            why = f"timeout: no result in {timeout} s"
        for line in stdout.splitlines():
            parts = line.split()
            if parts[:1] == ["BEGIN"]:
                started.append(int(parts[1]))
            elif parts[:1] == ["END"]:
                ended[int(parts[1])] = int(parts[2])
        for k, status in ended.items():
            try:
                _compare(batch[k], status)
            except Exception as e:  # outputs the harness cannot read: said, and the run goes on
                batch[k].result.status = "fail"
                batch[k].result.reason = _shorten(f"crash: reading outputs: {e}")
        crashed = [k for k in started if k not in ended]
        for k in crashed:
            batch[k].result.status = "fail"
            batch[k].result.reason = f"crash: {why or 'runner died'} in the generated code"
        done = set(ended) | set(crashed)
        rest = [k for k in todo if k not in done]
        if rest and not crashed:  # the runner stopped without saying why: do not spin
            for k in rest:
                batch[k].result.status, batch[k].result.reason = "fail", "crash: runner died"
            rest = []
        todo = rest


def _signal_name(rc: int) -> str:
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal {-rc}"
    return f"exit {rc}" if rc else ""


def tolerances(test: str) -> tuple[float, float]:
    return RTOL_OVERRIDES.get(test, RTOL), ATOL_OVERRIDES.get(test, ATOL)


def _compare(p: Prepared, status: int) -> None:
    res = p.result
    if status != 0:
        res.status = "fail"
        res.reason = {-1: "runner could not read inputs", -2: "runner could not write outputs"} \
            .get(status, f"run returned status {status}")
        return
    raw = (Path(p.out_dir) / "outputs.bin").read_bytes()
    folder = NODE_DIR / res.test / "test_data_set_0"
    n_expected = len(list(folder.glob("output_*.pb")))
    if n_expected != len(p.outputs):
        res.status, res.reason = "fail", f"{len(p.outputs)} outputs, expected {n_expected}"
        return
    want = load_tensors(folder, "output", n_expected)
    rtol, atol = tolerances(res.test)
    off, worst = 0, None
    for i, (spec, w) in enumerate(zip(p.outputs, want)):
        dt = np.dtype(_np_dtype(spec["dtype"]))
        count = int(np.prod(spec["shape"], dtype=np.int64))
        got = np.frombuffer(raw, dt, count, off).reshape(spec["shape"])
        off += -(-count * dt.itemsize // 64) * 64
        if list(w.shape) != spec["shape"]:
            res.status, res.reason = "fail", f"output {i} shape {spec['shape']}, " \
                f"expected {list(w.shape)}"
            return
        if w.dtype != dt:
            res.status, res.reason = "fail", f"output {i} dtype {dt}, expected {w.dtype}"
            return
        err = mismatch(got, w, rtol, atol)
        if err is not None and worst is None:
            worst = f"output {i} mismatch: {err}" if len(want) > 1 else f"mismatch: {err}"
    res.status, res.reason = ("fail", worst) if worst else ("pass", "")


def mismatch(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """None if np.testing.assert_allclose(got, want, rtol, atol) would pass, else the
    worst errors in a few words."""
    if not np.issubdtype(want.dtype, np.inexact):  # bool and ints: atol 1e-7 means equal
        bad = got != want
        return f"{int(bad.sum())} of {want.size} differ" if bad.any() else None
    g, w = got.astype(np.float64), want.astype(np.float64)
    ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if ok.all():
        return None
    fin = np.isfinite(g) & np.isfinite(w) & ~ok
    if not fin.any():
        return f"{int((~ok).sum())} of {want.size} differ in NaN/inf"
    diff = np.abs(g[fin] - w[fin])
    with np.errstate(over="ignore", divide="ignore"):
        rel = diff / np.abs(w[fin])
    return (f"max abs err {diff.max():.1e}, max rel err {rel.max():.1e} "
            f"({int((~ok).sum())} of {want.size})")


# -- the whole suite ----------------------------------------------------------------------

class _Worker:
    """A compiler process (`--serve`): one test name in a line, one JSON `Prepared` out. If it
    dies or hangs, the test it was on is the culprit and a fresh process takes the next."""

    def __init__(self, work: Path, index: int, target: str = "x86", backend: str = "c"):
        self.work, self.proc, self.target, self.backend = work, None, target, backend
        self.log = open(work / f"worker{index}.log", "a")  # its warnings, for a reader

    def command(self) -> list[str]:
        return [sys.executable, __file__, "--serve", str(self.work), "--target", self.target,
                "--backend", self.backend]

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


def serve(work: str, target: str = "x86", backend: str = "c") -> None:
    """The compiler process's loop (see `_Worker`)."""
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies on the pipe
    for line in sys.stdin:
        p = prepare(line.strip(), work, target, backend)
        out.write(json.dumps(dataclasses.asdict(p)) + "\n")
        out.flush()


def run_suite(names: Sequence[str], jobs: int, work: Path,
              progress: Callable[[str], None] | None = None,
              platform: Platform = Platform()) -> list[Result]:
    """Compile, build, run and compare the tests `names` in the folder `work`."""
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    todo: queue.Queue[str] = queue.Queue()
    for n in names:
        todo.put(n)
    prepared: list[Prepared] = []
    lock = threading.Lock()

    def drain(index: int) -> None:
        worker = _Worker(work, index, platform.target, platform.backend)
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


# -- the report ---------------------------------------------------------------------------

def report(results: Sequence[Result], platform: Platform = Platform()) -> str:
    total = len(results)
    passed = sum(r.status == "pass" for r in results)
    failed = sum(r.status == "fail" for r in results)
    by_op: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_op[r.op].append(r)
    direct = {op: [r for r in rs if not r.expanded] for op, rs in by_op.items()}
    ops_passing = sorted(op for op, rs in direct.items() if any(r.status == "pass" for r in rs))
    full = [op for op in ops_passing if all(r.status == "pass" for r in direct[op])]
    ge95 = [op for op in ops_passing if _share(direct[op]) >= 0.95]
    in_scope = {op: [r for r in rs if not r.left_out or r.status == "pass"]
                for op, rs in direct.items()}
    below = [op for op in ops_passing if _share(in_scope[op]) < 0.95]
    left = Counter(r.left_out for r in results if r.left_out)
    left_not_passing = Counter(r.left_out for r in results if r.left_out and r.status != "pass")
    folded = sum(bool(r.folded) for r in results if r.status == "pass")
    all_folded = sum(r.all_folded for r in results if r.status == "pass")
    onnx_version = onnx.__version__
    under = f" under `{shlex.join(platform.emulator)}`" if platform.emulator else ""
    lines = [
        "# ONNX conformance",
        "",
        f"The ONNX backend node tests shipped in the onnx {onnx_version} wheel "
        "(`onnx/backend/test/data/node`), each compiled by edgec to C for the test's input "
        "shapes, built, run on the test's inputs and compared with its expected outputs.",
        "",
        f"Generated by `{REGENERATE}`; CI runs "
        "`python scripts/conformance.py --check CONFORMANCE.md` and fails when this file is "
        "stale. Do not edit by hand.",
        "",
        "## Totals",
        "",
        "| | |",
        "|---|---|",
        f"| tests passed | **{passed} / {total}** ({100 * passed / max(total, 1):.1f}%) |",
        f"| tests failed (wrong result, crash, build error) | {failed} |",
        f"| tests not supported (edgec refuses the model) | {total - passed - failed} |",
        f"| passing tests that needed inputs folded | {folded} |",
        f"| ... of which had every input folded (outputs computed at compile time) | "
        f"{all_folded} |",
        f"| op types in the suite | {len(by_op)} |",
        f"| op types with a passing test of the op itself | **{len(ops_passing)}** |",
        f"| ... of which pass all their tests | {len(full)} |",
        f"| ... of which pass >= 95% of their tests | {len(ge95)} |",
        f"| ... of which pass >= 95% of their tests not left out on purpose | "
        f"{len(ops_passing) - len(below)} |",
        f"| ... below that | {', '.join(below) or 'none'} |",
        "",
        "An op type counts its own tests and, separately, its `_expanded` tests (the model is "
        "the op's function body, so those exercise other ops).",
        "",
        "## How tests are run and compared",
        "",
        "- Each test's `model.onnx` is compiled with `edgec.compiler.driver.compile` (target "
        f"`{platform.target}`, the default pipeline), with `input_shapes` from "
        "`test_data_set_0`'s inputs, "
        f"into `libNAME.a`. The libraries of {BATCH} tests link into one runner executable, "
        f"which calls each `NAME_run` on the test's inputs{under} (a test that crashes it "
        "fails alone; "
        "the rest of its batch runs on). One test, in detail: "
        "`python scripts/conformance.py --filter '^test_abs$'`.",
        "- Outputs are compared as `onnx.backend.test.runner.Runner.assert_similar_outputs` "
        "does: same number of outputs, same shapes, same dtypes, then "
        "`np.testing.assert_allclose(got, want, rtol, atol)` (NaN equals NaN), that is "
        "`|got - want| <= atol + rtol * |want|` elementwise.",
        f"- Tolerances: rtol = {RTOL:g}, atol = {ATOL:g}, the defaults "
        "`onnx/backend/test/loader/__init__.py` gives every test (no node test ships a "
        "`data.json` overriding them). Per-test overrides, from onnxruntime's "
        "`onnx_backend_test_series_overrides.jsonc`: "
        + ", ".join(f"`{k}` atol {v:g}" for k, v in sorted(ATOL_OVERRIDES.items())) + ".",
        "- Inputs folded: edgec needs shape-like inputs (Reshape's shape, Slice's starts, "
        "Tile's repeats, TopK's k, Resize's scales, ...) as constants. When the import says "
        "one \"must be a constant\", the graph inputs it is computed from are baked into the "
        "model as initializers holding the test's own data and the test is compiled again; "
        "it still runs the op on those values. The column lists them; \"all\" marks a test "
        "whose every input was folded, so its outputs are computed at compile time (by the "
        "op's reference in edgec's registry) and the C only copies them out.",
        "- Outcomes: **pass**; **fail**: edgec compiled the model but the result is wrong, the "
        "generated C does not build, or it crashes (these are bugs); **unsupported**: edgec "
        "refuses the model with an error that says why.",
        "- The error magnitudes in mismatch reasons, and how many elements miss, depend on the "
        "CPU's vector ISA; the staleness check ignores both.",
        "",
        "## Left out on purpose",
        "",
        "Tests in these categories are counted in the totals; those that do not pass are "
        "expected not to:",
        "",
        "| category | tests | not passing | why |",
        "|---|---|---|---|",
    ]
    why = {
        "training": "training-only ops (ai.onnx.preview.training) and training_mode",
        "sequences/optionals": "sequence and optional values: edgec compiles tensors only",
        "string": "string tensors and string ops",
        "random": "random generators: outputs cannot match the test's draws",
        "narrow or complex dtypes": "float8, float4, int4/uint4, int2/uint2, bfloat16 and "
                                    "complex element types",
        "follows onnxruntime": "expected outputs that onnxruntime 1.31 does not reproduce "
                               "either; edgec gives onnxruntime's result (MaxUnpool with "
                               "output_shape, as the spec and torch read the indices; Resize "
                               "downsampling with align_corners)",
    }
    for cat in sorted(left):
        reason = why[cat]
        lines.append(f"| {cat} | {left[cat]} | {left_not_passing[cat]} | {reason} |")
    lines += ["", "## Per op type", "",
              "| op | passed | expanded passed | reasons for the others |", "|---|---|---|---|"]
    for op in sorted(by_op):
        d = direct[op]
        e = [r for r in by_op[op] if r.expanded]
        reasons = Counter(_reason_class(r) for r in by_op[op] if r.status != "pass")
        rs = "; ".join(f"{k} (x{v})" if v > 1 else k for k, v in sorted(reasons.items()))
        lines.append(f"| {op} | {_frac(d)} | {_frac(e) if e else ''} | {_md(rs)} |")
    lines += ["", "## Tests", "",
              "| test | op | result | inputs folded | reason |", "|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: (r.op, r.test)):
        folded = ("all: " if r.all_folded else "") + ", ".join(r.folded)
        lines.append(f"| {r.test} | {r.op} | {r.status} | {folded} | {_md(r.reason)} |")
    return "\n".join(lines) + "\n"


def _share(rs: Sequence[Result]) -> float:
    return sum(r.status == "pass" for r in rs) / len(rs) if rs else 1.0


def _frac(rs: Sequence[Result]) -> str:
    return f"{sum(r.status == 'pass' for r in rs)} / {len(rs)}"


def _md(s: str) -> str:
    return s.replace("|", "\\|")


def _reason_class(r: Result) -> str:
    """A failure reason without its numbers and names, to group alike failures."""
    if r.left_out and r.status != "pass":
        return f"left out: {r.left_out}"
    s = r.reason
    s = re.sub(r"mismatch: .*", "mismatch", s)
    s = re.sub(r"^output \d+ ", "", s)
    return s.split(":")[0] if s.startswith(("crash", "C build error", "timeout")) else s


def parse_report(text: str) -> dict[str, str]:
    """test -> result, from a CONFORMANCE.md."""
    rows = re.findall(r"^\| (test_\w+) \| [^|]+ \| (\w+) \|", text, re.M)
    return dict(rows)


def staleness(old: str, new: str, path: str) -> str | None:
    """None if report `old` matches the fresh `new` (error magnitudes aside), else what
    changed and how to regenerate it."""
    if _normalize(old) == _normalize(new):
        return None
    before, after = parse_report(old), parse_report(new)
    changed = [f"{t}: {before.get(t, 'absent')} -> {after.get(t, 'absent')}"
               for t in sorted(set(before) | set(after)) if before.get(t) != after.get(t)]
    listed = "".join(f"\n  {c}" for c in changed[:30]) + ("\n  ..." if len(changed) > 30 else "")
    return (f"{path} is stale: {len(changed)} tests changed result{':' if changed else ''}"
            f"{listed}\nregenerate it with `{REGENERATE}` and commit it")


def _normalize(text: str) -> str:
    # Error magnitudes, and how many elements miss, depend on the CPU's vector ISA: the
    # staleness check ignores both.
    text = re.sub(r"\(\d+ of \d+\)", "(# of #)", text)
    return re.sub(r"\d\.\de[+-]\d+", "#", text)


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
    ap.add_argument("--serve", metavar="WORK", help=argparse.SUPPRESS)  # a compiler process
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve, args.target, args.backend)
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
    platform = Platform(args.target, emulator, args.backend)
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
             + f", backend {platform.backend}"))
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
