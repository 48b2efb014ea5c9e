"""pyproject.toml declares what edgec imports: a clean install (`pip install -e .`, as CI's
scripts/test.sh does on a fresh clone) must be able to import every module of the package."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _guarded(tree: ast.Module) -> set[ast.AST]:
    """The imports inside a `try` that catches ImportError: optional peers (onnxruntime for
    `edgec run --check`), which say what to install when they are missing."""
    out: set[ast.AST] = set()
    for t in ast.walk(tree):
        if isinstance(t, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError",
                                                               "ModuleNotFoundError")
                for h in t.handlers):
            out.update(n for stmt in t.body for n in ast.walk(stmt))
    return out


def third_party_imports() -> dict[str, str]:
    """Top-level names of the modules edgec needs outside the standard library, each with a
    file that imports it (relative imports, edgec itself and guarded imports left out)."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "edgec").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        optional = _guarded(tree)
        for node in ast.walk(tree):
            if node in optional:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in (n.split(".")[0] for n in names):
                if top != "edgec" and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_a_declared_dependency():
    # (a regex, not tomllib: edgec supports Python 3.10, which has no tomllib)
    deps = re.search(r"^dependencies = \[(.*?)\]", (ROOT / "pyproject.toml").read_text(),
                     re.M | re.S).group(1)
    declared = {re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower().replace("-", "_")
                for d in re.findall(r'"([^"]+)"', deps)}
    assert {"onnx", "numpy"} <= declared
    imports = third_party_imports()
    assert "llvmlite" in imports  # the LLVM backend (renderers/llvm.py)
    missing = {m: f for m, f in imports.items() if m.lower() not in declared}
    assert not missing, f"imported but not in pyproject.toml's dependencies: {missing}"
