"""Lowering: each graph node becomes one kernel-IR `Kernel`.

Every op's kernel is defined once, as a builder function registered with `@kernel("Op")`
in `edgec/lowering/kernels/<family>.py` (the same families as `edgec/ir/ops`). A builder
binds the node's values to kernel buffers with `kb.bind(value, name)`, so the caller knows
which storage to pass for each parameter. Elementwise ops are defined by their scalar
formula with `@scalar("Op")`; that one formula serves the standalone kernel (with numpy
broadcasting) and the epilogues of fused kernels.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import EdgecError
from ..ir.dtypes import DType
from ..ir.graph import Node, Value
from ..kernel_ir.kernel import Buffer, Expr, Kernel, KernelBuilder, Loop, const, linear_index, walk
from ..targets.target import Target, get_target
from .strategies import Candidate, Forced, Kind, choose

KernelFn = Callable[["NodeKernelBuilder", Node], None]
KERNELS: dict[str, KernelFn] = {}
SCALARS: dict[str, Callable[..., Expr]] = {}


def kernel(*ops: str):
    """Register the decorated function as the kernel builder of `ops`."""

    def deco(fn: KernelFn) -> KernelFn:
        for o in ops:
            if o in KERNELS:
                raise ValueError(f"kernel for {o} is defined twice")
            KERNELS[o] = fn
        return fn

    return deco


def scalar(op: str):
    """Register the scalar formula of an elementwise op: fn(*input exprs, **attrs) -> Expr.

    This also registers the op's kernel: a loop nest over the output with numpy broadcasting.
    """

    def deco(fn: Callable[..., Expr]):
        SCALARS[op] = fn
        kernel(op)(_elementwise_kernel)
        return fn

    return deco


class NodeKernelBuilder(KernelBuilder):
    """A KernelBuilder that remembers which graph value each buffer parameter stands for,
    and knows the target it builds for (its vector lanes, its micro-kernels). A builder with
    more than one way to build a node lists them as candidates and takes the one `choose`
    gives (a `--strategy` override's where one is `forced`); it names it in words in
    `strategy` (the report shows it beside what the kernel is made of: see `Strategy`)."""

    def __init__(self, name: str, doc: str = "", target: Target | None = None,
                 forced: Forced | None = None):
        super().__init__(name, doc)
        self.bindings: list[Value] = []
        self.target = target if target is not None else get_target("c-generic")
        self.gpu_rows = self.target.gpu is not None
        self.strategy = ""
        self.forced = forced
        self.candidates: tuple[Candidate, ...] = ()
        self.choice: Candidate | None = None

    def choose(self, candidates: Sequence[Candidate]) -> Candidate:
        """The candidate to emit: the forced one (an EdgecError where it does not apply),
        else the chooser's; remembered for the report."""
        name = self.node.name if self.node is not None else self.name
        self.candidates = tuple(candidates)
        if self.forced is not None:
            self.choice = self.forced.pick(name, candidates)
            self.forced = None  # used: lower_node checks that every override was
        else:
            try:
                self.choice = choose(candidates)
            except EdgecError as e:
                raise EdgecError(f"node {name}: {e}") from None
        return self.choice

    def lanes(self, dtype: DType) -> int:
        """Lanes of a vector of `dtype` on the target: 1 where it has no vector ISA."""
        return self.target.lanes(dtype)

    def bind(self, value: Value, name: str) -> Buffer:
        for b, v in zip(self.params, self.bindings):
            if v is value:
                return b
        role = "out" if value.producer is not None and value.producer is self.node else (
            "const" if value.is_const else "in")
        buf = self.param(name, value.dtype, value.shape, role)
        self.bindings.append(value)
        return buf

    node: Node | None = None


@dataclass(frozen=True)
class Strategy:
    """How a node's kernel computes: `name` as its builder chose it (or, where a builder has
    one way only, what the kernel is made of), `kind` what the kernel is made of
    ("micro-kernel": it calls the shared hot loops; "vector": vector code of its own;
    "scalar"), its widest vector, whether it runs on the thread pool, and its micro-kernels;
    `choice` the typed candidate it was built by, among `candidates` (lowering/strategies.py;
    a builder with one way has the single candidate DIRECT)."""

    name: str
    kind: str
    lanes: int
    parallel: bool
    micro_kernels: tuple[str, ...]
    choice: Candidate = Candidate(Kind.DIRECT)
    candidates: tuple[Candidate, ...] = (Candidate(Kind.DIRECT),)

    @staticmethod
    def of(kernel: Kernel, chosen: str = "", choice: Candidate | None = None,
           candidates: Sequence[Candidate] = ()) -> Strategy:
        micro = tuple(c.name for c in kernel.callees())
        bodies = [kernel.body] + [c.body for c in kernel.callees()]
        lanes = max((_widest(b) for b in bodies), default=1)
        parallel = any(isinstance(s, Loop) and s.kind == "parallel" for s in walk(kernel.body))
        kind = "micro-kernel" if micro else "vector" if lanes > 1 else "scalar"
        choice = choice or Candidate(Kind.DIRECT)
        return Strategy(chosen or kind, kind, lanes, parallel, micro, choice,
                        tuple(candidates) or (choice,))

    def describe(self) -> str:
        parts = [self.name] + ([] if self.name == self.kind else [self.kind])
        parts += [f"{self.lanes} lanes"] if self.lanes > 1 else []
        parts += ["parallel"] if self.parallel else []
        if self.micro_kernels:
            more = len(self.micro_kernels) - 1
            parts.append(self.micro_kernels[0] + (f" (+{more} more)" if more else ""))
        return ", ".join(parts)


def _widest(stmts: list) -> int:
    """The most lanes of any expression in `stmts`."""
    def lanes(e) -> int:
        if not isinstance(e, Expr):
            return 1
        return max([e.lanes] + [lanes(a) for a in e.args])

    widest = 1
    for s in walk(stmts):
        for e in vars(s).values():
            widest = max(widest, lanes(e))
    return widest


@dataclass
class LoweredNode:
    node: Node
    kernel: Kernel
    bindings: list[Value]
    strategy: Strategy | None = None


def _load_kernels() -> None:
    from . import kernels  # noqa: F401  (registers the kernel builders)


def c_identifier(name: str) -> str:
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_") or "v"
    return ident if not ident[0].isdigit() else "v" + ident


def describe(node: Node) -> str:
    """A one-line comment for a kernel: op, operand types, non-default attributes."""
    ins = ", ".join("-" if v is None else f"{v.type}" for v in node.inputs)
    outs = ", ".join(str(v.type) for v in node.outputs)
    attrs = ", ".join(f"{k}={v}" for k, v in node.attrs.items()
                      if not isinstance(v, list | tuple) or len(v) < 9)
    return f"{node.op} {node.name}: ({ins}) -> {outs}" + (f" {{{attrs}}}" if attrs else "")


def lower_node(node: Node, index: int, target: Target | None = None,
               force: Forced | str | None = None) -> LoweredNode:
    """Build the kernel of one node for `target` (c-generic if None), by the strategy
    `force` names where given (`KIND{k=v,...}`, lowering/strategies.py); its name is
    k<index>_<node name>."""
    _load_kernels()
    fn = KERNELS.get(node.op)
    if fn is None:
        raise EdgecError(f"node {node.name}: no kernel for op {node.op} in edgec's lowering")
    forced = Forced.parse(force) if force is not None else None
    kb = NodeKernelBuilder(f"k{index}_{c_identifier(node.name)}"[:60], describe(node), target,
                           forced)
    kb.node = node
    fn(kb, node)
    if kb.forced is not None:  # the builder never chose: it has one way
        if kb.forced.kind is not Kind.DIRECT or kb.forced.params:
            raise EdgecError(f"node {node.name}: its {node.op} kernel is built one way here "
                             f"(strategy {Kind.DIRECT.value}, no candidates to choose from); "
                             f"it cannot be built as {kb.forced.text()}")
    k = kb.build()
    return LoweredNode(node, k, kb.bindings,
                       Strategy.of(k, kb.strategy, kb.choice, kb.candidates))


# Ops whose bodies the codegen emits as nested C blocks instead of one kernel.
CONTROL_OPS = frozenset({"If", "Loop", "Scan"})


def unsupported_kernels(nodes: Sequence[Node]) -> list[str]:
    """The ops among `nodes` (and in their subgraphs) that have no kernel builder."""
    _load_kernels()
    missing: set[str] = set()
    for n in nodes:
        if n.op not in KERNELS and n.op not in CONTROL_OPS:
            missing.add(n.op)
        for a in n.attrs.values():
            if hasattr(a, "nodes") and hasattr(a, "outputs"):
                missing.update(unsupported_kernels(a.nodes))
    return sorted(missing)


# -- elementwise with broadcasting ---------------------------------------------------------

def coalesce(out_shape: Sequence[int], in_shapes: Sequence[Sequence[int]]):
    """Merge adjacent output dims that every operand either spans fully or broadcasts over.

    Returns (dims, per-operand flags) where flags[k][d] says operand k varies along dim d.
    """
    rank = len(out_shape)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in in_shapes]
    dims: list[int] = []
    flags: list[list[bool]] = [[] for _ in padded]
    for d in range(rank):
        if out_shape[d] == 1:
            continue
        cur = [p[d] != 1 for p in padded]
        if dims and all(f[-1] == c for f, c in zip(flags, cur)):
            dims[-1] *= out_shape[d]
            continue
        dims.append(out_shape[d])
        for f, c in zip(flags, cur):
            f.append(c)
    return dims, flags


def broadcast_index(vars_: Sequence[Expr], dims: Sequence[int], varies: Sequence[bool]) -> Expr:
    """Linear index into an operand that varies along the dims flagged in `varies`."""
    return linear_index([v for v, f in zip(vars_, varies) if f],
                        [d for d, f in zip(dims, varies) if f])


def operand(kb: NodeKernelBuilder, value: Value, name: str) -> Buffer | Expr:
    """A buffer for `value`, or, for a one-element constant, its value as a literal."""
    if value.is_const and value.const.size == 1:
        return const(value.const.reshape(()).item(), value.dtype)
    return kb.bind(value, name)


def _elementwise_kernel(kb: NodeKernelBuilder, node: Node) -> None:
    names = "abcdefghijklmnopqrstuvwxyz"
    ins = [None if v is None else operand(kb, v, names[k]) for k, v in enumerate(node.inputs)]
    bufs = [b for b in ins if isinstance(b, Buffer)]
    out = kb.bind(node.output, "y")
    dims, flags = coalesce(out.shape, [b.shape for b in bufs] + [out.shape])
    if not dims:
        dims, flags = [1], [[False] for _ in flags]
    # large ones go to the thread pool by blocks of the outermost dim (by chunks when one)
    with kb.rows(dims[0], math.prod(dims[1:]), "i0" if len(dims) > 1 else "i") as i0, \
            kb.loops(dims[1:], [f"i{k}" for k in range(1, len(dims))]) as rest:
        vs = [i0, *rest]
        loads = iter(b[broadcast_index(vs, dims, f)] for b, f in zip(bufs, flags))
        args = [next(loads) if isinstance(b, Buffer) else b for b in ins]
        kb.store(out, broadcast_index(vs, dims, flags[-1]), SCALARS[node.op](*args, **node.attrs))
