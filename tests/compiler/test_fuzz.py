"""A bounded run of the import fuzzer (edgec/testing/fuzz.py): mutants of small valid models,
each compiled and run in a worker subprocess under a time limit, end in an EdgecError or a
library that runs, never in another exception, a hang or a crash. The harness itself is
tested too: a worker that raises, aborts or hangs is counted as such."""

from __future__ import annotations

import onnx
import pytest

from edgec.testing import fuzz


@pytest.mark.parametrize("name", sorted(fuzz.SEEDS))
def test_seeds_are_valid_models(name):
    onnx.checker.check_model(fuzz.SEEDS[name](), full_check=True)


@pytest.mark.slow
def test_mutants_end_in_an_edgec_error_or_a_run(tmp_path):
    result = fuzz.fuzz(160, seed=20261126, workers=2, timeout=120, keep=tmp_path,
                       progress=False)
    report = "\n".join(f"mutant {f['index']} ({', '.join(f['mutations'])}): {f['outcome']}\n"
                       f"{f['detail']}" for f in result["failures"])
    assert not result["failures"], report
    outcomes = result["outcomes"]
    assert sum(outcomes.values()) == 160
    # the run reaches both ends: libraries built and run, and models refused
    assert outcomes.get("ran", 0) >= 10, outcomes
    assert sum(n for o, n in outcomes.items() if o.startswith("refused:")) >= 80, outcomes
    assert len(result["mutations"]) == len(fuzz.FIELD_MUTATIONS) + 2, result["mutations"]


def test_sanitized_mutants_run_clean(tmp_path):
    """A bounded --sanitize run: the libraries that mutants compile to, built with
    AddressSanitizer and UndefinedBehaviorSanitizer, run without a finding."""
    result = fuzz.fuzz(40, seed=7, workers=2, timeout=120, keep=tmp_path, progress=False,
                       sanitize=True)
    report = "\n".join(f"mutant {f['index']} ({', '.join(f['mutations'])}): {f['outcome']}\n"
                       f"{f['detail']}" for f in result["failures"])
    assert not result["failures"], report
    assert result["outcomes"].get("ran", 0) >= 3, result["outcomes"]


@pytest.mark.parametrize("mode, outcome", [("bug", "bug:KeyError"), ("crash", "crash"),
                                           pytest.param("hang", "hang", marks=pytest.mark.slow),
                                           ("sanitizer", "crash:library")])
def test_the_harness_counts_failures(tmp_path, monkeypatch, mode, outcome):
    monkeypatch.setenv("EDGEC_FUZZ_SELF_TEST", mode)
    result = fuzz.fuzz(2, seed=1, workers=1, timeout=5, keep=tmp_path, progress=False)
    assert result["outcomes"] == {outcome: 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["mutant0.onnx", "mutant0.txt", "mutant1.onnx", "mutant1.txt"]
