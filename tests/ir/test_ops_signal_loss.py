"""Loss, signal and sampling ops (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, the window
functions, DFT, STFT, GridSample, AffineGrid) against onnxruntime; the real inverse DFT, which
onnxruntime lacks, against numpy's irfft; the frontend's older-opset forms; shape errors."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper
from opcheck import check, rand

from edgec.errors import ShapeError
from edgec.frontends.onnx import import_onnx
from edgec.ir import DType, Graph, TensorType, interpret

I64 = np.int64


def scalar(v: int) -> np.ndarray:
    return np.array(v, I64)


# -- losses -------------------------------------------------------------------------------------

LOSS_CASES = [(red, ii, weighted) for red in ("none", "sum", "mean") for ii in (None, 2, -1)
              for weighted in (False, True)]


@pytest.mark.parametrize("red,ii,weighted", LOSS_CASES)
def test_losses_nd(red, ii, weighted):
    """[N, C, d1, d2] with targets that hit ignore_index; both ops, log_prob included."""
    x, t = rand(3, 5, 2, 4), rand(3, 2, 4, dtype=I64, lo=0, hi=4)
    if ii == -1:
        t[0, 0, :2] = -1
    w = rand(5, seed=3, lo=0.1, hi=1.0) if weighted else None
    attrs = {"reduction": red} | ({} if ii is None else {"ignore_index": ii})
    check("NegativeLogLikelihoodLoss", [x, t, w], attrs)
    check("SoftmaxCrossEntropyLoss", [x, t, w], attrs, n_outputs=2)


@pytest.mark.parametrize("red", ["none", "mean"])
def test_losses_2d_int32_targets(red):
    x, t = rand(6, 4), rand(6, dtype=np.int32, lo=0, hi=3)
    check("NegativeLogLikelihoodLoss", [x, t], {"reduction": red})
    check("SoftmaxCrossEntropyLoss", [x, t], {"reduction": red})


def test_loss_shape_errors():
    g = Graph("bad")
    x = g.add_input("x", TensorType((2, 3, 4), DType.F32))
    t = g.add_input("t", TensorType((2, 3), DType.I64))
    with pytest.raises(ShapeError, match="target"):
        g.add_node("NegativeLogLikelihoodLoss", [x, t], {})
    t = g.add_input("t2", TensorType((2, 4), DType.I64))
    with pytest.raises(ShapeError, match="reduction"):
        g.add_node("SoftmaxCrossEntropyLoss", [x, t], {"reduction": "max"})
    x0 = g.add_input("x0", TensorType((2, 0), DType.F32))  # no class for a target to pick
    t0 = g.add_input("t0", TensorType((2,), DType.I64))
    for opname in ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"):
        with pytest.raises(ShapeError, match="no classes"):
            g.add_node(opname, [x0, t0], {})


# -- windows, DFT, STFT ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic,size", [(1, 10), (0, 10), (1, 1), (0, 7)])
def test_windows(name, periodic, size):
    if periodic == 0 and size == 1:
        return
    check(name, [scalar(size)], {"periodic": periodic}, consts=[0])


def test_window_output_datatype():
    check("HannWindow", [scalar(8)], {"output_datatype": 11}, consts=[0])


DFT_CASES = [(shape, axis, inv, one, n) for shape in ((2, 8, 3, 1), (2, 8, 3, 2))
             for axis in (1, 2, -3) for inv in (0, 1) for one in (0, 1) for n in (None, 6, 11)
             if not (inv and one) and not (one and shape[-1] == 2)]


@pytest.mark.parametrize("shape,axis,inv,one,n", DFT_CASES)
def test_dft(shape, axis, inv, one, n):
    x = rand(*shape)
    check("DFT", [x, None if n is None else scalar(n), scalar(axis)],
          {"inverse": inv, "onesided": one}, consts=[1, 2], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [None, 9, 4])
def test_dft_real_inverse_is_irfft(n):
    """inverse + onesided: a half spectrum to a real signal (numpy's irfft)."""
    x = rand(2, 6, 3, 2)
    g = Graph("irfft")
    ins = [g.add_input("x", TensorType(x.shape, DType.F32)), None if n is None else
           g.const(scalar(n)), g.const(scalar(1))]
    g.outputs = list(g.add_node("DFT", ins, {"inverse": 1, "onesided": 1}).outputs)
    got = interpret(g, {"x": x})[g.outputs[0].name]
    want = np.fft.irfft(x[..., 0] + 1j * x[..., 1], n=n, axis=1)[..., None]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("signal,step,window,flen,onesided", [
    ((2, 64, 1), 8, None, 16, 1),
    ((2, 64, 1), 5, 16, None, 0),
    ((1, 40, 2), 5, 12, 12, 0),
])
def test_stft(signal, step, window, flen, onesided):
    ins = [rand(*signal), scalar(step), None if window is None else rand(window, seed=3),
           None if flen is None else scalar(flen)]
    check("STFT", ins, {"onesided": onesided}, consts=[1, 3], rtol=1e-4, atol=1e-4)


def test_dft_bad_axis():
    g = Graph("bad")
    x = g.add_input("x", TensorType((2, 8, 1), DType.F32))
    with pytest.raises(ShapeError, match="axis"):
        g.add_node("DFT", [x, None, g.const(scalar(2))], {})


# -- GridSample, AffineGrid ---------------------------------------------------------------------

GRID_CASES = [(mode, pad, ac) for mode in ("nearest", "linear", "cubic")
              for pad in ("zeros", "border", "reflection") for ac in (0, 1)]


@pytest.mark.parametrize("mode,pad,ac", GRID_CASES)
def test_grid_sample(mode, pad, ac):
    """Grid points up to 1.3 beyond the borders, so every padding mode is exercised."""
    attrs = {"mode": mode, "padding_mode": pad, "align_corners": ac}
    check("GridSample", [rand(2, 3, 5, 4), rand(2, 6, 7, 2, lo=-2.3, hi=2.3, seed=5)], attrs,
          rtol=1e-4, atol=1e-5)
    if mode != "cubic":
        check("GridSample", [rand(1, 2, 3, 4, 5), rand(1, 3, 2, 4, 3, lo=-2.3, hi=2.3, seed=5)],
              attrs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ac", [0, 1])
def test_affine_grid(ac):
    check("AffineGrid", [rand(2, 2, 3), np.array([2, 3, 4, 5], I64)], {"align_corners": ac},
          consts=[1])
    check("AffineGrid", [rand(2, 3, 4), np.array([2, 3, 4, 5, 3], I64)], {"align_corners": ac},
          consts=[1])


def test_grid_sample_shape_errors():
    g = Graph("bad")
    x = g.add_input("x", TensorType((1, 2, 4, 4), DType.F32))
    grid = g.add_input("g", TensorType((1, 3, 3, 3), DType.F32))
    with pytest.raises(ShapeError, match="grid"):
        g.add_node("GridSample", [x, grid], {})
    grid = g.add_input("g2", TensorType((1, 3, 3, 2), DType.F32))
    with pytest.raises(ShapeError, match="padding_mode"):
        g.add_node("GridSample", [x, grid], {"padding_mode": "wrap"})


# -- older opset forms through the frontend ----------------------------------------------------

def _one_node_model(node, inputs, opset: int) -> onnx.ModelProto:
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in inputs.items()]
    graph = helper.make_graph([node], "g", vis, [onnx.ValueInfoProto(name="y")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _against_onnxruntime(model: onnx.ModelProto, feeds: dict) -> None:
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    g = import_onnx(model)
    got = interpret(g, feeds)[g.outputs[0].name]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_dft_axis_attribute_opset17():
    node = helper.make_node("DFT", ["x"], ["y"], axis=2)
    x = rand(1, 4, 6, 1)
    _against_onnxruntime(_one_node_model(node, {"x": x}, 17), {"x": x})


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
def test_grid_sample_opset16_mode_names(mode):
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode)
    feeds = {"x": rand(1, 2, 4, 5), "g": rand(1, 3, 3, 2, lo=-1.2, hi=1.2, seed=4)}
    _against_onnxruntime(_one_node_model(node, feeds, 16), feeds)
