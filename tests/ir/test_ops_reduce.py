"""Reductions and ArgMax against onnxruntime."""

import numpy as np
import pytest
from opcheck import check, rand

from edgec.ir import get_op

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


MORE = ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


@pytest.mark.parametrize("opname", MORE)
@pytest.mark.parametrize("axes,keepdims", [(None, 1), ([1], 0), ([-1, 0], 1), ([], 1)])
def test_reduce_more(opname, axes, keepdims):
    ax = None if axes is None else np.array(axes, np.int64)
    x = rand(2, 3, 4, lo=0.1, hi=2.0) * np.where(rand(2, 3, 4, seed=1) > 0, 1, -1).astype(
        np.float32)
    if opname == "ReduceLogSum":
        x = np.abs(x)
    check(opname, [x, ax], {"keepdims": keepdims}, consts=(1,))


@pytest.mark.parametrize("opname", MORE)
def test_reduce_more_empty_set(opname):
    check(opname, [np.zeros((2, 0, 4), np.float32), np.array([1], np.int64)], consts=(1,))


@pytest.mark.parametrize("opname", ["ReduceL1", "ReduceL2", "ReduceSumSquare"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_more_int(opname, dtype):
    check(opname, [rand(3, 4, dtype=dtype, lo=-7, hi=7), np.array([1], np.int64)], consts=(1,))


def test_reduce_log_sum_exp_large_values():
    x = np.array([[1000, 1000, 999], [-1000, -np.inf, -1000], [-np.inf, -np.inf, -np.inf]],
                 np.float32)
    check("ReduceLogSumExp", [x, np.array([1], np.int64)], consts=(1,))


def test_reduce_float16_accumulates_in_float32():
    x = np.array([[60000, 60000, -60000, 1]], np.float16)
    for opname in ["ReduceSum", "ReduceMean", "ReduceL2", "ReduceSumSquare"]:
        check(opname, [x, np.array([1], np.int64)], consts=(1,))


@pytest.mark.parametrize("axis,keepdims,last", [(0, 1, 0), (1, 0, 0), (-1, 1, 1), (2, 0, 1)])
def test_argmin(axis, keepdims, last):
    x = rand(3, 4, 5, dtype=np.int64, lo=0, hi=3).astype(np.float32)
    check("ArgMin", [x], {"axis": axis, "keepdims": keepdims, "select_last_index": last})


@pytest.mark.parametrize("axis,largest,k", [(-1, 1, 3), (0, 1, 2), (1, 0, 4), (-1, 0, 5),
                                            (1, 1, 0)])
def test_topk(axis, largest, k):
    x = rand(3, 4, 5, dtype=np.int64, lo=0, hi=4).astype(np.float32)  # many ties
    check("TopK", [x, np.array([k], np.int64)], {"axis": axis, "largest": largest},
          consts=(1,), n_outputs=2)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_topk_dtypes(dtype):
    x = rand(2, 6, dtype=np.int64, lo=0, hi=9).astype(dtype)
    for largest in (0, 1):
        check("TopK", [x, np.array([3], np.int64)], {"largest": largest}, consts=(1,),
              n_outputs=2)


@pytest.mark.parametrize("opname", ["CumSum", "CumProd"])
@pytest.mark.parametrize("axis,exclusive,reverse", [(0, 0, 0), (1, 1, 0), (-1, 0, 1), (2, 1, 1),
                                                    (1, 1, 1)])
def test_cumulative(opname, axis, exclusive, reverse):
    x = rand(2, 3, 4, lo=0.5, hi=1.5)
    ax = np.array(axis, np.int32 if axis == 2 else np.int64)
    attrs = {"exclusive": exclusive, "reverse": reverse}
    if opname == "CumSum":
        check(opname, [x, ax], attrs, consts=(1,))
        check(opname, [rand(2, 3, 4, dtype=np.int32, lo=-5, hi=5), ax], attrs, consts=(1,))
    else:
        _check_reference(opname, [x, ax], attrs)


def test_topk_uint64():
    x = rand(2, 6, dtype=np.int64, lo=0, hi=9).astype(np.uint64)
    x[0, 0] = 2**64 - 1  # would wrap if negated
    for largest in (0, 1):
        _check_reference("TopK", [x, np.array([3], np.int64)], {"largest": largest})


def _check_reference(opname, inputs, attrs):
    """Where onnxruntime lacks the op or dtype (CumProd is new in opset 26, TopK has no uint64
    kernel): against onnx's reference implementation."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    from edgec.ir import get_op

    names = [f"x{i}" for i in range(len(inputs))]
    outs = [f"y{i}" for i in range(get_op(opname).num_outputs[1])]
    node = helper.make_node(opname, names, outs, **attrs)
    wants = ReferenceEvaluator(node).run(None, dict(zip(names, inputs, strict=True)))
    gots = get_op(opname).run(inputs, get_op(opname).complete_attrs(attrs))
    for got, want in zip(gots, wants, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]), ("ii->i", [(4, 4)]), ("...ii->...i", [(2, 3, 3)]),
    ("i,i", [(5,), (5,)]), ("ij->", [(3, 4)]), ("ij", [(3, 4)]), ("ba", [(3, 4)]),
    ("ij,kj->ik", [(2, 3), (4, 3)]), ("...ij,...jk", [(2, 3, 3, 4), (2, 3, 4, 2)]),
    ("i,j->ij", [(3,), (4,)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ijk,ikl,il->jl", [(2, 3, 4), (2, 4, 5), (2, 5)]), ("...->...", [(2, 3)]),
])
def test_einsum(equation, shapes):
    check("Einsum", [rand(*s, seed=k) for k, s in enumerate(shapes)], {"equation": equation},
          rtol=1e-5, atol=1e-5)


def test_einsum_int():
    check("Einsum", [rand(3, 4, dtype=np.int64, lo=-5, hi=5),
                     rand(4, 2, dtype=np.int64, seed=1, lo=-5, hi=5)], {"equation": "ij,jk->ik"})


@pytest.mark.parametrize("opname,dtype,want", [
    ("ReduceMax", np.float32, -np.inf), ("ReduceMin", np.float32, np.inf),
    ("ReduceMax", np.int32, -2**31), ("ReduceMin", np.int32, 2**31 - 1),
    ("ReduceMax", np.bool_, False), ("ReduceMin", np.bool_, True)])
def test_max_and_min_over_an_empty_set(opname, dtype, want):
    # ONNX: -inf (+inf) where the type has it, else its minimum (maximum); the interpreter
    # used to raise numpy's "zero-size array to reduction operation"
    x = np.zeros((2, 0, 3), dtype)
    (y,) = get_op(opname).run([x, np.array([1])], {"keepdims": 1, "noop_with_empty_axes": 0})
    assert y.shape == (2, 1, 3) and y.dtype == dtype
    assert (y == want).all()
