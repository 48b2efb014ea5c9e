"""Quantization ops against onnxruntime (bit-exact integer outputs), and against numpy oracles
for the forms onnxruntime refuses (per-row a_zero_point, per-channel ConvInteger w_zero_point).

onnxruntime's u8 x s8 products on x86 without VNNI add pairs of u8*s8 products in int16 with
saturation (pmaddubsw), so their results are exact only while such a pair cannot pass 32767;
the u8 x s8 cases here keep the u8 operand below 128, as the onnxruntime quantization tool's
`reduce_range` does for the weights.
"""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from opcheck import check, rand

from edgec.errors import ShapeError
from edgec.ir import DType, Graph, TensorType, get_op

F32, F16 = np.float32, np.float16
QTYPES = [np.uint8, np.int8, np.uint16, np.int16]
RNG = np.random.default_rng(7)


def ints(shape, dtype, lo=None, hi=None):
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def scales(n, lo=0.01, hi=0.1, dtype=F32):
    return RNG.uniform(lo, hi, size=n).astype(dtype)


# -- QuantizeLinear / DequantizeLinear -----------------------------------------------------------

X = (rand(2, 3, 4, 6, seed=1) * 4).astype(F32)
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.5, 1.5, 2.5, -0.5, -2.5, 1e10, -1e10, 0.0, -0.0],
                    F32)


@pytest.mark.parametrize("dtype", QTYPES)
def test_quantize_per_tensor(dtype):
    z = np.array(3, dtype)
    check("QuantizeLinear", [X, np.array(0.03, F32), z])
    check("QuantizeLinear", [X, np.array([0.03], F32), z.reshape(1)], consts=(1, 2))
    # ties go to even, NaN to the minimum, infinities saturate
    check("QuantizeLinear", [SPECIALS, np.array(1.0, F32), z])


@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_quantize_per_axis(dtype, axis):
    n = X.shape[axis]
    check("QuantizeLinear", [X, scales(n), ints(n, dtype, 0, 9)], {"axis": axis})


@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize("axis,block", [(1, 2), (3, 4), (2, 3)])
def test_quantize_blocked(dtype, axis, block):
    shape = list(X.shape)
    shape[axis] = -(-shape[axis] // block)  # a last partial block when block does not divide
    check("QuantizeLinear", [X, scales(shape), ints(shape, dtype, 0, 9)],
          {"axis": axis, "block_size": block})


def test_quantize_without_zero_point():
    check("QuantizeLinear", [X, np.array(0.02, F32)])  # uint8
    check("QuantizeLinear", [X, np.array(0.02, F32)], {"output_dtype": 3})  # int8
    check("QuantizeLinear", [X, np.array(0.002, F32)], {"output_dtype": 5})  # int16


def test_quantize_float16():
    check("QuantizeLinear", [X.astype(F16), np.array(0.03, F16), np.array(100, np.uint8)])
    check("QuantizeLinear", [X.astype(F16), scales(3, dtype=F16), ints(3, np.int8)])


@pytest.mark.parametrize("dtype", [*QTYPES, np.int32])
def test_dequantize(dtype):
    q = ints((2, 3, 4, 6), dtype)
    exact = {"rtol": 0, "atol": 0}
    check("DequantizeLinear", [q, np.array(0.03, F32), np.array(7, dtype)], **exact)
    check("DequantizeLinear", [q, np.array(0.03, F32)], **exact)
    if dtype != np.int32:
        check("DequantizeLinear", [q, scales(6), ints(6, dtype)], {"axis": -1}, **exact)
        check("DequantizeLinear", [q, scales((2, 2, 4, 6)), ints((2, 2, 4, 6), dtype)],
              {"axis": 1, "block_size": 2}, **exact)


def test_dequantize_float16():
    q = ints((3, 5), np.uint8)
    check("DequantizeLinear", [q, np.array(0.03, F16), np.array(7, np.uint8)], rtol=0, atol=0)
    check("DequantizeLinear", [q, scales(5, dtype=F16), ints(5, np.uint8)], {"axis": 1},
          rtol=0, atol=0)


def test_dynamic_quantize():
    for x in (X, np.array([-253, 257, 1, 3], F32),  # zero point 126.5: rounds to even
              np.zeros(5, F32), -np.abs(X), np.abs(X), np.array([np.nan, 1, -1], F32)):
        check("DynamicQuantizeLinear", [x], n_outputs=3, rtol=0, atol=0)


# -- matrix products ---------------------------------------------------------------------------

def test_matmul_integer():
    a = ints((2, 3, 4, 16), np.uint8, 0, 127)
    b = ints((16, 5), np.int8)
    check("MatMulInteger", [a, b, np.array(7, np.uint8), np.array(-3, np.int8)], consts=(1,))
    check("MatMulInteger", [a, b, None, ints(5, np.int8)])  # per column of B
    check("MatMulInteger", [a[0, 0, 0], b])  # 1-D A
    check("MatMulInteger", [a, ints((3, 16, 5), np.int8, -60, 60)])  # batch broadcast
    check("MatMulInteger", [ints((3, 7), np.uint8), ints((7, 4), np.uint8),
                            np.array([200], np.uint8), np.array([9], np.uint8)])
    check("MatMulInteger", [ints((3, 7), np.int8), ints((7, 4), np.int8)])


def test_matmul_integer_per_row_zero_point():
    """onnxruntime takes only a per-tensor a_zero_point; the spec's per-row form, by numpy."""
    a, b = ints((2, 4, 6), np.uint8), ints((6, 3), np.uint8)
    for za in (ints(4, np.uint8), ints((2, 4, 1), np.uint8)):
        rows = za.reshape(4, 1) if za.ndim == 1 else za  # one zero point per row of A
        want = (a.astype(np.int32) - rows) @ b.astype(np.int32)
        got = get_op("MatMulInteger").run([a, b, za, None], {})[0]
        np.testing.assert_array_equal(got, want)


def qlinear_matmul_inputs(a, b, *, per_column=False, sdt=F32, ydt=None):
    n = b.shape[-1]
    return [a, np.array([0.02], sdt), np.array([3], a.dtype), b,
            scales(n if per_column else 1, 0.001, 0.01, sdt),
            ints(n if per_column else 1, b.dtype, -5, 5), np.array([0.05], sdt),
            np.array([5], ydt or a.dtype)]


@pytest.mark.parametrize("sdt", [F32, F16])
def test_qlinear_matmul(sdt):
    a8 = ints((2, 3, 4, 16), np.uint8, 0, 127)
    b8 = ints((16, 6), np.int8)
    check("QLinearMatMul", qlinear_matmul_inputs(a8, b8, sdt=sdt))
    check("QLinearMatMul", qlinear_matmul_inputs(a8, b8, per_column=True, sdt=sdt),
          consts=(3, 4, 5))
    check("QLinearMatMul", qlinear_matmul_inputs(a8.astype(np.int8), b8, sdt=sdt))
    check("QLinearMatMul", qlinear_matmul_inputs(a8[0, 0, 0], b8, sdt=sdt))
    check("QLinearMatMul", qlinear_matmul_inputs(ints((3, 9), np.uint8), ints((9, 4), np.uint8),
                                                 sdt=sdt))


# -- convolutions ------------------------------------------------------------------------------

def conv_attrs(nsp, strides=None, pads=None, dilations=None, group=1):
    return {"strides": strides or [1] * nsp, "pads": pads or [0] * (2 * nsp),
            "dilations": dilations or [1] * nsp, "group": group}


CONV_CASES = [
    ((1, 3, 8, 8), (4, 3, 3, 3), conv_attrs(2, pads=[1, 1, 1, 1])),
    ((1, 6, 9, 7), (6, 1, 3, 3), conv_attrs(2, strides=[2, 1], pads=[1, 0, 2, 1], group=6)),
    ((2, 4, 9, 7), (6, 2, 3, 2), conv_attrs(2, strides=[2, 1], pads=[1, 0, 2, 1],
                                            dilations=[2, 1], group=2)),
    ((1, 2, 16), (3, 2, 5), conv_attrs(1, pads=[2, 2], strides=[3])),
    ((1, 2, 5, 6, 4), (3, 2, 3, 2, 2), conv_attrs(3, pads=[1, 0, 1, 0, 1, 1])),
    ((1, 8, 6, 6), (16, 8, 1, 1), conv_attrs(2)),
]


@pytest.mark.parametrize("xs,ws,attrs", CONV_CASES)
def test_qlinear_conv(xs, ws, attrs):
    m = ws[0]
    x, w = ints(xs, np.uint8, 0, 127), ints(ws, np.int8)
    for per_channel in (False, True):
        ins = [x, np.array(0.02, F32), np.array(100, np.uint8), w,
               scales(m if per_channel else (), 0.001, 0.01), np.zeros(m if per_channel else (),
                                                                      np.int8),
               np.array(0.3, F32), np.array(7, np.uint8), ints(m, np.int32, -1000, 1000)]
        check("QLinearConv", ins, attrs, consts=(3, 4, 5, 8))
        check("QLinearConv", ins[:8], attrs)
    # int8 activations and output
    check("QLinearConv", [x.astype(np.int8), np.array(0.02, F32), np.array(-3, np.int8), w,
                          np.array(0.004, F32), np.array(0, np.int8), np.array(0.3, F32),
                          np.array(-7, np.int8)], attrs)


@pytest.mark.parametrize("xs,ws,attrs", CONV_CASES[:4])
def test_conv_integer(xs, ws, attrs):
    x, w = ints(xs, np.uint8), ints(ws, np.uint8)
    check("ConvInteger", [x, w, np.array(100, np.uint8), np.array(3, np.uint8)], attrs)
    check("ConvInteger", [x, w], attrs)


def test_conv_integer_per_channel_zero_point():
    """onnxruntime's ConvInteger refuses a per-channel w_zero_point; numpy's direct sum."""
    x, w = ints((1, 2, 4, 5), np.uint8), ints((3, 2, 2, 2), np.uint8)
    wz = ints(3, np.uint8)
    got = get_op("ConvInteger").run([x, w, np.array(9, np.uint8), wz],
                                    conv_attrs(2, pads=[1, 0, 0, 1]))[0]
    xp = np.pad(x.astype(np.int32) - 9, [(0, 0), (0, 0), (1, 0), (0, 1)])
    wc = w.astype(np.int32) - wz.reshape(3, 1, 1, 1).astype(np.int32)
    want = np.zeros((1, 3, 4, 5), np.int32)
    for m in range(3):
        for i in range(4):
            for j in range(5):
                want[0, m, i, j] = (xp[0, :, i:i + 2, j:j + 2] * wc[m]).sum()
    np.testing.assert_array_equal(got, want)


# -- QGemm and QLinearAdd: onnxruntime's com.microsoft ops of those names -------------------------

def run_contrib(op: str, inputs, attrs=None) -> np.ndarray:
    names = ["" if a is None else f"x{i}" for i, a in enumerate(inputs)]
    inits = [numpy_helper.from_array(a, f"x{i}") for i, a in enumerate(inputs)
             if a is not None and i > 0]
    x0 = helper.make_tensor_value_info("x0", helper.np_dtype_to_tensor_dtype(inputs[0].dtype),
                                       inputs[0].shape)
    node = helper.make_node(op, names, ["y"], domain="com.microsoft", **(attrs or {}))
    graph = helper.make_graph([node], "g", [x0], [onnx.ValueInfoProto(name="y")],
                              initializer=inits)
    model = helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, {"x0": inputs[0]})[0]


def one_node(op: str, inputs, attrs=None) -> np.ndarray:
    """edgec's op through inference and the reference (input 0 a graph input)."""
    g = Graph("one")
    vals = [g.add_input("x0", TensorType(inputs[0].shape, DType.from_numpy(inputs[0].dtype)))]
    vals += [None if a is None else g.const(a, f"c{i}", dtype=DType.from_numpy(a.dtype))
             for i, a in enumerate(inputs[1:], 1)]
    node = g.add_node(op, vals, attrs or {})
    out = get_op(op).run(inputs, node.attrs)[0]
    assert out.dtype == node.output.dtype.np and out.shape == node.output.shape
    return out


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("per_column", [False, True])
def test_qgemm(trans_b, alpha, per_column):
    a = ints((5, 16), np.uint8, 0, 127)
    b = ints((6, 16) if trans_b else (16, 6), np.int8)
    n = () if not per_column else 6
    ins = [a, np.array(0.02, F32), np.array(9, np.uint8), b, scales(n, 0.001, 0.01),
           np.zeros(n, np.int8), ints(6, np.int32, -3000, 3000), np.array(0.3, F32),
           np.array(100, np.uint8)]
    attrs = {"transB": trans_b, "alpha": alpha}
    np.testing.assert_array_equal(one_node("QGemm", ins, attrs), run_contrib("QGemm", ins, attrs))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("b_shape", [(2, 3, 4, 5), (4, 1), (1,)])
def test_qlinear_add(dtype, b_shape):
    for seed in range(8):
        ins = [ints((2, 3, 4, 5), dtype), np.array(RNG.uniform(0.01, 0.1), F32),
               ints((), dtype), ints(b_shape, dtype), np.array(RNG.uniform(0.01, 0.1), F32),
               ints((), dtype), np.array(RNG.uniform(0.01, 0.2), F32), ints((), dtype)]
        np.testing.assert_array_equal(one_node("QLinearAdd", ins),
                                      run_contrib("QLinearAdd", ins), err_msg=f"seed {seed}")


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("shape", [(1, 3, 4, 5), (2, 8, 7, 7), (1, 5, 1, 1), (2, 4, 9)])
def test_qlinear_global_average_pool(dtype, shape):
    for seed in range(6):
        ins = [ints(shape, dtype), np.array(RNG.uniform(0.005, 0.1), F32), ints((), dtype),
               np.array(RNG.uniform(0.005, 0.1), F32), ints((), dtype)]
        attrs = {"channels_last": 0}
        want = run_contrib("QLinearGlobalAveragePool", ins, attrs)
        np.testing.assert_array_equal(one_node("QLinearGlobalAveragePool", ins).reshape(
            want.shape), want, err_msg=f"seed {seed}")
    # fixed point: the multiplier held as q / 2^s (a mean of 4 x 5 equal values is exact)
    x = np.full((1, 1, 4, 5), 17, np.uint8)
    ins = [x, np.array(0.5, F32), np.array(7, np.uint8), np.array(0.25, F32),
           np.array(3, np.uint8)]
    q = round(2**34 / 10)  # (0.5 / 0.25) / 20 = 0.1 at s = 34; 200 x 0.1 rounds to 20
    got = one_node("QLinearGlobalAveragePool", ins, {"rq_mult": [q], "rq_shift": 34})
    assert got.reshape(-1).tolist() == [(17 - 7) * 2 + 3]


# -- errors ------------------------------------------------------------------------------------

def _graph_error(op: str, inputs, attrs=None) -> str:
    g = Graph("bad")
    vals = [g.add_input(f"x{i}", TensorType(a.shape, DType.from_numpy(a.dtype)))
            for i, a in enumerate(inputs)]
    with pytest.raises(ShapeError) as e:
        g.add_node(op, vals, attrs or {})
    return str(e.value)


def test_shape_errors_name_the_problem():
    x = np.zeros((2, 3, 4), F32)
    assert "per-axis scale must be 1-D of length 3" in _graph_error(
        "QuantizeLinear", [x, np.zeros(4, F32)], {"axis": 1})
    assert "blocked scale" in _graph_error(
        "QuantizeLinear", [x, np.zeros((2, 3, 3), F32)], {"axis": 2, "block_size": 2})
    assert "y_zero_point u8[2] must have the shape of its scale" in _graph_error(
        "QuantizeLinear", [x, np.zeros(3, F32), np.zeros(2, np.uint8)], {"axis": 1})
    assert "cannot quantize to i32" in _graph_error(
        "QuantizeLinear", [x, np.zeros((), F32), np.zeros((), np.int32)])
    assert "one per output channel" in _graph_error(
        "QLinearConv", [np.zeros((1, 2, 5, 5), np.uint8), np.zeros((), F32),
                        np.zeros((), np.uint8), np.zeros((4, 2, 3, 3), np.int8),
                        np.zeros(3, F32), np.zeros((), np.int8), np.zeros((), F32),
                        np.zeros((), np.uint8)],
        conv_attrs(2))
    assert "uint8 or int8" in _graph_error(
        "MatMulInteger", [np.zeros((2, 3), F32), np.zeros((3, 2), np.int8)])


def test_fixed_point_multipliers():
    from edgec.ir.ops.quant import fixed_point_multipliers
    # 0.1875 = 3 * 2^-4: s = 33 puts it at 1.5 * 2^30; the smaller channel is exact too
    q, s = fixed_point_multipliers(np.array([0.1875, 0.1875 / 1024], np.float32))
    assert s == 33 and list(q) == [3 * 2**29, 3 * 2**19]
    # a float32 mantissa is kept whole: q / 2^s is the multiplier itself
    m = np.float32(0.0123)
    q, s = fixed_point_multipliers(np.array([m]))
    assert 2**30 <= q[0] < 2**31 and q[0] / 2.0**s == float(m)
    for bad in ([0.25], [1.5], [np.inf], [-0.1], [0.0], [1e-12],  # s would be under 33 or > 58
                [0.3, 0.3 / 2**17]):  # channels 2^17 apart: the small one under 15 bits
        assert fixed_point_multipliers(np.array(bad, np.float32)) is None, bad


def test_blocked_qlinear_conv_refuses_bad_fixed_point_attributes():
    from edgec.ir import parse, verify
    text = """
        graph @g(%x: u8[1,1,1,1,4]) {
          %s = const f32[] dense<[0.01]>
          %z = const u8[] dense<[0]>
          %w = const i8[1,1,1,1] dense<[1]>
          %y = BlockedQLinearConv(%x, %s, %z, %w, %s, none, %s, %z, none) {ATTRS} : u8[1,1,1,1,4]
          return %y
        }""".replace("ATTRS", "dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1], "
                              "channels = 1, block = 4, rq_mult = [5, 6], rq_shift = 20")
    with pytest.raises(ShapeError, match=r"rq_shift in \[33, 58\] and rq_mult one or 1 "):
        verify(parse(text))


def test_fixed_point_qlinear_add_by_hand():
    """sa / sc = 0.5 and sb / sc = 0.75: the larger is 0.75 * 2^0, so s = 21 puts it at
    1572864 (0.75 * 2^21) and 0.5 at 2^20. A - za = -90, 1, 3 and B - zb = 0, 0, -1:
    exactly -45, 0.5 (a tie: half up to 1, where float32 rounds to even, 0) and 0.75."""
    from edgec.ir.ops.quant import add_fixed_point
    assert add_fixed_point(np.float32(0.5), np.float32(0.75)) == ([2**20, 1572864], 21)
    a, b = np.array([10, 101, 103], np.uint8), np.array([50, 50, 49], np.uint8)
    args = (np.float32(1.0), np.uint8(100), b, np.float32(1.5), np.uint8(50), np.float32(2.0),
            np.uint8(60))
    fixed = get_op("QLinearAdd").reference(a, *args, rq_mult=[2**20, 1572864], rq_shift=21)
    assert list(fixed) == [60 - 45, 61, 61]
    assert list(get_op("QLinearAdd").reference(a, *args)) == [15, 60, 61]
    assert add_fixed_point(np.float32(40.0), np.float32(1.0)) is None  # s would be under 16


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_qlinear_resize_is_the_qdq_graph(mode):
    """QLinearResize against onnxruntime running DequantizeLinear -> Resize -> QuantizeLinear
    as written (no graph optimization: its own uint8 resize would not be the QDQ graph)."""
    s, z = np.float32(0.037), np.uint8(121)
    x = np.random.default_rng(6).integers(0, 256, (1, 2, 5, 4)).astype(np.uint8)
    scales = np.array([1.0, 1.0, 2.0, 1.5], np.float32)
    inits = [numpy_helper.from_array(a, n) for n, a in (("s", s), ("z", z), ("sc", scales))]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"]),
             helper.make_node("Resize", ["xf", "", "sc"], ["r"], mode=mode),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 2, x.shape)],
                          [helper.make_tensor_value_info("y", 2, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(m.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = get_op("QLinearResize").reference(
        x, None, scales, None, s, z, **{k: a.default for k, a in
                                        get_op("QLinearResize").attrs.items()} | {"mode": mode})
    assert got.dtype == np.uint8 and got.shape == want.shape == (1, 2, 10, 6)
    np.testing.assert_array_equal(got, want)
