"""Model families as their exporters write them (`edgec.zoo.FAMILIES`), compiled by
`edgec.compile`, run through the generated C (`edgec.load(...).run`) and matched against
onnxruntime on seeded random inputs: rel err max|a - b| / max|b| < 1e-4.

Families: a BERT-style encoder layer (Erf GELU at opsets 17-18, the Gelu op, exact and tanh, at
opset 20; a 0/1 attention mask or a boolean padding mask with -inf), a two-scale detection head
(opsets 11 and 13), a 1-D audio CNN, a tf2onnx NHWC CNN and a model of nested ONNX functions.
Dynamic shapes: the encoder with symbolic batch and sequence dims, refused without shapes
(Python and CLI), compiled for two fixed shapes with every Shape-dependent subgraph folded away.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from harness import rel_error

import edgec
from edgec import zoo
from edgec.errors import ShapeError
from edgec.frontends.onnx import import_onnx

VOCAB = 100  # transformer_encoder's default vocabulary
TOL = 1e-4


def feeds_for(model: onnx.ModelProto, shapes: dict[str, list[int]] | None = None,
              seed: int = 1) -> dict[str, np.ndarray]:
    """Seeded inputs: token ids, padding masks that leave the first keys of each row visible
    (a fully masked row has no softmax), normal floats elsewhere."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for info in model.graph.input:
        shape = (shapes or {}).get(info.name) or [d.dim_value for d in
                                                   info.type.tensor_type.shape.dim]
        if info.name == "input_ids":
            feeds[info.name] = rng.integers(0, VOCAB, shape).astype(np.int64)
        elif info.name in ("attention_mask", "key_padding_mask"):
            # row r pads its last r + 2 positions
            pad = np.arange(shape[-1])[None, :] >= shape[-1] - 2 - np.arange(shape[0])[:, None]
            feeds[info.name] = (pad if info.name == "key_padding_mask"
                                else (~pad).astype(np.int64))
        else:
            feeds[info.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict) -> dict[str, np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def compile_and_match(model: onnx.ModelProto, out: Path, name: str,
                      shapes: dict[str, list[int]] | None = None) -> edgec.compiler.driver.Artifact:
    """Compile `model`, run the C on seeded inputs, assert it matches onnxruntime."""
    art = edgec.compile(model, out, name=name, input_shapes=shapes)
    feeds = feeds_for(model, shapes)
    got = edgec.load(art.out_dir).run(feeds)
    want = onnxruntime_outputs(model, feeds)
    assert list(got) == list(want)
    res = subprocess.run(["gcc", *art.manifest["cflags"], "-Wall", "-Wextra", "-Werror",
                          "-fsyntax-only", f"{name}.c"], cwd=art.out_dir, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr[:2000]
    for k in want:
        assert np.isfinite(want[k]).all() and want[k].std() > 1e-3, k  # a non-trivial output
        err = rel_error(got[k], want[k])
        assert err < TOL, (name, k, err)
    return art


def imported_ops(model: onnx.ModelProto, shapes: dict[str, list[int]] | None = None) -> set[str]:
    return {n.op for n in import_onnx(model, input_shapes=shapes).nodes}


# -- 1. transformer encoder ---------------------------------------------------------------------

@pytest.mark.parametrize("opset, batch, gelu, mask", [
    (17, 1, "erf", "mul"), (18, 2, "erf", "where"), (20, 2, "op", "mul"), (20, 1, "tanh", "where")])
def test_transformer_encoder(tmp_path, opset, batch, gelu, mask):
    m = zoo.transformer_encoder(opset=opset, batch=batch, gelu=gelu, mask=mask)
    onnx.checker.check_model(m, full_check=True)
    ops = imported_ops(m)
    assert {"LayerNormalization", "Softmax", "MatMul"} <= ops
    assert ("Erf" if gelu == "erf" else "Gelu") in ops
    assert "Where" in ops if mask == "where" else "Cast" in ops
    # the position slice, token-type zeros and head views were all computed from Shape
    assert not ops & {"Shape", "ConstantOfShape", "Concat", "Slice"}, ops
    compile_and_match(m, tmp_path / "out", f"encoder_{gelu}")


def test_transformer_mask_changes_the_output():
    """The additive mask really reaches the scores: unmasking a key changes onnxruntime's
    answer, so matching it above checks the mask path too."""
    m = zoo.transformer_encoder()
    feeds = feeds_for(m)
    a = onnxruntime_outputs(m, feeds)["last_hidden_state"]
    feeds["attention_mask"] = np.ones_like(feeds["attention_mask"])
    b = onnxruntime_outputs(m, feeds)["last_hidden_state"]
    assert rel_error(a, b) > 1e-2


# -- 2-5. detection head, audio, NHWC, ONNX functions ---------------------------------------------

@pytest.mark.parametrize("opset, batch", [(11, 1), (13, 2)])
def test_detection_head(tmp_path, opset, batch):
    """Opset 11 has Split's sizes as an attribute and Resize's roi as a required input."""
    m = zoo.detection_head(opset=opset, batch=batch)
    onnx.checker.check_model(m, full_check=True)
    assert {"Resize", "Concat", "Split", "Sigmoid", "Slice"} <= imported_ops(m)
    art = compile_and_match(m, tmp_path / "out", "detector")
    assert art.manifest["outputs"][0]["shape"] == [batch, 3 * (16 * 16 + 8 * 8), 8]


def test_audio_cnn(tmp_path):
    m = zoo.audio_cnn(batch=2)
    onnx.checker.check_model(m, full_check=True)
    art = compile_and_match(m, tmp_path / "out", "audio")
    # batch-norm folded into the strided, dilated and grouped 1-D convolutions
    assert "BatchNormalization" not in art.manifest["ops"]


def test_nhwc_cnn(tmp_path):
    m = zoo.nhwc_cnn(batch=2)
    onnx.checker.check_model(m, full_check=True)
    assert sum(n.op_type == "Transpose" for n in m.graph.node) == 8
    art = compile_and_match(m, tmp_path / "out", "nhwc")
    # tf2onnx's names (with ':') are the artifact's I/O names; feeds use them as is
    assert [v["name"] for v in art.manifest["inputs"]] == ["input_1:0"]
    assert art.manifest["inputs"][0]["shape"] == [2, 16, 16, 3]


def test_torch_functions(tmp_path):
    m = zoo.torch_functions()
    onnx.checker.check_model(m, full_check=True)
    assert [f.name for f in m.functions] == ["Linear", "aten_leaky_relu", "aten_softmax",
                                             "Block"]
    assert {n.domain for n in m.graph.node} == {zoo.TORCH_DOMAIN, zoo.TORCHLIB_DOMAIN}
    # Block's LeakyRelu slope reaches it through two ref_attr_names
    assert any(a.ref_attr_name for f in m.functions for n in f.node for a in n.attribute)
    graph = import_onnx(m)
    # inlined; the Transpose of each constant weight folded on import
    assert {n.op for n in graph.nodes} == {"MatMul", "Add", "LeakyRelu", "Softmax"}
    slopes = sorted(n.attrs["alpha"] for n in graph.nodes if n.op == "LeakyRelu")
    assert slopes == pytest.approx([0.1, 0.2])
    compile_and_match(m, tmp_path / "out", "functions")


# -- 6. dynamic shapes --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dynamic_model(tmp_path_factory) -> tuple[onnx.ModelProto, Path]:
    m = zoo.transformer_encoder(batch="batch", seq="sequence")
    path = zoo.save(m, tmp_path_factory.mktemp("dyn") / "encoder.onnx")
    return m, path


def shapes_of(batch: int, seq: int) -> dict[str, list[int]]:
    return {"input_ids": [batch, seq], "attention_mask": [batch, seq]}


def test_symbolic_dims_without_shapes_name_the_input_and_dim(dynamic_model):
    m, _ = dynamic_model
    with pytest.raises(ShapeError, match=r"input 'input_ids' dim 0 is symbolic \('batch'\)"):
        edgec.compile(m, "/nonexistent/never-written")
    with pytest.raises(ShapeError, match=r"input 'attention_mask' dim 0 is symbolic \('batch'\)"):
        import_onnx(m, input_shapes={"input_ids": [1, 8]})
    seq_only = zoo.transformer_encoder(batch=1, seq="sequence")
    with pytest.raises(ShapeError, match=r"input 'input_ids' dim 1 is symbolic \('sequence'\).*"
                                         r"--input-shape input_ids=1,d1"):
        import_onnx(seq_only)


def test_cli_reports_a_missing_shape_in_one_line(dynamic_model, tmp_path):
    _, path = dynamic_model
    r = subprocess.run([sys.executable, "-m", "edgec.compiler.cli", "compile", str(path), "-o",
                        str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edgec: error: "), r.stderr
    assert "'input_ids'" in lines[0] and "'batch'" in lines[0] and "--input-shape" in lines[0]
    assert not (tmp_path / "out").exists()


def test_shape_subgraphs_fold_away(dynamic_model):
    m, _ = dynamic_model
    onnx_ops = [n.op_type for n in m.graph.node]
    assert onnx_ops.count("Shape") == 6 and "ConstantOfShape" in onnx_ops
    graph = import_onnx(m, input_shapes=shapes_of(2, 12))
    ops = {n.op for n in graph.nodes}
    assert not ops & {"Shape", "ConstantOfShape", "Concat", "Slice"}, ops
    # every Reshape has a constant target: the head views [2, 12, 4, 16] and back [2, 12, 64]
    targets = sorted(tuple(n.inputs[1].const.tolist()) for n in graph.nodes if n.op == "Reshape")
    assert targets == [(2, 12, 4, 16)] * 3 + [(2, 12, 64)]
    assert [tuple(v.shape) for v in graph.outputs] == [(2, 12, 64)]


def test_one_model_two_fixed_shapes(dynamic_model, tmp_path):
    """The same symbolic model, fixed once through the Python API and once through the CLI's
    --input-shape, each matched against onnxruntime at its own shape."""
    m, path = dynamic_model
    compile_and_match(m, tmp_path / "a", "enc_a", shapes_of(2, 12))
    out = tmp_path / "b"
    r = subprocess.run([sys.executable, "-m", "edgec.compiler.cli", "compile", str(path), "-o",
                        str(out), "--name", "enc_b", "--input-shape", "input_ids=1,24",
                        "--input-shape", "attention_mask=1,24"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    feeds = feeds_for(m, shapes_of(1, 24))
    got = edgec.load(out).run(feeds)["last_hidden_state"]
    want = onnxruntime_outputs(m, feeds)["last_hidden_state"]
    assert got.shape == (1, 24, 64) and rel_error(got, want) < TOL


def test_inconsistent_shapes_are_an_edgec_error(dynamic_model):
    m, _ = dynamic_model
    with pytest.raises(ShapeError, match="do not broadcast"):
        import_onnx(m, input_shapes={"input_ids": [2, 12], "attention_mask": [2, 10]})
