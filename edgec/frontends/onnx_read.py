"""Reading an ONNX model for the frontend (onnx.py): from a path, its bytes or a ModelProto,
with its external data, which must lie inside the model's folder; every refusal is a
FrontendError that names the model and what is wrong with it."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import external_data_helper

from ..errors import FrontendError
from .onnx_checks import check_external_locations, undecodable_string


def graphs(graph: onnx.GraphProto):
    """`graph` and its nested subgraphs (If, Loop, Scan bodies)."""
    yield graph
    for node in graph.node:
        for a in node.attribute:
            for g in [a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs:
                yield from graphs(g)


def walk_nodes(graph: onnx.GraphProto):
    """Every node of `graph`, including those of nested subgraphs."""
    for g in graphs(graph):
        yield from g.node


def load_model(model) -> tuple[onnx.ModelProto, str]:
    """The ModelProto of `model` (a path, bytes or a ModelProto), its external data loaded,
    and how messages name it."""
    if isinstance(model, onnx.ModelProto):
        source = f"model '{model.graph.name}'"
        if not model.HasField("graph"):
            raise FrontendError("the given ModelProto is not an ONNX model: it has no graph")
        _reject_external_data(model, source, "it was loaded without its external data; "
                              "load it with onnx.load(path) or pass the path instead")
        return model, source
    if isinstance(model, bytes | bytearray | memoryview):
        source = "<bytes>"
        proto = _parse(bytes(model), source)
        _reject_external_data(proto, source, "bytes cannot refer to external files; pass the "
                              "model's path instead")
        return proto, source
    if not isinstance(model, str | Path):
        raise FrontendError(f"import_onnx takes a path, bytes or an onnx.ModelProto, "
                            f"not {type(model).__name__}")
    path = Path(model)
    source = str(path)
    if not path.is_file():
        raise FrontendError(f"{source}: no such file" if not path.exists()
                            else f"{source} is not a file")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise FrontendError(f"{source}: cannot read it: {e.strerror or e}") from e
    proto = _parse(data, source)
    check_external_locations(_tensors_with_external_data(proto), source, path.parent)
    try:
        external_data_helper.load_external_data_for_model(proto, str(path.parent))
    except Exception as e:
        bad = next((t.name for t in _tensors_with_external_data(proto)
                    if not _external_file(t, path.parent).is_file()), None)
        what = f"tensor '{bad}'" if bad else "a tensor"
        raise FrontendError(f"{source}: cannot load the external data of {what}: {e}") from e
    return proto, source


def _parse(data: bytes, source: str) -> onnx.ModelProto:
    if not data:
        raise FrontendError(f"{source} is not an ONNX model: it is empty")
    try:
        proto = onnx.load_from_string(data)
    except Exception as e:  # protobuf DecodeError, RuntimeWarning on truncation, ...
        raise FrontendError(f"{source} is not an ONNX model: {e}") from e
    if proto.ir_version <= 0 or not proto.HasField("graph"):
        raise FrontendError(f"{source} is not an ONNX model: it has no IR version or no graph")
    bad = undecodable_string(proto)
    if bad is not None:
        raise FrontendError(f"{source} is not a valid ONNX model: its {bad} is not UTF-8 text "
                            "(a corrupt file?)")
    return proto


def _tensors_with_external_data(proto: onnx.ModelProto):
    tensors = [t for g in graphs(proto.graph) for t in g.initializer]
    for node in walk_nodes(proto.graph):
        for a in node.attribute:
            tensors += [a.t] if a.HasField("t") else list(a.tensors)
    return [t for t in tensors if external_data_helper.uses_external_data(t)]


def _external_file(t: onnx.TensorProto, base: Path) -> Path:
    info = {e.key: e.value for e in t.external_data}
    return base / info.get("location", "")


def _reject_external_data(proto: onnx.ModelProto, source: str, why: str) -> None:
    for t in _tensors_with_external_data(proto):
        raise FrontendError(f"{source}: tensor '{t.name}' keeps its data in an external file "
                            f"('{_external_file(t, Path()).name}'); {why}")
