"""The C runtime's files as the code generator reads them: package data of `edgec.runtime`
(under runtime/c), found by path so that the targets layer imports nothing of the runtime
layer, which comes after it."""

from pathlib import Path

C_DIR = Path(__file__).resolve().parents[1] / "runtime" / "c"


def c_source(name: str) -> str:
    """The text of one runtime file (e.g. 'edgec_runtime.h')."""
    return (C_DIR / name).read_text()
