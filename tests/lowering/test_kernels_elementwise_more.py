"""The newer elementwise kernels (trigonometric, rounding, bitwise, remainder, exponential-family
activations) and Hardmax, compiled to C and run, against the interpreter; CastLike and Size
imported from ONNX, compiled and run, against onnxruntime.

Each test builds one graph with many independent nodes, so one C compile covers many ops;
the build must be free of gcc warnings.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import onnxruntime as ort
import pytest
from harness import check_against_interpreter, compile_and_run
from onnx import TensorProto, helper

import edgec
from edgec.codegen import toolchain
from edgec.codegen.renderers.c import CRenderer
from edgec.ir import DType, Graph, TensorType, interpret
from edgec.ir.onnx_dtypes import to_onnx
from edgec.kernel_ir.kernel import bitcast, var
from edgec.lowering.lower import SCALARS, _load_kernels
from edgec.runtime.loader import load

F16, F32, F64 = DType.F16, DType.F32, DType.F64
SPECIALS = np.array([-np.inf, -1e4, -100, -20.5, -2.5, -1.5, -1, -0.5, -0.0, 0.0, 1e-30, 0.25,
                     0.5, 1, 1.5, 2.5, 20.5, 100, 1e4, np.inf, np.nan], np.float32)


@pytest.fixture
def strict_build(monkeypatch):
    """Builds fail on any gcc warning in the generated kernels (m.c)."""

    def strict_run(cmd, cwd):
        res = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert not re.search(r"m\.c:\d+:\d+: warning", res.stderr), res.stderr

    monkeypatch.setattr(toolchain, "_run", strict_run)


@pytest.fixture
def check(tmp_path, strict_build):
    """check(graph, feeds=None, tol=1e-5): compile without warnings and match the interpreter."""
    count = iter(range(100))

    def run(graph: Graph, feeds=None, tol: float = 1e-5) -> None:
        check_against_interpreter(graph, tmp_path / f"m{next(count)}", feeds=feeds, tol=tol)

    return run


def _outputs(g: Graph, nodes) -> None:
    g.outputs = [o for n in nodes for o in n.outputs]


TRIG = ["Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"]
UNARY = [(op, {}) for op in TRIG + ["Round", "Sign", "IsNaN", "IsInf"]] + [
    ("IsInf", {"detect_positive": 0}), ("IsInf", {"detect_negative": 0}),
    ("IsInf", {"detect_positive": 0, "detect_negative": 0}),
    ("Elu", {}), ("Elu", {"alpha": 2.0}), ("Selu", {}), ("Selu", {"alpha": 2.0, "gamma": 3.0}),
    ("Celu", {}), ("Celu", {"alpha": 2.0}), ("Softplus", {}), ("Softsign", {}), ("Mish", {}),
    ("Swish", {}), ("Swish", {"alpha": 0.5}), ("ThresholdedRelu", {}),
    ("ThresholdedRelu", {"alpha": 0.3}), ("Shrink", {}), ("Shrink", {"bias": 1.5, "lambd": 1.5}),
]


def _unary_graph(dt: DType, n_specials: int) -> Graph:
    """Every unary op on a random input (one output each) and on the specials (another)."""
    g = Graph(f"unary_{dt}")
    x = g.add_input("x", TensorType((3, 4, 5), dt))
    s = g.add_input("s", TensorType((n_specials,), dt))
    _outputs(g, [g.add_node(op, [v], attrs) for v in (x, s) for op, attrs in UNARY])
    return g


@pytest.mark.parametrize("dt,tol", [(F32, 1e-5), (F64, 1e-12), (F16, 1e-3)])
def test_unary_float(check, dt, tol):
    """Values inside and outside each function's domain, +-inf, NaN, halves for Round."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 4, 5)) * 2).astype(dt.np)
    x[0, 0, :4] = 0.5, -2.5, 3.5, 1.0  # Round's ties, Acosh's and Atanh's domain edges
    specials = SPECIALS.astype(dt.np)
    check(_unary_graph(dt, specials.size), {"x": x, "s": specials}, tol=tol)


def test_softplus_and_mish_keep_tiny_values(tmp_path, strict_build):
    """log1p(exp(x)) keeps e^x where log(1 + exp(x)) would round it to 0; compared element by
    element, as the values span forty orders of magnitude."""
    g = Graph("tiny")
    x = g.add_input("x", TensorType((5,), F32))
    _outputs(g, [g.add_node(op, [x]) for op in ("Softplus", "Mish")])
    feeds = {"x": np.array([-10, -17, -30, -60, -80], np.float32)}
    want = interpret(g, feeds)
    got = compile_and_run(g, feeds, tmp_path)
    for name, w in want.items():
        assert np.all(w != 0), name
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=0, err_msg=name)


SIGNED = [DType.I8, DType.I16, DType.I32, DType.I64]
UNSIGNED = [DType.U8, DType.U16, DType.U32, DType.U64]


@pytest.mark.parametrize("dt", SIGNED + UNSIGNED)
def test_integer_ops(check, dt):
    """Mod both ways (with 0 and -1 divisors and the most negative dividend), bitwise ops,
    Sign and Shrink (compared and shifted in float32, truncated back)."""
    g = Graph(f"ints_{dt}")
    a = g.add_input("a", TensorType((4, 6), dt))
    b = g.add_input("b", TensorType((6,), dt))
    nodes = [g.add_node("Mod", [a, b], {"fmod": f}) for f in (0, 1)]
    nodes += [g.add_node("Mod", [a, g.const(np.array(k, dt.np), f"k{i}")], {"fmod": f})
              for i, k in enumerate((3, 0, -1 if dt.is_signed else 1, 7)) for f in (0, 1)]
    nodes += [g.add_node(op, [a, b]) for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor")]
    nodes += [g.add_node(op, [a]) for op in ("BitwiseNot", "Sign")]
    nodes.append(g.add_node("Shrink", [a], {"bias": 1.0, "lambd": 2.5}))
    _outputs(g, nodes)
    info = np.iinfo(dt.np)
    rng = np.random.default_rng(3)
    av = rng.integers(0 if not dt.is_signed else -50, 50, (4, 6)).astype(dt.np)
    av[0, :3] = info.min, info.max, 0
    bv = np.array([3, 0, -1 if dt.is_signed else 1, -7 if dt.is_signed else 7, 5, 2], dt.np)
    if not dt.is_signed:  # Shrink's float32 x - bias stays non-negative
        av[av == 3] = 4
    check(g, {"a": av, "b": bv})


@pytest.mark.parametrize("dt", UNSIGNED)
def test_bit_shift(check, dt):
    """Shift counts from 0 to past the width (0 there, not C's undefined result)."""
    g = Graph(f"shift_{dt}")
    bits = 8 * dt.itemsize
    x = g.add_input("x", TensorType((3, 8), dt))
    n = g.add_input("n", TensorType((8,), dt))
    nodes = [g.add_node("BitShift", [x, n], {"direction": d}) for d in ("LEFT", "RIGHT")]
    nodes += [g.add_node("BitShift", [x, g.const(np.array(k, dt.np), f"k{k}")], {"direction": d})
              for k in (0, 3, bits - 1, bits) for d in ("LEFT", "RIGHT")]
    _outputs(g, nodes)
    xv = np.array([[1, 255, 16, 7, 200, 3, 128, 0]] * 3, dt.np)
    xv[2] = np.iinfo(dt.np).max
    nv = np.array([0, 1, 3, bits - 1, bits, bits + 1, bits // 2, 2], dt.np)
    check(g, {"x": xv, "n": nv})


def test_xor_broadcasts(check):
    g = Graph("xor")
    p = g.add_input("p", TensorType((3, 1, 5, 6), DType.BOOL))
    q = g.add_input("q", TensorType((1, 4, 1, 6), DType.BOOL))
    _outputs(g, [g.add_node("Xor", [p, q]), g.add_node("Xor", [q, p])])
    check(g)


@pytest.mark.parametrize("dt", [F32, F64, F16])
def test_mod_float(check, dt):
    g = Graph("fmod")
    a = g.add_input("a", TensorType((3, 5), dt))
    b = g.add_input("b", TensorType((5,), dt))
    _outputs(g, [g.add_node("Mod", [a, b], {"fmod": 1}),
                 g.add_node("Mod", [a, g.const(0.75, "c", dt)], {"fmod": 1})])
    av = np.array([[-4.5, 4.5, -4.5, 4.5, 7.25], [0, -0.0, 1e3, -1e3, 3], [1, 2, 3, 4, 5]],
                  dt.np)
    check(g, {"a": av, "b": np.array([2, -2, 0.5, 3, -0.75], dt.np)}, tol=1e-6)


@pytest.mark.parametrize("dt", [F32, F16])
def test_hardmax(check, dt):
    """Every axis; ties go to the first maximum, NaN is skipped, a row starting with NaN is 0."""
    g = Graph("hardmax")
    x = g.add_input("x", TensorType((3, 4, 5), dt))
    s = g.add_input("s", TensorType((6, 4), dt))
    nodes = [g.add_node("Hardmax", [x], {"axis": a}) for a in (0, 1, 2, -2)]
    nodes += [g.add_node("Hardmax", [s], {"axis": a}) for a in (0, 1)]
    _outputs(g, nodes)
    nan = np.nan
    sv = np.array([[1, 1, 1, 1], [2, 3, 3, 1], [nan, 1, 5, 2], [1, nan, 5, 2],
                   [-np.inf] * 4, [nan] * 4], dt.np)
    xv = np.random.default_rng(4).integers(-3, 3, (3, 4, 5)).astype(dt.np)  # many ties
    check(g, {"x": xv, "s": sv})


def test_float16_formulas_compute_in_float32():
    """A float16 operand is widened once, the formula runs in float, the result narrows once."""
    _load_kernels()
    r = CRenderer()
    x = var("x", F16)
    text = r.expr(SCALARS["Elu"](x, alpha=2.0))
    assert text == "(_Float16)((float)x < 0.0f ? 2.0f * expm1f((float)x) : (float)x)"
    assert SCALARS["IsNaN"](x).dtype is DType.BOOL
    assert r.expr(SCALARS["BitwiseNot"](var("u", DType.U8))) == "u ^ 255"
    assert SCALARS["Relu"](var("acc", F32)).dtype is F32  # epilogues keep their float32
    assert r.expr(SCALARS["BitCast"](x, to=5)) == \
        "((union { _Float16 from; int16_t to; }){ .from = x }).to"  # bits are not widened
    with pytest.raises(TypeError, match="size"):
        bitcast(x, F32)


# -- through the ONNX frontend, against onnxruntime --------------------------------------------

def _onnx_model(nodes, inputs, outputs, opset: int):
    graph = helper.make_graph(nodes, "m", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=10)


def test_castlike_and_size_from_onnx(tmp_path):
    """CastLike becomes a Cast to the second input's dtype (whatever its values); Size folds to
    a constant at import."""
    T = TensorProto
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("CastLike", ["x", "like16"], ["y16"]),
             helper.make_node("CastLike", ["x", "like_i32"], ["yi"]),
             helper.make_node("CastLike", ["h", "like64"], ["y64"]),
             helper.make_node("Size", ["x"], ["n"])]
    inputs = [vi("x", T.FLOAT, [3, 4]), vi("h", T.FLOAT16, [3, 4]), vi("like16", T.FLOAT16, [0]),
              vi("like_i32", T.INT32, [1]), vi("like64", T.DOUBLE, [2])]
    outputs = [vi("y16", T.FLOAT16, None), vi("yi", T.INT32, None), vi("y64", T.DOUBLE, None),
               vi("n", T.INT64, None)]
    model = _onnx_model(nodes, inputs, outputs, 21)
    rng = np.random.default_rng(5)
    feeds = {"x": (rng.standard_normal((3, 4)) * 50).astype(np.float32),
             "h": rng.standard_normal((3, 4)).astype(np.float16),
             "like16": np.zeros(0, np.float16), "like_i32": np.zeros(1, np.int32),
             "like64": np.zeros(2, np.float64)}
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    edgec.compile(model, tmp_path, name="castlike")
    got = load(tmp_path).run(feeds)
    for w, (name, g) in zip(want, got.items(), strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_array_equal(g, w, err_msg=name)


def test_bit_cast_keeps_every_bit(tmp_path, strict_build):
    """Every same-width pair; NaN payloads, -0.0 and subnormals come through bit for bit."""
    groups = [[F64, DType.I64, DType.U64], [F32, DType.I32, DType.U32],
              [F16, DType.I16, DType.U16], [DType.I8, DType.U8, DType.BOOL]]
    g = Graph("bitcast")
    feeds, pairs = {}, []
    rng = np.random.default_rng(6)
    for group in groups:
        for src in group:
            x = g.add_input(f"x_{src}", TensorType((2, 8), src))
            top = 2 if DType.BOOL in group else 256  # a bool byte is 0 or 1
            bits = rng.integers(0, top, (2, 8 * src.itemsize), dtype=np.uint8)
            feeds[x.name] = bits.view(src.np)
            if src.is_float:  # a quiet NaN with a payload, -0.0, the smallest subnormal
                feeds[x.name][0, :3] = np.array([0, 0, 1], f"u{src.itemsize}").view(src.np)
                feeds[x.name][0, 0] = np.nan
                feeds[x.name][0, 1] = -0.0
            pairs += [(x, g.add_node("BitCast", [x], {"to": to_onnx(dst)}).output)
                      for dst in group if dst != src]
    g.outputs = [y for _, y in pairs]
    got = compile_and_run(g, feeds, tmp_path)
    for x, y in pairs:
        assert got[y.name].dtype == y.dtype.np
        assert got[y.name].tobytes() == feeds[x.name].tobytes(), (x.type, y.type)
