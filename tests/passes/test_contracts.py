"""The compile record (ir/records.py) and the passes' contracts with it (passes/contracts.py):
a stage that reads a field nobody wrote is told which pass writes it, and the manager refuses
a pipeline where a pass between a field's writer and its reader invalidates it."""

from __future__ import annotations

import pytest
from passcheck import ir

from edgec.errors import PassError
from edgec.ir import Graph
from edgec.ir.records import PrunedLayer, PruningRecord
from edgec.passes import PassManager, register_pass, run_pipeline
from edgec.passes.contracts import check_contracts, make_contract

SEEN: list[int] = []  # the arena sizes test-read-plan read


@register_pass("test-read-plan", requires=("memory_plan",), invalidates=())
def read_plan(graph: Graph) -> bool:
    """Reads the memory plan and changes nothing."""
    SEEN.append(graph.record.need("memory_plan", "test-read-plan").arena_bytes)
    return False


@register_pass("test-look-only", invalidates=())
def look_only(graph: Graph) -> bool:
    """Edits nothing, and says so: the memory plan stays valid across it."""
    return False


@register_pass("test-drop-a-relu")
def drop_a_relu(graph: Graph) -> bool:
    """Removes the last Relu of a chain (declares nothing: it invalidates the memory plan)."""
    node = graph.nodes[-1]
    graph.replace_all_uses(node.output, node.inputs[0])
    graph.remove_node(node)
    return True


def chain() -> Graph:
    return ir("graph @g(%x: f32[4,4]) {\n  %a = Relu(%x) : f32[4,4]\n"
              "  %b = Relu(%a) : f32[4,4]\n  %c = Relu(%b) : f32[4,4]\n  return %c\n}")


def test_a_pass_reading_a_field_no_pass_wrote_is_refused_before_anything_runs():
    g = chain()
    with pytest.raises(PassError, match="'test-read-plan' requires the memory plan, which "
                                        "pass 'plan-memory' writes, and no pass before it "
                                        "does; run 'plan-memory' before 'test-read-plan'"):
        run_pipeline(g, "test-drop-a-relu,test-read-plan")
    assert len(g.nodes) == 3  # refused before the first pass ran


def test_a_field_the_graph_already_holds_or_an_earlier_pass_wrote_is_read():
    SEEN.clear()
    g = chain()
    run_pipeline(g, "plan-memory,test-look-only,test-read-plan")
    run_pipeline(g, "test-read-plan")  # the plan is still on the graph
    assert SEEN == [g.record.memory_plan.arena_bytes] * 2 and SEEN[0] > 0


def test_a_pass_that_invalidates_between_writer_and_reader_is_named_with_both():
    with pytest.raises(PassError, match="'test-read-plan' requires the memory plan that "
                                        "'plan-memory' writes, but 'test-drop-a-relu' runs "
                                        "between them and invalidates it; run 'plan-memory' "
                                        "after 'test-drop-a-relu'"):
        run_pipeline(chain(), "plan-memory,test-drop-a-relu,test-read-plan")
    g = chain()
    run_pipeline(g, "plan-memory")
    with pytest.raises(PassError, match="memory plan that the graph held, but "
                                        "'test-drop-a-relu' runs between"):
        run_pipeline(g, "test-drop-a-relu,test-read-plan")
    # written again after the edit: fine
    run_pipeline(chain(), "plan-memory,test-drop-a-relu,plan-memory,test-read-plan")


def test_what_the_caller_reads_after_the_pipeline_is_checked_too():
    needs = {"memory_plan": "code generation"}
    with pytest.raises(PassError, match="code generation requires the memory plan that "
                                        "'plan-memory' writes, but 'dce' runs between"):
        PassManager("plan-memory,dce", needs=needs).run(chain())
    with pytest.raises(PassError, match="code generation requires the memory plan, which "
                                        "pass 'plan-memory' writes"):
        PassManager("dce", needs=needs).run(chain())
    g = chain()
    PassManager("dce,plan-memory,test-look-only", needs=needs).run(g)
    assert g.record.memory_plan is not None


def test_a_changed_graph_loses_only_what_the_pass_invalidates():
    g = chain()
    pruning = PruningRecord("4x1", "layer", 0.5, [PrunedLayer("n", "Conv", "y", 16, 0.5)])
    g.record.pruning = pruning
    run_pipeline(g, "plan-memory,test-drop-a-relu")
    assert g.record.memory_plan is None and g.record.pruning is pruning


def test_contracts_name_fields_of_the_record():
    with pytest.raises(PassError, match="no field 'memory-plan'"):
        register_pass("test-bad-contract", requires=("memory-plan",))(look_only)
    assert make_contract().invalidates == ("memory_plan",)
    assert make_contract(writes=["memory_plan"]).invalidates == ()
    # a hand-worked order: the writer, a reader, an invalidating pass, the writer again
    plan, read, edit = (make_contract(writes=["memory_plan"], invalidates=()),
                        make_contract(requires=["memory_plan"], invalidates=()), make_contract())
    check_contracts([("w", plan), ("r", read), ("e", edit), ("w", plan), ("r", read)])
    with pytest.raises(PassError, match="'r' requires the memory plan that 'w' writes, but "
                                        "'e' runs"):
        check_contracts([("w", plan), ("e", edit), ("r", read)])
