"""Artifacts run as programs under an emulator: the `x86-avx2` build under
`qemu-x86_64 -cpu Haswell` (so it cannot use AVX-512 unnoticed), checked against onnxruntime.

qemu-user is required, not optional: CI installs it (.ci/run) and these tests fail, never skip,
when it is missing.
"""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from harness import rel_error
from test_control_flow import loop_model

import edgec
from edgec import zoo
from edgec.compiler.cli import main
from edgec.errors import EdgecError
from edgec.runtime.emulated import EmulatedModel

HASWELL = ["qemu-x86_64", "-cpu", "Haswell"]


@pytest.fixture(scope="module", autouse=True)
def qemu() -> None:
    if shutil.which("qemu-x86_64") is None:
        pytest.fail("qemu-x86_64 is not installed: `apt-get install qemu-user` "
                    "(.ci/run installs it); these tests need it and do not skip")


def onnxruntime_outputs(m: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def mobilenet_v2_64() -> onnx.ModelProto:
    """The zoo's MobileNetV2 at 64x64 (every layer kept; the last feature map is 2x2)."""
    m = zoo.mobilenet_v2()
    dims = m.graph.input[0].type.tensor_type.shape.dim
    dims[2].dim_value = dims[3].dim_value = 64
    return m


@pytest.mark.parametrize("build", [zoo.tiny_cnn, zoo.mlp, mobilenet_v2_64],
                         ids=["tiny_cnn", "mlp", "mobilenet_v2_64"])
def test_avx2_build_under_haswell_matches_onnxruntime(build, tmp_path):
    m = build()
    art = edgec.compile(m, tmp_path / "out", target="x86-avx2", name="model")
    lib = edgec.load(art.out_dir, emulator=HASWELL)
    assert isinstance(lib, EmulatedModel) and lib.input_names == ["input"]
    shape = art.manifest["inputs"][0]["shape"]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    (want,) = onnxruntime_outputs(m, {"input": x})
    got = lib.run({"input": x})
    assert list(got) == ["output"] and got["output"].dtype == np.float32
    assert rel_error(got["output"], want) < 1e-5
    lib.set_num_threads(2)  # work is split by output tiles: the same result with 2 threads
    assert rel_error(lib.run({"input": x})["output"], want) < 1e-5


def test_avx512_build_under_haswell_dies_of_sigill(tmp_path):
    # gcc encodes x86-avx512's vectorized kernels with EVEX (AVX-512VL forms on ymm16-31,
    # masks), and qemu's TCG implements no EVEX at all: a Haswell CPU (emulated or real) must
    # refuse them. That this fails is what makes the AVX2 test above mean something.
    art = edgec.compile(zoo.tiny_cnn(), tmp_path / "out", target="x86-avx512", name="tiny")
    lib = edgec.load(art.out_dir, emulator=HASWELL)
    x = np.zeros((1, 3, 32, 32), np.float32)
    with pytest.raises(EdgecError, match="died of SIGILL: the code used an instruction the "
                                         r"\(emulated\) CPU lacks"):
        lib.run({"input": x})


def test_avx512_build_is_refused_by_a_cpu_without_it(tmp_path, monkeypatch):
    # loaded into this process, its first AVX-512 instruction would kill Python: the loader
    # says what is missing instead (the CPU's flags those of a Haswell, whatever the host)
    from edgec.targets import target

    art = edgec.compile(zoo.tiny_cnn(), tmp_path / "out", target="x86-avx512", name="tiny")
    haswell = target.host_cpu_flags() - {"avx512f", "avx512bw", "avx512dq", "avx512vl",
                                          "avx512_vnni"} | {"avx2", "fma"}
    monkeypatch.setattr(target, "host_cpu_flags", lambda: haswell)
    with pytest.raises(EdgecError, match=r"built for x86-avx512 .* this CPU lacks avx512f, "
                                         r"avx512bw, avx512dq, avx512vl, avx512_vnni"):
        edgec.load(art.out_dir)


def test_c_generic_runner_without_emulator_matches_ctypes_loader(tmp_path):
    m = zoo.mlp()
    art = edgec.compile(m, tmp_path / "out", target="c-generic", name="mlp")
    x = np.random.default_rng(1).standard_normal((1, 784)).astype(np.float32)
    program = edgec.load(art.out_dir, emulator=[])
    got = program.run({"input": x})["output"]
    np.testing.assert_array_equal(got, edgec.load(art.out_dir).run({"input": x})["output"])
    assert rel_error(got, onnxruntime_outputs(m, {"input": x})[0]) < 1e-5
    # the runner is built once and found again by its digest
    again = edgec.load(art.out_dir, emulator=[])
    assert again.runner == program.runner
    assert len(list((art.out_dir / ".build").glob("mlp-runner-*"))) == 1


def test_status_and_input_errors_are_reported(tmp_path):
    art = edgec.compile(loop_model(), tmp_path / "out", target="x86-avx2", name="loop")
    lib = edgec.load(art.out_dir, emulator=HASWELL)
    x = np.zeros(1, np.float32)
    assert lib.run({"x": x, "limit": np.full(1, 100, np.float32)})["y"][0] == 5.0
    with pytest.raises(EdgecError, match="loop_run failed: a Loop ended before its trip count"):
        lib.run({"x": x, "limit": np.full(1, 2, np.float32)})
    with pytest.raises(EdgecError, match="missing \\['limit'\\]"):
        lib.run({"x": x})
    with pytest.raises(EdgecError, match="must be float32"):
        lib.run({"x": x, "limit": np.ones(1, np.float64)})


def test_emulator_environment_and_missing_emulator(tmp_path):
    art = edgec.compile(zoo.tiny_cnn(), tmp_path / "out", target="c-generic", name="tiny")
    x = {"input": np.ones((1, 3, 32, 32), np.float32)}
    # an "emulator" that runs the program only if the thread count reached its environment
    wrapper = ["sh", "-c", 'test "$EDGEC_NUM_THREADS" = 3 && exec "$@"', "sh"]
    lib = edgec.load(art.out_dir, emulator=wrapper)
    with pytest.raises(EdgecError, match="exited with status 1"):
        lib.run(x)
    lib.set_num_threads(3)
    assert lib.run(x)["output"].shape == (1, 10)
    with pytest.raises(EdgecError, match="positive integer"):
        lib.set_num_threads(0)
    with pytest.raises(EdgecError, match="apt-get install qemu-user"):
        edgec.load(art.out_dir, emulator=["qemu-edgec-absent"])
    # a single-threaded build links without pthreads and has no thread count to set
    single = edgec.compile(zoo.tiny_cnn(), tmp_path / "single", target="x86-avx2", name="tiny",
                           threads=False)
    lib = edgec.load(single.out_dir, emulator=HASWELL)
    assert rel_error(lib.run(x)["output"], onnxruntime_outputs(zoo.tiny_cnn(), x)[0]) < 1e-5
    with pytest.raises(EdgecError, match="without a thread pool"):
        lib.set_num_threads(2)


def test_cli_run_under_emulator(tmp_path, capsys):
    model, out = tmp_path / "tiny.onnx", tmp_path / "out"
    zoo.save(zoo.tiny_cnn(), model)
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.savez(tmp_path / "in.npz", input=x)
    assert main(["compile", str(model), "-o", str(out), "--target", "x86-avx2"]) == 0
    assert main(["run", str(out), "--inputs", str(tmp_path / "in.npz"), "--outputs",
                 str(tmp_path / "y.npz"), "--emulator", "qemu-x86_64 -cpu Haswell",
                 "--check", str(model)]) == 0
    assert "check output against onnxruntime" in capsys.readouterr().out
    with np.load(tmp_path / "y.npz") as y:
        want = onnxruntime_outputs(onnx.load(model), {"input": x})[0]
        assert rel_error(y["output"], want) < 1e-5
    assert main(["run", str(out), "--inputs", str(tmp_path / "in.npz"),
                 "--emulator", "qemu-x86_64 '-cpu"]) == 1
    assert "--emulator takes a command" in capsys.readouterr().err
