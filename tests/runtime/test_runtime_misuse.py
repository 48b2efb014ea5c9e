"""The runtime cannot be misused into a crash, and runs clean under the sanitizers: an app
that links the generated sources built with AddressSanitizer + UndefinedBehaviorSanitizer,
or ThreadSanitizer, passes NULL inputs, outputs and workspace, a misaligned workspace,
thread counts out of range and out-of-range name indices (each answered by the documented
status or value), then runs the model from two app threads at once, each with its own
workspace, the library's pool at 2 threads; every run gives the single-threaded result."""

from __future__ import annotations

import os
import subprocess

import pytest
from convnets import OnnxNet
from harness import runs_here

import edgec

TARGET = "x86-avx2"

APP = r"""
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tiny.h"

static float in0[TINY_INPUT0_SIZE], ref[TINY_OUTPUT0_SIZE];

static void *workspace(void)
{
    void *p = NULL;
    return posix_memalign(&p, TINY_WORKSPACE_ALIGN, TINY_WORKSPACE_BYTES + 1) == 0 ? p : NULL;
}

static int same(const float *a)
{
    for (int i = 0; i < TINY_OUTPUT0_SIZE; ++i)
        if (fabsf(a[i] - ref[i]) > 1e-5f * (1.0f + fabsf(ref[i])))
            return 0;
    return 1;
}

static void *runner(void *arg)
{
    (void)arg;
    void *ws = workspace();
    float out[TINY_OUTPUT0_SIZE];
    const void *ins[] = {in0};
    void *outs[] = {out};
    long bad = 0;
    for (int k = 0; k < 20; ++k)
        bad += tiny_run(ins, outs, ws) != EDGEC_OK || !same(out);
    free(ws);
    return (void *)bad;
}

int main(void)
{
    for (int i = 0; i < TINY_INPUT0_SIZE; ++i)
        in0[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    void *ws = workspace();
    const void *ins[] = {in0};
    void *outs[] = {ref};
    tiny_set_num_threads(1);
    if (tiny_run(ins, outs, ws) != EDGEC_OK)
        return 2;
    float out[TINY_OUTPUT0_SIZE];
    void *o[] = {out};
    const void *no_in[] = {NULL};
    void *no_out[] = {NULL};
    int checks[] = {
        tiny_run(NULL, o, ws) == EDGEC_ERR_NULL_ARGUMENT,
        tiny_run(ins, NULL, ws) == EDGEC_ERR_NULL_ARGUMENT,
        tiny_run(no_in, o, ws) == EDGEC_ERR_NULL_ARGUMENT,
        tiny_run(ins, no_out, ws) == EDGEC_ERR_NULL_ARGUMENT,
        tiny_run(ins, o, NULL) == EDGEC_ERR_NULL_ARGUMENT,
        tiny_run(ins, o, (char *)ws + 1) == EDGEC_ERR_MISALIGNED,
        tiny_input_name(-1) == NULL && tiny_output_name(1) == NULL,
        tiny_input_shape(7) == NULL && tiny_input_rank(-5) == -1 && tiny_output_bytes(2) == 0,
        (tiny_set_num_threads(-3), tiny_get_num_threads() == 1),
        (tiny_set_num_threads(1000), tiny_get_num_threads() == 64),
        tiny_run(ins, o, ws) == EDGEC_OK && same(out), /* 64 threads on this machine */
        tiny_status_string(EDGEC_ERR_MISALIGNED) != NULL && tiny_status_string(99) != NULL,
    };
    for (unsigned c = 0; c < sizeof checks / sizeof *checks; ++c)
        if (!checks[c]) {
            printf("check %u failed\n", c);
            return 3;
        }
    tiny_set_num_threads(2);
    pthread_t t[2];
    for (int i = 0; i < 2; ++i)
        pthread_create(&t[i], NULL, runner, NULL);
    long bad = 0;
    for (int i = 0; i < 2; ++i) {
        void *r;
        pthread_join(t[i], &r);
        bad += (long)r;
    }
    free(ws);
    printf("bad runs %ld\n", bad);
    return bad != 0;
}
"""


@pytest.fixture(scope="module")
def tiny_sources(tmp_path_factory):
    """Two 3 x 3 convolutions, a residual and a pooling over 40 x 40 (large enough for the
    thread pool: three parallel loops), for AVX2 (which every x86 host here runs)."""
    n = OnnxNet("par", seed=1)
    x = n.input("input", [1, 8, 40, 40])
    a = n.node("Relu", [n.conv(x, 8, 32, 3)])
    b = n.node("Relu", [n.node("Add", [n.conv(a, 32, 32, 3), a])])
    n.output(n.node("GlobalAveragePool", [b]))
    art = edgec.compile(n.model(), tmp_path_factory.mktemp("misuse") / "out",
                        target=TARGET, name="tiny")
    assert (art.out_dir / "tiny.c").read_text().count("edgec_parallel_for(") >= 3
    return art


@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread"])
def test_misuse_and_two_app_threads_under_sanitizers(sanitizer, tiny_sources, tmp_path):
    if not runs_here(TARGET):
        pytest.skip(f"this CPU does not run {TARGET}")
    art = tiny_sources
    out = art.out_dir
    app = tmp_path / "app.c"
    app.write_text(APP)
    exe = tmp_path / "app"
    subprocess.run(["gcc", *art.manifest["cflags"], "-O1", "-g", f"-fsanitize={sanitizer}",
                    "-Werror=implicit-function-declaration",
                    "-fno-sanitize-recover=all", "-I", str(out), f"-Wa,-I,{out}", str(app),
                    str(out / "tiny.c"), str(out / "tiny_weights.S"), "-lm", "-pthread",
                    "-o", str(exe)], check=True, cwd=out)
    env = {**os.environ, "TSAN_OPTIONS": "halt_on_error=1 exitcode=66",
           "ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "halt_on_error=1"}
    res = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert "bad runs 0" in res.stdout
