"""RMSNormalization, RotaryEmbedding and Attention kernels compiled to C without gcc warnings
and run through the loader, against the interpreter (the ops' numpy references). Many nodes
share one compiled graph to keep builds few."""

from __future__ import annotations

import numpy as np

from edgec.ir import DType, Graph, TensorType

F16, F32, I64 = DType.F16, DType.F32, DType.I64


def rand(*shape, seed=0, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _inputs(g: Graph, arrays: dict[str, np.ndarray]) -> dict:
    return {k: g.add_input(k, TensorType(a.shape, DType.from_numpy(a.dtype)))
            for k, a in arrays.items()}


def _attention_graph(dt) -> tuple[Graph, dict[str, np.ndarray]]:
    keep = np.random.default_rng(7).random((2, 1, 3, 7)) < 0.7
    keep[..., 0] = True  # no row without keys (that would be NaN in both, but spoil tolerances)
    feeds = {
        "q": rand(2, 4, 3, 5, dtype=dt), "k": rand(2, 2, 4, 5, seed=1, dtype=dt),
        "v": rand(2, 2, 4, 7, seed=2, dtype=dt), "past_k": rand(2, 2, 3, 5, seed=3, dtype=dt),
        "past_v": rand(2, 2, 3, 7, seed=4, dtype=dt), "bool_mask": keep,
        "mask": np.where(keep[..., :6], rand(2, 1, 3, 6, seed=5), -np.inf).astype(dt),
        "short_mask": np.where(keep[0, 0, :, :3], rand(3, 3, seed=9), -np.inf).astype(dt),
        "q3": rand(2, 3, 20, seed=6, dtype=dt), "k3": rand(2, 4, 10, seed=7, dtype=dt),
        "v3": rand(2, 4, 14, seed=8, dtype=dt),
    }
    g = Graph("attention")
    x = _inputs(g, feeds)
    q, k, v, pk, pv = x["q"], x["k"], x["v"], x["past_k"], x["past_v"]
    nonpad = g.const(np.array([4, 2], np.int64), "nonpad")
    nodes = [
        ([q, k, v, x["bool_mask"], pk, pv], {"is_causal": 1, "qk_matmul_output_mode": 2}, 4),
        ([q, k, v, x["short_mask"]], {"qk_matmul_output_mode": 3, "softcap": 1.5, "scale": 0.4}, 4),
        ([q, k, v, None, None, None, nonpad], {"is_causal": 1}, 1),
        ([q, k, v, x["mask"], pk, pv], {"softcap": 2.0}, 1),  # keys from past_key / K
        ([q, k, v, x["bool_mask"], pk, pv], {"softmax_precision": 11}, 1),  # float64 scores
        ([x["q3"], x["k3"], x["v3"]], {"q_num_heads": 4, "kv_num_heads": 2}, 4),
        ([x["q3"], x["k3"], x["v3"]],
         {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1, "qk_matmul_output_mode": 1}, 4),
    ]
    outs = []
    for ins, attrs, n in nodes:
        outs += g.add_node("Attention", ins, attrs, num_outputs=n).outputs
    g.outputs = outs
    return g, feeds


def test_attention(check):
    g, feeds = _attention_graph(np.float32)
    check(g, feeds)


def test_attention_float16(check):
    """float16 tensors, float32 scores: the outputs within a few float16 roundings."""
    g, feeds = _attention_graph(np.float16)
    check(g, feeds, tol=1e-3)


def test_rotary_embedding(check):
    feeds = {"x": rand(2, 4, 3, 8), "x3": rand(2, 3, 32, seed=1), "xh": rand(2, 4, 3, 8,
                                                                            dtype=np.float16),
             "pos": np.array([[0, 5, 9], [3, 3, 1]], np.int64)}
    g = Graph("rotary")
    x = _inputs(g, feeds)
    full = [g.const(rand(10, 4, seed=s)) for s in (2, 3)]
    part = [g.const(rand(10, 2, seed=s)) for s in (4, 5)]
    per_row = [g.const(rand(2, 3, 4, seed=s)) for s in (6, 7)]
    half = [g.const(rand(10, 4, seed=s).astype(np.float16)) for s in (8, 9)]
    nodes = [
        ([x["x"], *full, x["pos"]], {}),
        ([x["x"], *full, x["pos"]], {"interleaved": 1}),
        ([x["x"], *part, x["pos"]], {"rotary_embedding_dim": 4}),
        ([x["x"], *part, x["pos"]], {"rotary_embedding_dim": 4, "interleaved": 1}),
        ([x["x"], *per_row], {}),
        ([x["x3"], *full, x["pos"]], {"num_heads": 4}),
        ([x["x3"], *per_row], {"num_heads": 4, "interleaved": 1}),
        ([x["xh"], *half, x["pos"]], {}),
    ]
    g.outputs = [g.add_node("RotaryEmbedding", ins, attrs).output for ins, attrs in nodes]
    check(g, feeds, tol=1e-3)  # the float16 node rounds its outputs


def test_rms_normalization(check):
    feeds = {"x": rand(2, 3, 4, 5), "xh": rand(3, 8, dtype=np.float16)}
    g = Graph("rms")
    x = _inputs(g, feeds)
    shape = (2, 3, 4, 5)
    nodes = [
        (x["x"], rand(5, seed=1), {}),
        (x["x"], rand(*shape[1:], seed=2), {"axis": 1, "epsilon": 0.1}),
        (x["x"], rand(*shape, seed=3), {"axis": 0}),
        (x["x"], rand(4, 1, seed=4), {"axis": -2}),  # scale broadcast along the last dim
        (x["x"], rand(1, seed=5), {"axis": 2, "stash_type": 11}),
        (x["xh"], rand(8, seed=6).astype(np.float16), {}),
    ]
    g.outputs = [g.add_node("RMSNormalization", [xv, g.const(s)], attrs).output
                 for xv, s, attrs in nodes]
    check(g, feeds, tol=1e-3)
