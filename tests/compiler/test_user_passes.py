"""User passes wherever a pipeline is named: `--load FILE.py` on the CLI (the README's
example pass, examples/user_pass.py), an installed package's `edgec.passes` entry point, and
an unknown pass's error that lists the loaded ones. Run as subprocesses: each loads its passes
into a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = (REPO / "examples/user_pass.py").read_text().split('EXAMPLE = """')[1].split('"""')[0]


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edgec.compiler.cli", *args],
                          capture_output=True, text=True, env=env)


def test_opt_and_compile_load_the_example_pass(tmp_path):
    ir = tmp_path / "example.ir"
    ir.write_text(EXAMPLE)
    res = cli("opt", str(ir), "--load", str(REPO / "examples/user_pass.py"),
              "--pipeline", "simplify-activations,dce")
    assert res.returncode == 0, res.stderr
    # LeakyRelu(alpha=0) -> Relu, Relu(Relu) -> Relu: one Relu left, the alpha=0.1 one stays
    assert res.stdout.count("Relu(") == 2 and res.stdout.count("LeakyRelu(") == 1, res.stdout
    # compile: the same pass ahead of edgec's pipeline, on an ONNX model
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])
    g = helper.make_graph([helper.make_node("LeakyRelu", ["x"], ["a"], alpha=0.0),
                           helper.make_node("Relu", ["a"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10),
              tmp_path / "m.onnx")
    pipe = "simplify-activations,dce,fuse,plan-memory"
    res = cli("compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "out"), "--load",
              str(REPO / "examples/user_pass.py"), "--pipeline", pipe)
    assert res.returncode == 0, res.stderr
    import edgec

    lib = edgec.load(tmp_path / "out")
    assert [k["op"] for k in lib.manifest["kernel_strategies"]] == ["Relu"]
    xs = np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8)
    np.testing.assert_array_equal(lib.run({"x": xs})["y"], np.maximum(xs, 0))


def test_unknown_pass_lists_the_loaded_ones_and_bad_files_are_one_line(tmp_path):
    ir = tmp_path / "example.ir"
    ir.write_text(EXAMPLE)
    res = cli("opt", str(ir), "--load", str(REPO / "examples/user_pass.py"),
              "--pipeline", "simplify-activationz")
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "unknown pass 'simplify-activationz'" in res.stderr
    assert "loaded: simplify-activations (from user_pass.py)" in res.stderr
    broken = tmp_path / "broken.py"
    broken.write_text("raise ValueError('no passes today')\n")
    for path, needle in ((broken, "failed: ValueError: no passes today"),
                         (tmp_path / "absent.py", "no such file")):
        res = cli("opt", str(ir), "--load", str(path), "--pipeline", "dce")
        assert res.returncode == 1 and needle in res.stderr, res.stderr
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_an_installed_package_offers_passes_by_entry_point(tmp_path):
    # a package on the path with an `edgec.passes` entry point: its module registers a pass
    pkg = tmp_path / "site" / "edgec_demo_passes"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from edgec.passes import PatternPass, register_pass\n"
        "register_pass(PatternPass('demo-noop', [], doc='Does nothing.'))\n")
    info = tmp_path / "site" / "edgec_demo_passes-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: edgec-demo-passes\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text("[edgec.passes]\ndemo = edgec_demo_passes\n")
    ir = tmp_path / "example.ir"
    ir.write_text(EXAMPLE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    res = cli("opt", str(ir), "--pipeline", "demo-noop,dce", env=env)
    assert res.returncode == 0, res.stderr
    res = cli("opt", str(ir), "--pipeline", "nope", env=env)
    assert "loaded: demo-noop" in res.stderr, res.stderr
