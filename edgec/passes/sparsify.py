"""Pruning-aware compilation: convolutions whose weights are mostly zero run sparse.

Nothing asks for it: a float Conv/FusedConv (2-D, group 1, no dilation, constant weights)
whose zeros make the sparse kernel cheaper by the cost model becomes

    y = FusedConv(x, W, B?, Z?){...}
        -> xs = ConvStage(x){kernel_shape, pads, strides}        (none for a 1x1, stride 1,
           y  = SparseConv(xs, V, I, P, B?, Z?){wenc, wshape, ...} unpadded convolution)

with W staged and stored as block-CSR (ir/sparse.py). The cost model counts FMAs, each kernel's at
the share of the FMA peak it reaches (the same share on the vector ISAs measured): the dense
blocked kernel one per weight and output pixel at `DENSE_RATE`; the sparse one R x C per
stored block of R channels x C inputs and computed pixel (Wq of every OW kept) at
`SPARSE_RATE[R, C]`, plus the staging copy and the output's copy through the epilogue, and
the conversions to and from the blocked layout of a depthwise neighbour's tensor. The
block (R in 1, 4, 8, 16; C in 1, 4) is the one with the least cost: 1x1 (`csr`) for
unstructured zeros, Rx1 for weights pruned in blocks of output channels, 1x4 and Rx4 for
blocks of input channels (the `1x4` pruning pattern, the int8 kernels' dot4 groups); where
M % R != 0 the channels are padded to a multiple of R (zero weights the blocks compute and
the kernel drops; numerics unchanged) when that still costs least. Weights pruned N:M along
input channels (each channel's groups of M inputs at a tap hold N at most) are stored as
`nm N:M` where that stores no more entries (the same speed in fewer bytes). Each
convolution's choice and its figures go to `node.record.sparse` (a SparsePlan) for the report.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import numpy as np

from ..errors import PassError
from ..ir import DType, Graph, Node, Value
from ..ir.ops.sparse import staging_of
from ..ir.records import BlockPlan, KernelTimes, SparsePlan
from ..ir.sparse import (
    BLOCK_COLS,
    NMWeights,
    SlicedWeights,
    SparseWeights,
    density,
    encode_conv,
    encode_sliced,
)
from ..targets.uarch import microarch
from .manager import register_pass
from .rewrite import replace_value

# shares of the FMA peak each kernel reaches, tuned on the AVX-512 host so that the choices
# are the faster ones on the benchmark models (BENCHMARKS.md, bench_sparse.py). The single
# layers' profiles read lower (the 1-row sparse tile at 0.25, the MLP's gathers at 0.03, its
# dense GEMV at 0.075): with those, half of ResNet-18's layers at 70% unstructured zeros and
# one of the MLP's stayed dense, and both models ran slower (1.00x and 1.20x the dense build
# against 1.07x and 1.44x with every layer sparse)
# 16-row blocks fit one vector of pixels per tile (16 accumulators): ResNet-18 pruned to 90%
# in 16x1 blocks ran 1.13x slower on them than on 8-row blocks of the same weights, so
# 16 is chosen only where it stores fewer blocks than 8 would (never: the same zeros)
# 1x4 blocks (one offset for 4 input channels) ran ResNet-18 pruned in them 1.05x faster than
# 1x1 blocks of the same weights, at 90% and 70%; 4x4 blocks ran as fast as 4x1 (0.97-1.00x)
# and never store fewer blocks, so Rx4 with R > 1 is left to the Rx1 blocks (the kernel runs
# them where a graph holds them)
DENSE_RATE = 0.8
SPARSE_RATE = {(1, 1): 0.35, (4, 1): 0.55, (8, 1): 0.6, (16, 1): 0.53, (1, 4): 0.37}
# N:M-pruned ResNet-18 (1:4, 2:8, 1:8) ran as fast as on csr (0.99-1.00x): the same FMAs
# and loads, a byte of index per weight instead of a 4-byte offset. Chosen where it stores
# no more entries than csr would (then its weights are 5 bytes per entry instead of 8): it
# runs at the csr rate, rates[1, 1]
NM_GROUPS = (4, 8, 16)  # the M of N:M tried
# one row of A (B streams from the caches once per call) and the gathers: the CPU family's
# rates (targets/uarch.py: its bandwidth and gather cost against its FMA peak)
# with rows of A the dense kernel reaches DENSE_RATE, the gathers do not get faster: [16, 512]
# x [512, 512] at 90% zeros gathered in 102 us against 56 us dense (Emerald Rapids), a share
# of the peak 1.5 times the gathers' over one row there
GATHER_ROWS_SHARE = 1.5
CONV_ROWS = 4  # rows of A from which a matrix product may run as a convolution over them
# a matrix product as a convolution over its rows, [M, 512] x [512, 512] at 90% zeros
# (AVX-512): a stored entry cost about 0.2 ns of offset load and broadcast plus 0.44 ns per
# vector of 16 rows, so the tile's rate falls with fewer vectors (`_tile_fill`); its two
# transposes (a strided scalar copy) 0.65 ns an element, 60 times an FMA at the dense rate.
# M = 16, 64, 128: 1.9x, 2.2x, 2.3x faster than dense
TRANSPOSE_COST = 60.0


def microarch_of(name: str):
    try:
        return microarch(name)
    except ValueError as e:
        raise PassError(f"sparsify: {e}") from None


def conv_rates(uarch: str, lanes: int) -> dict[tuple[int, int], float]:
    """The sparse tile's share of the FMA peak per block (R, C) on CPU family `uarch` with
    `lanes`-wide vectors: SPARSE_RATE, less where the family's figures say so (Zen 5's
    AVX-512 doubles the FMA rate but not the loads and broadcasts of a block's entries)."""
    return {**SPARSE_RATE, **microarch_of(uarch).conv_share.get(lanes, {})}


def _tile_fill(vectors: int) -> float:
    """The sparse tile's cost per vector of pixels with `vectors` of them, relative to a
    full tile of 8 (the one `SPARSE_RATE` was measured on)."""
    return (1 + 0.45 / min(vectors, 8)) / (1 + 0.45 / 8)
# the staging copy and the compaction of the output, in FMA-equivalents per element
COPY_COST = 1.0
# a tensor between a sparse convolution and a depthwise one, which runs blocked (NCHWc,
# layout-nchwc): converted to or from the blocked layout, in FMA-equivalents per element
# (MobileNetV2 at 70% zeros on Zen 5: 0.24-0.52 ns an element, 30-65 of its FMAs; its
# 1x1 layers alone ran faster sparse, 2.69 against 2.85 ms, the network 0.74x as fast for
# the 1.7 ms of conversions)
LAYOUT_COST = 40.0


def sparse_plan(node: Node, pad_channels: bool = True, cols: int = 0,
                use_nm: bool = True, rates: dict | None = None,
                blocked: bool = True) -> SparsePlan:
    """The cost model's figures for convolution `node`: the block (R output channels x C
    input channels) it would use, its block density, the estimated cost of each kernel, and
    whether sparse wins (without `pad_channels`, only the R that divide the output
    channels; with `cols`, only blocks of that many input channels; without `use_nm`, no
    N:M; `rates`: the tile's shares by block, conv_rates, default SPARSE_RATE; `blocked`:
    the target runs depthwise convolutions in the blocked layout, a vector target's)."""
    w = node.inputs[1].const
    x = node.inputs[0].type
    st = staging_of(x, list(w.shape[2:]), node.attrs["pads"], node.attrs["strides"])
    oh, ow = st.hq - (w.shape[2] - 1) // st.sh, st.wq - (w.shape[3] - 1) // st.sw
    m = w.shape[0]
    blocks, block_density, cost = _blocks_plan(st.weights(w), oh * st.wq, st.phases,
                                               pad_channels, cols, use_nm, weights=w.size,
                                               rates=rates)
    copy = 0 if _identity_stage(node, w) else x.numel
    converted = _converted(node) if blocked else 0
    cost += COPY_COST * (copy + m * oh * st.wq) + LAYOUT_COST * converted
    dense = w.size * oh * ow / DENSE_RATE
    return SparsePlan(node.name, round(float(np.count_nonzero(w)) / w.size, 4), block_density,
                      dense, cost, cost < dense, blocks)


def _blocks_plan(ws: np.ndarray, pixels: int, phases: int, pad_channels: bool = True,
                 cols: int = 0, use_nm: bool = True, weights: int = 0,
                 rates: dict | None = None) -> tuple[BlockPlan, float, float]:
    """The cheapest stored form of staged weights `ws` [M, G, KH', KW'] for the sparse
    convolution over `pixels` computed pixels, its block density and its cost (the tile's
    work alone). The block density is the entries stored over the layer's `weights`
    (default ws.size): a 3x3 stride-2 window is staged as 4 phases of 2x2, 16 taps of which
    7 are zero, so that 80%-pruned weights fill 11% of the staged ones and 20% of their
    own. `rates`: the tile's shares by block (default SPARSE_RATE); N:M runs at its (1, 1)."""
    rates = rates or SPARSE_RATE
    m, g = ws.shape[:2]
    best = None
    for (r, c), rate in rates.items():
        # channels padded to a multiple of R: the padding's zeros are computed with the
        # blocks they fill (counted in the cost), then dropped
        if (m % r and not pad_channels) or (cols and c != cols) or (g // phases) % c:
            continue
        mp = -(-m // r) * r
        d = density(ws, r, c, phases)
        cost = d * (ws.size // m * mp) * pixels / rate
        if best is None or cost < best[3]:
            best = (r, c, d, cost)
    r, c, d, cost = best
    nm = None
    for gm in NM_GROUPS if use_nm else ():
        # N:M: each channel's groups of M inputs at a tap hold N weights at most
        if (g // phases) % gm:
            continue
        per = np.count_nonzero(NMWeights(1, gm, phases).groups(ws), axis=2)
        n = int(per.max(initial=1))
        stored = m * int(np.any(per, axis=0).sum()) * n  # groups no channel uses left out
        nm_cost = stored * pixels / rates[1, 1]
        # ties: N:M over blocks (fewer bytes), the smaller M (1:4 weights stay 1:4)
        if n < gm and (nm_cost < cost or (nm_cost == cost and nm is None)):
            nm, d, cost = (n, gm), stored / ws.size, nm_cost
    if nm:
        r = c = 1
    blocks = BlockPlan(r, c, phases, nm, -m % r)
    return blocks, round(d * ws.size / (weights or ws.size), 4), cost


def _depthwise(node: Node | None) -> bool:
    return node is not None and node.op in ("Conv", "FusedConv") and \
        node.attrs["group"] > 1 and node.attrs["group"] == node.inputs[0].shape[1]


def _converted(node: Node) -> int:
    """The elements of convolution `node`'s input and output that change layout if it runs
    sparse (plain rows) between depthwise convolutions (blocked): read from or written to
    one."""
    x, y = node.inputs[0], node.output
    return (x.type.numel if _depthwise(x.producer) else 0) + \
        (y.type.numel if any(_depthwise(u) for u in y.users()) else 0)


def _identity_stage(node: Node, w: np.ndarray) -> bool:
    return w.shape[2:] == (1, 1) and node.attrs["strides"] == [1, 1] and \
        not any(node.attrs["pads"])


def _candidate(node: Node) -> bool:
    if node.op not in ("Conv", "FusedConv"):
        return False
    x, w = node.inputs[0], node.inputs[1]
    return (w.is_const and w.dtype is DType.F32 and x.dtype is DType.F32 and x.type.rank == 4
            and node.attrs["group"] == 1 and all(d == 1 for d in node.attrs["dilations"])
            and node.output.dtype is DType.F32)


def _matmul_candidate(node: Node) -> bool:
    if node.op not in ("MatMul", "FusedMatMul"):
        return False
    a, b = node.inputs[0], node.inputs[1]
    return (b.is_const and b.dtype is DType.F32 and a.dtype is DType.F32 and a.type.rank >= 2
            and b.type.rank == 2 and node.output.dtype is DType.F32
            and (node.input(3) is None or node.input(3).shape == node.output.shape))


def matmul_plan(node: Node, lanes: int, uarch: str = "", **blocks) -> SparsePlan:
    """The cost model's figures for a matrix product with constant B on CPU family `uarch`
    (targets/uarch.py): the dense kernel at `DENSE_RATE` of the peak with rows of A to share
    each weight's load, the family's `gemv_share` with one row (it streams B once per call);
    the gathering kernel at its `gather_rate` per stored entry (padding included) and row
    (`GATHER_ROWS_SHARE` times that from 4 rows); from `CONV_ROWS` rows of A (and no
    residual), the sparse convolution over the rows as its pixels (A and the result
    transposed: the plan's `blocks`, as `_blocks_plan` chooses them under `blocks`)."""
    cpu = microarch_of(uarch)
    b = node.inputs[1].const
    m = node.inputs[0].type.numel // b.shape[0]  # A's leading dimensions are its rows
    k, n = b.shape
    _, _, ptr = encode_sliced(b, SlicedWeights(lanes))
    stored = int(ptr[-1]) * lanes
    gather = cpu.gather_rate(lanes) * (GATHER_ROWS_SHARE if m >= 4 else 1)
    dense = b.size * m / (DENSE_RATE if m >= 4 else cpu.gemv_share)
    sparse = stored * m / gather
    plan = SparsePlan(node.name, round(float(np.count_nonzero(b)) / b.size, 4),
                      round(stored / max(b.size, 1), 4), dense, sparse, sparse < dense)
    if m >= CONV_ROWS and node.input(3) is None and lanes > 1:
        # the tile computes whole vectors of rows (M = 40 as 48) and pays each entry's offset
        # load and broadcast over them: few vectors, less of the rate
        nv = -(-m // lanes)
        conv, block_density, cost = _blocks_plan(
            np.ascontiguousarray(b.T).reshape(n, k, 1, 1), nv * lanes, 1, **blocks,
            rates=conv_rates(uarch, lanes))
        cost *= _tile_fill(nv)
        cost += TRANSPOSE_COST * (m * k + m * n)
        if cost < sparse:
            plan = replace(plan, blocks=conv, sparse_cost=cost, block_density=block_density,
                           runs_sparse=cost < dense)
    return plan


def tuning_key(node: Node, lanes: int, uarch: str) -> str:
    """What a measured choice for `node` is filed under: its op, input shape, attributes and
    weights (their zeros decide the sparse kernel's time), the vector lanes and CPU family."""
    h = hashlib.sha1()
    w = node.inputs[1].const
    h.update(repr((node.op, list(node.inputs[0].shape), sorted(node.attrs.items()), w.shape,
                   lanes, uarch)).encode())
    h.update(np.ascontiguousarray(w).tobytes())
    return h.hexdigest()[:20]


def read_timings(path: str) -> dict:
    """The measured choices in the JSON file at `path` (compiler/tune.py writes it):
    {key: {"sparse": us, "dense": us}}; {} for no file."""
    if not path:
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise PassError(f"sparsify: cannot read the timings in {path}: {e}; delete the file "
                        "and compile again") from None
    return data if isinstance(data, dict) else {}


def _settle(plan: SparsePlan, key: str, measured: dict, error: float) -> SparsePlan:
    """`plan` marked `close` where the model cannot tell its kernels apart (estimates within
    `error` of each other), with a measured answer taken over the model's."""
    lo, hi = sorted((plan.sparse_cost, plan.dense_cost))
    if hi < lo * error:
        plan = replace(plan, close=True, key=key)
    t = measured.get(key)
    if isinstance(t, dict) and {"sparse", "dense"} <= t.keys():
        plan = replace(plan, measured_us=KernelTimes(t["sparse"], t["dense"]),
                       runs_sparse=t["sparse"] < t["dense"])
    return plan


@register_pass("sparsify")
def sparsify(graph: Graph, *, lanes: int = 1, force: bool = False,
             pad_channels: bool = True, cols: int = 0, nm: bool = True, uarch: str = "",
             timings: str = "") -> bool:
    """Run convolutions and matrix products whose weights are mostly zero on the sparse
    kernels (`lanes`: the target's float vector, the slices of the gathering kernel;
    `force`: every candidate with any zero weight, whatever the cost model says, for tests;
    `pad_channels`: let a convolution's channels be padded to a multiple of the block;
    `cols`: only a convolution's blocks of that many input channels, 1 or 4; 0: any;
    `nm`: let weights pruned N:M be stored so; `uarch`: the CPU family whose rates the
    model uses, targets/uarch.py; `timings`: a JSON file of measured choices, which
    override the model's for the layers in it). A matrix product whose two estimates lie
    within the family's error (costs.MODEL_ERROR) of each other is marked `close` in its
    plan, with its `key` in the timings. Convolutions are not: timed alone, the dense one
    would pay the conversions to and from the blocked layout that a network pays once
    (ResNet-18's stem at 70% zeros: 7.0 ms dense alone, 4.4x its sparse kernel, against
    1.4x in the model), so that the timing would not tell either; their rates held on both
    families measured (bench_sparse.py's ResNet-18, 1.06x-6.1x faster sparse at 70%-90%)."""
    if cols not in (0, *BLOCK_COLS):
        raise PassError(f"sparsify: cols={cols} is not 0 (any) or one of {list(BLOCK_COLS)}")
    error = microarch_of(uarch).error
    measured = read_timings(timings)
    changed = False
    for node in list(graph.nodes):
        if _matmul_candidate(node) and (node.inputs[1].const == 0).any():
            plan = node.record.sparse = _settle(
                matmul_plan(node, lanes, uarch, pad_channels=pad_channels, cols=cols,
                            use_nm=nm), tuning_key(node, lanes, uarch), measured, error)
            if plan.runs_sparse or force:
                _rewrite_product(graph, node, plan, lanes)
                changed = True
            continue
        if not _candidate(node):
            continue
        w = node.inputs[1].const
        if not (w == 0).any():
            continue
        plan = node.record.sparse = sparse_plan(node, pad_channels, cols, nm,
                                                conv_rates(uarch, lanes), blocked=lanes > 1)
        if not (plan.runs_sparse or force):
            continue
        _rewrite(graph, node, plan.blocks)
        changed = True
    return changed


def _rewrite_product(graph: Graph, node: Node, plan: SparsePlan, lanes: int) -> None:
    """The matrix product `node` on the sparse kernel `plan` chose: A with leading
    dimensions [..., K] (a sequence's [1, 40, K]) taken as [rows, K] and the result
    reshaped back (views); the gathering SparseMatMul, or the convolution over the rows."""
    a, z = node.inputs[0], node.input(3)
    k, n = node.inputs[1].shape
    rows = a.type.numel // k
    if a.type.rank > 2:
        a = _reshape(graph, node, a, [rows, k], "rows2d")
        z = _reshape(graph, node, z, [rows, n], "z2d") if z is not None else None
    y = _conv_product(graph, node, a, plan.blocks) if plan.blocks is not None else \
        _gather_product(graph, node, a, z, lanes)
    if node.output.type.rank > 2:
        y = _reshape(graph, node, y, list(node.output.shape), "nd")
    replace_value(graph, node.output, y)
    graph.remove_node(node)


def _reshape(graph: Graph, node: Node, v: Value, shape: list[int], suffix: str) -> Value:
    """v reshaped to `shape`, by a node before `node`."""
    dims = graph.const(np.array(shape, np.int64), f"{node.name}_{suffix}_shape")
    return graph.add_node("Reshape", [v, dims], {}, name=f"{node.name}_{suffix}",
                          before=node).output


def _epilogue_attrs(node: Node) -> dict:
    return {"activation": node.attrs.get("activation", ""),
            "activation_params": node.attrs.get("activation_params", [])}


def _gather_product(graph: Graph, node: Node, a: Value, z: Value | None, lanes: int) -> Value:
    bv = node.inputs[1]
    enc = SlicedWeights(lanes)
    vals, cols, ptr = encode_sliced(bv.const, enc)
    ins = [a, graph.const(vals, f"{bv.name}_values"), graph.const(cols, f"{bv.name}_columns"),
           graph.const(ptr, f"{bv.name}_slices"), node.input(2), z]
    while ins[-1] is None:
        ins.pop()
    new = graph.add_node("SparseMatMul", ins, {"wenc": str(enc), "wshape": list(bv.shape),
                                               **_epilogue_attrs(node)},
                         name=node.name, before=node)
    new.inherit(node)
    return new.output


def _conv_product(graph: Graph, node: Node, a: Value, blocks: BlockPlan) -> Value:
    """act(A @ B + bias) for A [M, K] as a 1x1 SparseConv over M pixels:

        at = Transpose(A) -> [1, K, 1, M];  yc = SparseConv(at, B^T stored){...} [1, N, 1, M]
        y = Transpose([N, M] of yc)
    """
    bv = node.inputs[1]
    m, k = a.shape
    n = bv.shape[1]
    src = a.producer
    if src is not None and src.op == "Transpose" and list(src.attrs.get("perm") or []) == [1, 0]:
        at = src.inputs[0]  # A is a transpose already (the previous product's, run so)
    else:
        at = graph.add_node("Transpose", [a], {"perm": [1, 0]}, name=f"{node.name}_rows_t",
                            before=node).output
    enc = _encoding(blocks)
    ws = np.ascontiguousarray(bv.const.T).reshape(n, k, 1, 1)
    names = ("values", "indices", "groups") if blocks.nm else ("values", "offsets", "rowptr")
    stored = encode_conv(ws, enc, 1, m)
    ins = [_reshape(graph, node, at, [1, k, 1, m], "rows"),
           *(graph.const(arr, f"{bv.name}_{nm}") for arr, nm in zip(stored, names))]
    if node.input(2) is not None:
        ins.append(node.input(2))
    conv = graph.add_node("SparseConv", ins, {"wenc": str(enc), "wshape": list(ws.shape),
                                              **_epilogue_attrs(node)},
                          name=node.name, before=node)
    conv.inherit(node)
    return graph.add_node("Transpose", [_reshape(graph, node, conv.output, [n, m], "cols")],
                          {"perm": [1, 0]}, name=f"{node.name}_out", before=node).output


def _encoding(blocks: BlockPlan) -> SparseWeights | NMWeights:
    if blocks.nm:
        return NMWeights(*blocks.nm, blocks.step)
    return SparseWeights(blocks.rows, blocks.cols, blocks.step if blocks.cols > 1 else 1)


def _replace(graph: Graph, node: Node, op: str, ins: list, attrs: dict) -> None:
    new = graph.add_node(op, ins, attrs, name=node.name, before=node)
    new.inherit(node)
    replace_value(graph, node.output, new.output)  # (it takes the node's and value's names)
    graph.remove_node(node)


def _rewrite(graph: Graph, node: Node, blocks: BlockPlan) -> None:
    x, wv = node.inputs[0], node.inputs[1]
    w = wv.const
    pads, strides = node.attrs["pads"], node.attrs["strides"]
    st = staging_of(x.type, list(w.shape[2:]), pads, strides)
    xs = x
    if not _identity_stage(node, w):
        xs = graph.add_node("ConvStage", [x], {"kernel_shape": list(w.shape[2:]), "pads": pads,
                                               "strides": strides},
                            name=f"{node.name}_stage", before=node).output
    enc = _encoding(blocks)
    ws = st.weights(w)
    vals, offs, rowptr = encode_conv(ws, enc, st.hq, st.wq)
    names = ("values", "indices", "groups") if blocks.nm else ("values", "offsets", "rowptr")
    ins = [xs, *(graph.const(a, f"{wv.name}_{nm}") for a, nm in zip((vals, offs, rowptr), names)),
           node.input(2), node.input(3)]
    attrs = {"wenc": str(enc), "wshape": list(ws.shape), **_epilogue_attrs(node)}
    while ins[-1] is None:
        ins.pop()
    _replace(graph, node, "SparseConv", ins, attrs)
