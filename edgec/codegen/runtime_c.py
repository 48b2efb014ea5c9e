"""The C runtime's files as the code generator reads them: package data under codegen/c (the
header every library includes, the thread pool, the vector helpers per ISA, the Huffman
decoder, and the runner that the emulated runtime links with a library)."""

from pathlib import Path

C_DIR = Path(__file__).resolve().parent / "c"


def c_source(name: str) -> str:
    """The text of one runtime file (e.g. 'edgec_runtime.h')."""
    return (C_DIR / name).read_text()
