"""Fused ops made by the fusion pass: a convolution or matrix product with its epilogue.

    FusedConv(X, W, B?, Z?)        = act(Conv(X, W) + B[m] + Z)   B per output channel [M]
    FusedMatMul(A, B, Bias?, Z?)   = act(A @ B + Bias + Z)        Bias [N] on the last axis

Z is a residual of the output's shape. `ACTIVATIONS` maps each activation name to its numpy
function of (x, params): the registered op of that name, so that each activation is defined
once; the kernel lowering uses the ops' scalar formulas the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...errors import ShapeError
from ..registry import Attr, get_op, op
from . import elementwise, nn  # noqa: F401  (the ops the fused forms are made of, registered)

# the parameters each activation takes in `activation_params`, in order (Clip's are its
# min and max inputs, the others' attributes of its op)
ACTIVATION_PARAMS: dict[str, tuple[str, ...]] = {
    "": (), "Relu": (), "LeakyRelu": ("alpha",), "Clip": ("min", "max"), "Sigmoid": (),
    "Tanh": (), "HardSigmoid": ("alpha", "beta"), "HardSwish": (),
}


def _registered(name: str) -> Callable[[np.ndarray, Sequence[float]], np.ndarray]:
    """Activation `name` as its registered op computes it, given its parameters in order."""

    def activation(x: np.ndarray, params: Sequence[float]) -> np.ndarray:
        if name == "Clip":
            bounds = [np.asarray(v, x.dtype) for v in params]
            return get_op(name).run([x, *bounds], {})[0]
        return get_op(name).run([x], dict(zip(ACTIVATION_PARAMS[name], params)))[0]

    return activation


ACTIVATIONS: dict[str, Callable[[np.ndarray, Sequence[float]], np.ndarray]] = {
    "": lambda x, p: x, **{name: _registered(name) for name in ACTIVATION_PARAMS if name}}

# the activations the vector epilogues of the micro-kernels implement: max/min/select/fma,
# exp and tanh (the ISA tables' lane-wise edgec_expf and edgec_tanhf)
VECTOR_ACTIVATIONS = frozenset({"", "Relu", "Clip", "HardSigmoid", "HardSwish", "LeakyRelu",
                                "Sigmoid", "Tanh"})

_EPILOGUE_ATTRS = {"activation": Attr.str(""), "activation_params": Attr.floats([])}


def _check_epilogue(opname: str, out, z, activation: str, params) -> None:
    if not out.dtype.is_float:
        raise ShapeError(f"{opname}: output {out} must be a float tensor")
    if activation not in ACTIVATIONS:
        raise ShapeError(f"{opname}: unknown activation {activation!r}; one of "
                         f"{sorted(a for a in ACTIVATIONS if a)} or \"\" for none")
    want = ACTIVATION_PARAMS[activation]
    if len(params) != len(want):
        raise ShapeError(f"{opname}: activation {activation} takes {len(want)} parameters "
                         f"{list(want)}, got {list(params)}")
    if z is not None and z.type != out:
        raise ShapeError(f"{opname}: residual {z.type} must have the output's type {out}")


def _epilogue(y: np.ndarray, z, activation: str, params) -> np.ndarray:
    if z is not None:
        y = y + z
    return ACTIVATIONS[activation](y, params).astype(y.dtype, copy=False)


_CONV = get_op("Conv")


def _infer_fused_conv(inputs, *, activation, activation_params, **conv_attrs):
    out = _CONV.infer(list(inputs[:3]), **conv_attrs)
    z = inputs[3] if len(inputs) > 3 else None
    _check_epilogue("FusedConv", out, z, activation, activation_params)  # Conv checks B
    return out


@op("FusedConv", inputs=(2, 4), attrs={**_CONV.attrs, **_EPILOGUE_ATTRS},
    infer=_infer_fused_conv)
def fused_conv(x, w, b=None, z=None, *, activation, activation_params, **conv_attrs):
    return _epilogue(_CONV.reference(x, w, b, **conv_attrs), z, activation, activation_params)


_MATMUL = get_op("MatMul")


def _infer_fused_matmul(inputs, *, activation, activation_params):
    out = _MATMUL.infer(list(inputs[:2]))
    bias = inputs[2] if len(inputs) > 2 else None
    z = inputs[3] if len(inputs) > 3 else None
    if bias is not None and bias.shape != out.shape[-1:]:
        raise ShapeError(f"FusedMatMul: bias {bias.type} must be 1-D, one value per last-axis "
                         f"element of the output {out}")
    _check_epilogue("FusedMatMul", out, z, activation, activation_params)
    return out


@op("FusedMatMul", inputs=(2, 4), attrs=_EPILOGUE_ATTRS, infer=_infer_fused_matmul)
def fused_matmul(a, b, bias=None, z=None, *, activation, activation_params):
    y = _MATMUL.reference(a, b)
    if bias is not None:
        y = y + bias
    return _epilogue(y, z, activation, activation_params)
