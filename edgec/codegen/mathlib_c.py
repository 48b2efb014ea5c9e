"""The kernel IR's math functions (kernel_ir/mathlib.py) printed as C into the runtime header
`edgec_runtime.h`, between the markers below, so that C kernels call the same operations the
LLVM renderer inlines and the kernel interpreter runs.

    python -m edgec.codegen.mathlib_c            # print them
    python -m edgec.codegen.mathlib_c --write    # update edgec_runtime.h
"""

from __future__ import annotations

import argparse
import sys

from ..kernel_ir.mathlib import expf, tanhf
from .renderers.c import CRenderer
from .runtime_c import C_DIR

BEGIN = "/* BEGIN edgec/codegen/mathlib_c.py: generated, do not edit */"
END = "/* END edgec/codegen/mathlib_c.py */"


def render_c() -> str:
    """The float32 functions as C, for edgec_runtime.h."""
    r = CRenderer()
    parts = []
    for fn in (expf(), tanhf()):
        parts += [f"static inline float {fn.name}(float x)", "{", *r.stmts(list(fn.body), "    "),
                  f"    return {r.expr(fn.result)};", "}"]
    return "\n".join(parts)


RUNTIME_HEADER = C_DIR / "edgec_runtime.h"


def header_with_functions(text: str) -> str:
    """`text` (edgec_runtime.h) with the generated section rendered anew."""
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise ValueError(f"{RUNTIME_HEADER.name} lacks the markers {BEGIN} ... {END}")
    return f"{head}{BEGIN}\n{render_c()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="print or write the runtime's math functions")
    ap.add_argument("--write", action="store_true", help=f"update {RUNTIME_HEADER}")
    args = ap.parse_args(argv)
    if not args.write:
        print(render_c())
        return 0
    RUNTIME_HEADER.write_text(header_with_functions(RUNTIME_HEADER.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
