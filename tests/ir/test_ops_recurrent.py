"""RNN, GRU and LSTM against onnxruntime: directions, initial states, biases, sequence
lengths, clip, activation lists with their alpha/beta, GRU's linear_before_reset, LSTM's
peepholes and input_forget. onnxruntime refuses layout=1, so the batch-major layout is checked
against onnxruntime's time-major result on transposed operands."""

import numpy as np
import pytest
from opcheck import check, rand, run_onnxruntime

from edgec.errors import ShapeError
from edgec.ir import DType, Graph, TensorType, get_op

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
T, B, I, H = 4, 2, 3, 5


def operands(op, *, direction="forward", bias=True, seq=None, init=False, peep=False, t=T,
             b=B):
    """X, W, R, B, sequence_lens, initial_h(, initial_c, P) time-major, omitted ones None."""
    g, nd = GATES[op], 2 if direction == "bidirectional" else 1
    ins = [rand(t, b, I), rand(nd, g * H, I, seed=1), rand(nd, g * H, H, seed=2),
           rand(nd, 2 * g * H, seed=3) if bias else None,
           None if seq is None else np.array(seq, np.int32),
           rand(nd, b, H, seed=4) if init else None]
    if op == "LSTM":
        ins += [rand(nd, b, H, seed=5) if init else None, rand(nd, 3 * H, seed=6) if peep else None]
    return ins


def n_outputs(op):
    return 3 if op == "LSTM" else 2


def run(op, ins, **attrs):
    while ins[-1] is None:
        ins = ins[:-1]
    attrs.setdefault("hidden_size", H)  # onnxruntime needs it
    return check(op, ins, attrs, n_outputs=n_outputs(op), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction,init,bias,seq", [
    ("forward", False, True, None),
    ("reverse", True, True, None),
    ("bidirectional", True, False, None),
    ("bidirectional", True, True, [4, 2]),
    ("reverse", False, True, [3, 0]),  # an empty sequence: zero state
])
def test_directions_states_lengths(op, direction, init, bias, seq):
    run(op, operands(op, direction=direction, init=init, bias=bias, seq=seq),
        direction=direction)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_clip(op):
    run(op, operands(op, direction="bidirectional", init=True, peep=True), clip=0.4,
        direction="bidirectional")


@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_linear_before_reset(lbr):
    run("GRU", operands("GRU", direction="bidirectional", init=True), linear_before_reset=lbr,
        direction="bidirectional")


@pytest.mark.parametrize("input_forget", [0, 1])
def test_lstm_peepholes_and_input_forget(input_forget):
    run("LSTM", operands("LSTM", init=True, peep=True, seq=[3, 4]), input_forget=input_forget)


@pytest.mark.parametrize("acts,alpha,beta", [
    (["Relu"], [], []), (["LeakyRelu"], [0.2], []), (["Affine"], [0.5], [0.1]),
    (["ScaledTanh"], [0.5], [2.0]), (["HardSigmoid"], [0.3], [0.4]), (["Elu"], [0.7], []),
    (["ThresholdedRelu"], [0.1], []), (["Softsign"], [], []), (["Softplus"], [], []),
    (["Affine"], [], []), (["HardSigmoid"], [], []),  # onnxruntime's defaults
])
def test_rnn_activations(acts, alpha, beta):
    attrs = {"activations": acts}
    attrs.update({k: v for k, v in (("activation_alpha", alpha), ("activation_beta", beta)) if v})
    run("RNN", operands("RNN"), **attrs)


def test_activation_lists_consume_alpha_and_beta_in_order():
    """Each list is read by the functions that take it, in order; past its end, defaults."""
    run("LSTM", operands("LSTM", direction="bidirectional"), direction="bidirectional",
        activations=["HardSigmoid", "Affine", "LeakyRelu", "Sigmoid", "ScaledTanh", "Elu"],
        activation_alpha=[0.1, 0.2, 0.3, 0.4, 0.6], activation_beta=[0.5, 0.6, 1.5])
    run("GRU", operands("GRU", direction="bidirectional"), direction="bidirectional",
        activations=["HardSigmoid", "Affine", "LeakyRelu", "ScaledTanh"],
        activation_alpha=[0.1, 0.2, 0.3, 0.9], activation_beta=[0.5, 0.6, 0.7], clip=0.8)


def batch_major(op, ins):
    """Operands of the layout=1 form: X [B, T, I], initial states [B, D, H]."""
    out = list(ins)
    out[0] = ins[0].transpose(1, 0, 2).copy()
    for k in (5, 6):
        if k < len(ins) and ins[k] is not None:
            out[k] = ins[k].transpose(1, 0, 2).copy()
    return out


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_layout_1(op):
    ins = operands(op, direction="bidirectional", init=True, seq=[4, 3])
    attrs = {"direction": "bidirectional", "hidden_size": H}
    want = run_onnxruntime(op, ins, attrs, set(), n_outputs(op))
    got = get_op(op).run(batch_major(op, ins), get_op(op).complete_attrs({**attrs, "layout": 1}))
    np.testing.assert_allclose(got[0], want[0].transpose(2, 0, 1, 3), rtol=1e-4, atol=1e-5)
    for g, w in zip(got[1:], want[1:], strict=True):
        np.testing.assert_allclose(g, w.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)


def node(op, shapes, attrs):
    g = Graph("g")
    ins = [None if s is None else g.add_input(f"x{i}", TensorType(s, dt))
           for i, (s, dt) in enumerate((s, DType.I32 if i == 4 else DType.F32)
                                       for i, s in enumerate(shapes))]
    return g.add_node(op, ins, attrs)


def test_outputs_always_present():
    n = node("LSTM", [(T, B, I), (1, 4 * H, I), (1, 4 * H, H)], {})
    assert [v.shape for v in n.outputs] == [(T, 1, B, H), (1, B, H), (1, B, H)]
    n = node("GRU", [(T, B, I), (2, 3 * H, I), (2, 3 * H, H)],
             {"layout": 1, "direction": "bidirectional"})
    assert [v.shape for v in n.outputs] == [(T, B, 2, H), (T, 2, H)]


@pytest.mark.parametrize("op,shapes,attrs,match", [
    ("LSTM", [(T, B, I), (1, 4 * H, I + 1), (1, 4 * H, H)], {}, "W must be"),
    ("GRU", [(T, B, I), (1, 3 * H, I), (1, 3 * H, H)], {"hidden_size": H + 1}, "hidden_size"),
    ("RNN", [(T, B, I), (1, H, I), (1, H, H)], {"direction": "sideways"}, "direction"),
    ("RNN", [(T, B, I), (1, H, I), (1, H, H)], {"activations": ["Gelu"]}, "not one of"),
    ("LSTM", [(T, B, I), (2, 4 * H, I), (2, 4 * H, H)],
     {"direction": "bidirectional", "activations": ["Sigmoid", "Tanh", "Tanh"]}, "per direction"),
    ("RNN", [(T, B, I), (1, H, I), (1, H, H), None, (B + 1,)], {}, "sequence_lens"),
    ("RNN", [(T, B, I), (1, H, I), (1, H, H)], {"clip": -1.0}, "clip"),
])
def test_shape_errors(op, shapes, attrs, match):
    with pytest.raises(ShapeError, match=match):
        node(op, shapes, attrs)
