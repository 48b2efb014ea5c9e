"""The program IR: what a library's run function does, in which order, on which storage.

A `Program` is kernel launches (`Launch`), copies, and the control flow of If, Loop and Scan
(`Branch`, `Repeat`, the state a loop carries, its exit check), over storage named by `Ref`s
rather than printed, so that each backend spells them its own way: the C backend renders
NAME_run with pointers into the caller's buffers and the workspace (codegen/library.py); a
CUDA backend would launch on device buffers, an HLS one wire a dataflow top function.
lowering/program.py builds it from a planned graph.

Storage: graph inputs are read where the app put them, outputs are written in place, weights
are named arrays, every other value lives at its planned offset in the workspace, and a view
shares the storage of the value it aliases. A control-flow node's body gets its own region of
the workspace after the enclosing arena (its state slots, then the body's own arena), so the
workspace is the largest arena plus the largest region any control node needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..ir.dtypes import DType
from ..ir.graph import Value
from .kernel import Kernel

ALIGN = 64


@dataclass(frozen=True)
class Step:
    """A slice that moves with a Repeat: `per` elements times its counter `var` (or, counting
    down, times `last - var`)."""

    var: str
    per: int
    last: int | None = None


@dataclass(frozen=True)
class Ref:
    """Where one tensor is: `space` "input" / "output" (the run's `where`-th buffer),
    "weight" (the array named `where`), "workspace" (`where` bytes into it) or "none" (an
    empty tensor); read as `dtype`; `read_only` where the run must not write; `step` when it
    moves with a Repeat's counter (a Loop's or Scan's slice)."""

    space: str
    where: int | str
    dtype: DType
    read_only: bool = False
    step: Step | None = None

    def writable(self) -> Ref:
        return replace(self, read_only=False)

    def viewed_as(self, dtype: DType) -> Ref:
        return replace(self, dtype=dtype)


@dataclass
class Launch:
    """Run `kernel` on `args` (one Ref per kernel parameter)."""

    kernel: Kernel
    args: list[Ref]


@dataclass
class Branch:
    """Run `then` if the first element of `cond` is true, else `orelse`."""

    cond: Ref
    then: list
    orelse: list


@dataclass
class Repeat:
    """Run `body` `count` times, `var` counting from 0."""

    var: str
    count: int
    body: list


@dataclass
class SetScalar:
    """Store `value` (a Repeat's counter by name, or a constant) in the first element."""

    dst: Ref
    value: str | bool | int


@dataclass
class ExitUnless:
    """Stop the run with `status` unless the first element of `cond` is true (a Loop whose
    condition turned false before its trip count: edgec compiles fixed counts only)."""

    cond: Ref
    status: str = "EDGEC_ERR_LOOP_EXIT"


@dataclass
class Program:
    """The run of one library: its `body` of ops over `inputs`, `outputs`, `weights` (the
    arrays by name) and a workspace of `workspace_bytes`; `strategies` records the kernel each
    node got (lowering.Strategy), `kernels` the names of every kernel launched."""

    name: str
    inputs: list[Value]
    outputs: list[Value]
    workspace_bytes: int
    weights: list[tuple[str, Value]]
    body: list
    strategies: list[dict] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)


def align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def walk_ops(ops: list):
    """Every op, depth first."""
    for op in ops:
        yield op
        if isinstance(op, Branch):
            yield from walk_ops(op.then)
            yield from walk_ops(op.orelse)
        elif isinstance(op, Repeat):
            yield from walk_ops(op.body)
