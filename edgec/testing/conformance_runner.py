"""The conformance suite's batches: the compiled tests of a batch linked into one runner
executable, run (natively or under an emulator), and their outputs compared with the expected
ones (scripts/conformance.py runs the suite)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import numpy as np

from .conformance_common import (
    EMULATED_SLOWDOWN,
    NODE_DIR,
    RUN_TIMEOUT_S,
    Platform,
    Prepared,
    _np_dtype,
    _shorten,
    load_tensors,
    mismatch,
    tolerances,
)

# -- batches: link, run, compare ----------------------------------------------------------

RUNNER_MAIN = r"""/* Conformance runner: runs each test's library on its inputs, writes outputs. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
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

/* A zeroed, 64-byte aligned buffer of exactly n bytes, so that a sanitized runner sees an
   access past its end (inputs.bin and outputs.bin pad each tensor to 64 bytes). */
static void *zalloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 1) != 0) return NULL;
    memset(p, 0, n ? n : 1);
    return p;
}

static int run_one(const struct test *t, const char *dir)
{
    static const char pad[64];
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
    for (int i = 0; i < t->nin; ++i) {
        void *p = zalloc(t->in_bytes(i));
        if (!p) return -1;
        memcpy(p, ibuf + off, t->in_bytes(i));
        in[i] = p;
        off += up64(t->in_bytes(i));
    }
    for (int i = 0; i < t->nout; ++i)
        if (!(out[i] = zalloc(t->out_bytes(i)))) return -2;
    void *ws = zalloc(t->workspace());
    int status = t->run(in, out, ws);
    snprintf(path, sizeof path, "%%s/outputs.bin", dir);
    f = fopen(path, "wb");
    if (!f) return -2;
    for (int i = 0; i < t->nout; ++i) {
        size_t n = t->out_bytes(i);
        if (fwrite(out[i], 1, n, f) != n || fwrite(pad, 1, up64(n) - n, f) != up64(n) - n)
            return -2;
        free(out[i]);
    }
    fclose(f);
    for (int i = 0; i < t->nin; ++i) free((void *)in[i]);
    free(ibuf); free(ws);
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
    from edgec.codegen.toolchain import SANITIZE_CFLAGS, SANITIZE_LINK_FLAGS, cc
    from edgec.targets.target import get_target

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
    sanitize = [*SANITIZE_CFLAGS, *SANITIZE_LINK_FLAGS] if platform.sanitize else []
    res = subprocess.run([cc(get_target(platform.target)), "-O1", "-std=c11", *sanitize,
                          str(src), *libs, *static, "-lm", "-lpthread", "-o", str(exe)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        return None, _shorten("link error: " + (res.stderr or res.stdout), 90)
    return exe, ""


def _run_batch(batch: list[Prepared], work: Path, index: int, platform: Platform) -> None:
    """Link and run a batch; set each test's status. A test that crashes the runner (or, in a
    sanitized run, makes a sanitizer stop it) is recorded and the rest of the batch runs on
    in a fresh process."""
    from edgec.runtime.emulated import sanitizer_env, sanitizer_finding

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
        started, ended, finding = [], {}, None
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                                  env=sanitizer_env(os.environ) if platform.sanitize else None)
            stdout, why = proc.stdout, _signal_name(proc.returncode)
            finding = sanitizer_finding(proc.stderr) if platform.sanitize else None
            why = f"sanitizer: {finding}" if finding else why
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
            batch[k].result.reason = why if finding else \
                f"crash: {why or 'runner died'} in the generated code"
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
