"""The HLS estimate (codegen/hls_estimate.py) against public synthesis reports of comparable
layers (issue 34, point 6): hls4ml's checked-in C-synthesis baselines (Vitis HLS 2024.1,
xcu250-figd2104-2L-e at 200 MHz, the part and clock edgec's benchmarks use), one per layer of
hls4ml's Keras API tests that maps onto edgec's matrix-vector unit. No vendor tool runs here:
the reports are read from the hls4ml repository (path and commit below), and each layer is
rebuilt as the ProcessModel of a unit of the same shape, bits and parallelism (hls4ml's reuse
factor 1: every product of an output at once, so PE = outputs, SIMD = terms; its default
ap_fixed<16,6> for weights, inputs and accumulators), whose estimate is compared.

    python benchmarks/hls_vs_synthesis.py

What differs between the designs, and so bounds what the comparison can say, is printed with
each layer: hls4ml's io_parallel layers take a whole input a cycle from registers (edgec's
processes read a frame a value a cycle, so only the compute cycles compare), and its weights
are constants in the logic (Vitis maps a product by a small constant to LUTs; edgec's model
reads weights from a ROM and costs a DSP a 16-bit product).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from edgec.codegen.hls_estimate import ProcessModel, resources

REPO = "fastmachinelearning/hls4ml"


@dataclass(frozen=True)
class Baseline:
    """A layer of hls4ml's tests and its checked-in C-synthesis report."""

    name: str
    path: str  # in REPO, test/pytest/baselines/Vitis/2024.1/
    commit: str
    layer: str  # the Keras layer, as the test builds it
    k: int  # terms of an output
    n: int  # outputs computed at once (reuse factor 1)
    vectors: int  # output vectors (pixels) a frame
    report: dict  # the report's LUT, DSP, BRAM18, interval (cycles)
    note: str


BASELINES = (
    Baseline("dense 1 -> 2 + ELU, io_parallel",
             "hls4mlprj_keras_api_dense_Vitis_io_parallel.json",
             "ae3531ea9d3e88090b2a8f11baf4f7c0b8b12dac",
             "Dense(2) on 1 input, then ELU (test_keras_api.py test_dense)", 1, 2, 1,
             {"lut": 354, "dsp": 2, "bram18": 1, "interval": 1},
             "the report includes the ELU (its table: the 1 BRAM18); edgec has no ELU unit"),
    Baseline("dense 1 -> 2 + ELU, io_stream",
             "test_keras_api_test_dense_io_stream-Vitis.json",
             "d79ad7625d3707f5e72d294f3a6013282ed7de8c",
             "the same, streamed", 1, 2, 1,
             {"lut": 279, "dsp": 2, "bram18": 1, "interval": 4},
             "as above; the interval is the stream's handshakes, not the product's"),
    Baseline("conv 28x28x3 -> 32, 4x4 stride 4, Resource, io_parallel",
             "hls4mlprj_keras_api_conv2d_Vitis_Resource_channels_last_same_io_parallel.json",
             "a8b48a01e7033d4341580a39c9de99bda65dd00d",
             "Conv2D(32, (4, 4), strides 4, 'same', no bias) on 28 x 28 x 3 (test_conv2d)",
             48, 32, 49,
             {"lut": 61308, "dsp": 792, "bram18": 0, "interval": 54},
             "weights are constants in the logic: half the 1536 products by small constants "
             "went to LUTs, which edgec's ROM-based model cannot see"),
)

BITS = 16  # ap_fixed<16,6>: weights, inputs, accumulators


def estimate(b: Baseline) -> dict:
    """edgec's estimate of a unit of `b`'s shape: PE = outputs, SIMD = terms."""
    p = ProcessModel(b.name, [("x", b.k * b.vectors)], [], b.n * b.vectors,
                     compute=b.vectors, macs=b.k * b.n * b.vectors, pe=b.n, simd=b.k,
                     weight_bits=BITS, weights=b.k * b.n, act_bits=BITS, acc_bits=BITS)
    r = resources(p)
    return {"lut": r["lut"], "dsp": r["dsp"], "bram18": r["bram18"], "interval": p.compute}


def error(est: int, real: int) -> str:
    if real == 0:
        return "exact" if est == 0 else f"{est} vs 0"
    return f"{(est - real) / real:+.0%}"


def main() -> int:
    print(f"hls4ml's baselines ({REPO}, test/pytest/baselines/Vitis/2024.1/), against edgec's "
          f"estimate of a unit of the same shape at {BITS} bits")
    print("| layer | LUT synth / est (error) | DSP synth / est (error) | "
          "BRAM18 synth / est | compute cycles synth / est (error) | what differs |")
    print("|---|---|---|---|---|---|")
    for b in BASELINES:
        e, r = estimate(b), b.report
        cells = [f"{r[k]} / {e[k]} ({error(e[k], r[k])})" for k in ("lut", "dsp")]
        print(f"| {b.name} | {cells[0]} | {cells[1]} | {r['bram18']} / {e['bram18']} | "
              f"{r['interval']} / {e['interval']} ({error(e['interval'], r['interval'])}) | "
              f"{b.note} |")
    print("\nsources: " + "; ".join(f"{b.path} @ {b.commit[:10]}" for b in BASELINES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
