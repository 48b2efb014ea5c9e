"""The channel-blocked ops' numpy references against independent oracles: onnxruntime's Conv,
MaxPool and AveragePool on the unblocked data, and blocking written out element by element."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgec.ir import get_op

RNG = np.random.default_rng(7)


def _ort(node, feeds: dict, inits=()) -> np.ndarray:
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in feeds.items()]
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                          None)],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _block_by_hand(x: np.ndarray, b: int) -> np.ndarray:
    n, c, h, w = x.shape
    out = np.zeros((n, -(-c // b), h, w, b), x.dtype)
    for ch in range(c):
        out[:, ch // b, :, :, ch % b] = x[:, ch]
    return out


@pytest.mark.parametrize("c,b", [(3, 8), (16, 8), (24, 16), (10, 4)])
def test_reorders(c, b):
    x = RNG.standard_normal((2, c, 3, 5)).astype(np.float32)
    xb = get_op("ReorderToBlocked").reference(x, block=b)
    np.testing.assert_array_equal(xb, _block_by_hand(x, b))
    np.testing.assert_array_equal(get_op("ReorderFromBlocked").reference(xb, channels=c), x)


@pytest.mark.parametrize("c,m,k,s,d,group,blocked", [
    (8, 12, 3, 1, 1, 1, 1), (3, 16, 7, 2, 1, 1, 0), (16, 16, 3, 2, 1, 16, 1),
    (10, 10, 5, 1, 2, 10, 1), (12, 5, 1, 2, 1, 1, 1)])
def test_blocked_conv(c, m, k, s, d, group, blocked):
    b = 8
    x = RNG.standard_normal((1, c, 11, 9)).astype(np.float32)
    w = RNG.standard_normal((m, c // group, k, k)).astype(np.float32)
    bias = RNG.standard_normal(m).astype(np.float32)
    z = RNG.standard_normal((1, m, -(-11 // s), -(-9 // s))).astype(np.float32)
    p = d * (k - 1) // 2
    pads = [p, p, p, p]
    conv = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=pads, strides=[s, s],
                            dilations=[d, d], group=group)
    want = _ort(conv, {"x": x}, [("w", w), ("b", bias)])
    want = np.clip(want + z[:, :, :want.shape[2], :want.shape[3]], 0, 6)
    zb = _block_by_hand(z[:, :, :want.shape[2], :want.shape[3]], b)
    got = get_op("BlockedConv").reference(
        _block_by_hand(x, b) if blocked else x, w, bias, zb, pads=pads, strides=[s, s],
        dilations=[d, d], group=group, activation="Clip", activation_params=[0.0, 6.0],
        channels=c, block=b, blocked_input=blocked)
    np.testing.assert_allclose(got, _block_by_hand(want, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,k,s,p", [("max", 3, 2, 1), ("avg", 2, 2, 0), ("avg", 3, 1, 1),
                                        ("max", 0, 0, 0), ("avg", 0, 0, 0)])
def test_blocked_pool(mode, k, s, p):
    b, c = 8, 12
    x = RNG.standard_normal((2, c, 7, 6)).astype(np.float32)
    if k == 0:
        node = helper.make_node("GlobalMaxPool" if mode == "max" else "GlobalAveragePool",
                                ["x"], ["y"])
        attrs = {"kernel_shape": [], "strides": [], "pads": []}
    else:
        node = helper.make_node("MaxPool" if mode == "max" else "AveragePool", ["x"], ["y"],
                                kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
        attrs = {"kernel_shape": [k, k], "strides": [s, s], "pads": [p] * 4}
    want = _ort(node, {"x": x})
    got = get_op("BlockedPool").reference(_block_by_hand(x, b), mode=mode, count_include_pad=0,
                                          channels=c, **attrs)
    np.testing.assert_allclose(got, _block_by_hand(want, b), rtol=1e-5, atol=1e-6)


# -- the integer ops -------------------------------------------------------------------------

def test_blocked_pad_by_hand():
    x = RNG.integers(0, 256, (1, 2, 3, 2, 4)).astype(np.uint8)
    y = get_op("BlockedPad").reference(x, np.array(7, np.uint8), pads=[1, 0, 2, 1])
    assert y.shape == (1, 2, 6, 3, 4)
    want = np.full((1, 2, 6, 3, 4), 7, np.uint8)
    for h in range(3):
        for w in range(2):
            want[:, :, 1 + h, w, :] = x[:, :, h, w, :]
    np.testing.assert_array_equal(y, want)


def _qlinear_conv_ort(x, w, b, sx, zx, sw, sy, zy, **attrs) -> np.ndarray:
    u8 = TensorProto.UINT8
    inits = [numpy_helper.from_array(a, n) for n, a in (
        ("sx", np.float32(sx)), ("zx", np.uint8(zx)), ("w", w), ("sw", sw), ("zw",
         np.zeros(len(sw), np.int8)), ("sy", np.float32(sy)), ("zy", np.uint8(zy)), ("b", b))]
    node = helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"],
                            ["y"], **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", u8, x.shape)],
                          [helper.make_tensor_value_info("y", u8, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.mark.parametrize("c,m,k,s,group,xb", [(3, 16, 3, 2, 1, 4), (8, 12, 3, 1, 1, 8),
                                               (16, 16, 3, 1, 16, 8), (8, 8, 1, 1, 1, 8)])
def test_blocked_qlinear_conv_against_onnxruntime(c, m, k, s, group, xb):
    b = 8
    x = RNG.integers(0, 256, (1, c, 9, 7)).astype(np.uint8)
    # 7-bit weights: onnxruntime's uint8 x int8 kernel on AVX2 hosts without VNNI sums
    # products pairwise in saturating int16 (vpmaddubsw), exact only while 2*255*|w| < 2^15
    w = RNG.integers(-64, 64, (m, c // group, k, k)).astype(np.int8)
    bias = RNG.integers(-500, 500, m).astype(np.int32)
    sw = RNG.uniform(0.002, 0.02, m).astype(np.float32)
    p = k // 2
    attrs = {"strides": [s, s], "pads": [p, p, p, p], "group": group, "dilations": [1, 1]}
    want = _qlinear_conv_ort(x, w, bias, 0.02, 100, sw, 0.5, 30, **attrs)
    xbk = get_op("ReorderToBlocked").reference(x, block=xb)
    got = get_op("BlockedQLinearConv").reference(
        xbk, np.float32(0.02), np.uint8(100), w, sw, np.zeros(m, np.int8), np.float32(0.5),
        np.uint8(30), bias, channels=c, block=b, **attrs)
    assert got.shape == (1, -(-m // b), *want.shape[2:], b)
    np.testing.assert_array_equal(get_op("ReorderFromBlocked").reference(got, channels=m), want)
    if m % b:  # the padding channels hold the output's zero point
        assert (got[:, -1, ..., m % b:] == 30).all()


def test_fixed_point_requantization_by_hand():
    """Four pixels of one channel, acc = (x - 10) * 1 = 6, -6, 84, -10 and M = float32(1/12)
    = 11184811 * 2^-27, held as q = 1431655808 with shift 34. Exactly, acc * M = 0.50000002,
    -0.50000002, 7.0000003 and -0.83: nearest 1, -1, 7, -1 (y = zy + that = 6, 4, 12, 4).
    float32 rounds +-6 M onto the tie +-0.5, which goes to even: 0 twice (y = 5, 5)."""
    x = np.array([16, 4, 94, 0], np.uint8).reshape(1, 1, 1, 4)  # W as the pixel axis
    w = np.array([1], np.int8).reshape(1, 1, 1, 1)
    args = (np.float32(0.5), np.uint8(10), w, np.float32(1 / 6), None, np.float32(1.0),
            np.uint8(5), None)
    attrs = {"strides": [1, 1], "pads": [0, 0, 0, 0], "group": 1, "dilations": [1, 1],
             "channels": 1, "block": 4}
    xb = get_op("ReorderToBlocked").reference(x, block=4)
    m = np.float32(0.5) * np.float32(1 / 6) / np.float32(1.0)
    assert m == np.float32(1 / 12) and int(m * 2.0**34) == 1431655808
    fixed = get_op("BlockedQLinearConv").reference(xb, *args, rq_mult=[1431655808], rq_shift=34,
                                                  **attrs)
    flt = get_op("BlockedQLinearConv").reference(xb, *args, **attrs)
    assert list(fixed.reshape(-1, 4)[:, 0]) == [6, 4, 12, 4]
    assert list(flt.reshape(-1, 4)[:, 0]) == [5, 5, 12, 4]


def test_int8_reorders_shift_to_uint8_and_back():
    x = np.array([-128, -1, 0, 127, 5, -7], np.int8).reshape(1, 6, 1, 1)
    xb = get_op("ReorderToBlocked").reference(x, block=4, shift=128)
    assert xb.dtype == np.uint8
    np.testing.assert_array_equal(xb.reshape(-1)[:6], [0, 127, 128, 255, 133, 121])
    back = get_op("ReorderFromBlocked").reference(xb, channels=6, shift=-128)
    assert back.dtype == np.int8
    np.testing.assert_array_equal(back, x)
