"""Running an artifact as a program: a small runner linked with the artifact's own library.

Where ctypes cannot load the library (a cross target, or a build that must be proven not to
use instructions the host has, e.g. `x86-avx2` under `qemu-x86_64 -cpu Haswell`), libNAME.a
is linked statically with `codegen/c/edgec_runner.c` and run under an emulator command;
tensors travel through raw files in a temporary folder. A sanitized artifact (`edgec compile
--sanitize`) runs so too, natively and linked dynamically (the sanitizers' runtimes are
shared libraries); a finding of theirs is raised as an EdgecError that names it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..errors import EdgecError, ToolchainError
from . import C_DIR
from .loader import CompiledModel, _np_dtype, hash_files, read_manifest

RUNNER_SOURCE = C_DIR / "edgec_runner.c"
# The runner links -static so that an emulator needs no sysroot for the target's libc.
STATIC = "-static"
# A sanitized runner's options: no leak check (the library allocates nothing; LeakSanitizer
# fails under ptrace), a stack trace for UndefinedBehaviorSanitizer too; the user's options
# from the environment come after, and win.
SANITIZER_OPTIONS = {"ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "print_stacktrace=1"}
# The first line of a sanitizer's report, and the stack frames after it
_FINDING = re.compile(r"ERROR: (\w+Sanitizer: [\w-]+)|(\S+:\d+:\d+): runtime error: (.*)")
_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ in (\w+) (\S+:\d+)", re.M)

# Which Debian package provides an emulator command, to say what to install.
_PACKAGES = {"qemu-": "qemu-user"}


def runner_command(manifest: Mapping, exe: str) -> list[str]:
    """The compiler command that builds the runner for an artifact, run in its folder."""
    from ..codegen.toolchain import cc
    from ..targets.target import get_target

    target = get_target(manifest["target"])
    name = manifest["name"]
    if manifest.get("artifact") == "hls-project":  # the design's C-simulation (g++)
        hls = manifest["hls"]
        return [cc(target), *manifest["cflags"], "-Wall", "-I.", hls["csim_runner"],
                hls["design"], "-o", exe]
    # the runner is compiled with the flags the library was built with (same ISA and ABI) and
    # links the library's own archive: the very objects an app links, not a rebuild of them
    cflags = manifest.get("cflags", list(target.cflags))
    return [cc(target), *cflags, "-Wall", "-Wextra",
            f"-DEDGEC_MODEL={name}", f'-DEDGEC_HEADER="{manifest["header"]}"',
            f"-DEDGEC_NUM_INPUTS={len(manifest['inputs'])}",
            f"-DEDGEC_NUM_OUTPUTS={len(manifest['outputs'])}",
            *(["-DEDGEC_DOT_PRODUCT_KERNELS"] if manifest.get("dot_product_kernels") else []),
            "-I.", str(RUNNER_SOURCE), manifest["library"],
            *([] if manifest.get("sanitize") else [STATIC]), "-o", exe,
            *manifest.get("link_flags", ["-lm", "-pthread"])]


def build_runner(out_dir) -> Path:
    """Build (or find in OUT/.build) the runner executable of the artifact in `out_dir`."""
    out = Path(out_dir)
    manifest = read_manifest(out)
    name = manifest["name"]
    digest = hashlib.sha1(RUNNER_SOURCE.read_bytes())
    digest.update(" ".join(runner_command(manifest, "runner")).encode())
    hls = manifest.get("artifact") == "hls-project"
    hash_files(out, manifest["sources"] if hls else (manifest["library"], manifest["header"]),
               digest)
    build = out / ".build"
    build.mkdir(exist_ok=True)
    exe = build / f"{name}-runner-{digest.hexdigest()[:12]}"
    if exe.exists():
        return exe
    # build under a private name and rename, so that two processes never see half a file
    tmp = build / f"{exe.name}.{os.getpid()}.tmp"
    cmd = runner_command(manifest, str(tmp.resolve()))
    try:
        res = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
    except OSError as e:
        raise ToolchainError(f"could not run {cmd[0]}: {e}") from None
    if res.returncode != 0:
        head = "\n".join((res.stderr or res.stdout).strip().splitlines()[:20])
        hint = ("; -static needs the target's static libc (libc6-dev, or "
                "libc6-dev-<arch>-cross for a cross compiler)" if "-lc" in head else "")
        raise ToolchainError(f"building the runner of {name} failed in {out}{hint}:\n"
                             f"{' '.join(cmd)}\n{head}")
    os.replace(tmp, exe)
    return exe


def _install_hint(command: str) -> str:
    for prefix, package in _PACKAGES.items():
        if Path(command).name.startswith(prefix):
            return f"install it with `apt-get install {package}`"
    return "install it or give the emulator's full path"


class EmulatedModel:
    """An artifact run as a program under `emulator` (argv words such as
    ["qemu-x86_64", "-cpu", "Haswell"]; [] runs the program directly). Same interface as the
    ctypes `CompiledModel`: `.run({name: array}) -> {name: array}`. For a library that
    chooses its int8 kernels at run time, `.dot_product_kernels` is what the last run's
    NAME_dot_product_kernels() said (1: sdot, 0: plain NEON); None before a run or without."""

    # one definition of the input checks and names, shared with the ctypes loader
    input_names = CompiledModel.input_names
    output_names = CompiledModel.output_names
    check_inputs = CompiledModel.check_inputs

    def __init__(self, out_dir, emulator: Sequence[str] = ()):
        self.out_dir = Path(out_dir)
        self.manifest = read_manifest(out_dir)
        self.name = self.manifest["name"]
        self.emulator = list(emulator)
        if self.emulator and shutil.which(self.emulator[0]) is None:
            raise EdgecError(f"emulator '{self.emulator[0]}' was not found on PATH; "
                             f"{_install_hint(self.emulator[0])}")
        self.runner = build_runner(self.out_dir)
        self._env_threads: int | None = None
        self.dot_product_kernels: int | None = None

    def set_num_threads(self, n: int) -> None:
        """Run with `n` threads: sets EDGEC_NUM_THREADS in the runner's environment."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise EdgecError(f"the number of threads must be a positive integer, got {n!r}")
        if not self.manifest.get("threads", True):
            raise EdgecError(f"{self.name} was built without a thread pool; recompile it")
        self._env_threads = n

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        arrays = self.check_inputs(feeds)
        with tempfile.TemporaryDirectory(prefix="edgec-run-") as tmp:
            ins = [Path(tmp) / f"input{i}.bin" for i in range(len(arrays))]
            outs = [Path(tmp) / f"output{i}.bin" for i in range(len(self.manifest["outputs"]))]
            for a, path in zip(arrays, ins):
                a.tofile(path)
            self._execute([*self.emulator, str(self.runner.resolve()), *map(str, ins),
                           *map(str, outs)])
            return {spec["name"]: self._read_output(spec, path)
                    for spec, path in zip(self.manifest["outputs"], outs)}

    def _execute(self, cmd: list[str]) -> None:
        env = dict(os.environ)
        if self.manifest.get("sanitize"):
            env = sanitizer_env(env)
        if self._env_threads is not None:
            env["EDGEC_NUM_THREADS"] = str(self._env_threads)
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        except OSError as e:
            what = f"emulator '{cmd[0]}'" if self.emulator else f"runner {cmd[0]}"
            hint = f"; {_install_hint(cmd[0])}" if self.emulator else ""
            raise EdgecError(f"could not start the {what}: {e.strerror}{hint}") from None
        how = " ".join(self.emulator) or "natively"
        finding = sanitizer_finding(res.stderr) if self.manifest.get("sanitize") else None
        if finding:
            saved = self.out_dir / ".build" / f"{self.name}-sanitizer.txt"
            saved.write_text(res.stderr)
            raise EdgecError(f"{self.name}_run: {finding}; the sanitizer's report is in {saved}")
        sig = _signal_of(res)
        if sig is not None:
            raise EdgecError(_signal_message(self.name, self.manifest["target"], how, sig))
        status = re.search(r"^status (-?\d+) (.*)$", res.stdout, re.M)
        if res.returncode == 1 and status:
            raise EdgecError(f"{self.name}_run failed: {status.group(2)}")
        if res.returncode != 0 or not status:
            tail = " | ".join(res.stderr.strip().splitlines()[-5:]) or "no message"
            raise EdgecError(f"the runner of {self.name} ({how}) exited with status "
                             f"{res.returncode}: {tail}")
        dot = re.search(r"^dot_product_kernels (\d+)$", res.stdout, re.M)
        self.dot_product_kernels = int(dot.group(1)) if dot else None

    def _read_output(self, spec: Mapping, path: Path) -> np.ndarray:
        dtype = _np_dtype(spec["dtype"])
        count = int(np.prod(spec["shape"], dtype=np.int64))
        data = np.fromfile(path, dtype=dtype)
        if data.size != count:
            raise EdgecError(f"the runner of {self.name} wrote {data.size} elements for output "
                             f"'{spec['name']}', expected {count} ({spec['shape']})")
        return data.reshape(spec["shape"])


def sanitizer_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with SANITIZER_OPTIONS before the options it sets itself (which win)."""
    return {**env, **{k: ":".join(filter(None, [v, env.get(k)]))
                      for k, v in SANITIZER_OPTIONS.items()}}


def sanitizer_finding(report: str) -> str | None:
    """A sanitizer's first finding in a program's stderr, and where: "AddressSanitizer:
    heap-buffer-overflow in k3_gather (m.c:120)", or "... in mk_gemm (m.c:80) of k3_fc
    (m.c:120)" for a micro-kernel; None when there is none."""
    finding = _FINDING.search(report)
    if finding is None:
        return None
    what = finding.group(1) or f"UndefinedBehaviorSanitizer: {finding.group(3)}"
    # the frames in C source (not the sanitizer's interceptors nor the checks that a
    # sanitized library makes of its masked vector accesses) below main
    frames = [(m.group(1), Path(m.group(2)).name) for m in _FRAME.finditer(report, finding.end())
              if m.group(1) != "main" and not m.group(1).startswith("edgec_asan_")
              and m.group(2).rsplit(":", 1)[0].endswith((".c", ".h"))]
    if not frames:
        return f"{what} at {Path(finding.group(2)).name}" if finding.group(2) else what
    where = f"{what} in {frames[0][0]} ({frames[0][1]})"
    kernel = next((f for f in frames if re.match(r"k\d+_", f[0])), frames[0])
    return where if kernel == frames[0] else f"{where} of {kernel[0]} ({kernel[1]})"


def _signal_of(res: subprocess.CompletedProcess) -> int | None:
    """The signal that killed the program: qemu-user re-raises a guest's fatal signal on
    itself (a negative return code), after saying 'uncaught target signal N' on stderr."""
    if res.returncode < 0:
        return -res.returncode
    m = re.search(r"uncaught target signal (\d+)", res.stderr)
    return int(m.group(1)) if m else None


def _signal_message(name: str, target: str, how: str, sig: int) -> str:
    try:
        sig_name = signal.Signals(sig).name
    except ValueError:
        sig_name = f"signal {sig}"
    msg = f"the runner of {name} (target {target}, run {how}) died of {sig_name}"
    if sig == signal.SIGILL:
        return (msg + ": the code used an instruction the (emulated) CPU lacks; compile for a "
                "target that CPU supports, or run under a CPU model that has the target's ISA")
    return msg + " in the generated code"
