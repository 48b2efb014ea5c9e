"""The CLI and the bad-input contract: every user mistake is one clear line, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgec import zoo
from edgec.compiler.cli import main


def edgec_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edgec.compiler.cli", *args],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    path = d / "tiny.onnx"
    zoo.save(zoo.tiny_cnn(), path)
    return path


def symbolic_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "sym", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def test_compile_run_check_inspect(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", str(tiny), "-o", str(out), "--target", "c-generic"]) == 0
    assert (out / "libtiny.a").exists() and (out / "tiny.h").exists()
    m = __import__("json").loads((out / "manifest.json").read_text())
    x = np.random.default_rng(0).standard_normal(m["inputs"][0]["shape"]).astype(np.float32)
    np.savez(tmp_path / "in.npz", **{m["inputs"][0]["name"]: x})
    capsys.readouterr()
    assert main(["run", str(out), "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "res.npz"), "--check", str(tiny)]) == 0
    text = capsys.readouterr().out
    rel = float(text.split("relative ")[-1].split()[0])
    assert rel < 1e-4
    saved = np.load(tmp_path / "res.npz")[m["outputs"][0]["name"]]
    assert saved.shape == tuple(m["outputs"][0]["shape"])
    assert main(["inspect", str(out)]) == 0
    assert "workspace" in capsys.readouterr().out


def test_opt_prints_parseable_ir(tiny, capsys):
    from edgec.ir import parse

    pipeline = "fold-constants,fold-batchnorm,fuse"
    assert main(["opt", str(tiny), "--pipeline", pipeline, "--full"]) == 0
    text = capsys.readouterr().out
    g = parse(text)
    assert "FusedConv" in g.op_counts() and "BatchNormalization" not in g.op_counts()


def one_line_error(res: subprocess.CompletedProcess, *needles: str) -> None:
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edgec: error: "), res.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


def test_not_onnx(tmp_path):
    bad = tmp_path / "notes.onnx"
    bad.write_text("this is not a model\n" * 10)
    one_line_error(edgec_cli("compile", str(bad), "-o", str(tmp_path / "o")), "notes.onnx")


def test_truncated_model(tiny, tmp_path):
    data = tiny.read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    one_line_error(edgec_cli("compile", str(cut), "-o", str(tmp_path / "o")), "cut.onnx")


def test_missing_file(tmp_path):
    one_line_error(edgec_cli("compile", str(tmp_path / "nope.onnx"), "-o", str(tmp_path / "o")),
                   "nope.onnx")


def test_unsupported_ops_listed_at_once(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("TfIdfVectorizer", ["x"], ["a"]),
             helper.make_node("TfIdfVectorizer", ["a"], ["b"]),
             helper.make_node("MyOp", ["b"], ["y"], domain="my.domain")]
    g = helper.make_graph(nodes, "u", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("my.domain", 1)], ir_version=8)
    path = tmp_path / "u.onnx"
    onnx.save(m, path)
    one_line_error(edgec_cli("compile", str(path), "-o", str(tmp_path / "o")),
                   "TfIdfVectorizer (x2)", "MyOp (x1)")


def test_missing_and_given_input_shape(tmp_path):
    path = tmp_path / "sym.onnx"
    symbolic_model(path)
    one_line_error(edgec_cli("compile", str(path), "-o", str(tmp_path / "o")), "x", "batch",
                   "--input-shape")
    res = edgec_cli("compile", str(path), "-o", str(tmp_path / "o"), "--input-shape", "x=3,4")
    assert res.returncode == 0, res.stderr


def test_wrong_input_at_run_time(tiny, tmp_path):
    out = tmp_path / "out"
    assert main(["compile", str(tiny), "-o", str(out)]) == 0
    m = __import__("json").loads((out / "manifest.json").read_text())
    name, shape = m["inputs"][0]["name"], m["inputs"][0]["shape"]
    np.savez(tmp_path / "shape.npz", **{name: np.zeros([s + 1 for s in shape], np.float32)})
    one_line_error(edgec_cli("run", str(out), "--inputs", str(tmp_path / "shape.npz")),
                   name, "shape")
    np.savez(tmp_path / "dtype.npz", **{name: np.zeros(shape, np.float64)})
    one_line_error(edgec_cli("run", str(out), "--inputs", str(tmp_path / "dtype.npz")),
                   name, "float64")
    np.savez(tmp_path / "name.npz", wrong=np.zeros(shape, np.float32))
    one_line_error(edgec_cli("run", str(out), "--inputs", str(tmp_path / "name.npz")), "wrong")


def test_bad_pipeline_and_target(tiny, tmp_path):
    one_line_error(edgec_cli("compile", str(tiny), "-o", str(tmp_path / "o"), "--pipeline",
                             "fold-constants,no-such-pass"), "no-such-pass")
    res = edgec_cli("compile", str(tiny), "-o", str(tmp_path / "o"), "--target", "z80")
    assert res.returncode == 2 and "Traceback" not in res.stderr


def test_bench_times_the_artifact_beside_onnxruntime(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", str(tiny), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["bench", str(out), "--vs", str(tiny), "--threads", "1", "--threads", "2",
                 "--pairs", "5"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| threads | edgec ms | onnxruntime ms")
    assert [r.split("|")[1].strip() for r in rows[1:]] == ["1", "2"]
    assert all(float(r.split("|")[5]) < 1e-3 for r in rows[1:])  # numerics checked first
    # an artifact whose outputs depart from the model's is refused, not timed
    other = tmp_path / "other.onnx"
    zoo.save(zoo.tiny_cnn(seed=1), other)
    res = edgec_cli("bench", str(out), "--vs", str(other), "--pairs", "2")
    one_line_error(res, "departs from onnxruntime")
    one_line_error(edgec_cli("bench", str(out), "--pairs", "0"), "--pairs")
