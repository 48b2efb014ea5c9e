"""Kernel builders of RMSNormalization, RotaryEmbedding and Attention (edgec/ir/ops/attention.py
has the maths).

Attention runs one loop nest over (batch, query head, query row) and needs no scratch memory:
the row's scores s_j (a dot product of head_size terms, scaled, capped, biased by the mask,
causal and padding terms on the fly) are computed twice, once for their maximum m and once for
p_j = exp(s_j - m), whose sum l and weighted values sum_j p_j V[j] accumulate, the latter in
the float32 output row itself, which is then divided by l. A float16 output cannot hold the
running sums, so there each output element gets its own float32 accumulator and recomputes the
scores. The present key/value outputs are written first and the scores then read keys and
values from them; without them, key j < past reads past_key, the others K.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ...ir.dtypes import DType
from ...ir.graph import Node
from ...ir.ops.attention import (
    attention_scale,
    attention_shape,
    compute_type,
    rms_axis,
    rotary_shape,
)
from ...kernel_ir.kernel import (
    INDEX,
    Buffer,
    Expr,
    call,
    cast,
    const,
    linear_index,
    maximum,
    minimum,
    select,
)
from ..lower import NodeKernelBuilder, broadcast_index, coalesce, kernel
from .common import named

F32 = DType.F32


@kernel("RMSNormalization")
def rms_normalization(kb: NodeKernelBuilder, node: Node) -> None:
    """Per row of the normalized dims: inv = 1 / sqrt(sum(x^2) / n + epsilon), then
    y = x * inv * scale (scale broadcast over the row)."""
    x_v, s_v = node.inputs
    at = node.attrs
    a = rms_axis("RMSNormalization", at["axis"], len(x_v.shape))
    norm = x_v.shape[a:]
    rows, n = math.prod(x_v.shape[:a]), math.prod(norm)
    st = compute_type("RMSNormalization", "stash_type", at["stash_type"])
    x, scale, y = kb.bind(x_v, "x"), kb.bind(s_v, "scale"), kb.bind(node.output, "y")
    dims, flags = coalesce(norm, [s_v.shape])
    names = [f"c{k}" for k in range(len(dims))]
    with kb.loop(rows, "r") as r:
        base = named(kb, "base", r * n)
        sq = kb.local("sq", const(0, st))
        with kb.loops(dims, names) as cs:
            v = named(kb, "v", cast(x[base + linear_index(cs, dims)], st))
            kb.assign(sq, sq + v * v)
        inv = kb.local("inv", const(1, st) / call("sqrt", sq / const(n, st)
                                                  + const(at["epsilon"], st)))
        with kb.loops(dims, names) as cs:
            i = base + linear_index(cs, dims)
            kb.store(y, i, cast(x[i], st) * inv * cast(scale[broadcast_index(cs, dims, flags[0])],
                                                       st))


@kernel("RotaryEmbedding")
def rotary_embedding(kb: NodeKernelBuilder, node: Node) -> None:
    """Per (batch, position): the cache row (position_ids[b, s], clamped into the cache, or
    (b, s) itself); per head, each rotated pair (j, j + R/2), or (2j, 2j + 1) interleaved,
    becomes (x1 cos_j - x2 sin_j, x1 sin_j + x2 cos_j); channels past R are copied."""
    at = node.attrs
    ins = list(node.inputs) + [None]
    pos_v = ins[3]
    shp = rotary_shape(*(None if v is None else v.type for v in ins[:4]), at["num_heads"],
                       at["rotary_embedding_dim"])
    b_, h_, s_, d_, rot = shp.batch, shp.heads, shp.seq, shp.head_size, shp.rot
    half = rot // 2
    x, y = kb.bind(ins[0], "x"), kb.bind(node.output, "y")
    cos, sin = kb.bind(ins[1], "cos_cache"), kb.bind(ins[2], "sin_cache")
    st = F32 if x.dtype == DType.F16 else x.dtype
    with kb.loops([b_, s_], ["b", "s"]) as (b, s):
        if pos_v is not None:
            pos = kb.bind(pos_v, "position_ids")
            p = cast(pos[b * s_ + s], INDEX)
            cache = kb.local("cache", minimum(maximum(p, 0), ins[1].shape[0] - 1) * half)
        else:
            cache = named(kb, "cache", (b * s_ + s) * half)
        with kb.loop(h_, "h") as h:
            start = (b * s_ + s) * (h_ * d_) + h * d_ if shp.three_d else ((b * h_ + h) * s_
                                                                          + s) * d_
            base = named(kb, "base", start)
            with kb.loop(half, "j") as j:
                c = kb.local("c", cast(cos[cache + j], st))
                sn = kb.local("sn", cast(sin[cache + j], st))
                i1, i2 = (base + 2 * j, base + 2 * j + 1) if at["interleaved"] else (
                    base + j, base + j + half)
                x1 = kb.local("x1", cast(x[i1], st))
                x2 = kb.local("x2", cast(x[i2], st))
                kb.store(y, i1, x1 * c - x2 * sn)
                kb.store(y, i2, x1 * sn + x2 * c)
            with kb.loop(d_ - rot, "d") as d:
                kb.store(y, base + rot + d, x[base + rot + d])


Access = Callable[[Expr, Expr, Expr, Expr], Expr]  # (batch, head, position, channel) -> load


def _heads_view(buf: Buffer, three_d: bool, heads: int, seq: int, size: int) -> Access:
    """Element (b, h, t, c) of a [B, heads, seq, size] tensor, or of its 3-D [B, seq,
    heads * size] form."""
    if three_d:
        return lambda b, h, t, c: buf[(b * seq + t) * (heads * size) + h * size + c]
    return lambda b, h, t, c: buf[((b * heads + h) * seq + t) * size + c]


def _past_then_new(past: Access, new: Access, n_past: int) -> Access:
    """Position t of the past entries followed by the new ones (indices clamped so that both
    loads are in range whichever is selected)."""
    return lambda b, h, t, c: select(t < n_past, past(b, h, minimum(t, n_past - 1), c),
                                     new(b, h, maximum(t - n_past, 0), c))


@kernel("Attention")
def attention(kb: NodeKernelBuilder, node: Node) -> None:
    at = node.attrs
    ins = (list(node.inputs) + [None] * 7)[:7]
    q_v, k_v, v_v, mask_v, pk_v, pv_v, nonpad_v = ins
    sh = attention_shape([None if v is None else v.type for v in ins], at["q_num_heads"],
                         at["kv_num_heads"])
    st = compute_type("Attention", "softmax_precision", at["softmax_precision"])
    b_, hq, hkv, sq, skv, past, d_, dv, total = (sh.batch, sh.q_heads, sh.kv_heads, sh.q_seq,
                                                 sh.kv_seq, sh.past, sh.head_size, sh.v_size,
                                                 sh.total)
    outs = list(node.outputs)
    y = kb.bind(outs[0], "y")
    q = _heads_view(kb.bind(q_v, "q"), sh.three_d, hq, sq, d_)
    k_new = _heads_view(kb.bind(k_v, "k"), sh.three_d, hkv, skv, d_)
    v_new = _heads_view(kb.bind(v_v, "v"), sh.three_d, hkv, skv, dv)
    keys, values = k_new, v_new
    if past:
        keys = _past_then_new(_heads_view(kb.bind(pk_v, "past_key"), False, hkv, past, d_),
                              k_new, past)
        values = _past_then_new(_heads_view(kb.bind(pv_v, "past_value"), False, hkv, past, dv),
                                v_new, past)
    # present_key / present_value: the concatenation, then read back by the score loops
    for k, (src, size, name) in enumerate(((keys, d_, "present_key"),
                                           (values, dv, "present_value")), start=1):
        if len(outs) <= k:
            continue
        buf = kb.bind(outs[k], name)
        with kb.loops([b_, hkv, total, size], ["b", "h", "t", "c"]) as (b, h, t, c):
            kb.store(buf, ((b * hkv + h) * total + t) * size + c, src(b, h, t, c))
        view = _heads_view(buf, False, hkv, total, size)
        keys, values = (view, values) if k == 1 else (keys, view)
    qk = kb.bind(outs[3], "qk_matmul_output") if len(outs) > 3 else None
    mode = at["qk_matmul_output_mode"]
    mask = kb.bind(mask_v, "attn_mask") if mask_v is not None else None
    nonpad = kb.bind(nonpad_v, "nonpad_kv_seqlen") if nonpad_v is not None else None
    scale = const(attention_scale(at["scale"], d_), st)
    cap = at["softcap"]
    neg_inf = const(-math.inf, st)
    if mask is not None:
        mshape = (1,) * (4 - len(mask.shape)) + mask.shape
        width = mshape[3]
    acc_in_y = y.dtype == F32 and st == F32
    y_index = (lambda b, h, i, c: ((b * sq + i) * hq + h) * dv + c) if sh.three_d else (
        lambda b, h, i, c: ((b * hq + h) * sq + i) * dv + c)

    with kb.loops([b_, hq, sq], ["b", "h", "i"]) as (b, h, i):
        hk = named(kb, "kv_head", h // sh.group)
        qk_row = named(kb, "qk_row", ((b * hq + h) * sq + i) * total) if qk is not None else None

        def score(j: Expr) -> tuple[Expr, Expr]:
            """(capped score, biased score) of key j, each held in a local."""
            dot = kb.local("dot", const(0, st))
            with kb.loop(d_, "c") as c:
                kb.assign(dot, dot + cast(q(b, h, i, c), st) * cast(keys(b, hk, j, c), st))
            s = dot * scale
            if cap > 0:
                s = const(cap, st) * call("tanh", s / const(cap, st))
            raw = kb.local("s", s)
            biased = raw
            if mask is not None:
                col = j if width == total else minimum(j, width - 1)
                m = mask[linear_index([b, h, i, col], mshape)]
                m = select(m, const(0, st), neg_inf) if mask.dtype == DType.BOOL else cast(m, st)
                biased = biased + (m if width == total else select(j < width, m, neg_inf))
            hidden = []
            if at["is_causal"]:
                hidden.append(j > i + past)
            if nonpad is not None:
                hidden.append(j >= cast(nonpad[b], INDEX))
            for cond in hidden:
                biased = select(cond, neg_inf, biased)
            return raw, (biased if biased is raw else kb.local("sb", biased))

        top = kb.local("top", neg_inf)
        with kb.loop(total, "j") as j:
            raw, biased = score(j)
            if qk is not None and mode in (0, 1, 2):
                kb.store(qk, qk_row + j, raw if mode < 2 else biased)
            kb.assign(top, maximum(top, biased))
        denom = kb.local("denom", const(0, st))
        if acc_in_y:
            with kb.loop(dv, "c") as c:
                kb.store(y, y_index(b, h, i, c), const(0, F32))
        with kb.loop(total, "j") as j:
            p = kb.local("p", call("exp", score(j)[1] - top))
            kb.assign(denom, denom + p)
            if qk is not None and mode == 3:
                kb.store(qk, qk_row + j, p)
            if acc_in_y:
                with kb.loop(dv, "c") as c:
                    yi = named(kb, "yi", y_index(b, h, i, c))
                    kb.store(y, yi, y[yi] + p * values(b, hk, j, c))
        inv = kb.local("inv", const(1, st) / denom)
        with kb.loop(dv, "c") as c:
            if acc_in_y:
                yi = named(kb, "yi", y_index(b, h, i, c))
                kb.store(y, yi, y[yi] * inv)
            else:
                acc = kb.local("acc", const(0, st))
                with kb.loop(total, "j") as j:
                    p = call("exp", score(j)[1] - top)
                    kb.assign(acc, acc + p * cast(values(b, hk, j, c), st))
                kb.store(y, y_index(b, h, i, c), acc * inv)
        if qk is not None and mode == 3:
            with kb.loop(total, "j") as j:
                kb.store(qk, qk_row + j, cast(qk[qk_row + j], st) * inv)
