"""Indexing, scatter, rearrangement and selection ops against onnxruntime (registry level)."""

import numpy as np
import opcheck
import pytest
from opcheck import check, rand

from edgec.errors import ShapeError
from edgec.ir import DType, Graph, TensorType


def i64(*v):
    return np.array(v, dtype=np.int64)


@pytest.mark.parametrize("axis,idx", [
    (0, i64([1, 2, 0, 2], [0, -1, 1, 2])), (1, i64([0, 0], [-1, 2], [3, 1])),
    (-1, np.array([[1], [0], [3]], np.int32)),
])
def test_gather_elements(axis, idx):
    check("GatherElements", [rand(3, 4), idx], {"axis": axis})


@pytest.mark.parametrize("data,idx,batch_dims", [
    ((2, 2), i64([0, 0], [1, 1]), 0), ((2, 2), i64([1], [0]), 0),
    ((2, 2, 2), i64([0, 1], [1, 0]), 0), ((2, 2, 2), i64([[0, 1]], [[1, -2]]), 0),
    ((2, 2, 2), i64([1], [0]), 1), ((2, 3, 4), i64([[1, 2], [0, -1]], [[0, 0], [2, 3]]), 1),
    ((2, 3, 4), i64([[1], [2], [-1]], [[0], [3], [-4]]), 2),
])
def test_gather_nd(data, idx, batch_dims):
    check("GatherND", [rand(*data), idx], {"batch_dims": batch_dims})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(reduction, axis):
    idx = i64([1, 0, 2], [0, 2, 1]) if axis == 0 else i64([1, 3], [-1, 1], [0, 0])
    if axis == 0:
        idx = i64([1, 0, 2], [1, 2, 1])  # duplicates along axis 0: the reduction matters
    upd = rand(*idx.shape, seed=2)
    check("ScatterElements", [rand(3, 4), idx, upd], {"axis": axis, "reduction": reduction})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    check("ScatterND", [rand(4, 3, 2), i64([1], [3], [1]), rand(3, 3, 2, seed=1)],
          {"reduction": reduction})
    check("ScatterND", [rand(4, 3), i64([1, 2], [-1, 0], [1, 2]), rand(3, seed=1)],
          {"reduction": reduction})


def test_scatter_nd_int():
    check("ScatterND", [rand(5, dtype=np.int32, lo=-9, hi=9), i64([4], [0]),
                        np.array([7, 8], np.int32)])


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(mode, monkeypatch):
    monkeypatch.setattr(opcheck, "OPSET", 24)  # TensorScatter is new in opset 24
    w = i64(1, 3) if mode == "circular" else i64(0, 2)
    check("TensorScatter", [rand(2, 3, 5, 4), rand(2, 3, 3, 4, seed=1), w], {"mode": mode})
    check("TensorScatter", [rand(2, 5, 4), rand(2, 2, 4, seed=1)], {"axis": 1, "mode": mode})


# (indices, depth, values) dtypes among those onnxruntime implements
ONE_HOT_TYPES = [(np.int64, np.int64, np.float32), (np.float32, np.float32, np.float32),
                 (np.int32, np.float32, np.float32), (np.int64, np.int64, np.int64)]


@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
@pytest.mark.parametrize("types", ONE_HOT_TYPES)
def test_one_hot(axis, types):
    ti, td, tv = types
    idx = np.array([[0, 3, -1], [7, -5, 2]], ti)
    check("OneHot", [idx, np.array(5, td), np.array([-2, 3], tv)], {"axis": axis}, consts=(1,))


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("b", [1, 2, 3])
def test_depth_to_space(mode, b):
    check("DepthToSpace", [rand(2, 2 * b * b, 3, 2)], {"blocksize": b, "mode": mode})


@pytest.mark.parametrize("b", [1, 2])
def test_space_to_depth(b):
    check("SpaceToDepth", [rand(2, 3, 4, 6)], {"blocksize": b})


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis, time_axis):
    x = rand(4, 4, 2) if batch_axis == 1 else rand(4, 5)
    lens = i64(4, 3, 1, 2) if batch_axis == 1 else i64(1, 2, 5, 0)
    check("ReverseSequence", [x, lens], {"batch_axis": batch_axis, "time_axis": time_axis})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, 7, -9])
def test_trilu(upper, k):
    kk = None if k is None else np.array(k, np.int64)
    check("Trilu", [rand(2, 4, 5), kk], {"upper": upper})
    check("Trilu", [rand(3, 3, dtype=np.int32, lo=1, hi=9), kk], {"upper": upper})


@pytest.mark.parametrize("shape,k,dtype", [((3, 4), 0, None), ((4, 3), 1, 7), ((3, 3), -2, 1),
                                           ((2, 5), 7, 6)])
def test_eye_like(shape, k, dtype):
    attrs = {"k": k} | ({} if dtype is None else {"dtype": dtype})
    check("EyeLike", [rand(*shape, dtype=np.int32)], attrs)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(axis):
    cond = np.array([True, False, True], bool) if axis is not None else \
        np.array([False, True, True, False, True], bool)
    check("Compress", [rand(3, 3), cond] if axis != 0 else [rand(3, 2), cond],
          {} if axis is None else {"axis": axis}, consts=(1,))


def test_compress_needs_constant_condition():
    g = Graph()
    x = g.add_input("x", TensorType((3,), DType.F32))
    c = g.add_input("c", TensorType((3,), DType.BOOL))
    with pytest.raises(ShapeError, match="fixes the output shape"):
        g.add_node("Compress", [x, c])


EMPTY_AXIS_LOOKUPS = [  # (op, data shape, indices shape, extra attrs): axis 0 is empty
    ("Gather", (0, 3), (2,), {}), ("GatherElements", (0, 3), (1, 3), {}),
    ("GatherND", (0, 3), (2, 1), {}), ("ScatterElements", (0, 3), (1, 3), {}),
    ("ScatterND", (0, 3), (2, 1), {}), ("GatherND", (2, 0, 3), (2, 4, 1), {"batch_dims": 1}),
]


def _lookup_graph(opname, data_shape, idx_shape, attrs):
    g = Graph()
    x = g.add_input("x", TensorType(data_shape, DType.F32))
    i = g.add_input("i", TensorType(idx_shape, DType.I64))  # run-time indices: no constant
    ins = [x, i]
    if opname.startswith("Scatter"):
        upd = idx_shape if opname == "ScatterElements" else idx_shape[:-1] + data_shape[1:]
        ins.append(g.add_input("u", TensorType(upd, DType.F32)))
    return g, ins


@pytest.mark.parametrize("opname,data_shape,idx_shape,attrs", EMPTY_AXIS_LOOKUPS)
def test_lookup_into_empty_axis_is_refused(opname, data_shape, idx_shape, attrs):
    """No index is in range on an axis of size 0, so the clamp that run-time indices get has
    nothing to land on: the op is refused at build time rather than read out of bounds."""
    g, ins = _lookup_graph(opname, data_shape, idx_shape, attrs)
    with pytest.raises(ShapeError, match=f"{opname}: .*axis of size 0"):
        g.add_node(opname, ins, attrs)


@pytest.mark.parametrize("opname,data_shape,idx_shape,attrs", EMPTY_AXIS_LOOKUPS)
def test_no_lookups_into_empty_axis_are_fine(opname, data_shape, idx_shape, attrs):
    """With no lookups (an index dim of 0), an empty axis is legal, as onnxruntime has it."""
    idx_shape = (0,) + idx_shape[1:] if "batch_dims" not in attrs else (2, 0, 1)
    idx = np.zeros(idx_shape, np.int64)
    ins = [rand(*data_shape), idx]
    if opname.startswith("Scatter"):
        upd = idx_shape if opname == "ScatterElements" else idx_shape[:-1] + data_shape[1:]
        ins.append(rand(*upd, seed=1))
    check(opname, ins, attrs)


def test_nonzero():
    check("NonZero", [np.array([[1, 0, 3], [0, 0, 2]], np.int32)], consts=(0,))
    check("NonZero", [np.array([0.0, 1.0, -2.0], np.float32)], consts=(0,))


@pytest.mark.parametrize("image,block,attrs", [
    ((5, 5), (1, 5), {}), ((4, 5), (2, 2), {"strides": [2, 1]}),
    ((5, 5), (2, 2), {"pads": [1, 0, 1, 1], "dilations": [2, 1]}), ((6,), (3,), {}),
    ((3, 4, 3), (2, 2, 1), {"strides": [1, 2, 1]}),
])
def test_col2im(image, block, attrs):
    n = len(image)
    dil, st = attrs.get("dilations", [1] * n), attrs.get("strides", [1] * n)
    pads = attrs.get("pads", [0] * 2 * n)
    blocks = [(image[d] + pads[d] + pads[d + n] - dil[d] * (block[d] - 1) - 1) // st[d] + 1
              for d in range(n)]
    x = rand(2, 2 * int(np.prod(block)), int(np.prod(blocks)))
    check("Col2Im", [x, i64(*image), i64(*block)], attrs, consts=(1, 2))


@pytest.mark.parametrize("axis,sorted_", [(None, 1), (None, 0), (0, 1), (1, 0), (-1, 1)])
def test_unique(axis, sorted_):
    x = np.array([[2, 1, 2], [0, 1, 0], [2, 1, 2]], np.float32)
    attrs = {"sorted": sorted_} | ({} if axis is None else {"axis": axis})
    check("Unique", [x], attrs, consts=(0,), n_outputs=4)
