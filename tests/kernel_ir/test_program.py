"""The program IR (kernel_ir/program.py): what NAME_run does, built from a planned graph and run
by the interpreter on one workspace as the C library runs it.

The control-flow model of test_control_flow.py (a run-time If, a Loop with a scan output and
an If inside its body, a reverse Scan) as a program: its structure, then its outputs on the
interpreter against onnxruntime for both branches, and the same program's C library against
the interpreter. A Loop that stops early is an error on both.
"""

from __future__ import annotations

import io

import numpy as np
import onnxruntime as ort
import pytest
from harness import rel_error
from test_control_flow import control_flow_model, loop_model

import edgec
from edgec.compiler.driver import load_graph
from edgec.errors import EdgecError
from edgec.kernel_ir.interpreter import KernelError
from edgec.kernel_ir.program import (
    Branch,
    ExitUnless,
    Launch,
    Repeat,
    SetScalar,
    Step,
    walk_ops,
)
from edgec.kernel_ir.program_interp import run_program
from edgec.lowering.program import build_program
from edgec.passes import default_pipeline, run_pipeline
from edgec.targets.target import get_target


def program_of(m, target: str = "c-generic"):
    g = load_graph(m)
    run_pipeline(g, default_pipeline(get_target(target).lanes(g.inputs[0].dtype)),
                 out=io.StringIO())
    return build_program(g, g.record.memory_plan, get_target(target), "cf")


def test_structure_of_a_program_with_control_flow():
    prog = program_of(control_flow_model())
    ops = list(walk_ops(prog.body))
    branches = [o for o in ops if isinstance(o, Branch)]
    loops = [o for o in ops if isinstance(o, Repeat)]
    assert len(branches) == 2  # the If, and the If inside the Loop's body
    assert [(r.var, r.count) for r in loops] == [("it0", 4), ("t0", 2)]  # the Loop, the Scan
    # the Loop's body starts by setting its iteration and condition slots; its condition is
    # an Identity of the one it was given, so it has no exit check
    first = loops[0].body[:2]
    assert [type(o) for o in first] == [SetScalar, SetScalar]
    assert first[0].value == "it0" and first[1].value is True
    assert not any(isinstance(o, ExitUnless) for o in ops)
    # the reverse Scan writes its output slices from the last one down
    stepped = [r.step for o in ops if isinstance(o, Launch) for r in o.args if r.step]
    assert Step("t0", 3, 1) in stepped and Step("it0", 6) in stepped
    # every storage reference is one of the run's buffers, a weight or inside the workspace
    for o in ops:
        for r in getattr(o, "args", []):
            assert r.space in ("input", "output", "weight", "workspace", "none"), r
            if r.space == "workspace":
                assert 0 <= r.where < prog.workspace_bytes
    assert prog.kernels == [o.kernel.name for o in ops if isinstance(o, Launch)]


@pytest.mark.parametrize("target", ["c-generic", "x86-avx2"])
def test_program_runs_on_the_interpreter_as_onnxruntime(target):
    m = control_flow_model()
    prog = program_of(m, target)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for sign in (1.0, -1.0):  # both branches of the run-time If
        x = (sign * np.abs(rng.standard_normal((2, 3)))).astype(np.float32)
        y = rng.standard_normal((2, 3)).astype(np.float32)
        want = sess.run(None, {"x": x, "y": y})
        got = run_program(prog, {"x": x, "y": y})
        for w, name in zip(want, ["r", "acc", "scans", "sf", "ys"]):
            assert rel_error(got[name], w) < 1e-6, name


def test_c_library_and_interpreter_agree(tmp_path):
    m = control_flow_model()
    lib = edgec.load(edgec.compile(m, tmp_path / "out", name="cf", target="c-generic").out_dir)
    prog = program_of(m)
    feeds = {"x": np.float32([[1, -2, 3], [0.5, 2, -1]]), "y": np.ones((2, 3), np.float32)}
    got, want = lib.run(feeds), run_program(prog, feeds)
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=1e-6, err_msg=name)


def test_a_loop_ending_early_stops_the_program():
    prog = program_of(loop_model())
    assert any(isinstance(o, ExitUnless) for o in walk_ops(prog.body))
    x = np.zeros(1, np.float32)
    assert run_program(prog, {"x": x, "limit": np.full(1, 100, np.float32)})["y"][0] == 5.0
    with pytest.raises(KernelError, match="EDGEC_ERR_LOOP_EXIT"):
        run_program(prog, {"x": x, "limit": np.full(1, 2, np.float32)})


def test_wrong_inputs_are_refused():
    prog = program_of(control_flow_model())
    with pytest.raises(EdgecError, match=r"input 'x' must be float32\[2, 3\]"):
        run_program(prog, {"x": np.zeros(5, np.float32), "y": np.zeros((2, 3), np.float32)})
