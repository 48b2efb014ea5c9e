"""One CompileOptions for the CLI and the Python API (compiler/options.py)."""

from __future__ import annotations

import json

import onnx
import pytest

import edgec
from edgec import zoo
from edgec.compiler.cli import main
from edgec.compiler.options import CompileOptions
from edgec.errors import EdgecError


def test_keywords_go_over_the_options(tmp_path):
    base = CompileOptions(target="c-generic", name="a", threads=False)
    art = edgec.compile(zoo.MODELS["mlp"](), tmp_path / "a", base, name="b")
    assert art.manifest["name"] == "b" and art.manifest["target"] == "c-generic"
    assert art.manifest["threads"] is False
    assert base.name == "a"  # frozen: the caller's options are not changed


def test_the_cli_and_the_api_build_the_same_library(tmp_path):
    onnx.save(zoo.MODELS["mlp"](), tmp_path / "mlp.onnx")
    assert main(["compile", str(tmp_path / "mlp.onnx"), "-o", str(tmp_path / "cli"),
                 "--target", "x86-avx2", "--single-threaded", "--no-tune"]) == 0
    edgec.compile(tmp_path / "mlp.onnx", tmp_path / "api",
                  CompileOptions(target="x86-avx2", threads=False, tune=False))
    cli, api = (json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("cli", "api"))
    assert cli == api
    assert (tmp_path / "cli" / "mlp.c").read_text() == (tmp_path / "api" / "mlp.c").read_text()


def test_bad_options_are_named(tmp_path):
    with pytest.raises(TypeError, match="unknown option\\(s\\) quantise; options: target"):
        edgec.compile(zoo.MODELS["mlp"](), tmp_path / "x", quantise="int8")
    with pytest.raises(EdgecError, match="give quantize= or a pipeline"):
        CompileOptions(quantize="int8", pipeline="dce").checked()
    with pytest.raises(EdgecError, match="report='pdf': choose html"):
        edgec.compile(zoo.MODELS["mlp"](), tmp_path / "x", report="pdf")
