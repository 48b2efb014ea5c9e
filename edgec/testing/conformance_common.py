"""What the conformance suite is made of (scripts/conformance.py runs it): the ONNX node
tests and the op each exercises, the categories edgec leaves out on purpose, the tolerances
outputs are compared with, and a test's result."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnx.backend.test
from onnx import numpy_helper

NODE_DIR = Path(onnx.backend.test.__file__).parent / "data" / "node"
REGENERATE = "python scripts/conformance.py --write CONFORMANCE.md"

# Tolerances. onnx/backend/test/loader/__init__.py gives every node test rtol=1e-3 and
# atol=1e-7 (no node test ships a data.json overriding them), and Runner.assert_similar_outputs
# applies them with np.testing.assert_allclose. onnxruntime's backend test series keeps
# rtol=1e-3 and loosens atol for a few tests in onnx_backend_test_series_overrides.jsonc;
# those per-test values are taken over here (the DFT/STFT outputs sum many float32 terms).
RTOL, ATOL = 1e-3, 1e-7
ATOL_OVERRIDES = {
    "test_dft": 1e-3, "test_dft_axis": 1e-3, "test_dft_inverse": 1e-3,
    "test_dft_opset19": 1e-3, "test_dft_axis_opset19": 1e-3, "test_dft_inverse_opset19": 1e-3,
    "test_stft": 1e-4, "test_stft_with_window": 1e-4,
}
RTOL_OVERRIDES: dict[str, float] = {}

COMPILE_TIMEOUT_S = 120  # per test, import to static library
RUN_TIMEOUT_S = 120  # per runner executable (one batch of tests)
EMULATED_SLOWDOWN = 5  # run timeouts are this much longer under an emulator
BATCH = 48  # tests linked into one runner executable

# What edgec deliberately leaves out, by the element types, value kinds, domains and ops that
# mark a test as belonging there (see the "Left out" section of the report).
LEFT_OUT_DTYPES = {
    onnx.TensorProto.BFLOAT16: "bfloat16", onnx.TensorProto.STRING: "string",
    onnx.TensorProto.COMPLEX64: "complex64", onnx.TensorProto.COMPLEX128: "complex128",
}
for _name in ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT8E8M0",
              "FLOAT4E2M1"):
    if hasattr(onnx.TensorProto, _name):
        LEFT_OUT_DTYPES[getattr(onnx.TensorProto, _name)] = _name.lower()
RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
              "Multinomial", "Bernoulli"}
SEQUENCE_OPS = {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
                "SequenceInsert", "SequenceLength", "SequenceMap", "SplitToSequence",
                "ConcatFromSequence", "Optional", "OptionalGetElement", "OptionalHasElement"}
TRAINING_DOMAIN = "ai.onnx.preview.training"
# Tests whose expected outputs (made by onnx's reference implementation) onnxruntime 1.31 does
# not reproduce either; edgec gives onnxruntime's result to the bit (checked when this list
# was made). MaxUnpool: the ONNX spec says the indices are flat positions in MaxPool's input,
# i.e. in `output_shape`, as onnxruntime and torch read them; the reference places them in the
# default-sized output and pads that. Resize: downsampling with align_corners, which
# onnxruntime's own backend-test filters exclude.
FOLLOWS_ONNXRUNTIME = {"test_maxunpool_export_with_output_shape",
                       "test_resize_downsample_scales_cubic_align_corners",
                       "test_resize_downsample_scales_linear_align_corners"}



@dataclass(frozen=True)
class Platform:
    """What the tests are compiled for and how their runners execute: `emulator` is a command
    prefix (e.g. qemu-x86_64 -cpu Haswell) under which the statically linked runner runs, or
    None to run it directly."""

    target: str = "x86"
    emulator: tuple[str, ...] | None = None
    backend: str = "c"  # what compiles the kernels: "c" or "llvm"
    # built with edgec compile --sanitize, linked with the sanitizers' runtimes: a finding
    # fails its test
    sanitize: bool = False


@dataclass
class Result:
    test: str
    op: str  # the ONNX op type the test is about ("domain.Op" outside the default domain)
    expanded: bool  # the model is the op's function body (a "_expanded" test)
    status: str  # "pass", "fail" (wrong result, crash, build error) or "unsupported"
    reason: str = ""
    folded: tuple[str, ...] = ()  # graph inputs baked in as constants from the test data
    all_folded: bool = False  # every input folded: the outputs are computed at compile time
    left_out: str = ""  # the deliberately left-out category the test falls in, if any


@dataclass
class Prepared:
    """A test compiled to a static library, waiting to be linked and run."""

    result: Result
    cname: str = ""
    out_dir: str = ""
    input_bytes: list[int] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)  # manifest outputs: shape, dtype


DEFAULT_PLATFORM = Platform()


def test_names(pattern: str | None = None) -> list[str]:
    names = sorted(p.name for p in NODE_DIR.iterdir() if (p / "model.onnx").exists())
    if pattern:
        rx = re.compile(pattern)
        names = [n for n in names if rx.search(n)]
    return names


def _op_label(model: onnx.ModelProto) -> str:
    ops = sorted({(n.domain, n.op_type) for n in model.graph.node} - {("", "Constant")})
    domain, op = ops[0] if len(ops) == 1 else ("", "Constant")
    return f"{domain}.{op}" if domain not in ("", "ai.onnx") else op


def op_of(test: str) -> tuple[str, bool]:
    """The op a test exercises, and whether the test runs its expanded function body."""
    if "_expanded" in test:
        for twin in (test.replace("_expanded", ""), test[:test.index("_expanded")]):
            if (NODE_DIR / twin / "model.onnx").exists():
                return _op_label(onnx.load(NODE_DIR / twin / "model.onnx")), True
    return _op_label(onnx.load(NODE_DIR / test / "model.onnx")), "_expanded" in test


def _value_kinds(model: onnx.ModelProto) -> set[str]:
    return {vi.type.WhichOneof("value") for vi in [*model.graph.input, *model.graph.output]}


def _elem_types(model: onnx.ModelProto) -> set[int]:
    types = {vi.type.tensor_type.elem_type for vi in [*model.graph.input, *model.graph.output]
             if vi.type.WhichOneof("value") == "tensor_type"}
    types |= {t.data_type for t in model.graph.initializer}
    for g in _graphs(model.graph):
        for n in g.node:
            for a in n.attribute:
                if a.name in ("to", "output_dtype", "dtype") and a.type == a.INT:
                    types.add(a.i)
                if a.type == a.TENSOR:
                    types.add(a.t.data_type)
    return types


def _graphs(g: onnx.GraphProto) -> Iterable[onnx.GraphProto]:
    yield g
    for n in g.node:
        for a in n.attribute:
            if a.type == a.GRAPH:
                yield from _graphs(a.g)
            for sub in a.graphs:
                yield from _graphs(sub)


def left_out_category(test: str, model: onnx.ModelProto) -> str:
    """The deliberately left-out category `test` belongs to ("" if none)."""
    nodes = [n for g in _graphs(model.graph) for n in g.node]
    if any(n.domain == TRAINING_DOMAIN for n in nodes) or "training" in test:
        return "training"
    if _value_kinds(model) - {"tensor_type"} or any(n.op_type in SEQUENCE_OPS for n in nodes):
        return "sequences/optionals"
    odd = {LEFT_OUT_DTYPES[t] for t in _elem_types(model) if t in LEFT_OUT_DTYPES}
    if "string" in odd:
        return "string"
    if odd:
        return "narrow or complex dtypes"
    if any(n.op_type in RANDOM_OPS for n in nodes):
        return "random"
    if test in FOLLOWS_ONNXRUNTIME:
        return "follows onnxruntime"
    return ""


def load_tensors(folder: Path, prefix: str, count: int) -> list[np.ndarray]:
    return [_storage(numpy_helper.to_array(onnx.load_tensor(str(folder / f"{prefix}_{i}.pb"))))
            for i in range(count)]


def _storage(a: np.ndarray) -> np.ndarray:
    """ml_dtypes' sub-byte ints (int4, uint2, ...) as the int8/uint8 bytes edgec holds them in."""
    if a.dtype.name in ("int4", "int2"):
        return a.astype(np.int8)
    if a.dtype.name in ("uint4", "uint2"):
        return a.astype(np.uint8)
    return a


def _inputs_of(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _shorten(msg: str, limit: int = 110) -> str:
    msg = " ".join(msg.split())
    m = re.search(r"unsupported ONNX ops: (.*?); edgec supports", msg)
    if m:
        return "unsupported op " + re.sub(r" \(x\d+\)", "", m.group(1))
    m = re.search(r"no kernel yet for op\(s\): (.*)", msg)
    if m:
        return "no kernel for " + re.sub(r" \(x\d+\)", "", m.group(1))
    m = re.search(r"uses ONNX opset (\d+)", msg)
    if m:
        return f"opset {m.group(1)} < 11"
    m = re.search(r"ONNX element type (\d+) \((\w+)\) is not supported", msg)
    if m:
        code = int(m.group(1))
        known = code in onnx.TensorProto.DataType.values()
        return "unsupported dtype " + (onnx.TensorProto.DataType.Name(code) if known
                                       else m.group(2)).lower()
    msg = re.sub(r"node \S+ \((\w+)\): (\1's |\1: )?", r"\1: ", msg)
    m = re.search(r"^(.*?) must be a constant", msg)
    if m:
        return "non-constant input: " + m.group(1)
    msg = re.sub(r"^model '[^']*' ", "model ", msg)
    msg = re.sub(r"; edgec supports: .*", "", msg)
    msg = msg.replace("<bytes>: ", "")
    return msg if len(msg) <= limit else msg[:limit - 3].rstrip() + "..."


def tolerances(test: str) -> tuple[float, float]:
    return RTOL_OVERRIDES.get(test, RTOL), ATOL_OVERRIDES.get(test, ATOL)


def mismatch(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """None if np.testing.assert_allclose(got, want, rtol, atol) would pass, else the
    worst errors in a few words."""
    if not np.issubdtype(want.dtype, np.inexact):  # bool and ints: atol 1e-7 means equal
        bad = got != want
        return f"{int(bad.sum())} of {want.size} differ" if bad.any() else None
    g, w = got.astype(np.float64), want.astype(np.float64)
    ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if ok.all():
        return None
    fin = np.isfinite(g) & np.isfinite(w) & ~ok
    if not fin.any():
        return f"{int((~ok).sum())} of {want.size} differ in NaN/inf"
    diff = np.abs(g[fin] - w[fin])
    with np.errstate(over="ignore", divide="ignore"):
        rel = diff / np.abs(w[fin])
    return (f"max abs err {diff.max():.1e}, max rel err {rel.max():.1e} "
            f"({int((~ok).sum())} of {want.size})")


def _np_dtype(name: str) -> np.dtype:
    from edgec.ir.dtypes import DType

    return DType(name).np
