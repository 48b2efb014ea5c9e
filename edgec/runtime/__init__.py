"""The minimal C runtime (package data under c/) and the Python loader of artifacts."""

from pathlib import Path

C_DIR = Path(__file__).parent / "c"


def c_source(name: str) -> str:
    """The text of one runtime file shipped as package data (e.g. 'edgec_runtime.h')."""
    return (C_DIR / name).read_text()
