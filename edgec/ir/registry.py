"""The op registry: every op is declared once, here-registered, with its attribute schema,
its shape/type inference and its numpy reference implementation.

    @op("LeakyRelu", attrs={"alpha": Attr.float(0.01)}, infer=same_as(0))
    def leaky_relu(x, *, alpha):
        return np.where(x >= 0, x, x * alpha).astype(x.dtype)

The decorated function *is* the reference: inputs positionally (None for an omitted optional
input), attributes as keywords; it returns an array or a tuple of arrays. `infer` receives the
input `Value`s (so it can read constant inputs such as a Reshape's shape) and the attributes,
and returns a `TensorType` or a list of them. The interpreter, the constant folder and the
numerics checks all run these references; nothing else keeps a list of ops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ShapeError, VerificationError
from .dtypes import DType
from .types import TensorType

REQUIRED = object()

ATTR_KINDS = ("int", "float", "str", "ints", "floats", "strs", "tensor", "graph", "graphs")


@dataclass(frozen=True)
class Attr:
    kind: str
    default: Any = REQUIRED

    @staticmethod
    def int(default=REQUIRED) -> Attr:
        return Attr("int", default)

    @staticmethod
    def float(default=REQUIRED) -> Attr:
        return Attr("float", default)

    @staticmethod
    def str(default=REQUIRED) -> Attr:
        return Attr("str", default)

    @staticmethod
    def ints(default=REQUIRED) -> Attr:
        return Attr("ints", default)

    @staticmethod
    def floats(default=REQUIRED) -> Attr:
        return Attr("floats", default)

    @staticmethod
    def strs(default=REQUIRED) -> Attr:
        return Attr("strs", default)

    @staticmethod
    def tensor(default=REQUIRED) -> Attr:
        return Attr("tensor", default)

    @staticmethod
    def graph(default=REQUIRED) -> Attr:
        return Attr("graph", default)

    def coerce(self, value):
        k = self.kind
        if value is None:
            return None
        if k == "int":
            return int(value)
        if k == "float":  # ONNX float attributes are float32: keep exactly those values
            return float(np.float32(value))
        if k == "str":
            return value.decode() if isinstance(value, bytes) else str(value)
        if k == "ints":
            return [int(v) for v in value]
        if k == "floats":
            return [float(np.float32(v)) for v in value]
        if k == "strs":
            return [v.decode() if isinstance(v, bytes) else str(v) for v in value]
        if k == "tensor":
            return np.asarray(value)
        return value


_KIND_TEXT = {"int": "an int", "float": "a float", "str": "a string", "ints": "a list of ints",
              "floats": "a list of floats", "strs": "a list of strings", "tensor": "a tensor",
              "graph": "a graph", "graphs": "graphs"}


@dataclass
class OpDef:
    name: str
    attrs: dict[str, Attr]
    infer: Callable[..., Any]
    reference: Callable[..., Any]
    num_inputs: tuple[int, int]
    num_outputs: tuple[int, int]
    traits: frozenset[str] = field(default_factory=frozenset)
    doc: str = ""

    def complete_attrs(self, attrs: dict[str, Any], where: str = "") -> dict[str, Any]:
        """Check `attrs` against the schema, coerce their types and fill in defaults."""
        unknown = set(attrs) - set(self.attrs)
        if unknown:
            raise VerificationError(
                f"{where}: op {self.name} has no attribute(s) {sorted(unknown)}; "
                f"it takes {sorted(self.attrs) or 'none'}")
        out = {}
        for k, spec in self.attrs.items():
            if k in attrs:
                try:
                    out[k] = spec.coerce(attrs[k])
                except (TypeError, ValueError, OverflowError):
                    shown = repr(attrs[k])
                    shown = shown if len(shown) <= 60 else shown[:57] + "..."
                    raise VerificationError(
                        f"{where}: op {self.name}'s attribute '{k}' takes {_KIND_TEXT[spec.kind]}"
                        f", not {type(attrs[k]).__name__} {shown}") from None
            elif spec.default is REQUIRED:
                raise VerificationError(f"{where}: op {self.name} needs attribute '{k}'")
            else:
                d = spec.default
                out[k] = list(d) if isinstance(d, list | tuple) else d
        return out

    def infer_types(self, inputs: Sequence, attrs: dict[str, Any],
                    where: str = "") -> list[TensorType]:
        lo, hi = self.num_inputs
        present = len(inputs)
        while present and inputs[present - 1] is None:
            present -= 1
        if not lo <= present <= hi:
            raise VerificationError(
                f"{where}: op {self.name} takes {lo}..{hi} inputs, got {present}")
        try:
            res = self.infer(list(inputs), **attrs)
        except ShapeError as e:
            if where and not str(e).startswith(where):
                raise ShapeError(f"{where}: {e}") from e
            raise
        except VerificationError:
            raise
        except Exception as e:  # inference code indexing a wrong shape, etc.
            shapes = ", ".join(str(v.type) if v is not None else "-" for v in inputs)
            raise ShapeError(f"{where}: op {self.name} cannot take inputs ({shapes}): {e}") from e
        return [res] if isinstance(res, TensorType) else list(res)

    def run(self, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
        res = self.reference(*inputs, **attrs)
        if isinstance(res, tuple | list):
            return [np.asarray(r) for r in res]
        return [np.asarray(res)]


_REGISTRY: dict[str, OpDef] = {}


def _arity(n) -> tuple[int, int]:
    return (n, n) if isinstance(n, int) else (int(n[0]), int(n[1]))


def op(name: str, *, infer, attrs: dict[str, Attr] | None = None, inputs=1, outputs=1,
       traits: Sequence[str] = ()):
    """Declare an op; the decorated function is its numpy reference implementation."""

    def deco(fn):
        register(OpDef(name, dict(attrs or {}), infer, fn, _arity(inputs), _arity(outputs),
                       frozenset(traits), (fn.__doc__ or "").strip()))
        return fn

    return deco


def register(opdef: OpDef) -> OpDef:
    if opdef.name in _REGISTRY:
        raise ValueError(f"op {opdef.name} is declared twice")
    _REGISTRY[opdef.name] = opdef
    return opdef


def get_op(name: str) -> OpDef:
    _load_builtin_ops()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise VerificationError(f"unknown op '{name}' (not in the op registry)") from None


def has_op(name: str) -> bool:
    _load_builtin_ops()
    return name in _REGISTRY


def all_ops() -> dict[str, OpDef]:
    _load_builtin_ops()
    return dict(_REGISTRY)


_loaded = False


def _load_builtin_ops() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from . import ops  # noqa: F401  (registers the built-in ops)


# -- inference helpers shared by many ops ----------------------------------------------

def same_as(i: int = 0):
    """Output has the type of input `i`."""
    return lambda inputs, **_: inputs[i].type


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy/ONNX multidirectional broadcasting of static shapes."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ShapeError(
            "shapes " + ", ".join(str(list(s)) for s in shapes) + " do not broadcast") from None


def broadcast(dtype: DType | None = None):
    """Output shape is the broadcast of all inputs; dtype that of input 0 (or `dtype`)."""

    def infer(inputs, **_):
        present = [v for v in inputs if v is not None]
        shape = broadcast_shapes(*[v.shape for v in present])
        return TensorType(shape, dtype or present[0].dtype)

    return infer


def const_input(inputs, i: int, what: str) -> np.ndarray | None:
    """The constant array of input `i`, or a ShapeError saying it must be constant."""
    v = inputs[i] if i < len(inputs) else None
    if v is None:
        return None
    if v.const is None:
        raise ShapeError(
            f"{what} must be a constant (or computable at compile time once input shapes are "
            f"fixed); here it is computed from %{v.name} at run time")
    return v.const
