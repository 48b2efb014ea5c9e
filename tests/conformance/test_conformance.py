"""A fast sample of the ONNX node-test conformance suite (edgec/testing/conformance.py).

The tests CONFORMANCE.md lists as passing, one per op type spread over the op list, are
compiled, built and run again: a regression in any of those ops shows in the normal test run.
A larger sample, taken round-robin over the op types, runs through the LLVM backend.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from edgec.testing import conformance

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = 40
LLVM_SAMPLE = 200


def _sample(report: str, k: int) -> list[str]:
    """The first passing test of each op type, then `k` of those evenly over the ops."""
    firsts: dict[str, str] = {}
    for test, op, status in re.findall(r"^\| (test_\w+) \| ([^|]+?) \| (\w+) \|", report, re.M):
        if status == "pass" and op not in firsts:
            firsts[op] = test
    picked = [firsts[op] for op in sorted(firsts)]
    if len(picked) <= k:
        return picked
    step = len(picked) / k
    return [picked[int(i * step)] for i in range(k)]


def _round_robin(report: str, k: int) -> list[str]:
    """`k` passing tests: the first of each op type, then the second of each, and so on."""
    by_op: dict[str, list[str]] = {}
    for test, op, status in re.findall(r"^\| (test_\w+) \| ([^|]+?) \| (\w+) \|", report, re.M):
        if status == "pass":
            by_op.setdefault(op, []).append(test)
    picked: list[str] = []
    for rank in range(max(map(len, by_op.values()), default=0)):
        picked += [tests[rank] for _, tests in sorted(by_op.items()) if rank < len(tests)]
    return picked[:k]


@pytest.mark.slow
def test_sample_through_the_llvm_backend(tmp_path):
    names = _round_robin((ROOT / "CONFORMANCE.md").read_text(), LLVM_SAMPLE)
    assert len(names) == LLVM_SAMPLE
    results = conformance.run_suite(names, jobs=2, work=tmp_path,
                                    platform=conformance.Platform(backend="llvm"))
    broken = [f"{r.test}: {r.status} {r.reason}" for r in results if r.status != "pass"]
    assert not broken, ("tests that pass with the C backend fail with --backend llvm:\n"
                        + "\n".join(broken))


def test_sample_of_passing_tests_still_passes(tmp_path):
    report = (ROOT / "CONFORMANCE.md").read_text()
    names = _sample(report, SAMPLE)
    assert len(names) >= min(SAMPLE, 20), "CONFORMANCE.md lists too few passing tests"
    results = conformance.run_suite(names, jobs=2, work=tmp_path)
    broken = [f"{r.test}: {r.status} {r.reason}" for r in results if r.status != "pass"]
    assert not broken, ("tests CONFORMANCE.md lists as passing no longer pass:\n"
                        + "\n".join(broken))


def test_tolerances_follow_the_backend_runner():
    # A relative error of 1e-3 passes, 2e-3 does not; NaN matches NaN; ints compare exactly.
    want = np.array([1.0, -2.0, np.nan, 0.0], np.float32)
    rtol, atol = conformance.tolerances("test_abs")
    assert conformance.mismatch(want * np.float32(1 + 9e-4), want, rtol, atol) is None
    assert conformance.mismatch(want * np.float32(1 + 2e-3), want, rtol, atol) is not None
    assert conformance.mismatch(np.array([1, 2]), np.array([1, 3]), 1e-3, 1e-7) == "1 of 2 differ"
    assert conformance.tolerances("test_dft") == (1e-3, 1e-3)


@pytest.mark.parametrize("test, op, expanded", [
    ("test_abs", "Abs", False),
    ("test_celu_expanded", "Celu", True),
    ("test_elu_expanded_ver18", "Elu", True),
])
def test_each_test_is_filed_under_its_op(test, op, expanded):
    assert conformance.op_of(test) == (op, expanded)


CRASHER = """
#include <stddef.h>
int crasher_run(const void *const *in, void *const *out, void *ws)
{
    (void)in; (void)out; (void)ws;
    return *(volatile int *)0;
}
size_t crasher_workspace_size(void) { return 0; }
size_t crasher_input_bytes(int i) { (void)i; return 0; }
size_t crasher_output_bytes(int i) { (void)i; return 0; }
"""


def test_a_crashing_library_fails_alone(tmp_path):
    # The runner executable dies with the crashing test; the tests after it in the batch run
    # in a fresh runner and still pass.
    import subprocess

    good = [conformance.prepare(t, str(tmp_path)) for t in ("test_abs", "test_neg")]
    assert all(p.result.status == "built" for p in good), [p.result.reason for p in good]
    lib = tmp_path / "crasher"
    lib.mkdir()
    (lib / "crasher.c").write_text(CRASHER)
    (lib / "inputs.bin").write_bytes(b"")
    subprocess.run(["cc", "-c", "crasher.c"], cwd=lib, check=True)
    subprocess.run(["ar", "rcs", "libcrasher.a", "crasher.o"], cwd=lib, check=True)
    bad = conformance.Prepared(conformance.Result("test_crasher", "Crash", False, "built"),
                               "crasher", str(lib), [], [])
    batch = [good[0], bad, good[1]]
    conformance._run_batch(batch, tmp_path, 0, conformance.Platform())
    assert [p.result.status for p in batch] == ["pass", "fail", "pass"]
    assert bad.result.reason.startswith("crash: SIGSEGV")


class _DyingWorker(conformance._Worker):
    """A compiler process that dies on test_neg and otherwise is the real one."""

    def command(self):
        real = " ".join(f"'{a}'" for a in super().command())
        return ["sh", "-c", f"read t; if [ $t = test_neg ]; then kill -SEGV $$; fi; "
                f"(echo $t; cat) | {real}"]


def test_a_dying_compiler_process_fails_its_test_only(tmp_path):
    worker = _DyingWorker(tmp_path, 0)
    try:
        dead = worker.prepare("test_neg")
        alive = worker.prepare("test_abs")
    finally:
        worker.close()
    assert dead.result.status == "fail"
    assert dead.result.reason == "crash: the compiler process died (SIGSEGV)"
    assert alive.result.status == "built", alive.result.reason


def test_a_stale_report_says_what_changed_and_how_to_regenerate():
    rows = [conformance.Result("test_abs", "Abs", False, "pass"),
            conformance.Result("test_neg", "Neg", False, "fail",
                               "mismatch: max abs err 1.0e-02, max rel err 2.0e-02 (1 of 4)")]
    old = conformance.report(rows)
    rows[1].reason = "mismatch: max abs err 3.0e-02, max rel err 2.0e-02 (1 of 4)"
    assert conformance.staleness(old, conformance.report(rows), "C.md") is None  # magnitudes
    rows[1].reason = "mismatch: max abs err 1.0e-02, max rel err 2.0e-02 (3 of 4)"
    assert conformance.staleness(old, conformance.report(rows), "C.md") is None  # counts
    rows[1].status, rows[1].reason = "pass", ""
    msg = conformance.staleness(old, conformance.report(rows), "C.md")
    assert "test_neg: fail -> pass" in msg
    assert "python scripts/conformance.py --write CONFORMANCE.md" in msg


def test_the_inputs_a_value_is_computed_from():
    """a, b, c graph inputs; t = Add(a, b), u = Neg(t), v = Mul(u, c), w = Relu(c): worked by
    hand, u comes from a and b, v from all three, w from c alone, and an input from itself."""
    from onnx import helper

    nodes = [helper.make_node("Add", ["a", "b"], ["t"]), helper.make_node("Neg", ["t"], ["u"]),
             helper.make_node("Mul", ["u", "c"], ["v"]), helper.make_node("Relu", ["c"], ["w"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [], []))
    inputs = {"a", "b", "c"}
    assert conformance._input_ancestors(model, "u", inputs) == {"a", "b"}
    assert conformance._input_ancestors(model, "v", inputs) == {"a", "b", "c"}
    assert conformance._input_ancestors(model, "w", inputs) == {"c"}
    assert conformance._input_ancestors(model, "c", inputs) == {"c"}
    assert conformance._input_ancestors(model, "nowhere", inputs) == set()
    assert conformance._input_ancestors(model, "v", {"a"}) == {"a"}
