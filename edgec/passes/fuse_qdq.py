"""QDQ fusion: the float op between DequantizeLinear inputs and a QuantizeLinear output of a
QDQ model (as `onnxruntime.quantization.quantize_static` writes them) becomes an integer op:

    Q(Conv(DQ(x), DQ(w), DQ(b)))  ->  QLinearConv(x, sx, zx, w, sw, zw, sy, zy, b)
    Q(MatMul(DQ(a), DQ(b)))       ->  QLinearMatMul(a, sa, za, b, sb, zb, sy, zy)
    Q(Gemm(DQ(a), DQ(b), DQ(c)))  ->  QGemm(a, sa, za, b, sb, zb, c, sy, zy)
    Q(Add(DQ(a), DQ(b)))          ->  QLinearAdd(a, sa, za, b, sb, zb, sy, zy)
    Q(GlobalAveragePool(DQ(x)))   ->  QLinearGlobalAveragePool(x, sx, zx, sy, zy) (and a
                                            Flatten or Reshape between them on its integers)
    Q(op(DQ(x))), same (s, z)     ->  op(x)   for MaxPool, data movement, nearest Resize and
                                            Concat (every input with Q's parameters)
    Q(op2(op1(DQ(x)))), same      ->  op2(op1(x)) for a chain of MaxPool and data movement
    Q(Resize(DQ(x))), same (s, z) ->  QLinearResize(x, roi, scales, sizes, s, z) when it
                                            interpolates (linear, cubic)

With real = s (q - z), the float op's result is s_x s_w sum (x - zx)(w - zw) + b, so its
quantization is sat(rint(acc (sx sw / sy)) + zy) with acc the exact int32 sum plus
b / (sx sw): the integer form computes the same up to the float rounding of the QDQ
simulation (at most one step of y). A bias quantized with scale sx sw (zero point 0) is used
as it is; a float bias is quantized to int32 with that scale. A Relu between the op and Q
becomes max(y, zy), a Clip with constant bounds max(min(y, Q(hi)), Q(lo)), each bound
disappearing where it is the type's end of the range (a range calibrated after the
activation starts at 0). Scales and zero points must
be constants, per tensor except the weight's (per output channel: axis 0 of a Conv weight, the
column axis of a MatMul/Gemm weight). Activations may have 16 bits (uint16/int16: W8A16, the
quantize pass's int16 points) where the integer op takes them; weights have 8 or fewer.
Data movement commutes with an affine map, and MaxPool
with an increasing one, so those run on the integers unchanged when Q undoes DQ exactly; an
interpolating Resize reads and writes the integers and computes between them as the QDQ
graph does (float32 on the dequantized taps), so it equals that graph exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import DType, Graph, Node, Value
from ..ir.dtypes import SUB_BYTE
from ..ir.interpreter import run_node
from ..ir.ops.quant import ACTIVATION_TYPES, QUANT_RANGES
from ..ir.types import QuantParams
from .manager import register_pass
from .rewrite import (
    PatternPass,
    constant,
    pattern,
    producer,
    replace_value,
    require,
    sole_user,
)

INT8 = (DType.U8, DType.I8)
# Ops whose result on integers is the quantization of their result on the dequantized values,
# when input and output share scale and zero point.
TRANSPARENT = ("MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Resize",
               "Concat")
# those of one data input, exact on integers with any parameters: a chain of them between a
# DequantizeLinear and a QuantizeLinear of the same parameters runs on the integers
CHAIN = ("MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze")


@dataclass
class Quant:
    """A quantized tensor seen through its DequantizeLinear (or QuantizeLinear): the integer
    value, its scale and zero point (constants) and the axis of a per-axis scale (None: per
    tensor)."""

    q: Value
    scale: Value
    zp: Value
    axis: int | None

    def same_params(self, other: Quant) -> bool:
        return (self.axis is None and other.axis is None and self.q.dtype == other.q.dtype
                and np.array_equal(self.scale.const, other.scale.const)
                and np.array_equal(self.zp.const, other.zp.const)
                and self.scale.dtype == other.scale.dtype)


def _params(node: Node, qdtype: DType, graph: Graph) -> tuple[Value, Value, int | None]:
    require(node.attrs["block_size"] == 0, f"{node.name} uses blocked quantization")
    s = node.inputs[1]
    constant(s, f"the scale of {node.name}")
    z = node.input(2)
    if z is None:
        z = graph.const(np.zeros(s.shape, qdtype.np), name=f"{node.name}_zero_point")
    else:
        constant(z, f"the zero point of {node.name}")
    rank = node.inputs[0].type.rank
    axis = None if s.type.numel == 1 else node.attrs["axis"] % max(rank, 1)
    return s, z, axis


def dequantized(value: Value | None, graph: Graph, what: str, wide: bool = False) -> Quant:
    """`value` as the DequantizeLinear of an int8/uint8 tensor (`wide`: or 16-bit, an
    activation of W8A16) with constant parameters."""
    require(value is not None, f"{what} is omitted")
    dq = producer(value, "DequantizeLinear")
    q = dq.inputs[0]
    if q.dtype in SUB_BYTE and q.is_const:
        return _widened(q, dq, graph)
    require(q.dtype in (ACTIVATION_TYPES if wide else INT8),
            f"{what} dequantizes {q.dtype}, not int8/uint8" + (" or 16 bits" if wide else ""))
    return Quant(q, *_params(dq, q.dtype, graph))


def _widened(q: Value, dq: Node, graph: Graph) -> Quant:
    """Constant sub-byte codes (int4 weights) as the int8/uint8 bytes that hold them, their
    type noting the bits (quant<..., bits=4>): the integer ops take 8-bit operands, and the
    pack-weights pass stores such weights two to a byte again."""
    s, z, axis = _params(dq, q.dtype, graph)
    base = q.dtype.storage
    codes = graph.const(q.const.astype(base.np), f"{q.name}_{base}")
    codes.type = codes.type.with_quant(QuantParams.of(s.const, z.const, axis, q.dtype.bits))
    return Quant(codes, s, graph.const(z.const.astype(base.np), f"{z.name}_{base}"), axis)


def quantized_output(q_node: Node, graph: Graph, wide: bool = False) -> Quant:
    """The QuantizeLinear `q_node` (per tensor, int8/uint8; `wide`: or 16-bit) as output
    parameters."""
    out = q_node.output
    require(out.dtype in (ACTIVATION_TYPES if wide else INT8),
            f"{q_node.name} quantizes to {out.dtype}, not int8/uint8" +
            (" or 16 bits" if wide else ""))
    s, z, axis = _params(q_node, out.dtype, graph)
    require(axis is None, f"{q_node.name} quantizes per axis")
    return Quant(out, s, z, None)


def _per_tensor(*qs: Quant) -> None:
    for q in qs:
        require(q.axis is None, f"%{q.q.name} is quantized per axis")


@dataclass
class Core:
    """The float op a QuantizeLinear reads, and the Relu or Clip (constant bounds) in between
    if any."""

    op: Node
    relu: Node | None


def _core(q_node: Node, ops: tuple[str, ...]) -> Core:
    v = q_node.inputs[0]
    node = producer(v, *ops, "Relu", "Clip")
    sole_user(v)
    relu = None
    if node.op in ("Relu", "Clip"):
        relu = node
        for bound in node.inputs[1:]:
            if bound is not None:
                constant(bound, f"the bound %{bound.name} of {node.name}")
        node = producer(relu.inputs[0], *ops)
        sole_user(relu.inputs[0])
    return Core(node, relu)


def _quantized_bound(real: float, out: Quant) -> int:
    """Q(real) with the output's parameters (per tensor)."""
    s = np.float32(out.scale.const.reshape(-1)[0])
    z = int(out.zp.const.reshape(-1)[0])
    qmin, qmax = QUANT_RANGES[out.q.dtype]
    with np.errstate(all="ignore"):
        v = np.float32(real) / s
    if np.isnan(v):
        return qmin
    return int(np.clip(np.rint(np.clip(v, -2.0**31, 2.0**31)) + z, qmin, qmax))


def _emit(graph: Graph, q_node: Node, core: Core, op: str, inputs: list, attrs: dict,
          out: Quant) -> None:
    new = graph.add_node(op, inputs, attrs, name=core.op.name, before=q_node)
    y = new.output
    qmin, qmax = QUANT_RANGES[out.q.dtype]
    act = core.relu
    if act is not None:
        # Q(clip(v, lo, hi)) = min(max(Q(v), Q(lo)), Q(hi)): rint and sat are increasing
        # (Relu: lo = 0, Q(0) = zy); a bound at the type's end of the range clamps nothing
        lo = hi = None
        if act.op == "Relu":
            lo = 0.0
        else:
            lo_v, hi_v = act.input(1), act.input(2)
            lo = float(lo_v.const.reshape(-1)[0]) if lo_v is not None else None
            hi = float(hi_v.const.reshape(-1)[0]) if hi_v is not None else None
        for bound, fn, end in ((lo, "Max", qmin), (hi, "Min", qmax)):
            if bound is None:
                continue
            qb = _quantized_bound(bound, out)
            if qb != end:
                c = graph.const(np.asarray(qb, out.q.dtype.np), f"{act.name}_{fn.lower()}")
                y = graph.add_node(fn, [y, c], name=act.name, before=q_node).output
    _replace(graph, q_node, y, core.op, new)


def _replace(graph: Graph, q_node: Node, y: Value, old: Node, new: Node) -> None:
    """Redirect the QuantizeLinear's users to `y`; the new node keeps the model's name of the
    op it replaces (erased next, being left without users), unless it took over Q's name."""
    fresh = new.name
    replace_value(graph, q_node.output, y)
    if new.name == fresh:
        new.name = old.name


def _int32_bias(bias: Value | None, sx: np.ndarray, sw: np.ndarray, n: int, graph: Graph,
                name: str, factor: float = 1.0) -> Value | None:
    """The bias in units of sx * sw (one per output channel): a DequantizeLinear'd int32 with
    exactly that scale and zero point 0 as it is, otherwise its float value quantized."""
    if bias is None:
        return None
    unit = (sx.astype(np.float32).reshape(()) * sw.astype(np.float32).reshape(-1))
    unit = np.broadcast_to(unit, (n,))
    if bias.producer is not None and bias.producer.op == "DequantizeLinear" and factor == 1.0:
        dq = bias.producer
        bq, bs, bz = dq.inputs[0], dq.inputs[1], dq.input(2)
        if (bq.dtype == DType.I32 and bq.is_const and bs.is_const and bq.const.size == n
                and dq.attrs["block_size"] == 0
                and (bz is None or (bz.is_const and not bz.const.any()))
                and np.array_equal(np.broadcast_to(bs.const.reshape(-1), (n,)), unit)):
            return bq if bq.shape == (n,) else graph.const(bq.const.reshape(n), name=name)
    if bias.producer is not None and bias.producer.op == "DequantizeLinear":
        dq = bias.producer  # of constants (checked below): evaluate it
        args = [None if v is None else constant(v, f"the bias input %{v.name}")
                for v in dq.inputs]
        real = run_node(dq, args)[0]
    else:
        real = constant(bias, "the bias")
    real = np.broadcast_to(np.asarray(real, np.float64).reshape(-1), (n,)) * factor
    with np.errstate(all="ignore"):
        q = np.rint(real / unit.astype(np.float64))
    require(np.all(np.abs(q) < 2**31), "the bias does not fit int32 in units of sx * sw")
    return graph.const(q.astype(np.int32), name=name)


# -- Conv ---------------------------------------------------------------------------------------

def _match_conv(q_node: Node):
    graph = q_node.graph
    core = _core(q_node, ("Conv",))
    conv = core.op
    x = dequantized(conv.inputs[0], graph, "the conv input", wide=True)
    w = dequantized(conv.inputs[1], graph, "the conv weight")
    _per_tensor(x)
    constant(w.q, "the conv weight")
    require(w.axis in (None, 0), f"the conv weight is quantized along axis {w.axis}, not 0")
    out = quantized_output(q_node, graph, wide=True)
    m = conv.inputs[1].shape[0]
    bias = _int32_bias(conv.input(2), x.scale.const, w.scale.const, m, graph,
                       f"{conv.name}_bias_q")
    return core, x, w, bias, out


def _fuse_conv(graph: Graph, q_node: Node, match) -> None:
    core, x, w, bias, out = match
    ins = [x.q, x.scale, x.zp, w.q, w.scale, w.zp, out.scale, out.zp, bias]
    _emit(graph, q_node, core, "QLinearConv", ins, dict(core.op.attrs), out)


# -- MatMul and Gemm ----------------------------------------------------------------------------

def _weight_axis_ok(b: Quant, col_axis: int, what: str) -> None:
    require(b.axis in (None, col_axis),
            f"{what} is quantized along axis {b.axis}, not per output column")


def _match_matmul(q_node: Node):
    graph = q_node.graph
    core = _core(q_node, ("MatMul",))
    mm = core.op
    a = dequantized(mm.inputs[0], graph, "A", wide=True)
    b = dequantized(mm.inputs[1], graph, "B")
    _per_tensor(a)
    rank = b.q.type.rank
    require(b.axis is None or rank >= 2, "a per-axis 1-D B")
    _weight_axis_ok(b, rank - 1, "B")
    return core, a, b, quantized_output(q_node, graph, wide=True)


def _fuse_matmul(graph: Graph, q_node: Node, match) -> None:
    core, a, b, out = match
    ins = [a.q, a.scale, a.zp, b.q, b.scale, b.zp, out.scale, out.zp]
    _emit(graph, q_node, core, "QLinearMatMul", ins, {}, out)


def _match_gemm(q_node: Node):
    graph = q_node.graph
    core = _core(q_node, ("Gemm",))
    gemm = core.op
    at = gemm.attrs
    a = dequantized(gemm.inputs[0], graph, "A", wide=True)
    b = dequantized(gemm.inputs[1], graph, "B")
    _per_tensor(a)
    _weight_axis_ok(b, 0 if at["transB"] else 1, "B")
    out = quantized_output(q_node, graph, wide=True)
    n = gemm.output.shape[1]
    c = gemm.input(2)
    require(c is None or c.type.numel in (1, n) and c.shape[-2:-1] in ((), (1,)),
            "C is not a per-column bias")
    # C' in units of alpha sa sb: (alpha sa sb)(A'B' + C') = alpha A B + beta C
    bias = _int32_bias(c, a.scale.const * np.float32(at["alpha"]), b.scale.const, n, graph,
                       f"{gemm.name}_bias_q", factor=at["beta"])
    return core, a, b, bias, out


def _fuse_gemm(graph: Graph, q_node: Node, match) -> None:
    core, a, b, bias, out = match
    at = core.op.attrs
    ins = [a.q, a.scale, a.zp, b.q, b.scale, b.zp, bias, out.scale, out.zp]
    _emit(graph, q_node, core, "QGemm", ins,
          {"alpha": at["alpha"], "transA": at["transA"], "transB": at["transB"]}, out)


# -- Add ----------------------------------------------------------------------------------------

def _match_add(q_node: Node):
    graph = q_node.graph
    core = _core(q_node, ("Add",))
    add = core.op
    a = dequantized(add.inputs[0], graph, "the first addend", wide=True)
    b = dequantized(add.inputs[1], graph, "the second addend", wide=True)
    _per_tensor(a, b)
    return core, a, b, quantized_output(q_node, graph, wide=True)


def _fuse_add(graph: Graph, q_node: Node, match) -> None:
    core, a, b, out = match
    ins = [a.q, a.scale, a.zp, b.q, b.scale, b.zp, out.scale, out.zp]
    _emit(graph, q_node, core, "QLinearAdd", ins, {}, out)


# -- ops that commute with quantization -----------------------------------------------------------

def _chain(node: Node) -> list[Node]:
    """`node` and the data movement and MaxPool before it that only it reads, first first:
    DQ -> MaxPool -> Flatten -> Q runs on the integers as a whole (each op is exact on them
    when the parameters pass unchanged)."""
    chain = [node]
    while chain[0].op in CHAIN:
        src = chain[0].inputs[0]
        p = src.producer
        if p is None or p.op not in CHAIN or len(src.uses) != 1 or \
                (p.op == "MaxPool" and len(p.outputs) > 1 and p.outputs[1].uses):
            break
        chain.insert(0, p)
    return chain


def _match_transparent(q_node: Node):
    graph = q_node.graph
    v = q_node.inputs[0]
    last = producer(v, *TRANSPARENT)
    sole_user(v)
    chain = _chain(last)
    node = chain[0]
    if len(chain) > 1:  # a chain of single-input ops: its first reads the DequantizeLinear
        out = quantized_output(q_node, graph, wide=True)
        x = dequantized(node.inputs[0], graph, f"the input of {node.name}", wide=True)
        require(x.same_params(out), f"{q_node.name} does not undo the DequantizeLinear of "
                                    f"{node.name}'s input (other scale, zero point or type)")
        return chain, [x]
    # 16-bit tensors pass through the data movement and MaxPool too (not the interpolating
    # Resize: QLinearResize is 8-bit)
    wide = node.op != "Resize" or node.attrs["mode"] == "nearest"
    out = quantized_output(q_node, graph, wide=wide)
    # a Concat's every input, another op's first (the rest are shapes, scales, axes)
    data = node.inputs if node.op == "Concat" else node.inputs[:1]
    xs = [dequantized(d, graph, f"an input of {node.name}", wide=wide) for d in data]
    for x in xs:
        require(x.same_params(out), f"{q_node.name} does not undo the DequantizeLinear of "
                                    f"{node.name}'s input (other scale, zero point or type)")
    if node.op == "MaxPool":
        require(len(node.outputs) == 1 or not node.outputs[1].uses, "MaxPool's indices are used")
    return node, xs


def _fuse_transparent(graph: Graph, q_node: Node, match) -> None:
    node, xs = match
    if isinstance(node, list):  # a chain: each op on the previous one's integers
        y = xs[0].q
        for op in node:
            new = graph.add_node(op.op, [y, *op.inputs[1:]], dict(op.attrs), name=op.name,
                                 num_outputs=1, before=q_node)
            y = new.output
        _replace(graph, q_node, y, node[-1], new)
        return
    if node.op == "Resize" and node.attrs["mode"] != "nearest":
        # interpolating: on the integers with the QDQ graph's arithmetic (QLinearResize)
        ins = [xs[0].q, *(node.input(i) for i in (1, 2, 3)), xs[0].scale, xs[0].zp]
        new = graph.add_node("QLinearResize", ins, dict(node.attrs), name=node.name,
                             before=q_node)
        _replace(graph, q_node, new.output, node, new)
        return
    ins = [x.q for x in xs] if node.op == "Concat" else [xs[0].q, *node.inputs[1:]]
    new = graph.add_node(node.op, ins, dict(node.attrs), name=node.name,
                         num_outputs=1, before=q_node)
    _replace(graph, q_node, new.output, node, new)


# -- GlobalAveragePool -------------------------------------------------------------------------

MOVES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _match_gap(q_node: Node):
    """Q(moves(GlobalAveragePool(DQ(x)))): the mean on the integers, then the data movement
    (a Flatten before the classifier) on its integers."""
    graph = q_node.graph
    v = q_node.inputs[0]
    node = producer(v, "GlobalAveragePool", *MOVES)
    sole_user(v)
    moves = []
    while node.op != "GlobalAveragePool":
        moves.insert(0, node)
        src = node.inputs[0]
        node = producer(src, "GlobalAveragePool", *MOVES)
        sole_user(src)
    out = quantized_output(q_node, graph)
    x = dequantized(node.inputs[0], graph, f"the input of {node.name}")
    _per_tensor(x)
    require(x.q.type.rank >= 3, f"{node.name} pools a rank-{x.q.type.rank} tensor")
    return node, moves, x, out


def _fuse_gap(graph: Graph, q_node: Node, match) -> None:
    node, moves, x, out = match
    new = graph.add_node("QLinearGlobalAveragePool", [x.q, x.scale, x.zp, out.scale, out.zp],
                         name=node.name, before=q_node)
    last, y = node, new.output
    for op in moves:
        last = op
        new = graph.add_node(op.op, [y, *op.inputs[1:]], dict(op.attrs), name=op.name,
                             before=q_node)
        y = new.output
    _replace(graph, q_node, y, last, new)


FUSE_QDQ_PATTERNS = [
    pattern("QuantizeLinear", match=_match_conv, name="qlinear-conv")(_fuse_conv),
    pattern("QuantizeLinear", match=_match_matmul, name="qlinear-matmul")(_fuse_matmul),
    pattern("QuantizeLinear", match=_match_gemm, name="qgemm")(_fuse_gemm),
    pattern("QuantizeLinear", match=_match_add, name="qlinear-add")(_fuse_add),
    pattern("QuantizeLinear", match=_match_gap, name="qlinear-global-average-pool")(_fuse_gap),
    pattern("QuantizeLinear", match=_match_transparent, name="integer-passthrough")(
        _fuse_transparent),
]

register_pass(PatternPass("fuse-qdq", FUSE_QDQ_PATTERNS,
                          doc="Rewrite DequantizeLinear -> op -> QuantizeLinear into integer "
                              "ops (QLinearConv, QLinearMatMul, QGemm, QLinearAdd)."))
