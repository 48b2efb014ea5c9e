import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness import check_against_interpreter  # noqa: E402


@pytest.fixture
def check(tmp_path, monkeypatch):
    """check(graph, feeds=None, tol=1e-5): compile the graph to C with no warning in the
    generated kernels (the file m.c), build and run it, and match the interpreter."""
    from edgec.targets import toolchain

    def strict_run(cmd, cwd):
        res = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert not re.search(r"m\.c:\d+:\d+: warning", res.stderr), res.stderr

    monkeypatch.setattr(toolchain, "_run", strict_run)
    count = iter(range(1000))

    def run(graph, feeds=None, tol: float = 1e-5) -> None:
        check_against_interpreter(graph, tmp_path / f"m{next(count)}", feeds=feeds, tol=tol)

    return run
