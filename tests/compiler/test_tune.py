"""Layers the cost model cannot decide are timed on the build host, once (compiler/tune.py)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import edgec
from edgec.compiler.driver import compile_graph
from edgec.compiler.tune import timings_file
from edgec.ir import DType, Graph, TensorType
from edgec.targets.target import get_target, runs_on_host

pytestmark = pytest.mark.skipif(not runs_on_host(get_target("x86")),
                                reason="times x86 code on this machine")


def product(seed: int = 3) -> tuple[Graph, np.ndarray]:
    """relu(x @ B) for x [1, 384], B [384, 256] with 85% zeros; and B."""
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((384, 256)).astype(np.float32)
    b[rng.random(b.shape) < 0.85] = 0
    g = Graph("gemv")
    x = g.add_input("x", TensorType((1, 384), DType.F32))
    y = g.add_node("MatMul", [x, g.const(b, "B")], name="mm").output
    g.outputs = [g.add_node("Relu", [y], name="act").output]
    return g, b


def test_a_close_layer_is_timed_once_and_the_faster_kernel_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    g, b = product()
    log = io.StringIO()
    # a CPU without figures: the model cannot tell the kernels apart, so they are timed
    art = compile_graph(g, tmp_path / "a", target="x86", name="m", cpu="unknown", tune=True,
                        log=log)
    assert "timed alone on this CPU" in log.getvalue()
    (row,) = art.manifest["sparse_timed"]
    t = row["measured_us"]
    assert t["sparse"] > 0 and t["dense"] > 0
    faster = "sparse" if t["sparse"] < t["dense"] else "dense"
    assert row["kernel"] == faster
    ops = [k["op"] for k in art.manifest["kernel_strategies"]]
    assert ("SparseMatMul" in ops) == (faster == "sparse"), ops
    report = (tmp_path / "a" / "report.txt").read_text()
    assert f"runs {faster}: the cost model could not tell" in report
    assert f"timed on this CPU: sparse {t['sparse']:.1f} us" in report
    cache = timings_file(get_target("x86", "unknown"))
    assert cache.parent == tmp_path / "cache"
    assert list(json.loads(cache.read_text()).values()) == [t]
    x = np.random.default_rng(0).standard_normal((1, 384)).astype(np.float32)
    y = edgec.load(tmp_path / "a").run({"x": x})
    np.testing.assert_allclose(next(iter(y.values())), np.maximum(x @ b, 0), rtol=1e-4,
                               atol=1e-4)
    # compiled again: the cached answer, nothing timed
    log = io.StringIO()
    again = compile_graph(product()[0], tmp_path / "b", target="x86", name="m",
                          cpu="unknown", tune=True, log=log)
    assert "timed alone" not in log.getvalue()
    assert again.manifest["sparse_timed"] == art.manifest["sparse_timed"]


def test_no_tune_keeps_the_models_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    art = compile_graph(product()[0], tmp_path / "a", target="x86", name="m", cpu="unknown",
                        tune=False)
    (row,) = art.manifest["sparse_timed"]
    assert "measured_us" not in row
    assert "not timed" in (tmp_path / "a" / "report.txt").read_text()
    assert not (tmp_path / "cache").exists()


def test_cli_names_the_cpu_family(tmp_path, capsys):
    import onnx

    from edgec import zoo
    from edgec.compiler.cli import main

    onnx.save(zoo.MODELS["mlp"](), tmp_path / "mlp.onnx")
    assert main(["compile", str(tmp_path / "mlp.onnx"), "-o", str(tmp_path / "out"),
                 "--target", "x86-avx2", "--cpu", "zen1", "--no-tune"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert "sparsify{lanes=8,uarch=zen1}" in manifest["pipeline"]
    with pytest.raises(SystemExit):
        main(["compile", str(tmp_path / "mlp.onnx"), "-o", str(tmp_path / "o2"),
              "--cpu", "pentium"])
    assert "invalid choice: 'pentium'" in capsys.readouterr().err


@pytest.mark.parametrize("env", ["0", "1"])
def test_the_cli_times_close_layers_unless_the_environment_says_not(tmp_path, monkeypatch,
                                                                     env):
    """`edgec compile` leaves the choice to EDGEC_TUNE where --no-tune is not given (it timed
    close layers even with EDGEC_TUNE=0, so the suite's kernel choices hung on timings)."""
    import onnx
    from onnx import helper

    from edgec.compiler.cli import main
    from edgec.targets import target

    monkeypatch.setenv("EDGEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("EDGEC_TUNE", env)
    monkeypatch.setattr(target, "host_uarch", lambda: "unknown")  # no figures: every call close
    b = product()[1]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["x", "B"], ["y"])], "gemv",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 384])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 256])],
        [onnx.numpy_helper.from_array(b, "B")]), opset_imports=[helper.make_opsetid("", 17)],
        ir_version=10)
    onnx.save(model, tmp_path / "gemv.onnx")
    assert main(["compile", str(tmp_path / "gemv.onnx"), "-o", str(tmp_path / "out")]) == 0
    (row,) = json.loads((tmp_path / "out" / "manifest.json").read_text())["sparse_timed"]
    assert ("measured_us" in row) == (env == "1")
    assert (tmp_path / "cache").exists() == (env == "1")
