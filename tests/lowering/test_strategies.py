"""Strategies as typed candidates (lowering/strategies.py): each convolution and matrix
product lists its candidates; forcing any that applies (`strategy=`, `--strategy`) builds a
library whose outputs match onnxruntime's; forcing one that does not is an error naming why;
`--explain`, report.txt and manifest.json carry the candidates and the choice."""

from __future__ import annotations

import re

import numpy as np
import pytest
from convnets import OnnxNet, onnxruntime_outputs, random_feeds
from harness import rel_error, runs_here

import edgec
from edgec.compiler.cli import main
from edgec.errors import EdgecError
from edgec.lowering.strategies import Candidate, Forced, Kind, choose
from edgec.targets.uarch import MODEL_ERROR


def conv_net():
    """A 3x3 convolution (fused with its Relu), a pointwise one and a depthwise one."""
    n = OnnxNet("convs")
    x = n.input("x", [1, 8, 12, 10])
    a = n.conv(x, 8, 12, 3, name="a")
    b = n.conv(n.node("Relu", [a]), 12, 13, 1, pads=[0, 0, 0, 0], name="b")
    n.output(n.conv(b, 13, 13, 3, group=13, name="c"))
    return n.model()


def mlp_net():
    n = OnnxNet("mlp")
    x = n.input("x", [3, 20])
    h = n.node("Relu", [n.node("Gemm", [x, n.weight((20, 24)), n.weight((24,), 0.1)])])
    n.output(n.node("MatMul", [h, n.weight((24, 10))]))
    return n.model()


def compiled(model, tmp_path, name: str, target: str, strategy=None):
    return edgec.compile(model, tmp_path / name, target=target, name="m", tune=False,
                         strategy=strategy or {})


def check_outputs(model, art) -> None:
    feeds = random_feeds(model)
    want = onnxruntime_outputs(model, feeds)
    got = edgec.load(art.out_dir).run(feeds)
    for k, w in want.items():
        assert rel_error(got[k], w) < 1e-5, k


def candidates(art) -> dict[str, tuple[list[Candidate], Candidate]]:
    """{node: (its candidates, the choice)} of the nodes with more than one candidate."""
    return {s["node"]: ([Candidate.from_record(c) for c in s["candidates"]],
                        Candidate.from_record(s["choice"]))
            for s in art.manifest["kernel_strategies"] if len(s["candidates"]) > 1}


# settable parameters set away from the Target's tiles: the emitters take other sizes too
RETUNED = {Kind.CONV_POINTWISE: "{rows=5,depth=3,tile=48}",
           Kind.CONV_TILES: "{tile_m=4,tile_p=3,tile_p_one=2}",
           Kind.BLOCKED_CONV: "{mb=1,r=3}", Kind.BLOCKED_DEPTHWISE: "{r=4}",
           Kind.VECTOR_GEMM: "{mr=2,nv=1}"}


@pytest.mark.parametrize("target,model", [("c-generic", conv_net), ("x86-avx2", conv_net),
                                          ("c-generic", mlp_net), ("x86-avx2", mlp_net)])
def test_every_applicable_candidate_forced_matches_onnxruntime(target, model, tmp_path):
    if not runs_here(target):
        pytest.skip(f"this CPU does not run {target}")
    m = model()
    default = compiled(m, tmp_path, "default", target)
    check_outputs(m, default)
    nodes = candidates(default)
    assert nodes, "no node with candidates"
    forced = []
    for node, (cands, choice) in nodes.items():
        assert choice in cands and choice.applies
        for c in cands:
            if c.applies:
                forced.append((node, c.kind.value))
                if c.kind in RETUNED:
                    forced.append((node, c.kind.value + RETUNED[c.kind]))
    if model is conv_net:  # the three float forms (c-generic) or both blocked ones (AVX2)
        assert {k for _, k in forced} >= ({"conv-pointwise", "conv-tiles", "conv-rows"}
                                          if target == "c-generic"
                                          else {"blocked-conv", "blocked-depthwise"})
    for i, (node, text) in enumerate(forced):
        art = compiled(m, tmp_path, f"forced{i}", target, {node: text})
        (row,) = [s for s in art.manifest["kernel_strategies"] if s["node"] == node]
        assert row["forced"] and Candidate.from_record(row["choice"]).text().startswith(
            text.split("{")[0]), row
        # the parameters as set
        assert all(row["choice"]["params"][k] == v for k, v in Forced.parse(text).params), row
        check_outputs(m, art)


def test_default_choice_is_the_builders_preference_where_costs_tie(tmp_path):
    art = compiled(conv_net(), tmp_path, "cg", "c-generic")
    got = {n: c.kind for n, (_, c) in candidates(art).items()}
    assert sorted(got.values(), key=lambda k: k.value) == [
        Kind.CONV_POINTWISE, Kind.CONV_ROWS, Kind.CONV_TILES], got


def test_forcing_what_does_not_apply_says_why(tmp_path):
    m = conv_net()
    art = compiled(m, tmp_path, "cg", "c-generic")
    depthwise = next(n for n, (_, c) in candidates(art).items() if c.kind is Kind.CONV_ROWS)
    with pytest.raises(EdgecError, match=rf"node {depthwise}: strategy conv-tiles does not "
                                         r"apply: 1 output channels per group"):
        compiled(m, tmp_path, "x1", "c-generic", {depthwise: "conv-tiles"})
    with pytest.raises(EdgecError, match="is not one of its candidates"):
        compiled(m, tmp_path, "x2", "c-generic", {depthwise: "vector-gemm"})
    with pytest.raises(EdgecError, match="unknown strategy kind 'tiles'"):
        compiled(m, tmp_path, "x3", "c-generic", {depthwise: "tiles"})
    with pytest.raises(EdgecError, match="has no parameter 'lanes'"):
        compiled(m, tmp_path, "x4", "c-generic", {depthwise: "conv-rows{lanes=4}"})
    with pytest.raises(EdgecError, match="which no kernel builds"):
        compiled(m, tmp_path, "x5", "c-generic", {"no_such_node": "conv-rows"})
    pointwise = next(n for n, (_, c) in candidates(art).items()
                     if c.kind is Kind.CONV_POINTWISE)
    with pytest.raises(EdgecError, match=rf"for {re.escape(pointwise[:-1])} did you mean "
                                         rf"(\S+ or )*{re.escape(pointwise)}\b"):
        compiled(m, tmp_path, "x5b", "c-generic", {pointwise[:-1]: "conv-rows"})
    with pytest.raises(EdgecError, match="'reduce' is channels here and cannot be set"):
        compiled(m, tmp_path, "x6", "c-generic", {pointwise: "conv-tiles{reduce=rows}"})
    with pytest.raises(EdgecError, match="must be a positive integer"):
        compiled(m, tmp_path, "x7", "c-generic", {pointwise: "conv-tiles{tile_m=0}"})


def test_explain_lists_the_candidates_and_the_choice(tmp_path, capsys):
    m = conv_net()
    path = tmp_path / "convs.onnx"
    path.write_bytes(m.SerializeToString())
    art = compiled(m, tmp_path, "probe", "c-generic")
    pointwise = next(n for n, (_, c) in candidates(art).items()
                     if c.kind is Kind.CONV_POINTWISE)
    main(["compile", str(path), "-o", str(tmp_path / "cli"), "--target", "c-generic",
          "--no-tune", "--explain", pointwise, "--strategy", f"{pointwise}=conv-tiles{{tile_p=2}}"])
    out = capsys.readouterr().out.splitlines()
    at = out.index(f"{pointwise} (Conv): conv-tiles{{tile_m=8,tile_p=2,tile_p_one=8,"
                   "reduce=channels} (forced)")
    lines = out[at + 1:at + 4]
    assert lines[0].startswith("    conv-pointwise{rows=8,depth=4,tile=") and "cost" in lines[0]
    assert lines[1] == ("  * conv-tiles{tile_m=8,tile_p=2,tile_p_one=8,reduce=channels}: "
                        "cost not modelled")
    assert lines[2].startswith("    conv-rows: cost ")
    report = (tmp_path / "cli" / "report.txt").read_text()
    assert "strategy candidates" in report
    assert f"  {pointwise} Conv: conv-tiles{{tile_m=8,tile_p=2,tile_p_one=8,reduce=channels}} " \
           "(forced): conv register tiles" in report
    assert main(["compile", str(path), "-o", str(tmp_path / "cli2"), "--target", "c-generic",
                 "--no-tune", "--explain", "nope"]) != 0
    assert "--explain names node(s) nope, which no kernel builds" in capsys.readouterr().err


def test_an_op_with_one_way_refuses_another(tmp_path):
    n = OnnxNet("relu")
    n.output(n.node("Relu", [n.input("x", [4, 5])], name="r"))
    m = n.model()
    art = compiled(m, tmp_path, "ok", "c-generic", {"r": "direct"})
    (row,) = art.manifest["kernel_strategies"]
    assert row["choice"] == {"kind": "direct", "params": {}} and row["forced"]
    with pytest.raises(EdgecError, match="built one way here"):
        compiled(m, tmp_path, "no", "c-generic", {"r": "conv-rows"})


def test_forced_syntax():
    f = Forced.parse(" conv-tiles{tile_m=4, tile_p=2} ")
    assert f == Forced(Kind.CONV_TILES, (("tile_m", 4), ("tile_p", 2)))
    assert Forced.parse(f.text()) == f
    assert Forced.parse("conv-rows") == Forced(Kind.CONV_ROWS)
    for bad in ("conv-tiles{tile_m}", "conv tiles", "conv-tiles{=3}"):
        with pytest.raises(EdgecError):
            Forced.parse(bad)
    with pytest.raises(EdgecError, match="strategy for node n"):
        edgec.compile(conv_net(), "/nonexistent", strategy={"n": "conv-tiles{"})


def test_the_chooser_takes_the_first_within_the_models_error():
    a = Candidate.of(Kind.CONV_TILES, cost=1.4)
    b = Candidate.of(Kind.CONV_ROWS, cost=1.0)
    assert choose([a, b]) is a  # within MODEL_ERROR: the builder's preference
    c = Candidate.of(Kind.CONV_TILES, cost=1.01 * MODEL_ERROR)
    assert choose([c, b]) is b  # past it: the cheaper
    off = Candidate.of(Kind.CONV_POINTWISE, reason="not 1x1", cost=None)
    assert choose([off, c, b]) is b
    assert choose([Candidate.of(Kind.INT8_GEMM), Candidate.of(Kind.INT_MATMUL_ROWS)]).kind \
        is Kind.INT8_GEMM  # not costed: the preference
    with pytest.raises(EdgecError, match="no strategy applies: conv-pointwise: not 1x1"):
        choose([off])


def test_opt_explains_a_node_for_a_target(tmp_path, capsys):
    path = tmp_path / "convs.onnx"
    path.write_bytes(conv_net().SerializeToString())
    assert main(["opt", str(path), "--target", "c-generic", "--explain", "b", "--explain",
                 "c"]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("b (Conv): conv-pointwise{rows=8,depth=4,tile=120}")
    assert out[at + 1].startswith("  * conv-pointwise{rows=8,depth=4,tile=120}: cost ")
    assert out[at + 2].startswith("    conv-tiles{tile_m=8,tile_p=4,tile_p_one=8,"
                                  "reduce=channels}: cost ")
    assert out[at + 4] == "c (Conv): conv-rows"
    assert "does not apply: 1 output channels per group, fewer than half a tile" in out[at + 6]


@pytest.mark.parametrize("target", ["c-generic", "x86-avx2"])
def test_integer_candidates_forced_give_the_default_builds_outputs(target, tmp_path):
    """Quantized by edgec (int8), every applicable candidate of the integer convolutions and
    products, forced, computes the same integers as the default choice."""
    if not runs_here(target):
        pytest.skip(f"this CPU does not run {target}")
    n = OnnxNet("q")
    x = n.input("x", [1, 8, 10, 10])
    a = n.node("Relu", [n.conv(x, 8, 16, 3)])
    b = n.node("Relu", [n.conv(a, 16, 16, 3, group=16)])
    flat = n.node("Flatten", [n.node("GlobalAveragePool", [b])])
    n.output(n.node("Gemm", [flat, n.weight((16, 12)), n.weight((12,), 0.1)]))
    m = n.model()
    rng = np.random.default_rng(1)
    calib = {"x": rng.standard_normal((4, 8, 10, 10)).astype(np.float32)}
    feeds = {"x": calib["x"][:1]}

    def build(name: str, strategy=None):
        return edgec.compile(m, tmp_path / name, target=target, name="m", tune=False,
                             quantize="int8", calib=calib, strategy=strategy or {})

    default = build("default")
    want = edgec.load(default.out_dir).run(feeds)
    forced = [(node, c) for node, (cands, _) in candidates(default).items()
              for c in cands if c.applies]
    kinds = {c.kind for _, c in forced}
    assert kinds >= ({Kind.INT_CONV_TILES, Kind.INT_CONV_ROWS} if target == "c-generic" else
                     {Kind.BLOCKED_INT8_DOT4, Kind.BLOCKED_INT8_DEPTHWISE, Kind.INT8_GEMM,
                      Kind.INT_MATMUL_ROWS}), kinds
    forced += [(node, c.text().split("{")[0] + "{r=3}") for node, c in forced
               if c.kind in (Kind.BLOCKED_INT8_DOT4, Kind.BLOCKED_INT8_DEPTHWISE)]
    for i, (node, c) in enumerate(forced):
        text = c if isinstance(c, str) else c.kind.value
        got = edgec.load(build(f"f{i}", {node: text}).out_dir).run(feeds)
        for k, w in want.items():
            np.testing.assert_array_equal(got[k], w, err_msg=f"{node}={text}")
