"""Measured time per kernel of a compiled artifact: a copy of its C with each kernel call of
NAME_run wrapped in a clock read, built and run through the loader.

The clock is `CLOCK_THREAD_CPUTIME_ID` at one thread (time lost to other processes does not
count) and `CLOCK_MONOTONIC` with more (the caller's CPU time would miss the pool's work).
Used by the quantization report (each layer's share of the measured latency) and by
benchmarks/profile_layers.py.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..runtime.loader import read_manifest

# a kernel call of NAME_run: k<index>_<node>(...) in C; the LLVM backend's kernels are
# global symbols of its object, named NAME_k<index>_<node>
CALL = r"^(\s+)((?:{lib}_)?k\d+_\w+)\((.*)\);$"
TIMER = """
#include <time.h>
double edgec_profile_ns[{n}];
static double edgec_profile_now(void)
{{
    struct timespec t;
    clock_gettime({clock}, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}}
"""


def instrument(out_dir: Path, threads: int) -> list[str]:
    """Wrap each kernel call of NAME_run in out_dir's NAME.c in a timer; the kernels' names
    as the manifest gives them (k<index>_<node name>, NAME_k<index>_... for the LLVM
    backend), in the order of edgec_profile_ns."""
    manifest = read_manifest(out_dir)
    call = re.compile(CALL.format(lib=re.escape(manifest["name"])))
    src = out_dir / f"{manifest['name']}.c"
    lines = src.read_text().splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith(f"int {manifest['name']}_run("))
    kernels: list[str] = []
    for i in range(start, len(lines)):
        if lines[i] == "}":
            break
        m = call.match(lines[i])
        if m:
            k = len(kernels)
            kernels.append(m.group(2))
            lines[i] = (f"{m.group(1)}{{ double t_ = edgec_profile_now(); "
                        f"{m.group(2)}({m.group(3)}); "
                        f"edgec_profile_ns[{k}] += edgec_profile_now() - t_; }}")
    clock = "CLOCK_THREAD_CPUTIME_ID" if threads == 1 else "CLOCK_MONOTONIC"
    lines.insert(start, TIMER.format(n=max(len(kernels), 1), clock=clock))
    src.write_text("\n".join(lines) + "\n")
    return kernels


def kernel_times(out_dir: Path, feeds: list[dict[str, np.ndarray]], runs: int = 3,
                 threads: int = 1) -> dict[str, float]:
    """Nanoseconds per run of each kernel of the artifact in `out_dir` (the host must run its
    target), over `runs` passes through `feeds` after one warm-up pass."""
    from ..runtime.loader import load

    with tempfile.TemporaryDirectory(prefix="edgec-profile-") as d:
        timed = Path(d) / "timed"
        shutil.copytree(out_dir, timed)
        kernels = instrument(timed, threads)
        model = load(timed)
        if hasattr(model, "set_num_threads"):
            model.set_num_threads(threads)
        counters = (ctypes.c_double * max(len(kernels), 1)).in_dll(model._lib,
                                                                   "edgec_profile_ns")
        for f in feeds:
            model.run(f)
        ctypes.memset(counters, 0, ctypes.sizeof(counters))
        for _ in range(runs):
            for f in feeds:
                model.run(f)
        n = runs * len(feeds)
        return {k: counters[i] / n for i, k in enumerate(kernels)}


def node_key(name: str) -> str:
    """A node name as C names it, lower case: '/layer1/conv1/Conv' and the kernel
    'k2_layer1_conv1_Conv_nchwc' both give 'layer1_conv1_conv'."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")


def node_times(times: dict[str, float], strategies: list[dict]) -> dict[str, float]:
    """`times` (kernel_times: by kernel) by the node each kernel runs, as the manifest's
    `kernel_strategies` pair them: a kernel's name is cut at 60 characters (ResNet-18's
    'k17_layer2_layer2_0_bn2_BatchNormalization_output_0_Quantize'), its node's is whole."""
    return {s["node"]: times[s["kernel"]] for s in strategies if s["kernel"] in times}


def layer_shares(times: dict[str, float], layers: dict[str, list[str]]
                 ) -> tuple[dict[str, float], float]:
    """Each layer's share of the total kernel time and the share of the kernels that belong
    to none (layout changes, padding, quantize at the edges). `times`: ns by node name
    (node_times); `layers` gives each layer the names its nodes may have after the passes
    (a fused integer op is named after the output it quantizes: '<output>_QuantizeLinear');
    a blocked form adds '_nchwc'."""
    total = sum(times.values()) or 1.0
    owner = {n: layer for layer, names in layers.items() for n in names}
    shares = dict.fromkeys(layers, 0.0)
    other = 0.0
    for node, ns in times.items():
        layer = owner.get(node, owner.get(node.removesuffix("_nchwc")))
        if layer is None:
            other += ns / total
        else:
            shares[layer] += ns / total
    return shares, other
