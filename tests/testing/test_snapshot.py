"""The generated-code snapshot (edgec/testing/snapshot.py): what it hashes, what it leaves out
and how it compares two runs."""

from __future__ import annotations

import hashlib

from edgec.testing import snapshot


def test_compare_names_each_changed_new_and_gone_file():
    old = {"mlp|x86|c|float": {"mlp.c": "aa", "mlp.h": "bb"}, "cnn|arm64|c|float": {"c.c": "1"}}
    new = {"mlp|x86|c|float": {"mlp.c": "ab", "mlp.h": "bb", "k.txt": "cc"},
           "cnn|armv7|c|float": {"c.c": "1"}}
    assert snapshot.compare(old, new) == [
        "cnn|arm64|c|float: gone build", "cnn|armv7|c|float: new build",
        "mlp|x86|c|float: k.txt", "mlp|x86|c|float: mlp.c"]
    assert snapshot.compare(old, old) == []


def test_report_timings_do_not_count(tmp_path):
    lines = ["pass                          time (s)      %  runs  changed",
             "fold-constants                   {t}   {p}%     1  no",
             "total                            {t}  100.0%",
             "compile time: import 0.007s, passes {t}s, total 1.3s",
             "k0_conv: blocked conv, 16 lanes"]
    a, b = tmp_path / "a" / "report.txt", tmp_path / "b" / "report.txt"
    for path, t, p in ((a, "0.02", "1.8"), (b, "32.08", "96.4")):
        path.parent.mkdir()
        path.write_text("\n".join(line.format(t=t, p=p) for line in lines))
    assert snapshot.digest(a) == snapshot.digest(b)
    b.write_text(b.read_text().replace("16 lanes", "8 lanes"))
    assert snapshot.digest(a) != snapshot.digest(b)


def test_a_build_hashes_every_file_of_the_artifact(tmp_path):
    key, files = snapshot.build(("tiny_cnn", "c-generic", "c", "float"), str(tmp_path))
    assert key == "tiny_cnn|c-generic|c|float"
    kept = tmp_path / "tiny_cnn-c-generic-c-float"
    assert {"tiny_cnn.c", "tiny_cnn.h", "tiny_cnn_weights.S", "report.txt"} <= set(files)
    assert "manifest.json" not in files and not any(f.endswith(".a") for f in files)
    c = (kept / "tiny_cnn.c").read_bytes()
    assert files["tiny_cnn.c"] == hashlib.sha256(c).hexdigest()[:16]
