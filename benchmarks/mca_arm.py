"""ARM speed as a model, not a timing: llvm-mca's cycles per iteration of the hot loop of
edgec's float32 and int8 convolution micro-kernels on named cores (nothing ARM runs here but
qemu, whose timings mean nothing).

A 3x3 convolution (C channels in and out, HxW, ReLU) is compiled by edgec for `arm64` (float32,
and int8 with calibrated uint8 activations: NEON's dot4 without dotprod, two k-groups' products
summed in int16 by `smull`/`smlal` and added into int32 pairs by `sadalp`) and `arm64-dotprod`
(int8: the `sdot` version of the same micro-kernel); each library's C is compiled to assembly
with the target's own flags by the Debian cross compiler, and the innermost loop that does the
most multiplies is given to Debian's llvm-mca (LLVM 14) per core. Per loop iteration:

- multiply-accumulates from its multiply instructions only (never `sadalp` or `addp`):
  `fmla .4s` 4, `mul/smull/smlal(2) .8h` 8, `sdot .4s` 16, except an `sdot` whose operand is
  the 0x80 bytes the u8 activations were re-centred with (the correction term 128 * sum(b),
  work that computes no product);
- the core's peak in the same model: a loop of 12 independent `fmla .4s` (float32), of 12
  `sdot` (int8 with dotprod), and of 12 `smlal .8h` with their `sadalp` (int8 without:
  8-bit products widened to 16 bits, summed in pairs into 32 bits), as MACs per cycle.

    python benchmarks/mca_arm.py [--channels 64] [--size 28] [--cpus cortex-a53,cortex-a55,...]
                                [--loops 2]

Needs aarch64-linux-gnu-gcc and llvm-mca-14 (Debian: gcc-aarch64-linux-gnu, llvm-14).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import edgec

CPUS = ("cortex-a53", "cortex-a55", "cortex-a76", "neoverse-n1")
BRANCH = re.compile(r"\s+(?:b\.?(?:eq|ne|[cvh][sc]|mi|pl|hi|ls|[lg][te])?|cbn?z|tbn?z)\s+"
                    r"(?:.*,\s*)?(\.L\w+)$")
PEAK_LOOPS = {
    "fp32": ["fmla v{i}.4s, v28.4s, v29.4s"],
    "int8 sdot": ["sdot v{i}.4s, v28.16b, v29.16b"],
    "int8 smlal": ["smull v{i}.8h, v28.8b, v29.8b", "smlal2 v{i}.8h, v28.16b, v29.16b",
                   "sadalp v{j}.4s, v{i}.8h"],
}


def conv_model(c: int, size: int):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((c, c, 3, 3)) * np.sqrt(2 / (9 * c))).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["y"], ["z"])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, c, size, size])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.zeros(c, np.float32), "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def functions(asm: str) -> dict[str, list[str]]:
    """Each function's lines in gcc's assembly."""
    out, name = {}, None
    for line in asm.splitlines():
        m = re.match(r"^([A-Za-z_][\w.]*):", line)
        if m and not line.startswith(".L"):
            name = m.group(1)
            out[name] = []
        elif name:
            out[name].append(line)
    return out


def innermost_loops(body: list[str]) -> list[list[str]]:
    """The loops (a label and a branch back to it) that hold no other loop, as instructions."""
    labels = {m.group(1): i for i, line in enumerate(body) if (m := re.match(r"^(\.L\w+):", line))}
    spans = [(labels[m.group(1)], i) for i, line in enumerate(body)
             if (m := BRANCH.match(line)) and labels.get(m.group(1), i) < i]
    inner = [(a, b) for a, b in spans
             if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in spans)]
    return [[x for x in body[a + 1:b + 1] if x.strip() and not x.strip().startswith(".")]
            for a, b in inner]


def macs(loop: list[str]) -> int:
    """Multiply-accumulates one iteration does (see the module doc)."""
    eor = re.compile(r"eor\s+v\d+\.16b, v\d+\.16b, (v\d+)")
    recentre = {m.group(1) for x in loop if (m := eor.search(x))}
    n = 0
    for x in loop:
        op = x.split()[0]
        if op == "fmla" and ".4s" in x:
            n += 4
        elif op in ("mul", "smull", "smull2", "smlal", "smlal2", "umull", "umull2") and ".8h" in x:
            n += 8
        elif op == "sdot" and not any(f"{r}.16b" in x for r in recentre):
            n += 16
    return n


def mca(lines: list[str], cpu: str) -> float:
    """llvm-mca's cycles per iteration of `lines` on `cpu`."""
    r = subprocess.run(["llvm-mca-14", "-mtriple=aarch64", f"-mcpu={cpu}",
                        "-mattr=+dotprod", "-iterations=200"],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    return int(re.search(r"Total Cycles:\s+(\d+)", r.stdout).group(1)) / 200


def peak(kind: str, cpu: str) -> float:
    # each step for all 12 chains before the next step, which an in-order core needs
    lines = [t.format(i=i, j=i + 12) for t in PEAK_LOOPS[kind] for i in range(12)]
    return macs(lines) / mca(lines, cpu)


def hot_loops(out: Path, keep: int) -> list[tuple[str, list[str]]]:
    """The `keep` innermost loops of the artifact in `out` that do the most multiplies per
    iteration (the micro-kernels' widest tiles first), with their functions' names."""
    man = json.loads((out / "manifest.json").read_text())
    asm = out / "model.s"
    subprocess.run(["aarch64-linux-gnu-gcc", *man["cflags"], "-S", "-I", str(out),
                    str(out / f"{man['name']}.c"), "-o", str(asm)], check=True)
    found = [(name, loop) for name, body in functions(asm.read_text()).items()
             for loop in innermost_loops(body) if macs(loop)]
    return sorted(found, key=lambda nl: -macs(nl[1]))[:keep]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--size", type=int, default=28)
    ap.add_argument("--cpus", default=",".join(CPUS))
    ap.add_argument("--loops", type=int, default=2, help="loops per build (most MACs first)")
    a = ap.parse_args()
    cpus = a.cpus.split(",")
    m = conv_model(a.channels, a.size)
    calib = {"x": np.abs(np.random.default_rng(1).standard_normal(
        (4, a.channels, a.size, a.size))).astype(np.float32)}
    builds = {"fp32 (arm64)": ("arm64", {}, "fp32"),
              "int8 NEON (arm64)": ("arm64", {"quantize": "int8", "calib": calib}, "int8 smlal"),
              "int8 sdot (arm64-dotprod)": ("arm64-dotprod",
                                            {"quantize": "int8", "calib": calib}, "int8 sdot")}
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for label, (target, opts, kind) in builds.items():
            out = Path(tmp) / re.sub(r"\W+", "_", label)
            edgec.compile(m, out, target=target, name="model", log=open("/dev/null", "w"),
                          **opts)
            for fn, loop in hot_loops(out, a.loops):
                mix = Counter(x.split()[0] for x in loop)
                # the dotprod library's NEON version is what a core without dotprod runs
                k = "int8 smlal" if kind == "int8 sdot" and "sdot" not in mix else kind
                rows.append((label, k, fn, loop, macs(loop), mix))
    print(f"3x3 conv {a.channels}->{a.channels} at {a.size}x{a.size}, llvm-mca (LLVM 14) model\n")
    print("| kernel | loop | instructions | MACs | " + " | ".join(cpus) + " |")
    print("|---|---|---|---|" + "---|" * len(cpus))
    for label, kind, fn, loop, n, mix in rows:
        cells = []
        for cpu in cpus:
            if kind == "int8 sdot" and cpu == "cortex-a53":
                cells.append("(no dotprod)")
                continue
            rate = n / mca(loop, cpu)
            cells.append(f"{rate:.2f} MAC/c ({rate / peak(kind, cpu):.0%} of {kind} peak)")
        top = ", ".join(f"{k} {v}" for k, v in mix.most_common(4))
        print(f"| {label} | {fn} | {len(loop)} ({top}) | {n} | " + " | ".join(cells) + " |")
    print("\npeaks in the same model (MAC/cycle): " + "; ".join(
        f"{cpu}: " + ", ".join(f"{k} {peak(k, cpu):.1f}" for k in PEAK_LOOPS) for cpu in cpus))


if __name__ == "__main__":
    main()
