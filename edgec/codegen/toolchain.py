"""Thin wrappers over the C compiler and archiver that build generated sources.

A cross target names its own compiler and archiver (`aarch64-linux-gnu-gcc`, ...); the
environment's CC and AR override only the host's tools.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..errors import EdgecError, ToolchainError
from ..targets.target import Target

# `edgec compile --sanitize`: AddressSanitizer and UndefinedBehaviorSanitizer, the first
# finding fatal; -O1 (the sanitizers' customary level) builds a model's C 2-3x faster than -O3
SANITIZE_CFLAGS = ("-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                   "-fno-sanitize-recover=all")
SANITIZE_LINK_FLAGS = ("-fsanitize=address,undefined",)


def check_sanitizable(target: Target, backend: str) -> None:
    """Raise unless --sanitize can build and run `target`'s library with `backend`: the
    sanitizers instrument C as the C compiler builds it, and their runtimes run on this
    machine, not under qemu-user."""
    if backend != "c":
        raise EdgecError(f"--sanitize instruments the C compiler's code; the {backend} backend "
                         "compiles the kernels itself, unchecked: use --backend c")
    if target.cross:
        raise EdgecError(f"--sanitize builds for this machine (x86, x86-avx2, x86-avx512, "
                         f"c-generic): the sanitizers do not run under {target.emulator[0]}; "
                         f"check the model for an x86 target, then build it for {target.name}")


def find_tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolchainError(f"'{name}' was not found on PATH; {hint}")
    return path


def _run(cmd: Sequence[str], cwd: Path) -> None:
    try:
        res = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
    except OSError as e:
        raise ToolchainError(f"could not run {cmd[0]}: {e}") from e
    if res.returncode != 0:
        msg = (res.stderr or res.stdout).strip().splitlines()
        head = "\n".join(msg[:20])
        raise ToolchainError(f"{' '.join(cmd)} failed in {cwd}:\n{head}")


def cc(target: Target) -> str:
    name = target.cc if target.cross else os.environ.get("CC", target.cc)
    return find_tool(name, f"target {target.name} builds with it: "
                           f"`apt-get install {target.package}`")


def ar(target: Target | None = None) -> str:
    if target is not None and target.cross:
        return find_tool(target.ar, f"target {target.name} archives with it: "
                                    f"`apt-get install {target.package}`")
    return find_tool(os.environ.get("AR", "ar"), "install binutils (apt-get install binutils)")


def compile_objects(target: Target, sources: Sequence[str], workdir: Path,
                    extra: Sequence[str] = ()) -> list[str]:
    """Compile C/assembly sources (paths relative to `workdir`) to objects in `workdir`."""
    compiler = cc(target)
    objects = []
    for src in sources:
        obj = Path(src).with_suffix(".o").name
        cmd = [compiler, *target.cflags, "-Wall", "-Wextra", *extra, "-c", src, "-o", obj]
        try:
            _run(cmd, workdir)
        except ToolchainError as e:
            if "internal compiler error" not in str(e):
                raise
            # gcc 12's auto-vectorizer crashes on a few loops (aarch64-linux-gnu-gcc: a
            # _Float16 reduction); such a file builds without it (intrinsics are unaffected)
            _run([*cmd, "-fno-tree-vectorize"], workdir)
        objects.append(obj)
    return objects


def archive(objects: Sequence[str], lib: str, workdir: Path, target: Target | None = None) -> None:
    tool = ar(target)
    (workdir / lib).unlink(missing_ok=True)
    _run([tool, "rcs", lib, *objects], workdir)


def shared_object(target: Target, sources: Sequence[str], so: str, workdir: Path,
                  libs: Sequence[str] = ("-lm", "-pthread")) -> None:
    """Build a shared object from sources (the Python loader's view of a library)."""
    if target.cross:
        raise ToolchainError(f"a {target.name} library cannot be loaded into this process; "
                             "run it under its emulator (edgec.load picks it)")
    _run([cc(target), *target.cflags, "-fPIC", "-shared", *sources, "-o", so, *libs], workdir)
