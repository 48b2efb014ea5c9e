"""The kernel IR builder and the C renderer, checked by compiling and running the C."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np

from edgec.codegen.renderers.c import CRenderer
from edgec.ir.dtypes import DType
from edgec.kernel_ir.kernel import KernelBuilder, call, const, maximum, select, var
from edgec.runtime import C_DIR

F32 = DType.F32


def test_index_arithmetic_folds():
    i = var("i")
    assert (i * 1 + 0) is i
    assert (const(3) * 4 + 2).value == 14
    assert (i * 0).value == 0
    assert CRenderer().expr((i + 1) * 3 - (i - 2)) == "(i + 1) * 3 - (i - 2)"


def test_loop_of_extent_one_disappears():
    kb = KernelBuilder("k")
    y = kb.output("y", F32, (1, 4))
    with kb.loops([1, 4], ["n", "c"]) as (n, c):
        kb.store(y, y.offset(n, c), 1.0)
    text = CRenderer().kernel(kb.build())
    assert "for (ptrdiff_t n" not in text and "for (ptrdiff_t c = 0; c < 4; ++c)" in text


def compile_kernel(tmp_path, kernel_text: str, name: str):
    src = tmp_path / "k.c"
    src.write_text("#include <math.h>\n#include <stdbool.h>\n#include <stddef.h>\n"
                   "#include <stdint.h>\n#include \"edgec_runtime.h\"\n"
                   + kernel_text.replace("static void", "void"))
    so = tmp_path / "k.so"
    subprocess.run(["cc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                    f"-I{C_DIR}", str(src), "-o", str(so), "-lm"], check=True)
    return getattr(ctypes.CDLL(str(so)), name)


def test_softmax_kernel_compiles_and_matches_numpy(tmp_path):
    rows, cols = 3, 7
    kb = KernelBuilder("softmax_rows", "softmax over the last axis")
    x = kb.input("x", F32, (rows, cols))
    y = kb.output("y", F32, (rows, cols))
    with kb.loop(rows, "r") as r:
        m = kb.local("m", x.at(r, 0))
        with kb.loop(cols, "c") as c:
            kb.assign(m, maximum(m, x.at(r, c)))
        s = kb.local("s", 0.0)
        with kb.loop(cols, "c") as c:
            e = call("exp", x.at(r, c) - m)
            kb.store(y, y.offset(r, c), e)
            kb.assign(s, s + e)
        with kb.loop(cols, "c") as c:
            kb.store(y, y.offset(r, c), y.at(r, c) / s)
    fn = compile_kernel(tmp_path, CRenderer().kernel(kb.build()), "softmax_rows")
    a = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    out = np.empty_like(a)
    fn(a.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p))
    ref = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(out, ref / ref.sum(1, keepdims=True), rtol=1e-6)


def test_if_else_select_and_casts(tmp_path):
    kb = KernelBuilder("k")
    x = kb.input("x", F32, (8,))
    y = kb.output("y", DType.I32, (8,))
    with kb.loop(8) as i:
        with kb.if_(x[i] > 0.0):
            kb.store(y, i, x[i].cast(DType.I32) * 2)
        with kb.else_():
            kb.store(y, i, select(x[i] < -1.0, -7, 0))
    fn = compile_kernel(tmp_path, CRenderer().kernel(kb.build()), "k")
    a = np.array([1.5, -0.5, -3, 2.9, 0, 7.2, -1.0, -1.01], np.float32)
    out = np.empty(8, np.int32)
    fn(a.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p))
    want = np.where(a > 0, a.astype(np.int32) * 2, np.where(a < -1, -7, 0))
    np.testing.assert_array_equal(out, want)


def test_float_literals_round_trip_float32():
    r = CRenderer()
    assert r.literal(0.1, F32) == "0.1f"
    assert r.literal(1e-5, F32) == "1e-05f"
    assert r.literal(float("inf"), F32) == "INFINITY"
    assert r.literal(3, DType.INDEX) == "3"


def test_fresh_names_never_collide():
    kb = KernelBuilder("k")
    names = [kb.local("w0_1", 0.0).args[0] for _ in range(3)]
    names += [kb.local("w0_12", 0.0).args[0], kb.local("w0_1", 0.0).args[0]]
    assert len(set(names)) == len(names)


def test_comparisons_inside_equality_are_parenthesized():
    a, b = var("a", F32), var("b", F32)
    assert CRenderer().expr((a < 0.0).ne(b < 0.0)) == "(a < 0.0f) != (b < 0.0f)"


def test_partial_unroll_hint_keeps_the_loop_exact(tmp_path):
    # an odd extent: the compiler's remainder iteration must run too
    kb = KernelBuilder("prefix")
    x = kb.input("x", F32, (7,))
    y = kb.output("y", F32, (7,))
    s = kb.local("s", 0.0)
    with kb.loop(7, "i", unroll=2) as i:
        kb.assign(s, s + x[i])
        kb.store(y, i, s)
    text = CRenderer().kernel(kb.build())
    assert '_Pragma("GCC unroll 2")' in text
    fn = compile_kernel(tmp_path, text, "prefix")
    a = np.arange(1, 8, dtype=np.float32)
    out = np.empty_like(a)
    fn(a.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p))
    np.testing.assert_array_equal(out, np.cumsum(a))


def test_integer_folding_divides_as_c_does_and_exactly():
    """C's integer / and % round toward zero; 2**60 + 1 = 3 x 384307168202282325 + 2, which
    a float quotient (53 bits) would get wrong."""
    from edgec.kernel_ir.kernel import _fold

    assert _fold("div", 2**60 + 1, 3) == 384307168202282325
    assert _fold("mod", 2**60 + 1, 3) == 2
    assert [_fold("div", a, b) for a, b in ((-7, 2), (7, -2), (-7, -2))] == [-3, -3, 3]
    assert [_fold("mod", a, b) for a, b in ((-7, 2), (7, -2), (-7, -2))] == [-1, 1, -1]
