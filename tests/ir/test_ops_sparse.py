"""The sparse ops (ir/ops/sparse.py): "ConvStage" then "SparseConv" compute onnxruntime's
Conv on the same weights, "SparseMatMul" the product with the decoded weight; their shape
inference and the decoders refuse what does not fit."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from edgec.errors import EdgecError, ShapeError
from edgec.ir import DType, Graph, TensorType
from edgec.ir.registry import get_op
from edgec.ir.sparse import (
    NMWeights,
    SlicedWeights,
    SparseWeights,
    Staging,
    decode_sliced,
    encode_nm,
    encode_sliced,
    encode_sparse,
)


def ort_conv(x, w, b, pads, strides):
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=pads, strides=strides)], "c",
        [helper.make_tensor_value_info("x", T.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", T.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("k,pads,strides", [(3, [1, 1, 1, 1], [1, 1]), (3, [1, 0, 0, 1], [2, 2]),
                                            (5, [2, 2, 2, 2], [2, 1]), (1, [0] * 4, [2, 2])])
@pytest.mark.parametrize("rows,cols", [(1, 1), (4, 1), (1, 4), (4, 4)])
def test_stage_then_sparse_conv_is_the_conv(k, pads, strides, rows, cols):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4, k, k)).astype(np.float32)
    w[rng.random(w.shape) < 0.6] = 0
    b = rng.standard_normal(8).astype(np.float32)
    z_shape = ort_conv(x, w, b, pads, strides).shape
    z = rng.standard_normal(z_shape).astype(np.float32)
    want = np.maximum(ort_conv(x, w, b, pads, strides) + z, 0)
    xs = get_op("ConvStage").reference(x, kernel_shape=[k, k], pads=pads, strides=strides)
    st = Staging.of((k, k), pads, strides, z_shape[2:])
    assert xs.shape == (2, 4 * st.phases, st.hq, st.wq)
    ws = st.weights(w)
    # blocks of `cols` input channels: their planes lie the stride phases apart
    enc = SparseWeights(rows, cols, st.phases if cols > 1 else 1)
    v, i, p = encode_sparse(ws, enc, st.hq, st.wq)
    got = get_op("SparseConv").reference(xs, v, i, p, b, z, wenc=str(enc),
                                         wshape=list(ws.shape), activation="Relu",
                                         activation_params=[])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # block rows stored in another order: `order` names each one's channels, same result
    order = np.random.default_rng(rows).permutation(8 // rows)
    vo, io, po = encode_sparse(ws.reshape(8 // rows, rows, -1)[order]
                               .reshape(ws.shape), enc, st.hq, st.wq)
    got = get_op("SparseConv").reference(xs, vo, io, po, b, z, wenc=str(enc),
                                         wshape=list(ws.shape), activation="Relu",
                                         activation_params=[], order=order.tolist())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k,pads,strides", [(3, [1, 1, 1, 1], [1, 1]), (3, [1, 0, 0, 1], [2, 2])])
def test_stage_then_nm_sparse_conv_is_the_conv(k, pads, strides):
    from edgec.passes.prune import prune_weight

    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 8, 9, 8)).astype(np.float32)
    w = rng.standard_normal((5, 8, k, k)).astype(np.float32)
    w = prune_weight(w.reshape(5, -1), 0.0, "2:4", k * k).reshape(w.shape)
    b = rng.standard_normal(5).astype(np.float32)
    want = ort_conv(x, w, b, pads, strides)
    xs = get_op("ConvStage").reference(x, kernel_shape=[k, k], pads=pads, strides=strides)
    st = Staging.of((k, k), pads, strides, want.shape[2:])
    ws = st.weights(w)
    enc = NMWeights(2, 4, st.phases)
    v, i, p = encode_nm(ws, enc, st.hq, st.wq)
    got = get_op("SparseConv").reference(xs, v, i, p, b, wenc=str(enc), wshape=list(ws.shape),
                                         activation="", activation_params=[])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    g = Graph()
    ins = [g.add_input("x", TensorType(xs.shape, DType.F32)), g.const(v), g.const(i),
           g.const(p)]
    attrs = {"wenc": str(enc), "wshape": list(ws.shape)}
    assert g.add_node("SparseConv", ins, attrs).output.shape == want.shape
    for bad, match in [((g.const(v), g.const(i.astype(np.int32)), g.const(p)), "uint8"),
                       ((g.const(v[:-2]), g.const(i[:-2]), g.const(p)), "per group"),
                       ((g.const(v), g.const(i), g.const(np.arange(999, dtype=np.int32))),
                        "at most")]:
        with pytest.raises(ShapeError, match=match):
            g.add_node("SparseConv", [ins[0], *bad], attrs)


def test_shape_inference_refuses_what_does_not_fit():
    g = Graph()
    x = g.add_input("x", TensorType((1, 4, 5, 5), DType.F32))
    v = g.const(np.ones(3, np.float32))
    i = g.const(np.zeros(3, np.int32))
    p = g.const(np.array([0, 1, 3], np.int32))
    ok = {"wenc": "csr", "wshape": [2, 4, 3, 3]}
    assert g.add_node("SparseConv", [x, v, i, p], ok).output.shape == (1, 2, 3, 3)
    for attrs, match in [({"wenc": "csr", "wshape": [2, 3, 3, 3]}, "wshape"),
                         ({"wenc": "csr", "wshape": [2, 4, 6, 3]}, "wshape"),
                         ({"wenc": "bcsr 4x1", "wshape": [2, 4, 3, 3]}, "row pointers"),
                         ({"wenc": "coo", "wshape": [2, 4, 3, 3]}, "encoding"),
                         ({"wenc": "bcsr 1x4 step 2", "wshape": [2, 4, 3, 3]}, "whole blocks"),
                         ({**ok, "order": [1, 1]}, "not a permutation"),
                         ({**ok, "order": [0, 1, 2]}, "not a permutation")]:
        with pytest.raises(EdgecError, match=match):
            g.add_node("SparseConv", [x, v, i, p], attrs)
    with pytest.raises(ShapeError, match="window does not fit"):
        g.add_node("ConvStage", [x], {"kernel_shape": [7, 7], "pads": [0] * 4,
                                      "strides": [1, 1]})
    with pytest.raises(ShapeError, match="2-D convolution"):
        g.add_node("ConvStage", [x], {"kernel_shape": [3], "pads": [0] * 4, "strides": [1, 1]})


@pytest.mark.parametrize("c", [1, 4, 16])
def test_sparse_matmul_is_the_product(c):
    rng = np.random.default_rng(c)
    a = rng.standard_normal((3, 37)).astype(np.float32)
    b = rng.standard_normal((37, 21)).astype(np.float32)
    b[rng.random(b.shape) < 0.8] = 0
    bias = rng.standard_normal(21).astype(np.float32)
    v, i, p = encode_sliced(b, SlicedWeights(c))
    assert p.size == -(-21 // c) + 1 and np.all(np.diff(p) % 2 == 0)  # even widths
    assert np.array_equal(decode_sliced(v, i, p, SlicedWeights(c), [37, 21]), b)
    got = get_op("SparseMatMul").reference(a, v, i, p, bias, wenc=f"sell {c}", wshape=[37, 21],
                                           activation="Tanh", activation_params=[])
    np.testing.assert_allclose(got, np.tanh(a.astype(np.float64) @ b + bias), rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(EdgecError, match="do not fit"):
        decode_sliced(v, i, p[:-1], SlicedWeights(c), [37, 21])
    with pytest.raises(EdgecError, match="outside"):
        decode_sliced(v, i + 37, p, SlicedWeights(c), [37, 21])
