"""Reproducible builds: the same model compiled twice, into folders at different paths (one
a long temporary path), gives byte-identical sources, weights, manifest and libNAME.a: no
timestamps, paths or set order leak into them. report.txt keeps the compile times."""

from __future__ import annotations

import io

import pytest

import edgec
from edgec import zoo


@pytest.mark.parametrize("options", [{}, {"compress": True, "prune": 0.8},
                                     {"backend": "llvm"}])
def test_two_compiles_are_byte_identical(options, tmp_path):
    model = zoo.save(zoo.tiny_cnn(), tmp_path / "tiny.onnx")
    a = edgec.compile(model, tmp_path / "a", name="tiny", log=io.StringIO(), **options)
    b = edgec.compile(model, tmp_path / "somewhere" / "else" / "b", name="tiny",
                      log=io.StringIO(), **options)
    files = sorted(p.name for p in a.out_dir.iterdir() if p.name != "report.txt")
    assert files == sorted(p.name for p in b.out_dir.iterdir() if p.name != "report.txt")
    assert {"manifest.json", "libtiny.a", "tiny.h", "tiny.c", "tiny.weights.bin"} <= set(files)
    differ = [f for f in files if (a.out_dir / f).read_bytes() != (b.out_dir / f).read_bytes()]
    assert not differ, differ
    assert "compile time:" in (a.out_dir / "report.txt").read_text()
    assert a.timing["total"] > 0 and "timing_s" not in a.manifest
