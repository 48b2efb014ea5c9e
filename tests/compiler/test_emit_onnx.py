"""`edgec opt --emit-onnx`: the optimized graph written back as ONNX. A pipeline that keeps to
ONNX's ops gives a model onnxruntime runs to the original's outputs; edgec's default pipeline
gives a valid model (onnx.checker) whose fused and packed ops are in the `edgec` domain, one
node per IR node."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from edgec import zoo
from edgec.compiler.cli import main
from edgec.passes import default_pipeline


def test_standard_ops_round_trip_through_onnxruntime(tmp_path, capsys):
    src = zoo.save(zoo.tiny_cnn(), tmp_path / "tiny.onnx")
    out = tmp_path / "opt.onnx"
    assert main(["opt", str(src), "--pipeline", "fold-constants,fold-batchnorm,dce",
                 "--emit-onnx", str(out)]) == 0
    capsys.readouterr()
    m = onnx.load(out)
    onnx.checker.check_model(m, full_check=True)
    assert {n.domain for n in m.graph.node} == {""}
    assert "BatchNormalization" not in {n.op_type for n in m.graph.node}
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    run = [ort.InferenceSession(str(p), providers=["CPUExecutionProvider"])
           .run(None, {"input": x})[0] for p in (src, out)]
    np.testing.assert_allclose(run[1], run[0], rtol=1e-5, atol=1e-5)


def test_default_pipeline_shows_edgecs_own_ops(tmp_path, capsys):
    src = zoo.save(zoo.tiny_cnn(), tmp_path / "tiny.onnx")
    out = tmp_path / "opt.onnx"
    assert main(["opt", str(src), "--pipeline", default_pipeline(16, 32),
                 "--emit-onnx", str(out)]) == 0
    text = capsys.readouterr().out
    m = onnx.load(out)
    onnx.checker.check_model(m)
    ops = [(n.domain, n.op_type) for n in m.graph.node]
    assert ("edgec", "BlockedConv") in ops or ("edgec", "FusedConv") in ops, ops
    assert len(ops) == sum(1 for line in text.splitlines()
                           if line.lstrip().startswith("%") and " = const " not in line)
    assert {vi.name for vi in m.graph.value_info} | {o.name for o in m.graph.output} >= \
        {o for n in m.graph.node for o in n.output}


def test_subgraphs_are_written_too(tmp_path, capsys):
    # If, Loop and Scan bodies (test_control_flow.py's model, an If nested in the Loop) come
    # out as ONNX subgraphs; the nodes, whose bodies take the outer values as inputs, in the
    # edgec domain
    from test_control_flow import control_flow_model

    src = tmp_path / "cf.onnx"
    onnx.save(control_flow_model(), src)
    out = tmp_path / "opt.onnx"
    assert main(["opt", str(src), "--pipeline", "dce", "--emit-onnx", str(out)]) == 0
    capsys.readouterr()
    m = onnx.load(out)
    onnx.checker.check_model(m)
    flow = [n for n in m.graph.node if n.op_type in ("If", "Loop", "Scan")]
    assert {n.op_type for n in flow} == {"If", "Loop", "Scan"}
    assert all(n.domain == "edgec" for n in flow)
    loop = next(n for n in flow if n.op_type == "Loop")
    body = next(a.g for a in loop.attribute if a.type == onnx.AttributeProto.GRAPH)
    assert any(n.op_type == "If" for n in body.node)
