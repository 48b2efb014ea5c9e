"""Quantization kernels, compiled to C (no gcc warnings) and run through the loader, against
the interpreter: bit-exact, integer outputs and float outputs alike.

The convolution cases reach each form of the builder: register tiles of 8 and 4 channels,
sums written out (depthwise, narrow pointwise; 1-D, 2-D and 3-D, with edge rows and columns),
and the direct loop nest (many terms, channel counts that fit no tile, run-time weights).

Every op is built twice, with its scales, zero points and weights as constants (folded at
compile time: multiplier tables, weights with the zero point subtracted, literals) and as
graph inputs (read and combined in the kernel), so both paths of each builder are covered.
One graph per family keeps the number of C builds small.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from harness import check_against_interpreter

from edgec.codegen import toolchain
from edgec.ir import DType, Graph, TensorType

F32, F16 = np.float32, np.float16


@pytest.fixture
def check(tmp_path, monkeypatch):
    """check(graph, feeds): compile without warnings and match the interpreter exactly."""

    def strict_run(cmd, cwd):
        res = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert not re.search(r"m\.c:\d+:\d+: warning", res.stderr), res.stderr

    monkeypatch.setattr(toolchain, "_run", strict_run)
    count = iter(range(100))

    def run(builder: Builder) -> None:
        g = builder.graph
        g.outputs = [o for n in builder.nodes for o in n.outputs]
        check_against_interpreter(g, tmp_path / f"m{next(count)}", feeds=builder.feeds, tol=0)

    return run


class Builder:
    """A graph under construction whose leaves are constants or fed graph inputs."""

    def __init__(self, name: str, seed: int = 0):
        self.graph = Graph(name)
        self.feeds: dict[str, np.ndarray] = {}
        self.nodes = []
        self.rng = np.random.default_rng(seed)
        self._n = 0

    def leaf(self, arr, const: bool):
        arr = np.asarray(arr)
        self._n += 1
        name = f"v{self._n}"
        dt = DType.from_numpy(arr.dtype)
        if const:
            return self.graph.const(arr, name, dtype=dt)
        self.feeds[name] = arr
        return self.graph.add_input(name, TensorType(arr.shape, dt))

    def ints(self, shape, dtype, lo=None, hi=None):
        info = np.iinfo(dtype)
        return self.rng.integers(info.min if lo is None else lo, info.max if hi is None else hi,
                                 size=shape, endpoint=True).astype(dtype)

    def scales(self, n, lo=0.01, hi=0.1, dtype=F32):
        return self.rng.uniform(lo, hi, size=n).astype(dtype)

    def node(self, op, inputs, attrs=None):
        n = self.graph.add_node(op, inputs, attrs or {})
        self.nodes.append(n)
        return n


def test_quantize_dequantize(check):
    b = Builder("qdq")
    x = b.leaf((b.rng.standard_normal((2, 3, 4, 6)) * 3).astype(F32), False)
    specials = b.leaf(np.array([np.nan, np.inf, -np.inf, 0.5, 1.5, 2.5, -2.5, 1e10], F32), False)
    for dtype in (np.uint8, np.int8, np.uint16, np.int16):
        for const in (True, False):
            s, z = b.leaf(np.array(0.05, F32), const), b.leaf(np.array(3, dtype), const)
            q = b.node("QuantizeLinear", [x, s, z])
            b.node("DequantizeLinear", [q.output, s, z])
            b.node("QuantizeLinear", [specials, b.leaf(np.array(1.0, F32), const), z])
            sa, za = b.leaf(b.scales(3), const), b.leaf(b.ints(3, dtype, 0, 9), const)
            q = b.node("QuantizeLinear", [x, sa, za], {"axis": 1})
            b.node("DequantizeLinear", [q.output, sa, za], {"axis": 1})
            blocked = {"axis": 3, "block_size": 4}  # 6 = 4 + a partial block of 2
            sb = b.leaf(b.scales((2, 3, 4, 2)), const)
            zb = b.leaf(b.ints((2, 3, 4, 2), dtype, 0, 9), const)
            q = b.node("QuantizeLinear", [x, sb, zb], blocked)
            b.node("DequantizeLinear", [q.output, sb, zb], blocked)
    b.node("QuantizeLinear", [x, b.leaf(np.array(0.05, F32), True)], {"output_dtype": 3})
    b.node("DequantizeLinear", [b.leaf(b.ints(10, np.int32), False),
                                b.leaf(np.array(1e-3, F32), True)])
    x16 = b.leaf(b.rng.standard_normal(12).astype(F16), False)
    s16 = b.leaf(np.array(0.01, F16), False)
    q = b.node("QuantizeLinear", [x16, s16, b.leaf(np.array(9, np.uint8), True)])
    b.node("DequantizeLinear", [q.output, s16, b.leaf(np.array(9, np.uint8), True)])
    check(b)


def test_dynamic_quantize(check):
    b = Builder("dyn")
    for x in (b.rng.standard_normal((3, 4)).astype(F32), np.array([-253, 257, 1, 3], F32),
              np.zeros(5, F32), np.array([-1.0, -2.0], F32), np.array([np.nan, 1, -1], F32)):
        b.node("DynamicQuantizeLinear", [b.leaf(x, False)])
    check(b)


def test_matrix_products(check):
    b = Builder("mm")
    for const in (True, False):
        a = b.leaf(b.ints((2, 3, 4, 16), np.uint8), False)
        w = b.leaf(b.ints((16, 6), np.int8), const)
        b.node("MatMulInteger", [a, w, b.leaf(np.array(7, np.uint8), const),
                                 b.leaf(np.array(-3, np.int8), const)])
        b.node("MatMulInteger", [a, w, None, b.leaf(b.ints(6, np.int8), const)])  # per column
        b.node("MatMulInteger", [a, w, b.leaf(b.ints(4, np.uint8), const)])  # per row
        b.node("MatMulInteger", [b.leaf(b.ints(16, np.uint8), False), w])  # 1-D A
        b.node("MatMulInteger", [a, b.leaf(b.ints((3, 16, 5), np.int8), const)])  # batched B
        for sdt in (F32, F16):
            for per in (False, True):
                b.node("QLinearMatMul", [
                    a, b.leaf(b.scales(4 if per else 1, dtype=sdt), const),
                    b.leaf(np.array([100], np.uint8), const), w,
                    b.leaf(b.scales(6 if per else 1, 0.001, 0.01, sdt), const),
                    b.leaf(b.ints(6 if per else 1, np.int8, -4, 4), const),
                    b.leaf(np.array([0.3], sdt), const), b.leaf(np.array(120, np.uint8), const)])
    check(b)


def test_qgemm_and_qlinear_add(check):
    b = Builder("gemm")
    for const in (True, False):
        a, at = b.leaf(b.ints((5, 16), np.uint8), False), b.leaf(b.ints((16, 5), np.uint8), False)
        w, wt = b.leaf(b.ints((16, 6), np.int8), const), b.leaf(b.ints((6, 16), np.int8), const)
        for per in (False, True):
            n = 6 if per else ()
            for ta, tb, aa, ww in ((0, 0, a, w), (0, 1, a, wt), (1, 0, at, w)):
                b.node("QGemm", [aa, b.leaf(np.array(0.02, F32), const),
                                 b.leaf(np.array(9, np.uint8), const), ww,
                                 b.leaf(b.scales(n, 0.001, 0.01), const),
                                 b.leaf(b.ints(n, np.int8, -3, 3), const),
                                 b.leaf(b.ints(6, np.int32, -3000, 3000), const),
                                 b.leaf(np.array(0.3, F32), const),
                                 b.leaf(np.array(-3, np.int8), const)],
                       {"transA": ta, "transB": tb, "alpha": 1.0 if per else 0.5})
        for shape_b in ((2, 3, 4, 5), (4, 1), (1,)):
            b.node("QLinearAdd", [
                b.leaf(b.ints((2, 3, 4, 5), np.uint8), False), b.leaf(np.array(0.02, F32), const),
                b.leaf(np.array(128, np.uint8), const), b.leaf(b.ints(shape_b, np.uint8), const),
                b.leaf(np.array(0.03, F32), const), b.leaf(np.array(100, np.uint8), const),
                b.leaf(np.array(0.04, F32), const), b.leaf(np.array(120, np.uint8), const)])
    check(b)


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
    ((1, 4, 7, 7), (4, 2, 3, 3), conv_attrs(2, strides=[2, 2], dilations=[2, 2], pads=[2] * 4,
                                            group=2)),
    ((1, 16, 6, 5), (16, 8, 3, 3), conv_attrs(2, pads=[1, 0, 0, 1], group=2)),  # tiles of 8
    ((1, 8, 5, 5), (8, 8, 1, 1), conv_attrs(2)),  # pointwise written out, 4 channels at once
    ((1, 8, 6, 6), (6, 8, 3, 3), conv_attrs(2, pads=[1, 1, 1, 1])),  # direct: 72 terms, 6 ch
]


@pytest.mark.slow
def test_convolutions(check):
    b = Builder("conv")
    for xs, ws, attrs in CONV_CASES:
        m = ws[0]
        for const in (True, False):
            x = b.leaf(b.ints(xs, np.uint8), False)
            w = b.leaf(b.ints(ws, np.int8), const)
            for per in (False, True):
                ins = [x, b.leaf(np.array(0.02, F32), const),
                       b.leaf(np.array(100, np.uint8), const), w,
                       b.leaf(b.scales(m if per else (), 0.001, 0.01), const),
                       b.leaf(b.ints(m if per else (), np.int8, -3, 3), const),
                       b.leaf(np.array(0.3, F32), const), b.leaf(np.array(7, np.uint8), const)]
                b.node("QLinearConv", ins + [b.leaf(b.ints(m, np.int32, -999, 999), const)],
                       attrs)
                b.node("QLinearConv", ins, attrs)
            wu = b.leaf(b.ints(ws, np.uint8), const)
            b.node("ConvInteger", [x, wu, b.leaf(np.array(100, np.uint8), const),
                                   b.leaf(b.ints(m, np.uint8), const)], attrs)
            b.node("ConvInteger", [x, wu], attrs)
    check(b)


# -- 16-bit activations (W8A16) -------------------------------------------------------------

@pytest.mark.slow
def test_w8a16(check):
    """QLinearConv (each form of the builder), QLinearMatMul, QGemm and QLinearAdd with uint16
    and int16 activations against int8 weights, constants and graph inputs alike."""
    b = Builder("w8a16", seed=3)
    for i, (xs, ws, attrs) in enumerate(CONV_CASES[::2] + CONV_CASES[-3:]):
        xt, yt = (np.int16, np.uint16) if i % 2 else (np.uint16, np.int16)
        m = ws[0]
        for const in (True, False):
            ins = [b.leaf(b.ints(xs, xt), False), b.leaf(np.array(3e-4, F32), const),
                   b.leaf(np.array(-20000 if xt is np.int16 else 30000, xt), const),
                   b.leaf(b.ints(ws, np.int8), const), b.leaf(b.scales(m, 0.001, 0.01), const),
                   b.leaf(np.zeros(m, np.int8), const), b.leaf(np.array(0.05, F32), const),
                   b.leaf(np.array(100, yt), const)]
            b.node("QLinearConv", ins + [b.leaf(b.ints(m, np.int32, -9999, 9999), const)],
                   attrs)
    for const in (True, False):
        a = b.leaf(b.ints((2, 3, 40), np.uint16), False)
        w = b.leaf(b.ints((40, 6), np.int8), const)
        b.node("QLinearMatMul", [a, b.leaf(np.array(2e-4, F32), const),
                                 b.leaf(np.array(31000, np.uint16), const), w,
                                 b.leaf(b.scales(6, 0.001, 0.01), const),
                                 b.leaf(np.zeros(6, np.int8), const),
                                 b.leaf(np.array(0.01, F32), const),
                                 b.leaf(np.array(-5, np.int16), const)])
        b.node("QGemm", [b.leaf(b.ints((5, 40), np.int16), False),
                         b.leaf(np.array(2e-4, F32), const), b.leaf(np.array(7, np.int16), const),
                         b.leaf(b.ints((6, 40), np.int8), const),
                         b.leaf(b.scales(6, 0.001, 0.01), const),
                         b.leaf(np.zeros(6, np.int8), const),
                         b.leaf(b.ints(6, np.int32, -30000, 30000), const),
                         b.leaf(np.array(0.01, F32), const),
                         b.leaf(np.array(9, np.uint16), const)], {"transB": 1})
        b.node("QLinearAdd", [  # 16-bit and 8-bit operands into a 16-bit sum
            b.leaf(b.ints((2, 3, 4), np.int16), False), b.leaf(np.array(1e-4, F32), const),
            b.leaf(np.array(-3, np.int16), const), b.leaf(b.ints((2, 3, 4), np.uint8), False),
            b.leaf(np.array(0.03, F32), const), b.leaf(np.array(100, np.uint8), const),
            b.leaf(np.array(2e-4, F32), const), b.leaf(np.array(5, np.int16), const)])
    check(b)


def test_w8a16_sums_past_int32_are_exact(check):
    """Sums that int32 cannot hold, worked out by hand: 512 products of x - zx = 32767 -
    (-32768) = 65535 and w = +-127 sum to +-512 * 65535 * 127 = +-4 261 347 840 (> 2^31);
    times M = 1 * 1 / 2^20 that is +-4063.96..., so y = +-4064 (zero point 0). The kernels
    take 64-bit sums there (accumulator_type) for a Conv, a MatMul and a Gemm."""
    acc = 512 * 65535 * 127
    assert acc > 2**31 and round(acc / 2**20) == 4064
    b = Builder("wide")
    one, m = np.array(1.0, F32), np.array(2.0**20, F32)
    x = np.full((1, 512), 32767, np.int16)
    w = np.stack([np.full(512, 127, np.int8), np.full(512, -127, np.int8)], axis=1)  # [K, 2]
    zx, zy, zw = np.array(-32768, np.int16), np.array(0, np.int16), np.zeros(2, np.int8)
    params = [b.leaf(v, True) for v in (one, zx)]
    tail = [b.leaf(v, True) for v in (m, zy)]
    xl = b.leaf(x, False)
    b.node("QLinearMatMul", [xl, *params, b.leaf(w, True), b.leaf(np.ones(2, F32), True),
                             b.leaf(zw, True), *tail])
    b.node("QGemm", [xl, *params, b.leaf(w.T.copy(), True), b.leaf(np.ones(2, F32), True),
                     b.leaf(zw, True), None, *tail], {"transB": 1})
    b.node("QLinearConv", [b.leaf(x.reshape(1, 512, 1, 1), False), *params,
                           b.leaf(w.T.reshape(2, 512, 1, 1).copy(), True),
                           b.leaf(np.ones(2, F32), True), b.leaf(zw, True), *tail],
           conv_attrs(2))
    from edgec.ir import interpret
    b.graph.outputs = [o for n in b.nodes for o in n.outputs]
    got = interpret(b.graph, b.feeds)
    for v in got.values():
        assert v.reshape(-1).tolist() == [4064, -4064]
    check(b)
