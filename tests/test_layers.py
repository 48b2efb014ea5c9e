"""The package's layers import only layers to their left (docs/architecture.md):
ir -> frontends -> passes -> targets -> runtime -> compiler. Checked on every import statement
of every module, function-level imports included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "edgec"
LAYERS = ["ir", "frontends", "passes", "targets", "runtime", "compiler"]


def edgec_imports(path: Path, root: Path) -> list[str]:
    """The modules of the package at `root` that `path` imports, as dotted names."""
    package = list(path.relative_to(root.parent).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out += [mod] if node.module else [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return [m for m in out if m.split(".")[0] == root.name]


def violations(root: Path) -> list[str]:
    """'module imports module' for each import of a layer to the right of the importer's."""
    wrong = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if len(parts) < 2 or parts[0] not in LAYERS:
            continue
        here = LAYERS.index(parts[0])
        for mod in edgec_imports(path, root):
            layer = mod.split(".")[1] if "." in mod else ""
            if layer in LAYERS and LAYERS.index(layer) > here:
                wrong.append(f"{path.relative_to(root.parent)} imports {mod}")
    return wrong


def test_every_import_goes_left():
    wrong = violations(ROOT)
    assert not wrong, "\n".join(wrong)


def test_a_wrong_import_is_seen(tmp_path):
    pkg = tmp_path / "edgec"
    (pkg / "ir").mkdir(parents=True)
    (pkg / "compiler").mkdir()
    (pkg / "ir" / "graph.py").write_text(
        "import numpy\n\n\ndef f():\n    from ..compiler.driver import compile\n")
    (pkg / "compiler" / "driver.py").write_text("from ..ir.graph import f\n")
    assert violations(pkg) == ["edgec/ir/graph.py imports edgec.compiler.driver"]
