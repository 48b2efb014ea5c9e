"""The generated libraries' thread pool: outputs are bitwise the same on 1, 2 and 3 threads
(each output element is computed by one thread, in one order) and match onnxruntime; the
EDGEC_NUM_THREADS default; `threads=False` builds that link without pthreads.

The thread-count sweeps run in a child process with a time limit, so that a deadlock of the
pool fails a test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from convnets import onnxruntime_outputs, rowwise, small_resnet
from convnets import random_feeds as feeds_of
from harness import rel_error

import edgec
from edgec import zoo
from edgec.runtime import C_DIR

ROOT = Path(__file__).resolve().parents[2]


MODELS = {"small_resnet": small_resnet, "tiny_cnn": zoo.tiny_cnn, "mlp": zoo.mlp,
          "rowwise": rowwise}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> dict[str, tuple[Path, dict, dict]]:
    """name -> (artifact folder, feeds, onnxruntime outputs), built for x86 (AVX2 here)."""
    root = tmp_path_factory.mktemp("threads")
    out = {}
    for name, make in MODELS.items():
        m = make()
        art = edgec.compile(m, root / name, target="x86", name=name)
        if name == "mlp":
            assert "mk_gemm_f32x" in (art.out_dir / f"{name}.c").read_text()
        elif name == "rowwise":  # every kernel is a parallel loop over rows or chunks
            assert all(s["parallel"] for s in art.manifest["kernel_strategies"]), \
                art.manifest["kernel_strategies"]
        else:  # the blocked convolutions' parallel loops are what runs threaded
            assert art.manifest["ops"].get("BlockedConv"), art.manifest["ops"]
        feeds = feeds_of(m)
        out[name] = (art.out_dir, feeds, onnxruntime_outputs(m, feeds))
    return out


SWEEP = """
import sys, numpy as np, edgec
folder, feeds, out, counts = sys.argv[1], dict(np.load(sys.argv[2])), sys.argv[3], sys.argv[4]
m = edgec.load(folder)
res = {}
for k, n in enumerate(int(c) for c in counts.split(",")):
    m.set_num_threads(n)
    for rep in range(2):
        for name, a in m.run(feeds).items():
            res[f"{k}_{n}_{rep}_{name}"] = a
np.savez(out, **res)
"""


def sweep(folder: Path, feeds: dict, counts: list[int], tmp_path: Path) -> dict:
    """{(position, threads, repetition, output name): array} from a child process that loads
    the artifact once and changes its thread count in the order of `counts`."""
    np.savez(tmp_path / "feeds.npz", **feeds)
    cmd = [sys.executable, "-c", SWEEP, str(folder), str(tmp_path / "feeds.npz"),
           str(tmp_path / "out.npz"), ",".join(map(str, counts))]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{folder.name}: running with thread counts {counts} hung (> 60 s): the "
                    "pool deadlocked")
    assert res.returncode == 0, res.stderr
    out = {}
    for key, a in np.load(tmp_path / "out.npz").items():
        k, n, rep, name = key.split("_", 3)
        out[int(k), int(n), int(rep), name] = a
    return out


@pytest.mark.parametrize("model", list(MODELS))
def test_outputs_identical_across_thread_counts_and_match_onnxruntime(artifacts, model,
                                                                      tmp_path):
    folder, feeds, want = artifacts[model]
    # 3 threads on 2 cores: more threads than cores must still work
    got = sweep(folder, feeds, [1, 2, 3, 2, 1], tmp_path)
    assert {n for _, n, _, _ in got} == {1, 2, 3}
    for name, w in want.items():
        first = got[0, 1, 0, name]
        assert rel_error(first, w) < 1e-4, f"{model}/{name} vs onnxruntime"
        for key, a in got.items():
            if key[3] == name:
                assert np.array_equal(a, first), f"{model}/{name}: {key} differs from 1 thread"


def test_row_tasks_of_the_llvm_backend_match_the_c_backend(artifacts, tmp_path):
    """The LLVM backend outlines the same parallel row loops: bitwise the C build's outputs
    at 2 threads."""
    folder, feeds, _ = artifacts["rowwise"]
    art = edgec.compile(rowwise(), tmp_path / "llvm", target="x86", name="rowwise",
                        backend="llvm")
    assert all(s["parallel"] for s in art.manifest["kernel_strategies"])
    c_build, llvm_build = edgec.load(folder), edgec.load(art.out_dir)
    for m in (c_build, llvm_build):
        m.set_num_threads(2)
    want = c_build.run(feeds)
    got = llvm_build.run(feeds)
    for name, a in want.items():
        assert np.array_equal(got[name], a), name


POOL_REPRO = r"""
#include "edgec_threads.h"
#include <stdio.h>
static float out[64];
static void task(void *ctx, ptrdiff_t first, ptrdiff_t end)
{
    for (ptrdiff_t i = first; i < end; ++i)
        out[i] = (float)i * *(const float *)ctx;
}
int main(void)
{
    float two = 2.0f;
    for (int i = 0; i < 300; ++i) {
        edgec_set_num_threads(2);
        edgec_parallel_for(task, &two, 64);
        edgec_set_num_threads(3);
        edgec_parallel_for(task, &two, 5);
    }
    for (int i = 0; i < 64; ++i)
        if (out[i] != 2.0f * (float)i)
            return 1;
    puts("ok");
    return 0;
}
"""


def test_changing_the_thread_count_of_a_started_pool_does_not_deadlock(tmp_path):
    """A worker reads the generation it waits past when it starts running, not when it is
    created: when edgec_set_num_threads stops the workers before a new one has run, that
    worker waits for a generation after the stop's and pthread_join never returns."""
    src = tmp_path / "pool.c"
    src.write_text(POOL_REPRO)
    exe = tmp_path / "pool"
    subprocess.run(["gcc", "-O2", "-std=c99", "-Wall", "-Werror", f"-I{C_DIR}", str(src),
                    "-o", str(exe), "-pthread"], check=True)
    try:
        res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("edgec_set_num_threads(2) then (3), repeated, deadlocked in pthread_join")
    assert res.returncode == 0 and res.stdout.strip() == "ok"


APP = r"""
/* runs a model on one input file, writes its first output; argv[3] threads (or "-": none set) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "small_resnet.h"

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    size_t nin = small_resnet_input_bytes(0), nout = small_resnet_output_bytes(0);
    float *in = malloc(nin), *out = malloc(nout);
    void *ws = aligned_alloc(64, (small_resnet_workspace_size() + 63) / 64 * 64 + 64);
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(in, 1, nin, f) != nin)
        return 3;
    fclose(f);
    if (strcmp(argv[3], "-") != 0)
        small_resnet_set_num_threads(atoi(argv[3]));
    printf("threads %d\n", small_resnet_get_num_threads());
    void *outs[2] = {out, malloc(small_resnet_output_bytes(1))};
    const void *ins[1] = {in};
    int status = small_resnet_run(ins, outs, ws);
    if (status != 0)
        return 4;
    f = fopen(argv[2], "wb");
    fwrite(out, 1, nout, f);
    fclose(f);
    return 0;
}
"""


def build_app(tmp_path: Path, folder: Path, link: list[str]) -> Path:
    src = tmp_path / "app.c"
    src.write_text(APP)
    exe = tmp_path / "app"
    res = subprocess.run(["gcc", "-O2", "-std=c11", "-Wall", "-Werror", f"-I{folder}", str(src),
                          str(folder / "libsmall_resnet.a"), *link, "-o", str(exe)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return exe


def run_app(exe: Path, x: np.ndarray, tmp_path: Path, threads: str,
            env: dict | None = None) -> tuple[int, np.ndarray]:
    x.tofile(tmp_path / "in.bin")
    res = subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin"), threads],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, **(env or {})})
    assert res.returncode == 0, res.stderr
    return int(res.stdout.split()[1]), np.fromfile(tmp_path / "out.bin", np.float32)


def test_env_var_sets_the_default_thread_count(artifacts, tmp_path):
    folder, feeds, want = artifacts["small_resnet"]
    x = feeds["input"]
    exe = build_app(tmp_path, folder, ["-lm", "-pthread"])
    env = {k: v for k, v in os.environ.items() if k != "EDGEC_NUM_THREADS"}
    n0, y1 = run_app(exe, x, tmp_path, "-", {"EDGEC_NUM_THREADS": "1"})
    n2, y2 = run_app(exe, x, tmp_path, "-", {"EDGEC_NUM_THREADS": "2"})
    n3, y3 = run_app(exe, x, tmp_path, "3", {"EDGEC_NUM_THREADS": "2"})  # the call wins
    assert (n0, n2, n3) == (1, 2, 3)
    res = subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "o.bin"), "-"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert res.stdout.split()[:2] == ["threads", "1"]  # unset: one thread
    assert np.array_equal(y1, y2) and np.array_equal(y1, y3)
    assert rel_error(y2.reshape(1, 10), want["logits"]) < 1e-4
    # the emulated runner passes its thread count the same way, through the environment
    lib = edgec.load(folder, emulator=[])
    lib.set_num_threads(2)
    got = lib.run(feeds)
    for name, w in want.items():
        assert rel_error(got[name], w) < 1e-4
    assert np.array_equal(got["logits"].reshape(-1), y1)


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> tuple[Path, dict, dict]:
    m = small_resnet()
    art = edgec.compile(m, tmp_path_factory.mktemp("single"), target="x86",
                        name="small_resnet", threads=False)
    feeds = feeds_of(m)
    return art.out_dir, feeds, onnxruntime_outputs(m, feeds)


def test_single_threaded_build_needs_no_pthreads(single, tmp_path):
    folder, feeds, want = single
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["threads"] is False and "-pthread" not in manifest["link_flags"]
    assert "#define EDGEC_SINGLE_THREADED" in (folder / "small_resnet.c").read_text()
    syms = subprocess.run(["nm", str(folder / "libsmall_resnet.a")], capture_output=True,
                          text=True, check=True).stdout
    assert "pthread" not in syms
    assert " T small_resnet_set_num_threads" in syms
    exe = build_app(tmp_path, folder, ["-lm"])  # no -pthread
    libs = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    assert "pthread" not in libs
    nm_exe = subprocess.run(["nm", str(exe)], capture_output=True, text=True).stdout
    assert "pthread_create" not in nm_exe
    # set_num_threads is a no-op: still one thread, the same output
    n4, y4 = run_app(exe, feeds["input"], tmp_path, "4", {"EDGEC_NUM_THREADS": "3"})
    n1, y1 = run_app(exe, feeds["input"], tmp_path, "-")
    assert (n1, n4) == (1, 1)
    assert np.array_equal(y1, y4)
    assert rel_error(y1.reshape(1, 10), want["logits"]) < 1e-4


def test_single_threaded_build_through_the_loaders(single):
    folder, feeds, want = single
    lib = edgec.load(folder)
    got = lib.run(feeds)
    for name, w in want.items():
        assert rel_error(got[name], w) < 1e-4
    emulated = edgec.load(folder, emulator=[])
    with pytest.raises(edgec.EdgecError, match="without a thread pool"):
        emulated.set_num_threads(2)
    # the ctypes loader refuses too, as the emulated runner does (its commit says "as the
    # ctypes loader does"): a thread count a build cannot honour is an error, not a no-op
    with pytest.raises(edgec.EdgecError, match="without a thread pool"):
        lib.set_num_threads(2)
