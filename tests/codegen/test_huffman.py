"""Huffman-coded weights (`--compress`): the coder (codegen/huffman.py) on codes worked out
by hand, its C decoder (codegen/c/edgec_huffman.h) compiled and run on coded and damaged
streams, and whole libraries built with coded weights that compute bit for bit what the
same library with plain weights computes, on x86 (C and LLVM) and arm64 under qemu.
"""

from __future__ import annotations

import ctypes
import json
import subprocess

import numpy as np
import pytest
from convnets import OnnxNet, random_feeds
from harness import runs_here
from onnx import numpy_helper

import edgec
from edgec.codegen.huffman import (
    BYTES,
    MAX_BITS,
    RUNS,
    canonical_codes,
    code_array,
    code_lengths,
    decode_array,
    decode_bytes,
    encode_bytes,
    from_run_symbols,
    run_symbols,
)
from edgec.codegen.runtime_c import C_DIR
from edgec.compiler.cli import main as cli_main


def test_codes_by_hand():
    # CLRS's example: a 45, b 13, c 12, d 16, e 9, f 5 -> lengths 1, 3, 3, 3, 4, 4; canonical:
    # a 0, b 100, c 101, d 110, e 1110, f 1111
    freq = np.zeros(256, np.int64)
    freq[:6] = [45, 13, 12, 16, 9, 5]
    lengths = code_lengths(freq)
    assert lengths[:6].tolist() == [1, 3, 3, 3, 4, 4] and not lengths[6:].any()
    assert canonical_codes(lengths)[:6].tolist() == [0b0, 0b100, 0b101, 0b110, 0b1110, 0b1111]
    data = bytes([0] * 45 + [1] * 13 + [2] * 12 + [3] * 16 + [4] * 9 + [5] * 5)
    lengths, stream = encode_bytes(data)
    assert len(stream) == -(-(45 + 3 * 41 + 4 * 14) // 8)
    # the same bytes starting "a b f": 0 100 1111 -> 0x4f
    rest = bytearray(data)
    for s in (0, 1, 5):
        rest.remove(s)
    _, stream = encode_bytes(bytes([0, 1, 5]) + bytes(rest))
    assert stream[0] == 0x4F
    # one symbol: one bit each
    lengths, stream = encode_bytes(b"\x07" * 16)
    assert lengths[7] == 1 and lengths.sum() == 1 and stream == b"\x00\x00"


def test_lengths_are_limited_and_still_a_code():
    # Fibonacci counts make Huffman's codes as long as there are symbols
    fib = [1, 1]
    while len(fib) < 30:
        fib.append(fib[-1] + fib[-2])
    freq = np.zeros(256, np.int64)
    freq[:30] = fib
    lengths = code_lengths(freq)
    used = lengths[:30].astype(np.int64)
    assert used.max() == MAX_BITS and (used > 0).all()
    assert sum(2.0 ** -used) <= 1.0
    data = np.repeat(np.arange(30, dtype=np.uint8), np.minimum(fib, 3000)).tobytes()
    ln, stream = encode_bytes(data)
    assert decode_bytes(ln, stream, len(data)) == data


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    """A program that decodes file argv[1] (a coded array) into argv[2] bytes in alphabet
    argv[3] on stdout and exits with 3 when the decoder refuses it."""
    d = tmp_path_factory.mktemp("huff")
    (d / "main.c").write_text(
        '#include <stdio.h>\n#include <stdlib.h>\n#include "edgec_huffman.h"\n'
        "int main(int argc, char **argv) {\n"
        "    static uint8_t in[1 << 20]; FILE *f = fopen(argv[1], \"rb\");\n"
        "    size_t m = fread(in, 1, sizeof in, f); size_t n = (size_t)atol(argv[2]);\n"
        "    uint8_t *out = malloc(n + 1);\n"
        "    if (edgec_huffman_decode(in, m, out, n, atoi(argv[3])) != 0) return 3;\n"
        "    fwrite(out, 1, n, stdout); return 0; }\n")
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-I", str(C_DIR), str(d / "main.c"),
                    "-o", str(d / "dec")], check=True)
    return d


def run_decoder(d, data: bytes, n: int, alphabet: int = BYTES) -> tuple[int, bytes]:
    (d / "in.bin").write_bytes(data)
    p = subprocess.run([str(d / "dec"), str(d / "in.bin"), str(n), str(alphabet)],
                       capture_output=True)
    return p.returncode, p.stdout


def test_zero_runs_as_symbols_by_hand():
    # 3, then 2 zeros, 7, 300 zeros (a run of 256 and one of 44), 9, then 1 zero
    data = bytes([3, 0, 0, 7] + [0] * 300 + [9, 0])
    assert run_symbols(data).tolist() == [3, 257, 7, 511, 299, 9, 256]
    assert from_run_symbols(run_symbols(data)) == data
    assert run_symbols(b"").size == 0 and run_symbols(bytes(256)).tolist() == [511]


@pytest.mark.parametrize("kind,alphabet", [("sparse int8", RUNS), ("geometric", BYTES),
                                           ("uniform", 0), ("two symbols", BYTES),
                                           ("long zero runs", RUNS)])
def test_c_decoder_gives_the_bytes_back(decoder, kind, alphabet):
    rng = np.random.default_rng(3)
    data = {"sparse int8": np.where(rng.random(50000) < 0.9, 0,
                                    rng.integers(-20, 20, 50000)).astype(np.int8).tobytes(),
            "geometric": np.minimum(rng.geometric(0.3, 20000), 255).astype(np.uint8).tobytes(),
            "uniform": rng.integers(0, 256, 30000, dtype=np.uint8).tobytes(),
            "two symbols": bytes([1, 200] * 5000),
            "long zero runs": bytes(5000) + bytes([4]) + bytes(700) + bytes([5, 6])}[kind]
    ca = code_array(data)
    assert ca.alphabet == alphabet, ca.alphabet
    assert decode_array(ca) == data
    if not alphabet:  # coding would not make it smaller: stored as it is
        return
    assert len(ca.data) < len(data)
    rc, out = run_decoder(decoder, ca.data, len(data), alphabet)
    assert rc == 0 and out == data


def test_c_decoder_refuses_damaged_streams(decoder):
    data = bytes([0] * 900 + [1] * 60 + [2] * 40)
    ca = code_array(data)
    assert ca.coded
    assert run_decoder(decoder, ca.data[:-3], len(data))[0] == 3  # ends early
    assert run_decoder(decoder, ca.data[:100], len(data))[0] == 3  # no whole length table
    bad = bytearray(ca.data)
    bad[0] = 0xFF  # symbols 0 and 1 of length 15: longer than any code
    assert run_decoder(decoder, bytes(bad), len(data))[0] == 3
    bad = bytearray(ca.data)
    bad[:128] = bytes([0x11] * 128)  # 256 codes of one bit: not a prefix code
    assert run_decoder(decoder, bytes(bad), len(data))[0] == 3
    assert run_decoder(decoder, ca.data, len(data), 300)[0] == 3  # no such alphabet
    # a run of zeros past the array's end
    runs = code_array(bytes(6000) + b"\x01")
    assert runs.alphabet == RUNS
    assert run_decoder(decoder, runs.data, 6001, RUNS) == (0, bytes(6000) + b"\x01")
    assert run_decoder(decoder, runs.data, 5000, RUNS)[0] == 3


def pruned_cnn():
    n = OnnxNet("coded", seed=7)
    x = n.input("input", [1, 3, 16, 16])
    a = n.node("Relu", [n.conv(x, 3, 32, 3)])
    b = n.node("Relu", [n.conv(a, 32, 64, 3, stride=2)])
    g = n.node("GlobalAveragePool", [b])
    f = n.node("Flatten", [g])
    n.output(n.node("Gemm", [f, n.weight((10, 64)), n.weight((10,), 0.1)], transB=1))
    m = n.model()
    rng = np.random.default_rng(8)
    for init in m.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim >= 2:
            w = np.where(rng.random(w.shape) < 0.8, 0, w).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(w, init.name))
    return m


@pytest.mark.parametrize("target,backend,quantize", [
    ("x86", "c", "int8"), ("x86", "llvm", "int8"), ("x86", "c", None), ("arm64", "c", "int8")])
def test_library_with_coded_weights_computes_the_same(target, backend, quantize, tmp_path):
    m = pruned_cnn()
    arts = [edgec.compile(m, tmp_path / f"out{c}", target=target, name="coded",
                          backend=backend, quantize=quantize, compress=c) for c in (False, True)]
    plain, coded = (a.manifest["weights"] for a in arts)
    assert plain["coded_bytes"] is None and plain["decoded_buffer_bytes"] == 0
    assert coded["packed_bytes"] == plain["packed_bytes"]
    assert coded["float32_bytes"] == plain["float32_bytes"] > coded["packed_bytes"]
    assert coded["coded_bytes"] < coded["packed_bytes"] <= coded["decoded_buffer_bytes"]
    header = (arts[1].out_dir / "coded.h").read_text()
    assert f"#define CODED_WEIGHTS_BUFFER_BYTES {coded['decoded_buffer_bytes']}" in header
    assert "Huffman coded" in (arts[1].out_dir / "report.txt").read_text()
    if not runs_here(target):
        return
    feeds = random_feeds(m)
    want = edgec.load(arts[0].out_dir).run(feeds)
    lib = edgec.load(arts[1].out_dir)
    for t in (1, 2):
        lib.set_num_threads(t)
        got = lib.run(feeds)
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])


def test_init_decodes_once_and_cli_flag(tmp_path, capsys):
    m = pruned_cnn()
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    assert cli_main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "out"),
                     "--name", "coded", "--quantize", "int8", "--compress"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["weights"]["coded_bytes"] < manifest["weights"]["packed_bytes"]
    lib = edgec.load(tmp_path / "out")
    init = lib._lib.coded_init
    init.restype = ctypes.c_int
    assert init() == 0 and init() == 0  # decoded once; the second call finds it ready
    feeds = random_feeds(m)
    first = lib.run(feeds)
    assert all(np.array_equal(first[k], v) for k, v in lib.run(feeds).items())
