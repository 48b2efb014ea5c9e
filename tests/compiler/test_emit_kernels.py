"""`--emit-kernels`: the program IR and every kernel as text beside the artifact."""

from __future__ import annotations

import json
import re

import onnx
from test_control_flow import control_flow_model

from edgec import zoo
from edgec.compiler.cli import main


def test_every_launch_and_kernel_is_written(tmp_path):
    onnx.save(zoo.MODELS["mlp"](), tmp_path / "mlp.onnx")
    assert main(["compile", str(tmp_path / "mlp.onnx"), "-o", str(tmp_path / "out"),
                 "--target", "x86-avx2", "--emit-kernels", "--no-tune"]) == 0
    text = (tmp_path / "out" / "mlp.kernels.txt").read_text()
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    program, *sections = text.split("\n\n")
    assert program.startswith("program mlp: workspace ")
    launches = re.findall(r"^  launch (\w+)\(", program, re.M)
    assert launches == [s["kernel"] for s in manifest["kernel_strategies"]]
    defined = [re.search(r"^kernel (\w+)\(", s, re.M).group(1) for s in sections]
    called = set(re.findall(r"call (\w+)\(", text))
    # each launched kernel and each micro-kernel they call, once each
    assert sorted(defined) == sorted(set(launches) | called)
    # the first layer's inputs: the model's input, its packed weights, the workspace out
    assert re.match(r"  launch \w+\(in0 f32, w \w+ f32, w \w+ f32, ws\+0 f32 rw\)",
                    program.splitlines()[1])


def test_nothing_extra_unless_asked(tmp_path):
    onnx.save(zoo.MODELS["mlp"](), tmp_path / "mlp.onnx")
    assert main(["compile", str(tmp_path / "mlp.onnx"), "-o", str(tmp_path / "out"),
                 "--target", "c-generic"]) == 0
    assert not (tmp_path / "out" / "mlp.kernels.txt").exists()


def test_loops_and_branches_are_drawn(tmp_path):
    """control_flow_model: an If on a run-time condition and a Loop over M iterations, the
    If inside the Loop's body."""
    import edgec

    edgec.compile(control_flow_model(), tmp_path / "out", name="cf", target="c-generic",
                  emit_kernels=True)
    program = (tmp_path / "out" / "cf.kernels.txt").read_text().split("\n\n")[0]
    assert re.search(r"^  repeat \w+ in 0\.\.\d+ \{$", program, re.M), program
    assert re.search(r"^ +if \S+ b(ool|8)( rw)? \{$", program, re.M), program
    assert re.search(r"^ +\} else \{$", program, re.M), program
