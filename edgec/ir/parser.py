"""Parser for the text form written by `printer.print_graph` (see that module for the syntax)."""

from __future__ import annotations

import json
import re

import numpy as np

from ..errors import VerificationError
from .dtypes import DType
from .graph import Graph, Node, Value
from .registry import get_op
from .types import QuantParams, TensorType

_TOKEN = re.compile(r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<hex>0x[0-9a-fA-F]*)
  | (?P<sym>[%@#]"(?:[^"\\]|\\.)*"|[%@#][A-Za-z0-9_.]+)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<num>-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)(?![A-Za-z_]))
  | (?P<arrow>->)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.:]*)
  | (?P<punct>[()\[\]{},:=<>])
  | (?P<dots>\.\.\.[^.]*\.\.\.)
""", re.VERBOSE)


class ParseError(VerificationError):
    pass


class _Tokens:
    def __init__(self, text: str):
        self.toks: list[tuple[str, str, int]] = []
        pos, line = 0, 1  # the line is counted as we go: recounting from 0 is quadratic
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise ParseError(f"IR text: unexpected character {text[pos]!r} at line {line}")
            if m.lastgroup != "ws":
                self.toks.append((m.lastgroup, m.group(), line))
            else:
                line += m.group().count("\n")
            pos = m.end()
        self.i = 0

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.toks[j][1] if j < len(self.toks) else ""

    def kind(self) -> str:
        return self.toks[self.i][0] if self.i < len(self.toks) else ""

    def next(self) -> str:
        if self.i >= len(self.toks):
            raise ParseError("IR text: unexpected end of input")
        t = self.toks[self.i][1]
        self.i += 1
        return t

    def expect(self, s: str) -> str:
        t = self.next()
        if t != s:
            line = self.toks[self.i - 1][2]
            raise ParseError(f"IR text line {line}: expected {s!r}, found {t!r}")
        return t

    def accept(self, s: str) -> bool:
        if self.peek() == s:
            self.i += 1
            return True
        return False


def _sym_name(tok: str) -> str:
    body = tok[1:]
    return json.loads(body) if body.startswith('"') else body


def _scalar(tok: str) -> float | int | bool:
    if tok in ("true", "false"):
        return tok == "true"
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    return float(tok)


class _Parser:
    def __init__(self, text: str):
        self.t = _Tokens(text)

    def type(self) -> TensorType:
        dt = DType.parse(self.t.next())
        self.t.expect("[")
        dims = []
        while not self.t.accept("]"):
            dims.append(int(self.t.next()))
            self.t.accept(",")
        return TensorType(tuple(dims), dt, self.quant() if self.t.peek() == "quant" else None)

    def quant(self) -> QuantParams:
        """quant<[axis=A, ]scale=S|[S, ...], zp=Z|[Z, ...][, bits=B]>"""
        t = self.t
        t.expect("quant")
        t.expect("<")
        fields: dict[str, list] = {}
        while not t.accept(">"):
            key = t.next()
            t.expect("=")
            if t.accept("["):
                vals = []
                while not t.accept("]"):
                    vals.append(_scalar(t.next()))
                    t.accept(",")
            else:
                vals = [_scalar(t.next())]
            fields[key] = vals
            t.accept(",")
        unknown = set(fields) - {"axis", "scale", "zp", "bits"}
        if unknown or "scale" not in fields or "zp" not in fields:
            raise ParseError(f"IR text: quant<...> takes scale, zp and optionally axis and bits, "
                             f"not {sorted(fields)}")
        axis = int(fields["axis"][0]) if "axis" in fields else None
        bits = int(fields["bits"][0]) if "bits" in fields else 8
        return QuantParams.of(fields["scale"], fields["zp"], axis, bits)

    def dense(self, ty: TensorType) -> np.ndarray:
        self.t.expect("dense")
        self.t.expect("<")
        if self.t.kind() == "hex":
            raw = bytes.fromhex(self.t.next()[2:])
            arr = np.frombuffer(raw, dtype=ty.dtype.np.newbyteorder("<")).astype(ty.dtype.np)
        elif self.t.kind() == "dots":
            raise ParseError("IR text: constants were elided when printed; print without elide")
        else:
            self.t.expect("[")
            vals = []
            while not self.t.accept("]"):
                vals.append(_scalar(self.t.next()))
                self.t.accept(",")
            arr = np.array(vals, dtype=ty.dtype.np)
        self.t.expect(">")
        arr = arr.reshape(ty.shape).copy()
        arr.setflags(write=False)
        return arr

    def attr(self, kind: str, scope):
        t = self.t
        if kind in ("int", "float"):
            return _scalar(t.next())
        if kind == "str":
            return json.loads(t.next())
        if kind in ("ints", "floats", "strs"):
            t.expect("[")
            out = []
            while not t.accept("]"):
                tok = t.next()
                out.append(json.loads(tok) if kind == "strs" else _scalar(tok))
                t.accept(",")
            return out
        if kind == "tensor":
            t.expect("tensor")
            t.expect("<")
            ty = self.type()
            arr = self.dense(ty)
            t.expect(">")
            return arr
        if kind == "graph":
            return self.graph(scope)
        if kind == "graphs":
            t.expect("[")
            out = []
            while not t.accept("]"):
                out.append(self.graph(scope))
                t.accept(",")
            return out
        raise ParseError(f"unknown attribute kind {kind}")

    def graph(self, outer: dict[str, Value] | None = None) -> Graph:
        t = self.t
        t.expect("graph")
        g = Graph(_sym_name(t.next()))
        scope: dict[str, Value] = dict(outer or {})

        def define(v: Value) -> Value:
            g._names.add(v.name)
            scope[v.name] = v
            return v

        def use(tok: str) -> Value | None:
            if tok == "none":
                return None
            name = _sym_name(tok)
            if name not in scope:
                raise ParseError(f"IR text: value %{name} is used before it is defined")
            return scope[name]

        t.expect("(")
        while not t.accept(")"):
            name = _sym_name(t.next())
            t.expect(":")
            g.inputs.append(define(Value(name, self.type())))
            t.accept(",")
        t.expect("{")
        while True:
            if t.accept("return"):
                outs = [use(t.next())]
                while t.accept(","):
                    outs.append(use(t.next()))
                g.outputs = outs
                t.expect("}")
                return g
            names = [_sym_name(t.next())]
            while t.accept(","):
                names.append(_sym_name(t.next()))
            t.expect("=")
            if t.accept("const"):
                ty = self.type()
                define(Value(names[0], ty, self.dense(ty)))
                continue
            opname = t.next()
            opdef = get_op(opname)
            t.expect("(")
            ins = []
            while not t.accept(")"):
                ins.append(use(t.next()))
                t.accept(",")
            attrs = {}
            if t.accept("{"):
                while not t.accept("}"):
                    key = t.next()
                    t.expect("=")
                    if key not in opdef.attrs:
                        raise ParseError(f"IR text: op {opname} has no attribute {key}")
                    attrs[key] = self.attr(opdef.attrs[key].kind, scope)
                    t.accept(",")
            t.expect(":")
            types = [self.type()]
            while t.accept(","):
                types.append(self.type())
            node_name = names[0]
            if t.peek().startswith("#"):
                node_name = _sym_name(t.next())
            outs = [define(Value(n, ty)) for n, ty in zip(names, types)]
            node = Node(opname, ins, outs, opdef.complete_attrs(attrs, where=node_name), node_name)
            g.insert(node)


def parse(text: str) -> Graph:
    """Parse the text form of a graph."""
    p = _Parser(text)
    g = p.graph()
    if p.t.i != len(p.t.toks):
        raise ParseError(f"IR text: unexpected {p.t.peek()!r} after the graph")
    return g
