"""manifest.json is written, read and checked by one module (runtime/manifest.py)."""

from __future__ import annotations

import json

import pytest

import edgec
from edgec import zoo
from edgec.errors import EdgecError
from edgec.runtime import manifest


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    out = tmp_path_factory.mktemp("m") / "out"
    edgec.compile(zoo.MODELS["mlp"](), out, target="c-generic", name="mlp")
    return out


def tampered(artifact, tmp_path, change) -> str:
    data = json.loads((artifact / "manifest.json").read_text())
    change(data)
    for f in artifact.iterdir():
        if f.is_file():
            (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    return tmp_path


def test_the_artifact_carries_its_checked_manifest_and_schema(artifact):
    data = manifest.read(artifact)
    assert data["manifest_version"] == manifest.VERSION and data["name"] == "mlp"
    assert json.loads((artifact / "manifest.schema.json").read_text()) == manifest.SCHEMA
    assert edgec.load(artifact).manifest == data


@pytest.mark.parametrize("change,message", [
    (lambda d: d["inputs"][0].update(shape="1x784"), "manifest.inputs\\[0\\].shape must be array"),
    (lambda d: d.pop("workspace_bytes"), "must contain .*workspace_bytes"),
    (lambda d: d.update(backend="gpu"), "manifest.backend must be one of"),
    (lambda d: d["kernel_strategies"][0].pop("choice"), "must contain .*choice"),
    (lambda d: d.pop("manifest_version"), "manifest version none, this edgec reads version 2: "
                                           "compile the model again"),
])
def test_a_wrong_manifest_is_named_where_it_is_read(artifact, tmp_path, change, message):
    out = tampered(artifact, tmp_path, change)
    with pytest.raises(EdgecError, match=message):
        edgec.load(out)


def test_a_key_the_schema_lacks_is_refused_when_written(artifact, tmp_path):
    data = manifest.read(artifact)
    data["extra"] = 1
    with pytest.raises(EdgecError, match="the manifest being written does not match"):
        manifest.write(tmp_path, data)
