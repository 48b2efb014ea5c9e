"""The program IR and its kernels as text (`edgec compile --emit-kernels`): what a user reads
to see how each node was lowered, as TVM's users read TIR.

    program mlp: workspace 3072 bytes, 6 weight arrays
      launch k0_fc1_Gemm(in0 f32, w fc1_W f32, ws+0 f32 rw)
      ...
    kernel k0_fc1_Gemm(...) { ... }     (kernel_printer.print_kernel, each kernel once,
    kernel mk_gemm_...(...) { ... }      then each micro-kernel once)
"""

from __future__ import annotations

from .printer import print_kernel, type_name
from .program import Branch, ExitUnless, Launch, Program, Ref, Repeat, SetScalar


def _ref(r: Ref) -> str:
    where = {"input": f"in{r.where}", "output": f"out{r.where}", "weight": f"w {r.where}",
             "workspace": f"ws+{r.where}", "none": "none"}.get(r.space, f"{r.space} {r.where}")
    step = ""
    if r.step is not None:
        step = f" step {r.step.per}*{r.step.var}" if r.step.last is None else \
            f" step {r.step.per}*({r.step.last}-{r.step.var})"
    return f"{where} {type_name(r.dtype)}{'' if r.read_only else ' rw'}{step}"


def _ops(ops: list, ind: str) -> list[str]:
    out: list[str] = []
    for op in ops:
        if isinstance(op, Launch):
            out.append(f"{ind}launch {op.kernel.name}({', '.join(map(_ref, op.args))})")
        elif isinstance(op, Repeat):
            out += [f"{ind}repeat {op.var} in 0..{op.count} {{", *_ops(op.body, ind + "  "),
                    f"{ind}}}"]
        elif isinstance(op, Branch):
            out += [f"{ind}if {_ref(op.cond)} {{", *_ops(op.then, ind + "  ")]
            if op.orelse:
                out += [f"{ind}}} else {{", *_ops(op.orelse, ind + "  ")]
            out.append(f"{ind}}}")
        elif isinstance(op, SetScalar):
            value = str(op.value).lower() if isinstance(op.value, bool) else op.value
            out.append(f"{ind}set {_ref(op.dst)} = {value}")
        elif isinstance(op, ExitUnless):
            out.append(f"{ind}exit {op.status} unless {_ref(op.cond)}")
        else:
            raise ValueError(f"program printer: unknown op {type(op).__name__}")
    return out


def launched(ops: list) -> list:
    """The kernels `ops` launch, each once, in the order of their first launch."""
    seen: dict[str, object] = {}
    for op in ops:
        if isinstance(op, Launch):
            seen.setdefault(op.kernel.name, op.kernel)
        for body in (getattr(op, "body", None), getattr(op, "then", None),
                     getattr(op, "orelse", None)):
            for k in launched(body or []):
                seen.setdefault(k.name, k)
    return list(seen.values())


def print_program(prog: Program) -> str:
    """`prog`'s steps, then each kernel it launches, then each micro-kernel they call (each
    once)."""
    head = (f"program {prog.name}: workspace {prog.workspace_bytes} bytes, "
            f"{len(prog.weights)} weight arrays, inputs "
            f"{', '.join(f'{v.name} {v.type}' for v in prog.inputs)}")
    kernels = launched(prog.body)
    callees = {c.name: c for k in kernels for c in k.callees()}
    parts = ["\n".join([head, *_ops(prog.body, "  ")])]
    parts += [print_kernel(k, callees=False).rstrip("\n") for k in kernels]
    parts += [print_kernel(c, callees=False).rstrip("\n") for c in callees.values()]
    return "\n\n".join(parts) + "\n"
