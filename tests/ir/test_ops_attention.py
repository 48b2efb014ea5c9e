"""RMSNormalization, RotaryEmbedding and Attention (opsets 23/24) at the registry level: every
non-expanded ONNX node test of the three ops imported and interpreted against its expected
outputs, further configurations against onnx's reference evaluator (onnxruntime 1.31 lacks
some of them), the text round trip, and the shape errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx.backend.test
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from edgec.errors import ShapeError
from edgec.frontends.onnx import import_onnx
from edgec.ir import DType, Graph, TensorType, interpret, parse, print_graph, verify

NODE_DIR = Path(onnx.backend.test.__file__).parent / "data" / "node"
NODE_TESTS = sorted(p.name for p in NODE_DIR.iterdir()
                    if p.name.startswith(("test_attention", "test_rms_normalization",
                                          "test_rotary_embedding"))
                    and not p.name.endswith("_expanded"))


def _tensors(folder: Path, kind: str) -> list[np.ndarray]:
    return [numpy_helper.to_array(onnx.load_tensor(str(p)))
            for p in sorted(folder.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))]


def test_all_node_tests_found():
    assert len(NODE_TESTS) == 19 + 8 + 64


@pytest.mark.parametrize("test", NODE_TESTS)
def test_node_test(test):
    """Import, interpret and match the expected outputs (the ONNX runner's rtol 1e-3)."""
    model = onnx.load(str(NODE_DIR / test / "model.onnx"))
    data = NODE_DIR / test / "test_data_set_0"
    g = import_onnx(model)
    verify(g)
    assert print_graph(parse(print_graph(g))) == print_graph(g)
    feeds = {v.name: a for v, a in zip(g.inputs, _tensors(data, "input"), strict=True)}
    got = interpret(g, feeds)
    for v, want in zip(g.outputs, _tensors(data, "output"), strict=True):
        assert got[v.name].dtype == want.dtype
        np.testing.assert_allclose(got[v.name], want, rtol=1e-3, atol=1e-7, err_msg=v.name)


# -- further configurations against onnx.reference ------------------------------------------

def _reference(op: str, inputs: list, attrs: dict, n_out: int, opset: int) -> list[np.ndarray]:
    names = [("" if a is None else f"x{i}") for i, a in enumerate(inputs)]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op, names, [f"y{i}" for i in range(n_out)], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in zip(names, inputs) if n],
        [onnx.ValueInfoProto(name=f"y{i}") for i in range(n_out)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    feeds = {n: a for n, a in zip(names, inputs) if n}
    return ReferenceEvaluator(model).run(None, feeds)


def _edgec(op: str, inputs: list, attrs: dict, n_out: int) -> list[np.ndarray]:
    g = Graph("one")
    vals = [None if a is None else g.add_input(f"x{i}", TensorType(a.shape,
                                                                   DType.from_numpy(a.dtype)))
            for i, a in enumerate(inputs)]
    while vals and vals[-1] is None:
        vals.pop()
    g.outputs = g.add_node(op, vals, attrs, num_outputs=n_out).outputs
    verify(g)
    got = interpret(g, {f"x{i}": a for i, a in enumerate(inputs) if a is not None})
    return [got[v.name] for v in g.outputs]


def rand(*shape, seed=0, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _compare(op, inputs, attrs, n_out, opset=24, rtol=1e-5, atol=1e-6):
    want = _reference(op, inputs, attrs, n_out, opset)
    got = _edgec(op, inputs, attrs, n_out)
    for k, (a, w) in enumerate(zip(got, want, strict=True)):
        assert a.shape == w.shape and a.dtype == w.dtype, f"output {k}"
        np.testing.assert_allclose(a, w, rtol=rtol, atol=atol, err_msg=f"output {k}")


@pytest.mark.parametrize("attrs,n_out,boolean", [
    ({"is_causal": 1, "qk_matmul_output_mode": 2}, 4, False),
    ({"scale": 0.3, "softcap": 1.5, "qk_matmul_output_mode": 3}, 4, True),
    ({"qk_matmul_output_mode": 1, "softcap": 4.0}, 4, True),
    ({"softmax_precision": 1, "is_causal": 1}, 3, False),
])
def test_attention_gqa_past_mask(attrs, n_out, boolean):
    """4-D grouped-query attention with a past, a broadcast mask narrower than the keys, and
    each qk_matmul_output_mode. (onnx.reference turns a boolean mask into NaNs when is_causal
    is set, 0 * -inf, so the causal cases take a float mask.)"""
    keep = np.random.default_rng(5).random((2, 1, 3, 6)) < 0.8
    keep[..., 0] = True  # every row keeps a key
    mask = keep if boolean else np.where(keep, rand(2, 1, 3, 6, seed=6), -np.inf)
    inputs = [rand(2, 4, 3, 5), rand(2, 2, 4, 5, seed=1), rand(2, 2, 4, 7, seed=2), mask,
              rand(2, 2, 3, 5, seed=3), rand(2, 2, 3, 7, seed=4)]
    _compare("Attention", inputs, attrs, n_out)


def test_attention_3d_float_mask_and_padding():
    """3-D inputs, a float mask, and nonpad_kv_seqlen (opset 24) with is_causal (a per-batch
    mask: onnx.reference cannot add the padding to a smaller one)."""
    inputs = [rand(2, 5, 12), rand(2, 5, 6, seed=1), rand(2, 5, 8, seed=2),
              rand(2, 1, 5, 5, seed=3), None, None, np.array([5, 3], np.int64)]
    _compare("Attention", inputs, {"q_num_heads": 2, "kv_num_heads": 1, "is_causal": 1}, 1)


@pytest.mark.parametrize("attrs,with_pos", [({}, True), ({"interleaved": 1}, False),
                                            ({"rotary_embedding_dim": 2, "num_heads": 3}, True)])
def test_rotary_embedding_3d(attrs, with_pos):
    attrs = {"num_heads": 3, **attrs}
    pos = np.array([[0, 4, 2, 7]], np.int64)
    rot = attrs.get("rotary_embedding_dim") or 6
    cache = (8, rot // 2) if with_pos else (1, 4, rot // 2)
    _compare("RotaryEmbedding", [rand(1, 4, 18), rand(*cache, seed=1), rand(*cache, seed=2),
                                 pos if with_pos else None], attrs, 1, opset=23)


def test_rms_normalization_broadcast_scale():
    _compare("RMSNormalization", [rand(2, 3, 4), rand(1, 4, seed=1)], {"axis": 1}, 1, opset=23,
             rtol=1e-5)


def test_float16_computes_in_float32():
    """float16 attention: the scores and softmax in float32, rounded once (so within one
    float16 rounding of a float64 computation)."""
    q, k, v = rand(1, 2, 3, 4), rand(1, 2, 5, 4, seed=1), rand(1, 2, 5, 4, seed=2)
    y = _edgec("Attention", [q.astype(np.float16), k.astype(np.float16), v.astype(np.float16)],
               {}, 1)[0]
    q64, k64, v64 = (a.astype(np.float16).astype(np.float64) for a in (q, k, v))
    s = q64 @ k64.transpose(0, 1, 3, 2) / 2.0
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v64
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)


# -- shape errors -------------------------------------------------------------------------

def _node(op, types, attrs):
    g = Graph("bad")
    vals = [None if t is None else g.add_input(f"x{i}", t) for i, t in enumerate(types)]
    g.add_node(op, vals, attrs)


T = TensorType
F32 = DType.F32


@pytest.mark.parametrize("types,attrs,msg", [
    ([T((2, 4, 24), F32)] * 3, {}, "q_num_heads and kv_num_heads"),
    ([T((1, 3, 4, 8), F32), T((1, 2, 4, 8), F32), T((1, 2, 4, 8), F32)], {}, "not a multiple"),
    ([T((1, 2, 4, 8), F32), T((1, 2, 4, 6), F32), T((1, 2, 4, 8), F32)], {}, "head size"),
    ([T((1, 2, 4, 8), F32)] * 3 + [T((4, 5), F32)], {}, "attn_mask"),
    ([T((1, 2, 4, 8), F32)] * 3 + [None, T((1, 2, 3, 8), F32)], {}, "together"),
    ([T((1, 2, 4, 8), F32)] * 3, {"qk_matmul_output_mode": 4}, "qk_matmul_output_mode"),
    ([T((1, 2, 4, 8), F32)] * 3, {"softmax_precision": 7}, "softmax_precision"),
])
def test_attention_errors(types, attrs, msg):
    with pytest.raises(ShapeError, match=msg):
        _node("Attention", types, attrs)


@pytest.mark.parametrize("op,types,attrs,msg", [
    ("RMSNormalization", [T((2, 3), F32), T((2,), F32)], {}, "does not broadcast"),
    ("RMSNormalization", [T((2, 3), F32), T((3,), F32)], {"axis": 2}, "out of range"),
    ("RotaryEmbedding", [T((1, 3, 8), F32), T((1, 3, 4), F32), T((1, 3, 4), F32)], {},
     "num_heads"),
    ("RotaryEmbedding", [T((1, 2, 3, 8), F32), T((1, 3, 3), F32), T((1, 3, 3), F32)], {},
     "caches must be"),
    ("RotaryEmbedding", [T((1, 2, 3, 8), F32), T((9, 4), F32), T((9, 4), F32),
                         T((1, 3), DType.I32)], {}, "position_ids"),
    ("RotaryEmbedding", [T((1, 2, 3, 8), F32), T((1, 3, 4), F32), T((1, 3, 4), F32)],
     {"rotary_embedding_dim": 5}, "even"),
])
def test_other_errors(op, types, attrs, msg):
    with pytest.raises(ShapeError, match=msg):
        _node(op, types, attrs)
