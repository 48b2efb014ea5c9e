# ruff: noqa: E501  (golden IR lines are as long as the printer makes them)
"""Every built-in pass has a text-in / text-out test: IR text in, the pass, the printed IR out
(for plan-memory, which changes no node, the printed plan), and the interpreter's outputs
unchanged. The other test files of this folder hold more cases per pass; this one fails when a
registered pass has none."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from passcheck import check_pass

GOLDEN = {
    "canonicalize": ("canonicalize", """
        graph @c(%x: f32[2]) {
          %k = const f32[2] dense<[1.0, 2.0]>
          %two = const f32[2] dense<[2.0, 2.0]>
          %s = Mul(%k, %two) : f32[2]
          %i = Identity(%x) : f32[2]
          %y = Add(%i, %s) : f32[2]
          %dead = Neg(%x) : f32[2]
          return %y
        }""", """
        graph @c(%x: f32[2]) {
          %s = const f32[2] dense<[2.0, 4.0]>
          %y = Add(%x, %s) : f32[2]
          return %y
        }"""),
    "dce": ("dce", """
        graph @d(%x: f32[2]) {
          %a = Neg(%x) : f32[2]
          %b = Exp(%a) : f32[2]
          %y = Relu(%x) : f32[2]
          return %y
        }""", """
        graph @d(%x: f32[2]) {
          %y = Relu(%x) : f32[2]
          return %y
        }"""),
    "fold-constants": ("fold-constants", """
        graph @f(%x: f32[2]) {
          %k = const f32[2] dense<[1.0, 4.0]>
          %r = Sqrt(%k) : f32[2]
          %y = Mul(%x, %r) : f32[2]
          return %y
        }""", """
        graph @f(%x: f32[2]) {
          %r = const f32[2] dense<[1.0, 2.0]>
          %y = Mul(%x, %r) : f32[2]
          return %y
        }"""),
    "remove-identity": ("remove-identity", """
        graph @r(%x: f32[2]) {
          %i = Identity(%x) : f32[2]
          %y = Neg(%i) : f32[2]
          return %y
        }""", """
        graph @r(%x: f32[2]) {
          %y = Neg(%x) : f32[2]
          return %y
        }"""),
    # s = sqrt(r1 / r2) = [2, 0.25]: W1's rows and b1 over s, W2's columns times s
    "equalize": ("equalize", """
        graph @e(%x: f32[1,2,3]) {
          %w1 = const f32[2,2,1] dense<[4.0, -2.0, 0.25, 0.125]>
          %b1 = const f32[2] dense<[1.0, 0.125]>
          %w2 = const f32[2,2,1] dense<[1.0, 4.0, -0.5, 2.0]>
          %c = Conv(%x, %w1, %b1) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          %r = Relu(%c) : f32[1,2,3]
          %y = Conv(%r, %w2) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          return %y
        }""", """
        graph @e(%x: f32[1,2,3]) {
          %w1_eq = const f32[2,2,1] dense<[2.0, -1.0, 1.0, 0.5]>
          %b1_eq = const f32[2] dense<[0.5, 0.5]>
          %w2_eq = const f32[2,2,1] dense<[2.0, 1.0, -1.0, 0.5]>
          %c = Conv(%x, %w1_eq, %b1_eq) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          %r = Relu(%c) : f32[1,2,3]
          %y = Conv(%r, %w2_eq) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          return %y
        }"""),
    "fold-batchnorm": ("fold-batchnorm", """
        graph @bn(%x: f32[1,2,2]) {
          %w = const f32[2,2,1] dense<[1.0, 0.0, 0.0, 1.0]>
          %s = const f32[2] dense<[2.0, 0.5]>
          %b = const f32[2] dense<[1.0, -1.0]>
          %m = const f32[2] dense<[0.0, 0.0]>
          %v = const f32[2] dense<[1.0, 1.0]>
          %c = Conv(%x, %w) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,2]
          %y = BatchNormalization(%c, %s, %b, %m, %v) {epsilon = 0.0} : f32[1,2,2]
          return %y
        }""", """
        graph @bn(%x: f32[1,2,2]) {
          %c_w = const f32[2,2,1] dense<[2.0, 0.0, 0.0, 0.5]>
          %c_b = const f32[2] dense<[1.0, -1.0]>
          %y = Conv(%x, %c_w, %c_b) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,2]
          return %y
        }"""),
    "fuse": ("fuse", """
        graph @u(%x: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %c = Conv(%x, %w) {dilations = [1], pads = [0, 0], strides = [1]} : f32[1,2,3]
          %y = Relu(%c) : f32[1,2,3]
          return %y
        }""", """
        graph @u(%x: f32[1,2,3]) {
          %w = const f32[2,2,1] dense<[1.0, 2.0, 3.0, 4.0]>
          %y = FusedConv(%x, %w) {dilations = [1], pads = [0, 0], strides = [1], activation = "Relu"} : f32[1,2,3]
          return %y
        }"""),
    # per output channel: [1, -2] * 0.5 and [3, 4] * 0.25; the codes a Neg reads stay
    "dequantize-weights": ("dequantize-weights", """
        graph @d(%x: f32[1,2,3,3], %v: f32[2]) {
          %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
          %sw = const f32[2] dense<[0.5, 0.25]>
          %zw = const i8[2] dense<[0, 0]>
          %wf = DequantizeLinear(%w, %sw, %zw) {axis = 0} : f32[2,2,1,1]
          %c = Conv(%x, %wf) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : f32[1,2,3,3]
          %k = const i8[2] dense<[5, -6]>
          %kf = DequantizeLinear(%k, %sw, %zw) {axis = 0} : f32[2]
          %n = Neg(%kf) : f32[2]
          %y = Add(%v, %n) : f32[2]
          return %c, %y
        }""", """
        graph @d(%x: f32[1,2,3,3], %v: f32[2]) {
          %wf = const f32[2,2,1,1] dense<[0.5, -1.0, 0.75, 1.0]>
          %k = const i8[2] dense<[5, -6]>
          %sw = const f32[2] dense<[0.5, 0.25]>
          %zw = const i8[2] dense<[0, 0]>
          %c = Conv(%x, %wf) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : f32[1,2,3,3]
          %kf = DequantizeLinear(%k, %sw, %zw) {axis = 0} : f32[2]
          %n = Neg(%kf) : f32[2]
          %y = Add(%v, %n) : f32[2]
          return %c, %y
        }"""),
    "fuse-qdq": ("fuse-qdq", """
        graph @q(%x: u8[1,2,3,3]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
          %sw = const f32[] dense<[0.25]>
          %zw = const i8[] dense<[0]>
          %sy = const f32[] dense<[1.0]>
          %zy = const u8[] dense<[5]>
          %xf = DequantizeLinear(%x, %sx, %zx) : f32[1,2,3,3]
          %wf = DequantizeLinear(%w, %sw, %zw) : f32[2,2,1,1]
          %c = Conv(%xf, %wf) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : f32[1,2,3,3]
          %y = QuantizeLinear(%c, %sy, %zy) : u8[1,2,3,3]
          return %y
        }""", """
        graph @q(%x: u8[1,2,3,3]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
          %sw = const f32[] dense<[0.25]>
          %zw = const i8[] dense<[0]>
          %sy = const f32[] dense<[1.0]>
          %zy = const u8[] dense<[5]>
          %y = QLinearConv(%x, %sx, %zx, %w, %sw, %zw, %sy, %zy, none) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : u8[1,2,3,3] quant<scale=1.0, zp=5>
          return %y
        }"""),
    "layout-nchwc": ("layout-nchwc{block=4}", """
        graph @l(%x: f32[1,4,3,3]) {
          %w = const f32[4,4,1,1] dense<[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]>
          %c = Conv(%x, %w) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : f32[1,4,3,3]
          %y = Relu(%c) : f32[1,4,3,3]
          return %y
        }""", """
        graph @l(%x: f32[1,4,3,3]) {
          %w = const f32[4,4,1,1] dense<[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]>
          %x_to_nchwc = ReorderToBlocked(%x) {block = 4} : f32[1,1,3,3,4]
          %c_nchwc = BlockedConv(%x_to_nchwc, %w, none) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1], channels = 4, block = 4} : f32[1,1,3,3,4]
          %y_nchwc = Relu(%c_nchwc) : f32[1,1,3,3,4]
          %y = ReorderFromBlocked(%y_nchwc) {channels = 4} : f32[1,4,3,3] #"y_from_nchwc"
          return %y
        }"""),
    # centred weights (w - zw, all in [-8, 7]) two to a byte in the tile's order: the low
    # nibbles hold the one output block's vector, the high ones the zero padding
    "pack-weights": ("pack-weights{registers=16},dce", """
        graph @pw(%x: u8[1,1,2,2,4]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w = const i8[4,4,1,1] dense<[1, -2, 3, 4, 0, 7, -7, 2, 1, 1, 1, 1, -3, 0, 5, 6]>
          %sw = const f32[] dense<[0.25]>
          %zw = const i8[] dense<[1]>
          %sy = const f32[] dense<[1.0]>
          %zy = const u8[] dense<[5]>
          %y = BlockedQLinearConv(%x, %sx, %zx, %w, %sw, %zw, %sy, %zy, none) {dilations = [1, 1], group = 1, pads = [0, 0, 0, 0], strides = [1, 1], channels = 4, block = 4} : u8[1,1,2,2,4]
          return %y
        }""", """
        graph @pw(%x: u8[1,1,2,2,4]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w_packed = const i8[16] dense<[0, 13, 2, 3, 15, 6, 8, 1, 0, 0, 0, 0, 12, 15, 4, 5]>
          %sw = const f32[] dense<[0.25]>
          %sy = const f32[] dense<[1.0]>
          %zy = const u8[] dense<[5]>
          %y = BlockedQLinearConv(%x, %sx, %zx, %w_packed, %sw, none, %sy, %zy, none) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1], channels = 4, block = 4, wenc = "dot4 l4 x4 m1 nib", wshape = [4, 4, 1, 1]} : u8[1,1,2,2,4]
          return %y
        }"""),
    # M = 0.5 * [0.25, 0.125] / 1.5 = float32 1/12 = 11184811 * 2^-27 and 1/24 (half of it):
    # s = 34 puts the largest in [2^30, 2^31), q = 11184811 * 2^7 = 1431655808 and 715827904.
    # The second conv's M = 1 cannot be held with s >= 32: it keeps float requantization (it
    # copies its input: the outputs differ by a step where float32 rounds acc * M onto a tie)
    "fixed-point": ("fixed-point", """
        graph @fx(%x: u8[1,1,2,2,4]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
          %sw = const f32[2] dense<[0.25, 0.125]>
          %sy = const f32[] dense<[1.5]>
          %zy = const u8[] dense<[5]>
          %one = const f32[] dense<[1.0]>
          %eye = const i8[2,2,1,1] dense<[1, 0, 0, 1]>
          %y = BlockedQLinearConv(%x, %sx, %zx, %w, %sw, none, %sy, %zy, none) {dilations = [1, 1], group = 1, pads = [0, 0, 0, 0], strides = [1, 1], channels = 2, block = 4} : u8[1,1,2,2,4]
          %z = BlockedQLinearConv(%y, %one, %zy, %eye, %one, none, %one, %zy, none) {dilations = [1, 1], group = 1, pads = [0, 0, 0, 0], strides = [1, 1], channels = 2, block = 4} : u8[1,1,2,2,4]
          return %z
        }""", """
        graph @fx(%x: u8[1,1,2,2,4]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
          %sw = const f32[2] dense<[0.25, 0.125]>
          %sy = const f32[] dense<[1.5]>
          %zy = const u8[] dense<[5]>
          %one = const f32[] dense<[1.0]>
          %eye = const i8[2,2,1,1] dense<[1, 0, 0, 1]>
          %y = BlockedQLinearConv(%x, %sx, %zx, %w, %sw, none, %sy, %zy, none) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1], channels = 2, block = 4, rq_mult = [1431655808, 715827904], rq_shift = 34} : u8[1,1,2,2,4]
          %z = BlockedQLinearConv(%y, %one, %zy, %eye, %one, none, %one, %zy, none) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1], channels = 2, block = 4} : u8[1,1,2,2,4]
          return %z
        }"""),
    # with scalar=1 (the HLS target's integer-only pipeline) the plain NCHW QLinearConv gets the
    # same multipliers as the blocked one above
    "fixed-point-scalar": ("fixed-point{scalar=1}", """
        graph @fs(%x: u8[1,2,2,2]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
          %sw = const f32[2] dense<[0.25, 0.125]>
          %sy = const f32[] dense<[1.5]>
          %zy = const u8[] dense<[5]>
          %y = QLinearConv(%x, %sx, %zx, %w, %sw, none, %sy, %zy) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : u8[1,2,2,2]
          return %y
        }""", """
        graph @fs(%x: u8[1,2,2,2]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
          %sw = const f32[2] dense<[0.25, 0.125]>
          %sy = const f32[] dense<[1.5]>
          %zy = const u8[] dense<[5]>
          %y = QLinearConv(%x, %sx, %zx, %w, %sw, none, %sy, %zy) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1], rq_mult = [1431655808, 715827904], rq_shift = 34} : u8[1,2,2,2]
          return %y
        }"""),
    # a chain of MaxPool and data movement between a DequantizeLinear and a QuantizeLinear of
    # the same parameters runs on the integers
    "fuse-qdq-chain": ("fuse-qdq,dce", """
        graph @qc(%x: u8[1,1,4,4]) {
          %s = const f32[] dense<[0.5]>
          %z = const u8[] dense<[3]>
          %d = DequantizeLinear(%x, %s, %z) : f32[1,1,4,4]
          %p = MaxPool(%d) {dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : f32[1,1,2,2]
          %f = Flatten(%p) : f32[1,4]
          %q = QuantizeLinear(%f, %s, %z) : u8[1,4]
          return %q
        }""", """
        graph @qc(%x: u8[1,1,4,4]) {
          %p_0 = MaxPool(%x) {dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : u8[1,1,2,2]
          %q = Flatten(%p_0) : u8[1,4]
          return %q
        }"""),
    # the mean of a DequantizeLinear'd tensor, flattened and quantized again, on the integers;
    # fixed-point then holds its multiplier (0.5 / 1.0) / 4 = 0.125 as 2^30 / 2^33
    "fuse-qdq-gap": ("fuse-qdq,dce,fixed-point", """
        graph @qg(%x: u8[1,2,2,2]) {
          %s = const f32[] dense<[0.5]>
          %z = const u8[] dense<[3]>
          %t = const f32[] dense<[1.0]>
          %d = DequantizeLinear(%x, %s, %z) : f32[1,2,2,2]
          %p = GlobalAveragePool(%d) : f32[1,2,1,1]
          %f = Flatten(%p) : f32[1,2]
          %q = QuantizeLinear(%f, %t, %z) : u8[1,2]
          return %q
        }""", """
        graph @qg(%x: u8[1,2,2,2]) {
          %s = const f32[] dense<[0.5]>
          %z = const u8[] dense<[3]>
          %t = const f32[] dense<[1.0]>
          %p_0 = QLinearGlobalAveragePool(%x, %s, %z, %t, %z) {rq_mult = [1073741824], rq_shift = 33} : u8[1,2,1,1] quant<scale=1.0, zp=3>
          %q = Flatten(%p_0) : u8[1,2]
          return %q
        }"""),
    # the add's ratios sr / sc = 0.25 and sy / sc = 0.75 held as q / 2^21 (fixed-point: 0.75 in
    # [2^20, 2^21) / 2^21): the conv is the second operand, so its multiplier comes first
    "fuse-residual": ("fuse-residual", """
        graph @fr(%x: u8[1,1,2,2,4], %r: u8[1,1,2,2,4]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
          %sw = const f32[2] dense<[0.25, 0.125]>
          %sy = const f32[] dense<[1.5]>
          %zy = const u8[] dense<[5]>
          %sr = const f32[] dense<[0.5]>
          %zr = const u8[] dense<[3]>
          %sc = const f32[] dense<[2.0]>
          %zc = const u8[] dense<[7]>
          %y = BlockedQLinearConv(%x, %sx, %zx, %w, %sw, none, %sy, %zy, none) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1], channels = 2, block = 4, rq_mult = [1431655808, 715827904], rq_shift = 34} : u8[1,1,2,2,4]
          %z = QLinearAdd(%r, %sr, %zr, %y, %sy, %zy, %sc, %zc) {rq_mult = [524288, 1572864], rq_shift = 21} : u8[1,1,2,2,4]
          return %z
        }""", """
        graph @fr(%x: u8[1,1,2,2,4], %r: u8[1,1,2,2,4]) {
          %sx = const f32[] dense<[0.5]>
          %zx = const u8[] dense<[10]>
          %w = const i8[2,2,1,1] dense<[1, -2, 3, 4]>
          %sw = const f32[2] dense<[0.25, 0.125]>
          %sy = const f32[] dense<[1.5]>
          %zy = const u8[] dense<[5]>
          %sr = const f32[] dense<[0.5]>
          %zr = const u8[] dense<[3]>
          %sc = const f32[] dense<[2.0]>
          %zc = const u8[] dense<[7]>
          %z = BlockedQLinearConv(%x, %sx, %zx, %w, %sw, none, %sy, %zy, none, %r, %sr, %zr, %sc, %zc) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1], channels = 2, block = 4, rq_mult = [1431655808, 715827904], rq_shift = 34, add_mult = [1572864, 524288], add_shift = 21} : u8[1,1,2,2,4] quant<scale=2.0, zp=7>
          return %z
        }"""),
    # a 3x3 stride-2 conv with 2 of 18 weights left: staged into 4 phase planes of 3 x 3
    # (plane g = 2a + b for phase (a, b)); w[0, 0, 1, 1] is phase (1, 1) at (0, 0): offset
    # 3 * 9 = 27; w[1, 0, 0, 0] phase (0, 0) at (0, 0): 0
    "sparsify": ("sparsify", """
        graph @sp(%x: f32[1,1,3,3]) {
          %w = const f32[2,1,3,3] dense<[0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]>
          %y = Conv(%x, %w) {dilations = [1, 1], pads = [1, 1, 1, 1], strides = [2, 2]} : f32[1,2,2,2]
          return %y
        }""", """
        graph @sp(%x: f32[1,1,3,3]) {
          %w_values = const f32[2] dense<[2.0, -1.0]>
          %w_offsets = const i32[2] dense<[27, 0]>
          %w_rowptr = const i32[3] dense<[0, 1, 2]>
          %y_stage = ConvStage(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : f32[1,4,3,3]
          %y = SparseConv(%y_stage, %w_values, %w_offsets, %w_rowptr) {wenc = "csr", wshape = [2, 4, 2, 2]} : f32[1,2,2,2]
          return %y
        }"""),
    # 4 output channels with 3, 3, 1, 1 non-zeros: at 2 threads the halves carry 6 and 2;
    # bisection puts channels 0 and 2 in the first half, 1 and 3 in the second (4 and 4), the
    # block rows move with their offsets, `order` says where each writes
    "reorder": ("reorder{threads=2}", """
        graph @ro(%x: f32[1,4,1,1]) {
          %v = const f32[8] dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]>
          %i = const i32[8] dense<[0, 1, 2, 1, 2, 3, 0, 3]>
          %p = const i32[5] dense<[0, 3, 6, 7, 8]>
          %y = SparseConv(%x, %v, %i, %p) {wenc = "csr", wshape = [4, 4, 1, 1]} : f32[1,4,1,1]
          return %y
        }""", """
        graph @ro(%x: f32[1,4,1,1]) {
          %v_reordered = const f32[8] dense<[1.0, 2.0, 3.0, 7.0, 4.0, 5.0, 6.0, 8.0]>
          %i_reordered = const i32[8] dense<[0, 1, 2, 0, 1, 2, 3, 3]>
          %p_reordered = const i32[5] dense<[0, 3, 4, 7, 8]>
          %y = SparseConv(%x, %v_reordered, %i_reordered, %p_reordered) {wenc = "csr", wshape = [4, 4, 1, 1], order = [0, 2, 1, 3]} : f32[1,4,1,1]
          return %y
        }"""),
    # the half of the weights with the least magnitude, per layer
    "prune": ("prune{sparsity=0.5}", """
        graph @pr(%x: f32[1,4]) {
          %w = const f32[2,4] dense<[1.0, -0.1, 3.0, 0.2, -2.0, 0.3, -0.05, 4.0]>
          %y = Gemm(%x, %w) {transB = 1} : f32[1,2]
          return %y
        }""", """
        graph @pr(%x: f32[1,4]) {
          %w_pruned = const f32[2,4] dense<[1.0, 0.0, 3.0, 0.0, -2.0, 0.0, 0.0, 4.0]>
          %y = Gemm(%x, %w_pruned) {transB = 1} : f32[1,2]
          return %y
        }"""),
    # data-free (no samples): the weights only, per output channel, 127 * s = |w|; the codes'
    # type carries their scales (and bits, when not 8)
    "quantize": ("quantize", """
        graph @qz(%x: f32[1,1,2,2]) {
          %w = const f32[2,1,1,1] dense<[1.0, -0.5]>
          %y = Conv(%x, %w) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : f32[1,2,2,2]
          return %y
        }""", """
        graph @qz(%x: f32[1,1,2,2]) {
          %w_quantized = const i8[2,1,1,1] quant<axis=0, scale=[0.007874016, 0.003937008], zp=[0, 0]> dense<[127, -127]>
          %w_scale = const f32[2] dense<[0.007874016, 0.003937008]>
          %w_zero_point = const i8[2] dense<[0, 0]>
          %w_DequantizeLinear = DequantizeLinear(%w_quantized, %w_scale, %w_zero_point) {axis = 0} : f32[2,1,1,1]
          %y = Conv(%x, %w_DequantizeLinear) {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : f32[1,2,2,2]
          return %y
        }"""),
}

# passes whose integer results may move by a step: fixed-point rounds the exact product where
# float32 rounded it first
STEPS = {"fixed-point": 1, "fixed-point-scalar": 1}

# plan-memory changes no node: its text out is the plan (offsets, liveness, the view)
PLAN_SRC = """
    graph @p(%x: f32[64]) {
      %shape = const i64[2] dense<[8, 8]>
      %a = Relu(%x) : f32[64]
      %b = Neg(%a) : f32[64]
      %c = Exp(%b) : f32[64]
      %r = Reshape(%c, %shape) : f32[8,8]
      %n = Neg(%r) : f32[8,8]
      %d = Add(%a, %c) : f32[64]
      return %d, %n
    }"""
PLAN_TEXT = """
    memory plan: 3 activations in a 0.8 KiB arena (100.0% of the lower bound 0.8 KiB; 0.8 KiB without reuse), 1 views aliased, 64-byte aligned, greedy by size
      value      offset       bytes  live
      a               0         256  [0, 5]
      b             256         256  [1, 2]
      c             512         256  [2, 5]
      r      -> %c"""


@pytest.mark.parametrize("name", list(GOLDEN))
def test_text_in_text_out(name):
    pipeline, src, expected = GOLDEN[name]
    # pruning changes the numerics by design: its text is what is checked
    tol = float("inf") if name == "prune" else 1e-5
    check_pass(src, pipeline, expected, tol=tol, steps=STEPS.get(name, 0))


def test_plan_memory_text_out():
    g = check_pass(PLAN_SRC, "plan-memory", PLAN_SRC)  # the nodes are untouched
    assert g.record.memory_plan.report() == textwrap.dedent(PLAN_TEXT).strip()


def test_every_built_in_pass_has_one():
    # the passes edgec itself registers, asked of a fresh process (tests register their own)
    out = subprocess.run([sys.executable, "-c", "from edgec.passes import registered_passes; "
                          "print(' '.join(sorted(registered_passes())))"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert "fuse-qdq" in out and "plan-memory" in out
    missing = sorted(set(out) - set(GOLDEN) - {"plan-memory"})
    assert not missing, f"passes without a text-in/text-out test: {missing}"
