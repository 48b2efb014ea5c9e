"""edgec's value conversion (`edgec.ir.dtypes.convert`), pinned by hand-worked values through
the interpreter and on every target and backend.

Floats to integers truncate toward zero and saturate to the type's range, NaN giving 0; C leaves
these cases undefined, and x86's SSE and AVX-512 conversions answer them differently (a float
-> uint32 of 2^32 gave 0 on one and 4294967295 on the other before edgec defined it). Integers
to narrower integers keep the low bits. Shrink and an integer Pow, which compute in float,
convert back the same way.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import runs_here

import edgec
from edgec.compiler.driver import compile_graph
from edgec.ir import DType, Graph, TensorType, interpret
from edgec.ir.onnx_dtypes import to_onnx

NAN, INF = float("nan"), float("inf")
FLOATS = [NAN, -INF, -1e30, -3e9, -129.5, -3.7, -0.9, -0.0, 0.9, 127.9, 255.5, 256.0, 65535.9,
          3e9, 4294967296.0, 1e19, 1e30, INF]
I32_MIN, I32_MAX, I64_MIN, I64_MAX = -2**31, 2**31 - 1, -2**63, 2**63 - 1
# float32 and float64 sources alike, but for 1e19 as uint64 (float32 holds 9999999980506447872)
EXPECTED = {
    DType.I8: [0, -128, -128, -128, -128, -3, 0, 0, 0, 127, 127, 127, 127, 127, 127, 127, 127,
               127],
    DType.U8: [0, 0, 0, 0, 0, 0, 0, 0, 0, 127, 255, 255, 255, 255, 255, 255, 255, 255],
    DType.I16: [0, -32768, -32768, -32768, -129, -3, 0, 0, 0, 127, 255, 256, 32767, 32767,
                32767, 32767, 32767, 32767],
    DType.U16: [0, 0, 0, 0, 0, 0, 0, 0, 0, 127, 255, 256, 65535, 65535, 65535, 65535, 65535,
                65535],
    DType.I32: [0, I32_MIN, I32_MIN, I32_MIN, -129, -3, 0, 0, 0, 127, 255, 256, 65535, I32_MAX,
                I32_MAX, I32_MAX, I32_MAX, I32_MAX],
    DType.U32: [0, 0, 0, 0, 0, 0, 0, 0, 0, 127, 255, 256, 65535, 3000000000, 2**32 - 1,
                2**32 - 1, 2**32 - 1, 2**32 - 1],
    DType.I64: [0, I64_MIN, I64_MIN, -3000000000, -129, -3, 0, 0, 0, 127, 255, 256, 65535,
                3000000000, 2**32, I64_MAX, I64_MAX, I64_MAX],
    DType.U64: [0, 0, 0, 0, 0, 0, 0, 0, 0, 127, 255, 256, 65535, 3000000000, 2**32, "1e19",
                2**64 - 1, 2**64 - 1],
    DType.BOOL: [True] * 7 + [False] + [True] * 10,
}
ONE_E19 = {DType.F32: 9999999980506447872, DType.F64: 10**19}
# int32 to narrower types keeps the low bits: 300 -> 44, 70000 -> 4464 (int16) or 112 (8 bits)
INTS = [300, -1, 70000, I32_MIN, I32_MAX]
WRAPPED = {DType.I8: [44, -1, 112, 0, -1], DType.U8: [44, 255, 112, 0, 255],
           DType.I16: [300, -1, 4464, 0, -1], DType.U16: [300, 65535, 4464, 0, 65535],
           DType.U32: [300, 2**32 - 1, 70000, 2**31, I32_MAX],
           DType.U64: [300, 2**64 - 1, 70000, 2**64 - 2**31, I32_MAX]}
# Shrink(bias=1, lambd=2.5) of the largest uint32/uint64: float32 rounds it up to 2^32 (2^64),
# minus 1 is the same float, which is out of range and saturates
SHRINK_IN, SHRINK_OUT = [0, 7, 2], [0, 6, 0]
# Pow of int32 in doubles: 2^40 and 0^-1 = inf above the range, (-2)^33 below it
POW_X, POW_Y, POW_OUT = [2, 0, -2, -2, 3], [40, -1, 31, 33, 2], [I32_MAX, I32_MAX, I32_MIN,
                                                                  I32_MIN, 9]


def expected(src: DType, dst: DType) -> np.ndarray:
    vals = [ONE_E19[src] if v == "1e19" else v for v in EXPECTED[dst]]
    return np.array(vals, dtype=dst.np)


def conversion_graph() -> tuple[Graph, dict, dict]:
    """Every float source to every integer type and bool, int32 to the narrower integers,
    Shrink and Pow; the inputs, and the hand-worked outputs by name."""
    g = Graph("conversion")
    feeds, want, outs = {}, {}, []
    for src in (DType.F32, DType.F64):
        x = g.add_input(f"x_{src}", TensorType((len(FLOATS),), src))
        feeds[x.name] = np.array(FLOATS, src.np)
        for dst in EXPECTED:
            (y,) = g.add_node("Cast", [x], {"to": to_onnx(dst)}, name=f"{src}_to_{dst}").outputs
            want[y.name] = expected(src, dst)
            outs.append(y)
    i = g.add_input("ints", TensorType((len(INTS),), DType.I32))
    feeds[i.name] = np.array(INTS, np.int32)
    for dst, vals in WRAPPED.items():
        (y,) = g.add_node("Cast", [i], {"to": to_onnx(dst)}, name=f"i32_to_{dst}").outputs
        want[y.name] = np.array(vals, dst.np)
        outs.append(y)
    for dt in (DType.U32, DType.U64):
        s = g.add_input(f"s_{dt}", TensorType((4,), dt))
        top = np.iinfo(dt.np).max
        feeds[s.name] = np.array(SHRINK_IN + [top], dt.np)
        (y,) = g.add_node("Shrink", [s], {"bias": 1.0, "lambd": 2.5}, name=f"shrink_{dt}").outputs
        want[y.name] = np.array(SHRINK_OUT + [top], dt.np)
        outs.append(y)
    px = g.add_input("px", TensorType((5,), DType.I32))
    py = g.add_input("py", TensorType((5,), DType.I32))
    feeds.update(px=np.array(POW_X, np.int32), py=np.array(POW_Y, np.int32))
    (y,) = g.add_node("Pow", [px, py], name="pow_i32").outputs
    want[y.name] = np.array(POW_OUT, np.int32)
    g.outputs = outs + [y]
    return g, feeds, want


def check(got: dict, want: dict, where: str) -> None:
    for name, w in want.items():
        assert got[name].dtype == w.dtype, (where, name)
        np.testing.assert_array_equal(got[name], w, err_msg=f"{where}: {name}")


def test_interpreter():
    g, feeds, want = conversion_graph()
    check(interpret(g, feeds), want, "interpreter")


PLATFORMS = [("x86", "c"), ("x86-avx2", "c"), ("x86-avx512", "c"), ("c-generic", "c"),
             ("arm64", "c"), ("armv7", "c"), ("x86", "llvm"), ("x86-avx512", "llvm"),
             ("arm64", "llvm")]


@pytest.mark.parametrize("target,backend", PLATFORMS, ids=[f"{t}-{b}" for t, b in PLATFORMS])
def test_every_target_and_backend(target, backend, tmp_path):
    g, feeds, want = conversion_graph()
    compile_graph(g, tmp_path, target=target, name="conv", backend=backend)
    if runs_here(target):  # x86-avx512 on an AVX2 host: compiled only
        check(edgec.load(tmp_path).run(feeds), want, f"{target} {backend}")
