"""nn ops (convolutions, matrix products, pools, normalizations, softmax) against onnxruntime."""

import numpy as np
import pytest
from opcheck import check, rand

from edgec.errors import ShapeError
from edgec.ir import DType, Graph, TensorType


def conv_attrs(nsp, strides=None, pads=None, dilations=None, group=1):
    return {"strides": strides or [1] * nsp, "pads": pads or [0] * (2 * nsp),
            "dilations": dilations or [1] * nsp, "group": group}


CONV_CASES = [
    # (x shape, w shape, attrs, bias)
    ((1, 3, 8, 8), (4, 3, 3, 3), conv_attrs(2), True),
    ((2, 4, 9, 7), (6, 2, 3, 2), conv_attrs(2, strides=[2, 1], pads=[1, 0, 2, 1], group=2), True),
    ((1, 6, 10, 10), (6, 1, 3, 3), conv_attrs(2, pads=[1, 1, 1, 1], group=6), False),  # depthwise
    ((1, 4, 11, 11), (8, 4, 3, 3), conv_attrs(2, strides=[2, 3], dilations=[2, 1]), True),
    ((1, 3, 12, 12), (5, 3, 1, 1), conv_attrs(2, strides=[2, 2]), False),
    ((2, 3, 16), (4, 3, 5), conv_attrs(1, strides=[2], pads=[2, 1], dilations=[2]), True),  # 1-D
    ((1, 2, 5, 6, 4), (3, 2, 3, 2, 2), conv_attrs(3, pads=[1, 0, 1, 0, 1, 1]), True),  # 3-D
    ((1, 4, 7, 7), (4, 2, 3, 3), conv_attrs(2, strides=[2, 2], dilations=[2, 2], pads=[2] * 4,
                                            group=2), True),
]


@pytest.mark.parametrize("xs,ws,attrs,bias", CONV_CASES)
def test_conv(xs, ws, attrs, bias):
    b = rand(ws[0], seed=3) if bias else None
    check("Conv", [rand(*xs), rand(*ws, seed=2), b], attrs, consts=(1, 2), rtol=1e-4, atol=1e-5)


CONVT_CASES = [
    ((1, 3, 4, 4), (3, 2, 3, 3), dict(conv_attrs(2), output_padding=[0, 0]), True),
    ((1, 4, 5, 3), (4, 3, 3, 3), dict(conv_attrs(2, strides=[2, 2], pads=[1, 1, 1, 1]),
                                      output_padding=[1, 1]), True),
    ((2, 4, 4, 4), (4, 1, 2, 3), dict(conv_attrs(2, strides=[2, 1], dilations=[1, 2], group=2,
                                                 pads=[0, 1, 1, 0]), output_padding=[1, 0]), False),
    ((1, 2, 6), (2, 3, 4), dict(conv_attrs(1, strides=[3], pads=[1, 2]), output_padding=[2]), True),
    ((1, 2, 3, 3, 2), (2, 2, 2, 2, 2), dict(conv_attrs(3, strides=[2, 1, 2]),
                                            output_padding=[0, 0, 1]), True),
    ((1, 6, 5, 5), (6, 1, 3, 3), dict(conv_attrs(2, strides=[2, 2], pads=[1] * 4, group=6),
                                      output_padding=[1, 1]), True),  # depthwise
]


@pytest.mark.parametrize("xs,ws,attrs,bias", CONVT_CASES)
def test_conv_transpose(xs, ws, attrs, bias):
    b = rand(ws[1] * attrs["group"], seed=3) if bias else None
    check("ConvTranspose", [rand(*xs), rand(*ws, seed=2), b], attrs, consts=(1, 2),
          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("a,b", [
    ((3, 4), (4, 5)), ((2, 3, 4), (4, 6)), ((4,), (4, 3)), ((3, 4), (4,)), ((4,), (4,)),
    ((2, 1, 3, 4), (5, 4, 2)), ((1, 2, 3), (2, 3, 2)),
])
def test_matmul(a, b):
    check("MatMul", [rand(*a), rand(*b, seed=1)], rtol=1e-5)


def test_matmul_int():
    check("MatMul", [rand(3, 4, dtype=np.int32, lo=-9, hi=9),
                     rand(4, 2, dtype=np.int32, seed=1, lo=-9, hi=9)])


@pytest.mark.parametrize("ta,tb,c,alpha,beta", [
    (0, 0, None, 1.0, 1.0), (1, 0, (5,), 0.5, 2.0), (0, 1, (3, 5), 1.0, 1.0),
    (1, 1, (3, 1), 2.0, 0.25), (0, 0, (), 1.0, -1.0), (0, 0, (1, 5), 1.5, 1.0),
])
def test_gemm(ta, tb, c, alpha, beta):
    a = rand(*((4, 3) if ta else (3, 4)))
    b = rand(*((5, 4) if tb else (4, 5)), seed=1)
    cc = None if c is None else rand(*c, seed=2)
    check("Gemm", [a, b, cc], {"transA": ta, "transB": tb, "alpha": alpha, "beta": beta},
          consts=(1, 2))


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3), (1, 4, 6)])
def test_batch_normalization(shape):
    c = shape[1]
    var = rand(c, seed=4, lo=0.1, hi=2.0)
    check("BatchNormalization", [rand(*shape), rand(c, seed=1), rand(c, seed=2),
                                 rand(c, seed=3), var], {"epsilon": 1e-3}, consts=(1, 2, 3, 4))


def test_batch_normalization_training_is_refused():
    g = Graph()
    x = g.add_input("x", TensorType((1, 2, 3), DType.F32))
    cs = [g.const(np.ones(2, np.float32)) for _ in range(4)]
    with pytest.raises(ShapeError, match="training_mode"):
        g.add_node("BatchNormalization", [x, *cs], {"training_mode": 1})


def test_conv_bad_group_is_a_shape_error():
    g = Graph()
    x = g.add_input("x", TensorType((1, 4, 5, 5), DType.F32))
    w = g.const(np.ones((4, 3, 3, 3), np.float32))
    with pytest.raises(ShapeError, match="group"):
        g.add_node("Conv", [x, w], conv_attrs(2, group=2))


def pool_attrs(k, strides=None, pads=None, dilations=None, ceil_mode=0):
    n = len(k)
    return {"kernel_shape": list(k), "strides": strides or [1] * n, "pads": pads or [0] * (2 * n),
            "dilations": dilations or [1] * n, "ceil_mode": ceil_mode}


POOL_CASES = [
    ((1, 2, 8, 8), pool_attrs((2, 2), strides=[2, 2])),
    ((2, 3, 7, 9), pool_attrs((3, 3), strides=[2, 2], pads=[1, 1, 1, 1])),
    ((1, 2, 7, 7), pool_attrs((3, 3), strides=[2, 2], ceil_mode=1)),
    ((1, 2, 6, 7), pool_attrs((2, 3), strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1)),
    ((1, 1, 5, 5), pool_attrs((2, 2), strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1)),
    ((1, 2, 9, 8), pool_attrs((2, 2), strides=[1, 2], dilations=[2, 2], pads=[1, 1, 0, 1])),
    ((2, 3, 10), pool_attrs((3,), strides=[2], pads=[1, 2], ceil_mode=1)),
    ((1, 2, 4, 5, 6), pool_attrs((2, 2, 3), strides=[1, 2, 2], pads=[0, 1, 1, 1, 0, 1])),
    ((1, 1, 8, 8), pool_attrs((3, 3), strides=[3, 3], dilations=[2, 1], ceil_mode=1)),
]


@pytest.mark.parametrize("shape,attrs", POOL_CASES)
def test_max_pool(shape, attrs):
    check("MaxPool", [rand(*shape)], attrs)


@pytest.mark.parametrize("shape,attrs", POOL_CASES)
@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(shape, attrs, storage_order):
    check("MaxPool", [rand(*shape)], attrs | {"storage_order": storage_order}, n_outputs=2)


def test_max_pool_int8():
    check("MaxPool", [rand(1, 2, 5, 5, dtype=np.int8, lo=-128, hi=127)],
          pool_attrs((2, 2), pads=[1, 1, 1, 1], strides=[2, 2]))


@pytest.mark.parametrize("shape,attrs", POOL_CASES)
@pytest.mark.parametrize("include_pad", [0, 1])
def test_average_pool(shape, attrs, include_pad):
    check("AveragePool", [rand(*shape)], attrs | {"count_include_pad": include_pad})


@pytest.mark.parametrize("opname", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 4, 7), (1, 2, 3, 2, 2)])
def test_global_pool(opname, shape):
    check(opname, [rand(*shape)])


@pytest.mark.parametrize("opname", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_softmax(opname, axis):
    check(opname, [rand(2, 3, 5, lo=-10, hi=10)], {"axis": axis})


@pytest.mark.parametrize("shape,axis,scale_shape,bias", [
    ((2, 3, 8), -1, (8,), True), ((2, 3, 8), 1, (3, 8), True), ((4, 6), -1, (6,), False),
    ((2, 3, 4), 0, (3, 4), True), ((2, 3, 8), -1, (1,), True),
])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_layer_normalization(shape, axis, scale_shape, bias, n_outputs):
    b = rand(*scale_shape, seed=2) if bias else None
    check("LayerNormalization", [rand(*shape, lo=-3, hi=3), rand(*scale_shape, seed=1), b],
          {"axis": axis, "epsilon": 1e-4}, consts=(1, 2), n_outputs=n_outputs, rtol=1e-4,
          atol=1e-5)


COORD_MODES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
               "asymmetric"]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
F32 = np.float32


def resize(x, scales=None, sizes=None, roi=None, **attrs):
    args = [x, roi, None if scales is None else np.array(scales, F32),
            None if sizes is None else np.array(sizes, np.int64)]
    check("Resize", args, attrs, consts=(1, 2, 3), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("coord", COORD_MODES)
@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
@pytest.mark.parametrize("scales", [(1, 1, 2, 3), (1, 1, 0.5, 0.75), (1, 1, 1.5, 0.6)])
def test_resize_nearest(coord, nearest_mode, scales):
    resize(rand(1, 2, 4, 5), scales, mode="nearest", coordinate_transformation_mode=coord,
           nearest_mode=nearest_mode)


@pytest.mark.parametrize("coord", COORD_MODES)
@pytest.mark.parametrize("scales,sizes", [((1, 1, 2, 2), None), ((1, 1, 0.6, 0.5), None),
                                          (None, (1, 2, 7, 3)), (None, (1, 2, 1, 9))])
def test_resize_linear(coord, scales, sizes):
    resize(rand(1, 2, 4, 6), scales, sizes, mode="linear", coordinate_transformation_mode=coord)


@pytest.mark.parametrize("coord", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("exclude_outside,a", [(0, -0.75), (1, -0.5)])
@pytest.mark.parametrize("scales", [(1, 1, 2, 1.5), (1, 1, 0.5, 0.8)])
def test_resize_cubic(coord, exclude_outside, a, scales):
    resize(rand(1, 2, 5, 6), scales, mode="cubic", coordinate_transformation_mode=coord,
           exclude_outside=exclude_outside, cubic_coeff_a=a)


def test_resize_linear_3d_and_sizes_with_axes():
    resize(rand(1, 1, 3, 4, 5), (1, 1, 2, 1.5, 0.5), mode="linear")
    resize(rand(1, 2, 4, 6), sizes=(8, 3), mode="linear", axes=[2, 3])
    resize(rand(2, 3, 4), (2.0,), mode="nearest", axes=[-1])


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller", "stretch"])
def test_resize_keep_aspect_ratio(policy):
    resize(rand(1, 2, 4, 6), sizes=(7, 7), axes=[2, 3], keep_aspect_ratio_policy=policy,
           mode="nearest")


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_tf_crop_and_resize(mode):
    roi = np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.3], F32)
    resize(rand(1, 2, 5, 6), sizes=(1, 2, 4, 5), roi=roi, mode=mode,
           coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0)


def test_resize_nearest_int():
    resize(rand(1, 1, 3, 3, dtype=np.uint8, lo=0, hi=255), (1, 1, 2.5, 1.5))


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("case", [
    dict(scales=(1, 1, 0.6, 0.6)),
    dict(sizes=(1, 2, 3, 2)),
    dict(scales=(1, 1, 0.3, 1.5), exclude_outside=1),  # one axis downsampled, one up
    dict(scales=(1, 1, 0.45, 0.8), coordinate_transformation_mode="align_corners"),
    dict(sizes=(2, 3), axes=[3, 2], coordinate_transformation_mode="asymmetric"),
])
def test_resize_antialias(mode, case):
    """The kernel stretched by 1/scale when downsampling (onnxruntime implements it)."""
    case = dict(case)
    resize(rand(1, 2, 7, 9), case.pop("scales", None), case.pop("sizes", None), mode=mode,
           antialias=1, **case)


def test_resize_antialias_node_test_values():
    """The expected output of onnx's test_resize_downsample_scales_linear_antialias."""
    from edgec.ir import get_op
    x = np.arange(1, 17, dtype=F32).reshape(1, 1, 4, 4)
    y = get_op("Resize").reference(
        x, None, np.array([1, 1, 0.6, 0.6], F32), None, antialias=1, axes=None,
        coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75, exclude_outside=0,
        extrapolation_value=0.0, keep_aspect_ratio_policy="stretch", mode="linear",
        nearest_mode="round_prefer_floor")
    np.testing.assert_allclose(y, [[[[2.875, 4.5], [9.375, 11.0]]]], rtol=1e-6)
