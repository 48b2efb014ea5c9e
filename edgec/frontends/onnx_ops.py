"""ONNX node converters: the ops whose ONNX form differs from the IR's opset-21 form.

Attribute forms of older opsets become constant inputs (Split `split`, (Un)Squeeze and Reduce*
`axes`, Clip `min/max`, Pad `pads`, Slice `starts/ends/axes`, TopK `k`), `auto_pad` becomes
explicit pads, Softmax before opset 13 ("coerce to 2-D") becomes
Reshape [prod(d[:axis]), prod(d[axis:])] -> Softmax -> Reshape, Constant, Identity, Dropout,
Shape and Size become constants or aliases, CastLike a Cast to its second input's dtype,
Upsample a Resize, CenterCropPad a Pad, DFT's axis attribute (before opset 20) an input,
GridSample's opset-16 mode names (bilinear, bicubic) the later ones, and an If whose
condition is known at compile time becomes the branch it takes. Any op not listed here converts
one-to-one (`ctx.emit(node.op_type, ...)`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import FrontendError
from ..ir import Value, get_op, has_op, onnx_dtypes
from ..ir.registry import const_input

if TYPE_CHECKING:
    from .onnx import _Importer, _NodeInfo

Converter = Callable[["_Importer", "_NodeInfo", list, dict], list]
CONVERTERS: dict[str, Converter] = {}

# Ops the frontend turns into constants or aliases itself: supported without a registry op.
FRONTEND_OPS = frozenset({"Constant", "Identity", "Dropout", "Shape", "Size", "If"})
# ONNX ops that convert to a differently named IR op.
REQUIRES: dict[str, tuple[str, ...]] = {"Scatter": ("ScatterElements",), "CastLike": ("Cast",),
                                        "Upsample": ("Resize",), "CenterCropPad": ("Pad",)}
# Never evaluated at import even on constant inputs: random ops, and Q/DQ, which the
# quantization passes import as such (folding DequantizeLinear would lose the int weights).
NO_FOLD = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                     "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Multinomial", "Bernoulli"})

# Reduce ops and the opset from which `axes` is an input instead of an attribute.
AXES_INPUT_SINCE = {"ReduceSum": 13, **{f"Reduce{k}": 18 for k in (
    "Mean", "Max", "Min", "Prod", "L1", "L2", "LogSum", "LogSumExp", "SumSquare")}}


def converts(*ops: str):
    def deco(fn: Converter) -> Converter:
        for o in ops:
            CONVERTERS[o] = fn
        return fn
    return deco


def _emit(ctx: _Importer, node: _NodeInfo, inputs: list, attrs: dict, op: str | None = None):
    return ctx.emit(op or node.op_type, inputs, attrs, outputs=node.outputs, name=node.name)


def _i64(ctx: _Importer, values, name: str) -> Value:
    return ctx.const(np.asarray(values, dtype=np.int64), name)


def _pad_inputs(inputs: list, n: int) -> list:
    return list(inputs) + [None] * (n - len(inputs))


# -- constants and aliases -------------------------------------------------------------------

@converts("Constant")
def constant(ctx, node, inputs, attrs):
    if len(attrs) != 1:
        raise FrontendError(f"node {node.name} (Constant) must have exactly one value attribute, "
                            f"has {sorted(attrs)}")
    (key, v), = attrs.items()
    if key in ("value_string", "value_strings"):
        raise FrontendError(f"node {node.name} (Constant): string constants are not supported")
    if key in ("value_float", "value_floats"):
        v = np.asarray(v, dtype=np.float32)
    elif key in ("value_int", "value_ints"):
        v = np.asarray(v, dtype=np.int64)
    elif key not in ("value", "sparse_value"):
        raise FrontendError(f"node {node.name} (Constant): unknown attribute '{key}'")
    return [ctx.const(v, node.outputs[0])]


def _alias(ctx, node, x: Value, i: int = 0) -> Value:
    """`x` standing for output `i`; a graph output keeps its ONNX name through an Identity."""
    out = node.outputs[i]
    if out in ctx.output_names and has_op("Identity") and x.name != out:
        name = f"{node.name}_{i}" if i else node.name
        return ctx.emit("Identity", [x], outputs=[out], name=name)[0]
    return x


@converts("Identity")
def identity(ctx, node, inputs, attrs):
    return [_alias(ctx, node, inputs[0])]


@converts("Dropout")
def dropout(ctx, node, inputs, attrs):
    x = inputs[0]
    training = inputs[2] if len(inputs) > 2 else None
    if training is not None and (not training.is_const or bool(training.const)):
        raise FrontendError(f"node {node.name} (Dropout) runs in training mode; export the model "
                            "in eval mode")
    outs = [_alias(ctx, node, x)]
    if len(node.outputs) > 1:  # the mask keeps everything at inference
        outs.append(ctx.const(np.ones(x.shape, dtype=bool), node.outputs[1]))
    return outs


@converts("Shape")
def shape(ctx, node, inputs, attrs):
    dims = inputs[0].shape
    r = len(dims)
    start, end = attrs.get("start", 0), attrs.get("end", r)
    start, end = (min(max(i + r if i < 0 else i, 0), r) for i in (start, end))
    return [_i64(ctx, dims[start:end], node.outputs[0])]


@converts("Size")
def size(ctx, node, inputs, attrs):
    return [_i64(ctx, inputs[0].type.numel, node.outputs[0])]


@converts("If")
def if_(ctx, node, inputs, attrs):
    """A condition known at compile time (shapes are static, so any condition computed from
    shapes is) inlines the branch it takes; a run-time condition becomes an IR If whose two
    closed branches take the union of the outer values either reads."""
    cond = inputs[0]
    where = f"node {node.name} (If)"
    if cond.is_const:
        branch = attrs["then_branch" if bool(cond.const.reshape(-1)[0]) else "else_branch"]
        outs = ctx.inline(branch, where)
        return [_alias(ctx, node, v, i) for i, v in enumerate(outs[:len(node.outputs)])]
    branches = [ctx.subgraph(attrs[k], [], where) for k in ("then_branch", "else_branch")]
    captured = _align_captured(branches)
    then_g, else_g = (g for g, _ in branches)
    return ctx.emit("If", [cond, *captured], {"then_branch": then_g, "else_branch": else_g},
                    outputs=node.outputs, name=node.name)


def _align_captured(branches) -> list[Value]:
    """Give every branch the same captured inputs (the union, in first-seen order)."""
    union: list[Value] = []
    for _, cap in branches:
        union += [v for v in cap if all(v is not u for u in union)]
    for g, cap in branches:
        declared = len(g.inputs) - len(cap)
        own = {id(v): inp for v, inp in zip(cap, g.inputs[declared:], strict=True)}
        # a branch that does not read an outer value still takes it, unused
        g.inputs = g.inputs[:declared] + [own.get(id(u)) or Value(g.fresh_name(u.name), u.type)
                                          for u in union]
    return union


@converts("Loop")
def loop(ctx, node, inputs, attrs):
    where = f"node {node.name} (Loop)"
    inputs = _pad_inputs(inputs, 2)
    m, cond, carried = inputs[0], inputs[1], inputs[2:]
    if m is None:
        raise FrontendError(f"{where}: the trip count M must be a constant; edgec compiles "
                            "fixed-count loops only")
    const_input([m], 0, f"{where}: the trip count M (edgec compiles fixed-count loops only)")
    from ..ir import DType, TensorType

    types = [TensorType((), DType.I64), TensorType((), DType.BOOL)] + [v.type for v in carried]
    body, captured = ctx.subgraph(attrs["body"], types, where)
    return ctx.emit("Loop", [m, cond, *carried, *captured],
                    {"body": body, "captured": len(captured)}, outputs=node.outputs,
                    name=node.name)


@converts("Scan")
def scan(ctx, node, inputs, attrs):
    where = f"node {node.name} (Scan)"
    if ctx.opset < 9:
        return _scan8(ctx, node, inputs, attrs, where)
    k = attrs.get("num_scan_inputs", 0)
    for key in ("scan_input_axes", "scan_output_axes"):
        if any(attrs.get(key, [])):
            raise FrontendError(f"{where}: {key}={attrs[key]} is not supported; edgec scans "
                                "along axis 0 only")
    n = len(inputs) - k
    from ..ir import TensorType

    types = [v.type for v in inputs[:n]] + [TensorType(v.shape[1:], v.dtype) for v in inputs[n:]]
    body, captured = ctx.subgraph(attrs["body"], types, where)
    keep = {"num_scan_inputs", "scan_input_directions", "scan_output_directions"}
    return ctx.emit("Scan", [*inputs, *captured],
                    {**{a: v for a, v in attrs.items() if a in keep}, "body": body,
                     "captured": len(captured)}, outputs=node.outputs, name=node.name)


def _scan8(ctx, node, inputs, attrs, where):
    """Opset 8's Scan runs its body over a leading batch axis: (sequence_lens, s..., x...) with
    s[b] and x[b, t]. The batch is static, so it unrolls into one opset-9 Scan per batch
    element, on Gather-ed slices, whose results are stacked back along axis 0."""
    from ..ir import TensorType

    seq_lens, rest = inputs[0], inputs[1:]
    k = attrs.get("num_scan_inputs", 0)
    n = len(rest) - k
    batch, length = rest[n].shape[0], rest[n].shape[1]
    if seq_lens is not None and not (seq_lens.is_const and np.all(seq_lens.const == length)):
        raise FrontendError(f"{where}: opset-8 Scan with sequence_lens shorter than the "
                            "sequence is not supported")
    types = [TensorType(v.shape[1:], v.dtype) for v in rest[:n]]
    types += [TensorType(v.shape[2:], v.dtype) for v in rest[n:]]
    body, captured = ctx.subgraph(attrs["body"], types, where)
    scan_attrs = {"num_scan_inputs": k, "body": body, "captured": len(captured),
                  "scan_input_directions": list(attrs.get("directions", []))}
    per_batch = []
    for b in range(batch):
        index = _i64(ctx, b, f"{node.name}_b{b}")
        sliced = [ctx.emit("Gather", [v, index], {"axis": 0})[0] for v in rest]
        per_batch.append(ctx.emit("Scan", [*sliced, *captured], scan_attrs,
                                  name=f"{node.name}_b{b}"))
    axis0 = _i64(ctx, [0], f"{node.name}_axis0")
    outs = []
    for j, name in enumerate(node.outputs):
        parts = [ctx.emit("Unsqueeze", [res[j], axis0])[0] for res in per_batch]
        outs += ctx.emit("Concat", parts, {"axis": 0}, outputs=[name])
    return outs


# -- attribute forms of older opsets -> inputs ---------------------------------------------------

@converts("Squeeze", "Unsqueeze")
def squeeze(ctx, node, inputs, attrs):
    attrs = dict(attrs)
    if "axes" in attrs:  # opset < 13
        inputs = [inputs[0], _i64(ctx, attrs.pop("axes"), f"{node.outputs[0]}_axes")]
    return _emit(ctx, node, inputs, attrs)


@converts(*AXES_INPUT_SINCE)
def reduce(ctx, node, inputs, attrs):
    attrs = dict(attrs)
    if "axes" in attrs and ctx.opset < AXES_INPUT_SINCE[node.op_type]:
        inputs = [inputs[0], _i64(ctx, attrs.pop("axes"), f"{node.outputs[0]}_axes")]
    return _emit(ctx, node, inputs, attrs)


@converts("Slice")
def slice_(ctx, node, inputs, attrs):
    """Before opset 10 starts, ends and axes are attributes (and there are no steps)."""
    attrs = dict(attrs)
    if "starts" in attrs:
        ins = [inputs[0], _i64(ctx, attrs.pop("starts"), f"{node.name}_starts"),
               _i64(ctx, attrs.pop("ends"), f"{node.name}_ends")]
        if "axes" in attrs:
            ins.append(_i64(ctx, attrs.pop("axes"), f"{node.name}_axes"))
        inputs = ins
    return _emit(ctx, node, inputs, attrs)


@converts("TopK")
def topk(ctx, node, inputs, attrs):
    """Before opset 10 K is an attribute."""
    attrs = dict(attrs)
    if "k" in attrs:
        inputs = [inputs[0], _i64(ctx, [attrs.pop("k")], f"{node.name}_k")]
    return _emit(ctx, node, inputs, attrs)


def _axis(axis: int, rank: int, node, op: str) -> int:
    """`axis` counted from the front, or a FrontendError when a rank-`rank` input lacks it."""
    if not -rank <= axis < rank:
        raise FrontendError(f"node {node.name} ({op}): axis {axis} is out of range for an "
                            f"input of rank {rank}")
    return axis + rank if axis < 0 else axis


@converts("Split")
def split(ctx, node, inputs, attrs):
    """Always give explicit sizes, so the IR never depends on the number of outputs."""
    attrs = dict(attrs)
    x = inputs[0]
    axis = attrs.get("axis", 0)
    sizes = attrs.pop("split", None)
    count = attrs.pop("num_outputs", None) or len(node.proto.output)
    if len(inputs) > 1 and inputs[1] is not None:
        sizes = inputs[1].const if inputs[1].is_const else None
        if sizes is None:
            return _emit(ctx, node, inputs, attrs)
    if sizes is None:
        dim = x.shape[_axis(axis, x.type.rank, node, "Split")]
        chunk = -(-dim // count)  # the last chunk is the smaller one (opset 18 semantics)
        sizes = [chunk] * (count - 1) + [dim - chunk * (count - 1)]
        if min(sizes) < 0:
            raise FrontendError(f"node {node.name} (Split): cannot split {dim} into {count} parts")
    return _emit(ctx, node, [x, _i64(ctx, sizes, f"{node.name}_split")], attrs)


@converts("Clip")
def clip(ctx, node, inputs, attrs):
    attrs = dict(attrs)
    if "min" in attrs or "max" in attrs:  # opset < 11
        dt = inputs[0].dtype.np
        lo, hi = attrs.pop("min", None), attrs.pop("max", None)
        inputs = [inputs[0],
                  None if lo is None else ctx.const(np.asarray(lo, dt), f"{node.name}_min"),
                  None if hi is None else ctx.const(np.asarray(hi, dt), f"{node.name}_max")]
    return _emit(ctx, node, inputs, attrs)


@converts("Pad")
def pad(ctx, node, inputs, attrs):
    attrs = dict(attrs)
    if "pads" in attrs:  # opset < 11
        value = attrs.pop("value", 0.0)
        inputs = [inputs[0], _i64(ctx, attrs.pop("pads"), f"{node.name}_pads"),
                  ctx.const(np.asarray(value, inputs[0].dtype.np), f"{node.name}_value")]
    return _emit(ctx, node, inputs, attrs)


@converts("Softmax", "LogSoftmax", "Hardmax")
def softmax(ctx, node, inputs, attrs):
    """Before opset 13 these flatten the input to 2-D at `axis` (default 1)."""
    if ctx.opset >= 13:
        return _emit(ctx, node, inputs, attrs)
    x = inputs[0]
    r = x.type.rank
    axis = _axis(attrs.get("axis", 1), r, node, node.op_type)
    if axis == r - 1:
        return _emit(ctx, node, inputs, {"axis": -1})
    out = node.outputs[0]
    rows, cols = math.prod(x.shape[:axis]), math.prod(x.shape[axis:])
    flat, = ctx.emit("Reshape", [x, _i64(ctx, [rows, cols], f"{out}_2d_shape")],
                     outputs=[f"{out}_2d"], name=f"{node.name}_2d")
    y, = ctx.emit(node.op_type, [flat], {"axis": -1}, outputs=[f"{out}_2d_{node.op_type}"],
                  name=node.name)
    return ctx.emit("Reshape", [y, _i64(ctx, x.shape, f"{out}_shape")], outputs=[out],
                    name=f"{node.name}_nd")


@converts("Resize")
def resize(ctx, node, inputs, attrs):
    """Opsets 11-12 require `roi` and `scales` and pass empty tensors for the unused ones."""
    inputs = _pad_inputs(inputs, 4)
    for i in (1, 2, 3):
        v = inputs[i]
        if v is not None and v.is_const and v.const.size == 0:
            inputs[i] = None
    if attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize":
        inputs[1] = None  # roi is read only in that mode
    while inputs and inputs[-1] is None:
        inputs.pop()
    return _emit(ctx, node, inputs, attrs)


@converts("BatchNormalization")
def batch_norm(ctx, node, inputs, attrs):
    if attrs.get("training_mode", 0):
        raise FrontendError(f"node {node.name} (BatchNormalization) runs in training mode; "
                            "export the model in eval mode")
    attrs = {k: v for k, v in attrs.items() if k != "training_mode"
             or "training_mode" in get_op("BatchNormalization").attrs}
    return _emit(ctx, node, inputs, attrs)


@converts("Scatter")
def scatter(ctx, node, inputs, attrs):
    return _emit(ctx, node, inputs, attrs, op="ScatterElements")


@converts("Upsample")
def upsample(ctx, node, inputs, attrs):
    """Upsample (opsets 7-9; scales an attribute before 9) is Resize with those scales,
    asymmetric coordinates and, for nearest, floor rounding: out[i] = in[floor(i / scale)]."""
    attrs = dict(attrs)
    mode = attrs.pop("mode", "nearest")
    scales = inputs[1] if len(inputs) > 1 else \
        ctx.const(np.asarray(attrs.pop("scales"), np.float32), f"{node.name}_scales")
    if mode not in ("nearest", "linear"):
        raise FrontendError(f"node {node.name} (Upsample): mode {mode!r} is not 'nearest' or "
                            "'linear'")
    resize_attrs = {"mode": mode, "coordinate_transformation_mode": "asymmetric",
                    **({"nearest_mode": "floor"} if mode == "nearest" else {})}
    return _emit(ctx, node, [inputs[0], None, scales], resize_attrs, op="Resize")


@converts("CenterCropPad")
def center_crop_pad(ctx, node, inputs, attrs):
    """CenterCropPad is a Pad with zeros: an axis growing by d gets d // 2 in front and the
    rest behind; one shrinking by d loses d // 2 in front and the rest behind."""
    x = inputs[0]
    shape = [int(v) for v in const_input(inputs, 1, "CenterCropPad's 'shape' input").reshape(-1)]
    r = x.type.rank
    axes = [a + r if a < 0 else a for a in attrs.get("axes") or range(r)]
    if len(axes) != len(shape) or any(not 0 <= a < r for a in axes):
        raise FrontendError(f"node {node.name} (CenterCropPad): axes {axes} do not match shape "
                            f"{shape} for an input of rank {r}")
    diffs = [want - x.shape[a] for a, want in zip(axes, shape, strict=True)]
    front = [d // 2 if d >= 0 else -(-d // 2) for d in diffs]
    back = [d - f for d, f in zip(diffs, front, strict=True)]
    return _emit(ctx, node, [x, _i64(ctx, front + back, f"{node.name}_pads"), None,
                             _i64(ctx, axes, f"{node.name}_axes")], {}, op="Pad")


@converts("CastLike")
def cast_like(ctx, node, inputs, attrs):
    """CastLike(x, like) is Cast(x) to like's dtype; `like` is read for its type only."""
    to = onnx_dtypes.to_onnx(inputs[1].dtype)
    return _emit(ctx, node, inputs[:1], {**attrs, "to": to}, op="Cast")


@converts("GroupNormalization")
def group_norm(ctx, node, inputs, attrs):
    """Before opset 21, scale and bias hold one value per group: repeat each for the group's
    channels (the IR op takes them per channel, as opset 21 does)."""
    if ctx.opset >= 21:
        return _emit(ctx, node, inputs, attrs)
    x, groups = inputs[0], attrs.get("num_groups", 0)
    c = x.shape[1] if x.type.rank > 1 else 0
    if groups < 1 or c % groups:
        raise FrontendError(f"node {node.name} (GroupNormalization): num_groups={groups} must "
                            f"divide the {c} channels of %{x.name}")
    per_channel = []
    for v, what in zip(inputs[1:3], ("scale", "bias"), strict=True):
        name = f"{node.name}_{what}_per_channel"
        if v.is_const:
            per_channel.append(ctx.const(np.repeat(v.const.reshape(-1), c // groups), name))
            continue
        col, = ctx.emit("Reshape", [v, _i64(ctx, [groups, 1], f"{name}_col_shape")],
                        outputs=[f"{name}_col"], name=f"{name}_col")
        rep, = ctx.emit("Expand", [col, _i64(ctx, [groups, c // groups], f"{name}_rep_shape")],
                        outputs=[f"{name}_rep"], name=f"{name}_rep")
        per_channel += ctx.emit("Reshape", [rep, _i64(ctx, [c], f"{name}_shape")],
                                outputs=[name], name=name)
    return _emit(ctx, node, [x, *per_channel], attrs)


@converts("DFT")
def dft(ctx, node, inputs, attrs):
    """Before opset 20 the axis is an attribute (default 1); the IR takes it as an input."""
    if ctx.opset >= 20:
        return _emit(ctx, node, inputs, attrs)
    attrs = dict(attrs)
    axis = _i64(ctx, attrs.pop("axis", 1), f"{node.name}_axis")
    return _emit(ctx, node, [*_pad_inputs(inputs, 2)[:2], axis], attrs)


@converts("GridSample")
def grid_sample(ctx, node, inputs, attrs):
    """Opset 16 names the modes bilinear and bicubic; from opset 20 they are linear and cubic."""
    modes = {"bilinear": "linear", "bicubic": "cubic"}
    attrs = dict(attrs)
    if "mode" in attrs:
        mode = attrs["mode"].decode() if isinstance(attrs["mode"], bytes) else attrs["mode"]
        attrs["mode"] = modes.get(mode, mode)
    return _emit(ctx, node, inputs, attrs)


# -- convolution and pooling: explicit spatial attributes ---------------------------------------

def _split_pads(total: int, upper: bool) -> tuple[int, int]:
    """(begin, end) for SAME_UPPER (the odd unit at the end) or SAME_LOWER (at the begin)."""
    small, big = total // 2, total - total // 2
    return (small, big) if upper else (big, small)


@converts("Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool",
          "LpPool", "MaxUnpool")
def spatial(ctx, node, inputs, attrs):
    """Resolve `auto_pad` and fill strides, pads, dilations (and output_padding) explicitly.

    SAME Conv: out = ceil(in / s), total pad = max((out - 1) s + (k - 1) d + 1 - in, 0) (pools:
    k in place of (k - 1) d + 1).
    ConvTranspose: total pad = s (in - 1) + output_padding + (k - 1) d + 1 - out, where
    out = output_shape, or in * s for SAME.
    """
    op, where = node.op_type, f"node {node.name} ({node.op_type})"
    attrs = dict(attrs)
    x = inputs[0]
    n = x.type.rank - 2
    if n < 1:
        raise FrontendError(f"{where}: input %{x.name} has shape {list(x.shape)}; "
                            "expected [N, C, spatial...]")
    if op in ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv"):
        weight = inputs[3 if op == "QLinearConv" else 1]
        kernel = list(weight.shape[2:])
        given = attrs.pop("kernel_shape", None)
        if given is not None and list(given) != kernel:
            raise FrontendError(f"{where}: kernel_shape {list(given)} does not match the weight "
                                f"shape {list(weight.shape)}")
    elif "kernel_shape" in attrs:
        kernel = list(attrs["kernel_shape"])
    else:
        raise FrontendError(f"{where} has no kernel_shape")
    strides = list(attrs.get("strides") or [1] * n)
    dilations = list(attrs.get("dilations") or [1] * n)
    pads = list(attrs.get("pads") or [0] * (2 * n))
    auto_pad = attrs.pop("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise FrontendError(f"{where}: unknown auto_pad '{auto_pad}'")
    if len(kernel) != n or len(strides) != n or len(dilations) != n or len(pads) != 2 * n:
        raise FrontendError(f"{where}: kernel_shape {kernel}, strides {strides}, dilations "
                            f"{dilations} or pads {pads} do not fit {n} spatial dims")
    size = x.shape[2:]
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    upper = auto_pad == "SAME_UPPER"
    if op == "ConvTranspose":
        out_pad = list(attrs.get("output_padding") or [0] * n)
        target = attrs.pop("output_shape", None)
        if len(out_pad) != n or (target is not None and len(target) < n):
            raise FrontendError(f"{where}: output_padding {out_pad} or output_shape "
                                f"{target} does not fit {n} spatial dims")
        if target is not None or auto_pad.startswith("SAME"):
            target = list(target)[-n:] if target is not None else \
                [i * s for i, s in zip(size, strides, strict=True)]
            for i in range(n):
                total = strides[i] * (size[i] - 1) + out_pad[i] + extent[i] - target[i]
                if total < 0:  # the output is larger than the full result: extend at the end
                    out_pad[i] -= total
                    total = 0
                pads[i], pads[i + n] = _split_pads(total, upper)
        elif auto_pad == "VALID":
            pads = [0] * (2 * n)
        _put(attrs, "output_padding", out_pad, [0] * n, op, where)
    elif auto_pad.startswith("SAME"):
        # Pools pad for the undilated kernel, as onnxruntime and the ONNX reference do (the
        # spec's formula says the dilated extent; onnxruntime's Conv refuses SAME + dilation).
        span = kernel if op.endswith("Pool") else extent
        for i in range(n):
            out = -(-size[i] // strides[i])
            total = max((out - 1) * strides[i] + span[i] - size[i], 0)
            pads[i], pads[i + n] = _split_pads(total, upper)
    elif auto_pad == "VALID":
        pads = [0] * (2 * n)
    _put(attrs, "strides", strides, [1] * n, op, where)
    _put(attrs, "pads", pads, [0] * (2 * n), op, where)
    _put(attrs, "dilations", dilations, [1] * n, op, where)
    return _emit(ctx, node, inputs, attrs)


def _put(attrs: dict[str, Any], key: str, value: list, neutral: list, op: str, where: str):
    """Set an attribute the IR op declares; one it lacks must hold its neutral value."""
    if key in get_op(op).attrs:
        attrs[key] = value
    elif value != neutral:
        raise FrontendError(f"{where}: {key}={value} is not supported by edgec's {op}")
    else:
        attrs.pop(key, None)


# -- onnxruntime's com.microsoft quantized ops (QOperator models of quantize_static) -------------

# QGemm and QLinearAdd import as the edgec ops of the same meaning (modelled on them);
# QLinearGlobalAveragePool as standard ops that fuse-qdq and the pool kernels run


@converts("com.microsoft.QLinearAdd")
def ms_qlinear_add(ctx, node, inputs, attrs):
    return _emit(ctx, node, _pad_inputs(inputs, 8), {}, "QLinearAdd")


@converts("com.microsoft.QGemm")
def ms_qgemm(ctx, node, inputs, attrs):
    ins = _pad_inputs(inputs, 9)
    if ins[7] is None:
        raise FrontendError("com.microsoft.QGemm with a float output (no y_scale) is not "
                            "supported yet; quantize the model with its Gemm output quantized")
    keep = {k: attrs[k] for k in ("alpha", "transA", "transB") if k in attrs}
    return _emit(ctx, node, ins, keep, "QGemm")


@converts("com.microsoft.QLinearGlobalAveragePool")
def ms_qlinear_global_average_pool(ctx, node, inputs, attrs):
    """DequantizeLinear -> GlobalAveragePool -> QuantizeLinear, which fuse-qdq and the pool
    kernels run as they run a QDQ model's."""
    if attrs.get("channels_last", 0):
        raise FrontendError("com.microsoft.QLinearGlobalAveragePool with channels_last=1 is "
                            "not supported; export the model in NCHW")
    x, xs, xz, ys, yz = _pad_inputs(inputs, 5)
    dq = ctx.emit("DequantizeLinear", [x, xs, xz], {}, outputs=[f"{node.name}_dq"],
                  name=f"{node.name}_dq")[0]
    pool = ctx.emit("GlobalAveragePool", [dq], {}, outputs=[f"{node.name}_pool"],
                    name=f"{node.name}_pool")[0]
    return ctx.emit("QuantizeLinear", [pool, ys, yz], {}, outputs=node.outputs, name=node.name)
