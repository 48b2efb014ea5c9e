"""The package's layers import only layers to their left (docs/architecture.md):
ir -> frontends -> targets -> passes -> kernel_ir -> lowering -> codegen -> runtime -> compiler
-> testing. Checked on every import statement of every module, function-level imports included.
zoo (the example models, built with onnx alone) imports no other layer, and only testing imports
it. The code around the package (benchmarks/, scripts/) imports it by name: no sys.path edit, no
module loaded by its path."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "edgec"
LAYERS = ["ir", "frontends", "targets", "passes", "kernel_ir", "lowering", "codegen",
          "runtime", "compiler", "testing"]
# a layer of its own that imports no other; only these may import it
LEAVES = {"zoo": {"testing"}}
# where a sys.path edit or a load by path would reach across folders
OUTSIDE = [ROOT.parent / "benchmarks", ROOT.parent / "scripts"]
# the calls that run a module found by its file path
BY_PATH = {"spec_from_file_location", "SourceFileLoader", "run_path", "load_source"}


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
        if len(parts) < 2 or (parts[0] not in LAYERS and parts[0] not in LEAVES):
            continue
        for mod in edgec_imports(path, root):
            layer = mod.split(".")[1] if "." in mod else ""
            if layer == parts[0]:
                continue
            if parts[0] in LEAVES:
                bad = layer != ""  # a leaf imports no other layer
            elif layer in LEAVES:
                bad = parts[0] not in LEAVES[layer]
            else:
                bad = layer in LAYERS and LAYERS.index(layer) > LAYERS.index(parts[0])
            if bad:
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


def test_the_back_end_layers_go_one_way(tmp_path):
    """Lowering builds kernels of the kernel IR; the kernel IR knows nothing of lowering, and
    code generation renders what lowering built."""
    pkg = tmp_path / "edgec"
    for layer in ("kernel_ir", "lowering", "codegen"):
        (pkg / layer).mkdir(parents=True)
    (pkg / "kernel_ir" / "program.py").write_text("from ..lowering.lower import lower_node\n")
    (pkg / "lowering" / "lower.py").write_text("from ..kernel_ir.kernel import Kernel\n")
    (pkg / "codegen" / "library.py").write_text("from ..lowering.program import build_program\n")
    assert violations(pkg) == ["edgec/kernel_ir/program.py imports edgec.lowering.lower"]


def test_zoo_is_a_leaf(tmp_path):
    """The example models import no other layer, and nothing but testing imports them."""
    pkg = tmp_path / "edgec"
    for layer in ("zoo", "ir", "testing"):
        (pkg / layer).mkdir(parents=True)
    (pkg / "zoo" / "cnns.py").write_text("from ..ir.graph import Graph\nfrom .builder import B\n")
    (pkg / "ir" / "graph.py").write_text("from ..zoo import resnet18\n")
    (pkg / "testing" / "models.py").write_text("from ..zoo import resnet18\n")
    assert violations(pkg) == ["edgec/ir/graph.py imports edgec.zoo",
                               "edgec/zoo/cnns.py imports edgec.ir.graph"]


def test_testing_is_the_last_layer(tmp_path):
    """edgec.testing may import all of edgec; nothing in edgec imports it."""
    pkg = tmp_path / "edgec"
    (pkg / "compiler").mkdir(parents=True)
    (pkg / "testing").mkdir()
    (pkg / "compiler" / "cli.py").write_text("from edgec.testing import fuzz\n")
    (pkg / "testing" / "fuzz.py").write_text("from ..compiler import cli\n")
    assert violations(pkg) == ["edgec/compiler/cli.py imports edgec.testing"]


def _is_sys_path(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def path_hacks(path: Path) -> list[str]:
    """'file:line what' for each edit of sys.path and each load of a module by its file path
    in `path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if isinstance(func, ast.Attribute) and _is_sys_path(func.value):
                found.append((node.lineno, f"sys.path.{func.attr}"))
            elif name in BY_PATH:
                found.append((node.lineno, name))
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_is_sys_path(t) for t in targets):
                found.append((node.lineno, "sys.path assigned"))
    return [f"{path.name}:{line} {what}" for line, what in sorted(found)]


def test_benchmarks_and_scripts_import_edgec_as_a_package():
    """The test tooling they share lives in edgec.testing; they import it by name."""
    found = [hack for folder in OUTSIDE for path in sorted(folder.rglob("*.py"))
             for hack in path_hacks(path)]
    assert not found, "\n".join(found)


def test_a_path_hack_is_seen(tmp_path):
    script = tmp_path / "bench.py"
    script.write_text("import importlib.util\nimport sys\n\n"
                      "sys.path.insert(0, 'tests')\nsys.path += ['x']\n\n\ndef f():\n"
                      "    return importlib.util.spec_from_file_location('m', 'm.py')\n"
                      "print(sys.path)\n")
    assert path_hacks(script) == ["bench.py:4 sys.path.insert", "bench.py:5 sys.path assigned",
                                  "bench.py:9 spec_from_file_location"]
