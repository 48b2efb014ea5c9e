"""nn kernels (convolutions, matrix products, pools, normalizations, softmax, resize, fused
ops), compiled to C through the driver, built without gcc warnings and run through the
loader, against the interpreter (the ops' numpy references) at 1e-5 relative.

Convolution cases are chosen to reach every path of the builder: register tiles (full and
partial channel blocks, interior tiles that overlap, one-pixel edge tiles, rows with no
interior, the reduction over kernel rows of few-channel stems), pointwise convolutions as a
GEMM over pixel tiles (short last tiles, channel counts that are no multiple of the blocks),
and the row form (depthwise, weights computed at run time).
"""

from __future__ import annotations

import numpy as np
import pytest

from edgec.ir import DType, Graph, TensorType
from edgec.ir.ops.fused import ACTIVATION_PARAMS
from edgec.lowering.kernels.conv import pointwise_tile
from edgec.targets.target import Tiles

F32 = DType.F32


def rand(*shape, seed=1, scale=1.0) -> np.ndarray:
    return np.asarray(np.random.default_rng(seed).standard_normal(shape) * scale, np.float32)


def graph_of(op: str, inputs, attrs=None, num_outputs=None) -> Graph:
    """One node; each input is a shape (a graph input), an array (a constant) or None."""
    g = Graph(op.lower())
    vals = []
    for k, spec in enumerate(inputs):
        if spec is None:
            vals.append(None)
        elif isinstance(spec, np.ndarray):
            vals.append(g.const(spec, f"c{k}"))
        else:
            vals.append(g.add_input(f"in{k}", TensorType(tuple(spec), F32)))
    node = g.add_node(op, vals, attrs or {}, num_outputs=num_outputs)
    g.outputs = list(node.outputs)
    return g


def conv_attrs(nsp, strides=None, pads=None, dilations=None, group=1):
    return {"strides": strides or [1] * nsp, "pads": pads or [0] * (2 * nsp),
            "dilations": dilations or [1] * nsp, "group": group}


# -- Conv -----------------------------------------------------------------------------------

CONV = {
    "tiles 3x3 pad 1": ((1, 4, 9, 9), (8, 4, 3, 3), conv_attrs(2, pads=[1] * 4), True),
    "tiles: partial block, stride, asymmetric pads, dilation": (
        (2, 5, 11, 10), (12, 5, 3, 3),
        conv_attrs(2, strides=[2, 1], pads=[1, 0, 2, 1], dilations=[2, 1]), False),
    "tiles grouped": ((1, 6, 8, 8), (10, 3, 3, 3), conv_attrs(2, pads=[1] * 4, group=2), True),
    "tiles reduce over rows, grouped": (
        (1, 4, 9, 9), (8, 2, 3, 3), conv_attrs(2, strides=[2, 2], pads=[1] * 4, group=2), True),
    "tiles reduce over rows, dilated": (
        (1, 2, 11, 9), (8, 2, 3, 3),
        conv_attrs(2, strides=[1, 2], pads=[2, 1, 1, 2], dilations=[2, 2]), False),
    "tiles reduce over rows: 7x7 stem": (
        (1, 3, 20, 19), (8, 3, 7, 7), conv_attrs(2, strides=[2, 2], pads=[3] * 4), True),
    "tiles overlap on a wide row": ((1, 3, 4, 23), (8, 3, 3, 3), conv_attrs(2, pads=[1] * 4),
                                    True),
    "tiles: row without interior": (
        (1, 4, 5, 3), (8, 4, 3, 5), conv_attrs(2, pads=[1, 2, 1, 2]), True),
    "pointwise as 1-D": ((2, 8, 5, 6), (16, 8, 1, 1), conv_attrs(2), True),
    # pointwise GEMM: 301 input channels give 112-pixel tiles, so 221 pixels end in a short
    # tile; the passes are 4 channels, 73 middle ones and a last one of 5; 11 output channels
    # are a block of 8 and one of 3
    "pointwise: short last tile, odd channels": ((1, 301, 13, 17), (11, 301, 1, 1),
                                                 conv_attrs(2), True),
    "pointwise: one pass of 5 channels, 3 rows, no bias": ((2, 5, 3, 7), (3, 5, 1, 1),
                                                           conv_attrs(2), False),
    "pointwise: one input channel": ((1, 1, 4, 5), (9, 1, 1, 1), conv_attrs(2), True),
    "pointwise grouped": ((1, 6, 5, 5), (10, 3, 1, 1), conv_attrs(2, group=2), True),
    "pointwise 1-D": ((2, 9, 20), (12, 9, 1), conv_attrs(1), True),
    "1x1 stride 2": ((1, 8, 9, 9), (8, 8, 1, 1), conv_attrs(2, strides=[2, 2]), False),
    "1-D": ((2, 3, 16), (8, 3, 5), conv_attrs(1, strides=[2], pads=[2, 1], dilations=[2]),
            True),
    "3-D": ((1, 2, 5, 6, 7), (8, 2, 3, 2, 3),
            conv_attrs(3, strides=[1, 2, 1], pads=[1, 0, 1, 0, 1, 1]), True),
    "rows: depthwise": ((1, 6, 10, 10), (6, 1, 3, 3),
                        conv_attrs(2, strides=[2, 2], pads=[1] * 4, group=6), True),
    "rows: 2 channels per group, dilated": (
        (1, 4, 7, 7), (4, 2, 3, 3), conv_attrs(2, pads=[2] * 4, dilations=[2, 2], group=2),
        False),
    "rows: 3-D depthwise": ((1, 3, 4, 5, 6), (3, 1, 2, 3, 3),
                            conv_attrs(3, pads=[0, 1, 1, 1, 1, 0], group=3), True),
}


@pytest.mark.parametrize("case", CONV)
def test_conv(check, case):
    xs, ws, attrs, bias = CONV[case]
    b = rand(ws[0], seed=3) if bias else None
    check(graph_of("Conv", [xs, rand(*ws, seed=2), b], attrs))


def test_conv_weights_at_run_time(check):
    """Weights that are a graph input cannot be packed: the row form reads them as given."""
    check(graph_of("Conv", [(1, 4, 6, 6), (8, 4, 3, 3), rand(8, seed=3)],
                   conv_attrs(2, strides=[1, 2], pads=[1, 0, 0, 1])))


CONV_TRANSPOSE = {
    "basic": ((1, 3, 4, 4), (3, 2, 3, 3), conv_attrs(2), [0, 0], True),
    "stride, pads, output_padding": ((1, 4, 5, 3), (4, 3, 3, 3),
                                     conv_attrs(2, strides=[2, 2], pads=[1] * 4), [1, 1], True),
    "grouped, dilated": ((2, 4, 4, 4), (4, 1, 2, 3),
                         conv_attrs(2, strides=[2, 1], dilations=[1, 2], group=2,
                                    pads=[0, 1, 1, 0]), [1, 0], False),
    "1-D": ((1, 2, 5), (2, 3, 4), conv_attrs(1, strides=[3], pads=[1, 2]), [0], True),
    "3-D": ((1, 2, 3, 2, 3), (2, 2, 2, 3, 2), conv_attrs(3, strides=[2, 1, 2]), [1, 0, 0],
            True),
}


@pytest.mark.parametrize("case", CONV_TRANSPOSE)
def test_conv_transpose(check, case):
    xs, ws, attrs, out_pad, bias = CONV_TRANSPOSE[case]
    b = rand(ws[1] * attrs["group"], seed=3) if bias else None
    check(graph_of("ConvTranspose", [xs, rand(*ws, seed=2), b],
                   dict(attrs, output_padding=out_pad)))


# -- matrix products ------------------------------------------------------------------------

MATMUL = [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (5, 4, 6)),  # batch dims broadcast
    ((4,), (4, 5)),  # 1-D A: a row
    ((3, 4), (4,)),  # 1-D B: a column (a dot product per row)
    ((4,), (2, 4, 3)),
    ((6,), (6,)),  # a scalar
    ((2, 3, 4), (2, 4, 1)),
]


@pytest.mark.parametrize("a,b", MATMUL)
def test_matmul(check, a, b):
    check(graph_of("MatMul", [a, rand(*b, seed=2)]))


def test_matmul_both_inputs(check):
    check(graph_of("MatMul", [(2, 3, 5), (1, 5, 4)]))


GEMM = [  # transA, transB, alpha, beta, C shape
    (0, 0, 1.0, 1.0, None),
    (1, 0, 0.5, 1.0, (5,)),
    (0, 1, 1.0, 2.0, (3, 1)),
    (1, 1, 2.0, 0.5, (3, 5)),
    (0, 1, 1.0, 1.0, ()),
    (0, 0, 1.5, -1.0, (1, 5)),
]


@pytest.mark.parametrize("ta,tb,alpha,beta,cshape", GEMM)
def test_gemm(check, ta, tb, alpha, beta, cshape):
    a = (4, 3) if ta else (3, 4)
    b = rand(*((5, 4) if tb else (4, 5)), seed=2)
    c = None if cshape is None else rand(*cshape, seed=3)
    check(graph_of("Gemm", [a, b, c],
                   {"transA": ta, "transB": tb, "alpha": alpha, "beta": beta}))


def test_gemm_transposed_b_at_run_time(check):
    """B a graph input (not transposed at compile time): a dot product per output."""
    check(graph_of("Gemm", [(4, 3), (5, 4), rand(5, seed=3)],
                   {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}))


# -- pooling --------------------------------------------------------------------------------

def pool_attrs(kernel, strides=None, pads=None, dilations=None, ceil_mode=0, **extra):
    nsp = len(kernel)
    return {"kernel_shape": kernel, "strides": strides or [1] * nsp,
            "pads": pads or [0] * (2 * nsp), "dilations": dilations or [1] * nsp,
            "ceil_mode": ceil_mode, **extra}


POOLS = {
    "3x3 stride 2 pad 1": ((1, 3, 9, 9), pool_attrs([3, 3], [2, 2], [1] * 4)),
    "ceil mode": ((1, 2, 7, 8), pool_attrs([2, 3], [2, 2], ceil_mode=1)),
    "ceil mode with pads": ((1, 2, 7, 7), pool_attrs([3, 3], [2, 2], [1, 0, 1, 0], ceil_mode=1)),
    "dilated": ((2, 2, 9, 8), pool_attrs([2, 3], [1, 2], [1, 1, 0, 1], dilations=[2, 2])),
    "1-D": ((1, 3, 11), pool_attrs([3], [2], [1, 1])),
    "3-D": ((1, 2, 5, 6, 5), pool_attrs([2, 3, 2], [2, 1, 2], [1, 1, 0, 0, 1, 1])),
}


@pytest.mark.parametrize("case", POOLS)
def test_max_pool(check, case):
    xs, attrs = POOLS[case]
    check(graph_of("MaxPool", [xs], attrs))


@pytest.mark.parametrize("case", POOLS)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(check, case, count_include_pad):
    xs, attrs = POOLS[case]
    check(graph_of("AveragePool", [xs], dict(attrs, count_include_pad=count_include_pad)))


@pytest.mark.parametrize("storage_order", [0, 1])
def test_max_pool_indices(check, storage_order):
    """Indices: the flat index of the first maximum in X; ties (repeated values) pick the
    first window position, as the reference does."""
    g = graph_of("MaxPool", [(2, 2, 6, 7)],
                 pool_attrs([3, 2], [2, 2], [1, 1, 0, 1], storage_order=storage_order),
                 num_outputs=2)
    x = np.random.default_rng(0).integers(-3, 3, (2, 2, 6, 7)).astype(np.float32)
    check(g, {"in0": x})


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 4, 7), (1, 2, 3, 2, 4)])
def test_global_pool(check, op, shape):
    check(graph_of(op, [shape]))


# -- normalization and softmax --------------------------------------------------------------

@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 3), (1, 2, 3, 2, 2)])
def test_batch_normalization(check, shape):
    c = shape[1]
    var = np.abs(rand(c, seed=5)) + 0.1
    check(graph_of("BatchNormalization", [shape, rand(c, seed=2), rand(c, seed=3),
                                          rand(c, seed=4), var], {"epsilon": 1e-3}))


LAYER_NORM = [  # x shape, axis, scale shape, bias shape, outputs
    ((2, 3, 8), -1, (8,), (8,), 1),
    ((2, 3, 4), 1, (3, 4), None, 1),
    ((3, 2, 5), -2, (5,), (2, 5), 3),  # scale and bias broadcast over the normalized axes
    ((4, 6), 0, (4, 6), (4, 6), 3),
]


@pytest.mark.parametrize("shape,axis,sshape,bshape,outputs", LAYER_NORM)
def test_layer_normalization(check, shape, axis, sshape, bshape, outputs):
    b = rand(*bshape, seed=3) if bshape else None
    check(graph_of("LayerNormalization", [shape, rand(*sshape, seed=2), b],
                   {"axis": axis, "epsilon": 1e-4}, num_outputs=outputs))


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape,axis", [((3, 7), -1), ((2, 3, 4), 1), ((2, 3, 4), 0)])
def test_softmax(check, op, shape, axis):
    check(graph_of(op, [shape], {"axis": axis}))


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_stable(check, op):
    """Logits of +-1000: exp would overflow without subtracting the row maximum first."""
    x = np.array([[1000, 999, -1000, 998], [-1000, -1001, -999, -1000]], np.float32)
    check(graph_of(op, [x.shape], {"axis": 1}), {"in0": x})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "LayerNormalization"])
@pytest.mark.parametrize("target", ["x86-avx2", "x86-avx512", "arm64", "armv7"])
def test_rows_in_vectors(tmp_path, op, target):
    """Rows at least a vector long take the vector form of Softmax (the max and the sum in
    partial lanes, the tail one by one) and of LayerNormalization (its two sums so): rows of
    16 (no tail at 4, 8 and 16 lanes), 37 (tails of 1 and 5) and 1000, one with a row's
    largest value in its tail. The C and the LLVM builds give the same bits, those of the
    kernel-IR interpreter's run of the same kernels (LogSoftmax within an ulp of them: its log
    is libm's logf there, numpy's log rounded to float32 in the interpreter), and the op's
    reference within 1e-6 (LayerNorm 1e-5); the report names the kernel. x86-avx512 runs
    where the host has AVX-512 (its kernels run on the interpreter everywhere), arm64 and
    armv7 under qemu."""
    from harness import rel_error, runs_here

    from edgec.compiler.driver import compile_graph
    from edgec.ir import interpret
    from edgec.lowering.run_graph import run_graph
    from edgec.runtime.loader import load
    from edgec.targets.target import get_target

    lanes = get_target(target).lanes(F32)
    kernel = f"layer normalization, {lanes}-lane partial sums per row" if op.startswith(
        "Layer") else f"softmax, {lanes}-lane partial max and sum per row"
    for k, shape in enumerate([(3, 16), (4, 37), (2, 1000)]):
        x = rand(*shape, seed=k, scale=4.0)
        x[1, -1] = 30.0  # the row's max in the scalar tail (37 and 1000 at 16 lanes)
        if op == "LayerNormalization":
            g = graph_of(op, [shape, rand(shape[-1], seed=7), rand(shape[-1], seed=8)],
                         {"axis": -1, "epsilon": 1e-5})
        else:
            g = graph_of(op, [shape], {"axis": -1})
        feeds, y = {"in0": x}, g.outputs[0].name
        want = interpret(g, feeds)[y]
        kernels = run_graph(g.copy(), feeds, get_target(target))[y]
        assert rel_error(kernels, want) <= (1e-5 if op.startswith("Layer") else 1e-6)
        built = {}
        for backend in ("c", "llvm") if target != "armv7" else ("c",):  # (no LLVM for armv7)
            out = tmp_path / f"{backend}{k}"
            compile_graph(g.copy(), out, target=target, name="m", backend=backend,
                          pipeline="plan-memory")
            assert kernel in (out / "report.txt").read_text()
            if runs_here(target):
                built[backend] = got = load(out).run(feeds)[y]
                if op == "LogSoftmax":
                    np.testing.assert_array_max_ulp(got, kernels, maxulp=1)
                else:
                    np.testing.assert_array_equal(got, kernels, err_msg=f"{backend}, {shape}")
        if len(built) == 2:
            np.testing.assert_array_equal(built["c"], built["llvm"], err_msg=f"{shape}")


# -- resize ---------------------------------------------------------------------------------

def resize_graph(shape, *, scales=None, sizes=None, roi=None, **attrs) -> Graph:
    f = lambda a, dt=np.float32: None if a is None else np.array(a, dt)  # noqa: E731
    return graph_of("Resize", [shape, f(roi), f(scales), f(sizes, np.int64)], attrs)


RESIZE = {
    "nearest round_prefer_floor half_pixel": dict(scales=[1, 1, 2, 1.5]),
    "nearest round_prefer_ceil asymmetric": dict(
        scales=[1, 1, 1.7, 2.5], nearest_mode="round_prefer_ceil",
        coordinate_transformation_mode="asymmetric"),
    "nearest floor align_corners, sizes": dict(
        sizes=[1, 2, 7, 3], nearest_mode="floor", coordinate_transformation_mode="align_corners"),
    "nearest ceil pytorch_half_pixel, downsample": dict(
        scales=[1, 1, 0.5, 0.6], nearest_mode="ceil",
        coordinate_transformation_mode="pytorch_half_pixel"),
    "nearest half_pixel_symmetric": dict(
        scales=[1, 1, 1.5, 0.8], coordinate_transformation_mode="half_pixel_symmetric"),
    "linear half_pixel": dict(scales=[1, 1, 2, 1.5], mode="linear"),
    "linear align_corners, sizes": dict(sizes=[1, 2, 6, 9], mode="linear",
                                        coordinate_transformation_mode="align_corners"),
    "linear asymmetric, downsample": dict(scales=[1, 1, 0.5, 0.8], mode="linear",
                                          coordinate_transformation_mode="asymmetric"),
    "linear pytorch_half_pixel to one row": dict(
        sizes=[1, 2, 1, 8], mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
    "linear on axes 2, 3 only": dict(scales=[2.0, 0.5], axes=[2, 3], mode="linear"),
    "linear keep_aspect_ratio not_larger": dict(sizes=[8, 8], axes=[2, 3], mode="linear",
                                                keep_aspect_ratio_policy="not_larger"),
    "cubic": dict(scales=[1, 1, 1.5, 2], mode="cubic"),
    "cubic exclude_outside, a=-0.5": dict(scales=[1, 1, 2, 0.7], mode="cubic",
                                          exclude_outside=1, cubic_coeff_a=-0.5),
    "tf_crop_and_resize linear": dict(
        sizes=[1, 2, 5, 6], roi=[0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2], mode="linear",
        coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-7.0),
    "tf_crop_and_resize nearest": dict(
        scales=[1, 1, 1.5, 1.4], roi=[0, 0, -0.2, 0.1, 1, 1, 0.7, 1.3],
        coordinate_transformation_mode="tf_crop_and_resize"),
    "linear antialias": dict(scales=[1, 1, 0.6, 0.6], mode="linear", antialias=1),
    "cubic antialias exclude_outside, sizes": dict(sizes=[1, 2, 3, 2], mode="cubic",
                                                   antialias=1, exclude_outside=1),
    "cubic antialias, one axis up": dict(scales=[1, 1, 0.5, 1.5], mode="cubic", antialias=1),
    "tf_crop_and_resize linear antialias": dict(
        sizes=[1, 2, 3, 2], roi=[0, 0, 0.1, -0.2, 1, 1, 0.8, 1.1], mode="linear", antialias=1,
        coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-7.0),
}


@pytest.mark.parametrize("case", RESIZE)
def test_resize(check, case):
    check(resize_graph((1, 2, 4, 5), **RESIZE[case]))


def test_resize_nearest_5d(check):
    check(resize_graph((2, 1, 3, 2, 4), scales=[1, 2, 1.5, 2, 0.5]))


def test_resize_antialias_wide(check):
    """A 4x cubic downsample: 16 taps per axis from the compile-time tables."""
    check(resize_graph((1, 1, 12, 20), scales=[1, 1, 0.25, 0.25], mode="cubic", antialias=1))


# -- fused ops ------------------------------------------------------------------------------

ACT_PARAMS = {"LeakyRelu": [0.2], "Clip": [-0.5, 0.7], "HardSigmoid": [0.3, 0.4]}


def fused_conv_graph(xs, ws, attrs, activation="", residual=True) -> Graph:
    g = Graph("fused")
    x = g.add_input("x", TensorType(xs, F32))
    w, b = g.const(rand(*ws, seed=2), "w"), g.const(rand(ws[0], seed=3), "b")
    probe = g.add_node("Conv", [x, w, b], attrs)  # only to learn the output shape
    ys = probe.output.shape
    g.remove_node(probe)
    z = g.add_input("z", TensorType(ys, F32)) if residual else None
    node = g.add_node("FusedConv", [x, w, b, z],
                      dict(attrs, activation=activation,
                           activation_params=ACT_PARAMS.get(activation, [])))
    g.outputs = [node.output]
    return g


def test_fused_conv_residual_relu(check):
    check(fused_conv_graph((1, 8, 6, 7), (16, 8, 3, 3), conv_attrs(2, pads=[1] * 4), "Relu"))


@pytest.mark.parametrize("activation", [a for a in ACTIVATION_PARAMS if a])
def test_fused_conv_activations(check, activation):
    """Every activation of the table on the register-tile path (a 1x1 conv, as 1-D)."""
    check(fused_conv_graph((1, 4, 3, 5), (8, 4, 1, 1), conv_attrs(2), activation,
                           residual=activation == "HardSwish"))


@pytest.mark.parametrize("xs,ws", [((1, 9, 20, 55), (13, 9, 1, 1)),
                                   ((2, 6, 3, 5), (7, 6, 1, 1))])
def test_fused_conv_pointwise_residual_clip(check, xs, ws):
    """The pointwise GEMM applies the epilogue in its last pass over each tile: 1100 pixels
    in tiles of 560 (a short last one), 13 output channels (blocks of 8 and 5), passes of 4
    and 5 input channels; then one pass of 6 channels over two images."""
    check(fused_conv_graph(xs, ws, conv_attrs(2), "Clip"))


def test_pointwise_tile():
    """Tiles keep Cg x tile floats within 3/8 of a 512 KB L2, split the plane evenly in
    multiples of 16, and take the whole plane when it fits."""
    assert pointwise_tile(960, 49) == 49
    assert pointwise_tile(144, 3136) == 320  # 10 tiles of at most 341 pixels, evened out
    assert pointwise_tile(16, 12544) == 976  # 13 tiles of at most pointwise_max pixels
    assert pointwise_tile(301, 221) == 112
    for cg, plane in [(7, 5000), (144, 3136), (1000, 49), (5000, 300)]:
        tp = pointwise_tile(cg, plane)
        assert tp == plane or tp % 16 == 0
        assert min(plane, Tiles().pointwise_min) <= tp <= Tiles().pointwise_max
        assert (-(-plane // tp) - 1) * tp < plane  # no empty last tile


def test_fused_conv_rows_residual_leaky_relu(check):
    """The row form (depthwise) applies the same epilogue after accumulating each row."""
    check(fused_conv_graph((1, 4, 7, 7), (4, 1, 3, 3),
                           conv_attrs(2, strides=[2, 2], pads=[1] * 4, group=4), "LeakyRelu"))


@pytest.mark.parametrize("a,b", [((3, 4), (4, 6)), ((2, 3, 4), (4, 5)), ((3, 4), (4, 1))])
def test_fused_matmul_bias_residual_clip(check, a, b):
    g = Graph("fused_matmul")
    x = g.add_input("a", TensorType(a, F32))
    w = g.const(rand(*b, seed=2), "w")
    bias = g.const(rand(b[-1], seed=3), "bias")
    ys = a[:-1] + b[-1:]
    z = g.add_input("z", TensorType(ys, F32))
    node = g.add_node("FusedMatMul", [x, w, bias, z],
                      {"activation": "Clip", "activation_params": [-0.5, 0.8]})
    g.outputs = [node.output]
    check(g)


def test_fused_matmul_sigmoid_no_bias(check):
    g = Graph("fused_matmul")
    x = g.add_input("a", TensorType((2, 3, 4), F32))
    node = g.add_node("FusedMatMul", [x, g.const(rand(2, 4, 5, seed=2), "w")],
                      {"activation": "Sigmoid", "activation_params": []})
    g.outputs = [node.output]
    check(g)
