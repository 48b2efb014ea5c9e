"""The layout-nchwc pass and the channel-blocked kernels.

(a) numerics: the interpreter on the rewritten graph equals the interpreter on the original
    (so the blocked ops' numpy references compose into the same function), blocks 8 and 16;
(b) structure: where reorders go, what is left alone, how constants are reblocked;
(c) end to end: models compiled for x86 (the host's best), x86-avx2 and x86-avx512 (blocked
    convolution micro-kernels and the vector GEMM, 8 or 16 lanes; the AVX-512 build runs where
    the CPU has AVX-512) and for c-generic (no layout pass, scalar kernels), against onnxruntime,
    over many convolution geometries (strides, dilations, asymmetric pads, 1x1 to 7x7, stems,
    depthwise, widths 1..17 for the edge and remainder tiles) and GEMM shapes.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter

import numpy as np
import pytest
from convnets import OnnxNet, onnxruntime_outputs, random_feeds, small_resnet
from harness import X86_TARGETS, rel_error, runs_here

import edgec
from edgec.compiler.driver import compile_graph
from edgec.frontends.onnx import import_onnx
from edgec.ir import DType, Graph, TensorType, Value, interpret, verify
from edgec.ir.ops.layout import from_blocked, to_blocked
from edgec.passes import default_pipeline, run_pipeline
from edgec.targets.target import get_target

F32 = DType.F32
RNG = np.random.default_rng(11)


def layout(graph: Graph, block: int, pre: str = "") -> Graph:
    """A copy of `graph` after `pre` (e.g. "fold-constants,fuse,") and layout-nchwc, verified."""
    g = graph.copy()
    run_pipeline(g, f"{pre}layout-nchwc{{block={block}}},dce", verify_each=True)
    verify(g)
    return g


def ops(g: Graph) -> Counter:
    return Counter(n.op for n in g.nodes)


def feeds_for(g: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs}


def assert_same_numerics(before: Graph, after: Graph, tol: float = 1e-5) -> None:
    feeds = feeds_for(before)
    want, got = interpret(before, feeds), interpret(after, feeds)
    assert list(got) == list(want)
    for name, w in want.items():
        assert got[name].shape == w.shape, name
        assert rel_error(got[name], w) <= tol, f"output {name}"


# -- graphs built with the IR API ------------------------------------------------------------

class Net:
    """IR-API graph builder: convolutions, fused convolutions, pools and elementwise ops."""

    def __init__(self, name: str):
        self.g = Graph(name)

    def input(self, name: str, shape) -> Value:
        return self.g.add_input(name, TensorType(tuple(shape), F32))

    def const(self, a, name: str) -> Value:
        return self.g.const(np.asarray(a, np.float32), name)

    def conv(self, x: Value, cout: int, k: int = 3, stride: int = 1, group: int = 1,
             pads=None, dilation: int = 1, activation: str = "", params=(),
             z: Value | None = None, name: str = "conv") -> Value:
        cin = x.shape[1]
        w = self.const(RNG.standard_normal((cout, cin // group, k, k)) / np.sqrt(cin * k * k
                                                                                / group),
                       f"{name}.w")
        b = self.const(RNG.standard_normal(cout) * 0.1, f"{name}.b")
        p = (k - 1) * dilation // 2
        attrs = {"dilations": [dilation, dilation], "group": group,
                 "pads": list(pads) if pads is not None else [p, p, p, p],
                 "strides": [stride, stride]}
        if not activation and z is None:
            return self.g.add_node("Conv", [x, w, b], attrs, name=name).output
        attrs |= {"activation": activation, "activation_params": list(params)}
        ins = [x, w, b] + ([z] if z is not None else [])
        return self.g.add_node("FusedConv", ins, attrs, name=name).output

    def op(self, op: str, *inputs, name: str | None = None, **attrs) -> Value:
        return self.g.add_node(op, list(inputs), attrs, name=name).output

    def pool(self, op: str, x: Value, k: int, stride: int, pad, **extra) -> Value:
        pads = [pad] * 4 if isinstance(pad, int) else list(pad)
        attrs = {"kernel_shape": [k, k], "strides": [stride, stride], "pads": pads,
                 "dilations": [1, 1], "ceil_mode": 0} | extra
        node = self.g.add_node(op, [x], attrs)
        return node.outputs[0]


def mixed_graph() -> Graph:
    """Batch 2, channel counts 10, 24 and 3 (none a multiple of 16, two not of 8): fused
    convolutions with every vector activation, per-channel and scalar constants, the
    elementwise ops the pass converts, pools of every kind, grouped and Sigmoid convolutions
    it leaves alone, and an intermediate blocked value that is also a graph output."""
    n = Net("mixed")
    x = n.input("x", (2, 10, 9, 11))
    s = n.input("stem", (2, 3, 7, 6))
    c1 = n.conv(x, 24, activation="Clip", params=(0.0, 6.0), name="c1")
    e = n.op("Mul", c1, n.const(RNG.uniform(0.5, 1.5, (1, 24, 1, 1)), "scale"))
    e = n.op("Add", e, n.const(RNG.uniform(-0.5, 0.5, (24, 1, 1)), "shift"))
    e = n.op("Sigmoid", n.op("Mul", e, n.const(0.5, "half")))
    d1 = n.conv(e, 24, group=24, stride=2, activation="HardSwish", name="dw")
    c2 = n.conv(d1, 10, k=1, activation="HardSigmoid", params=(0.2, 0.5), name="c2")
    m1 = n.pool("MaxPool", c2, 3, 2, 1, storage_order=0)
    a1 = n.pool("AveragePool", c2, 3, 1, 1, count_include_pad=0)
    a2 = n.pool("AveragePool", c2, 2, 1, [0, 0, 1, 1], count_include_pad=1)
    t = n.op("LeakyRelu", n.op("Tanh", n.op("Add", a1, a2)), alpha=0.1)
    t = n.op("Sub", n.op("Abs", n.op("Neg", t)), n.op("Identity", c2))
    t = n.op("Relu", n.op("HardSwish", t))
    gm = n.op("GlobalMaxPool", t)
    ga = n.op("GlobalAveragePool", n.op("Clip", t, n.const(-0.5, "lo"), n.const(0.5, "hi")))
    grouped = n.conv(e, 24, group=2, name="grouped")  # not depthwise: left alone
    sig = n.conv(d1, 24, k=1, activation="Sigmoid", name="sig")  # blocked
    leaky = n.conv(d1, 24, k=1, activation="LeakyRelu", params=(0.1,), name="leaky")  # blocked
    st = n.conv(s, 16, k=3, stride=2, activation="Relu", name="stemconv")  # 3 < block channels
    st = n.conv(st, 16, k=3, z=st, activation="Relu", name="res")  # residual of a blocked value
    n.g.outputs = [m1, gm, ga, c1, grouped, n.op("Add", sig, leaky), t,
                   n.op("GlobalAveragePool", st)]
    verify(n.g)
    return n.g


@pytest.mark.parametrize("block", [8, 16])
def test_mixed_graph_numerics(block):
    g = mixed_graph()
    out = layout(g, block)
    counts = ops(out)
    assert counts["BlockedConv"] == 7 and counts["BlockedPool"] == 6, counts
    assert counts["Conv"] == 1 and not counts["FusedConv"], counts  # grouped
    assert_same_numerics(g, out)


@pytest.mark.parametrize("block", [8, 16])
@pytest.mark.parametrize("fused", [False, True])
def test_small_resnet_numerics(block, fused):
    g = import_onnx(small_resnet(16))
    pre = "fold-constants,fuse," if fused else ""
    ref = layout(g, 1, pre)  # block < 2: the pass does nothing
    assert not ops(ref)["BlockedConv"]
    out = layout(g, block, pre)
    assert ops(out)["BlockedConv"] == 5
    assert_same_numerics(g, out)


# -- structure -------------------------------------------------------------------------------

def chain(cin: int) -> Graph:
    """conv -> relu -> conv -> add(residual) -> maxpool -> globalavgpool -> flatten -> gemm."""
    n = OnnxNet("chain")
    x = n.input("x", [1, cin, 8, 8])
    a = n.node("Relu", [n.conv(x, cin, 16, 3)])
    r = n.node("Add", [n.conv(a, 16, 16, 3), a])
    p = n.node("MaxPool", [r], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])
    f = n.node("Flatten", [n.node("GlobalAveragePool", [p])], axis=1)
    n.output(n.node("Gemm", [f, n.weight((5, 16)), n.weight((5,), 0.1)], name="y", transB=1))
    return import_onnx(n.model())


@pytest.mark.parametrize("pre", ["", "fold-constants,fuse,"])
@pytest.mark.parametrize("cin,to_blocked_count", [(16, 1), (8, 1), (3, 0)])
def test_chain_has_reorders_only_at_its_borders(cin, to_blocked_count, pre):
    g = chain(cin)
    out = layout(g, 8, pre)
    counts = ops(out)
    assert counts["ReorderToBlocked"] == to_blocked_count, counts
    assert counts["ReorderFromBlocked"] == 1, counts
    assert counts["BlockedPool"] == 2 and counts["BlockedConv"] == 2, counts
    assert not counts["Conv"] and not counts["MaxPool"], counts
    for node in out.nodes:  # relu and the residual add run on blocked values too
        if node.op in ("Relu", "Add"):
            assert node.output.type.rank == 5 and all(v.type.rank == 5 for v in node.inputs)
    first = next(n for n in out.nodes if n.op == "BlockedConv")
    assert first.attrs["blocked_input"] == (1 if to_blocked_count else 0)
    if not to_blocked_count:
        assert first.inputs[0] is out.inputs[0]  # reads the NCHW input directly
    (back,) = [n for n in out.nodes if n.op == "ReorderFromBlocked"]
    assert back.output.users()[0].op == "Flatten"
    assert_same_numerics(g, out)


def test_blocked_graph_outputs_keep_name_and_layout():
    n = Net("outs")
    x = n.input("x", (1, 16, 6, 6))
    a = n.conv(x, 24, name="a")
    b = n.op("Relu", a, name="b")
    c = n.conv(b, 16, name="c")
    n.g.outputs = [a, c, b]
    a.name, b.name, c.name = "first", "second", "third"
    g = n.g
    out = layout(g, 16)
    assert [v.name for v in out.outputs] == ["first", "third", "second"]
    assert [v.shape for v in out.outputs] == [(1, 24, 6, 6), (1, 16, 6, 6), (1, 24, 6, 6)]
    assert all(v.producer.op == "ReorderFromBlocked" for v in out.outputs)
    assert ops(out)["ReorderFromBlocked"] == 3 and ops(out)["ReorderToBlocked"] == 1
    names = [v.name for nd in out.nodes for v in nd.outputs]
    assert len(names) == len(set(names)), "a value name is used twice"
    assert_same_numerics(g, out)


def test_ops_the_pass_leaves_alone():
    n = Net("alone")
    x = n.input("x", (1, 16, 8, 8))
    bias = n.input("bias", (16,))
    h = n.conv(x, 16, name="head")  # converted: every other op reads a blocked value
    grouped = n.conv(h, 16, group=2, name="grouped")
    mult = n.conv(h, 32, group=16, name="multiplier")  # depthwise with multiplier 2
    sig = n.conv(h, 16, activation="Sigmoid", name="sig")  # converted too (vector exp)
    tanh = n.conv(h, 16, activation="Tanh", name="tanh")  # and this (vector tanh)
    w = n.const(RNG.standard_normal((16, 16, 3, 3)) * 0.1, "wb")
    var_bias = n.op("Conv", h, w, bias, dilations=[1, 1], group=1, pads=[1, 1, 1, 1],
                    strides=[1, 1])
    mp = n.g.add_node("MaxPool", [h], {"kernel_shape": [2, 2], "strides": [2, 2],
                                       "pads": [0, 0, 0, 0], "dilations": [1, 1],
                                       "ceil_mode": 0, "storage_order": 0})
    ceil = n.pool("MaxPool", h, 3, 2, 0, ceil_mode=1, storage_order=0)
    dil = n.pool("MaxPool", h, 2, 1, 0, dilations=[2, 2], storage_order=0)
    bcast = n.op("Add", h, n.op("GlobalAveragePool", h))  # a broadcast blocked operand
    plain = n.op("Mul", h, n.input("other", (1, 16, 8, 8)))  # an operand with no blocked form
    n.g.outputs = [grouped, mult, sig, tanh, var_bias, *mp.outputs, ceil, dil, bcast, plain]
    g = n.g
    verify(g)
    out = layout(g, 8)
    counts = ops(out)
    assert counts["BlockedConv"] == 3 and counts["BlockedPool"] == 1, counts  # head, sig, tanh
    assert counts["Conv"] == 3 and not counts["FusedConv"], counts
    assert counts["MaxPool"] == 3 and counts["Add"] == 1 and counts["Mul"] == 1, counts
    assert counts["ReorderFromBlocked"] == 4, counts  # head's, sig's, tanh's, the GAP's
    assert_same_numerics(g, out)


def test_per_channel_constants_are_reblocked():
    n = Net("consts")
    x = n.input("x", (1, 16, 5, 5))
    c = n.conv(x, 10, name="c")
    scale = RNG.uniform(0.5, 1.5, (1, 10, 1, 1)).astype(np.float32)
    shift = RNG.uniform(-1, 1, (10, 1, 1)).astype(np.float32)
    y = n.op("Add", n.op("Mul", c, n.const(scale, "scale")), n.const(shift, "shift"))
    y = n.op("Mul", y, n.const(np.full((1, 1, 1, 1), 2.0), "two"))
    n.g.outputs = [n.op("Relu", y)]
    g = n.g
    out = layout(g, 8)
    mul, add, mul2 = [nd for nd in out.nodes if nd.op in ("Mul", "Add")]
    for node, orig in ((mul, scale.reshape(-1)), (add, shift.reshape(-1))):
        k = node.inputs[1].const
        assert k.shape == (1, 2, 1, 1, 8)
        for ch in range(16):  # blocked by hand: channel ch at [ch // 8, ch % 8], zeros after 10
            assert k[0, ch // 8, 0, 0, ch % 8] == (orig[ch] if ch < 10 else 0.0)
    assert mul2.inputs[1].shape == (1, 1, 1, 1)  # a scalar stays a scalar
    assert mul.output.shape == (1, 2, 5, 5, 8)
    assert ops(out)["Relu"] == 1 and out.outputs[0].producer.op == "ReorderFromBlocked"
    assert_same_numerics(g, out)


@pytest.mark.parametrize("c,block", [(24, 16), (3, 8), (10, 8), (10, 16), (1, 8), (17, 16)])
def test_reorders_round_trip(c, block):
    x = RNG.standard_normal((2, c, 3, 4)).astype(np.float32)
    b = to_blocked(x, block)
    assert b.shape == (2, -(-c // block), 3, 4, block)
    pad = np.moveaxis(b, -1, 2).reshape(2, -1, 3, 4)
    np.testing.assert_array_equal(pad[:, c:], 0)
    np.testing.assert_array_equal(from_blocked(b, c), x)


def test_default_pipeline_blocks_by_the_targets_lanes():
    assert "layout-nchwc{block=8}" in default_pipeline(8)
    assert "layout-nchwc{block=16}" in default_pipeline(16)
    assert "layout-nchwc" not in default_pipeline(1)


# -- end to end: x86 (AVX2 here) and c-generic against onnxruntime ---------------------------

def geometry_model():
    """Many convolution geometries side by side, each branch a graph output."""
    n = OnnxNet("geometry", seed=3)
    x = n.input("x", [1, 16, 13, 15])
    s = n.input("stem", [1, 3, 17, 17])
    t = n.input("tiny", [1, 16, 4, 5])
    vb = n.input("vbias", [16])
    one = n.input("one", [1, 16, 1, 1])
    relu = lambda v: n.node("Relu", [v])  # noqa: E731
    outs = [
        relu(n.conv(x, 16, 24, 3, stride=2)),
        n.conv(x, 16, 16, 3, dilation=2),
        n.conv(x, 16, 8, 3, stride=(1, 2), pads=[0, 1, 2, 0]),
        n.conv(x, 16, 40, 1),  # 5 output blocks: a group of 2 blocks short
        n.conv(x, 16, 16, 1, stride=2),
        relu(n.node("Add", [n.conv(x, 16, 16, 5), x])),  # residual
        n.conv(x, 16, 8, 7),
        n.node("Clip", [n.conv(x, 16, 16, 3, pads=[0, 0, 0, 0]), n.const(np.float32(0)),
                        n.const(np.float32(6))]),
        n.node("HardSwish", [n.conv(x, 16, 16, (3, 5), pads=[1, 2, 0, 1])]),
        n.node("HardSigmoid", [n.conv(x, 16, 16, (1, 3), dilation=(1, 3))], alpha=0.3,
               beta=0.4),
        n.node("LeakyRelu", [n.conv(x, 16, 24, 3)], alpha=0.2),
        n.node("LeakyRelu", [n.conv(x, 16, 16, 3, group=16)], alpha=0.05),
        n.node("Sigmoid", [n.conv(x, 16, 16, 3, stride=2)]),  # exp in the vector epilogue
        n.node("Sigmoid", [n.conv(x, 16, 16, 3, group=16)]),
        n.node("Tanh", [n.conv(x, 16, 16, 3)]),
        relu(n.conv(x, 16, 16, 3, stride=2, group=16)),
        n.conv(x, 16, 16, 5, dilation=2, group=16),
        n.conv(x, 16, 16, 3, pads=[1, 0, 0, 1], group=16, bias=False),
        n.node("Add", [n.conv(x, 16, 16, 3, group=16), x]),
        n.conv(s, 3, 16, 7, stride=2),  # stems read NCHW
        relu(n.conv(s, 3, 8, 3)),
        n.conv(s, 3, 10, 3, stride=2, pads=[0, 0, 1, 1]),
        n.conv(s, 3, 16, (3, 1), pads=[1, 0, 1, 0]),
        n.conv(t, 16, 16, 7),  # kernel wider than the image: every pixel is an edge
        n.conv(t, 16, 8, 5, pads=[1, 1, 1, 1]),
        n.node("Conv", [x, n.weight((16, 16, 3, 3)), vb], pads=[1, 1, 1, 1], strides=[1, 1],
               dilations=[1, 1], kernel_shape=[3, 3]),  # bias is not a constant
        n.conv(x, 16, 16, 1, stride=3),  # strides that skip input pixels
        n.conv(x, 16, 8, 2, stride=3, pads=[0, 0, 0, 0]),
        n.conv(relu(n.conv(x, 16, 4, 3)), 4, 16, 3),  # a blocked input of 4 channels
        n.conv(one, 16, 16, 3, dilation=2, pads=[4, 4, 4, 4]),  # rows with no tap at all
        n.conv(one, 16, 16, 3, dilation=2, pads=[4, 4, 4, 4], group=16),
        n.node("MaxPool", [relu(n.conv(t, 16, 16, 1))], kernel_shape=[5, 5], strides=[1, 1],
               pads=[2, 2, 2, 2]),
        n.node("AveragePool", [relu(n.conv(t, 16, 16, 1))], kernel_shape=[3, 3],
               strides=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
    ]
    h = n.conv(x, 16, 24, 3)
    bn = n.node("Add", [n.node("Mul", [h, n.const(RNG.uniform(0.5, 1.5, (24, 1, 1))
                                                  .astype(np.float32))]),
                        n.const(RNG.uniform(-1, 1, (1, 24, 1, 1)).astype(np.float32))])
    bn = n.node("Sigmoid", [bn])
    outs += [
        n.node("MaxPool", [bn], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n.node("AveragePool", [bn], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        n.node("AveragePool", [bn], kernel_shape=[2, 3], strides=[2, 2], pads=[0, 1, 1, 1],
               count_include_pad=1),
        n.node("GlobalMaxPool", [bn]),
        n.node("GlobalAveragePool", [bn]),
    ]
    n.output(*outs)
    return n.model()


def widths_model():
    """For each width 1..17: stem conv (3 -> 10 channels, NCHW input), depthwise, 3x3 conv,
    depthwise stride 2, 1x1 conv: every split of a row into edge pixels, register tiles and
    a remainder tile."""
    n = OnnxNet("widths", seed=4)
    for w in range(1, 18):
        x = n.input(f"x{w}", [1, 3, 3, w])
        h = n.node("Relu", [n.conv(x, 3, 16, 3)])
        h = n.conv(h, 16, 16, 3, group=16)
        h = n.node("Relu", [n.conv(h, 16, 16, 3)])
        h = n.conv(h, 16, 16, 3, stride=2, group=16)
        n.output(n.conv(h, 16, 8, 1))
    return n.model()


def gemm_model():
    """Matrix products with constant weights: M = 1, 3, 5 (and a 3-D batch, M = 6), N not a
    multiple of the panel width, with bias, Relu/Clip and a residual; plain MatMul; Gemm."""
    n = OnnxNet("gemm", seed=5)
    outs = []
    for m, k, cols, act in ((1, 40, 70, "Relu"), (3, 40, 37, "Clip"), (5, 7, 21, "Relu"),
                            (5, 1, 9, ""), (1, 16, 8, "Clip"), (1, 9, 3, ""),
                            (4, 8, 16, "Relu"), (9, 5, 33, "Clip"), (2, 6, 11, "LeakyRelu")):
        a = n.input(f"a{m}_{cols}", [m, k])
        z = n.input(f"z{m}_{cols}", [m, cols])
        y = n.node("Add", [n.node("MatMul", [a, n.weight((k, cols))]),
                           n.weight((cols,), 0.5)])
        y = n.node("Add", [y, z])
        if act == "Relu":
            y = n.node("Relu", [y])
        elif act == "Clip":
            y = n.node("Clip", [y, n.const(np.float32(-0.5)), n.const(np.float32(1.0))])
        elif act == "LeakyRelu":
            y = n.node("LeakyRelu", [y], alpha=0.3)
        outs.append(y)
    a3 = n.input("batch", [2, 3, 24])
    outs.append(n.node("Relu", [n.node("Add", [n.node("MatMul", [a3, n.weight((24, 19))]),
                                               n.weight((19,), 0.5)])]))
    outs.append(n.node("MatMul", [n.input("plain", [3, 33]), n.weight((33, 17))]))
    outs.append(n.node("Gemm", [n.input("g", [5, 12]), n.weight((23, 12)), n.weight((23,))],
                       transB=1))
    n.output(*outs)
    return n.model()


def chunks_model():
    """Convolutions with enough input blocks that the driver reduces them in chunks (partial
    sums kept in the output between chunks, an uneven last chunk) over bands of rows (an
    uneven last band), with a residual, an activation and a short group of output blocks."""
    n = OnnxNet("chunks", seed=6)
    x = n.input("x", [1, 40, 11, 13])
    y = n.input("y", [1, 72, 6, 5])
    relu = lambda v: n.node("Relu", [v])  # noqa: E731
    n.output(relu(n.node("Add", [n.conv(x, 40, 40, 3), x])),
             n.conv(x, 40, 40, 5, stride=2),
             n.conv(y, 72, 16, 1),  # pointwise: the 6 rows of 5 pixels are one row of 30
             n.node("Clip", [n.conv(y, 72, 24, 3, dilation=2), n.const(np.float32(-1)),
                             n.const(np.float32(1))]))
    return n.model()


E2E = {"geometry": geometry_model, "widths": widths_model, "gemm": gemm_model,
       "chunks": chunks_model}


@pytest.mark.parametrize("target", X86_TARGETS)
@pytest.mark.parametrize("model", list(E2E))
@pytest.mark.slow
def test_end_to_end_against_onnxruntime(model, target, tmp_path):
    m = E2E[model]()
    art = edgec.compile(m, tmp_path, target=target, name=model)
    src = (tmp_path / f"{model}.c").read_text()
    lanes = get_target(target).lanes(F32)  # x86: whatever this host has
    if lanes > 1:
        assert f"layout-nchwc{{block={lanes}}}" in art.manifest["pipeline"]
        if model == "gemm":
            assert src.count(f"mk_gemm_f32x{lanes}_m") >= 8, "the vector GEMM was not used"
            assert "_leakyrelu_0_3(" in src  # LeakyRelu in the vector epilogue
        else:
            assert art.manifest["ops"].get("BlockedConv"), art.manifest["ops"]
            assert f"mk_conv_f32x{lanes}" in src
            if model == "chunks":  # the tiles that reduce a chunk of the input blocks
                assert re.search(r"_b\d+_acc", src) and re.search(r"_b\d+_z_acc", src)
            else:
                assert f"mk_dwconv_f32x{lanes}" in src
            if model == "geometry":  # every vector activation in the tiles' epilogues
                for tile in (r"_b\d+_leakyrelu_0_2\(", r"_p\d+_leakyrelu_0_05\(",
                             r"_b\d+_sigmoid\(", r"_p\d+_sigmoid\(", r"_b\d+_tanh\("):
                    assert re.search(f"mk_(dw)?conv_f32x{lanes}_\\w*{tile}", src), tile
        res = subprocess.run(["gcc", *art.manifest["cflags"], "-Wall", "-Wextra", "-Werror",
                              "-c", f"{model}.c", "-o", "check.o"], cwd=tmp_path,
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    else:
        assert "layout-nchwc" not in art.manifest["pipeline"] and "_mm256" not in src
    if not runs_here(target):
        return  # an AVX-512 build on an AVX2 host: compiled above, run on AVX-512 hosts
    feeds = random_feeds(m)
    want = onnxruntime_outputs(m, feeds)
    got = edgec.load(tmp_path).run(feeds)
    bad = {name: rel_error(got[name], w) for name, w in want.items()}
    bad = {name: e for name, e in bad.items() if not e <= 1e-5}
    assert not bad, f"outputs off onnxruntime (relative error): {bad}"


def test_mixed_graph_end_to_end(tmp_path):
    """Batch 2, padding channels that elementwise ops make non-zero (Sigmoid(0) = 0.5) read
    by the next blocked convolution, every pool kind: the x86 library against the
    interpreter on the original graph."""
    g = mixed_graph()
    feeds = feeds_for(g)
    want = interpret(g, feeds)
    art = compile_graph(g.copy(), tmp_path, target="x86", name="mixed")
    assert art.manifest["ops"]["BlockedConv"] == 7 and art.manifest["ops"]["BlockedPool"] == 6
    got = edgec.load(tmp_path).run(feeds)
    bad = {name: rel_error(got[name], w) for name, w in want.items()}
    assert all(e <= 1e-5 for e in bad.values()), bad


def test_avx512_mixed_graph_end_to_end(tmp_path):
    """The mixed graph's 16-lane blocked build, warnings as errors, against the interpreter
    where this CPU has AVX-512."""
    g = mixed_graph()
    feeds = feeds_for(g)
    want = interpret(g, feeds)
    art = compile_graph(g, tmp_path, target="x86-avx512", name="mixed")
    assert "layout-nchwc{block=16}" in art.manifest["pipeline"]
    assert art.manifest["ops"]["BlockedConv"] == 7
    src = (tmp_path / "mixed.c").read_text()
    assert "mk_conv_f32x16" in src and "mk_dwconv_f32x16" in src and "_mm512_fmadd_ps" in src
    res = subprocess.run(["gcc", *art.manifest["cflags"], "-Wall", "-Wextra", "-Werror", "-c",
                          "mixed.c", "-o", "check.o"], cwd=tmp_path, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    if runs_here("x86-avx512"):
        got = edgec.load(tmp_path).run(feeds)
        bad = {name: rel_error(got[name], w) for name, w in want.items()}
        assert all(e <= 1e-5 for e in bad.values()), bad
