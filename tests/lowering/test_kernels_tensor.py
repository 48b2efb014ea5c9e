"""Tensor, shape and reduction kernels, compiled to C and run, against the interpreter.

Each test builds one graph with many independent nodes (all graph outputs), so one C compile
covers many attribute combinations. The build must be free of gcc warnings in the kernels.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgec.codegen.renderers.c import CRenderer
from edgec.ir import DType, Graph, TensorType
from edgec.ir.onnx_dtypes import to_onnx
from edgec.lowering.kernels.tensor import coalesce_strided
from edgec.lowering.lower import lower_node

F32, I64 = DType.F32, DType.I64


def i64(*v) -> np.ndarray:
    return np.array(v, dtype=np.int64)


def _outputs(g: Graph, nodes) -> None:
    g.outputs = [o for n in nodes for o in n.outputs]


def _kernel_c(g: Graph, node) -> str:
    return CRenderer().kernel(lower_node(node, 0).kernel)


# -- views and movement -----------------------------------------------------------------

def test_views_and_dropout(check):
    g = Graph("views")
    x = g.add_input("x", TensorType((2, 1, 3, 4), F32))
    nodes = [g.add_node("Reshape", [x, g.const(i64(6, -1), "s")]),
             g.add_node("Flatten", [x], {"axis": 2}), g.add_node("Squeeze", [x]),
             g.add_node("Squeeze", [x, g.const(i64(1), "ax")]),
             g.add_node("Unsqueeze", [x, g.const(i64(0, -1), "ax2")]),
             g.add_node("Identity", [x]), g.add_node("Dropout", [x]),
             g.add_node("Dropout", [x, g.const(np.float32(0.3), "r")], num_outputs=2)]
    _outputs(g, nodes)
    check(g)


def test_dropout_mask_with_aliased_output(check):
    """The planner makes Dropout's output a view of its input; the kernel writes only the mask."""
    g = Graph("dropout")
    x = g.add_input("x", TensorType((3, 4), F32))
    d = g.add_node("Dropout", [x], num_outputs=2)
    g.outputs = [g.add_node("Relu", [d.outputs[0]]).output, d.outputs[1]]
    check(g)


def test_transpose_all_perms(check):
    g = Graph("transpose")
    x = g.add_input("x", TensorType((2, 3, 4), F32))
    y = g.add_input("y", TensorType((2, 3, 4, 5), F32))
    z = g.add_input("z", TensorType((1, 3, 1, 5), F32))
    nodes = [g.add_node("Transpose", [x], {"perm": list(p)})
             for p in itertools.permutations(range(3))]
    nodes += [g.add_node("Transpose", [y], {"perm": p})
              for p in ([0, 2, 3, 1], [0, 3, 1, 2], [1, 0, 2, 3], [2, 3, 0, 1], [-1, 0, 1, 2])]
    nodes += [g.add_node("Transpose", [x]), g.add_node("Transpose", [z], {"perm": [2, 3, 0, 1]})]
    # big enough to be tiled: NCHW -> NHWC, a 2-D transpose, one with a dim between the tiles
    big = g.add_input("big", TensorType((2, 16, 24, 20), F32))
    mat = g.add_input("mat", TensorType((72, 96), F32))
    odd = g.add_input("odd", TensorType((32, 5, 128), F32))
    # dims no tile divides (edge tiles), and one of 16K elements or more (on the pool)
    edge = g.add_input("edge", TensorType((37, 203), F32))
    wide = g.add_input("wide", TensorType((40, 6625), F32))
    nodes += [g.add_node("Transpose", [big], {"perm": [0, 2, 3, 1]}),
              g.add_node("Transpose", [big], {"perm": [0, 3, 1, 2]}),
              g.add_node("Transpose", [mat]), g.add_node("Transpose", [odd]),
              g.add_node("Transpose", [edge]), g.add_node("Transpose", [wide])]
    _outputs(g, nodes)
    check(g)


def test_transpose_copies_contiguous_runs():
    """NCHW -> CNHW moves whole H*W rows: two loops, the inner one unit-stride."""
    g = Graph("t")
    x = g.add_input("x", TensorType((2, 3, 4, 5), F32))
    n = g.add_node("Transpose", [x], {"perm": [1, 0, 2, 3]})
    text = _kernel_c(g, n)
    assert text.count("for (") == 3  # C, N, then H*W merged
    assert "i2 < 20" in text and "x[i0 * 20 + i1 * 60 + i2]" in text
    big = g.add_input("big", TensorType((2, 64, 56, 56), F32))
    tiled = _kernel_c(g, g.add_node("Transpose", [big], {"perm": [0, 2, 3, 1]}))
    assert "ta < 196" in tiled and "tb < 4" in tiled  # 16 x 16 tiles of (H*W, C)
    assert coalesce_strided([(2, 12), (3, 4), (4, 1)]) == [(24, 1)]
    assert coalesce_strided([(3, 4), (2, 12), (1, 7), (4, 1)]) == [(3, 4), (2, 12), (4, 1)]


def test_concat_and_split(check):
    g = Graph("concat")
    a = g.add_input("a", TensorType((2, 3, 4), F32))
    b = g.add_input("b", TensorType((2, 1, 4), F32))
    w = g.const(np.arange(16, dtype=np.float32).reshape(2, 2, 4), "w")
    nodes = [g.add_node("Concat", [a, b, w], {"axis": 1}),
             g.add_node("Concat", [a, a], {"axis": 0}),
             g.add_node("Concat", [a, a, a], {"axis": -1}),
             g.add_node("Concat", [b], {"axis": 2}),
             g.add_node("Split", [a, g.const(i64(1, 2), "sp")], {"axis": 1}, num_outputs=2),
             g.add_node("Split", [a, g.const(i64(3, 0, 1), "sp2")], {"axis": -1},
                        num_outputs=3),
             g.add_node("Split", [a], {"axis": 1, "num_outputs": 2}, num_outputs=2),
             g.add_node("Split", [a], {"axis": 0, "num_outputs": 2}, num_outputs=2)]
    _outputs(g, nodes)
    check(g)


SLICES = [  # starts, ends, axes, steps
    ([1], [3], None, None), ([0, 1], [2, -1], [0, 2], None), ([-1], [-100], [1], [-1]),
    ([4, 0], [0, 100], [2, 0], [-2, 1]), ([0, 0, 0], [2, 3, 5], None, [1, 2, 2]),
    ([1], [1], [0], None), ([10], [-10], [-1], [-3]), ([0], [2], [-2], [1]),
]


def test_slice(check):
    g = Graph("slice")
    x = g.add_input("x", TensorType((2, 3, 5), F32))
    nodes = []
    for k, (s, e, a, st) in enumerate(SLICES):
        ins = [x, g.const(i64(*s), f"s{k}"), g.const(i64(*e), f"e{k}"),
               None if a is None else g.const(i64(*a), f"a{k}"),
               None if st is None else g.const(i64(*st), f"st{k}")]
        while ins[-1] is None:
            ins.pop()
        nodes.append(g.add_node("Slice", ins))
    _outputs(g, nodes)
    check(g)


PADS = [  # mode, pads, axes
    ("constant", [1, 2, 0, 3], [1, 2]), ("constant", [0, 0, 1, 0, 0, 2], None),
    ("constant", [0, -1, 2, 0, 1, -2], None), ("reflect", [0, 2, 1, 0, 1, 3], None),
    ("reflect", [0, 7, 0, 0, 9, 0], None), ("edge", [1, 3, 2, 2, 0, 1], None),
    ("wrap", [0, 5, 1, 0, 7, 2], None), ("edge", [0, -1, 2, 0, 0, -1], None),
    ("reflect", [2, 0, 0, 1, 0, 0], None), ("wrap", [-1, 3], [-1]),
]


def test_pad(check):
    g = Graph("pad")
    x = g.add_input("x", TensorType((2, 3, 4), F32))
    nodes = []
    for k, (mode, pads, axes) in enumerate(PADS):
        ins = [x, g.const(i64(*pads), f"p{k}")]
        if axes is not None:
            ins += [None, g.const(i64(*axes), f"ax{k}")]
        nodes.append(g.add_node("Pad", ins, {"mode": mode}))
    cv = g.add_input("cv", TensorType((), F32))
    nodes.append(g.add_node("Pad", [x, g.const(i64(1, 0, 1, 0, 2, 1), "pc"), cv]))
    nodes.append(g.add_node("Pad", [x, g.const(i64(0, 1, 0, 0, 1, 0), "pk"),
                                    g.const(np.float32(-7.5), "k")]))
    _outputs(g, nodes)
    check(g)


def test_pad_integer_and_one_element_axis(check):
    g = Graph("padi")
    x = g.add_input("x", TensorType((3, 1), DType.I32))
    nodes = [g.add_node("Pad", [x, g.const(i64(1, 2, 0, 3), f"p{m}")], {"mode": m})
             for m in ("constant", "reflect", "edge", "wrap")]
    nodes.append(g.add_node("Pad", [x, g.const(i64(1, 1, 1, 1), "pv"),
                                    g.const(np.int32(9), "v")]))
    _outputs(g, nodes)
    check(g)


def test_gather(check):
    g = Graph("gather")
    x = g.add_input("x", TensorType((3, 4, 5), F32))
    rows = g.add_input("rows", TensorType((2, 2), I64))
    nodes = [g.add_node("Gather", [x, g.const(i64(0, 2, -1), "i0")], {"axis": 0}),
             g.add_node("Gather", [x, g.const(i64([0, 3], [-4, 1]), "i1")], {"axis": 1}),
             g.add_node("Gather", [x, g.const(np.array([4, -2, 0], np.int32), "i2")],
                        {"axis": -1}),
             g.add_node("Gather", [x, g.const(np.int64(-2), "i3")], {"axis": 1}),
             g.add_node("Gather", [x, rows], {"axis": 2})]
    _outputs(g, nodes)
    check(g, {"x": np.random.default_rng(3).standard_normal((3, 4, 5)).astype(np.float32),
              "rows": i64([4, -5], [0, -1])})


def test_shape_fill_range(check):
    g = Graph("fill")
    x = g.add_input("x", TensorType((2, 3, 4), F32))
    nodes = [g.add_node("Shape", [x]), g.add_node("Shape", [x], {"start": 1, "end": -1}),
             g.add_node("Shape", [x], {"start": 5}),
             g.add_node("ConstantOfShape", [g.const(i64(2, 3), "s")]),
             g.add_node("ConstantOfShape", [g.const(i64(4), "s2")],
                        {"value": np.array([7], np.int64)}),
             g.add_node("ConstantOfShape", [g.const(i64(3), "s3")],
                        {"value": np.array([True])}),
             g.add_node("ConstantOfShape", [g.const(i64(2, 2), "s4")],
                        {"value": np.array([-1.5], np.float32)}),
             g.add_node("Range", [g.const(np.int64(10)), g.const(np.int64(-3)),
                                  g.const(np.int64(-4))]),
             g.add_node("Range", [g.const(np.float32(0.5)), g.const(np.float32(3.0)),
                                  g.const(np.float32(0.3))]),
             g.add_node("Range", [g.const(np.int32(0)), g.const(np.int32(5)),
                                  g.const(np.int32(1))])]
    _outputs(g, nodes)
    check(g)


def test_expand_and_tile(check):
    g = Graph("expand")
    x = g.add_input("x", TensorType((3, 1), F32))
    y = g.add_input("y", TensorType((2, 1, 4), DType.I64))
    nodes = [g.add_node("Expand", [x, g.const(i64(2, 3, 4), "s0")]),
             g.add_node("Expand", [x, g.const(i64(1, 1), "s1")]),
             g.add_node("Expand", [y, g.const(i64(3, 1, 1, 1), "s2")]),
             g.add_node("Expand", [y, g.const(i64(5, 1), "s3")]),
             g.add_node("Tile", [x, g.const(i64(2, 3), "r0")]),
             g.add_node("Tile", [y, g.const(i64(1, 3, 2), "r1")]),
             g.add_node("Tile", [y, g.const(i64(2, 1, 1), "r2")]),
             g.add_node("Tile", [y, g.const(i64(1, 1, 1), "r3")])]
    _outputs(g, nodes)
    check(g)


# -- reductions -------------------------------------------------------------------------

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"]
AXES = [None, [0], [1], [2], [-1, 0], [1, 2], [0, 2], [3], [0, 1, 3]]


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_float(check, keepdims):
    g = Graph("reduce")
    x = g.add_input("x", TensorType((3, 4, 1, 5), F32))
    w = g.add_input("w", TensorType((2, 3, 37), F32))
    nodes = []
    for op in REDUCE_OPS:
        for k, axes in enumerate(AXES):
            ins = [x] if axes is None else [x, g.const(i64(*axes), f"a{k}")]
            nodes.append(g.add_node(op, ins, {"keepdims": keepdims}))
        nodes.append(g.add_node(op, [x, g.const(np.zeros(0, np.int64), "none")],
                                {"noop_with_empty_axes": 1, "keepdims": keepdims}))
        # long inner axes: 8 accumulators in lanes, then the tail of 37 % 8
        nodes += [g.add_node(op, [w, g.const(i64(*a), "wa")], {"keepdims": keepdims})
                  for a in ([2], [0, 2], [1, 2])]
    _outputs(g, nodes)
    rng = np.random.default_rng(4)
    sign = lambda shape: rng.choice([-1, 1], shape).astype(np.float32)  # noqa: E731
    check(g, {"x": rng.uniform(0.5, 1.5, (3, 4, 1, 5)).astype(np.float32) * sign((3, 4, 1, 5)),
              "w": rng.uniform(0.9, 1.1, (2, 3, 37)).astype(np.float32) * sign((2, 3, 37))})


@pytest.mark.parametrize("dt", [DType.I32, DType.I64, DType.U8, DType.BOOL])
def test_reduce_integer(check, dt):
    g = Graph("reducei")
    x = g.add_input("x", TensorType((2, 3, 4), dt))
    ops = ["ReduceMax", "ReduceMin"] if dt is DType.BOOL else REDUCE_OPS
    nodes = [g.add_node(op, [x] if a is None else [x, g.const(i64(*a), f"a{k}")])
             for op in ops for k, a in enumerate([None, [0], [2], [0, 2], [1]])]
    _outputs(g, nodes)
    rng = np.random.default_rng(5)
    if dt is DType.BOOL:
        v = rng.random((2, 3, 4)) < 0.7
    else:
        v = rng.integers(-7 if dt.is_signed else 0, 8, (2, 3, 4)).astype(dt.np)
        # wrap-around (the reference's integer mean divides in float64: keep int64 exact)
        big = 2**40 if dt is DType.I64 else np.iinfo(dt.np).max
        v.reshape(-1)[:2] = (-big if dt.is_signed else 0), big
    check(g, {"x": v})


def test_reduce_max_keeps_nan(check):
    g = Graph("nanred")
    x = g.add_input("x", TensorType((2, 3), F32))
    long = g.add_input("long", TensorType((3, 40), F32))  # reduced in 8 lanes
    nodes = [g.add_node(op, [v, g.const(i64(a), f"a{a}{op}")], {"keepdims": 0})
             for op in ("ReduceMax", "ReduceMin") for v in (x, long) for a in (0, 1)]
    _outputs(g, nodes)
    lv = np.arange(120, dtype=np.float32).reshape(3, 40) - 60
    lv[0, 3], lv[1, 37] = np.nan, np.nan
    check(g, {"x": np.array([[1, np.nan, 3], [np.nan, -2, 0]], np.float32), "long": lv})


def test_argmax(check):
    g = Graph("argmax")
    x = g.add_input("x", TensorType((3, 4, 5), F32))
    t = g.add_input("t", TensorType((2, 6), DType.I32))
    nodes = [g.add_node("ArgMax", [v], {"axis": a, "keepdims": k, "select_last_index": s})
             for v, axes in ((x, (0, 1, 2, -1)), (t, (0, 1)))
             for a in axes for k in (0, 1) for s in (0, 1)]
    _outputs(g, nodes)
    xv = np.random.default_rng(6).integers(-3, 3, (3, 4, 5)).astype(np.float32)  # ties
    xv[0, 0, :2] = np.nan
    xv[1, :, 1] = np.nan
    check(g, {"x": xv, "t": np.array([[1, 5, 5, 2, 0, 5], [-1, -1, -3, -1, -2, -1]],
                                     np.int32)})


def test_reduce_inner_axis_uses_one_accumulator():
    g = Graph("r")
    x = g.add_input("x", TensorType((4, 8, 16), F32))
    n = g.add_node("ReduceSum", [x, g.const(i64(2), "a")])
    text = _kernel_c(g, n)
    assert "float acc = 0.0f;" in text and "y[i] = acc;" in text.replace("k0", "i")
    n2 = g.add_node("ReduceMean", [x, g.const(i64(0), "b")])
    text2 = _kernel_c(g, n2)  # outer axis: accumulate rows of y, unit stride
    assert "y[i1] = y[i1] + x[i0 * 128 + i1];" in text2


def test_cast_kind_of_ops_compose(check):
    """Cast between the index dtypes the shape ops produce, as a shape subgraph does."""
    g = Graph("shapes")
    x = g.add_input("x", TensorType((2, 3), F32))
    s = g.add_node("Shape", [x]).output
    c = g.add_node("Cast", [s], {"to": to_onnx(F32)}).output
    _outputs(g, [g.add_node("Mul", [c, g.const(np.float32(0.5))])])
    check(g)
