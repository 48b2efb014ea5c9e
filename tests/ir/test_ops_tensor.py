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
