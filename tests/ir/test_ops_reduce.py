"""Reductions and ArgMax against onnxruntime."""

import numpy as np
import pytest
from opcheck import check, rand

REDUCE = ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"]


@pytest.mark.parametrize("opname", REDUCE)
@pytest.mark.parametrize("axes,keepdims,noop", [
    (None, 1, 0), (None, 0, 0), ([1], 1, 0), ([-1, 0], 0, 0), ([0, 1, 2], 1, 0), (None, 1, 1),
    ([], 0, 1), ([2], 0, 1),
])
def test_reduce(opname, axes, keepdims, noop):
    ax = None if axes is None else np.array(axes, np.int64)
    check(opname, [rand(2, 3, 4, lo=0.5, hi=1.5), ax],
          {"keepdims": keepdims, "noop_with_empty_axes": noop}, consts=(1,))


@pytest.mark.parametrize("opname", REDUCE)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_int(opname, dtype):
    x = rand(3, 4, dtype=dtype, lo=-7, hi=7)
    check(opname, [x, np.array([1], np.int64)], {"keepdims": 0}, consts=(1,))


@pytest.mark.parametrize("axis,keepdims,last", [(0, 1, 0), (1, 0, 0), (-1, 1, 1), (2, 0, 1)])
def test_argmax(axis, keepdims, last):
    x = rand(3, 4, 5, dtype=np.int64, lo=0, hi=3).astype(np.float32)  # ties on purpose
    check("ArgMax", [x], {"axis": axis, "keepdims": keepdims, "select_last_index": last})
