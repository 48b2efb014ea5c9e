"""The artifact as a package: its CMake config (find_package(NAME) -> NAME::NAME) builds
examples/cmake's app, its pkg-config file (pkg-config --cflags --libs NAME) the same app with
gcc; both apps, run on an input, write what the Python loader computes. The folder can be
moved: the files name nothing outside it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import edgec
from edgec import zoo

REPO = Path(__file__).resolve().parents[2]


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is missing: apt-get install {name} (.ci/run installs it)"
    return path


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """tiny_cnn compiled, then its folder moved elsewhere; (folder, input, loader output)."""
    d = tmp_path_factory.mktemp("pkg")
    art = edgec.compile(zoo.tiny_cnn(), d / "built", name="tiny")
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = next(iter(edgec.load(art.out_dir).run({"input": x}).values()))
    out = Path(shutil.move(str(art.out_dir), d / "moved"))
    for f in ("tinyConfig.cmake", "tiny.pc"):
        assert str(d) not in (out / f).read_text()
    x.tofile(d / "input0.bin")
    return out, d / "input0.bin", want


def run_app(exe: Path, inp: Path, tmp_path: Path) -> np.ndarray:
    subprocess.run([str(exe), str(inp), str(tmp_path / "out")], check=True, capture_output=True)
    return np.fromfile(tmp_path / "out0.bin", dtype=np.float32)


def test_cmake_find_package(moved, tmp_path):
    out, inp, want = moved
    build = tmp_path / "build"
    subprocess.run([tool("cmake"), "-S", str(REPO / "examples/cmake"), "-B", str(build),
                    "-DMODEL=tiny", f"-Dtiny_DIR={out}"], check=True, capture_output=True)
    subprocess.run([tool("cmake"), "--build", str(build)], check=True, capture_output=True)
    np.testing.assert_array_equal(run_app(build / "app", inp, tmp_path), want.reshape(-1))


def test_pkg_config(moved, tmp_path):
    out, inp, want = moved
    env = {**os.environ, "PKG_CONFIG_PATH": str(out)}
    flags = subprocess.run([tool("pkg-config"), "--cflags", "--libs", "tiny"], check=True,
                           capture_output=True, text=True, env=env).stdout.split()
    assert f"-I{out}" in flags and "-ltiny" in flags
    exe = tmp_path / "app"
    cflags = [f for f in flags if f.startswith("-I")]
    libs = [f for f in flags if not f.startswith("-I")]
    subprocess.run(["gcc", "-O2", "-DMODEL=tiny", *cflags, str(REPO / "examples/app/main.c"),
                    *libs, "-o", str(exe)], check=True)
    np.testing.assert_array_equal(run_app(exe, inp, tmp_path), want.reshape(-1))
