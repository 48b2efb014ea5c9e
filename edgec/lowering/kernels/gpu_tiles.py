"""GPU tiles: the matrix product of shared-memory tiles every GPU GEMM and implicit-GEMM
convolution is built of (`gpu_tiles`: T x T threads a block, reg x reg outputs a thread,
8-bit operands four products at a time by dp4a; on tensor cores, `gpu_mma_tiles`, where the
target's precision is fp16, bf16 or tf32), how many outputs a thread takes so that the grid
still fills the GPU (`gpu_tile_reg`), and a convolution as an implicit GEMM whose input tile
is gathered as it is staged (`conv_as_gemm`); a depthwise convolution's input tile in shared
memory (`conv_depthwise_tiles`)."""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ...ir.dtypes import DType
from ...kernel_ir.kernel import MMA_ACC, Buffer, Expr, LoopKind, const, dot4, select, vload
from ...targets.target import Target
from ..lower import NodeKernelBuilder
from .common import Epilogue, offset, row_major_strides

if TYPE_CHECKING:
    from .conv import ConvGeometry

# the side of a GPU's GEMM tile (GPU_TILED_GEMM): T x T threads a block, each an output,
# staging T x T of A and of B in shared memory per step of K (2 T^2 floats: 2 KB at 16)
GPU_TILE = 16


def gpu_tile_reg(target: Target, tiles_of) -> int:
    """Outputs per thread along each side of a GPU GEMM tile (`gpu_tiles`' `reg`): the most
    of 4, 2, 1 whose blocks (`tiles_of(side)`, side = GPU_TILE x reg) still give every
    multiprocessor one, so that register blocking never leaves the GPU idle."""
    return next((r for r in (4, 2) if tiles_of(GPU_TILE * r) >= target.gpu.sms), 1)


# a float GEMM's operands on tensor cores, by the target's --precision
MMA_OPERANDS = {"fp16": DType.F16, "bf16": DType.BF16, "tf32": DType.F32}
MMA_STAGE = 32  # the k's a block stages per step on tensor cores
MMA_WARP_TILE = 32  # the side of the outputs a warp computes: 2 x 4 mma tiles of 16 x 8


def gpu_split_k(target: Target, blocks: int, steps: int) -> int:
    """How many ways a GEMM of `blocks` blocks, each `steps` steps of K long, splits K
    (`gpu_tiles`' split-K): none (1) where the blocks give every multiprocessor two already
    or K is under 64 steps (a split costs two launches: zeroing the output, the epilogue);
    else the most of 16, 8, 4, 2 whose blocks stay within 4 a multiprocessor and leave each
    split 16 steps or more. (A
    late convolution's few tiles, each a long K, would otherwise run one block an SM, its
    steps one after the other: ResNet-18's layer-4 convolutions took 208 us on an H200. The
    thresholds are a first rule, to be set by the GPU's timings.)"""
    if blocks >= 2 * target.gpu.sms or steps < 64:
        return 1
    return next((s for s in (16, 8, 4, 2)
                 if blocks * s <= 4 * target.gpu.sms and steps // s >= 16), 1)


def _each_output(kb: NodeKernelBuilder, batches: int, m: int, n: int, body) -> None:
    """A launch of a thread per output: `body(z, i, j)` for every product z and output
    (i, j)."""
    total, threads = batches * m * n, 256
    with kb.loop(-(-total // threads), "ob", kind=LoopKind.GRID) as ob, \
            kb.loop(threads, "ot", kind=LoopKind.BLOCK) as ot:
        o = kb.local("o", ob * threads + ot)
        with kb.if_(o < total):
            z = kb.local("z", o // (m * n)) if batches > 1 else const(0)
            body(z, kb.local("i", o // n % m), kb.local("j", o % n))


class _SplitK:
    """A GEMM's K split `split` ways: the grid's product loop runs over products x splits,
    `part` is a block's split and its steps of K `steps`; the sums are added atomically into
    the output `y` at `at(z, i, j)`, zeroed by a launch before and passed through the
    epilogue (`store`) by a launch after."""

    def __init__(self, kb: NodeKernelBuilder, split: int, total_steps: int, batches: int,
                 m: int, n: int, store, out):
        self.kb, self.split, self.batches, self.m, self.n = kb, split, batches, m, n
        self.steps = -(-total_steps // split)
        self.final = store
        if split > 1:
            y, at = out
            self.store = lambda z, i, j, acc: kb.atomic_add(y, at(z, i, j), acc)
            kb.strategy += f", K split {split} ways (atomic adds)"
            _each_output(kb, batches, m, n, lambda z, i, j: kb.store(y, at(z, i, j),
                                                                      const(0.0)))
        else:
            self.store = store
        self.out = out

    def product(self, bz: Expr) -> tuple[Expr, Expr]:
        """(the product, the split) of grid index `bz`."""
        if self.split == 1:
            return bz, const(0)
        return self.kb.local("z", bz // self.split), self.kb.local("part", bz % self.split)

    def step(self, part: Expr, kt: Expr) -> Expr:
        return part * self.steps + kt if self.split > 1 else kt

    def finish(self) -> None:
        if self.split > 1:
            y, at = self.out
            _each_output(self.kb, self.batches, self.m, self.n,
                         lambda z, i, j: self.final(z, i, j, y[at(z, i, j)]))


def sm(arch: str) -> int:
    """nvcc's sm_XY as the number XY."""
    return int(re.sub(r"\D", "", arch))


def int8_on_tensor_cores(target: Target) -> bool:
    """Whether 8-bit products (dp4a's) run on tensor cores instead: where every
    architecture the library is built for has int8 mma.sync m16n8k32 (sm_80 on)."""
    return target.gpu is not None and all(sm(a) >= 80 for a in target.gpu.archs)


@contextmanager
def _tile_grid(kb: NodeKernelBuilder, m: int, n: int, steps: int, batches: int, side: int,
               store, out):
    """The grid of a GEMM's output tiles of `side` over `steps` steps of K: products x
    splits of K (`gpu_split_k`, where `out` allows it), tile rows, tile columns; yields
    (the split-K, the product, the split, the tile row, the tile column), and puts the
    split's launches before and after the grid."""
    blocks = batches * -(-m // side) * -(-n // side)
    split = gpu_split_k(kb.target, blocks, steps) if out is not None else 1
    sk = _SplitK(kb, split, steps, batches, m, n, store, out)
    with kb.loop(batches * split, "bz", kind=LoopKind.GRID) as bz, \
            kb.loop(-(-m // side), "by", kind=LoopKind.GRID) as by, \
            kb.loop(-(-n // side), "bx", kind=LoopKind.GRID) as bx:
        yield (sk, *sk.product(bz), by, bx)
    sk.finish()


def on_tensor_cores(target: Target, dtype: DType) -> bool:
    """Whether the target's float GEMMs of `dtype` run on tensor cores (--precision)."""
    return target.gpu is not None and target.gpu.precision in MMA_OPERANDS and \
        dtype is DType.F32


def tiles_text(target: Target, dtype: DType, reg: int) -> str:
    """What a GPU GEMM's kernel does per thread, for the report: the tensor cores and their
    precision, or the outputs a thread computes."""
    if on_tensor_cores(target, dtype):
        return f", tensor cores ({target.gpu.precision})"
    return f", {reg} x {reg} outputs a thread" if reg > 1 else ""


def gpu_mma_warps(target: Target, tiles_of) -> int:
    """Warps a block of tensor-core tiles takes (`gpu_mma_tiles`' `warps`): 4 (2 x 2, a 64 x
    64 tile) where that still gives every multiprocessor a block, else 1 (32 x 32)."""
    return 4 if tiles_of(2 * MMA_WARP_TILE) >= target.gpu.sms else 1


def gpu_mma_tiles(kb: NodeKernelBuilder, a_at, b_at, store, m: int, n: int, k: int,
                  batches: int, operand: DType, warps: int, out=None,
                  b_operand: DType | None = None) -> None:
    """`gpu_tiles`' products on tensor cores (kernel IR `Mma`): a block of `warps` warps
    (1, or 4 as 2 x 2) per output tile of side 32 (warps 1) or 64, each warp computing 32 x 32
    outputs as 2 x 4 mma tiles of 16 x 8 (32 float32 sums a thread); per step of 32 k's the
    block stages A's rows and B's columns in shared memory as `operand` (float16 or bfloat16
    rounded to nearest; float32 for TF32, which the mma rounds; int8 A by `b_operand` (uint8
    or int8) B, int32 sums, as dp4a's), each K-contiguous with rows padded by 4 words so that
    a warp's fragment reads hit 32 banks, zero past the edges. `out`: as `gpu_tiles` takes
    it (split-K)."""
    b_operand = b_operand or operand
    acc_t = MMA_ACC[operand]
    # the operands' types as the callers read them: float32 (rounded as they are staged)
    a_type, b_type = (operand, b_operand) if acc_t is DType.I32 else (DType.F32, DType.F32)
    per = 4 // operand.itemsize
    kmma, ks, ld = 8 * per, MMA_STAGE, MMA_STAGE + 4 * per
    wide = 2 if warps == 4 else 1  # warps along each side
    side = MMA_WARP_TILE * wide
    threads = 32 * warps
    with _tile_grid(kb, m, n, -(-k // ks), batches, side, store, out) as \
            (sk, z, part, by, bx):
        sa = kb.alloc("sa", operand, (side * ld,), "shared")
        sb = kb.alloc("sb", b_operand, (side * ld,), "shared")
        with kb.loop(warps, "w", kind=LoopKind.BLOCK) as w, \
                kb.loop(32, "l", kind=LoopKind.BLOCK) as lane:
            tid = kb.local("tid", w * 32 + lane if warps > 1 else lane)
            wrow = kb.local("wr", w // wide * MMA_WARP_TILE) if wide > 1 else const(0)
            wcol = kb.local("wc", w % wide * MMA_WARP_TILE) if wide > 1 else const(0)
            acc = kb.alloc("acc", acc_t, (32,))
            for r in range(32):
                kb.store(acc, r, const(0, acc_t))
            with kb.loop(sk.steps, "kt") as kt0:
                kt = sk.step(part, kt0)
                for e in range(side * ks // threads):  # A's rows, k fastest (coalesced)
                    idx = kb.local("ia", tid + e * threads if e else tid)
                    i, kk = kb.local("i", by * side + idx // ks), kb.local("kk", kt * ks + idx % ks)
                    v = select((i < m) & (kk < k), a_at(z, i, kk), const(0, a_type))
                    kb.store(sa, idx // ks * ld + idx % ks, v)
                for e in range(side * ks // threads):  # B's columns, j fastest (coalesced)
                    idx = kb.local("ib", tid + e * threads if e else tid)
                    j, kk = kb.local("j", bx * side + idx % side), \
                        kb.local("kk", kt * ks + idx // side)
                    v = select((kk < k) & (j < n), b_at(z, kk, j), const(0, b_type))
                    kb.store(sb, idx % side * ld + idx // side, v)
                kb.barrier()
                for step in range(ks // kmma):
                    for mi in range(2):
                        for ni in range(4):
                            kb.mma(acc, (mi * 4 + ni) * 4, sa,
                                   (wrow + 16 * mi) * ld + step * kmma, ld,
                                   sb, (wcol + 8 * ni) * ld + step * kmma, ld)
                kb.barrier()
            g, t = kb.local("g", lane // 4), kb.local("t", lane % 4)
            for mi in range(2):
                for ni in range(4):
                    for r in range(4):
                        i = by * side + wrow + (16 * mi + 8 * (r >> 1)) + g
                        j = bx * side + wcol + (8 * ni + (r & 1)) + 2 * t
                        with kb.if_((i < m) & (j < n)):
                            sk.store(z, i, j, acc[(mi * 4 + ni) * 4 + r])


def gpu_tiles(kb: NodeKernelBuilder, a_at, b_at, store, dtype: DType, m: int, n: int,
              k: int, batches: int = 1, reg: int = 1, dp4a: bool = False, out=None) -> None:
    """`batches` products [m, k] x [k, n] on a GPU (`a_at(z, i, k)`, `b_at(z, k, j)` read
    product z's operands, `store(z, i, j, acc)` writes its output): a block of T x T threads
    per output tile of side T reg, thread (ty, tx) computing the reg x reg outputs
    (by T reg + ty + T u, bx T reg + tx + T v); per step of K the block stages a T reg x T
    tile of A and a T x T reg tile of B in shared memory (each thread reg elements of each,
    zero past the edges), waits, and each thread reads reg values of A's rows and of B's
    columns per k for reg^2 multiply-adds (reg 1: one output a thread, 2 reads per
    multiply-add; reg 4: 16 outputs, 2 multiply-adds per read).

    `dp4a` (8-bit operands: A int8, B `dtype` uint8 or int8, int32 sums): the products four
    at a time (`dot4`, a GPU's dp4a), B's tile held a column's 16 k's contiguous as A's is a
    row's, so that each step of 16 k's is 4 dot4s of reg A words by reg B words a thread. Past K
    A is zero, so B's bytes there do not count.

    Float32 products on a target whose --precision is fp16, bf16 or tf32 run on tensor cores
    instead (`gpu_mma_tiles`; `reg` does not apply), and so do dp4a's 8-bit products where
    every architecture built for has int8 tensor cores (sm_80 on).

    `out` = (y, at): the float32 output `store` writes and its index of output (z, i, j),
    given where the GEMM may split K (`gpu_split_k`: a grid too small for the GPU, each block
    a long K): then a launch zeroes y, the GEMM's blocks each take a part of K and add their
    sums into y atomically, and a last launch passes y through `store` (its epilogue)."""
    if (dp4a and int8_on_tensor_cores(kb.target)) or \
            (not dp4a and on_tensor_cores(kb.target, dtype)):
        warps = gpu_mma_warps(kb.target, lambda side: batches * -(-m // side) * -(-n // side))
        gpu_mma_tiles(kb, a_at, b_at, store, m, n, k, batches,
                      DType.I8 if dp4a else MMA_OPERANDS[kb.target.gpu.precision], warps,
                      out, b_operand=dtype if dp4a else None)
        return
    t = GPU_TILE  # (with dp4a also the k's of a step: thread tx stages k = tx of A's row)
    side = t * reg
    a_dt, acc_dt = (DType.I8, DType.I32) if dp4a else (dtype, dtype)
    with _tile_grid(kb, m, n, -(-k // t), batches, side, store, out) as \
            (sk, z, part, by, bx):
        at = kb.alloc("at", a_dt, (side * t,), "shared")
        bt = kb.alloc("bt", dtype, (t * side,), "shared")
        with kb.loop(t, "ty", kind=LoopKind.BLOCK) as ty, \
                kb.loop(t, "tx", kind=LoopKind.BLOCK) as tx:
            i0 = kb.local("i", by * side + ty)
            j0 = kb.local("j", bx * side + tx)
            accs = [[kb.local("acc", const(0, acc_dt)) for _ in range(reg)]
                    for _ in range(reg)]
            with kb.loop(sk.steps, "kt") as kt0:
                kt = sk.step(part, kt0)
                ka = kb.local("ka", kt * t + tx)
                kr = kb.local("kr", kt * t + ty)
                # (a scalar select reads only the operand it picks: no load past an edge)
                for u in range(reg):
                    i = i0 + t * u if u else i0
                    kb.store(at, (ty + t * u) * t + tx,
                             select((i < m) & (ka < k), a_at(z, i, ka), const(0, a_dt)))
                for v in range(reg):
                    j = j0 + t * v if v else j0
                    kb.store(bt, (tx + t * v) * t + ty if dp4a else ty * side + tx + t * v,
                             select((kr < k) & (j < n), b_at(z, kr, j), const(0, dtype)))
                kb.barrier()
                if dp4a:
                    for w in range(t // 4):  # (words read where they are used: nvcc keeps
                        # each in a register across the products it takes part in)
                        for u in range(reg):
                            for v in range(reg):
                                kb.assign(accs[u][v], dot4(
                                    accs[u][v], vload(bt, (tx + t * v) * t + 4 * w, 4),
                                    vload(at, (ty + t * u) * t + 4 * w, 4)))
                else:
                    with kb.loop(t, "kk") as kk:
                        if reg == 1:
                            kb.assign(accs[0][0],
                                      accs[0][0] + at[ty * t + kk] * bt[kk * t + tx])
                        else:
                            av = [kb.local("av", at[(ty + t * u) * t + kk]) for u in range(reg)]
                            bv = [kb.local("bv", bt[kk * side + tx + t * v])
                                  for v in range(reg)]
                            for u in range(reg):
                                for v in range(reg):
                                    kb.assign(accs[u][v], accs[u][v] + av[u] * bv[v])
                kb.barrier()
            for u in range(reg):
                for v in range(reg):
                    i = i0 + t * u if u else i0
                    j = j0 + t * v if v else j0
                    with kb.if_((i < m) & (j < n)):
                        sk.store(z, i, j, accs[u][v])


def conv_tiles_fit(target: Target, geo: ConvGeometry) -> tuple[str, int]:
    """(why a convolution's groups do not fill GPU tiles, "" where they do; the `reg` its
    tiles would take)."""
    terms = geo.cg * math.prod(geo.ksz)
    unfit = (f"{terms} terms per output, fewer than a tile's step ({GPU_TILE})"
             if terms < GPU_TILE else
             f"{geo.mg} output channels per group, fewer than a tile's side ({GPU_TILE})"
             if geo.mg < GPU_TILE else "")
    reg = gpu_tile_reg(target, lambda side: geo.n * geo.group * -(-geo.mg // side)
                       * -(-math.prod(geo.osp) // side))
    return unfit, reg


def conv_as_gemm(kb: NodeKernelBuilder, geo: ConvGeometry, weight, pixel, store,
                 dtype: DType, reg: int, pad: Expr | None = None, dp4a: bool = False,
                 out=None) -> None:
    """A GPU's convolution as an implicit GEMM per image and group (`gpu_tiles`): Y[m, p] =
    sum_k W[m, k] X[k, p] over k = (c, tap) and the output positions p, where X[k, p] is
    the input under tap k of position p, gathered as the tile is staged (zero in the
    padding) rather than written out (im2col). `weight(m, k)` and `pixel(n, channel,
    position)` read the operands (in `dtype`), `store(n, m, coords, p, acc)` writes output
    (n, m, position p) at coordinates `coords` of the output. `pad`: the value of a tap in
    the padding (zero); `dp4a`: 8-bit operands (int8 weights, `dtype` the input's) summed
    four at a time (`gpu_tiles` with dp4a); `out` = (y, at(n, m, p)): the float32 output
    and its index of output (n, m, position p), where K may split (`gpu_tiles`)."""
    cg, mg, osp, ksz = geo.cg, geo.mg, geo.osp, geo.ksz
    taps, positions = math.prod(ksz), math.prod(osp)
    kst, ost = row_major_strides(ksz), row_major_strides(osp)
    guarded = any(geo.p0) or _may_overrun(geo)

    def image_group(z: Expr) -> tuple[Expr, Expr]:
        return (z // geo.group, z % geo.group) if geo.group > 1 else (z, const(0))

    def coord(e: Expr, a: int, extents, strides) -> Expr:  # e's coordinate along axis a
        q = e // strides[a] if strides[a] > 1 else e
        return q % extents[a] if a > 0 else q

    def gathered(z: Expr, k: Expr, p: Expr) -> Expr:
        n, g = image_group(z)
        c, tap = (k // taps, k % taps) if taps > 1 else (k, const(0))
        ipos = [coord(p, a, osp, ost) * s + (coord(tap, a, ksz, kst) * d if ksz[a] > 1
                                             else const(0)) - p0
                for a, (s, d, p0) in enumerate(zip(geo.strides, geo.dil, geo.p0, strict=True))]
        v = pixel(n, g * cg + c, ipos)
        if not guarded:
            return v
        inside = None
        for i, size in zip(ipos, geo.isp, strict=True):
            cond = (i >= 0) & (i < size)
            inside = cond if inside is None else inside & cond
        return select(inside, v, pad if pad is not None else const(0, dtype))

    def image_channel(z: Expr, i: Expr) -> tuple[Expr, Expr]:
        n, g = image_group(z)
        return n, g * mg + i if geo.group > 1 else i

    def stored(z: Expr, i: Expr, p: Expr, acc: Expr) -> None:
        n, m = image_channel(z, i)
        store(n, m, [n, m, *[coord(p, a, osp, ost) for a in range(len(osp))]], p, acc)

    split = None if out is None else (out[0], lambda z, i, p: out[1](*image_channel(z, i), p))
    gpu_tiles(kb, lambda z, i, k: weight(image_group(z)[1] * mg + i, k), gathered, stored,
              dtype, mg, positions, cg * taps, geo.n * geo.group, reg, dp4a, split)


def _may_overrun(geo: ConvGeometry) -> bool:
    """Whether some tap of some output reads past the input's end (where ceil-mode-like
    shapes or explicit end pads put it)."""
    return any((o - 1) * s + (k - 1) * d >= n for o, s, k, d, n in
               zip(geo.osp, geo.strides, geo.ksz, geo.dil, geo.isp, strict=True))


DEPTHWISE_TILE = 16  # the outputs along each side of a GPU depthwise block (16 x 16 threads)


def _depthwise_input_tile(geo: ConvGeometry) -> tuple[int, int]:
    """The rows and columns of input a depthwise block's 16 x 16 outputs read."""
    t = DEPTHWISE_TILE
    return tuple((t - 1) * s + (k - 1) * d + 1
                 for s, k, d in zip(geo.strides, geo.ksz, geo.dil, strict=True))


def depthwise_tiles_fit(target: Target, geo: ConvGeometry) -> str:
    """Why a convolution does not take `conv-depthwise-tiles` ("" where it does)."""
    if geo.cg != 1:
        return f"{geo.cg} input channels a group: not depthwise"
    if len(geo.osp) != 2:
        return f"{len(geo.osp)} spatial axes, not 2"
    rows, cols = _depthwise_input_tile(geo)
    if rows * cols * 4 > target.gpu.shared_per_block:
        return f"an input tile of {rows} x {cols} floats exceeds a block's shared memory"
    return ""


def conv_depthwise_tiles(kb: NodeKernelBuilder, geo: ConvGeometry, x: Buffer, w: Buffer,
                          b: Buffer | None, y: Buffer, epi: Epilogue) -> None:
    """A GPU's depthwise convolution (one input channel a group): a block of 16 x 16 threads
    per image, output channel and 16 x 16 outputs stages the input those outputs read (with
    its halo, zero in the padding) in shared memory once, then each thread sums its output's
    taps from there against the channel's weights, adds the bias and applies the epilogue.
    Each input element is read from global memory once a block, not once a tap."""
    t = DEPTHWISE_TILE
    (oh, ow), (ih, iw), (kh, kw) = geo.osp, geo.isp, geo.ksz
    (sy, sx), (dy, dx), (py, px) = geo.strides, geo.dil, geo.p0
    rows, cols = _depthwise_input_tile(geo)
    threads = t * t
    xs = row_major_strides((geo.n, geo.c, ih, iw))
    ys = row_major_strides((geo.n, geo.m, oh, ow))
    with kb.loop(geo.n * geo.m, "nm", kind=LoopKind.GRID) as nm, \
            kb.loop(-(-oh // t), "by", kind=LoopKind.GRID) as by, \
            kb.loop(-(-ow // t), "bx", kind=LoopKind.GRID) as bx:
        tile = kb.alloc("tile", y.dtype, (rows * cols,), "shared")
        with kb.loop(t, "ty", kind=LoopKind.BLOCK) as ty, \
                kb.loop(t, "tx", kind=LoopKind.BLOCK) as tx:
            n, m = (kb.local("n", nm // geo.m), kb.local("m", nm % geo.m)) if geo.n > 1 \
                else (const(0), nm)
            plane = kb.local("plane", offset([n, m // geo.mg], xs[:2]))
            tid = kb.local("tid", ty * t + tx)
            for e in range(-(-rows * cols // threads)):
                idx = kb.local("e", tid + e * threads if e else tid)
                r, col = idx // cols, idx % cols
                iy = kb.local("iy", by * (t * sy) + r - py)
                ix = kb.local("ix", bx * (t * sx) + col - px)
                inside = (iy >= 0) & (iy < ih) & (ix >= 0) & (ix < iw)
                value = select(inside, x[plane + iy * iw + ix], const(0, y.dtype))
                if (e + 1) * threads > rows * cols:  # the last round: some threads idle
                    with kb.if_(idx < rows * cols):
                        kb.store(tile, idx, value)
                else:
                    kb.store(tile, idx, value)
            kb.barrier()
            oy, ox = kb.local("oy", by * t + ty), kb.local("ox", bx * t + tx)
            acc = kb.local("acc", b[m] if b is not None else const(0, y.dtype))
            for ky in range(kh):
                for kx in range(kw):
                    kb.assign(acc, acc + w[m * (kh * kw) + ky * kw + kx]
                              * tile[(ty * sy + ky * dy) * cols + tx * sx + kx * dx])
            with kb.if_((oy < oh) & (ox < ow)):
                kb.store(y, offset([n, m], ys[:2]) + oy * ow + ox,
                         epi(kb, acc, [n, m, oy, ox]))
