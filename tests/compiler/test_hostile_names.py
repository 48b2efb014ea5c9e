"""Names from the model reach the generated C only as escaped string literals or inside
comments made safe (codegen/ctext.py): a tensor named to close a comment and define a macro,
quotes, backslashes, a newline, a trigraph and non-ASCII letters. An app that includes the
header compiles without the macro (strict C11, trigraphs on) and reads the names back byte
for byte; the library computes what onnxruntime computes."""

from __future__ import annotations

import subprocess

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

import edgec
from edgec.codegen.ctext import c_comment, c_string

HOSTILE_IN = "x*/ #define EDGEC_LEAKED 1 /*"
HOSTILE_OUT = 'y "q" \\ ??/ \n é*/'


def hostile_model(path):
    g = helper.make_graph(
        [helper.make_node("Relu", [HOSTILE_IN], ["h*/h"], name="relu*/ #include <nope>"),
         helper.make_node("Add", ["h*/h", "h*/h"], [HOSTILE_OUT], name="add\n#error no")],
        "g*/", [helper.make_tensor_value_info(HOSTILE_IN, TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(HOSTILE_OUT, TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    onnx.save(m, path)
    return m


def test_escaping_helpers():
    assert c_comment("a*/b/*c\nd") == "a* /b/ *c?d"
    assert c_comment("*//*") == "* // *" and "*/" not in c_comment("**//") + c_comment("/**/")
    assert c_string('a"b\\c??/\n') == '"a\\042b\\134c\\077\\077/\\012"'
    assert c_string("é") == '"\\303\\251"'


def test_hostile_names_stay_names(tmp_path):
    src = tmp_path / 'model "q" ??.onnx'
    m = hostile_model(src)
    art = edgec.compile(src, tmp_path / "out", name="hostile")
    app = tmp_path / "app.c"
    app.write_text(
        '#include <stdio.h>\n#include <string.h>\n#include "hostile.h"\n'
        "#ifdef EDGEC_LEAKED\n#error the header defined a macro from a tensor name\n#endif\n"
        "int main(void) {\n"
        '    fputs(HOSTILE_INPUT0_NAME, stdout); putchar(0);\n'
        '    fputs(hostile_output_name(0), stdout); putchar(0);\n'
        "    return strcmp(HOSTILE_OUTPUT0_NAME, hostile_output_name(0)) != 0;\n}\n")
    exe = tmp_path / "app"
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(art.out_dir),
                    str(app), str(art.library), "-lm", "-pthread", "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True).stdout
    assert out.split(b"\0")[:2] == [HOSTILE_IN.encode(), HOSTILE_OUT.encode()]
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    want = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {HOSTILE_IN: x})
    got = edgec.load(art.out_dir).run({HOSTILE_IN: x})
    np.testing.assert_allclose(got[HOSTILE_OUT], want[0])
