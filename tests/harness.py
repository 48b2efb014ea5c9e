"""Test helpers: compile an IR graph to C, build it, run it through the loader.

`compile_and_run` is the oracle check every kernel test uses: the generated library's outputs
against the interpreter's (the ops' numpy references), on the same inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgec.compiler.driver import compile_graph
from edgec.ir import Graph, interpret, parse, print_graph, verify
from edgec.runtime.loader import load


def random_feeds(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for v in graph.inputs:
        if v.dtype.is_float:
            feeds[v.name] = rng.standard_normal(v.shape).astype(v.dtype.np)
        elif v.dtype.np == np.bool_:
            feeds[v.name] = rng.random(v.shape) < 0.5
        else:
            feeds[v.name] = rng.integers(0, 5, v.shape).astype(v.dtype.np)
    return feeds


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """max|a-b| / max|b| (0 when both are all zeros); inf on shape or NaN-pattern mismatch."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return float("inf")
    if got.dtype == np.bool_ or not np.issubdtype(got.dtype, np.floating):
        return 0.0 if np.array_equal(got, want) else float("inf")
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return float("inf")
    ok = ~np.isnan(want)
    g, w = got[ok].astype(np.float64), want[ok].astype(np.float64)
    if not np.array_equal(np.isinf(g), np.isinf(w)) or np.any(g[np.isinf(g)] != w[np.isinf(w)]):
        return float("inf")
    fin = np.isfinite(w)
    scale = np.abs(w[fin]).max() if fin.any() else 0.0
    diff = np.abs(g[fin] - w[fin]).max() if fin.any() else 0.0
    return float(diff / scale) if scale > 0 else float(diff)


def compile_and_run(graph: Graph, feeds: dict[str, np.ndarray], out_dir: Path,
                    target: str = "x86", pipeline: str = "plan-memory") -> dict[str, np.ndarray]:
    """Compile `graph` (a copy) to a library in `out_dir`, run it on `feeds` and return outputs."""
    g = graph.copy()
    verify(g)
    assert print_graph(parse(print_graph(g))) == print_graph(g)
    compile_graph(g, out_dir, target=target, name="m", pipeline=pipeline)
    return load(out_dir).run(feeds)


def check_against_interpreter(graph: Graph, out_dir: Path, feeds=None, tol: float = 1e-5,
                              target: str = "x86", pipeline: str = "plan-memory") -> None:
    """Assert the compiled graph matches the interpreter on `feeds` (random by default)."""
    feeds = feeds if feeds is not None else random_feeds(graph)
    want = interpret(graph, feeds)
    got = compile_and_run(graph, feeds, out_dir, target=target, pipeline=pipeline)
    for name, w in want.items():
        err = rel_error(got[name], w)
        assert err <= tol, f"output {name}: relative error {err:.3g} > {tol}"


# x86 targets a test builds: the host's best, each pinned ISA, and portable C
X86_TARGETS = ("x86", "x86-avx2", "x86-avx512", "c-generic")


def runs_here(target: str) -> bool:
    """Whether this machine's CPU runs `target`'s code natively: every target but an
    x86-avx512 build on a host without AVX-512 (which no emulator here has either: such a
    build is compiled, warnings as errors, and checked where the CPU has AVX-512)."""
    from edgec.targets.target import get_target, missing_host_flags

    return not missing_host_flags(get_target(target))


def machine_flags(target: str) -> list[str]:
    """The -m flags of `target`'s C compiler command: its ISA and tuning."""
    from edgec.targets.target import get_target

    return [f for f in get_target(target).cflags if f.startswith("-m")]


def isa_builds() -> dict:
    """{name: (vector ISA, gcc flags)} of the C kernel builds this machine runs: AVX2, scalar
    C and, where the CPU has AVX-512, AVX-512, each with its x86 target's own flags."""
    from edgec.codegen.renderers.c_isas import VECTOR_ISAS

    builds = {"avx2": (VECTOR_ISAS["avx2"], machine_flags("x86-avx2")), "scalar": (None, [])}
    if runs_here("x86-avx512"):
        builds["avx512"] = (VECTOR_ISAS["avx512"], machine_flags("x86-avx512"))
    return builds


ROOT = Path(__file__).resolve().parents[1]


def conformance_results() -> dict[str, tuple[str, str]]:
    """{test: (op, result)} as CONFORMANCE.md lists them."""
    import re

    text = (ROOT / "CONFORMANCE.md").read_text()
    return {t: (op, s) for t, op, s in re.findall(r"^\| (test_\w+) \| ([^|]+?) \| (\w+) \|",
                                                 text, re.M)}
