"""Passes, their registry, pipeline strings and the PassManager that runs them with
instrumentation (IR printing, verification, timing, numerics checks against the interpreter).

A pass is a small frozen dataclass whose fields are its options, with a `name` and
`run(graph) -> bool` (edits in place, returns whether anything changed); or a plain function
`fn(graph, *, option: type = default) -> bool`. Both are registered with `@register_pass(name)`
and named in a pipeline string: `fold-constants,fuse{fixpoint},prune{sparsity=0.9,pattern=4x1}`.
Registration also declares what the pass requires, writes and invalidates of the compile
record (contracts.py); the manager refuses a pipeline that breaks a requirement.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import time
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np

from ..errors import EdgecError, PassError
from ..ir import Graph, interpret, parse, print_graph, verify
from .contracts import DEFAULT_CONTRACT, PassContract, check_contracts, make_contract

# -- the pass contract --------------------------------------------------------------------


class Pass(Protocol):
    """What the PassManager needs: a name and an in-place `run` saying whether it changed
    the graph. Options are dataclass fields."""

    name: str

    def run(self, graph: Graph) -> bool: ...


@dataclass(frozen=True)
class PassInfo:
    """A registered pass: its factory (called with the options as keywords), the options
    (name -> (type, default)), a one-line description and its contract with the compile
    record."""

    name: str
    factory: Callable[..., Pass]
    options: dict[str, tuple[Any, Any]]
    doc: str
    contract: PassContract = DEFAULT_CONTRACT


_PASSES: dict[str, PassInfo] = {}

# where a pipeline holds both, each pass on the right runs before the one on the left, whose
# input it makes: dequantize-weights folds the weights' DequantizeLinear that quantize wrote
# and fuse-qdq left, pack-weights packs the blocked convolutions layout-nchwc made, fixed-point
# requantizes the packed and blocked ones, fuse-residual fuses residual adds into those
# kernels, and plan-memory places the values of the graph as the passes left it
RUNS_AFTER: dict[str, tuple[str, ...]] = {
    "dequantize-weights": ("quantize", "fuse-qdq"),
    "pack-weights": ("layout-nchwc",),
    "fixed-point": ("quantize", "fuse-qdq", "layout-nchwc", "pack-weights"),
    "fuse-residual": ("layout-nchwc", "pack-weights", "fixed-point"),
    "plan-memory": ("quantize", "fuse-qdq", "dequantize-weights", "fuse", "sparsify",
                    "reorder", "layout-nchwc", "pack-weights", "fixed-point", "fuse-residual"),
}


def check_order(steps: Sequence[PipelineStep]) -> None:
    """Raise PassError where a pass runs before one that RUNS_AFTER says must come first."""
    names = [s.pass_.name for s in steps]
    for i, name in enumerate(names):
        late = next((n for n in names[i + 1:] if n in RUNS_AFTER.get(name, ())), None)
        if late is not None:
            raise PassError(f"pipeline {','.join(names)}: {name} runs before {late}, which "
                            f"makes what {name} reads; put {late} before {name}")


def _options_of(cls) -> dict[str, tuple[Any, Any]]:
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.metadata.get("option") is False:
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        out[f.name] = (hints.get(f.name, str), default)
    return out


def _first_line(doc: str | None) -> str:
    return (inspect.cleandoc(doc).splitlines() or [""])[0] if doc else ""


def _pass_from_function(name: str, fn: Callable[..., bool]) -> type:
    """A frozen dataclass whose fields are the keyword-only parameters of `fn`."""
    hints = typing.get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())
    if not params or params[0].kind not in (params[0].POSITIONAL_ONLY,
                                            params[0].POSITIONAL_OR_KEYWORD):
        raise PassError(f"pass function {fn.__name__} must take the graph as first argument")
    fields = []
    for p in params[1:]:
        if p.default is p.empty:
            raise PassError(f"pass function {fn.__name__}: option '{p.name}' needs a default")
        fields.append((p.name, hints.get(p.name, type(p.default)), field(default=p.default)))

    def run(self, graph: Graph) -> bool:
        opts = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return bool(fn(graph, **opts))

    cls = dataclasses.make_dataclass(
        "".join(w.capitalize() for w in re.split(r"[-_]", name)) + "Pass", fields,
        namespace={"run": run, "name": name, "__doc__": fn.__doc__}, frozen=True)
    cls.__module__ = fn.__module__
    return cls


def register_pass(name: str | Pass, *, requires: Sequence[str] = (), writes: Sequence[str] = (),
                  invalidates: Sequence[str] | None = None) -> Callable:
    """Register a pass class (made a frozen dataclass if it is not one), a pass function, or
    a ready pass instance (such as a `PatternPass`) under `name`; returns it unchanged.
    `register_pass(instance)` registers an instance under its own name. `requires`, `writes`
    and `invalidates` name fields of the compile record (ir/records.py; contracts.py says
    what None, the default, invalidates)."""
    if not isinstance(name, str):
        return register_pass(getattr(name, "name", ""), requires=requires, writes=writes,
                             invalidates=invalidates)(name)
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise PassError(f"pass name {name!r} must be lower-case words joined by '-'")
    contract = make_contract(requires, writes, invalidates)

    def deco(obj):
        if name in _PASSES:
            raise PassError(f"a pass named '{name}' is already registered")
        if inspect.isclass(obj):
            cls = obj if dataclasses.is_dataclass(obj) else dataclass(frozen=True)(obj)
            cls.name = name
            info = PassInfo(name, cls, _options_of(cls), _first_line(cls.__doc__))
        elif dataclasses.is_dataclass(obj):  # an instance: options are its option fields
            inst = obj
            if getattr(inst, "name", name) != name:
                raise PassError(f"pass instance named '{inst.name}' registered as '{name}'")
            doc = getattr(inst, "doc", "") or type(inst).__doc__
            info = PassInfo(name, lambda **kw: dataclasses.replace(inst, **kw),
                            _options_of(type(inst)), _first_line(doc))
        elif callable(obj):
            cls = _pass_from_function(name, obj)
            info = PassInfo(name, cls, _options_of(cls), _first_line(obj.__doc__))
        else:
            raise PassError(f"register_pass('{name}') needs a class, function or pass instance")
        _PASSES[name] = dataclasses.replace(info, contract=contract)
        return obj

    return deco


def contract_of(p: Pass) -> PassContract:
    """The contract `p` was registered with; an unregistered pass may carry a `contract`
    attribute, else it has the default one."""
    info = _PASSES.get(p.name)
    return info.contract if info is not None else getattr(p, "contract", DEFAULT_CONTRACT)


def registered_passes() -> dict[str, PassInfo]:
    """Every registered pass by name: the built-in ones, those of the installed packages'
    `edgec.passes` entry points, and those of modules loaded with `load_passes`."""
    _load_builtin_passes()
    _load_entry_points()
    return dict(_PASSES)


def _load_builtin_passes() -> None:
    from .. import passes  # noqa: F401  (importing the package registers the built-ins)


ENTRY_POINT_GROUP = "edgec.passes"
_entry_points_loaded = False


def _load_entry_points() -> None:
    """Import what each `edgec.passes` entry point names, once: a module that registers its
    passes, or a pass (class, function or instance) to register under its entry point's
    name."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as e:  # a third party's module: anything can go wrong in it
            raise PassError(f"the '{ep.name}' entry point of group {ENTRY_POINT_GROUP} "
                            f"({ep.value}) failed to load: {type(e).__name__}: {e}") from None
        if not inspect.ismodule(obj) and ep.name not in _PASSES:
            register_pass(ep.name)(obj)


def load_passes(path: str | Path) -> list[str]:
    """Import the Python file at `path` (once per file), which registers passes with
    `register_pass`; the names of the passes it registered. Raises PassError naming the file
    when it is missing or fails to import."""
    import hashlib
    import importlib.util

    file = Path(path).resolve()
    if not file.is_file():
        raise PassError(f"--load {path}: no such file (a Python module that registers passes)")
    module = "edgec_user_passes_" + hashlib.sha1(str(file).encode()).hexdigest()[:12]
    if module in sys.modules:
        return _ORIGIN_NAMES.get(module, [])
    _load_builtin_passes()
    before = set(_PASSES)
    spec = importlib.util.spec_from_file_location(module, file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    try:
        spec.loader.exec_module(mod)
    except PassError as e:
        del sys.modules[module]
        raise PassError(f"--load {path}: {e}") from None
    except Exception as e:  # the user's code: report it as theirs, with where it failed
        del sys.modules[module]
        raise PassError(f"--load {path} failed: {type(e).__name__}: {e}") from None
    names = sorted(set(_PASSES) - before)
    for name in names:
        _LOADED_FROM[name] = file.name
    _ORIGIN_NAMES[module] = names
    return names


_LOADED_FROM: dict[str, str] = {}  # pass -> the file --load took it from
_ORIGIN_NAMES: dict[str, list[str]] = {}


def _pass_list(passes: dict[str, PassInfo]) -> str:
    """The registered passes for an error message: built-in, then the others with where
    they came from."""
    builtin = sorted(n for n in passes if n in _BUILTIN)
    others = sorted(n for n in passes if n not in builtin)
    text = ", ".join(builtin)
    if others:
        text += "; loaded: " + ", ".join(
            f"{n} (from {_LOADED_FROM[n]})" if n in _LOADED_FROM else n for n in others)
    return text


_BUILTIN: frozenset[str] = frozenset()


def mark_builtin() -> None:
    """Called once the package has registered its own passes (edgec/passes/__init__.py)."""
    global _BUILTIN
    _BUILTIN = frozenset(_PASSES)


def _convert(value: str, ty, where: str):
    if ty is bool:
        low = value.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise PassError(f"{where}: expected true or false, got {value!r}")
    if ty in (int, float, str):
        try:
            return ty(value)
        except ValueError:
            raise PassError(f"{where}: expected {ty.__name__}, got {value!r}") from None
    raise PassError(f"{where}: an option of type {ty} cannot be set from a pipeline string")


def make_pass(name: str, **options: Any) -> Pass:
    """An instance of the registered pass `name`; string option values are converted."""
    passes = registered_passes()
    if name not in passes:
        raise PassError(f"unknown pass '{name}'; registered passes: {_pass_list(passes)} "
                        "(a pass of your own: --load FILE.py, or an installed package's "
                        f"'{ENTRY_POINT_GROUP}' entry point)")
    info = passes[name]
    kw = {}
    for key, value in options.items():
        if key not in info.options:
            valid = ", ".join(sorted(info.options)) or "none"
            raise PassError(f"pass '{name}' has no option '{key}'; its options: {valid}")
        ty = info.options[key][0]
        kw[key] = _convert(value, ty, f"option '{key}' of pass '{name}'") \
            if isinstance(value, str) and ty is not str else value
    return info.factory(**kw)


def pass_spec(p: Pass) -> str:
    """The pipeline-string spelling of a pass instance: its name and non-default options."""
    if not dataclasses.is_dataclass(p):
        return p.name
    info = _PASSES.get(p.name)
    opts = info.options if info else _options_of(type(p))
    shown = [f"{k}={_fmt_option(getattr(p, k))}" for k, (_, d) in opts.items()
             if getattr(p, k) != d]
    return p.name + ("{" + ",".join(shown) + "}" if shown else "")


def _fmt_option(v) -> str:
    text = str(v).lower() if isinstance(v, bool) else str(v)
    return f'"{text}"' if text == "" or re.search(r'[\s{},="]', text) else text


# -- pipeline strings ---------------------------------------------------------------------


@dataclass(frozen=True)
class PipelineStep:
    """One pipeline entry: a pass, and whether it repeats until it stops changing the graph."""

    pass_: Pass
    fixpoint: bool = False

    def __str__(self) -> str:
        spec = pass_spec(self.pass_)
        if not self.fixpoint:
            return spec
        return spec[:-1] + ",fixpoint}" if spec.endswith("}") else spec + "{fixpoint}"


_PIPE_TOKEN = re.compile(r'\s*(?:(?P<punct>[{},=])|"(?P<quoted>[^"]*)"|(?P<word>[^\s{},="]+))')


def parse_pipeline(text: str) -> list[PipelineStep]:
    """Parse `name{key=value,flag},name,...` into steps. `{fixpoint}` repeats a pass until
    it reports no change; a bare `{flag}` sets a boolean option to true."""
    toks: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _PIPE_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise PassError(f"pipeline {text!r}: unexpected {text[pos:]!r}")
        kind = m.lastgroup
        toks.append((kind, m.group(kind)))
        pos = m.end()
    steps: list[PipelineStep] = []
    i = 0

    def want(what: str) -> str:
        nonlocal i
        if i >= len(toks) or (toks[i][0] == "punct") != (what in "{},="):
            found = repr(toks[i][1]) if i < len(toks) else "the end"
            raise PassError(f"pipeline {text!r}: expected {what!r}, found {found}")
        if what in "{},=" and toks[i][1] != what:
            raise PassError(f"pipeline {text!r}: expected {what!r}, found {toks[i][1]!r}")
        i += 1
        return toks[i - 1][1]

    while i < len(toks):
        name = want("a pass name")
        opts: dict[str, str] = {}
        fixpoint = False
        if i < len(toks) and toks[i] == ("punct", "{"):
            i += 1
            while toks[i:i + 1] != [("punct", "}")]:
                key = want("an option name")
                if i < len(toks) and toks[i] == ("punct", "="):
                    i += 1
                    value = want("an option value")
                else:
                    value = "true"
                if key == "fixpoint":
                    fixpoint = _convert(value, bool, f"'fixpoint' of pass '{name}'")
                elif key in opts:
                    raise PassError(f"pipeline {text!r}: option '{key}' of '{name}' given twice")
                else:
                    opts[key] = value
                if toks[i:i + 1] != [("punct", "}")]:
                    want(",")
            want("}")
        steps.append(PipelineStep(make_pass(name, **opts), fixpoint))
        if i < len(toks):
            want(",")
            if i == len(toks):
                raise PassError(f"pipeline {text!r} ends with a comma")
    return steps


# -- reports ------------------------------------------------------------------------------


@dataclass
class PassRecord:
    """What one pipeline step did: changed or not, how often it ran, how long it took, and
    the largest relative drift of any output (when numerics are checked)."""

    spec: str
    changed: bool
    seconds: float
    iterations: int = 1
    drift: float | None = None


@dataclass
class PipelineReport:
    records: list[PassRecord] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.records)

    @property
    def total_seconds(self) -> float:
        return sum(r.seconds for r in self.records)

    def timing_table(self) -> str:
        """The passes in pipeline order with their time, share of the total, runs (more than
        one under {fixpoint}) and whether they changed the graph."""
        total = self.total_seconds or 1e-12
        width = max([len("pass")] + [len(r.spec) for r in self.records])
        lines = [f"{'pass':<{width}}  {'ms':>9}  {'share':>6}  runs  changed",
                 "-" * (width + 34)]
        for r in self.records:
            lines.append(f"{r.spec:<{width}}  {r.seconds * 1e3:9.2f}  "
                         f"{100 * r.seconds / total:5.1f}%  {r.iterations:4d}  "
                         f"{'yes' if r.changed else 'no'}")
        lines.append("-" * (width + 34))
        lines.append(f"{'total':<{width}}  {self.total_seconds * 1e3:9.2f}  100.0%")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.timing_table()


# -- numerics -----------------------------------------------------------------------------


def sample_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random feeds: floats standard normal, integers in [0, 4), booleans fair coins."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for v in graph.inputs:
        dt = v.dtype.np
        if v.dtype.is_float:
            feeds[v.name] = rng.standard_normal(v.shape).astype(dt)
        elif dt == np.bool_:
            feeds[v.name] = rng.integers(0, 2, v.shape).astype(dt)
        else:
            feeds[v.name] = rng.integers(0, 4, v.shape).astype(dt)
    return feeds


def output_drift(got: np.ndarray, want: np.ndarray) -> float:
    """max|a - b| / max|b| for floats (absolute when b is all zero), 0 or inf otherwise."""
    if got.shape != want.shape:
        return float("inf")
    if not np.issubdtype(want.dtype, np.floating):
        return 0.0 if np.array_equal(got, want) else float("inf")
    a, b = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return float("inf")
    ok = ~np.isnan(b)
    a, b = a[ok], b[ok]
    if a.size == 0:
        return 0.0
    same_inf = np.isinf(b) & (a == b)
    err = np.abs(np.where(same_inf, 0.0, a - b)).max()
    finite = b[np.isfinite(b)]
    scale = np.abs(finite).max() if finite.size else 0.0
    return float(err / scale) if scale > 0 else float(err)


# -- the manager --------------------------------------------------------------------------


class PassManager:
    """Runs pipeline steps in order with optional instrumentation.

    verify_each: `verify` the graph and check that its text form round-trips after each pass.
    print_ir_after_all: print the IR after each pass to `out`.
    check_numerics: run the interpreter on seeded random inputs before the pipeline and after
        each pass; the first pass whose outputs drift past `tolerance` raises PassError.
    timing: print the timing table to `out` at the end (times are always in the report).
    needs: compile-record field -> the stage that reads it after the pipeline ("memory_plan":
        "code generation"); `run` refuses a pipeline that leaves one unwritten or stale.
    """

    def __init__(self, pipeline: str | Sequence[Pass | PipelineStep], *,
                 verify_each: bool = False, print_ir_after_all: bool = False,
                 check_numerics: bool = False, timing: bool = False,
                 out: TextIO | None = None, max_iterations: int = 32, seed: int = 0,
                 tolerance: float = 1e-4, needs: dict[str, str] | None = None):
        if isinstance(pipeline, str):
            self.steps = parse_pipeline(pipeline)
        else:
            self.steps = [s if isinstance(s, PipelineStep) else PipelineStep(s)
                          for s in pipeline]
        check_order(self.steps)
        self.verify_each = verify_each
        self.print_ir_after_all = print_ir_after_all
        self.check_numerics = check_numerics
        self.timing = timing
        self.out = out
        self.max_iterations = max_iterations
        self.seed = seed
        self.tolerance = tolerance
        self.needs = dict(needs or {})

    def __str__(self) -> str:
        return ",".join(str(s) for s in self.steps)

    def run(self, graph: Graph) -> PipelineReport:
        out = self.out if self.out is not None else sys.stderr
        contracts = [(s.pass_.name, contract_of(s.pass_)) for s in self.steps]
        check_contracts(contracts, graph.record.held(), self.needs)
        report = PipelineReport()
        self._verified_text: str | None = None
        if self.verify_each:
            self._verify(graph, None)
        feeds = reference = None
        if self.check_numerics:
            feeds = sample_inputs(graph, self.seed)
            try:
                reference = [interpret(graph, feeds)[v.name] for v in graph.outputs]
            except EdgecError as e:
                raise PassError(f"check-numerics: the input graph cannot be interpreted on "
                                f"random inputs (floats normal, integers in [0, 4)): {e}") from e
            names = [v.name for v in graph.outputs]
        for step, (_, contract) in zip(self.steps, contracts, strict=True):
            spec = str(step)
            changed, iterations, t0 = False, 0, time.perf_counter()
            while True:
                iterations += 1
                try:
                    did = bool(step.pass_.run(graph))
                except Exception as e:  # name the pass; the cause stays chained
                    what = str(e) if isinstance(e, EdgecError) else f"{type(e).__name__}: {e}"
                    raise PassError(f"pass '{spec}' failed: {what}") from e
                changed |= did
                if not (step.fixpoint and did):
                    break
                if iterations >= self.max_iterations:
                    raise PassError(f"pass '{spec}' still changes the graph after "
                                    f"{iterations} iterations; it does not reach a fixed point")
            record = PassRecord(spec, changed, time.perf_counter() - t0, iterations)
            report.records.append(record)
            if changed:  # what the pass says its edits make stale
                graph.record.forget(contract.invalidates)
            if self.print_ir_after_all:
                state = "changed" if changed else "unchanged"
                print(f"// ----- IR after {spec} ({state}) ----- //", file=out)
                print(print_graph(graph, elide=True), file=out)
            if self.verify_each:
                self._verify(graph, spec)
            if self.check_numerics:
                record.drift = self._check(graph, spec, feeds, reference, names)
        if self.timing:
            print(report.timing_table(), file=out)
        return report

    def _verify(self, graph: Graph, spec: str | None) -> None:
        where = f"after pass '{spec}'" if spec else "before the pipeline (input graph)"
        try:
            verify(graph)
            text = print_graph(graph)
            if text == self._verified_text:  # unchanged since it last read back: skip parsing
                return
            again = print_graph(parse(text))
        except EdgecError as e:
            raise PassError(f"pass verification failed {where}: {e}") from e
        self._verified_text = again
        if again != text:
            line = next(i for i, (a, b) in enumerate(
                zip(text.splitlines() + [""], again.splitlines() + [""], strict=False)) if a != b)
            raise PassError(f"pass verification failed {where}: the text IR does not "
                            f"round-trip (line {line + 1}: {text.splitlines()[line:line + 1]} "
                            f"reads back as {again.splitlines()[line:line + 1]})")

    def _check(self, graph: Graph, spec: str, feeds, reference, names) -> float:
        if len(graph.outputs) != len(reference):
            raise PassError(f"check-numerics: pass '{spec}' changed the number of graph outputs "
                            f"from {len(reference)} to {len(graph.outputs)}")
        try:
            got = interpret(graph, feeds)
        except EdgecError as e:
            raise PassError(f"check-numerics: the graph after pass '{spec}' cannot be "
                            f"interpreted: {e}") from e
        worst = 0.0
        for v, want, name in zip(graph.outputs, reference, names, strict=True):
            a = got[v.name]
            err = output_drift(np.asarray(a), want)
            if a.dtype != want.dtype:
                err = float("inf")
            if err > self.tolerance:
                raise PassError(
                    f"check-numerics: pass '{spec}' changed output '{name}' "
                    f"({want.dtype}{list(want.shape)} -> {a.dtype}{list(a.shape)}): relative "
                    f"error {err:.3g} exceeds {self.tolerance:g}")
            worst = max(worst, err)
        return worst


def run_pipeline(graph: Graph, pipeline: str | Sequence[Pass | PipelineStep], *,
                 verify_each: bool = False, print_ir_after_all: bool = False,
                 check_numerics: bool = False, timing: bool = False,
                 out: TextIO | None = None, **options: Any) -> PipelineReport:
    """Run a pipeline (a string such as `"fold-constants,fuse"` or a list of passes) on
    `graph` in place; see `PassManager` for the instrumentation flags."""
    return PassManager(pipeline, verify_each=verify_each, print_ir_after_all=print_ir_after_all,
                       check_numerics=check_numerics, timing=timing, out=out,
                       **options).run(graph)

