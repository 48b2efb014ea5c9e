"""Elementwise kernels, compiled to C and run, against the interpreter (the numpy references).

Each test builds one graph with many independent nodes (every node's output is a graph
output), so one C compile covers many ops. The build must be free of gcc warnings.
"""

from __future__ import annotations

import numpy as np
import pytest

from edgec.codegen.renderers.c import CRenderer
from edgec.ir import DType, Graph, TensorType
from edgec.ir.onnx_dtypes import to_onnx
from edgec.kernel_ir.kernel import Expr, const, var
from edgec.lowering.lower import SCALARS, _load_kernels

F32 = DType.F32
SPECIALS = np.array([-np.inf, -1e4, -100, -20, -3.5, -1, -0.5, -0.0, 0.0, 1e-30, 0.25, 1, 2.5,
                     20, 100, 1e4, np.inf, np.nan], np.float32)


def _outputs(g: Graph, nodes) -> None:
    g.outputs = [o for n in nodes for o in n.outputs]


UNARY = [("Sqrt", {}), ("Exp", {}), ("Log", {}), ("Floor", {}), ("Ceil", {}), ("Erf", {}),
         ("Tanh", {}), ("Reciprocal", {}), ("Neg", {}), ("Abs", {}), ("Relu", {}),
         ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.3}), ("Sigmoid", {}), ("HardSigmoid", {}),
         ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("HardSwish", {}), ("Gelu", {}),
         ("Gelu", {"approximate": "tanh"}), ("Clip", {})]


def test_unary_float(check):
    """Every unary float op on ordinary values and on +-inf, NaN, huge and signed zeros."""
    g = Graph("unary")
    x = g.add_input("x", TensorType((3, 4, 5), F32))
    s = g.add_input("s", TensorType(SPECIALS.shape, F32))
    nodes = [g.add_node(op, [v], attrs) for v in (x, s) for op, attrs in UNARY]
    lo, hi = g.const(np.float32(-0.5), "lo"), g.const(np.array([0.75], np.float32), "hi")
    for v in (x, s):
        nodes += [g.add_node("Clip", [v, lo, hi]), g.add_node("Clip", [v, lo]),
                  g.add_node("Clip", [v, None, hi]), g.add_node("Clip", [v, hi, lo])]
    _outputs(g, nodes)
    rng = np.random.default_rng(1)
    check(g, {"x": (rng.standard_normal((3, 4, 5)) * 3).astype(np.float32), "s": SPECIALS})


def test_sigmoid_does_not_overflow(check):
    g = Graph("sig")
    x = g.add_input("x", TensorType((6,), F32))
    _outputs(g, [g.add_node("Sigmoid", [x])])
    check(g, {"x": np.array([-1e30, -100, -88.8, 88.8, 100, 1e30], np.float32)}, tol=1e-6)


BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "Sum", "Mean", "Equal", "Less",
          "Greater", "LessOrEqual", "GreaterOrEqual"]


@pytest.mark.parametrize("sa,sb", [
    ((3, 4, 5), (3, 4, 5)), ((3, 4, 5), (5,)), ((3, 1, 5), (4, 1)), ((1,), (2, 3)),
    ((2, 1, 3, 1), (1, 4, 1, 5)), ((), (4, 3)), ((4, 1), (1, 6)),
])
def test_binary_broadcast(check, sa, sb):
    g = Graph("binary")
    a = g.add_input("a", TensorType(sa, F32))
    b = g.add_input("b", TensorType(sb, F32))
    nodes = [g.add_node(op, [a, b]) for op in BINARY]
    c = g.add_node("Less", [a, b]).output
    nodes += [g.add_node("Where", [c, a, b]), g.add_node("Sum", [a, b, a]),
              g.add_node("Mean", [b, a, b]), g.add_node("Max", [a]), g.add_node("Min", [b, a, a])]
    _outputs(g, nodes)
    check(g)


def test_nan_propagates_through_min_max(check):
    g = Graph("nan")
    a = g.add_input("a", TensorType((4,), F32))
    b = g.add_input("b", TensorType((4,), F32))
    _outputs(g, [g.add_node(op, ins) for op in ("Min", "Max")
                 for ins in ([a, b], [b, a], [a, b, a])])
    nan = np.nan
    check(g, {"a": np.array([nan, 1, nan, -2], np.float32),
              "b": np.array([1, nan, nan, 3], np.float32)})


def test_prelu_slopes(check):
    g = Graph("prelu")
    x = g.add_input("x", TensorType((2, 3, 4, 5), F32))
    per_channel = g.const(np.linspace(-1, 1, 3, dtype=np.float32).reshape(3, 1, 1), "slope")
    full = g.add_input("s", TensorType((2, 3, 4, 5), F32))
    scalar = g.const(np.float32(0.2), "alpha")
    _outputs(g, [g.add_node("PRelu", [x, s]) for s in (per_channel, full, scalar)])
    check(g)


def test_constant_operands(check):
    """One-element constants become literals, bigger ones weights; Pow by 2 becomes x*x."""
    g = Graph("consts")
    x = g.add_input("x", TensorType((4, 6), F32))
    row = g.const(np.arange(6, dtype=np.float32) + 0.5, "row")
    nodes = [g.add_node("Mul", [x, g.const(np.float32(1.5), "k")]),
             g.add_node("Add", [row, x]), g.add_node("Div", [x, row]),
             g.add_node("Sub", [g.const(np.array([[2.0]], np.float32), "two"), x])]
    nodes += [g.add_node("Pow", [x, g.const(np.float32(e), f"e{i}")])
              for i, e in enumerate((2.0, 1.0, 0.5, 3.0, -1.0))]
    nodes.append(g.add_node("Pow", [x, g.const(np.int64(2), "i2")]))
    nodes.append(g.add_node("Pow", [x, g.const(np.arange(6, dtype=np.int32), "ie")]))
    _outputs(g, nodes)
    check(g)


INTS = [DType.I8, DType.U8, DType.I16, DType.I32, DType.I64, DType.U32, DType.U64]


@pytest.mark.parametrize("dt", INTS)
def test_integer_arithmetic(check, dt):
    """Wrapping arithmetic, C-truncating division (and 0 for a zero divisor), integer Pow."""
    g = Graph("ints")
    shape = (4, 5)
    a = g.add_input("a", TensorType(shape, dt))
    b = g.add_input("b", TensorType((5,), dt))
    signed = dt.is_signed
    ops = ["Add", "Sub", "Mul", "Div", "Min", "Max", "Equal", "Less", "GreaterOrEqual"]
    nodes = [g.add_node(op, [a, b]) for op in ops]
    nodes += [g.add_node("Abs", [a]), g.add_node("Pow", [a, g.const(np.arange(5).astype(
        dt.np) % 3, "p")]), g.add_node("Max", [a, b, a])]
    nodes.append(g.add_node("Clip", [a, g.const(np.array(1, dt.np), "lo"),
                                     g.const(np.array(7, dt.np), "hi")]))
    nodes.append(g.add_node("Div", [a, g.const(np.array(3, dt.np), "three")]))
    if signed:
        nodes += [g.add_node("Neg", [a]), g.add_node("Relu", [a]),
                  g.add_node("PRelu", [a, b])]
    _outputs(g, nodes)
    rng = np.random.default_rng(2)
    lo = -9 if signed else 0
    av = rng.integers(lo, 10, shape).astype(dt.np)
    av[0, :2] = np.iinfo(dt.np).max, np.iinfo(dt.np).min  # wrap-around
    bv = np.array([3, 0, -2 if signed else 2, 1, 7]).astype(dt.np)
    check(g, {"a": av, "b": bv})


def test_logic_and_where(check):
    g = Graph("logic")
    p = g.add_input("p", TensorType((3, 4), DType.BOOL))
    q = g.add_input("q", TensorType((4,), DType.BOOL))
    x = g.add_input("x", TensorType((3, 1), DType.I64))
    y = g.add_input("y", TensorType((4,), DType.I64))
    nodes = [g.add_node("And", [p, q]), g.add_node("Or", [p, q]), g.add_node("Not", [p]),
             g.add_node("Equal", [p, q]), g.add_node("Less", [p, q]),
             g.add_node("Where", [p, x, y]), g.add_node("Where", [q, y, x]),
             g.add_node("Where", [p, g.const(np.float32(1), "one"), g.const(np.float32(-1))])]
    _outputs(g, nodes)
    check(g)


def test_scalar_and_one_element_tensors(check):
    g = Graph("scalars")
    x = g.add_input("x", TensorType((), F32))
    y = g.add_input("y", TensorType((1, 1), F32))
    _outputs(g, [g.add_node("Relu", [x]), g.add_node("Add", [x, y]),
                 g.add_node("Sigmoid", [y]), g.add_node("Clip", [y, None, x])])
    check(g)


def test_clip_with_runtime_bounds(check):
    g = Graph("clipin")
    x = g.add_input("x", TensorType((2, 7), F32))
    lo = g.add_input("lo", TensorType((), F32))
    hi = g.add_input("hi", TensorType((1,), F32))
    _outputs(g, [g.add_node("Clip", [x, lo, hi]), g.add_node("Clip", [x, None, hi])])
    check(g, {"x": np.linspace(-3, 3, 14, dtype=np.float32).reshape(2, 7),
              "lo": np.array(-1, np.float32), "hi": np.array([0.5], np.float32)})


CAST_TYPES = [DType.F32, DType.F64, DType.F16, DType.I8, DType.I16, DType.I32, DType.I64,
              DType.U8, DType.U16, DType.U32, DType.U64, DType.BOOL]


def _cast_values(dt: DType) -> np.ndarray:
    if dt is DType.BOOL:
        return np.array([True, False, True, True, False, False, True, False, True, False])
    if dt.is_float:  # truncation toward zero; negatives to unsigned saturate to 0
        return np.array([-100.7, -3.5, -1.0, -0.5, 0.0, 0.4, 1.0, 2.9, 100.2, 127.9], dt.np)
    info = np.iinfo(dt.np)
    vals = [info.min, -3, -1, 0, 1, 2, 127, 200, 70000, info.max]
    return np.array([v for v in vals if info.min <= v <= info.max] * 2, dtype=dt.np)[:10]


def test_cast_all_pairs(check):
    """Every source dtype to every target dtype in one graph."""
    g = Graph("cast")
    nodes, feeds = [], {}
    for src in CAST_TYPES:
        x = g.add_input(f"x_{src}", TensorType((10,), src))
        feeds[x.name] = _cast_values(src)
        nodes += [g.add_node("Cast", [x], {"to": to_onnx(dst)}) for dst in CAST_TYPES]
    _outputs(g, nodes)
    check(g, feeds)


def test_epilogue_formulas_are_callable():
    """The fused kernels call SCALARS[name](acc, **params); Clip's bounds may be None."""
    _load_kernels()
    acc = var("acc", F32)
    r = CRenderer()
    calls = {
        "Relu": SCALARS["Relu"](acc),
        "LeakyRelu": SCALARS["LeakyRelu"](acc, alpha=0.2),
        "Clip": SCALARS["Clip"](acc, const(0.0, F32), const(6.0, F32)),
        "ClipLo": SCALARS["Clip"](acc, const(0.0, F32), None),
        "ClipHi": SCALARS["Clip"](acc, None, const(6.0, F32)),
        "ClipNone": SCALARS["Clip"](acc, None, None),
        "ClipIndexConsts": SCALARS["Clip"](acc, const(0), const(6)),
        "ClipNumbers": SCALARS["Clip"](acc, 0.0, 6),
        "Sigmoid": SCALARS["Sigmoid"](acc), "Tanh": SCALARS["Tanh"](acc),
        "HardSigmoid": SCALARS["HardSigmoid"](acc, alpha=0.25, beta=0.5),
        "HardSwish": SCALARS["HardSwish"](acc),
    }
    for name, e in calls.items():
        assert isinstance(e, Expr) and e.dtype is F32, name
        text = r.expr(e)
        assert "acc" in text, (name, text)
    assert r.expr(calls["ClipNone"]) == "acc"
    assert calls["ClipIndexConsts"] == calls["Clip"] == calls["ClipNumbers"]
    assert r.expr(calls["Clip"]) == "(acc < 0.0f ? 0.0f : acc) > 6.0f ? 6.0f : " \
        "acc < 0.0f ? 0.0f : acc"
