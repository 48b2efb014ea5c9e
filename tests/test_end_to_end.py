"""End to end: zoo models as PyTorch exports them -> edgec -> static library, checked against
onnxruntime through the Python loader and through the example C app linking libNAME.a."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from harness import rel_error

import edgec
from edgec import zoo

REPO = Path(__file__).resolve().parents[1]
MODELS = {"mlp": zoo.mlp, "resnet18": zoo.resnet18, "mobilenet_v2": zoo.mobilenet_v2}


def onnxruntime_outputs(model_path: Path, feeds: dict) -> dict:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


@pytest.fixture(scope="module", params=sorted(MODELS))
def compiled(request, tmp_path_factory):
    name = request.param
    work = tmp_path_factory.mktemp(name)
    path = work / f"{name}.onnx"
    zoo.save(MODELS[name](), path)
    # verify_each checks the IR and its text round-trip after every pass of the real pipeline
    art = edgec.compile(path, work / "out", verify_each=True)
    rng = np.random.default_rng(1)
    feeds = {i["name"]: rng.standard_normal(i["shape"]).astype(np.float32)
             for i in art.manifest["inputs"]}
    return name, path, art, feeds, onnxruntime_outputs(path, feeds)


@pytest.mark.slow
def test_loader_matches_onnxruntime(compiled):
    name, _, art, feeds, want = compiled
    got = edgec.load(art.out_dir).run(feeds)
    assert list(got) == list(want)
    for k in want:
        assert rel_error(got[k], want[k]) < 1e-4, (name, k, rel_error(got[k], want[k]))


def test_example_app_matches_onnxruntime(compiled, tmp_path):
    name, _, art, feeds, want = compiled
    exe = tmp_path / "app"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", f"-DMODEL={name}",
                    "-I", str(art.out_dir), str(REPO / "examples/app/main.c"),
                    str(art.library), "-lm", "-pthread", "-o", str(exe)], check=True)
    args = []
    for i, spec in enumerate(art.manifest["inputs"]):
        p = tmp_path / f"in{i}.bin"
        feeds[spec["name"]].tofile(p)
        args.append(str(p))
    subprocess.run([str(exe), *args, str(tmp_path / "out")], check=True, capture_output=True)
    for j, spec in enumerate(art.manifest["outputs"]):
        got = np.fromfile(tmp_path / f"out{j}.bin", dtype=np.float32).reshape(spec["shape"])
        assert rel_error(got, want[spec["name"]]) < 1e-4


def test_artifact_layout(compiled):
    name, _, art, _, _ = compiled
    m = art.manifest
    for f in (f"lib{name}.a", f"{name}.h", f"{name}.c", "manifest.json"):
        assert (art.out_dir / f).exists(), f
    assert m["workspace_bytes"] >= m["memory"]["lower_bound_bytes"] > 0
    assert m["weights_bytes"] > 0 and m["ops"] and m["pipeline"].endswith("plan-memory")
    assert m["inputs"][0]["dtype"] == "f32"
    # batch-norm folded and the convolution epilogues fused away
    assert "BatchNormalization" not in m["ops"] and "Relu" not in m["ops"]


def test_generated_c_has_no_warnings(compiled):
    name, _, art, _, _ = compiled
    res = subprocess.run(["gcc", *art.manifest["cflags"], "-Wall", "-Wextra", "-Werror",
                          "-fsyntax-only", f"{name}.c"], cwd=art.out_dir, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr[:2000]


def test_c_generic_target(tmp_path):
    path = tmp_path / "mobilenet_v2.onnx"
    zoo.save(zoo.mobilenet_v2(), path)
    art = edgec.compile(path, tmp_path / "out", target="c-generic")
    assert art.manifest["target"] == "c-generic" and "-march=native" not in art.manifest["cflags"]
    x = np.random.default_rng(2).standard_normal(art.manifest["inputs"][0]["shape"])
    feeds = {art.manifest["inputs"][0]["name"]: x.astype(np.float32)}
    want = onnxruntime_outputs(path, feeds)
    got = edgec.load(art.out_dir).run(feeds)
    for k in want:
        assert rel_error(got[k], want[k]) < 1e-4


def test_loader_runs_again_with_fresh_outputs(tmp_path):
    # The loader keeps the addresses of the last inputs and writes small outputs into arrays
    # made once: each run must still read the input's current contents and return arrays of
    # its own, for a small (staged) and a large (allocated per run) output alike; the array
    # of a large one comes back only when the caller has let go of it and of its views.
    import onnx
    from onnx import TensorProto, helper

    n = 5000  # 20 KB: past the staged-output size
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["big"]),
         helper.make_node("ReduceMax", ["x"], ["small"], keepdims=1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info("big", TensorProto.FLOAT, [1, n]),
         helper.make_tensor_value_info("small", TensorProto.FLOAT, [1, 1])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])])
    path = tmp_path / "two_outputs.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=10), path)
    model = edgec.load(edgec.compile(path, tmp_path / "out").out_dir)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, n)).astype(np.float32)
    x0 = x.copy()
    first = model.run({"x": x})
    x += 1.0  # the same array, new contents
    second = model.run({"x": x})
    np.testing.assert_array_equal(second["big"], 2 * x)
    assert second["small"][0, 0] == x.max()
    np.testing.assert_array_equal(first["big"], 2 * x0)
    assert first["small"][0, 0] == x0.max(), "a later run overwrote an earlier result"
    other = rng.standard_normal((1, n)).astype(np.float32)
    assert model.run({"x": other})["small"][0, 0] == other.max()
    assert model.run({"x": x[:, ::1].copy(order="F")})["small"][0, 0] == x.max()
    wide = np.repeat(x, 2, axis=1)[:, ::2]  # a strided view: copied before the run
    assert model.run({"x": wide})["small"][0, 0] == x.max()
    x.shape = (n,)  # the same object, reshaped in place
    with pytest.raises(edgec.errors.ShapeError, match="must have shape"):
        model.run({"x": x})
    # a large output starts on a 64-byte line, and its array comes back to the next run only
    # when nothing holds it or a view of it any more
    x.shape = (1, n)

    def address(a: np.ndarray) -> int:
        return a.__array_interface__["data"][0]

    big = model.run({"x": x})["big"]
    at, want = address(big), big.copy()
    assert at % 64 == 0
    del big
    again = model.run({"x": x})["big"]
    assert address(again) == at, "a dropped output array was not reused"
    np.testing.assert_array_equal(again, want)
    row = again[0, 10:20]  # a view keeps the memory: the next run writes elsewhere
    del again
    third = model.run({"x": x + 1})["big"]
    assert address(third) != at
    np.testing.assert_array_equal(row, want[0, 10:20])
    np.testing.assert_array_equal(third, 2 * (x + 1))
