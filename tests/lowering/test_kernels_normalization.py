"""Normalization-family kernels (instance, group, mean-variance and Lp normalization, LRN,
Lp pools, MaxUnpool, RoiAlign) compiled to C without gcc warnings and run through the loader,
against the interpreter at 1e-5 relative. Many nodes share one compiled graph to keep builds
few."""

from __future__ import annotations

import numpy as np

from edgec.ir import DType, Graph, TensorType
from edgec.ir.ops.nn import max_pool

F32 = DType.F32


def rand(*shape, seed=1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def pool(kernel, strides=None, pads=None, dilations=None, **kw):
    n = len(kernel)
    return {"kernel_shape": kernel, "strides": strides or [1] * n, "pads": pads or [0] * 2 * n,
            "dilations": dilations or [1] * n, **kw}


def many(nodes, shape) -> Graph:
    """One graph: every (op, constant operands, attrs) node applied to one input."""
    g = Graph("many")
    x = g.add_input("x", TensorType(shape, F32))
    outs = []
    for op, consts, attrs in nodes:
        outs += g.add_node(op, [x] + [g.const(c) for c in consts], attrs).outputs
    g.outputs = outs
    return g


def test_normalizations_4d(check):
    c = 6
    affine = [rand(c, seed=2), rand(c, seed=3)]
    check(many([
        ("InstanceNormalization", affine, {"epsilon": 0.01}),
        ("GroupNormalization", affine, {"num_groups": 3}),
        ("GroupNormalization", affine, {"num_groups": 1, "epsilon": 0.1}),
        ("MeanVarianceNormalization", [], {}),
        ("MeanVarianceNormalization", [], {"axes": [1, 3]}),
        ("MeanVarianceNormalization", [], {"axes": [0, 1, 2, 3]}),
        ("LpNormalization", [], {"axis": 1, "p": 1}),
        ("LpNormalization", [], {"axis": -1, "p": 2}),
        ("LRN", [], {"size": 3, "alpha": 0.1, "beta": 0.6, "bias": 1.5}),
        ("LRN", [], {"size": 4}),
        ("LRN", [], {"size": 9, "alpha": 0.5}),
    ], (2, c, 5, 4)))


def test_normalizations_other_ranks(check):
    check(many([
        ("InstanceNormalization", [rand(4, seed=2), rand(4, seed=3)], {}),
        ("GroupNormalization", [rand(4, seed=2), rand(4, seed=3)], {"num_groups": 2}),
        ("MeanVarianceNormalization", [], {"axes": [0, 2]}),
        ("LpNormalization", [], {"axis": 0, "p": 2}),
        ("LRN", [], {"size": 3}),
    ], (3, 4, 7)))


def test_lp_pools(check):
    check(many([
        ("LpPool", [], pool([3, 2], [2, 1], [1, 0, 1, 1], [1, 2], p=3)),
        ("LpPool", [], pool([2, 2], ceil_mode=1, strides=[2, 2], p=2)),
        ("LpPool", [], pool([3, 3], pads=[2, 2, 2, 2], p=1)),
        ("GlobalLpPool", [], {"p": 1}),
        ("GlobalLpPool", [], {"p": 2}),
        ("GlobalLpPool", [], {"p": 3}),
    ], (2, 3, 7, 6)))
    check(many([("LpPool", [], pool([2, 3, 2], [1, 2, 1], [0, 1, 1, 1, 0, 0], p=2))],
               (1, 2, 4, 5, 3)))


def test_max_unpool(check):
    x = rand(2, 3, 6, 5)
    attrs = pool([2, 2], [2, 2], [0, 0, 0, 1])
    v, idx = max_pool(x, ceil_mode=0, storage_order=0, **attrs)
    del attrs["dilations"]
    g = Graph("unpool")
    xv = g.add_input("v", TensorType(v.shape, F32))
    iv = g.add_input("i", TensorType(idx.shape, DType.I64))
    g.outputs = [g.add_node("MaxUnpool", [xv, iv, g.const(np.array(x.shape, np.int64))],
                            attrs).output,
                 g.add_node("MaxUnpool", [xv, iv], attrs).output]
    check(g, {"v": v, "i": idx})
    # indices out of range are clamped into Y, in the reference and in the kernel
    check(g, {"v": v, "i": idx * 3 - 7})


def test_roi_align(check):
    g = Graph("roi")
    x = g.add_input("x", TensorType((2, 3, 10, 8), F32))
    rois = g.add_input("rois", TensorType((7, 4), F32))
    idx = g.add_input("idx", TensorType((7,), DType.I64))
    g.outputs = [g.add_node("RoiAlign", [x, rois, idx], {
        "mode": mode, "coordinate_transformation_mode": ctm, "sampling_ratio": sr,
        "spatial_scale": scale, "output_height": oh, "output_width": ow}).output
        for mode in ("avg", "max") for ctm in ("half_pixel", "output_half_pixel")
        for sr, scale, oh, ow in ((0, 1.0, 3, 4), (2, 0.5, 2, 2), (1, 1.7, 1, 1))]
    # regions inside, past the edges, tiny, reversed (an empty grid); batch indices clamped
    boxes = np.array([[0, 0, 7, 9], [0.5, 5.2, 4, 9.7], [5, 5, 9, 9], [-3, -2, 2, 1],
                      [3, 3, 3.2, 3.1], [6, 1, 2, 4], [1, 1, 30, 30]], np.float32)
    check(g, {"x": rand(2, 3, 10, 8), "rois": boxes,
              "idx": np.array([0, 1, 1, 0, 1, 0, 5], np.int64)})
