"""The transformer ops of opsets 23/24: RMSNormalization, RotaryEmbedding and Attention.

    RMSNormalization  y = x / sqrt(mean(x^2 over axes [axis, rank)) + epsilon) * scale
    RotaryEmbedding   per head and position, the pairs (x1, x2) of the first R = rotary dim
                      channels (halves, or even/odd when interleaved) rotate by the cached
                      angle: (x1 cos - x2 sin, x1 sin + x2 cos); the other channels pass through
    Attention         Y = softmax(cap(scale Q K^T) + bias) V per (batch, query head), K and V
                      the past keys/values followed by the new ones, query head h reading
                      key/value head h // (Hq / Hkv) (grouped-query attention); cap(s) =
                      c tanh(s / c) for softcap c > 0; bias = the float mask, or 0 / -inf from a
                      boolean mask, is_causal (key j > query i + past length) and the padding
                      (key j >= nonpad_kv_seqlen[b]); a mask narrower than the keys is -inf past
                      its end. 3-D Q/K/V are [B, S, heads * head_size].
Scores and statistics are computed in float32 (float64 where the attributes ask for it), also
for float16 tensors, which are rounded once at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dtypes import DType
from ..registry import Attr, op
from ..types import TensorType
from .nn import _fail

# ONNX element types an attribute may name as a computation precision, and the type edgec
# computes in for each (float32 holds float16 and bfloat16 exactly).
_PRECISIONS = {1: DType.F32, 10: DType.F32, 16: DType.F32, 11: DType.F64}


def compute_type(opname: str, what: str, code: int | None) -> DType:
    """The dtype statistics are computed in for the attribute value `code` (None: float32)."""
    if code is None:
        return DType.F32
    if code not in _PRECISIONS:
        _fail(opname, f"{what}={code} is not a float type edgec computes in (one of "
                      f"{sorted(_PRECISIONS)}: float, float16, bfloat16, double)")
    return _PRECISIONS[code]


def _check_float(opname: str, *types: TensorType) -> None:
    for t in types:
        if not t.dtype.is_float or t.dtype != types[0].dtype:
            _fail(opname, "inputs must be float tensors of one dtype, got "
                          + ", ".join(str(u) for u in types))


# -- RMSNormalization -----------------------------------------------------------------------

def rms_axis(opname: str, axis: int, rank: int) -> int:
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        _fail(opname, f"axis {axis} is out of range for rank {rank}")
    return a


def _infer_rms(inputs, *, axis, epsilon, stash_type):
    x, scale = inputs[0].type, inputs[1].type
    _check_float("RMSNormalization", x, scale)
    a = rms_axis("RMSNormalization", axis, x.rank)
    norm = x.shape[a:]
    s = scale.shape
    lead = len(s) - len(norm)
    if lead > 0 and any(d != 1 for d in s[:lead]) or any(
            d not in (1, n) for d, n in zip(s[max(lead, 0):], norm[max(-lead, 0):])):
        _fail("RMSNormalization", f"scale {scale} does not broadcast to the normalized dims "
                                  f"{list(norm)} of {x} (axis {axis})")
    compute_type("RMSNormalization", "stash_type", stash_type)
    return x


@op("RMSNormalization", inputs=2, infer=_infer_rms,
    attrs={"axis": Attr.int(-1), "epsilon": Attr.float(1e-5), "stash_type": Attr.int(1)})
def rms_normalization(x, scale, *, axis, epsilon, stash_type):
    st = compute_type("RMSNormalization", "stash_type", stash_type).np
    a = rms_axis("RMSNormalization", axis, x.ndim)
    xs = x.astype(st)
    ms = np.mean(xs * xs, axis=tuple(range(a, x.ndim)), keepdims=True)
    y = xs / np.sqrt(ms + st.type(epsilon)) * scale.astype(st)
    return y.astype(x.dtype)


# -- RotaryEmbedding ------------------------------------------------------------------------

@dataclass(frozen=True)
class RotaryShape:
    """X viewed as [batch, heads, seq, head_size]; `rot` channels rotate."""

    batch: int
    heads: int
    seq: int
    head_size: int
    rot: int
    three_d: bool  # X is [batch, seq, heads * head_size]


def rotary_shape(x: TensorType, cos: TensorType, sin: TensorType, pos: TensorType | None,
                 num_heads: int | None, rotary_embedding_dim: int) -> RotaryShape:
    name = "RotaryEmbedding"
    _check_float(name, x, cos, sin)
    if x.rank == 4:
        b, h, s, d = x.shape
    elif x.rank == 3:
        if not num_heads or x.shape[2] % num_heads:
            _fail(name, f"a 3-D input {x} needs num_heads dividing its last dim "
                        f"(num_heads={num_heads})")
        b, s, h, d = x.shape[0], x.shape[1], num_heads, x.shape[2] // num_heads
    else:
        _fail(name, f"input must be [B, heads, S, head_size] or [B, S, hidden], got {x}")
    rot = rotary_embedding_dim or d
    if rot % 2 or not 0 < rot <= d:
        _fail(name, f"rotary_embedding_dim {rot} must be even and at most the head size {d}")
    if cos.shape != sin.shape:
        _fail(name, f"cos_cache {cos} and sin_cache {sin} differ in shape")
    if pos is not None:
        if pos.shape != (b, s) or pos.dtype != DType.I64:
            _fail(name, f"position_ids must be i64[{b}, {s}], got {pos}")
        if cos.rank != 2 or cos.shape[1] != rot // 2 or cos.shape[0] < 1:
            _fail(name, f"with position_ids the caches must be [max_position, {rot // 2}], "
                        f"got {cos}")
    elif cos.shape != (b, s, rot // 2):
        _fail(name, f"without position_ids the caches must be [{b}, {s}, {rot // 2}], got {cos}")
    return RotaryShape(b, h, s, d, rot, x.rank == 3)


def _infer_rotary(inputs, *, interleaved, num_heads, rotary_embedding_dim):
    rotary_shape(*(None if v is None else v.type for v in (inputs + [None])[:4]), num_heads,
                 rotary_embedding_dim)
    return inputs[0].type


@op("RotaryEmbedding", inputs=(3, 4), infer=_infer_rotary, traits=("indices",), attrs={
    "interleaved": Attr.int(0), "num_heads": Attr.int(None),
    "rotary_embedding_dim": Attr.int(0)})
def rotary_embedding(x, cos_cache, sin_cache, position_ids=None, *, interleaved, num_heads,
                     rotary_embedding_dim):
    """Positions outside the caches are clamped into them (as the kernel does)."""
    xs = _heads_first(x, num_heads or 1).astype(np.float32)
    rot = rotary_embedding_dim or xs.shape[3]
    cos, sin = cos_cache.astype(np.float32), sin_cache.astype(np.float32)
    if position_ids is not None:
        idx = np.clip(position_ids, 0, cos.shape[0] - 1)
        cos, sin = cos[idx], sin[idx]
    cos, sin = cos[:, None], sin[:, None]  # [B, 1, S, rot/2]: the same for every head
    y = xs.copy()
    first, second = (slice(0, rot, 2), slice(1, rot, 2)) if interleaved else (
        slice(0, rot // 2), slice(rot // 2, rot))
    x1, x2 = xs[..., first], xs[..., second]
    y[..., first] = x1 * cos - x2 * sin
    y[..., second] = x1 * sin + x2 * cos
    if x.ndim == 3:
        y = y.transpose(0, 2, 1, 3).reshape(x.shape)
    return y.astype(x.dtype)


# -- Attention ------------------------------------------------------------------------------

@dataclass(frozen=True)
class AttentionShape:
    """The sizes of one Attention node: queries [batch, q_heads, q_seq, head_size] attend to
    `total` = past + kv_seq keys [batch, kv_heads, total, head_size] with values of v_size."""

    batch: int
    q_heads: int
    kv_heads: int
    q_seq: int
    kv_seq: int
    past: int
    head_size: int
    v_size: int
    three_d: bool

    @property
    def total(self) -> int:
        return self.past + self.kv_seq

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.q_heads // self.kv_heads


def attention_shape(ts: list[TensorType | None], q_num_heads: int | None,
                    kv_num_heads: int | None) -> AttentionShape:
    """Check the inputs of an Attention node (types, None where omitted) and size it."""
    name = "Attention"
    q, k, v, mask, past_k, past_v, nonpad = (ts + [None] * 7)[:7]
    _check_float(name, q, k, v)
    if not q.rank == k.rank == v.rank or q.rank not in (3, 4):
        _fail(name, f"Q, K and V must all be 4-D [B, heads, S, head_size] or all 3-D "
                    f"[B, S, hidden], got {q}, {k}, {v}")
    if q.rank == 3:
        if not q_num_heads or not kv_num_heads:
            _fail(name, "3-D Q, K and V need the q_num_heads and kv_num_heads attributes")
        for t, n in ((q, q_num_heads), (k, kv_num_heads), (v, kv_num_heads)):
            if t.shape[2] % n:
                _fail(name, f"hidden size of {t} is not a multiple of its {n} heads")
        b, sq, skv = q.shape[0], q.shape[1], k.shape[1]
        hq, hkv = q_num_heads, kv_num_heads
        d, dk, dv = q.shape[2] // hq, k.shape[2] // hkv, v.shape[2] // hkv
        kv_ok = k.shape[:2] == v.shape[:2]
    else:
        b, hq, sq, d = q.shape
        _, hkv, skv, dk = k.shape
        dv = v.shape[3]
        kv_ok = k.shape[:3] == v.shape[:3]
    if not kv_ok or k.shape[0] != b:
        _fail(name, f"K {k} and V {v} must share batch, heads and sequence with Q's batch {b}")
    if dk != d:
        _fail(name, f"Q's head size {d} differs from K's {dk} ({q}, {k})")
    if hkv < 1 or hq % hkv:
        _fail(name, f"{hq} query heads are not a multiple of {hkv} key/value heads")
    past = 0
    if (past_k is None) != (past_v is None):
        _fail(name, "past_key and past_value must be given together")
    if past_k is not None:
        past = past_k.shape[2] if past_k.rank == 4 else -1
        if past_k.shape != (b, hkv, past, d) or past_v.shape != (b, hkv, past, dv) \
                or past_k.dtype != q.dtype or past_v.dtype != q.dtype:
            _fail(name, f"past_key {past_k} and past_value {past_v} must be {q.dtype}"
                        f"[{b}, {hkv}, past, {d}] and [{b}, {hkv}, past, {dv}]")
    shape = AttentionShape(b, hq, hkv, sq, skv, past, d, dv, q.rank == 3)
    if mask is not None:
        full = (b, hq, sq, shape.total)
        lead = (1,) * (4 - mask.rank) + mask.shape if mask.rank <= 4 else ()
        if not lead or mask.dtype not in (DType.BOOL, q.dtype) or lead[3] > shape.total or any(
                m not in (1, f) for m, f in zip(lead[:3], full[:3])):
            _fail(name, f"attn_mask {mask} must be bool or {q.dtype}, broadcast to "
                        f"{list(full[:3])} + [at most {shape.total} keys]")
    if nonpad is not None and (nonpad.shape != (b,) or nonpad.dtype != DType.I64):
        _fail(name, f"nonpad_kv_seqlen must be i64[{b}], got {nonpad}")
    return shape


def _infer_attention(inputs, *, is_causal, kv_num_heads, q_num_heads, qk_matmul_output_mode,
                     scale, softcap, softmax_precision):
    q = inputs[0].type
    s = attention_shape([None if v is None else v.type for v in inputs], q_num_heads,
                        kv_num_heads)
    if qk_matmul_output_mode not in (0, 1, 2, 3):
        _fail("Attention", f"qk_matmul_output_mode must be 0..3, got {qk_matmul_output_mode}")
    compute_type("Attention", "softmax_precision", softmax_precision)
    y = (s.batch, s.q_seq, s.q_heads * s.v_size) if s.three_d else (
        s.batch, s.q_heads, s.q_seq, s.v_size)
    return [TensorType(y, q.dtype),
            TensorType((s.batch, s.kv_heads, s.total, s.head_size), q.dtype),
            TensorType((s.batch, s.kv_heads, s.total, s.v_size), q.dtype),
            TensorType((s.batch, s.q_heads, s.q_seq, s.total), q.dtype)]


def _heads_first(x: np.ndarray, heads: int) -> np.ndarray:
    """[B, S, heads * size] -> [B, heads, S, size]; 4-D arrays are returned as they are."""
    if x.ndim == 4:
        return x
    return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(0, 2, 1, 3)


def attention_bias(shape: AttentionShape, mask, nonpad, is_causal: int,
                   dtype=np.float32) -> np.ndarray:
    """The additive bias [B or 1, Hq or 1, Sq, total]: the mask (boolean: 0 / -inf; -inf past
    its last column), -inf above the causal diagonal and past each batch's valid keys."""
    total = shape.total
    bias = np.zeros((1, 1, shape.q_seq, total), dtype)
    if mask is not None:
        m = mask.reshape((1,) * (4 - mask.ndim) + mask.shape)
        if m.dtype == np.bool_:
            m = np.where(m, dtype(0), dtype(-np.inf))
        pad = np.full(m.shape[:3] + (total - m.shape[3],), -np.inf, dtype)
        bias = bias + np.concatenate([m.astype(dtype), pad], axis=3)
    if is_causal:
        i = np.arange(shape.q_seq)[:, None]
        j = np.arange(total)[None, :]
        bias = bias + np.where(j > i + shape.past, dtype(-np.inf), dtype(0))
    if nonpad is not None:
        j = np.arange(total)[None, :]
        valid = (j < nonpad[:, None]).reshape(shape.batch, 1, 1, total)
        bias = bias + np.where(valid, dtype(0), dtype(-np.inf))
    return bias


def softcap_scores(s: np.ndarray, softcap: float) -> np.ndarray:
    return s if softcap <= 0 else np.tanh(s / s.dtype.type(softcap)) * s.dtype.type(softcap)


def attention_scale(scale: float | None, head_size: int) -> float:
    return float(scale) if scale is not None else 1.0 / float(np.sqrt(head_size))


@op("Attention", inputs=(3, 7), outputs=(1, 4), infer=_infer_attention, attrs={
    "is_causal": Attr.int(0), "kv_num_heads": Attr.int(None), "q_num_heads": Attr.int(None),
    "qk_matmul_output_mode": Attr.int(0), "scale": Attr.float(None), "softcap": Attr.float(0.0),
    "softmax_precision": Attr.int(None)})
def attention(q, k, v, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, *,
              is_causal, kv_num_heads, q_num_heads, qk_matmul_output_mode, scale, softcap,
              softmax_precision):
    """Outputs Y, present_key, present_value and qk_matmul_output: the scaled (and capped)
    scores for modes 0 and 1, with the bias added for 2, the softmax for 3. A row whose every
    key is masked divides 0 by 0 (NaN), as the ONNX reference does."""
    ts = [None if a is None else TensorType(a.shape, DType.from_numpy(a.dtype))
          for a in (q, k, v, attn_mask, past_key, past_value, nonpad_kv_seqlen)]
    shp = attention_shape(ts, q_num_heads, kv_num_heads)
    st = compute_type("Attention", "softmax_precision", softmax_precision).np.type
    qs = _heads_first(q, shp.q_heads).astype(st)
    keys, values = _heads_first(k, shp.kv_heads), _heads_first(v, shp.kv_heads)
    if past_key is not None:
        keys = np.concatenate([past_key, keys], axis=2)
        values = np.concatenate([past_value, values], axis=2)
    kr = np.repeat(keys.astype(st), shp.group, axis=1)  # query head h reads kv head h // group
    vr = np.repeat(values.astype(st), shp.group, axis=1)
    scores = softcap_scores(qs @ kr.transpose(0, 1, 3, 2) * st(attention_scale(
        scale, shp.head_size)), softcap)
    biased = scores + attention_bias(shp, attn_mask, nonpad_kv_seqlen, is_causal, st)
    with np.errstate(invalid="ignore"):
        e = np.exp(biased - biased.max(axis=3, keepdims=True))
        p = e / e.sum(axis=3, keepdims=True)
    y = p @ vr
    if shp.three_d:
        y = y.transpose(0, 2, 1, 3).reshape(shp.batch, shp.q_seq, -1)
    qk = {2: biased, 3: p}.get(qk_matmul_output_mode, scores)
    full = (shp.batch, shp.q_heads, shp.q_seq, shp.total)
    return (y.astype(q.dtype), keys, values, np.broadcast_to(qk, full).astype(q.dtype))
