"""The HLS target (codegen/hls_project.py): integer models as an HLS C++ dataflow project,
checked by C-simulation with g++ against edgec's interpreter and the x86 build of the same
quantized model, bit for bit; every inter-layer stream traced and compared; a stream made
shallower than the depth sizing chose deadlocks with a clear message; float models refused."""

from __future__ import annotations

import subprocess

import numpy as np
import onnx
import pytest
from convnets import cpu_twin, residual_cnn, samples

import edgec
from edgec import zoo
from edgec.compiler.driver import compile_graph, load_graph
from edgec.errors import EdgecError
from edgec.ir import DType, Graph, TensorType
from edgec.ir.interpreter import interpret

PART = "xcu250-figd2104-2L-e"


@pytest.fixture(scope="module")
def residual(tmp_path_factory):
    """The residual network quantized by edgec for hls (the integer graph kept) and x86."""
    folder = tmp_path_factory.mktemp("hls_residual")
    model = residual_cnn()
    path = folder / "res.onnx"
    onnx.save(model, path)
    calib = samples(model, 8, 1)
    graph = load_graph(path)
    hls = compile_graph(graph, folder / "hls", target="hls", fpga_part=PART, quantize="int8",
                        calib=calib, name="res")
    x86 = edgec.compile(path, folder / "x86", target=cpu_twin(), quantize="int8",
                        calib=calib)
    return graph, hls, x86


def test_residual_network_csim_equals_x86_and_every_stream_the_interpreter(residual, tmp_path,
                                                                          monkeypatch):
    graph, hls, x86 = residual
    m = hls.manifest
    assert m["artifact"] == "hls-project" and m["hls"]["part"] == PART
    streams = m["hls"]["streams"]
    # the fork of the first conv's output: one stream to the branch (a frame: read as it is
    # written), one to the residual Add, which reads it second, after the branch's two
    # convolutions: it holds the frames written meanwhile, two or more
    fork = [s for s in streams if s["value"] == streams[1]["value"]]
    frame = fork[0]["elements"]
    depths = sorted(s["depth"] for s in fork)
    assert len(fork) == 2 and depths[0] == frame and depths[1] % frame == 0 and \
        depths[1] >= 2 * frame, depths
    x = samples(residual_cnn(), 1, 2)
    x = {k: v[0:1] for k, v in x.items()}
    trace = tmp_path / "trace"
    trace.mkdir()
    monkeypatch.setenv("EDGEC_CSIM_TRACE", str(trace))
    got = edgec.load(hls.out_dir).run(x)
    want = edgec.load(x86.out_dir).run(x)
    np.testing.assert_array_equal(got["y"], want["y"])
    values: dict[str, np.ndarray] = {}
    interpret(graph, x, values=values)
    np.testing.assert_array_equal(got["y"], values["y"])
    for s in streams:  # every stream carried exactly the interpreter's value (an output
        # port's stream is the testbench's, traced as port_outK)
        kind, _, k = s["consumer"].partition(" ")
        name = f"port_out{k}" if kind == "output" else s["name"]
        value = values[s["value"]]
        carried = np.fromfile(trace / f"{name}.bin", dtype=value.dtype)
        np.testing.assert_array_equal(carried, value.reshape(-1), err_msg=s["name"])
    carried = np.fromfile(trace / "port_in0.bin", dtype=np.uint8)
    np.testing.assert_array_equal(carried, values[streams[0]["value"]].reshape(-1))
    # the processes one after another, as Vitis HLS's C-simulation runs them: the same
    monkeypatch.setenv("EDGEC_CSIM", "sequential")
    np.testing.assert_array_equal(edgec.load(hls.out_dir).run(x)["y"], want["y"])


def second_reads(streams: list[dict]) -> list[dict]:
    """The streams their consumer reads after another (a residual branch at its join)."""
    seen, out = set(), []
    for s in streams:
        if s["consumer"] in seen:
            out.append(s)
        seen.add(s["consumer"])
    return out


def test_a_shallower_stream_deadlocks_with_a_clear_message(residual, tmp_path):
    _, hls, _ = residual
    out = hls.out_dir
    deep = second_reads(hls.manifest["hls"]["streams"])[0]  # the residual branch
    exe = tmp_path / "csim"
    subprocess.run(["g++", *hls.manifest["cflags"], "-I.", f"-DRES_DEPTH_{deep['name']}=2",
                    "res_csim.cpp", "res_hls.cpp", "-o", str(exe)], cwd=out, check=True)
    x = np.zeros((1, 3, 8, 8), np.float32)
    x.tofile(tmp_path / "x.bin")
    res = subprocess.run([str(exe), str(tmp_path / "x.bin"), str(tmp_path / "y.bin")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 3, res.stderr
    assert "deadlock in dataflow region res_top" in res.stderr
    assert f"waits to write to full stream {deep['name']} (depth 2, holding 2)" in res.stderr


def test_the_testbench_passes_and_fails_on_a_wrong_expectation(residual, tmp_path):
    _, hls, _ = residual
    out = hls.out_dir
    exe = tmp_path / "tb"
    subprocess.run(["g++", *hls.manifest["cflags"], "-I.", "res_tb.cpp", "res_hls.cpp",
                    "-o", str(exe)], cwd=out, check=True)
    res = subprocess.run([str(exe)], cwd=out, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "PASS" in res.stdout, res.stdout + res.stderr
    want = (out / "tb" / "out0.bin").read_bytes()
    (out / "tb" / "out0.bin").write_bytes(bytes([want[0] ^ 1]) + want[1:])
    try:
        res = subprocess.run([str(exe)], cwd=out, capture_output=True, text=True, timeout=60)
    finally:
        (out / "tb" / "out0.bin").write_bytes(want)
    assert res.returncode == 1 and "FAIL: 1 values differ" in res.stdout
    tcl = (out / "run_hls.tcl").read_text()
    assert f"set_part {{{PART}}}" in tcl and "set_top res_top" in tcl


@pytest.mark.parametrize("family", ["mlp", "tiny_cnn"])
@pytest.mark.parametrize("quantized_by", ["edgec", "onnxruntime"])
def test_zoo_models_equal_their_x86_builds(family, quantized_by, tmp_path):
    """edgec-quantized and onnxruntime QDQ models (quantize_static): the MLP's QGemms; the
    CNN's QLinearConv, MaxPool, GlobalAveragePool (integer, fixed point) and QGemm."""
    model = getattr(zoo, family)()
    path = tmp_path / f"{family}.onnx"
    onnx.save(model, path)
    x = {k: v[:1] for k, v in samples(model, 1, 4).items()}
    if quantized_by == "edgec":
        src, opts = path, {"quantize": "int8", "calib": samples(model, 8, 3)}
    else:
        src, opts = zoo.quantize_qdq(model, tmp_path / "qdq"), {}
    h = edgec.compile(src, tmp_path / "hls", target="hls", fpga_part=PART, name=family, **opts)
    c = edgec.compile(src, tmp_path / "x86", target=cpu_twin(), name=family, **opts)
    ops = {s["op"] for s in h.manifest["kernel_strategies"]}
    assert ops <= {"QGemm", "QLinearConv", "MaxPool", "QLinearGlobalAveragePool"}, ops
    got, want = edgec.load(h.out_dir).run(x), edgec.load(c.out_dir).run(x)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_float_models_and_missing_options_are_refused_clearly(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(zoo.mlp(), path)
    with pytest.raises(EdgecError, match=r"integers only.*--quantize int8"):
        edgec.compile(path, tmp_path / "f", target="hls", fpga_part=PART)
    with pytest.raises(EdgecError, match="--target hls needs the FPGA part"):
        edgec.compile(path, tmp_path / "p", target="hls")
    with pytest.raises(EdgecError, match="--fpga-part and --target-fps are for --target hls"):
        edgec.compile(path, tmp_path / "x", target="x86", fpga_part=PART)
    with pytest.raises(EdgecError, match=r"--strategy names node\(s\) /relu9/Gemm, which no "):
        edgec.compile(path, tmp_path / "s", target="hls", fpga_part=PART, quantize="int8",
                      calib=samples(zoo.mlp(), 4, 0),
                      strategy={"/relu9/Gemm": "hls-mvau{pe=2,simd=2}"})
    with pytest.raises(EdgecError, match="--backend llvm is for CPU targets"):
        edgec.compile(path, tmp_path / "l", target="hls", fpga_part=PART, backend="llvm")
    g = Graph("big")  # a multiplier of 0.5 * 0.01 / 0.001 = 5: no fixed point
    x = _q(g, None, (1, 4))
    ins = [x, _scale(g, "sa", 0.5), _c(g, 0, "za", np.uint8),
           _c(g, np.ones((4, 2)), "b", np.int8), _scale(g, "sb", 0.01), _c(g, 0, "zb", np.int8),
           _scale(g, "sy", 0.001), _c(g, 0, "zy", np.uint8)]
    g.outputs = [g.add_node("QLinearMatMul", ins, name="mm").output]
    with pytest.raises(EdgecError, match=r"node mm \(QLinearMatMul\) requantizes by a "
                                         "multiplier .* that fixed point cannot hold"):
        compile_graph(g, tmp_path / "b", target="hls", fpga_part=PART)


def test_the_command_line_compiles_and_runs_an_hls_project(tmp_path, capsys):
    from edgec.compiler.cli import main

    model = zoo.mlp()
    path = tmp_path / "mlp.onnx"
    onnx.save(model, path)
    np.savez(tmp_path / "calib.npz", **samples(model, 8, 5))
    x = {k: v[:1] for k, v in samples(model, 1, 6).items()}
    np.savez(tmp_path / "x.npz", **x)
    assert main(["compile", str(path), "-o", str(tmp_path / "out"), "--target", "hls",
                 "--fpga-part", PART, "--clock-mhz", "250", "--quantize", "int8", "--calib",
                 str(tmp_path / "calib.npz")]) == 0
    assert "wrote an HLS project" in capsys.readouterr().out
    assert main(["run", str(tmp_path / "out"), "--inputs", str(tmp_path / "x.npz"), "--outputs",
                 str(tmp_path / "y.npz")]) == 0
    assert main(["bench", str(tmp_path / "out")]) == 1
    assert "is an HLS project: its speed is the FPGA's" in capsys.readouterr().err
    assert main(["inspect", str(tmp_path / "out")]) == 0
    assert "HLS project: mlp_hls.cpp (top mlp_top, 3 processes" in capsys.readouterr().out
    manifest = edgec.load(tmp_path / "out").manifest
    assert manifest["hls"]["clock_mhz"] == 250.0
    assert "create_clock -period 4.000" in (tmp_path / "out" / "run_hls.tcl").read_text()
    assert np.load(tmp_path / "y.npz")["output"].shape == (1, 10)


# -- every integer op of the design, on fuzzed shapes -------------------------------------------

def _q(g, rng, shape, dtype=np.uint8, name="x"):
    return g.add_input(name, TensorType(tuple(shape), DType.from_numpy(np.dtype(dtype))))


def _maxpool3x3(name: str, shape: tuple[int, ...], stride: int, seed: int) -> Graph:
    """A graph of one 3x3 MaxPool, pads 1, over a quantized input of `shape`."""
    g = Graph(name)
    x = _q(g, np.random.default_rng(seed), shape)
    node = g.add_node("MaxPool", [x], {"kernel_shape": [3, 3], "strides": [stride] * 2,
                                       "pads": [1] * 4, "dilations": [1, 1]}, num_outputs=1)
    g.outputs = [node.output]
    return g


def _c(g, value, name, dtype):
    return g.const(np.asarray(value, dtype), name)


def _scale(g, name, v):
    return _c(g, np.float32(v), name, np.float32)


def _conv(g, rng):
    c, m = int(rng.integers(1, 6)), int(rng.integers(1, 7))
    k, stride, pad = int(rng.choice([1, 3])), int(rng.integers(1, 3)), int(rng.integers(0, 2))
    depthwise = bool(rng.integers(0, 2)) and c > 1
    m, group = (c, c) if depthwise else (m, 1)
    size = int(rng.integers(k, 9))
    dil = 2 if k == 3 and size >= 5 and rng.integers(0, 2) else 1
    x = _q(g, rng, (1, c, size, size + 1))
    w = _c(g, rng.integers(-127, 128, (m, c // group, k, k)), "w", np.int8)
    ins = [x, _scale(g, "sx", 0.05), _c(g, rng.integers(0, 256), "zx", np.uint8), w,
           _c(g, rng.uniform(0.002, 0.01, m), "sw", np.float32), None,
           _scale(g, "sy", 0.2), _c(g, rng.integers(0, 256), "zy", np.uint8),
           _c(g, rng.integers(-500, 500, m), "b", np.int32)]
    return g.add_node("QLinearConv", ins, {"group": group, "strides": [stride, stride],
                                           "pads": [pad] * 4, "dilations": [dil, dil]}).output


def _gemm(g, rng):
    k, n = int(rng.integers(1, 40)), int(rng.integers(1, 12))
    tb = int(rng.integers(0, 2))
    x = _q(g, rng, (1, k))
    b = _c(g, rng.integers(-127, 128, (n, k) if tb else (k, n)), "b", np.int8)
    ins = [x, _scale(g, "sa", 0.05), _c(g, rng.integers(0, 256), "za", np.uint8), b,
           _c(g, rng.uniform(0.002, 0.01, n), "sb", np.float32), _c(g, np.zeros(n), "zb", np.int8),
           _c(g, rng.integers(-500, 500, n), "c", np.int32), _scale(g, "sy", 0.3),
           _c(g, rng.integers(0, 256), "zy", np.uint8)]
    return g.add_node("QGemm", ins, {"transB": tb}).output


def _matmul(g, rng):
    m, k, n = (int(rng.integers(1, 9)) for _ in range(3))
    a = _q(g, rng, (m, k))
    ins = [a, _scale(g, "sa", 0.05), _c(g, rng.integers(0, 256), "za", np.uint8),
           _c(g, rng.integers(-127, 128, (k, n)), "b", np.int8), _scale(g, "sb", 0.004),
           _c(g, 0, "zb", np.int8), _scale(g, "sy", 0.1),
           _c(g, rng.integers(0, 256), "zy", np.uint8)]
    return g.add_node("QLinearMatMul", ins).output


def _add(g, rng):
    shape = tuple(int(v) for v in rng.integers(1, 6, 3))
    other = tuple(d if rng.integers(0, 2) else 1 for d in shape)
    a, b = _q(g, rng, (1, *shape), name="a"), _q(g, rng, (1, *other), name="b")
    ins = [a, _scale(g, "sa", 0.05), _c(g, rng.integers(0, 256), "za", np.uint8),
           b, _scale(g, "sb", 0.08), _c(g, rng.integers(0, 256), "zb", np.uint8),
           _scale(g, "sc", 0.1), _c(g, rng.integers(0, 256), "zc", np.uint8)]
    return g.add_node("QLinearAdd", ins).output


def _pools(g, rng):
    c, size = int(rng.integers(1, 5)), int(rng.integers(2, 9))
    x = _q(g, rng, (1, c, size, size))
    k = int(rng.integers(1, min(size, 3) + 1))
    p = g.add_node("MaxPool", [x], {"kernel_shape": [k, k], "strides": [k, k],
                                    "pads": [0] * 4, "dilations": [1, 1]}, num_outputs=1).output
    ins = [p, _scale(g, "sx", 0.05), _c(g, rng.integers(0, 256), "zx", np.uint8),
           _scale(g, "sy", 0.04), _c(g, rng.integers(0, 256), "zy", np.uint8)]
    return g.add_node("QLinearGlobalAveragePool", ins).output


def _movement(g, rng):
    a, b = _q(g, rng, (1, 2, 3, 4), name="a"), _q(g, rng, (1, 3, 3, 4), name="b")
    cat = g.add_node("Concat", [a, b], {"axis": 1}).output
    t = g.add_node("Transpose", [cat], {"perm": [0, 3, 1, 2]}).output
    return g.add_node("Reshape", [t, _c(g, [4, 15], "shape", np.int64)]).output


FUZZED = {"QLinearConv": _conv, "QGemm": _gemm, "QLinearMatMul": _matmul,
          "QLinearAdd": _add, "MaxPool+QLinearGlobalAveragePool": _pools,
          "Concat+Transpose+Reshape": _movement}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("op", list(FUZZED))
def test_every_integer_op_on_fuzzed_shapes_equals_the_interpreter(op, seed, tmp_path):
    rng = np.random.default_rng(100 + seed)
    g = Graph(f"fz{seed}")
    y = FUZZED[op](g, rng)
    g.outputs = [y]
    node = g.nodes[-1]
    strategy = {}
    if node.op in ("QGemm", "QLinearMatMul"):  # a matrix-vector unit of a random fold,
        b = node.inputs[3].const  # padded where it does not divide
        k, n = b.shape[::-1] if node.attrs.get("transB") else b.shape
        pe, simd = int(rng.integers(1, n + 1)), int(rng.integers(1, k + 1))
        strategy = {node.name: f"hls-mvau{{pe={pe},simd={simd}}}"}
        unit = "matrix-vector unit"
    if node.op == "QLinearConv" and node.attrs["group"] == 1:  # the convolution's unit,
        m, c = node.inputs[3].shape[:2]  # padded where the fold does not divide
        pe, simd = int(rng.integers(1, m + 1)), int(rng.integers(1, c + 1))
        strategy = {node.name: f"hls-conv-mvau{{pe={pe},simd={simd}}}"}
        unit = "convolution as a matrix-vector unit"
    want = f"{unit}, {pe} PE x {simd} SIMD" if strategy else None
    if node.op == "QLinearConv" and node.attrs["group"] > 1:  # depthwise: PE channels' own
        c = node.inputs[3].shape[0]  # windows a cycle, PE dividing the channels
        pe = int(rng.choice([d for d in range(1, c + 1) if c % d == 0]))
        strategy = {node.name: f"hls-depthwise{{pe={pe}}}"}
        want = f"depthwise convolution unit, {pe} PE"
    art = compile_graph(g, tmp_path / "out", target="hls", fpga_part=PART, name="fz",
                        strategy=strategy)
    chosen = art.manifest["kernel_strategies"][-1]["strategy"]
    if want:
        assert chosen.startswith(want), chosen
    feeds = [{v.name: rng.integers(0, 256, v.shape).astype(v.dtype.np) for v in g.inputs}]
    if node.op == "QGemm":  # an input that drives column 0's sum to its extreme: the
        # accumulator, as narrow as its proved bound, must not wrap
        b = node.inputs[3].const.astype(np.int64)
        col = (b.T if node.attrs["transB"] else b)[:, 0]
        feeds.append({g.inputs[0].name: np.where(col > 0, 255, 0).astype(np.uint8)[None]})
    bits = art.manifest["hls"]["layers"][-1]["accumulator_bits"]
    if node.op in ("QLinearConv", "QGemm", "QLinearMatMul", "QLinearGlobalAveragePool"):
        assert bits is not None and bits < 32, bits
    model = edgec.load(art.out_dir)
    for f in feeds:
        want, got = interpret(g, f), model.run(f)
        for k in want:
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"{op} seed {seed}")


@pytest.mark.parametrize("c,m,k,stride,dil,pad,pe,simd", [
    (5, 7, 3, 2, 2, 1, 3, 2), (8, 4, 3, 1, 1, 1, 4, 8), (3, 6, 3, 1, 1, 0, 2, 3)],
    ids=["padded-strided-dilated", "whole-folds", "stem-like"])
def test_convolutions_as_matrix_vector_units_equal_the_interpreter(c, m, k, stride, dil, pad,
                                                                   pe, simd, tmp_path):
    """hls-conv-mvau: the frame copied to HWC (channels padded to SIMD), each window's terms
    SIMD channels a cycle, PE output channels at once (padded where the fold does not
    divide), taps in the padding zero; bit for bit with the interpreter, on inputs of every
    byte value and on one that drives channel 0's sum to its extreme (the accumulator, as
    narrow as its proved bound, must not wrap)."""
    rng = np.random.default_rng(c * 100 + m)
    g = Graph("cu")
    x = _q(g, rng, (1, c, 9, 10))
    w = _c(g, rng.integers(-127, 128, (m, c, k, k)), "w", np.int8)
    ins = [x, _scale(g, "sx", 0.05), _c(g, 7, "zx", np.uint8), w,
           _c(g, rng.uniform(0.002, 0.01, m), "sw", np.float32), None,
           _scale(g, "sy", 0.2), _c(g, rng.integers(0, 256), "zy", np.uint8),
           _c(g, rng.integers(-500, 500, m), "b", np.int32)]
    node = g.add_node("QLinearConv", ins, {"group": 1, "strides": [stride, stride],
                                           "pads": [pad] * 4, "dilations": [dil, dil]})
    g.outputs = [node.output]
    art = compile_graph(g, tmp_path / "out", target="hls", fpga_part=PART, name="cu",
                        strategy={node.name: f"hls-conv-mvau{{pe={pe},simd={simd}}}"})
    strategy = art.manifest["kernel_strategies"][-1]["strategy"]
    assert strategy.startswith(f"convolution as a matrix-vector unit, {pe} PE x {simd} SIMD")
    assert ("padded" in strategy) == (m % pe != 0 or c % simd != 0), strategy
    src = (art.out_dir / "cu_hls.cpp").read_text()
    assert f"#pragma HLS ARRAY_PARTITION variable=xt cyclic factor={simd}" in src or simd == 1
    wt = w.const.astype(np.int64)
    feeds = [{"x": rng.integers(0, 256, (1, c, 9, 10)).astype(np.uint8)},
             {"x": np.broadcast_to(np.where(wt[0].sum((1, 2)) > 0, 255, 0).astype(np.uint8)
                                   [None, :, None, None], (1, c, 9, 10)).copy()}]
    model = edgec.load(art.out_dir)
    for f in feeds:
        np.testing.assert_array_equal(model.run(f)[node.output.name],
                                      interpret(g, f)[node.output.name])


def test_a_reduced_resnet18_equals_its_x86_build(tmp_path):
    """ResNet-18's topology (7x7 stem, MaxPool, 8 basic blocks with downsampling branches,
    global mean, classifier) at a width of 8 and 32 x 32 inputs."""
    model = zoo.resnet18(width=8, size=32, classes=10)
    path = tmp_path / "r18.onnx"
    onnx.save(model, path)
    opts = {"quantize": "int8", "calib": samples(model, 4, 7), "name": "r18"}
    h = edgec.compile(path, tmp_path / "hls", target="hls", fpga_part=PART, **opts)
    c = edgec.compile(path, tmp_path / "x86", target=cpu_twin(), **opts)
    ops = {s["op"] for s in h.manifest["kernel_strategies"]}
    assert ops == {"QLinearConv", "MaxPool", "QLinearAdd", "QLinearGlobalAveragePool", "QGemm"}
    # the 8 blocks' residual Adds each read their shortcut second: it holds two frames or
    # more (the block's convolutions take that long); every other stream between processes
    # one frame, read as it is written
    streams = h.manifest["hls"]["streams"]
    deep = second_reads(streams)
    assert len(deep) == 8 and all(s["depth"] >= 2 * s["elements"] for s in deep)
    assert all(s["depth"] == s["elements"] for s in streams
               if s not in deep and not s["consumer"].startswith("output "))
    hm, cm = edgec.load(h.out_dir), edgec.load(c.out_dir)
    for seed in (8, 9):
        x = {k: v[:1] for k, v in samples(model, 1, seed).items()}
        np.testing.assert_array_equal(hm.run(x)["output"], cm.run(x)["output"])


@pytest.mark.parametrize("bits", ["int8", "int4"])
def test_the_digits_classifier_answers_as_its_x86_build(bits, tmp_path):
    """The MLP trained on scikit-learn's digits, quantized on real training digits: the
    held-out answers of C-simulation are the x86 library's, bit for bit; 4-bit weights are
    4-bit ROMs."""
    from edgec.testing import digits

    model, data = digits.train()
    path = tmp_path / "digits.onnx"
    onnx.save(model, path)
    opts = {"quantize": bits, "calib": {"pixels": data.x_train[:64].astype(np.float32)},
            "name": "digits"}
    h = edgec.compile(path, tmp_path / "hls", target="hls", fpga_part=PART, **opts)
    c = edgec.compile(path, tmp_path / "x86", target=cpu_twin(), **opts)
    roms = [layer["rom_bits"] for layer in h.manifest["hls"]["layers"]]
    weight_bits = [max(b for name, b in r.items() if name not in ("rq", "c")) for r in roms]
    assert weight_bits == [8 if bits == "int8" else 4] * 3, roms
    hm, cm = edgec.load(h.out_dir), edgec.load(c.out_dir)
    for x in data.x_test[:12]:
        feed = {"pixels": x[None].astype(np.float32)}
        np.testing.assert_array_equal(hm.run(feed)["logits"], cm.run(feed)["logits"])


def test_matrix_vector_units_fold_to_the_target_and_stay_exact(tmp_path):
    """The MLP's three QGemms folded (PE x SIMD a cycle): by default as far as the design's
    reads and writes make worth it within the part, or just enough for --target-fps; the
    C-simulation equals the x86 build either way, and the estimate follows the folds."""
    model = zoo.mlp()
    path = tmp_path / "mlp.onnx"
    onnx.save(model, path)
    opts = {"quantize": "int8", "calib": samples(model, 8, 3), "name": "mlp"}
    x = {k: v[:1] for k, v in samples(model, 1, 4).items()}
    want = edgec.load(edgec.compile(path, tmp_path / "x86", target=cpu_twin(),
                                  **opts).out_dir).run(x)
    fps = {}
    for label, extra in (("unfolded", {"strategy": {
            n: "hls-mvau{pe=1,simd=1}" for n in ("/relu1/Relu_output_0_QuantizeLinear",
                                                 "/relu2/Relu_output_0_QuantizeLinear",
                                                 "output_QuantizeLinear")}}),
                         ("default", {}), ("2000 fps", {"target_fps": 2000.0})):
        h = edgec.compile(path, tmp_path / label.replace(" ", "_"), target="hls",
                          fpga_part=PART, **opts, **extra)
        e = h.manifest["hls"]["estimate"]
        fps[label] = e["model"]["fps"]
        for layer in e["layers"]:
            if layer["macs"]:  # the cycle model's compute is the MACs over the fold
                assert layer["compute_cycles"] == -(-layer["macs"] //
                                                    (layer["pe"] * layer["simd"]))
        np.testing.assert_array_equal(edgec.load(h.out_dir).run(x)["output"], want["output"],
                                      err_msg=label)
        assert e["fits"]
    assert fps["unfolded"] < 2000 <= fps["2000 fps"] < fps["default"]
    assert fps["default"] > 100 * fps["unfolded"]
    # folds that do not divide: the unit padded (operator padding), its outputs still exact
    h = edgec.compile(path, tmp_path / "padded", target="hls", fpga_part=PART, **opts,
                      strategy={"output_QuantizeLinear": "hls-mvau{pe=3,simd=24}"})
    last = h.manifest["kernel_strategies"][-1]
    assert last["forced"] and last["strategy"] == \
        "matrix-vector unit, 3 PE x 24 SIMD (N padded 10 -> 12, K padded 256 -> 264)"
    layer = h.manifest["hls"]["estimate"]["layers"][-1]
    assert layer["compute_cycles"] == 4 * 11  # ceil(10 / 3) x ceil(256 / 24)
    np.testing.assert_array_equal(edgec.load(h.out_dir).run(x)["output"], want["output"])


@pytest.mark.parametrize("c,k,stride,pad,dil,ceil,simd,dtype", [
    (8, 3, 2, 1, 1, 0, 4, np.uint8), (6, 2, 2, 0, 1, 1, 3, np.int8),
    (4, 3, 1, 1, 2, 0, 4, np.uint8), (5, 3, 2, 1, 1, 0, 1, np.int8)],
    ids=["stem-like", "ceil-int8", "dilated", "one-lane"])
def test_the_pooling_unit_equals_the_interpreter(c, k, stride, pad, dil, ceil, simd, dtype,
                                                 tmp_path):
    """hls-pool: lane s takes the maximum of channel block s, a tap a cycle; taps in the
    padding (and past the end in ceil mode) never win; bit for bit with the interpreter,
    the frame and output arrays partitioned in SIMD blocks."""
    g = Graph("pu")
    x = _q(g, np.random.default_rng(0), (1, c, 9, 10), dtype)
    node = g.add_node("MaxPool", [x], {"kernel_shape": [k, k], "strides": [stride, stride],
                                       "pads": [pad] * 4, "dilations": [dil, dil],
                                       "ceil_mode": ceil}, num_outputs=1)
    g.outputs = [node.output]
    art = compile_graph(g, tmp_path / "out", target="hls", fpga_part=PART, name="pu",
                        strategy={node.name: f"hls-pool{{simd={simd}}}"})
    assert art.manifest["kernel_strategies"][-1]["strategy"] == f"pooling unit, {simd} SIMD"
    src = (art.out_dir / "pu_hls.cpp").read_text()
    assert (f"#pragma HLS ARRAY_PARTITION variable=a0 block factor={simd}" in src) == (simd > 1)
    layer = art.manifest["hls"]["estimate"]["layers"][-1]  # a tap a cycle, SIMD lanes
    assert layer["compute_cycles"] == node.output.type.numel * k * k // simd
    rng = np.random.default_rng(c)
    info = np.iinfo(dtype)
    model = edgec.load(art.out_dir)
    for f in ({"x": rng.integers(info.min, info.max + 1, (1, c, 9, 10)).astype(dtype)},
              {"x": np.full((1, c, 9, 10), info.min, dtype)}):
        np.testing.assert_array_equal(model.run(f)[node.output.name],
                                      interpret(g, f)[node.output.name])
    with pytest.raises(EdgecError, match="SIMD to divide its"):
        compile_graph(g, tmp_path / "bad", target="hls", fpga_part=PART, name="pu",
                      strategy={node.name: f"hls-pool{{simd={c + 1}}}"})


def test_folding_widens_a_pool_that_bounds_the_design(tmp_path):
    """A 3 x 3 MaxPool, stride 1, on 8 x 9 x 10: 720 values in, 720 out, 6480 taps. Alone in
    the design its taps bound it; folding widens it to the largest SIMD dividing its 8
    channels that it takes to bring the taps under a quarter of its reads and writes (6480 /
    8 = 810 > 360: all 8 lanes), and the outputs stay exact."""
    g = _maxpool3x3("pf", (1, 8, 9, 10), 1, seed=1)
    node = g.nodes[-1]
    art = compile_graph(g, tmp_path / "out", target="hls", fpga_part=PART, name="pf")
    assert art.manifest["kernel_strategies"][-1]["strategy"] == "pooling unit, 8 SIMD"
    f = {"x": np.random.default_rng(2).integers(0, 256, (1, 8, 9, 10)).astype(np.uint8)}
    np.testing.assert_array_equal(edgec.load(art.out_dir).run(f)[node.output.name],
                                  interpret(g, f)[node.output.name])


@pytest.mark.parametrize("c,k,stride,pad,dil,pe", [
    (8, 3, 1, 1, 1, 4), (6, 3, 2, 1, 1, 3), (4, 5, 1, 2, 2, 2), (5, 3, 2, 0, 1, 1)],
    ids=["mobilenet-like", "strided", "dilated-5x5", "one-lane"])
def test_the_depthwise_unit_equals_the_interpreter(c, k, stride, pad, dil, pe, tmp_path):
    """hls-depthwise: lane s multiplies-adds channel block s's window, a tap a cycle, with
    its own weights bank; taps in the padding add zero; requantized in fixed point per
    channel; bit for bit with the interpreter, on random bytes and on a frame of 255 where a
    channel's weights sum above zero, 0 elsewhere (large sums: the accumulator, as narrow as
    its proved bound, must not wrap)."""
    rng = np.random.default_rng(c * 10 + k)
    g = Graph("dw")
    x = _q(g, rng, (1, c, 9, 10))
    w = _c(g, rng.integers(-127, 128, (c, 1, k, k)), "w", np.int8)
    ins = [x, _scale(g, "sx", 0.05), _c(g, 0, "zx", np.uint8), w,
           _c(g, rng.uniform(0.002, 0.01, c), "sw", np.float32), None,
           _scale(g, "sy", 0.2), _c(g, rng.integers(0, 256), "zy", np.uint8),
           _c(g, rng.integers(-500, 500, c), "b", np.int32)]
    node = g.add_node("QLinearConv", ins, {"group": c, "strides": [stride, stride],
                                           "pads": [pad] * 4, "dilations": [dil, dil]})
    g.outputs = [node.output]
    art = compile_graph(g, tmp_path / "out", target="hls", fpga_part=PART, name="dw",
                        strategy={node.name: f"hls-depthwise{{pe={pe}}}"})
    assert art.manifest["kernel_strategies"][-1]["strategy"] == \
        f"depthwise convolution unit, {pe} PE"
    layer = art.manifest["hls"]["estimate"]["layers"][-1]  # a tap a cycle, PE lanes
    assert layer["compute_cycles"] == node.output.type.numel * k * k // pe
    src = (art.out_dir / "dw_hls.cpp").read_text()
    assert (f"#pragma HLS ARRAY_PARTITION variable=a0 block factor={pe}" in src) == (pe > 1)
    big = np.where(w.const[:, 0].sum((1, 2)) > 0, 255, 0).astype(np.uint8)
    model = edgec.load(art.out_dir)
    for f in ({"x": rng.integers(0, 256, (1, c, 9, 10)).astype(np.uint8)},
              {"x": np.broadcast_to(big[None, :, None, None], (1, c, 9, 10)).copy()}):
        np.testing.assert_array_equal(model.run(f)[node.output.name],
                                      interpret(g, f)[node.output.name])
    with pytest.raises(EdgecError, match="PE to divide its"):
        compile_graph(g, tmp_path / "bad", target="hls", fpga_part=PART, name="dw",
                      strategy={node.name: f"hls-depthwise{{pe={c + 1}}}"})


def test_large_frames_are_bound_to_uram(tmp_path):
    """A MaxPool's 8 x 64 x 64 input frame (256 Kbit) is reshaped to 64-bit words and bound
    to URAM (one: 4096 words of 8 bytes), its 8 x 32 x 32 output (64 Kbit) stays BRAM; with
    SIMD lanes the arrays are partitioned in blocks instead, and stay BRAM."""
    g = Graph("uf")
    x = _q(g, np.random.default_rng(3), (1, 8, 64, 64))
    node = g.add_node("MaxPool", [x], {"kernel_shape": [2, 2], "strides": [2, 2],
                                       "pads": [0] * 4, "dilations": [1, 1]}, num_outputs=1)
    g.outputs = [node.output]
    for simd, urams in ((1, 1), (4, 0)):
        art = compile_graph(g, tmp_path / f"s{simd}", target="hls", fpga_part=PART, name="uf",
                            strategy={node.name: f"hls-pool{{simd={simd}}}"})
        src = (art.out_dir / "uf_hls.cpp").read_text()
        assert ("#pragma HLS ARRAY_RESHAPE variable=a0 cyclic factor=8" in src and
                "#pragma HLS BIND_STORAGE variable=a0 type=ram_2p impl=uram" in src) == \
            (urams > 0)
        assert "variable=y0 type=ram_2p impl=uram" not in src
        assert art.manifest["hls"]["estimate"]["layers"][-1]["uram"] == urams
    f = {"x": np.random.default_rng(4).integers(0, 256, (1, 8, 64, 64)).astype(np.uint8)}
    np.testing.assert_array_equal(edgec.load(art.out_dir).run(f)[node.output.name],
                                  interpret(g, f)[node.output.name])
    # a part without URAM (ZCU102): the frame stays in BRAM (ceil(32768 / 2048) = 16 RAMB18)
    art = compile_graph(g, tmp_path / "zcu102", target="hls", fpga_part="xczu9eg-ffvb1156-2-e",
                        name="uf", strategy={node.name: "hls-pool{simd=1}"})
    assert "impl=uram" not in (art.out_dir / "uf_hls.cpp").read_text()
    layer = art.manifest["hls"]["estimate"]["layers"][-1]
    assert (layer["uram"], layer["bram18"]) == (0, 16 + 4)  # (+ the output: 8192 bytes)


def test_folding_counts_the_banks_a_fold_moves_out_of_uram(tmp_path):
    """A 3 x 3 / 2 MaxPool on 64 x 304 x 304 (5.9 M bytes) on a U250: at 1 lane its frame
    and output are whole, in URAM (181 + 46); at SIMD 2 or more they are partitioned in
    blocks, which stay BRAM: 2 x 1443 + 2 x 362 RAMB18 for the arrays, with the input's
    FIFO (2888) over the U250's 5376. Folding sees that and keeps 1 lane, and the design
    fits; forced to 8 lanes it does not."""
    g = _maxpool3x3("mp", (1, 64, 304, 304), 2, seed=5)
    node = g.nodes[-1]
    art = compile_graph(g, tmp_path / "fold", target="hls", fpga_part=PART, name="mp")
    e = art.manifest["hls"]["estimate"]
    assert art.manifest["kernel_strategies"][-1]["strategy"] == "pooling unit, 1 SIMD"
    assert e["fits"] and (e["layers"][-1]["uram"], e["layers"][-1]["bram18"]) == (181 + 46, 0)
    art = compile_graph(g, tmp_path / "eight", target="hls", fpga_part=PART, name="mp",
                        strategy={node.name: "hls-pool{simd=8}"})
    assert not art.manifest["hls"]["estimate"]["fits"]
