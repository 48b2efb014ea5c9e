"""Tensor and shape ops against onnxruntime."""

import numpy as np
import pytest
from opcheck import check, rand

from edgec.errors import ShapeError
from edgec.ir import DType, Graph, TensorType


def i64(*v):
    return np.array(v, dtype=np.int64)


@pytest.mark.parametrize("shape_in,target,allowzero", [
    ((2, 3, 4), (4, -1), 0), ((2, 3, 4), (0, -1), 0), ((2, 3, 4), (0, 0, 2, 2), 0),
    ((2, 3, 4), (-1,), 0), ((2, 3, 4), (24, 1), 1), ((0, 3), (3, 0), 1), ((2, 3, 4), (0, 12), 0),
])
def test_reshape(shape_in, target, allowzero):
    check("Reshape", [rand(*shape_in), i64(*target)], {"allowzero": allowzero}, consts=(1,))


def test_reshape_needs_constant_shape():
    g = Graph()
    x = g.add_input("x", TensorType((2, 3), DType.F32))
    s = g.add_input("s", TensorType((1,), DType.I64))
    with pytest.raises(ShapeError, match="must be a constant"):
        g.add_node("Reshape", [x, s])


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(axis):
    check("Flatten", [rand(2, 3, 4)], {"axis": axis})


@pytest.mark.parametrize("start,end", [(0, None), (1, None), (-2, None), (0, -1), (1, 2),
                                       (-10, 10), (2, 1)])
def test_shape(start, end):
    attrs = {"start": start} | ({} if end is None else {"end": end})
    check("Shape", [rand(2, 3, 4)], attrs)


@pytest.mark.parametrize("axis,idx", [
    (0, i64(0, 2, -1)), (1, i64(-1, 0)), (-1, i64([0, 3], [-4, 1])), (0, i64(1)),
    (2, np.array([3, -2, 0], np.int32)),
])
def test_gather(axis, idx):
    check("Gather", [rand(3, 4, 4), idx], {"axis": axis}, consts=(1,))


def test_gather_runtime_indices():
    check("Gather", [rand(5, 2), i64(4, -5, 0)], {"axis": 0})


def test_gather_out_of_range():
    g = Graph()
    x = g.add_input("x", TensorType((3,), DType.F32))
    with pytest.raises(ShapeError, match="out of range"):
        g.add_node("Gather", [x, g.const(i64(3))])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    shapes = [[2, 3, 4] for _ in range(3)]
    for k, s in enumerate(shapes):
        s[axis] = k + 1
    check("Concat", [rand(*s, seed=k) for k, s in enumerate(shapes)], {"axis": axis})


def test_concat_int_with_constant():
    check("Concat", [i64(1, 2), i64(3)], {"axis": 0}, consts=(1,))


@pytest.mark.parametrize("shape,axes", [((1, 3, 1, 2), None), ((1, 3, 1, 2), i64(0, -2)),
                                        ((3, 1), i64(1))])
def test_squeeze(shape, axes):
    check("Squeeze", [rand(*shape), axes], consts=(1,))


@pytest.mark.parametrize("shape,axes", [((3, 4), i64(0)), ((3, 4), i64(-1, 1)), ((), i64(0)),
                                        ((2, 3), i64(3, 0))])
def test_unsqueeze(shape, axes):
    check("Unsqueeze", [rand(*shape), axes], consts=(1,))


def test_identity():
    check("Identity", [rand(2, 3)])
    check("Identity", [i64(1, 2)])


@pytest.mark.parametrize("n_outputs", [1, 2])
def test_dropout(n_outputs):
    check("Dropout", [rand(3, 4), np.array(0.5, np.float32), np.array(False)],
          consts=(1, 2), n_outputs=n_outputs)
    check("Dropout", [rand(3, 4)], n_outputs=n_outputs)


def test_dropout_training_is_refused():
    g = Graph()
    x = g.add_input("x", TensorType((2,), DType.F32))
    with pytest.raises(ShapeError, match="training_mode"):
        g.add_node("Dropout", [x, None, g.const(np.array(True))])


@pytest.mark.parametrize("perm", [None, [1, 0, 2], [2, 0, 1], [0, 1, 2]])
def test_transpose(perm):
    check("Transpose", [rand(2, 3, 4)], {} if perm is None else {"perm": perm})


@pytest.mark.parametrize("shape,axis,split,num", [
    ((6, 4), 0, i64(2, 4), None), ((3, 7), 1, i64(1, 0, 6), None), ((3, 7), -1, None, 3),
    ((8,), 0, None, 4), ((2, 5), 1, None, 2),
])
def test_split(shape, axis, split, num):
    n = len(split) if split is not None else num
    attrs = {"axis": axis} | ({"num_outputs": num} if num else {})
    check("Split", [rand(*shape), split], attrs, consts=(1,), n_outputs=n)


SLICE_CASES = [
    # starts, ends, axes, steps on a [5, 6, 7] input
    ((1,), (3,), None, None),
    ((0, 1), (-1, 1000), (1, 2), None),
    ((-3,), (-1,), (2,), None),
    ((4, 5), (0, -1000), (0, 1), (-1, -2)),
    ((-1,), (-1000,), (0,), (-1,)),
    ((0, 2), (7, 100), (-1, 0), (3, 2)),
    ((10,), (20,), (1,), None),
    ((-100, 3), (100, 2), (0, 2), (1, -1)),
    ((2**62,), (-(2**62),), (1,), (-3,)),
]


@pytest.mark.parametrize("starts,ends,axes,steps", SLICE_CASES)
def test_slice(starts, ends, axes, steps):
    args = [i64(*starts), i64(*ends), None if axes is None else i64(*axes),
            None if steps is None else i64(*steps)]
    check("Slice", [rand(5, 6, 7), *args], consts=(1, 2, 3, 4))


def test_slice_int32_indices():
    check("Slice", [rand(5, 6), *(np.array(v, np.int32) for v in ([1], [-1], [1], [2]))],
          consts=(1, 2, 3, 4))


PAD_CASES = [
    ("constant", (1, 2, 0, 3), None, 1.5),
    ("constant", (0, -1, 2, 1), None, None),
    ("reflect", (2, 1, 1, 2), None, None),
    ("edge", (3, 0, 0, 2), None, None),
    ("wrap", (1, 2, 2, 1), None, None),
    ("constant", (1, 2), (-1,), -2.0),
    ("reflect", (0, 1), (0,), None),
    ("edge", (-1, 2, 1, -2), None, None),
]


@pytest.mark.parametrize("mode,pads,axes,value", PAD_CASES)
def test_pad(mode, pads, axes, value):
    args = [rand(4, 5), i64(*pads), None if value is None else np.array(value, np.float32),
            None if axes is None else i64(*axes)]
    check("Pad", args, {"mode": mode}, consts=(1, 2, 3))


def test_pad_int_runtime_value():
    check("Pad", [rand(3, dtype=np.int32, lo=0, hi=9), i64(1, 2), np.array(7, np.int32)],
          consts=(1,))


@pytest.mark.parametrize("shape_in,shape", [((3, 1), (2, 3, 4)), ((3, 4), (4,)), ((1,), (1,)),
                                            ((2, 1, 3), (1, 4, 1))])
def test_expand(shape_in, shape):
    check("Expand", [rand(*shape_in), i64(*shape)], consts=(1,))


@pytest.mark.parametrize("reps", [(1, 1), (2, 3), (3, 1), (0, 2)])
def test_tile(reps):
    check("Tile", [rand(2, 3), i64(*reps)], consts=(1,))


@pytest.mark.parametrize("value", [None, np.array([2.5], np.float32), np.array([7], np.int64),
                                   np.array([True])])
def test_constant_of_shape(value):
    check("ConstantOfShape", [i64(2, 3)], {} if value is None else {"value": value}, consts=(0,))


@pytest.mark.parametrize("src,to", [
    (np.float32, 7), (np.float32, 6), (np.float32, 9), (np.int64, 1), (np.bool_, 1),
    (np.int32, 7), (np.int64, 3), (np.float32, 2), (np.float32, 11), (np.float64, 1),
    (np.float32, 10), (np.uint8, 1),
])
def test_cast(src, to):
    x = rand(4, 5, lo=-100, hi=100) if src not in (np.bool_,) else rand(4, 5, dtype=np.bool_)
    if to in (2,):  # float -> uint8 of a negative value is undefined in C
        x = np.abs(x)
    check("Cast", [x.astype(src)], {"to": to})


def test_cast_unsupported_dtype():
    g = Graph()
    x = g.add_input("x", TensorType((2,), DType.F32))
    with pytest.raises(ShapeError, match="BFLOAT16"):
        g.add_node("Cast", [x], {"to": 16})


@pytest.mark.parametrize("start,limit,delta", [
    (0, 10, 3), (10, 0, -2), (5, 5, 1), (0.5, 2.0, 0.25), (1.0, -1.0, -0.3), (3, 10, 4),
])
def test_range(start, limit, delta):
    dt = np.float32 if isinstance(start, float) else np.int64
    check("Range", [np.array(start, dt), np.array(limit, dt), np.array(delta, dt)],
          consts=(0, 1, 2))
