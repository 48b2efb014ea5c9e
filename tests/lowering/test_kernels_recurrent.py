"""RNN, GRU and LSTM kernels compiled to C without gcc warnings and run through the loader,
against the interpreter at 1e-5 relative: every direction and layout, initial states and
sequence lengths given at run time (one of them 0), clip, GRU's linear_before_reset, LSTM's
peepholes and input_forget, and the activation functions. Weights are constants in some
nodes and run-time inputs in others (as in the ONNX node tests)."""

from __future__ import annotations

import numpy as np
import pytest
from harness import random_feeds

from edgec.ir import DType, Graph, TensorType

F32 = DType.F32
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
T, B, I, H = 4, 3, 3, 5


def rand(*shape, seed=1) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 0.5).astype(np.float32)


class Layers:
    """A graph of recurrent nodes sharing the inputs x (time-major), xb (batch-major) and
    seq (sequence lengths); every node's outputs are graph outputs."""

    def __init__(self):
        self.g = Graph("rec")
        self.x = self.g.add_input("x", TensorType((T, B, I), F32))
        self.xb = self.g.add_input("xb", TensorType((B, T, I), F32))
        self.seq = self.g.add_input("seq", TensorType((B,), DType.I32))
        self.outs: list = []
        self.k = 0

    def operand(self, shape, runtime: bool):
        self.k += 1
        if runtime:
            return self.g.add_input(f"in{self.k}", TensorType(shape, F32))
        return self.g.const(rand(*shape, seed=self.k))

    def add(self, op, *, direction="forward", layout=0, seq=False, init=False, peep=False,
            runtime_weights=False, **attrs):
        g, nd = GATES[op], 2 if direction == "bidirectional" else 1
        state = (B, nd, H) if layout else (nd, B, H)
        ins = [self.xb if layout else self.x, self.operand((nd, g * H, I), runtime_weights),
               self.operand((nd, g * H, H), runtime_weights),
               self.operand((nd, 2 * g * H), runtime_weights), self.seq if seq else None,
               self.operand(state, True) if init else None]
        if op == "LSTM":
            ins += [self.operand(state, False) if init else None,
                    self.operand((nd, 3 * H), runtime_weights) if peep else None]
        while ins[-1] is None:
            ins.pop()
        node = self.g.add_node(op, ins, dict(attrs, direction=direction, layout=layout))
        self.outs += node.outputs

    def feeds(self, seq=(4, 0, 2)):
        self.g.outputs = self.outs
        feeds = random_feeds(self.g)
        feeds["seq"] = np.asarray(seq, np.int32)
        return feeds


VARIANTS = [
    dict(),
    dict(direction="reverse", seq=True, init=True),
    dict(direction="bidirectional", layout=1, init=True, clip=0.7),
    dict(direction="bidirectional", seq=True, runtime_weights=True),
    dict(direction="forward", layout=1, seq=True, init=True, runtime_weights=True),
]


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_directions_layouts_states(check, op):
    layers = Layers()
    for k, v in enumerate(VARIANTS):
        extra = {}
        if op == "GRU":
            extra["linear_before_reset"] = k % 2
        if op == "LSTM":
            extra.update(peep=k % 2 == 0, input_forget=int(k == 3))
        layers.add(op, **v, **extra)
    check(layers.g, layers.feeds())


def test_activations(check):
    layers = Layers()
    for acts, alpha, beta in [
        (["Relu"], [], []), (["LeakyRelu"], [0.2], []), (["Affine"], [0.5], [0.1]),
        (["ScaledTanh"], [0.5], [2.0]), (["HardSigmoid"], [0.3], [0.4]), (["Elu"], [0.7], []),
        (["ThresholdedRelu"], [0.1], []), (["Softsign"], [], []), (["Softplus"], [], []),
    ]:
        layers.add("RNN", activations=acts, activation_alpha=alpha, activation_beta=beta)
    layers.add("GRU", direction="bidirectional", init=True, clip=0.8,
               activations=["HardSigmoid", "Affine", "LeakyRelu", "ScaledTanh"],
               activation_alpha=[0.1, 0.2, 0.3, 0.9], activation_beta=[0.5, 0.6, 0.7])
    layers.add("LSTM", direction="bidirectional", peep=True, init=True,
               activations=["HardSigmoid", "Softsign", "Tanh", "Sigmoid", "Elu", "Relu"],
               activation_alpha=[0.3, 0.5], activation_beta=[0.6])
    check(layers.g, layers.feeds(seq=(4, 4, 4)))


def test_lengths_past_the_sequence_are_clamped(check):
    layers = Layers()
    for op in GATES:
        layers.add(op, direction="bidirectional", seq=True, init=True)
    check(layers.g, layers.feeds(seq=(9, -2, 3)))
