"""Normalization-family ops (instance, group, Lp and mean-variance normalization, LRN, Lp
pools, MaxUnpool, RoiAlign) against onnxruntime, and their shape errors."""

import numpy as np
import pytest
from opcheck import check, rand

from edgec.errors import ShapeError
from edgec.ir import DType, Graph, TensorType


@pytest.mark.parametrize("shape,eps", [((2, 3, 4, 5), 1e-5), ((1, 4, 7), 0.01),
                                       ((2, 2, 3, 2, 2), 1e-3)])
def test_instance_normalization(shape, eps):
    c = shape[1]
    check("InstanceNormalization", [rand(*shape), rand(c, seed=1), rand(c, seed=2)],
          {"epsilon": eps}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 3), 3), ((1, 4, 5), 1), ((2, 4, 2, 2), 4)])
def test_group_normalization(shape, groups):
    c = shape[1]
    check("GroupNormalization", [rand(*shape), rand(c, seed=1), rand(c, seed=2)],
          {"num_groups": groups, "epsilon": 1e-3}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis,p", [(-1, 2), (1, 1), (0, 2)])
def test_lp_normalization(axis, p):
    check("LpNormalization", [rand(2, 3, 4)], {"axis": axis, "p": p})


def test_lp_normalization_zero_norm_keeps_zeros():
    check("LpNormalization", [np.zeros((2, 3), np.float32)], {"axis": 1})


@pytest.mark.parametrize("axes", [None, [1], [0, 1, 2, 3], [2, 3]])
def test_mean_variance_normalization(axes):
    check("MeanVarianceNormalization", [rand(2, 3, 4, 5)], {} if axes is None else
          {"axes": axes}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,attrs", [
    ((2, 5, 3, 3), {"size": 3, "alpha": 0.1, "beta": 0.6, "bias": 1.5}),
    ((1, 6, 3, 2), {"size": 5}),
    ((1, 3, 4, 4), {"size": 7, "alpha": 0.5}),  # a window wider than the channels
])
def test_lrn(shape, attrs):
    check("LRN", [rand(*shape, lo=-2, hi=2)], attrs)


def test_lrn_even_size():
    """onnxruntime only takes odd sizes; ONNX sums [c - 1, c + 2] for size 4."""
    x = rand(1, 5, 2, 2)
    g = Graph("lrn")
    g.outputs = list(g.add_node("LRN", [g.add_input("x", TensorType(x.shape, DType.F32))],
                                {"size": 4, "alpha": 0.4, "beta": 0.5, "bias": 1.0}).outputs)
    from edgec.ir import interpret

    got = interpret(g, {"x": x})[g.outputs[0].name]
    sq = np.pad(x * x, [(0, 0), (1, 2), (0, 0), (0, 0)])
    want = x / np.sqrt(1.0 + 0.1 * sum(sq[:, k:k + 5] for k in range(4)))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def pool_attrs(kernel, strides=None, pads=None, dilations=None, **kw):
    n = len(kernel)
    return {"kernel_shape": kernel, "strides": strides or [1] * n, "pads": pads or [0] * 2 * n,
            "dilations": dilations or [1] * n, **kw}


@pytest.mark.parametrize("shape,attrs", [
    ((1, 2, 7, 7), pool_attrs([3, 3], [2, 2], [1, 1, 1, 1], p=3)),
    ((2, 3, 9), pool_attrs([2], p=1)),
    ((1, 1, 6, 6), pool_attrs([2, 2], dilations=[2, 2])),
    ((1, 2, 6, 7), pool_attrs([3, 2], [2, 2], ceil_mode=1, p=2)),
    ((1, 1, 4, 3, 5), pool_attrs([2, 2, 3], [1, 2, 2], [0, 1, 1, 1, 0, 0], p=4)),
])
def test_lp_pool(shape, attrs):
    check("LpPool", [rand(*shape)], attrs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(p):
    check("GlobalLpPool", [rand(2, 3, 4, 5)], {"p": p}, rtol=1e-4, atol=1e-5)


def test_max_unpool():
    x = rand(1, 2, 2, 2)
    idx = np.array([0, 3, 9, 14, 16, 19, 27, 30], np.int64).reshape(1, 2, 2, 2)
    attrs = pool_attrs([2, 2], [2, 2])
    del attrs["dilations"]
    check("MaxUnpool", [x, idx], attrs)
    check("MaxUnpool", [x, idx, np.array([1, 2, 5, 5], np.int64)], attrs, consts=(2,))


def test_max_unpool_of_max_pool_indices():
    x = rand(1, 3, 6, 5)
    pool = pool_attrs([2, 2], [2, 2], [0, 0, 0, 1])
    from edgec.ir.ops.nn import max_pool

    v, idx = max_pool(x, ceil_mode=0, storage_order=0, **pool)
    del pool["dilations"]
    check("MaxUnpool", [v, idx, np.array(x.shape, np.int64)], pool, consts=(2,))


ROIS = np.array([[0, 0, 7, 9], [0.5, 5.2, 4, 9.7], [5, 5, 9, 9], [-3, -2, 2, 1],
                 [3, 3, 3.2, 3.1], [1, 1, 30, 30]], np.float32)  # inside, past edges, tiny


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("sampling_ratio,scale,out_h,out_w", [(0, 1.0, 3, 4), (2, 0.5, 2, 2),
                                                               (1, 1.7, 1, 1)])
def test_roi_align(mode, ctm, sampling_ratio, scale, out_h, out_w):
    x = rand(2, 3, 10, 8, lo=-2, hi=2)
    check("RoiAlign", [x, ROIS, np.array([0, 1, 1, 0, 1, 1], np.int64)],
          {"mode": mode, "coordinate_transformation_mode": ctm,
           "sampling_ratio": sampling_ratio, "spatial_scale": scale, "output_height": out_h,
           "output_width": out_w}, rtol=1e-4, atol=1e-5)


def one_node(op, shapes, attrs, consts=None):
    g = Graph("g")
    ins = [g.add_input(f"x{i}", TensorType(s, dt)) for i, (s, dt) in enumerate(shapes)]
    ins += [g.const(c) for c in consts or []]
    return g.add_node(op, ins, attrs)


@pytest.mark.parametrize("op,shapes,attrs,consts,match", [
    ("GroupNormalization", [((1, 6, 2), DType.F32), ((6,), DType.F32), ((6,), DType.F32)],
     {"num_groups": 4}, None, "divide"),
    ("GroupNormalization", [((1, 6, 2), DType.F32), ((3,), DType.F32), ((3,), DType.F32)],
     {"num_groups": 3}, None, "one per channel"),
    ("InstanceNormalization", [((1, 6, 2), DType.I64), ((6,), DType.I64), ((6,), DType.I64)],
     {}, None, "float"),
    ("LpNormalization", [((2, 3), DType.F32)], {"p": 3}, None, "p must be 1 or 2"),
    ("MeanVarianceNormalization", [((2, 3), DType.F32)], {"axes": [0, 2]}, None,
     "out of range"),
    ("MaxUnpool", [((1, 1, 2, 2), DType.F32), ((1, 1, 2, 2), DType.I64),
                   ((4,), DType.I64)], {"kernel_shape": [2, 2], "strides": [2, 2],
                                        "pads": [0] * 4}, None, "must be a constant"),
    ("MaxUnpool", [((1, 1, 2, 2), DType.F32), ((1, 1, 2, 2), DType.I64)],
     {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0] * 4},
     [np.array([1, 2, 4, 4], np.int64)], "output_shape"),
    ("RoiAlign", [((1, 2, 4, 4), DType.F32), ((3, 4), DType.F32), ((3,), DType.I32)], {},
     None, "batch_indices"),
    ("RoiAlign", [((1, 2, 4, 4), DType.F32), ((3, 4), DType.F32), ((3,), DType.I64)],
     {"mode": "median"}, None, "mode"),
    ("RoiAlign", [((0, 2, 4, 4), DType.F32), ((3, 4), DType.F32), ((3,), DType.I64)], {},
     None, "no image or an empty map"),  # a batch index has no image to land on
    ("RoiAlign", [((1, 2, 0, 4), DType.F32), ((3, 4), DType.F32), ((3,), DType.I64)], {},
     None, "no image or an empty map"),
])
def test_shape_errors(op, shapes, attrs, consts, match):
    with pytest.raises(ShapeError, match=match):
        one_node(op, shapes, attrs, consts)


# -- the ONNX forms the frontend converts ---------------------------------------------------

def onnx_model(node, inputs: dict, inits: dict, opset: int):
    from onnx import helper, numpy_helper

    vis = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in inputs.items()]
    graph = helper.make_graph([node], "g", vis, [helper.make_empty_tensor_value_info("y")],
                              initializer=[numpy_helper.from_array(v, k)
                                           for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def import_and_compare(model, feeds, rtol=1e-5, atol=1e-6):
    import onnxruntime as ort

    from edgec.frontends.onnx import import_onnx
    from edgec.ir import interpret

    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = interpret(import_onnx(model), feeds)["y"]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("const", [True, False])
def test_group_normalization_opset_18_per_group_scale(const):
    from onnx import helper

    x, s, b = rand(2, 6, 3, 3), rand(3, seed=1), rand(3, seed=2)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3,
                            epsilon=1e-3)
    params = {"s": s, "b": b}
    model = onnx_model(node, {"x": x} if const else {"x": x, **params}, params if const else {},
                       18)
    import_and_compare(model, {"x": x} if const else {"x": x, **params}, rtol=1e-4, atol=1e-5)


def test_max_unpool_default_strides_and_pads():
    from onnx import helper

    x = rand(1, 1, 2, 2)
    idx = np.array([0, 4, 5, 8], np.int64).reshape(1, 1, 2, 2)
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2])
    import_and_compare(onnx_model(node, {"x": x}, {"i": idx}, 11), {"x": x})
