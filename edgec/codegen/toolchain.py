"""Thin wrappers over the C compiler and archiver that build generated sources.

A cross target names its own compiler and archiver (`aarch64-linux-gnu-gcc`, ...); the
environment's CC and AR override only the host's tools.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..errors import EdgecError, ToolchainError
from ..targets.target import Target, get_target

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


# the CUDA toolkit edgec builds with: nvcc 13.0, whose PTX the GPU machines' driver (CUDA
# 13.0) loads; from PyPI where the system has none (pip install 'edgec[cuda]')
CUDA_WHEELS = ("nvidia-cuda-nvcc==13.0.88", "nvidia-cuda-runtime==13.0.96",
               "nvidia-cuda-crt==13.0.88", "nvidia-cuda-cccl==13.0.85", "nvidia-nvvm==13.0.88")
NVCC_FLAGS = ("-O3", "-std=c++17", "-Werror", "all-warnings")


def find_nvcc() -> tuple[str, list[str]]:
    """`nvcc` and the flags that link with its static CUDA runtime: the one on PATH, else the
    PyPI wheels' (nvidia/cu13 in site-packages, whose libraries nvcc does not find by
    itself); a ToolchainError that says how to install one."""
    on_path = shutil.which("nvcc")
    if on_path is not None:
        return on_path, [f"-L{d}" for d in _runtime_dirs(on_path)]
    try:
        import nvidia

        for root in nvidia.__path__:
            home = Path(root) / "cu13"
            if (home / "bin" / "nvcc").exists():
                return str(home / "bin" / "nvcc"), [f"-L{home / 'lib'}"]
    except ImportError:
        pass
    raise ToolchainError("nvcc (CUDA 13.0) was not found on PATH nor as a pip wheel: "
                         f"`pip install {' '.join(CUDA_WHEELS)}` (or `pip install "
                         "'edgec[cuda]'`)")


@functools.cache
def _runtime_dirs(nvcc: str) -> list[str]:
    """The folders of `nvcc`'s libraries that hold the static CUDA runtime, as its own link
    step names them (`nvcc --dryrun`), for an app that links with the C compiler."""
    res = subprocess.run([nvcc, "--dryrun", "-o", "edgec_probe", "edgec_probe.cu"],
                         capture_output=True, text=True)
    line = next((x for x in (res.stdout + res.stderr).splitlines()
                 if x.startswith("#$ LIBRARIES=")), "")
    dirs = [t[2:] for t in (d.strip('"') for d in line.split()) if t.startswith("-L")]
    return [os.path.normpath(d) for d in dirs if (Path(d) / "libcudart_static.a").exists()]


def check_gpu_archs(archs: Sequence[str]) -> None:
    """A ToolchainError for a GPU architecture that is not nvcc's sm_XY."""
    bad = [a for a in archs if not re.fullmatch(r"sm_[0-9]{2,3}[a-z]?", a)]
    if bad:
        raise ToolchainError(f"GPU architecture {bad[0]!r}: nvcc takes sm_XY, such as sm_80 "
                             "(A100) or sm_90 (H100)")


def nvcc_compile(source: str, workdir: Path, archs: Sequence[str] = ("sm_90",),
                 out: str | None = None, link: bool = False, extra: Sequence[str] = ()) -> str:
    """Compile the CUDA source `source` (relative to `workdir`) for the GPU architectures
    `archs` (with their PTX, so newer GPUs take it too) to an object, or with `link` to a
    program linked against the static CUDA runtime; returns the output's name."""
    nvcc, link_flags = find_nvcc()
    gencode = [f"-gencode=arch=compute_{a[3:]},code=[{a},compute_{a[3:]}]" for a in archs]
    out = out or Path(source).with_suffix("" if link else ".o").name
    mode = ["-cudart", "static", *link_flags] if link else ["-c"]
    check_gpu_archs(archs)
    _run([nvcc, *NVCC_FLAGS, *gencode, *mode, *extra, source, "-o", out], workdir)
    return out


def cuda_link_flags() -> list[str]:
    """What an app adds after a CUDA library's libNAME.a when it links: the static CUDA
    runtime (from the wheels' folder where nvcc is theirs) and what it needs."""
    return [*find_nvcc()[1], "-lcudart_static", "-ldl", "-lrt", "-pthread", "-lstdc++", "-lm"]


def build_cuda(target: Target, name: str, workdir: Path, archs: Sequence[str]) -> None:
    """libNAME.a of a CUDA library's NAME.cu (nvcc, position-independent so that the loader
    can make a shared object of it) and NAME_weights.S (the host's assembler)."""
    cu = nvcc_compile(f"{name}.cu", workdir, archs, extra=("-Xcompiler", "-fPIC"))
    weights = compile_objects(get_target("c-generic"), [f"{name}_weights.S"], workdir)
    archive([cu, *weights], f"lib{name}.a", workdir)
    for o in (cu, *weights):
        (workdir / o).unlink(missing_ok=True)


def cuda_shared_object(lib: str, so: str, workdir: Path, links: Sequence[str]) -> None:
    """A shared object of a CUDA library's libNAME.a (its objects are position-independent)
    and the static CUDA runtime, for the Python loader."""
    cxx = find_tool("g++", "the loader links CUDA libraries with it: `apt-get install g++`")
    _run([cxx, "-shared", "-o", so, "-Wl,--whole-archive", lib, "-Wl,--no-whole-archive",
          *links], workdir)
