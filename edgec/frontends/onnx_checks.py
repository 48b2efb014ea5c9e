"""Checks of an ONNX model before the importer converts it: string fields that are not
UTF-8, external data outside the model's folder, nodes that fit none of ONNX's schemas of
their op. Each raises a FrontendError naming the problem (scripts/fuzz.py found the cases)."""

from __future__ import annotations

import functools
from pathlib import Path

import onnx

from ..errors import FrontendError


def undecodable_string(msg, path: str = "model") -> str | None:
    """The path of the first string field of `msg` that protobuf could not decode as UTF-8
    (it hands those over as bytes), or None."""
    for field, value in msg.ListFields():
        where = f"{path}.{field.name}"
        repeated = field.is_repeated
        if field.type == field.TYPE_STRING:
            if any(isinstance(v, bytes) for v in (value if repeated else [value])):
                return where
        elif field.type == field.TYPE_MESSAGE:
            for v in value if repeated else [value]:
                found = undecodable_string(v, where)
                if found is not None:
                    return found
    return None


def check_external_locations(tensors: list[onnx.TensorProto], source: str, base: Path) -> None:
    """Refuse external data that lies outside the model's folder (an absolute path, `..`, a
    symbolic link out of it): a model file must not make edgec read other files."""
    folder = base.resolve()
    for t in tensors:
        location = {e.key: e.value for e in t.external_data}.get("location", "")
        target = (base / location).resolve()
        if not location or Path(location).is_absolute() or not target.is_relative_to(folder) \
                or target == folder:
            raise FrontendError(f"{source}: tensor '{t.name}' keeps its data in '{location}', "
                                f"which is not a file inside the model's folder {base}; edgec "
                                "reads external data only from there")


def check_against_schema(node: onnx.NodeProto, opset: int, where: str) -> None:
    """Raise a FrontendError when `node` fits none of ONNX's schemas of its op up to `opset`:
    the count of its inputs and outputs, its required inputs and attributes, each attribute's
    type. (Earlier versions count: the converters take the old forms that functions declared
    against old opsets bring.) The converters rely on it: a Conv's `pads` is a list of ints,
    its `W` is there."""
    schemas = _schemas(node.op_type, opset)
    if not schemas:
        return  # no such op at that opset: check_supported has listed it, or a converter does
    problems = [_schema_mismatch(node, s) for s in schemas]
    if all(problems):
        raise FrontendError(f"{where}: {problems[0]}")


@functools.cache
def _schemas(op_type: str, opset: int) -> list:
    """ONNX's schemas of `op_type` in the default domain up to `opset`, the latest first."""
    found = [s for s in onnx.defs.get_all_schemas_with_history()
             if s.name == op_type and s.domain == "" and s.since_version <= opset]
    return sorted(found, key=lambda s: -s.since_version)


def _schema_mismatch(node: onnx.NodeProto, schema) -> str | None:
    """How `node` departs from `schema`, or None when it fits."""
    op = f"ONNX's {node.op_type} (opset {schema.since_version})"
    for n, lo, hi, what in ((len(node.input), schema.min_input, schema.max_input, "input"),
                            (len(node.output), schema.min_output, schema.max_output, "output")):
        if not lo <= n <= hi:
            takes = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi < 1 << 30 else f"{lo} or more"
            return f"the node has {n} {what}s; {op} takes {takes}"
    Option = onnx.defs.OpSchema.FormalParameterOption
    for i, formal in enumerate(schema.inputs):
        if formal.option == Option.Single and i < len(node.input) and not node.input[i]:
            return f"input {i} ('{formal.name}') is required by {op}, but the node leaves it empty"
    given = {a.name: a for a in node.attribute}
    for key, spec in schema.attributes.items():
        a = given.get(key)
        if a is None:
            if spec.required:
                return f"{op} needs attribute '{key}'"
        elif a.type != spec.type.value and not a.ref_attr_name:
            kinds = onnx.AttributeProto.AttributeType
            got = kinds.Name(a.type) if a.type in kinds.values() else str(a.type)
            return f"attribute '{key}' is of type {got}; {op} takes {spec.type.name}"
    return None
