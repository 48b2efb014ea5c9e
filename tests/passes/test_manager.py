"""The pass registry, pipeline strings and the PassManager's instrumentation."""

from __future__ import annotations

import io
from dataclasses import FrozenInstanceError

import numpy as np
import pytest
from passcheck import ir

from edgec.errors import PassError
from edgec.ir import Graph, TensorType
from edgec.passes import (
    DEFAULT_PIPELINE,
    PassManager,
    make_pass,
    parse_pipeline,
    register_pass,
    registered_passes,
    run_pipeline,
    sample_inputs,
)


@register_pass("test-prune")
class Prune:
    """Options of every kind, and a run that changes nothing."""

    sparsity: float = 0.5
    pattern: str = "1x1"
    blocks: int = 1
    verbose: bool = False

    def run(self, graph: Graph) -> bool:
        return False


@register_pass("test-negate-relu")
def negate_relu(graph: Graph, *, count: int = 1) -> bool:
    """A wrong pass: turns up to `count` Relu nodes into Neg."""
    changed = False
    for node in [n for n in graph.nodes if n.op == "Relu"][:count]:
        node.op = "Neg"
        changed = True
    return changed


@register_pass("test-break-types")
def break_types(graph: Graph) -> bool:
    """A broken pass: gives an output a type inference disagrees with."""
    v = graph.nodes[0].outputs[0]
    v.type = TensorType((99,), v.dtype)
    return True


@register_pass("test-collapse-one-relu")
def collapse_one_relu(graph: Graph) -> bool:
    """Removes one Relu(Relu(x)) per run, so it needs {fixpoint} to finish the job."""
    for node in graph.nodes:
        src = node.inputs[0].producer if node.inputs and node.inputs[0] else None
        if node.op == "Relu" and src is not None and src.op == "Relu":
            graph.replace_all_uses(node.output, src.output)
            graph.remove_node(node)
            return True
    return False


@register_pass("test-always-changes")
def always_changes(graph: Graph) -> bool:
    return True


def relu_chain(n: int = 3) -> Graph:
    lines = "\n".join(f"  %r{i + 1} = Relu(%r{i}) : f32[2,3]" for i in range(n))
    return ir(f"graph @g(%r0: f32[2,3]) {{\n{lines}\n  return %r{n}\n}}")


# -- pipeline strings ---------------------------------------------------------------------


def test_pipeline_options_are_converted_to_their_field_types():
    (step,) = parse_pipeline("test-prune{sparsity=0.9,pattern=4x1,blocks=16,verbose}")
    p = step.pass_
    assert (p.sparsity, p.pattern, p.blocks, p.verbose) == (0.9, "4x1", 16, True)
    assert str(step) == "test-prune{sparsity=0.9,pattern=4x1,blocks=16,verbose=true}"
    with pytest.raises(FrozenInstanceError):
        p.sparsity = 0.1


def test_pipeline_strings_parse_with_spaces_fixpoint_and_quotes():
    steps = parse_pipeline(' fold-constants , fuse{fixpoint} , test-prune{ pattern = "2:4" ,'
                           'verbose=false}, dce ')
    assert [str(s) for s in steps] == ["fold-constants", "fuse{fixpoint}",
                                       "test-prune{pattern=2:4}", "dce"]
    assert steps[1].fixpoint and not steps[0].fixpoint
    assert parse_pipeline("") == []
    again = parse_pipeline(",".join(str(s) for s in parse_pipeline(DEFAULT_PIPELINE)))
    assert [str(s) for s in again] == DEFAULT_PIPELINE.split(",")


@pytest.mark.parametrize("text, message", [
    ("fold-constant", r"unknown pass 'fold-constant'; registered passes: .*fold-constants"),
    ("test-prune{sparsty=0.9}", r"no option 'sparsty'; its options: blocks, pattern, "
                                r"sparsity, verbose"),
    ("test-prune{blocks=4x1}", r"option 'blocks' of pass 'test-prune': expected int"),
    ("test-prune{verbose=maybe}", r"expected true or false, got 'maybe'"),
    ("test-prune{blocks=1,blocks=2}", r"option 'blocks' of 'test-prune' given twice"),
    ("test-prune{blocks=2", r"expected '}', found the end|expected ',', found the end"),
    ("dce,,fuse", r"expected 'a pass name', found ','"),
    ("dce,", r"ends with a comma"),
    ("dce fuse", r"expected ',', found 'fuse'"),
    ("dce{=3}", r"expected 'an option name', found '='"),
])
def test_bad_pipeline_strings_say_what_is_wrong(text, message):
    with pytest.raises(PassError, match=message):
        parse_pipeline(text)


def test_registry_lists_passes_with_options_and_docs():
    passes = registered_passes()
    for name in DEFAULT_PIPELINE.split(","):
        assert name in passes
    assert passes["fold-constants"].options["max_elements"] == (int, 1 << 24)
    assert passes["test-negate-relu"].doc.startswith("A wrong pass: turns up to `count`")
    assert make_pass("test-negate-relu", count="3").count == 3
    with pytest.raises(PassError, match="already registered"):
        register_pass("dce")(lambda graph: False)
    with pytest.raises(PassError, match="lower-case words"):
        register_pass("Bad_Name")
    with pytest.raises(PassError, match="option 'x' needs a default"):
        register_pass("test-no-default")(lambda graph, x: False)


# -- running and instrumentation ----------------------------------------------------------


def test_print_ir_after_all_and_timing_go_to_out():
    out = io.StringIO()
    report = run_pipeline(relu_chain(), "test-collapse-one-relu,dce", print_ir_after_all=True,
                          timing=True, out=out)
    text = out.getvalue()
    assert "// ----- IR after test-collapse-one-relu (changed) ----- //" in text
    assert "// ----- IR after dce (unchanged) ----- //" in text
    assert text.count("%r3 = Relu(%r1) : f32[2,3]") == 2 and "%r2 =" not in text
    table = report.timing_table()
    assert table in text
    assert table.splitlines()[0].split() == ["pass", "ms", "share", "runs", "changed"]
    assert [line.split()[0] for line in table.splitlines()[2:4]] == [
        "test-collapse-one-relu", "dce"]
    assert table.splitlines()[-1].startswith("total")
    assert [r.changed for r in report.records] == [True, False] and report.changed
    assert report.total_seconds >= 0


def test_fixpoint_repeats_a_pass_until_it_stops_changing():
    g = relu_chain(4)
    report = run_pipeline(g, "test-collapse-one-relu{fixpoint}")
    assert [n.op for n in g.nodes] == ["Relu"] and report.records[0].iterations == 4
    g = relu_chain(4)
    run_pipeline(g, "test-collapse-one-relu")
    assert len(g.nodes) == 3
    with pytest.raises(PassError, match="after 5 iterations; it does not reach a fixed point"):
        PassManager("test-always-changes{fixpoint}", max_iterations=5).run(relu_chain())


def test_verify_each_names_the_pass_that_broke_the_graph():
    with pytest.raises(PassError, match=r"verification failed after pass 'test-break-types': "
                                        r".*output %r1 is f32\[99\], inference gives f32\[2,3\]"):
        run_pipeline(relu_chain(), "dce,test-break-types,dce", verify_each=True)
    run_pipeline(relu_chain(), "dce,test-break-types,dce")  # unchecked, it goes through


def test_check_numerics_names_the_first_pass_that_changed_an_output():
    with pytest.raises(PassError) as e:
        run_pipeline(relu_chain(), "dce,test-negate-relu,test-negate-relu",
                     check_numerics=True)
    msg = str(e.value)
    assert "pass 'test-negate-relu' changed output 'r3'" in msg
    # Relu(Relu(-Relu(x))) is 0 everywhere, so the error is |0 - relu(x)| / max = 1
    assert "relative error 1 exceeds 0.0001" in msg


def test_check_numerics_records_the_drift_of_correct_passes():
    report = run_pipeline(relu_chain(), "test-collapse-one-relu{fixpoint},dce",
                          check_numerics=True)
    assert [r.drift for r in report.records] == [0.0, 0.0]


def test_a_failing_pass_is_named():
    with pytest.raises(PassError, match=r"pass 'test-break-types' failed: IndexError"):
        run_pipeline(ir("graph @g(%x: f32[2]) {\n  return %x\n}"), "test-break-types")


def test_memory_plan_is_dropped_when_a_later_pass_changes_the_graph():
    g = relu_chain()
    run_pipeline(g, "plan-memory,dce")
    assert g.record.memory_plan is not None
    run_pipeline(g, "plan-memory,test-collapse-one-relu")
    assert g.record.memory_plan is None


def test_sample_inputs_are_seeded_normal_floats_and_small_ints():
    g = ir("graph @g(%x: f32[1000], %i: i64[1000]) {\n  return %x, %i\n}")
    a, b = sample_inputs(g, seed=7), sample_inputs(g, seed=7)
    np.testing.assert_array_equal(a["x"], b["x"])
    assert abs(a["x"].std() - 1) < 0.1 and a["x"].dtype == np.float32
    assert set(np.unique(a["i"])) == {0, 1, 2, 3} and a["i"].dtype == np.int64


@pytest.mark.parametrize("text,first,late", [
    ("fixed-point,layout-nchwc{block=8}", "fixed-point", "layout-nchwc"),
    ("layout-nchwc{block=8},fixed-point,pack-weights", "fixed-point", "pack-weights"),
    ("plan-memory,fuse", "plan-memory", "fuse"),
])
def test_a_pass_before_the_one_it_reads_is_refused(text, first, late):
    with pytest.raises(PassError, match=f"{first} runs before {late}, which makes what "
                                        f"{first} reads; put {late} before {first}"):
        PassManager(text)


@pytest.mark.parametrize("lanes,registers", [(1, 16), (4, 32), (8, 16), (16, 32)])
def test_the_default_pipelines_keep_the_order(lanes, registers):
    from edgec.passes import default_pipeline

    text = default_pipeline(lanes, registers, "zen4")
    assert [s.pass_.name for s in PassManager(text).steps][-6:] == [
        "layout-nchwc", "pack-weights", "fixed-point", "fuse-residual", "dce", "plan-memory"
    ] if lanes > 1 else PassManager(text).steps[-1].pass_.name == "plan-memory"
    # dce and the folds may run anywhere
    PassManager("dce,layout-nchwc{block=8},dce,pack-weights,fold-constants,plan-memory")
