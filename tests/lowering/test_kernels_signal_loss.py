"""Loss, signal and sampling kernels (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, the
window functions, DFT, STFT, GridSample, AffineGrid) compiled to C without gcc warnings and run
through the loader, against the interpreter. Many nodes share one compiled graph."""

from __future__ import annotations

import numpy as np

from edgec.ir import DType, Graph, TensorType

F32, I64 = DType.F32, DType.I64


def rand(*shape, seed=1, scale=1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def scalar(v: int):
    return np.array(v, np.int64)


def test_losses(check):
    """Every reduction with and without weights and ignore_index, 2-D and 4-D, f32 and f16."""
    g = Graph("losses")
    x4 = g.add_input("x4", TensorType((3, 5, 2, 3), F32))
    t4 = g.add_input("t4", TensorType((3, 2, 3), I64))
    x2 = g.add_input("x2", TensorType((4, 6), F32))
    t2 = g.add_input("t2", TensorType((4,), DType.I32))
    xh = g.add_input("xh", TensorType((2, 3, 4), DType.F16))
    th = g.add_input("th", TensorType((2, 4), I64))
    w5, w6 = g.const(rand(5, seed=7) ** 2), g.const(rand(6, seed=8) ** 2)
    outs = []
    for red in ("none", "sum", "mean"):
        for ii in (None, 1):
            attrs = {"reduction": red} | ({} if ii is None else {"ignore_index": ii})
            for x, t, w in ((x4, t4, None), (x4, t4, w5), (x2, t2, w6), (xh, th, None)):
                outs += g.add_node("NegativeLogLikelihoodLoss", [x, t, w], attrs).outputs
                outs += g.add_node("SoftmaxCrossEntropyLoss", [x, t, w], attrs,
                                   num_outputs=1 if red == "sum" else 2).outputs
    g.outputs = outs
    rng = np.random.default_rng(3)
    feeds = {"x4": rand(3, 5, 2, 3, seed=2, scale=3), "t4": rng.integers(0, 5, (3, 2, 3)),
             "x2": rand(4, 6, seed=4), "t2": rng.integers(0, 6, 4).astype(np.int32),
             "xh": rand(2, 3, 4, seed=5).astype(np.float16), "th": rng.integers(0, 3, (2, 4))}
    check(g, feeds, tol=1e-5)


def test_windows_dft_stft(check):
    g = Graph("signal")
    x = g.add_input("x", TensorType((2, 8, 3, 1), F32))
    xc = g.add_input("xc", TensorType((2, 6, 3, 2), F32))
    s = g.add_input("s", TensorType((2, 40, 1), F32))
    sc = g.add_input("sc", TensorType((1, 30, 2), F32))
    outs = []
    for op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
        for periodic in (0, 1):
            outs += g.add_node(op, [g.const(scalar(9))], {"periodic": periodic}).outputs
    outs += g.add_node("HannWindow", [g.const(scalar(5))], {"output_datatype": 11}).outputs
    for sig in (x, xc):
        for axis in (1, 2):
            for inv, one in ((0, 0), (1, 0), (0, 1), (1, 1)):
                if one and not inv and sig is xc:
                    continue
                for n in (None, 5, 11):
                    ins = [sig, None if n is None else g.const(scalar(n)), g.const(scalar(axis))]
                    outs += g.add_node("DFT", ins, {"inverse": inv, "onesided": one}).outputs
    win = g.const(rand(12, seed=9))
    outs += g.add_node("STFT", [s, g.const(scalar(4)), None, g.const(scalar(8))], {}).outputs
    outs += g.add_node("STFT", [s, g.const(scalar(5)), win], {"onesided": 0}).outputs
    outs += g.add_node("STFT", [sc, g.const(scalar(3)), win], {"onesided": 0}).outputs
    g.outputs = outs
    check(g, tol=1e-5)


def test_grid_sample_affine_grid(check):
    """Every mode, padding and align_corners on a 4-D input, nearest and linear on a 5-D one,
    with grid points well outside [-1, 1]; AffineGrid 2-D and 3-D."""
    g = Graph("sampling")
    x = g.add_input("x", TensorType((2, 3, 5, 4), F32))
    grid = g.add_input("grid", TensorType((2, 6, 7, 2), F32))
    x3 = g.add_input("x3", TensorType((1, 2, 3, 4, 5), F32))
    grid3 = g.add_input("grid3", TensorType((1, 3, 2, 4, 3), F32))
    theta = g.add_input("theta", TensorType((2, 2, 3), F32))
    theta3 = g.add_input("theta3", TensorType((2, 3, 4), F32))
    outs = []
    for mode in ("nearest", "linear", "cubic"):
        for pad in ("zeros", "border", "reflection"):
            for ac in (0, 1):
                attrs = {"mode": mode, "padding_mode": pad, "align_corners": ac}
                outs += g.add_node("GridSample", [x, grid], attrs).outputs
                if mode != "cubic":
                    outs += g.add_node("GridSample", [x3, grid3], attrs).outputs
    for ac in (0, 1):
        outs += g.add_node("AffineGrid", [theta, g.const(np.array([2, 3, 4, 5]))],
                           {"align_corners": ac}).outputs
        outs += g.add_node("AffineGrid", [theta3, g.const(np.array([2, 1, 3, 1, 4]))],
                           {"align_corners": ac}).outputs
    g.outputs = outs
    feeds = {"x": rand(2, 3, 5, 4), "grid": rand(2, 6, 7, 2, seed=2, scale=1.5),
             "x3": rand(1, 2, 3, 4, 5, seed=3), "grid3": rand(1, 3, 2, 4, 3, seed=4, scale=1.5),
             "theta": rand(2, 2, 3, seed=5), "theta3": rand(2, 3, 4, seed=6)}
    check(g, feeds, tol=1e-5)
