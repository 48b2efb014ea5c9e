import ast
import functools
import inspect
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# kernel choices that do not hang on timings: the compiler times a layer's sparse and dense
# kernels where its cost model cannot tell them apart (compiler/tune.py); the tests of that
# ask for it (tune=True)
os.environ["EDGEC_TUNE"] = "0"

sys.path.insert(0, str(Path(__file__).parent))

from harness import check_against_interpreter  # noqa: E402


@pytest.fixture
def check(tmp_path, monkeypatch):
    """check(graph, feeds=None, tol=1e-5): compile the graph to C with no warning in the
    generated kernels (the file m.c), build and run it, and match the interpreter."""
    from edgec.codegen import toolchain

    def strict_run(cmd, cwd):
        res = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert not re.search(r"m\.c:\d+:\d+: warning", res.stderr), res.stderr

    monkeypatch.setattr(toolchain, "_run", strict_run)
    count = iter(range(1000))

    def run(graph, feeds=None, tol: float = 1e-5) -> None:
        check_against_interpreter(graph, tmp_path / f"m{next(count)}", feeds=feeds, tol=tol)

    return run


# -- markers (registered in pyproject.toml) ---------------------------------------------------
# A test is marked by what it needs, found in its parameters and in the code it runs: its own
# body, its fixtures' and the helpers of tests/ they call, followed through module-level names.
#   cross: it builds for a target whose code needs an emulator here (arm64, arm64-dotprod,
#          armv7: edgec's TARGETS with `emulator`) or names such a target's cross compiler;
#   qemu:  it runs a program under qemu-user: an argv that starts with qemu-..., or a build for
#          such a target (which the tests run under the target's emulator);
#   network: it calls a helper that downloads (NETWORK_HELPERS).
# `slow` is not seen by a rule: tests over about 8 s on 2 cores carry @pytest.mark.slow.
TESTS = Path(__file__).parent
NETWORK_HELPERS = {"fetch_wheel"}  # edgec/testing/textlines.py: pip download


def _cross_names() -> tuple[set[str], set[str]]:
    """(the names of the targets that run under an emulator, their C compilers)."""
    from edgec.targets.target import TARGETS

    cross = [t for t in TARGETS.values() if t.cross]
    return {t.name for t in cross}, {t.cc for t in cross}


def _value_marks(value, names: tuple[set[str], set[str]], depth: int = 0,
                 by_name: bool = True) -> set[str]:
    """Marks a parameter or module-level value calls for: a cross target's name (unless not
    `by_name`), a Target, its compiler, a qemu argv, found in containers too."""
    from edgec.targets.target import Target

    if isinstance(value, Target):
        return {"cross", "qemu"} if value.cross else set()
    if isinstance(value, str):
        if value in names[0]:
            return {"cross", "qemu"} if by_name else set()
        return {"cross"} if value in names[1] else set()
    if depth > 3 or not isinstance(value, (list, tuple, set, frozenset, dict)):
        return set()
    items = list(value.values()) if isinstance(value, dict) else list(value)
    marks = {"qemu"} if items and isinstance(items[0], str) and items[0].startswith("qemu-") \
        else set()
    for v in items:
        marks |= _value_marks(v, names, depth + 1, by_name)
    return marks


@functools.cache
def _source_refs(code) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the string constants, the names) in the source of the function of `code`, not its
    decorators (parameters are seen as such); parsed once per function for all the items."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
    except (OSError, TypeError, SyntaxError):
        return (), ()
    tree.body[0].decorator_list = []
    nodes = list(ast.walk(tree))
    return (tuple(n.value for n in nodes if isinstance(n, ast.Constant)
                  and isinstance(n.value, str)),
            tuple(dict.fromkeys(n.id for n in nodes if isinstance(n, ast.Name))))


def _code_marks(func, names, seen: set, by_name: bool = True) -> set[str]:
    """Marks the source of `func` calls for, with the functions of tests/ it names; not its
    decorators, nor target names if not `by_name`."""
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None or code in seen or not code.co_filename.startswith(str(TESTS)):
        return set()
    seen.add(code)
    strings, ids = _source_refs(code)
    marks: set[str] = set()
    for text in strings:
        marks |= _value_marks(text, names, by_name=by_name)
        marks |= {"qemu"} if text.startswith("qemu-") else set()
    for name in ids:
        if name not in func.__globals__:
            continue
        value = func.__globals__[name]
        if inspect.isfunction(value):
            if value.__name__ in NETWORK_HELPERS:
                marks.add("network")
            marks |= _code_marks(value, names, seen, by_name)
        else:
            marks |= _value_marks(value, names, by_name=by_name)
    return marks


def _flat_strings(value, depth: int = 0) -> set[str]:
    if isinstance(value, str):
        return {value}
    if depth > 3 or not isinstance(value, (list, tuple)):
        return set()
    return set().union(*(_flat_strings(v, depth + 1) for v in value))


def pytest_collection_modifyitems(config, items):
    from edgec.targets.target import TARGETS

    names = _cross_names()
    for item in items:
        marks: set[str] = set()
        params = getattr(getattr(item, "callspec", None), "params", {})
        for value in params.values():
            marks |= _value_marks(value, names)
        # a test given its target as a parameter builds for that one, whatever else it names
        # (`if target == "arm64": ...`)
        by_name = not any(_flat_strings(v) & set(TARGETS) for v in params.values())
        seen: set = set()
        marks |= _code_marks(getattr(item, "function", None), names, seen, by_name)
        for defs in item._fixtureinfo.name2fixturedefs.values():
            for d in defs:
                marks |= _code_marks(d.func, names, seen)
        for mark in sorted(marks - {m.name for m in item.iter_markers()}):
            item.add_marker(mark)
