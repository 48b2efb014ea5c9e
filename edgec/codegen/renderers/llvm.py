"""The LLVM renderer: kernel IR as LLVM IR (built with llvmlite), compiled to an object file by
llvmlite's own target machine (x86-64 or aarch64), for the libraries of `--backend llvm`.

Semantics are those of the C the C renderer prints (`renderers/c.py`), built with
-fno-math-errno -ffp-contract=off: no fast-math flags, so each operation rounds once as in C;
`fma` is `llvm.fma`; integer division truncates (sdiv/udiv, srem/urem); comparisons are
ordered except `!=`; `&&`, `||` and a scalar `?:` evaluate an operand that may fault (a load, an
integer division) only when C would; a vector max/min is `a > b ? a : b` as maxps computes it
and a scalar one is fmaxf (`llvm.maxnum`); `hreduce` folds halves in the order of the C
helpers; bool is i1 in registers and a byte in memory; INDEX is i64. Vectors are `<N x T>`, a
masked tail is `llvm.masked.load/store` (no access past `count`). Buffer parameters are
`noalias` (C's restrict). A top-level parallel loop is outlined, as in C, into a task over
(ctx, first, end) handed to the library's thread pool through the C glue's trampoline.
"""

from __future__ import annotations

from collections.abc import Sequence

import llvmlite.binding as llvm
import llvmlite.ir as ir

from ...errors import ToolchainError
from ...ir.dtypes import DType
from ...kernel_ir import mathlib
from ...kernel_ir.kernel import (
    Buffer,
    Kernel,
    Loop,
    LoopKind,
)
from ...kernel_ir.passes import ParallelFor, outline_parallel, split_barriers
from ...targets.target import Target
from .c import CRenderer
from .c_isas import VectorISA
from .llvm_functions import (
    I8,
    I64,
    PTR,
    VOID,
    _field,
    _FunctionBuilder,
    _mangle,
    _ParallelFor,
    _param_type,
)

_INITIALISED = False


def _initialise() -> None:
    global _INITIALISED
    if not _INITIALISED:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _INITIALISED = True


def target_machine(target: Target) -> llvm.TargetMachine:
    """llvmlite's target machine for `target` (position-independent code, -O3)."""
    _initialise()
    cpu, features = target.llvm_cpu, target.llvm_features
    if cpu == "host":  # what -march=native picks
        cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    try:
        t = llvm.Target.from_triple(target.llvm_triple)
    except RuntimeError as e:
        raise ToolchainError(f"LLVM cannot build for {target.llvm_triple}: {e}") from None
    return t.create_target_machine(cpu=cpu, features=features, opt=3, reloc="pic",
                                   codemodel="default")


class LLVMRenderer:
    """Collects kernels into one LLVM module and compiles it to an object file. Kernels added
    with `add` are external functions of the object (named as given, so the caller prefixes
    them with the library name); the micro-kernels they call are internal to it."""

    def __init__(self, target: Target, pool: str = "edgec_parallel_for"):
        self.target = target
        self.module = ir.Module(name="edgec_kernels")
        self._kernels: list[Kernel] = []
        self._functions: dict[str, ir.Function] = {}
        self._pool_name = pool
        self._pool: ir.Function | None = None

    def add(self, k: Kernel) -> None:
        if k.name not in {x.name for x in self._kernels}:
            self._kernels.append(k)

    @property
    def pool(self) -> ir.Function:
        """The trampoline into the library's thread pool: pool(task, ctx, n)."""
        if self._pool is None:
            self._pool = self.declare(self._pool_name, VOID, [PTR, PTR, I64])
        return self._pool

    def declare(self, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, list(args)), name)
        return fn

    def intrinsic(self, name: str, t: ir.Type) -> ir.Function:
        n = {"fma": 3, "pow": 2, "maxnum": 2, "minnum": 2}.get(name, 1)
        return self.declare(f"llvm.{name}.{_mangle(t)}", t, [t] * n)

    def math_function(self, name: str, t: ir.Type) -> ir.Function:
        """mathlib's float32 function `name` ("exp", "tanh") for float or float-vector type
        `t` (suffixed _vN for N lanes): the kernel IR's definition, operation for operation
        (so that C and LLVM libraries agree bit for bit), in an internal function inlined
        where it is called, so that loops over it vectorize. Built on first use."""
        lanes = t.count if isinstance(t, ir.VectorType) else 1
        mf = mathlib.FUNCTIONS[name](lanes)
        fname = mf.name + (f"_v{lanes}" if lanes > 1 else "")
        fn = self.module.globals.get(fname)
        if fn is not None:
            return fn
        fn = ir.Function(self.module, ir.FunctionType(t, [t]), fname)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        fb = _FunctionBuilder(self, fn, {"x": fn.args[0]})
        fb.stmts(list(mf.body))
        fb.b.ret(fb.expr(mf.result))
        return fn

    def function(self, k: Kernel) -> ir.Function:
        """The LLVM function of kernel `k`, built on first use. An AVX2 library has no
        run-time dispatch to AVX-VNNI here (the C renderer's `dispatched`), so a kernel with
        a `fallback` for CPUs without it is that fallback."""
        if k.name in self._functions:
            return self._functions[k.name]
        if k.fallback is not None and self.target.isa == "avx2":
            k = k.fallback
        fn = ir.Function(self.module, ir.FunctionType(VOID, [_param_type(p) for p in k.params]),
                         k.name)
        self._functions[k.name] = fn
        fn.attributes.add("nounwind")
        if k.outlined:
            fn.attributes.add("noinline")
        env = self._bind(fn, k.params)
        k = split_barriers(k)  # a block with barriers runs phase by phase, as in C
        body = self._outline(k) if any(isinstance(s, Loop) and s.kind is LoopKind.PARALLEL
                                       for s in k.body) else k.body
        fb = _FunctionBuilder(self, fn, env)
        fb.stmts(body)
        fb.b.ret_void()
        return fn

    def _bind(self, fn: ir.Function, params: list) -> dict:
        env = {}
        for p, arg in zip(params, fn.args):
            arg.name = p.name
            if isinstance(p, Buffer):  # restrict, as in C
                arg.add_attribute("noalias")
            elif p.dtype is DType.BOOL:
                arg.add_attribute("zeroext")
            env[p.name] = arg
        return env

    def _outline(self, k: Kernel) -> list:
        """Each task of `k`'s parallel loops (`outline_parallel`) becomes task(ctx, first,
        end), which unpacks the context and calls the loop's body over [first, end) with
        noalias parameters."""
        ctx_type = ir.LiteralStructType([_param_type(p) for p in k.params] or [I8])
        tasks, body = outline_parallel(k)
        fns = {}
        for t in tasks:
            inner = ir.Function(self.module, ir.FunctionType(
                VOID, [_param_type(p) for p in k.params] + [I64, I64]),
                t.name.replace("_task", "_slice"))
            inner.linkage = "internal"
            inner.attributes.add("alwaysinline")
            inner.attributes.add("nounwind")
            env = self._bind(inner, k.params)
            fb = _FunctionBuilder(self, inner, env)
            first, end = inner.args[-2:]
            fb.loop(t.loop.var, end, t.loop.body, LoopKind.SERIAL, start=first)
            fb.b.ret_void()

            task = ir.Function(self.module, ir.FunctionType(VOID, [PTR, I64, I64]), t.name)
            task.linkage = "internal"
            task.attributes.add("nounwind")
            tb = ir.IRBuilder(task.append_basic_block("entry"))
            ctx = task.args[0]
            fields = [tb.load(_field(tb, ctx, ctx_type, i), typ=_param_type(p))
                      for i, p in enumerate(k.params)]
            tb.call(inner, fields + [task.args[1], task.args[2]])
            tb.ret_void()
            fns[t.name] = task
        return [_ParallelFor(fns[s.task.name], ctx_type, s.extent)
                if isinstance(s, ParallelFor) else s for s in body]

    def ir_text(self) -> str:
        """The module's LLVM IR before optimisation."""
        for k in self._kernels:
            self.function(k)
        return str(self.module)

    def compile(self, hidden: bool = True) -> bytes:
        """The object file of every kernel added (optimised at -O3 for the target); with
        `hidden` the kernels are not exported from a shared object that links it."""
        text = self.ir_text()
        callees = {c.name for k in self._kernels for c in k.callees()}
        tm = target_machine(self.target)
        try:
            mod = llvm.parse_assembly(text)
            mod.verify()
        except RuntimeError as e:
            raise ToolchainError(f"LLVM rejected the generated IR: {e}") from None
        mod.triple = self.target.llvm_triple
        mod.data_layout = str(tm.target_data)
        for k in self._kernels:
            fn = mod.get_function(k.name)
            if k.name in callees:  # a micro-kernel: private to the object, like C's static
                fn.linkage = "internal"
            elif hidden:  # called by the C glue of this library only
                fn.visibility = "hidden"
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_unrolling = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return tm.emit_object(mod)



class KernelDeclarations(CRenderer):
    """The C renderer of an LLVM-built library's glue: each kernel is an extern declaration in
    NAME.c, its body goes to the LLVM module of `backend`."""

    function_prefix = "void"

    def __init__(self, isa: VectorISA | None, backend: LLVMRenderer):
        super().__init__(isa)
        self.backend = backend

    def kernel(self, k: Kernel) -> str:
        self.backend.add(k)
        return self.signature(k) + ";"
