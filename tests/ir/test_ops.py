"""Elementwise ops against onnxruntime, and registry-wide facts (traits, every op tested)."""

import numpy as np
import pytest
from opcheck import check, rand

from edgec.errors import ShapeError
from edgec.ir import DType, Graph, TensorType, all_ops

F32, I32, I64 = np.float32, np.int32, np.int64

BINARY_SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((), (2, 2))]


@pytest.mark.parametrize("opname", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("sa,sb", BINARY_SHAPES)
def test_arithmetic_float(opname, sa, sb):
    b = rand(*sb, seed=1, lo=0.5, hi=2.0)
    check(opname, [rand(*sa), b])


@pytest.mark.parametrize("opname", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("dtype", [I32, I64, np.uint8, np.int8])
def test_arithmetic_int(opname, dtype):
    lo = 0 if dtype == np.uint8 else -9
    a = rand(3, 4, dtype=dtype, lo=lo, hi=9)
    b = rand(3, 4, dtype=dtype, seed=1, lo=1, hi=4)
    if dtype != np.uint8:
        b = b * np.where(rand(3, 4, dtype=I32, seed=2, lo=0, hi=1) == 1, 1, -1).astype(dtype)
    check(opname, [a, b])


def test_div_by_constant_divisor():
    check("Div", [rand(4, 3), np.array(3.0, F32)], consts=(1,))


@pytest.mark.parametrize("x,y", [
    (rand(3, 4, lo=0.1, hi=3), rand(3, 4, seed=1, lo=-2, hi=2)),
    (rand(3, 4, lo=-3, hi=3), np.array([2, 3, 0, 1], I64)),
    (np.array([2, 3, -2, 5], I64), np.array([3, 2, 3, 0], I64)),
    (np.array([2, 3, 4], I32), np.array([0.5, 2.0, -1.0], F32)),
])
def test_pow(x, y):
    check("Pow", [x, y], rtol=1e-5)


@pytest.mark.parametrize("opname", ["Sum", "Min", "Max", "Mean"])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_variadic(opname, n):
    shapes = [(2, 3), (3,), (1, 3)][:n]
    check(opname, [rand(*s, seed=k) for k, s in enumerate(shapes)])


@pytest.mark.parametrize("opname", ["Min", "Max"])
def test_variadic_int(opname):
    check(opname, [rand(2, 3, dtype=I32, lo=-5, hi=5), rand(3, dtype=I32, seed=1, lo=-5, hi=5)])


@pytest.mark.parametrize("opname", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [F32, I64])
def test_compare(opname, dtype):
    a = rand(3, 4, dtype=dtype, lo=-2, hi=2).round()
    b = rand(4, dtype=dtype, seed=1, lo=-2, hi=2).round()
    check(opname, [a, b])


@pytest.mark.parametrize("opname", ["And", "Or"])
def test_logic(opname):
    check(opname, [rand(3, 4, dtype=np.bool_), rand(1, 4, dtype=np.bool_, seed=1)])


def test_not():
    check("Not", [rand(3, 4, dtype=np.bool_)])


@pytest.mark.parametrize("dtype", [F32, I64])
def test_where(dtype):
    check("Where", [rand(3, 1, dtype=np.bool_), rand(3, 4, dtype=dtype, lo=-5, hi=5),
                    rand(4, dtype=dtype, seed=2, lo=-5, hi=5)])


UNARY = [
    ("Sqrt", 0.0, 4.0), ("Exp", -5.0, 5.0), ("Log", 0.01, 10.0), ("Neg", -3.0, 3.0),
    ("Abs", -3.0, 3.0), ("Reciprocal", 0.1, 3.0), ("Floor", -3.0, 3.0), ("Ceil", -3.0, 3.0),
    ("Erf", -3.0, 3.0), ("Relu", -2.0, 2.0), ("Sigmoid", -30.0, 30.0), ("Tanh", -5.0, 5.0),
    ("HardSwish", -5.0, 5.0),
]


@pytest.mark.parametrize("opname,lo,hi", UNARY)
def test_unary(opname, lo, hi):
    check(opname, [rand(4, 5, lo=lo, hi=hi)])


@pytest.mark.parametrize("opname", ["Neg", "Abs", "Relu"])
def test_unary_int(opname):
    check(opname, [rand(4, 5, dtype=I32, lo=-9, hi=9)])


def test_ieee_specials():
    check("Log", [np.array([0.0, 1.0, np.inf], F32)])
    check("Reciprocal", [np.array([0.0, -0.0, 2.0], F32)])
    check("Div", [np.array([1.0, -1.0, 0.0], F32), np.array([0.0, 0.0, 1.0], F32)])


@pytest.mark.parametrize("alpha", [0.01, 0.3])
def test_leaky_relu(alpha):
    check("LeakyRelu", [rand(3, 7, lo=-3, hi=3)], {"alpha": alpha})


@pytest.mark.parametrize("alpha,beta", [(0.2, 0.5), (0.1, 0.3)])
def test_hard_sigmoid(alpha, beta):
    check("HardSigmoid", [rand(3, 7, lo=-8, hi=8)], {"alpha": alpha, "beta": beta})


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    check("Gelu", [rand(4, 6, lo=-5, hi=5)], {"approximate": approximate})


@pytest.mark.parametrize("slope_shape", [(), (1,), (3, 1, 1), (5,), (2, 3, 4, 5)])
def test_prelu(slope_shape):
    check("PRelu", [rand(2, 3, 4, 5, lo=-2, hi=2), rand(*slope_shape, seed=1)], consts=(1,))


@pytest.mark.parametrize("lo,hi", [(-0.5, 0.5), (None, 0.2), (0.1, None), (None, None),
                                   (0.5, -0.5)])
def test_clip(lo, hi):
    lo_ = None if lo is None else np.array(lo, F32)
    hi_ = None if hi is None else np.array(hi, F32)
    check("Clip", [rand(3, 5), lo_, hi_], consts=(1, 2))


def test_clip_runtime_bounds_and_int():
    check("Clip", [rand(3, 5), np.array(-0.2, F32), np.array(0.3, F32)])
    check("Clip", [rand(6, dtype=I64, lo=-9, hi=9), np.array(-3, I64), np.array(4, I64)])


def test_dtype_mismatch_is_a_shape_error():
    g = Graph()
    a = g.add_input("a", TensorType((2,), DType.F32))
    b = g.add_input("b", TensorType((2,), DType.I64))
    with pytest.raises(ShapeError, match="one dtype"):
        g.add_node("Add", [a, b])
    with pytest.raises(ShapeError, match="float"):
        g.add_node("Sqrt", [b])


def test_traits():
    ops = all_ops()
    views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}
    assert {n for n, d in ops.items() if "view" in d.traits} == views
    for n in ["Add", "Mul", "Where", "Equal", "Clip", "Relu", "Sigmoid", "Pow", "Cast"]:
        assert "elementwise" in ops[n].traits, n
    for n in ["Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Gelu"]:
        assert "activation" in ops[n].traits, n
    assert "activation" not in ops["Add"].traits and "elementwise" not in ops["Conv"].traits


def test_every_op_is_tested():
    import pathlib
    import re

    here = pathlib.Path(__file__).parent
    text = "".join(p.read_text() for p in here.glob("test_ops*.py"))
    tested = set(re.findall(r'"([A-Z][A-Za-z0-9]+)"', text))
    ours = {n for n in all_ops() if not n.startswith("Fused")}
    assert ours - tested == set()
