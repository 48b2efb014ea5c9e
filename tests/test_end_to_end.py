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
