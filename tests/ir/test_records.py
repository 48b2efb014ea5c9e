"""The compile record: typed fields that passes leave for later stages, the error that names
the pass writing a missing one, and quantization.json's keys as the record writes them."""

from __future__ import annotations

import pytest

from edgec.errors import PassError
from edgec.ir import parse
from edgec.ir.records import (
    CompileRecord,
    EndToEnd,
    LatencyShares,
    MemoryPlan,
    QuantizationRecord,
)


def test_need_names_the_pass_that_writes_a_missing_field():
    record = CompileRecord()
    with pytest.raises(PassError, match="code generation reads the memory plan, which pass "
                                        "'plan-memory' writes, and the graph has none"):
        record.need("memory_plan", "code generation")
    with pytest.raises(PassError, match="the report reads the quantization record, which "
                                        "pass 'quantize' writes"):
        record.need("quantization", "the report")
    with pytest.raises(PassError, match="no field 'plan'; its fields: memory_plan, "
                                        "quantization, pruning"):
        record.need("plan", "me")


def test_a_copy_of_the_graph_has_its_own_record():
    g = parse("graph @g(%x: f32[4]) {\n  %y = Relu(%x) : f32[4]\n  return %y\n}")
    g.record.memory_plan = MemoryPlan({"y": 0}, {}, 64, 16, 16, 64)
    c = g.copy()
    assert c.record.memory_plan is g.record.memory_plan
    c.record.memory_plan = None
    assert g.record.memory_plan is not None


def test_a_copy_and_a_replacing_node_carry_the_node_record():
    g = parse("graph @g(%x: f32[4]) {\n  %y = Relu(%x) : f32[4]\n  return %y\n}")
    node = g.nodes[0]
    node.record.fused = ("y", "add")
    c = g.copy()
    assert c.nodes[0].record == node.record
    c.nodes[0].record.fused = ()
    assert node.record.fused == ("y", "add")
    new = g.add_node("Relu", [node.inputs[0]], name="y2", before=node)
    new.inherit(node)
    assert new.record == node.record and new.record is not node.record


def quantization(**changes) -> QuantizationRecord:
    return QuantizationRecord(bits=8, weights="minmax", granularity="channel",
                              calibration="kl", samples=4, budget_db=None, output_sqnr_db=30.0,
                              output_rel_error=0.01, kept_float=[], quantized_mac_share=1.0,
                              adaround=False, smoothed=[], layers=[{"node": "a"}], **changes)


def test_quantization_json_keeps_its_keys_and_leaves_out_what_did_not_run():
    base = ["bits", "weights", "granularity", "calibration", "samples", "budget_db",
            "output_sqnr_db", "output_rel_error", "kept_float", "quantized_mac_share",
            "mac_shares", "int16_layers", "adaround", "smoothed", "layers"]
    assert list(quantization().to_json()) == base
    full = quantization(mixed_precision={"met": True}, pairs_fitted=0,
                        end_to_end=EndToEnd(None, 0.5),
                        latency=LatencyShares(None, "latency share not measured: why"))
    assert full.to_json() == quantization().to_json() | {
        "mixed_precision": {"met": True}, "pairs_fitted": 0, "end_to_end_sqnr_db": None,
        "end_to_end_rel_error": 0.5, "other_latency_share": None,
        "latency_note": "latency share not measured: why"}
    assert list(full.to_json())[len(base):] == [
        "mixed_precision", "pairs_fitted", "end_to_end_sqnr_db", "end_to_end_rel_error",
        "other_latency_share", "latency_note"]
    assert "latency_note" not in quantization(latency=LatencyShares(0.25)).to_json()


def test_the_record_lists_one_writer_per_field_and_what_it_holds():
    from dataclasses import fields

    from edgec.ir.records import RECORDS

    assert [f.name for f in fields(CompileRecord)] == list(RECORDS)
    record = CompileRecord(memory_plan=MemoryPlan({}, {}, 0, 0, 0, 64))
    assert record.held() == ["memory_plan"]
    record.forget(["memory_plan", "pruning"])
    assert record.held() == []
