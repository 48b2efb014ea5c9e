"""`build_program`: a planned graph as a `Program` (kernel_ir/program.py), each node's kernel
lowered for the target, copies where a value must move, and the control flow of If, Loop and
Scan with the workspace regions of their bodies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..errors import EdgecError
from ..ir.graph import Graph, Node, Value
from ..kernel_ir.kernel import Kernel, KernelBuilder
from ..kernel_ir.program import (
    Branch,
    ExitUnless,
    Launch,
    Program,
    Ref,
    Repeat,
    SetScalar,
    Step,
    align,
)
from ..targets.target import Target
from .lower import c_identifier, lower_node
from .strategies import Forced, unknown_nodes


class _Weights:
    """The weight arrays of one library, shared by the graph and its subgraphs."""

    def __init__(self, name: str):
        self.name = name
        self.symbols: dict[int, str] = {}
        self.values: list[Value] = []
        self._taken: set[str] = set()

    def symbol(self, v: Value) -> str:
        if id(v) not in self.symbols:
            base = f"{self.name}_w_{c_identifier(v.name)}"[:80]
            sym, k = base, 1
            while sym in self._taken:
                sym, k = f"{base}_{k}", k + 1
            self._taken.add(sym)
            self.symbols[id(v)] = sym
            self.values.append(v)
        return self.symbols[id(v)]


def copy_kernel(name: str, v: Value) -> Kernel:
    kb = KernelBuilder(name, f"copy {v.type}")
    x = kb.input("x", v.dtype, (v.type.numel,))
    y = kb.output("y", v.dtype, (v.type.numel,))
    with kb.loop(v.type.numel) as i:
        kb.store(y, i, x[i])
    return kb.build()


@dataclass
class _Shared:
    """What every frame of one program adds to: weights, kernel names, strategies; the
    strategies forced by node name, and the nodes that took theirs."""

    weights: _Weights
    target: Target | None
    names: list[str] = field(default_factory=list)
    strategies: list[dict] = field(default_factory=list)
    copies: int = 0
    forced: Mapping[str, Forced] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)


class _Frame:
    """The ops of one graph (the model's, or a control-flow body's) given where its inputs
    and outputs live and the workspace offset its arena starts at (`base`)."""

    def __init__(self, graph: Graph, plan, shared: _Shared, inputs: list[Ref],
                 outputs: list[Ref], base: int, prefix: str, depth: int = 0):
        self.graph, self.plan, self.shared = graph, plan, shared
        self.base, self.prefix, self.depth = base, prefix, depth
        self.ops: list = []
        self.extra = 0  # workspace bytes past this arena that control-flow nodes need
        self.bound: dict[int, Ref] = {id(v): r for v, r in zip(graph.inputs, inputs, strict=True)}
        self.copies: list[tuple[Value, Ref]] = []  # outputs not written in place
        for v, r in zip(graph.outputs, outputs, strict=True):
            if v.producer is not None and id(v) not in self.bound:
                self.bound[id(v)] = r
            else:
                self.copies.append((v, r))
        self._by_name = {v.name: v for v in graph.values()}

    @property
    def total_bytes(self) -> int:
        return align(self.plan.arena_bytes) + self.extra

    def ref(self, v: Value) -> Ref:
        if v.is_const:
            return Ref("weight", self.shared.weights.symbol(v), v.dtype, read_only=True)
        if id(v) in self.bound:
            return self.bound[id(v)]
        root = self.plan.aliases.get(v.name)
        if root is not None:
            return self.ref(self._by_name[root]).viewed_as(v.dtype)
        if v.type.nbytes == 0:  # an empty tensor: no storage (the workspace may be empty)
            return Ref("none", 0, v.dtype)
        if v.name not in self.plan.offsets:
            raise EdgecError(f"value %{v.name} has no storage in the memory plan; "
                             "run plan-memory as the last pass of the pipeline")
        return Ref("workspace", self.base + self.plan.offsets[v.name], v.dtype)

    def launch(self, k: Kernel, args: list[Ref]) -> None:
        self.shared.names.append(k.name)
        self.ops.append(Launch(k, args))

    def copy(self, v: Value, src: Ref, dst: Ref) -> None:
        self.shared.copies += 1
        self.launch(copy_kernel(f"{self.prefix}copy{self.shared.copies}", v), [src, dst])

    def run(self) -> _Frame:
        for i, node in enumerate(self.graph.nodes):
            if all(o.name in self.plan.aliases for o in node.outputs):
                continue  # a view: its output shares its input's storage
            if node.op in _CONTROL:
                _CONTROL[node.op](self, node, i)
                continue
            force = self.shared.forced.get(node.name)
            ln = lower_node(node, i, self.shared.target, force)
            if force is not None:
                self.shared.used.add(node.name)
            ln.kernel.name = f"{self.prefix}{ln.kernel.name}"
            self.launch(ln.kernel, [self.ref(v) for v in ln.bindings])
            s = ln.strategy
            self.shared.strategies.append({
                "node": node.name, "op": node.op, "kernel": ln.kernel.name,
                "strategy": s.name, "kind": s.kind, "lanes": s.lanes, "parallel": s.parallel,
                "micro_kernels": list(s.micro_kernels), "choice": s.choice.record(),
                "forced": force is not None,
                "candidates": [c.record() for c in s.candidates]})
        for v, dst in self.copies:
            self.copy(v, self.ref(v), dst)
        return self

    # -- control flow ------------------------------------------------------------------
    def body(self, g: Graph, inputs: list[Ref], outputs: list[Ref], base: int,
             prefix: str) -> _Frame:
        from ..passes.plan_memory import plan

        return _Frame(g, plan(g), self.shared, inputs, outputs, base, prefix,
                      self.depth + 1).run()

    def region(self) -> _Region:
        return _Region(self.base + align(self.plan.arena_bytes))

    def emit_if(self, node: Node, i: int) -> None:
        region = self.region()
        captured = [self.ref(v) for v in node.inputs[1:]]
        outs = [self.ref(v) for v in node.outputs]
        then = self.body(node.attrs["then_branch"], captured, outs, region.base,
                         f"{self.prefix}k{i}_then_")
        other = self.body(node.attrs["else_branch"], captured, outs, region.base,
                          f"{self.prefix}k{i}_else_")
        self.ops.append(Branch(self.ref(node.inputs[0]), then.ops, other.ops))
        self.extra = max(self.extra, then.total_bytes, other.total_bytes)

    def emit_loop(self, node: Node, i: int) -> None:
        from ..ir.ops.control import loop_layout, trip_count

        body = node.attrs["body"]
        n, _ = loop_layout(node.inputs, body, node.attrs["captured"])
        m, carried = trip_count(node.inputs), node.inputs[2:2 + n]
        region, it = self.region(), f"it{self.depth}"
        iter_slot, cond_slot = region.slot(body.inputs[0]), region.slot(body.inputs[1])
        cond_out = region.slot(body.outputs[0])
        s_in = [region.slot(v, read_only=True) for v in carried]
        s_out = [region.slot(v) for v in carried]
        for v, dst in zip(carried, s_in, strict=True):
            self.copy(v, self.ref(v), dst.writable())
        scans = [replace(self.ref(o), step=Step(it, o.type.numel // max(o.shape[0], 1)))
                 for o in node.outputs[n:]]
        inner = self.nested()
        inner.ops += [SetScalar(iter_slot, it), SetScalar(cond_slot, True)]
        child = inner.body(body, [iter_slot, cond_slot, *s_in,
                                  *[self.ref(v) for v in node.inputs[2 + n:]]],
                           [cond_out, *s_out, *scans], region.end,
                           f"{self.prefix}k{i}_body_")
        inner.ops += child.ops
        if not _always_true(body):
            inner.ops.append(ExitUnless(cond_out))
        for v, src, dst in zip(carried, s_out, s_in, strict=True):
            inner.copy(v, src, dst.writable())
        self.finish(Repeat(it, m, inner.ops), node.outputs[:n], s_in, carried, region, child)

    def emit_scan(self, node: Node, i: int) -> None:
        from ..ir.ops.control import scan_layout

        body, a = node.attrs["body"], node.attrs
        n, k = scan_layout(node.inputs, body, a["num_scan_inputs"], a["captured"])
        xs = node.inputs[n:n + a["num_scan_inputs"]]
        length = xs[0].shape[0]
        region, t = self.region(), f"t{self.depth}"
        s_in = [region.slot(v, read_only=True) for v in node.inputs[:n]]
        s_out = [region.slot(v) for v in node.inputs[:n]]
        for v, dst in zip(node.inputs[:n], s_in, strict=True):
            self.copy(v, self.ref(v), dst.writable())
        in_dirs = a["scan_input_directions"] or [0] * len(xs)
        out_dirs = a["scan_output_directions"] or [0] * k

        def moving(v: Value, direction: int) -> Ref:
            per = v.type.numel // max(length, 1)
            return replace(self.ref(v), step=Step(t, per, length - 1 if direction else None))

        slices = [moving(x, d) for x, d in zip(xs, in_dirs, strict=True)]
        outs = [moving(o, d) for o, d in zip(node.outputs[n:], out_dirs, strict=True)]
        inner = self.nested()
        child = inner.body(body, [*s_in, *slices,
                                  *[self.ref(v) for v in node.inputs[n + len(xs):]]],
                           [*s_out, *outs], region.end, f"{self.prefix}k{i}_body_")
        inner.ops += child.ops
        for v, src, dst in zip(node.inputs[:n], s_out, s_in, strict=True):
            inner.copy(v, src, dst.writable())
        self.finish(Repeat(t, length, inner.ops), node.outputs[:n], s_in, node.inputs[:n],
                    region, child)

    def nested(self) -> _Frame:
        """A frame sharing this one's storage, collecting the ops of a loop's body."""
        inner = _Frame.__new__(_Frame)
        inner.__dict__.update(self.__dict__)
        inner.ops = []
        return inner

    def finish(self, loop: Repeat, outputs, s_in, values, region: _Region,
               child: _Frame) -> None:
        self.ops.append(loop)
        for v, src, out in zip(values, s_in, outputs, strict=True):
            self.copy(v, src, self.ref(out))
        self.extra = max(self.extra, region.size + child.total_bytes)


class _Region:
    """A bump allocator of aligned slots in the workspace, from offset `base` on."""

    def __init__(self, base: int):
        self.base, self.size = base, 0

    def slot(self, v: Value, read_only: bool = False) -> Ref:
        off, self.size = self.size, self.size + align(max(v.type.nbytes, 1))
        return Ref("workspace", self.base + off, v.dtype, read_only)

    @property
    def end(self) -> int:
        return self.base + self.size


def _always_true(body: Graph) -> bool:
    """Whether a Loop body's condition output can never be false."""
    c = body.outputs[0]
    if c is body.inputs[1]:
        return True
    if c.is_const:
        return bool(c.const.reshape(-1)[0])
    p = c.producer
    return p is not None and p.op == "Identity" and p.inputs[0] is body.inputs[1]


_CONTROL = {"If": _Frame.emit_if, "Loop": _Frame.emit_loop, "Scan": _Frame.emit_scan}


def build_program(graph: Graph, plan, target: Target | None, name: str,
                  prefix: str = "", strategies: Mapping[str, str | Forced] | None = None
                  ) -> Program:
    """The program of `graph` laid out by its memory `plan`: each node's kernel lowered for
    `target` (named `prefix` + k<index>_<node>) by its chosen strategy, or the one
    `strategies` forces ({node name: KIND{k=v,...}}), the control flow, and the workspace
    size."""
    forced = {n: Forced.parse(s) for n, s in (strategies or {}).items()}
    shared = _Shared(_Weights(name), target, forced=forced)
    inputs = [Ref("input", i, v.dtype, read_only=True) for i, v in enumerate(graph.inputs)]
    outputs = [Ref("output", j, v.dtype) for j, v in enumerate(graph.outputs)]
    top = _Frame(graph, plan, shared, inputs, outputs, 0, prefix).run()
    unused = sorted(set(forced) - shared.used)
    if unused:
        raise EdgecError(unknown_nodes("--strategy", unused,
                                       [s["node"] for s in shared.strategies]))
    ws = plan.arena_bytes if not top.extra else top.total_bytes
    weights = [(shared.weights.symbols[id(v)], v) for v in shared.weights.values]
    return Program(name, list(graph.inputs), list(graph.outputs), ws, weights, top.ops,
                   shared.strategies, shared.names)
