"""Recurrent layers: RNN, GRU and LSTM, forward, reverse or bidirectional.

With x_t the input at step t, h the previous hidden state, W/R/Wb/Rb the input, recurrence
and bias blocks of each gate, f/g/h the activations (clipped to [-clip, clip] when `clip` is
set) and (.) the elementwise product:
    RNN   h_t = f(W x_t + R h + Wb + Rb)
    GRU   z = f(Wz x + Rz h + Wbz + Rbz),  r = f(Wr x + Rr h + Wbr + Rbr)
          n = g(Wh x + Rh (r (.) h) + Rbh + Wbh)        (linear_before_reset = 0)
          n = g(Wh x + r (.) (Rh h + Rbh) + Wbh)        (linear_before_reset = 1)
          h_t = (1 - z) (.) n + z (.) h
    LSTM  i = f(Wi x + Ri h + Pi (.) c + b_i),  f_ = f(Wf x + Rf h + Pf (.) c + b_f)
          (f_ = 1 - i with input_forget, as onnxruntime couples them)
          c~ = g(Wc x + Rc h + b_c),  c_t = f_ (.) c + i (.) c~
          o = f(Wo x + Ro h + Po (.) c_t + b_o),  h_t = o (.) h(c_t)
Gate blocks are stacked in W, R, B in the order RNN: one; GRU: z, r, h; LSTM: i, o, f, c.
A batch entry with sequence length L runs steps 0..L-1 (reverse: L-1..0); Y is zero at
steps >= L and Y_h/Y_c hold the state after its last step (zero when L = 0, as onnxruntime
has it). The IR ops always have every
output (Y, Y_h and for LSTM Y_c): the kernels keep their state in them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...errors import ShapeError
from ..dtypes import DType
from ..registry import Attr, get_op, has_op, op
from ..types import TensorType


@dataclass(frozen=True)
class Cell:
    """What distinguishes the three layers: gate count and default activations."""

    op: str
    gates: int
    defaults: tuple[str, ...]  # one direction's activations


CELLS = {
    "RNN": Cell("RNN", 1, ("Tanh",)),
    "GRU": Cell("GRU", 3, ("Sigmoid", "Tanh")),
    "LSTM": Cell("LSTM", 4, ("Sigmoid", "Tanh", "Tanh")),
}
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}

# Activation functions of the recurrent ops: name -> (uses alpha, uses beta, default alpha,
# default beta). The defaults are onnxruntime's (ONNX leaves them open): 0 where the op has
# none, so an Affine or ScaledTanh without values is 0. Affine and ScaledTanh exist only here
# (they left ONNX as ops); the others are the registry's ops, whose references and kernel
# formulas the recurrent ops reuse.
ACTIVATIONS: dict[str, tuple[bool, bool, float, float]] = {
    "Relu": (False, False, 0.0, 0.0),
    "Tanh": (False, False, 0.0, 0.0),
    "Sigmoid": (False, False, 0.0, 0.0),
    "Softsign": (False, False, 0.0, 0.0),
    "Softplus": (False, False, 0.0, 0.0),
    "LeakyRelu": (True, False, 0.01, 0.0),
    "ThresholdedRelu": (True, False, 0.0, 0.0),
    "Elu": (True, False, 1.0, 0.0),
    "HardSigmoid": (True, True, 0.2, 0.5),
    "ScaledTanh": (True, True, 0.0, 0.0),
    "Affine": (True, True, 0.0, 0.0),
}
_CANONICAL = {k.lower(): k for k in ACTIVATIONS}


@dataclass(frozen=True)
class Activation:
    name: str
    alpha: float
    beta: float


def activation_list(cell: Cell, directions: int, activations, alphas, betas,
                    where: str = "") -> list[list[Activation]]:
    """Per direction, the cell's activations with their alpha and beta.

    The alpha and beta lists are consumed in order by the activations that take them (two
    cursors, as onnxruntime reads them); an activation past the end of a list gets its
    default."""
    names = list(activations) or list(cell.defaults) * directions
    per_dir = len(cell.defaults)
    if len(names) != per_dir * directions:
        raise ShapeError(f"{where}{cell.op}: activations {names} must name {per_dir} function(s) "
                         f"per direction ({directions})")
    alphas, betas = list(alphas or []), list(betas or [])
    out: list[Activation] = []
    for name in names:
        canon = _CANONICAL.get(name.lower())
        if canon is None:
            raise ShapeError(f"{where}{cell.op}: activation {name!r} is not one of "
                             f"{sorted(ACTIVATIONS)}")
        uses_a, uses_b, da, db = ACTIVATIONS[canon]
        a = alphas.pop(0) if uses_a and alphas else da
        b = betas.pop(0) if uses_b and betas else db
        out.append(Activation(canon, a, b))
    return [out[d * per_dir:(d + 1) * per_dir] for d in range(directions)]


def _affine(x, alpha, beta):
    return alpha * x + beta


def _scaled_tanh(x, alpha, beta):
    return alpha * np.tanh(beta * x)


_LOCAL: dict[str, Callable] = {"Affine": _affine, "ScaledTanh": _scaled_tanh}


def apply_activation(act: Activation, x: np.ndarray) -> np.ndarray:
    """The activation's numpy reference: the registry op's, or Affine / ScaledTanh here."""
    f32 = np.float32
    if act.name in _LOCAL:
        return _LOCAL[act.name](x, f32(act.alpha), f32(act.beta)).astype(x.dtype)
    if not has_op(act.name):
        raise ShapeError(f"recurrent activation {act.name} needs the {act.name} op, which "
                         "edgec's registry lacks")
    opdef = get_op(act.name)
    attrs = {k: v for k, v in (("alpha", act.alpha), ("beta", act.beta)) if k in opdef.attrs}
    return opdef.run([x], opdef.complete_attrs(attrs))[0]


# -- shape inference ------------------------------------------------------------------------

@dataclass(frozen=True)
class Dims:
    seq: int
    batch: int
    input: int
    hidden: int
    directions: int


def recurrent_dims(cell: Cell, inputs, *, direction: str, hidden_size, layout: int) -> Dims:
    """Check the operands of an RNN/GRU/LSTM node and return its sizes."""
    name = cell.op
    x, w, r = (v.type for v in inputs[:3])

    def get(i):
        return inputs[i] if i < len(inputs) else None

    if direction not in DIRECTIONS:
        raise ShapeError(f"{name}: direction {direction!r} is not one of {sorted(DIRECTIONS)}")
    if layout not in (0, 1):
        raise ShapeError(f"{name}: layout must be 0 or 1, got {layout}")
    if x.rank != 3:
        raise ShapeError(f"{name}: X must be 3-D, got {x}")
    if not x.dtype.is_float or any(t.dtype != x.dtype for t in (w, r)):
        raise ShapeError(f"{name}: X {x}, W {w} and R {r} must be floats of one dtype")
    t, b = (x.shape[1], x.shape[0]) if layout else x.shape[:2]
    nd, g = DIRECTIONS[direction], cell.gates
    hs = r.shape[-1] if r.rank == 3 else -1
    if hidden_size is not None and hidden_size != hs:
        raise ShapeError(f"{name}: hidden_size={hidden_size} but R is {r}")
    if w.shape != (nd, g * hs, x.shape[2]) or r.shape != (nd, g * hs, hs):
        raise ShapeError(f"{name}: with {nd} direction(s), input size {x.shape[2]} and hidden "
                         f"size {hs}, W must be [{nd}, {g * hs}, {x.shape[2]}] and R "
                         f"[{nd}, {g * hs}, {hs}]; got W {w}, R {r}")
    state = (b, nd, hs) if layout else (nd, b, hs)
    expect = {3: ("B", (nd, 2 * g * hs), x.dtype), 4: ("sequence_lens", (b,), DType.I32),
              5: ("initial_h", state, x.dtype)}
    if cell.op == "LSTM":
        expect.update({6: ("initial_c", state, x.dtype), 7: ("P", (nd, 3 * hs), x.dtype)})
    for i, (what, shape, dt) in expect.items():
        v = get(i)
        if v is not None and (v.shape != shape or v.dtype != dt):
            raise ShapeError(f"{name}: {what} must be {dt}[{','.join(map(str, shape))}], "
                             f"got {v.type}")
    return Dims(t, b, x.shape[2], hs, nd)


def _infer(cell: Cell):
    def infer(inputs, *, activation_alpha, activation_beta, activations, clip, direction,
              hidden_size, layout, **_):
        d = recurrent_dims(cell, inputs, direction=direction, hidden_size=hidden_size,
                           layout=layout)
        activation_list(cell, d.directions, activations, activation_alpha, activation_beta)
        if clip is not None and not clip > 0:
            raise ShapeError(f"{cell.op}: clip must be positive, got {clip}")
        dt = inputs[0].dtype
        y = (d.batch, d.seq, d.directions, d.hidden) if layout else \
            (d.seq, d.directions, d.batch, d.hidden)
        state = (d.batch, d.directions, d.hidden) if layout else \
            (d.directions, d.batch, d.hidden)
        outs = [TensorType(y, dt), TensorType(state, dt)]
        return outs + [TensorType(state, dt)] if cell.op == "LSTM" else outs

    return infer


_COMMON_ATTRS = {
    "activation_alpha": Attr.floats([]),
    "activation_beta": Attr.floats([]),
    "activations": Attr.strs([]),
    "clip": Attr.float(None),
    "direction": Attr.str("forward"),
    "hidden_size": Attr.int(None),
    "layout": Attr.int(0),
}


# -- the reference ----------------------------------------------------------------------------

def sequence_lengths(seq_lens: np.ndarray | None, t: int, b: int) -> np.ndarray:
    """Each batch entry's step count, clipped into [0, T] as the kernels clip it."""
    if seq_lens is None:
        return np.full(b, t, dtype=np.int64)
    return np.clip(seq_lens.astype(np.int64), 0, t)


def _run(cell: Cell, x, w, r, b, seq_lens, init_h, init_c, p, attrs) -> tuple:
    layout = attrs["layout"]
    if layout:  # batch-major operands: compute time-major, transpose back at the end
        x = x.transpose(1, 0, 2)
        init_h = None if init_h is None else init_h.transpose(1, 0, 2)
        init_c = None if init_c is None else init_c.transpose(1, 0, 2)
    steps, batch, _ = x.shape
    nd, hs = w.shape[0], r.shape[-1]
    acts = activation_list(cell, nd, attrs["activations"], attrs["activation_alpha"],
                           attrs["activation_beta"])
    clip = attrs["clip"]
    dt = x.dtype
    y = np.zeros((steps, nd, batch, hs), dt)
    y_h = np.zeros((nd, batch, hs), dt) if init_h is None else init_h.astype(dt).copy()
    y_c = np.zeros((nd, batch, hs), dt) if init_c is None else init_c.astype(dt).copy()
    lens = sequence_lengths(seq_lens, steps, batch)
    zero = np.zeros(2 * cell.gates * hs, dt)
    for d in range(nd):
        reverse = attrs["direction"] == "reverse" or d == 1
        fa = acts[d]

        def act(k, v, fa=fa):
            if clip is not None:
                v = np.clip(v, -np.float32(clip), np.float32(clip))
            return apply_activation(fa[k], v)

        wb, rb = np.split(zero if b is None else b[d], 2)
        for bi in range(batch):
            h, c = y_h[d, bi].copy(), y_c[d, bi].copy()
            n = int(lens[bi])
            for s in range(n):
                t = n - 1 - s if reverse else s
                xw = w[d] @ x[t, bi] + wb  # [gates * H]
                if cell.op == "RNN":
                    h = act(0, xw + r[d] @ h + rb)
                elif cell.op == "GRU":
                    gz, gr, gh = np.split(xw, 3)
                    rz, rr, rh = np.split(r[d], 3)
                    bz, br, bh = np.split(rb, 3)
                    z = act(0, gz + rz @ h + bz)
                    rg = act(0, gr + rr @ h + br)
                    if attrs["linear_before_reset"]:
                        nn = act(1, gh + rg * (rh @ h + bh))
                    else:
                        nn = act(1, gh + rh @ (rg * h) + bh)
                    h = (1 - z) * nn + z * h
                else:
                    gi, go, gf, gc = np.split(xw + r[d] @ h + rb, 4)
                    pi, po, pf = np.split(np.zeros(3 * hs, dt) if p is None else p[d], 3)
                    i = act(0, gi + pi * c)
                    f = 1 - i if attrs["input_forget"] else act(0, gf + pf * c)
                    c = f * c + i * act(1, gc)
                    o = act(0, go + po * c)
                    h = o * apply_activation(fa[2], c)
                y[t, d, bi] = h
            if n == 0:  # an empty sequence has a zero state, as in onnxruntime
                h, c = np.zeros_like(h), np.zeros_like(c)
            y_h[d, bi], y_c[d, bi] = h, c
    outs = [y, y_h, y_c][:2 if cell.op != "LSTM" else 3]
    if layout:
        outs = [outs[0].transpose(2, 0, 1, 3)] + [o.transpose(1, 0, 2) for o in outs[1:]]
    return tuple(np.ascontiguousarray(o.astype(dt)) for o in outs)


@op("RNN", inputs=(3, 6), outputs=2, infer=_infer(CELLS["RNN"]), attrs=_COMMON_ATTRS)
def rnn(x, w, r, b=None, sequence_lens=None, initial_h=None, **attrs):
    return _run(CELLS["RNN"], x, w, r, b, sequence_lens, initial_h, None, None, attrs)


@op("GRU", inputs=(3, 6), outputs=2, infer=_infer(CELLS["GRU"]),
    attrs={**_COMMON_ATTRS, "linear_before_reset": Attr.int(0)})
def gru(x, w, r, b=None, sequence_lens=None, initial_h=None, **attrs):
    return _run(CELLS["GRU"], x, w, r, b, sequence_lens, initial_h, None, None, attrs)


@op("LSTM", inputs=(3, 8), outputs=3, infer=_infer(CELLS["LSTM"]),
    attrs={**_COMMON_ATTRS, "input_forget": Attr.int(0)})
def lstm(x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, p=None, **attrs):
    return _run(CELLS["LSTM"], x, w, r, b, sequence_lens, initial_h, initial_c, p, attrs)
