"""Helpers for pass tests: IR text in, pipeline, printed IR compared with the expected text,
and the interpreter run on the graph before and after on the same random inputs."""

from __future__ import annotations

import textwrap

import numpy as np

from edgec.ir import Graph, interpret, parse, print_graph
from edgec.passes import run_pipeline


def ir(text: str) -> Graph:
    return parse(textwrap.dedent(text).strip())


def feeds_for(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + 1000)  # not the manager's own sampling
    out = {}
    for v in graph.inputs:
        if v.dtype.is_float:
            out[v.name] = rng.uniform(-3, 3, v.shape).astype(v.dtype.np)
        else:
            out[v.name] = rng.integers(0, 3, v.shape).astype(v.dtype.np)
    return out


def assert_same_numerics(before: Graph, after: Graph, tol: float = 1e-5, seeds=(0, 1),
                         steps: int = 0) -> None:
    """Both graphs give the same outputs (same names, dtypes, shapes; float values within `tol`
    relative to the largest magnitude, integers within `steps`) on random inputs."""
    assert [v.name for v in after.outputs] == [v.name for v in before.outputs]
    for seed in seeds:
        feeds = feeds_for(before, seed)
        want, got = interpret(before, feeds), interpret(after, feeds)
        for name, w in want.items():
            g = got[name]
            assert g.dtype == w.dtype and g.shape == w.shape, name
            if np.issubdtype(w.dtype, np.floating):
                scale = max(float(np.abs(w).max()), 1e-30)
                err = float(np.abs(g.astype(np.float64) - w).max()) / scale
                assert err <= tol, f"output {name}: relative error {err:.3g}"
            elif steps:
                diff = np.abs(g.astype(np.int64) - w.astype(np.int64))
                assert diff.max(initial=0) <= steps, f"output {name}: {diff.max()} steps apart"
            else:
                np.testing.assert_array_equal(g, w)


def check_pass(src: str, pipeline: str, expected: str | None = None,
               tol: float = 1e-5, steps: int = 0) -> Graph:
    """Run `pipeline` (verifying after every pass) on the IR `src`; compare the printed
    result with `expected` and the numerics with the untouched graph (integer outputs within
    `steps`)."""
    before = ir(src)
    after = ir(src)
    run_pipeline(after, pipeline, verify_each=True)
    if expected is not None:
        assert print_graph(after) == textwrap.dedent(expected).strip(), print_graph(after)
    assert_same_numerics(before, after, tol, steps=steps)
    return after
