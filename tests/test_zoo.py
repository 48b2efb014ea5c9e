"""The example models: valid ONNX, torchvision's parameter counts, torch-style names, runnable by
onnxruntime with O(1) outputs, reproducible from their seeds, and the `python -m edgec.zoo` CLI."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from edgec import zoo


def params(model: onnx.ModelProto, buffers: bool = False) -> int:
    """Element count of the initializers; BN running stats are buffers, not parameters."""
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer
               if buffers or not t.name.endswith(("running_mean", "running_var")))


def run(model: onnx.ModelProto, seed: int = 0) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    x = np.random.default_rng(seed).standard_normal(inp.shape).astype(np.float32)
    (y,) = sess.run(None, {inp.name: x})
    return y


@pytest.mark.parametrize("name", sorted(zoo.MODELS))
@pytest.mark.parametrize("opset", [11, 13, 17])
def test_models_are_valid_onnx(name, opset):
    m = zoo.MODELS[name](opset=opset)
    onnx.checker.check_model(m, full_check=True)
    assert m.ir_version == 8 and m.producer_name == "pytorch"
    assert [(o.domain, o.version) for o in m.opset_import] == [("", opset)]
    assert [i.name for i in m.graph.input] == ["input"]
    assert [o.name for o in m.graph.output] == ["output"]


@pytest.mark.parametrize("name, out_std", [("resnet18", (0.3, 5)), ("mobilenet_v2", (0.3, 5)),
                                           ("mlp", (0.1, 3)), ("tiny_cnn", (0.1, 3))])
def test_onnxruntime_runs_them_with_unit_scale_outputs(name, out_std):
    y = run(zoo.MODELS[name]())
    assert y.shape == ((1, 10) if name in ("mlp", "tiny_cnn") else (1, 1000))
    assert np.isfinite(y).all() and out_std[0] < y.std() < out_std[1]


def test_resnet18_matches_torchvision():
    m = zoo.resnet18()
    assert params(m) == 11_689_512  # torchvision.models.resnet18().parameters()
    inits = {t.name: tuple(t.dims) for t in m.graph.initializer}
    assert inits["conv1.weight"] == (64, 3, 7, 7)
    assert inits["layer2.0.downsample.0.weight"] == (128, 64, 1, 1)
    assert inits["layer4.1.bn2.running_var"] == (512,)
    assert inits["fc.weight"] == (1000, 512)
    ops = [n.op_type for n in m.graph.node]
    assert ops.count("Conv") == 20 and ops.count("BatchNormalization") == 20
    assert ops.count("Add") == 8 and ops[-3:] == ["GlobalAveragePool", "Flatten", "Gemm"]
    names = [n.name for n in m.graph.node]
    assert "/layer1/layer1.0/conv1/Conv" in names
    assert "/layer3/layer3.0/downsample/downsample.0/Conv" in names
    assert "/layer1/layer1.0/relu_1/Relu" in names
    outs = {o for n in m.graph.node for o in n.output}
    assert "/layer1/layer1.0/conv1/Conv_output_0" in outs
    gemm = m.graph.node[-1]
    assert {a.name: a.i for a in gemm.attribute if a.name == "transB"} == {"transB": 1}


def test_mobilenet_v2_matches_torchvision():
    m = zoo.mobilenet_v2()
    assert params(m) == 3_504_872  # torchvision.models.mobilenet_v2().parameters()
    inits = {t.name: tuple(t.dims) for t in m.graph.initializer}
    assert inits["features.0.0.weight"] == (32, 3, 3, 3)
    assert inits["features.2.conv.1.0.weight"] == (96, 1, 3, 3)  # depthwise
    assert inits["features.18.0.weight"] == (1280, 320, 1, 1)
    assert inits["classifier.1.weight"] == (1000, 1280)
    ops = [n.op_type for n in m.graph.node]
    assert ops.count("Clip") == 35 and ops.count("Add") == 10
    chain = [o for o in ops if o in ("Shape", "Gather", "Unsqueeze", "Concat", "Reshape")]
    assert chain == ["Shape", "Gather", "Unsqueeze", "Concat", "Reshape"]
    depthwise = [n for n in m.graph.node if n.op_type == "Conv"
                 and any(a.name == "group" and a.i > 1 for a in n.attribute)]
    assert len(depthwise) == 17
    clip = next(n for n in m.graph.node if n.op_type == "Clip")
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
              for n in m.graph.node if n.op_type == "Constant"}
    assert (consts[clip.input[1]], consts[clip.input[2]]) == (0.0, 6.0)


def test_small_models():
    m = zoo.mlp()
    assert [n.op_type for n in m.graph.node] == ["Gemm", "Relu", "Gemm", "Relu", "Gemm"]
    assert params(m) == 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10
    t = zoo.tiny_cnn()
    assert len(t.SerializeToString()) < 10_000
    assert {"Conv", "BatchNormalization", "Relu", "MaxPool", "Gemm"} <= \
        {n.op_type for n in t.graph.node}


def test_fixed_seeds():
    assert zoo.tiny_cnn().SerializeToString() == zoo.tiny_cnn().SerializeToString()
    assert zoo.tiny_cnn(seed=1).SerializeToString() != zoo.tiny_cnn().SerializeToString()
    with pytest.raises(ValueError, match="opset"):
        zoo.mlp(opset=10)


def test_save_and_cli(tmp_path):
    p = zoo.save(zoo.mlp(), tmp_path / "a" / "b" / "mlp.onnx")
    assert onnx.load(str(p)).graph.node[0].op_type == "Gemm"
    out = tmp_path / "tiny.onnx"
    r = subprocess.run([sys.executable, "-m", "edgec.zoo", "tiny_cnn", "-o", str(out),
                        "--opset", "17"], capture_output=True, text=True, check=True)
    assert "wrote" in r.stdout
    assert onnx.load(str(out)).opset_import[0].version == 17
    r = subprocess.run([sys.executable, "-m", "edgec.zoo", "nope"], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "invalid choice" in r.stderr
