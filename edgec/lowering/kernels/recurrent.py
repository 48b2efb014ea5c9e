"""Kernel builders of RNN, GRU and LSTM (edgec/ir/ops/recurrent.py has the maths).

For each direction and batch entry the kernel runs the entry's steps in order; a step is, for
each hidden unit j, the dot products of row j of every gate's W block with x_t and of its R
block with the previous hidden state (one accumulator per gate, one pass over x_t and one over
h), then the gate nonlinearities, whose formulas are the elementwise ops' (`SCALARS`).

The state lives in the outputs, so the kernel needs no scratch memory: the hidden state of
step t is Y[t] (the previous one is read from Y[t -/+ 1], the first step's from initial_h),
the cell state of an LSTM is updated in place in Y_c (unit j reads and writes only c[j]), and
Y_h, written last, meanwhile holds the GRU's r (.) h (linear_before_reset = 0 needs the whole
vector before any unit's candidate). The first step is emitted apart from the loop over the
others, since it reads its state from another buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...errors import EdgecError
from ...ir.dtypes import DType
from ...ir.graph import Node
from ...ir.ops.recurrent import CELLS, DIRECTIONS, Activation, Cell, activation_list
from ...ir.registry import get_op
from ...kernel_ir.kernel import INDEX, Buffer, Expr, call, cast, const, maximum, minimum
from ..lower import SCALARS, NodeKernelBuilder, kernel
from .common import named

Vector = Callable[[Expr], Expr]  # element k of a vector of the step


def activate(kb: NodeKernelBuilder, act: Activation, x: Expr, clip: float | None) -> Expr:
    """act(clip(x)): the elementwise op's formula, or Affine / ScaledTanh."""
    dt = x.dtype
    if clip is not None:
        x = SCALARS["Clip"](named(kb, "pre", x), const(-clip, dt), const(clip, dt))
    x = named(kb, "pre", x)  # formulas read their operand more than once
    if act.name == "Affine":
        return const(act.alpha, dt) * x + const(act.beta, dt)
    if act.name == "ScaledTanh":
        return const(act.alpha, dt) * call("tanh", const(act.beta, dt) * x)
    if act.name not in SCALARS:
        raise EdgecError(f"recurrent activation {act.name} needs the scalar formula of the "
                         f"{act.name} op, which edgec's lowering lacks")
    params = get_op(act.name).attrs
    kw = {k: v for k, v in (("alpha", act.alpha), ("beta", act.beta)) if k in params}
    return SCALARS[act.name](x, **kw)


@dataclass
class Layer:
    """A recurrent node's buffers and sizes, and its index maps for both layouts."""

    cell: Cell
    node: Node
    x: Buffer
    w: Buffer
    r: Buffer
    bias: Buffer | None
    lens: Buffer | None
    init_h: Buffer | None
    init_c: Buffer | None
    peep: Buffer | None
    y: Buffer
    y_h: Buffer
    y_c: Buffer | None
    seq: int
    batch: int
    inp: int
    hidden: int
    dirs: int
    layout: int

    @property
    def dt(self) -> DType:
        return self.x.dtype

    def x_index(self, t, b, k) -> Expr:
        return self.x.offset(b, t, k) if self.layout else self.x.offset(t, b, k)

    def y_index(self, t, d, b, j) -> Expr:
        return self.y.offset(b, t, d, j) if self.layout else self.y.offset(t, d, b, j)

    def state_index(self, d, b, j) -> Expr:
        return self.y_h.offset(b, d, j) if self.layout else self.y_h.offset(d, b, j)

    def row(self, d: int, gate: int, j: Expr) -> Expr:
        """Row of gate `gate`, unit j, direction d in W and R."""
        return (d * self.cell.gates + gate) * self.hidden + j

    def gate_bias(self, d: int, gate: int, j: Expr, part: str = "both") -> Expr:
        """Wb (part "w"), Rb ("r") or their sum for one unit; 0 without B."""
        if self.bias is None:
            return const(0, self.dt)
        g = self.cell.gates * self.hidden
        wb = self.bias[d * 2 * g + gate * self.hidden + j]
        rb = self.bias[d * 2 * g + g + gate * self.hidden + j]
        return {"w": wb, "r": rb, "both": wb + rb}[part]


def _bind(kb: NodeKernelBuilder, node: Node) -> Layer:
    cell = CELLS[node.op]
    ins = list(node.inputs) + [None] * (8 - len(node.inputs))
    names = ["x", "w", "r", "b", "seq_lens", "initial_h", "initial_c", "p"]
    bufs = [None if v is None else kb.bind(v, nm) for v, nm in zip(ins, names, strict=True)]
    outs = [kb.bind(v, nm) for v, nm in zip(node.outputs, ("y", "y_h", "y_c"), strict=False)]
    x_v, r_v = node.inputs[0], node.inputs[2]
    layout = node.attrs["layout"]
    seq, batch = (x_v.shape[1], x_v.shape[0]) if layout else x_v.shape[:2]
    return Layer(cell, node, *bufs, outs[0], outs[1], outs[2] if len(outs) > 2 else None,
                 seq, batch, x_v.shape[2], r_v.shape[-1], DIRECTIONS[node.attrs["direction"]],
                 layout)


def _matvec(kb: NodeKernelBuilder, mat: Buffer, rows: list[Expr], n: int, vec: Vector,
            accs: list[Expr]) -> None:
    """accs[g] += mat[rows[g], :] . vec, all gates in one pass over the vector."""
    with kb.loop(n, "k") as k:
        v = named(kb, "v", vec(k))
        for acc, row in zip(accs, rows, strict=True):
            kb.assign(acc, acc + mat[row * n + k] * v)


def _project(kb: NodeKernelBuilder, ly: Layer, d: int, gates: list[int], j: Expr,
             xt: Vector, h: Vector | None, names: list[str]) -> list[Expr]:
    """One accumulator per gate: W x_t + R h + Wb + Rb for unit j (no R h without h)."""
    accs = [kb.local(nm, ly.gate_bias(d, g, j)) for g, nm in zip(gates, names, strict=True)]
    rows = [ly.row(d, g, j) for g in gates]
    _matvec(kb, ly.w, rows, ly.inp, xt, accs)
    if h is not None:
        _matvec(kb, ly.r, rows, ly.hidden, h, accs)
    return accs


def _rnn_step(kb, ly: Layer, d, acts, clip, b, t, xt: Vector, h: Vector | None) -> None:
    with kb.loop(ly.hidden, "j") as j:
        acc, = _project(kb, ly, d, [0], j, xt, h, ["gi"])
        kb.store(ly.y, ly.y_index(t, d, b, j), activate(kb, acts[0], acc, clip))


def _gru_step(kb, ly: Layer, d, acts, clip, b, t, xt: Vector, h: Vector | None) -> None:
    f, g = acts
    dt = ly.dt
    lbr = ly.node.attrs["linear_before_reset"]
    rh = ly.y_h  # r (.) h, for linear_before_reset = 0
    if not lbr and h is not None:
        with kb.loop(ly.hidden, "j") as j:
            acc, = _project(kb, ly, d, [1], j, xt, h, ["gr"])
            kb.store(rh, ly.state_index(d, b, j), activate(kb, f, acc, clip) * h(j))
    with kb.loop(ly.hidden, "j") as j:
        accs = _project(kb, ly, d, [0, 1] if lbr else [0], j, xt, h, ["gz", "gr"][:1 + lbr])
        z = kb.local("z", activate(kb, f, accs[0], clip))
        n_acc = kb.local("gh", ly.gate_bias(d, 2, j, "w"))
        _matvec(kb, ly.w, [ly.row(d, 2, j)], ly.inp, xt, [n_acc])
        rec = kb.local("rh", ly.gate_bias(d, 2, j, "r"))
        if h is not None:
            vec = h if lbr else (lambda k: rh[ly.state_index(d, b, k)])
            _matvec(kb, ly.r, [ly.row(d, 2, j)], ly.hidden, vec, [rec])
        if lbr:
            pre = n_acc + activate(kb, f, accs[1], clip) * rec
        else:
            pre = n_acc + rec
        n = kb.local("n", activate(kb, g, pre, clip))
        new = (const(1, dt) - z) * n
        kb.store(ly.y, ly.y_index(t, d, b, j), new if h is None else new + z * h(j))


def _lstm_step(kb, ly: Layer, d, acts, clip, b, t, xt: Vector, h: Vector | None) -> None:
    f_act, g_act, h_act = acts
    dt, hs = ly.dt, ly.hidden
    with kb.loop(hs, "j") as j:
        gi, go, gf, gc = _project(kb, ly, d, [0, 1, 2, 3], j, xt, h, ["gi", "go", "gf", "gc"])
        si = ly.state_index(d, b, j)
        c_prev = kb.local("c_prev", ly.y_c[si])

        def peep(q: int, c: Expr) -> Expr:
            return const(0, dt) if ly.peep is None else ly.peep[d * 3 * hs + q * hs + j] * c

        i = kb.local("i", activate(kb, f_act, gi + peep(0, c_prev), clip))
        if ly.node.attrs["input_forget"]:
            f = const(1, dt) - i
        else:
            f = activate(kb, f_act, gf + peep(2, c_prev), clip)
        f = kb.local("f", f)
        c = kb.local("c", f * c_prev + i * activate(kb, g_act, gc, clip))
        kb.store(ly.y_c, si, c)
        o = kb.local("o", activate(kb, f_act, go + peep(1, c), clip))
        kb.store(ly.y, ly.y_index(t, d, b, j), o * activate(kb, h_act, c, None))


STEPS = {"RNN": _rnn_step, "GRU": _gru_step, "LSTM": _lstm_step}


@kernel("RNN", "GRU", "LSTM")
def recurrent(kb: NodeKernelBuilder, node: Node) -> None:
    """Per direction (reverse: the backward half of a bidirectional layer too) and batch
    entry b with L = sequence_lens[b] (clamped into [0, T]; T without the input): zero the
    padding steps t >= L, set the cell state, run step 0 from initial_h (or zeros), steps
    1..L-1 from Y of the previous step, and copy the last hidden state to Y_h (L = 0 leaves
    a zero state, as onnxruntime does)."""
    ly = _bind(kb, node)
    at = node.attrs
    acts = activation_list(ly.cell, ly.dirs, at["activations"], at["activation_alpha"],
                           at["activation_beta"])
    dt = ly.dt
    for d in range(ly.dirs):
        reverse = at["direction"] == "reverse" or d == 1
        with kb.loop(ly.batch, "b") as b:
            if ly.lens is None:
                n = const(ly.seq)
            else:
                n = kb.local("len", minimum(maximum(cast(ly.lens[b], INDEX), 0), ly.seq))
                with kb.loop(const(ly.seq) - n, "s") as s, kb.loop(ly.hidden, "j") as j:
                    kb.store(ly.y, ly.y_index(n + s, d, b, j), const(0, dt))
            if ly.y_c is not None:
                with kb.loop(ly.hidden, "j") as j:
                    si = ly.state_index(d, b, j)
                    kb.store(ly.y_c, si, const(0, dt) if ly.init_c is None else ly.init_c[si])
            if ly.lens is None:
                if ly.seq > 0:
                    _sequence(kb, ly, d, b, n, reverse, acts[d])
                continue
            with kb.if_(n > 0):
                _sequence(kb, ly, d, b, n, reverse, acts[d])
            with kb.else_(), kb.loop(ly.hidden, "j") as j:  # an empty sequence: zero state
                si = ly.state_index(d, b, j)
                for state in (ly.y_h, ly.y_c):
                    if state is not None:
                        kb.store(state, si, const(0, dt))


def _sequence(kb: NodeKernelBuilder, ly: Layer, d: int, b: Expr, n: Expr, reverse: bool,
              acts: list[Activation]) -> None:
    """The n >= 1 steps of direction d, batch entry b, then Y_h = the last hidden state."""
    step, clip = STEPS[ly.node.op], ly.node.attrs["clip"]

    def x_of(t: Expr) -> Vector:
        return lambda k: ly.x[ly.x_index(t, b, k)]

    t0 = named(kb, "t", n - 1) if reverse else const(0)
    init = None if ly.init_h is None else (lambda k: ly.init_h[ly.state_index(d, b, k)])
    step(kb, ly, d, acts, clip, b, t0, x_of(t0), init)
    with kb.loop(n - 1, "s") as s:
        t = named(kb, "t", n - 2 - s if reverse else s + 1)
        prev = t + 1 if reverse else t - 1
        step(kb, ly, d, acts, clip, b, t, x_of(t), lambda k: ly.y[ly.y_index(prev, d, b, k)])
    last = const(0) if reverse else n - 1
    with kb.loop(ly.hidden, "j") as j:
        kb.store(ly.y_h, ly.state_index(d, b, j), ly.y[ly.y_index(last, d, b, j)])
