"""Sanitizer-clean artifacts: `edgec compile --sanitize` builds the library with
AddressSanitizer and UndefinedBehaviorSanitizer. The benchmark models (float, and one int8)
and a sample of the ONNX node tests run so, clean and right; a finding (a write past an
output, by C or by a masked vector store; a read past a weight array; a signed overflow) is
raised as an error that names it and the kernel; a sanitized build is refused where it
cannot run; the package files link an app with the sanitizers; and the
out-of-range indices of every op that reads indices give what the documented rule says:
j = clamp(i < 0 ? i + n : i, 0, n - 1), i + n only where ONNX lets indices count from the end
(README "What it compiles", ir/ops/tensor.py), worked out here with numpy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from convnets import rowwise
from harness import conformance_results, rel_error, runs_here

import edgec
from edgec import zoo
from edgec.codegen.renderers.c import CRenderer
from edgec.codegen.renderers.c_isas import VECTOR_ISAS, sanitized
from edgec.codegen.toolchain import SANITIZE_CFLAGS, archive, compile_objects
from edgec.compiler.bench import bench
from edgec.compiler.cli import main as cli
from edgec.compiler.driver import compile_graph
from edgec.errors import EdgecError
from edgec.ir import DType, Graph, TensorType, interpret
from edgec.runtime.emulated import EmulatedModel, sanitizer_env
from edgec.targets.target import get_target
from edgec.testing import conformance

ROOT = Path(__file__).resolve().parents[2]
F32, I64 = DType.F32, DType.I64
# benchmarks/bench_models.py's models
BENCHMARK_MODELS = ("mlp", "resnet18", "mobilenet_v2")
# the ONNX node tests of the ops that read indices (all of them, a few of the losses')
INDEX_TESTS = r"^test_(gather|scatter|onehot|tensorscatter|maxunpool|roialign|nllloss_NCd1d2)"


def _feeds(model, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
            .astype(np.float32) for i in model.graph.input}


@pytest.mark.parametrize("name, target, compress", [
    *((name, "x86", False) for name in BENCHMARK_MODELS),
    ("mobilenet_v2", "x86-avx2", False),  # the AVX2 kernels (and AVX-VNNI's, where it has it)
    ("mlp", "c-generic", True),  # portable C, the weights Huffman coded
])
@pytest.mark.slow
def test_benchmark_models_run_clean(name, target, compress, tmp_path):
    if not runs_here(target):
        pytest.skip(f"this CPU does not run {target}")
    model = zoo.MODELS[name]()
    art = edgec.compile(model, tmp_path / name, name=name, target=target, compress=compress,
                        sanitize=True)
    m = art.manifest
    assert m["sanitize"] and "-fsanitize=address,undefined" in m["cflags"]
    assert m["link_flags"][0] == "-fsanitize=address,undefined"
    loaded = edgec.load(art.out_dir)
    assert isinstance(loaded, EmulatedModel)  # Python cannot load it: it runs as a program
    feeds = _feeds(model)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    for threads in (1, 2):
        loaded.set_num_threads(threads)
        got = loaded.run(feeds)
        assert rel_error(got["output"], want[0]) < 1e-4, threads


def test_row_tasks_run_clean(tmp_path):
    """Elementwise, row-wise and reduction kernels split into row tasks with a remainder
    (convnets.rowwise, the thread pool tests' model), at 1 and 2 threads."""
    model = rowwise()
    art = edgec.compile(model, tmp_path / "rowwise", name="rowwise", target="x86",
                        sanitize=True)
    assert all(s["parallel"] for s in art.manifest["kernel_strategies"])
    loaded = edgec.load(art.out_dir)
    feeds = _feeds(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in model.graph.output], sess.run(None, feeds)))
    for threads in (1, 2):
        loaded.set_num_threads(threads)
        got = loaded.run(feeds)
        for name, w in want.items():
            assert rel_error(got[name], w) < 1e-4, (name, threads)


@pytest.mark.slow
def test_int8_model_runs_clean_and_as_built_without_sanitizers(tmp_path):
    model = zoo.mobilenet_v2()
    calib = {"input": np.random.default_rng(1).standard_normal((2, 3, 224, 224))
             .astype(np.float32)}
    arts = [edgec.compile(model, tmp_path / f"s{s}", name="q", quantize="int8", calib=calib,
                          sanitize=s) for s in (True, False)]
    assert "built with --sanitize" in (tmp_path / "sTrue" / "quantization.json").read_text()
    feeds = _feeds(model, seed=2)
    got, want = (edgec.load(a.out_dir).run(feeds)["output"] for a in arts)
    np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_conformance_sample_runs_clean(tmp_path):
    """The passing tests of the ops that read indices, and the first passing test of every
    other op type CONFORMANCE.md lists."""
    rows = [(t, op) for t, (op, status) in sorted(conformance_results().items())
            if status == "pass"]
    index_tests = [t for t, _ in rows if re.match(INDEX_TESTS, t)]
    firsts = {op: t for t, op in reversed(rows)}
    assert len(index_tests) >= 40 and len(firsts) >= 150
    names = sorted(set(index_tests) | set(firsts.values()))
    results = conformance.run_suite(names, jobs=2, work=tmp_path,
                                    platform=conformance.Platform(sanitize=True))
    broken = [f"{r.test}: {r.status} {r.reason}" for r in results if r.status != "pass"]
    assert not broken, "tests that pass fail when built with --sanitize:\n" + "\n".join(broken)


def _rebuild(out: Path, name: str, edit) -> None:
    """libNAME.a again from NAME.c as `edit` changes it, with the sanitizers."""
    src = out / f"{name}.c"
    src.write_text(edit(src.read_text()))
    target = get_target("x86")
    objects = compile_objects(target, [f"{name}.c", f"{name}_weights.S"], out, SANITIZE_CFLAGS)
    archive(objects, f"lib{name}.a", out, target)


@pytest.mark.parametrize("bug, finding", [
    # a write past the app's output; the same as a masked vector store (which the sanitizer
    # sees only through the check a sanitized build adds); a read past a weight array (its
    # redzone, poisoned by NAME.c; through a pointer that UndefinedBehaviorSanitizer cannot
    # size); a signed overflow
    ("y[10] = 0.0f;", r"AddressSanitizer: heap-buffer-overflow in k2_\w+ \(mlp\.c:\d+\)"),
    ("{masked_store};", r"AddressSanitizer: heap-buffer-overflow in k2_\w+ \(mlp\.c:\d+\)"),
    ("{{ const float *volatile w = {weight}; y[0] += w[{size}]; }}",
     r"AddressSanitizer: use-after-poison in k2_\w+ \(mlp\.c:\d+\)"),
    ("{{ volatile int big = 2147483647; y[0] += (float)(big + 1); }}",
     r"UndefinedBehaviorSanitizer: signed integer overflow: .* in k2_\w+ \(mlp\.c:\d+\)"),
], ids=["write-past-output", "masked-store-past-output", "read-past-weight", "signed-overflow"])
def test_a_finding_is_an_error_that_names_the_kernel(bug, finding, tmp_path):
    isa = VECTOR_ISAS.get(get_target("x86").isa)
    if isa is None and "masked" in bug:
        pytest.skip("this CPU has no vector ISA edgec uses")
    art = edgec.compile(zoo.mlp(), tmp_path / "mlp", name="mlp", sanitize=True)
    assert art.manifest["outputs"][0]["shape"] == [1, 10]

    def inject(c: str) -> str:
        """`bug` first in the last kernel, whose `y` is the app's output (10 floats)."""
        weight, size = re.findall(r"^extern const float (\w+)\[(\d+)\];$", c, re.M)[-1]
        store = isa and CRenderer(sanitized(isa)).vop(
            "store_n", F32, p="y", n="11", v=CRenderer(isa).vop("broadcast", F32, a="0.0f"))
        at = c.index("{\n", c.rindex("\nstatic void k2_")) + 2
        return f"{c[:at]}    {bug.format(weight=weight, size=size, masked_store=store)}\n{c[at:]}"

    _rebuild(art.out_dir, "mlp", inject)
    with pytest.raises(EdgecError, match=finding) as e:
        edgec.load(art.out_dir).run(_feeds(zoo.mlp()))
    saved = Path(str(e.value).rsplit(" ", 1)[1])
    assert " in k2_" in saved.read_text()  # the whole report, its stack trace too


def test_refused_where_it_cannot_run(tmp_path):
    with pytest.raises(EdgecError, match="use --backend c"):
        edgec.compile(zoo.mlp(), tmp_path / "a", backend="llvm", sanitize=True)
    with pytest.raises(EdgecError, match="do not run under qemu-aarch64"):
        edgec.compile(zoo.mlp(), tmp_path / "b", target="arm64", sanitize=True)
    art = edgec.compile(zoo.mlp(), tmp_path / "c", sanitize=True)
    with pytest.raises(EdgecError, match="run it natively"):
        edgec.load(art.out_dir, emulator=["qemu-x86_64"])
    with pytest.raises(EdgecError, match="cannot be loaded into Python"):
        edgec.runtime.loader.CompiledModel(art.out_dir)
    with pytest.raises(EdgecError, match="its times would be the sanitizers'"):
        bench(str(art.out_dir))


def test_cli_and_the_package_files_link_an_app_with_the_sanitizers(tmp_path):
    model = ROOT / "examples/models/tiny_cnn.onnx"
    out = tmp_path / "out"
    assert cli(["compile", str(model), "-o", str(out), "--name", "tiny", "--sanitize"]) == 0
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.savez(tmp_path / "in.npz", input=x)
    assert cli(["run", str(out), "--inputs", str(tmp_path / "in.npz"),
                "--outputs", str(tmp_path / "out.npz")]) == 0
    want = np.load(tmp_path / "out.npz")["output"].reshape(-1)
    # examples/app built against the package files: without their -fsanitize the link
    # fails (the library calls the sanitizers' runtimes)
    env = {**os.environ, "PKG_CONFIG_PATH": str(out)}
    flags = subprocess.run([_tool("pkg-config"), "--cflags", "--libs", "tiny"], check=True,
                           capture_output=True, text=True, env=env).stdout.split()
    assert "-fsanitize=address,undefined" in flags
    subprocess.run(["gcc", "-O2", "-DMODEL=tiny", *[f for f in flags if f.startswith("-I")],
                    str(ROOT / "examples/app/main.c"),
                    *[f for f in flags if not f.startswith("-I")], "-o", str(tmp_path / "app")],
                   check=True)
    build = tmp_path / "build"
    subprocess.run([_tool("cmake"), "-S", str(ROOT / "examples/cmake"), "-B", str(build),
                    "-DMODEL=tiny", f"-Dtiny_DIR={out}"], check=True, capture_output=True)
    subprocess.run([_tool("cmake"), "--build", str(build)], check=True, capture_output=True)
    x.tofile(tmp_path / "input0.bin")
    for app in (tmp_path / "app", build / "app"):
        subprocess.run([str(app), str(tmp_path / "input0.bin"), str(tmp_path / "o")],
                       check=True, capture_output=True, env=sanitizer_env(os.environ))
        np.testing.assert_array_equal(np.fromfile(tmp_path / "o0.bin", np.float32), want)


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is missing: apt-get install {name} (.ci/run installs it)"
    return path


# -- out-of-range indices ---------------------------------------------------------------------

def _clamp(i, n: int, wrap: bool = True) -> np.ndarray:
    """The documented rule, index by index."""
    i = np.asarray(i, np.int64)
    return np.clip(np.where(wrap & (i < 0), i + n, i), 0, n - 1)


def _index_graph() -> tuple[Graph, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One graph with every op that reads indices fed out-of-range ones (past the end, below
    -n, and in range between), its feeds, and each output as the rule gives it."""
    rng = np.random.default_rng(4)
    g = Graph("indices")
    feeds: dict[str, np.ndarray] = {}
    want: dict[str, np.ndarray] = {}

    def inp(name, a):
        feeds[name] = a
        dtype = {np.float32: F32, np.int64: I64}[a.dtype.type]
        return g.add_input(name, TensorType(a.shape, dtype))

    def out(node, expected):
        v = node.outputs[0]
        want[v.name] = expected
        g.outputs.append(v)

    x = rng.standard_normal((5, 3)).astype(np.float32)
    xv = inp("x", x)
    i0 = np.array([7, -9, 4, -1, 5, -6], np.int64)
    out(g.add_node("Gather", [xv, inp("i0", i0)], {"axis": 0}), x[_clamp(i0, 5)])
    i1 = np.array([[3, -4], [-1, 1]], np.int64)
    out(g.add_node("Gather", [xv, inp("i1", i1)], {"axis": 1}), x[:, _clamp(i1, 3)])

    ie = np.array([[4, -5], [9, -1], [0, -100], [2, 3], [-2, 50]], np.int64)
    je = _clamp(ie, 3)
    out(g.add_node("GatherElements", [xv, inp("ie", ie)], {"axis": 1}),
        np.take_along_axis(x, je, axis=1))

    d = rng.standard_normal((2, 3, 4)).astype(np.float32)
    dv = inp("d", d)
    nd = np.array([[2, 5], [-3, -7], [1, -1]], np.int64)
    t = np.stack([_clamp(nd[:, 0], 2), _clamp(nd[:, 1], 3)], axis=1)
    out(g.add_node("GatherND", [dv, inp("nd", nd)]), d[t[:, 0], t[:, 1]])
    nb = np.array([[[9], [-4]], [[-1], [3]]], np.int64)  # batch_dims=1: rows of d[b]
    out(g.add_node("GatherND", [dv, inp("nb", nb)], {"batch_dims": 1}),
        np.stack([d[b][_clamp(nb[b, :, 0], 3)] for b in range(2)]))

    s = rng.standard_normal((3, 4)).astype(np.float32)
    sv = inp("s", s)
    si = np.array([[5, -4, 1, -1], [3, 0, -9, 2]], np.int64)
    su = rng.standard_normal((2, 4)).astype(np.float32)
    siv, suv = inp("si", si), inp("su", su)
    for reduction in ("none", "add"):
        y = s.copy()
        for r in range(2):  # in order: the last write wins
            for c in range(4):
                j = _clamp(si[r, c], 3)
                y[j, c] = su[r, c] if reduction == "none" else y[j, c] + su[r, c]
        out(g.add_node("ScatterElements", [sv, siv, suv], {"axis": 0, "reduction": reduction}),
            y)

    q = rng.standard_normal((4, 3)).astype(np.float32)
    qi = np.array([[6], [-8], [-2]], np.int64)
    qu = rng.standard_normal((3, 3)).astype(np.float32)
    y = q.copy()
    for r in range(3):
        y[_clamp(qi[r, 0], 4)] = qu[r]
    out(g.add_node("ScatterND", [inp("q", q), inp("qi", qi), inp("qu", qu)]), y)

    cache = rng.standard_normal((2, 5, 3)).astype(np.float32)
    upd = rng.standard_normal((2, 2, 3)).astype(np.float32)
    w = np.array([4, -3], np.int64)
    y = cache.copy()
    for b in range(2):
        for step in range(2):  # linear mode: no counting from the end
            y[b, _clamp(w[b] + step, 5, wrap=False)] = upd[b, step]
    out(g.add_node("TensorScatter", [inp("cache", cache), inp("upd", upd), inp("w", w)],
                   {"axis": 1}), y)

    oh = np.array([7, -9, 2, -1, 5, -5], np.int64)
    on_off = np.array([-2.0, 3.0], np.float32)
    y = np.full((6, 5), -2.0, np.float32)
    for k, i in enumerate(oh):  # ONNX: an index out of [-depth, depth) is all off
        if -5 <= i < 5:
            y[k, i % 5] = 3.0
    out(g.add_node("OneHot", [inp("oh", oh), g.const(np.array(5, np.int64), "depth"),
                              inp("on_off", on_off)]), y)

    u = rng.standard_normal((1, 1, 2, 2)).astype(np.float32)
    ui = np.array([9, -3, 0, 20], np.int64).reshape(1, 1, 2, 2)
    y = np.zeros(16, np.float32)
    for k in range(4):  # flat positions in Y, in order; no counting from the end
        y[_clamp(ui.reshape(-1)[k], 16, wrap=False)] = u.reshape(-1)[k]
    out(g.add_node("MaxUnpool", [inp("u", u), inp("ui", ui)],
                   {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0]}),
        y.reshape(1, 1, 4, 4))

    logp = rng.standard_normal((3, 4)).astype(np.float32)
    tg = np.array([5, -2, 1], np.int64)
    out(g.add_node("NegativeLogLikelihoodLoss", [inp("logp", logp), inp("tg", tg)],
                   {"reduction": "none"}),
        -logp[np.arange(3), _clamp(tg, 4, wrap=False)])
    return g, feeds, want


@pytest.mark.parametrize("target, backend, sanitize", [
    ("x86", "c", True), ("x86", "llvm", False), ("arm64", "c", False)])
def test_out_of_range_indices_follow_the_documented_rule(target, backend, sanitize, tmp_path):
    g, feeds, want = _index_graph()
    assert len(want) == 12
    if sanitize:
        ref = interpret(g, feeds)
        for name, w in want.items():
            np.testing.assert_array_equal(ref[name], w, err_msg=f"{name} (interpreter)")
    compile_graph(g, tmp_path / "m", name="m", target=target, backend=backend,
                  sanitize=sanitize)
    header = (tmp_path / "m" / "m.h").read_text()
    assert "Out-of-range indices (Gather, GatherElements, GatherND, MaxUnpool, " in header
    got = edgec.load(tmp_path / "m").run(feeds)
    for name, w in want.items():
        np.testing.assert_array_equal(got[name], w, err_msg=name)
