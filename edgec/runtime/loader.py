"""The Python loader: runs a compiled artifact through ctypes.

It builds a shared object from the artifact's own sources (the same C that goes into
libNAME.a), so tests and `edgec run` exercise exactly the code an app links. A sanitized
artifact (`edgec compile --sanitize`) cannot be loaded into Python, whose executable lacks
the sanitizers' runtimes: it runs as a program instead (runtime/emulated.py).
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import EdgecError, ShapeError
from . import manifest as manifest_file

if TYPE_CHECKING:
    from .emulated import EmulatedModel

ALIGN = 64
# Outputs up to this size are written into arrays made once and copied out on each call: the
# copy costs less than making a new array and asking numpy for its address (about 2 us each,
# which is 7% of the MLP's whole run)
STAGED_OUTPUT_BYTES = 16 * 1024


def read_manifest(out_dir) -> dict:
    """The checked manifest of the artifact in `out_dir` (runtime/manifest.py)."""
    return manifest_file.read(out_dir)


def _aligned_empty(nbytes: int) -> np.ndarray:
    raw = np.zeros(nbytes + ALIGN, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + nbytes]


def _unreferenced(a: np.ndarray) -> bool:
    """Whether only the loader holds `a` (made by `_aligned_array`) and its memory: a view of
    it holds its base, not it (CPython reference counts: the caller's and the argument's)."""
    return sys.getrefcount(a) == 3 and sys.getrefcount(a.base) == 2


def _aligned_array(shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, int]:
    """An uninitialised array whose data starts on an ALIGN-byte boundary, and that address.
    numpy's own often start 16 bytes into a line: the kernels' 64-byte stores then each touch
    two cache lines (an int8 GEMM with an 800 KB output ran 1.5x slower into such an array)."""
    raw = np.empty(math.prod(shape) * dtype.itemsize + ALIGN, np.uint8)
    at = _address(raw)
    start = -at % ALIGN
    return np.ndarray(shape, dtype, raw, start), at + start


def hash_files(out_dir: Path, files, digest=None):
    """`digest` (a new sha1 by default) updated with the bytes of the artifact's `files`, in
    order; an EdgecError naming the first that is missing."""
    digest = digest if digest is not None else hashlib.sha1()
    for f in files:
        try:
            digest.update((Path(out_dir) / f).read_bytes())
        except OSError:
            raise EdgecError(f"artifact {out_dir} is incomplete: {f} is missing") from None
    return digest


def built_shared_object(out_dir: Path, manifest: dict) -> Path:
    """The shared object the loader links of an artifact's library (or sources), in its
    `.build` folder, named by the digest of what it is made of: linked here unless it is
    there already. Thread-safe across artifacts."""
    from ..codegen.toolchain import cuda_shared_object, shared_object
    from ..targets.target import get_target

    name = manifest["name"]
    sources = [f for f in manifest["sources"] if f.endswith((".c", ".S", ".o"))]
    digest = hash_files(out_dir, sorted(manifest["sources"]) + [f"{name}.weights.bin"])
    build = out_dir / ".build"
    build.mkdir(exist_ok=True)
    so = build / f"{name}-{digest.hexdigest()[:12]}.so"
    if not so.exists():
        if manifest.get("gpu_archs"):
            cuda_shared_object(manifest["library"], str(so.resolve()), out_dir,
                               manifest["link_flags"])
        else:
            shared_object(get_target(manifest["target"]), sources, str(so.resolve()), out_dir,
                          manifest.get("link_flags", ["-lm", "-pthread"]))
    return so


class CompiledModel:
    """A loaded artifact: `.run({name: array}) -> {name: array}`."""

    def __init__(self, out_dir):
        self.out_dir = Path(out_dir)
        self.manifest = read_manifest(out_dir)
        self.name = self.manifest["name"]
        if self.manifest.get("sanitize"):
            raise EdgecError(f"{out_dir} is built with sanitizers (--sanitize), which cannot "
                             "be loaded into Python: run it with edgec.load (as a program)")
        cuda = bool(self.manifest.get("gpu_archs"))
        so = built_shared_object(self.out_dir, self.manifest)
        self._lib = ctypes.CDLL(str(so.resolve()))
        self._run = getattr(self._lib, f"{self.name}_run")
        self._run.restype = ctypes.c_int
        self._run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        status = getattr(self._lib, f"{self.name}_status_string")
        status.restype = ctypes.c_char_p
        self._status = status
        if cuda:
            self._init_device()
        self._workspace = _aligned_empty(self.manifest["workspace_bytes"])
        self._set_threads = getattr(self._lib, f"{self.name}_set_num_threads", None)
        dot = getattr(self._lib, f"{self.name}_dot_product_kernels", None) \
            if self.manifest.get("dot_product_kernels") else None
        # where the int8 kernels are chosen at run time: 1 when this CPU runs the dot-product
        # versions (sdot, AVX-VNNI), 0 the base ISA's; None for a library without the choice
        self.dot_product_kernels: int | None = int(dot()) if dot is not None else None
        # what run() needs per call, worked out once: a call costs microseconds, so that a
        # benchmark through the loader measures the library rather than the loader
        self._in_specs = [(i["name"], tuple(i["shape"]), _np_dtype(i["dtype"]))
                          for i in self.manifest["inputs"]]
        self._out_specs = [(o["name"], tuple(o["shape"]), _np_dtype(o["dtype"]))
                           for o in self.manifest["outputs"]]
        self._in_ptrs = (ctypes.c_void_p * max(len(self._in_specs), 1))()
        self._out_ptrs = (ctypes.c_void_p * max(len(self._out_specs), 1))()
        self._ws_ptr = _address(self._workspace) if self._workspace.size else None
        # the input arrays of the last call, whose addresses are in _in_ptrs: a caller that
        # feeds the same array again (a loop over a camera buffer, a benchmark) skips the
        # address lookup. Holding them keeps their data where it is (numpy refuses to resize
        # an array that something else references).
        self._last_in: list[np.ndarray | None] = [None] * len(self._in_specs)
        # (name, staged array or None) per output; (index, name, shape, dtype) of the others
        self._staged: list[tuple[str, np.ndarray | None]] = []
        self._unstaged = []
        # per unstaged output, the array the last call returned and its address: reused by
        # the next call when nothing references it or its memory any more (a caller that
        # drops each result, as a loop over frames does, gets the same warm buffer back
        # instead of a new one: 50 -> 42 us for a 800 KB output)
        self._spare: list[tuple[np.ndarray, int] | None] = []
        for j, (name, shape, dtype) in enumerate(self._out_specs):
            if np.prod(shape) * dtype.itemsize <= STAGED_OUTPUT_BYTES:
                self._staged.append((name, _aligned_array(shape, dtype)[0]))
                self._out_ptrs[j] = _address(self._staged[-1][1])
            else:
                self._staged.append((name, None))
                self._unstaged.append((j, name, shape, dtype))
                self._spare.append(None)

    def set_num_threads(self, n: int) -> None:
        """Run on `n` threads (the caller included) from the next run on."""
        if self._set_threads is None or not self.manifest.get("threads", True):
            raise EdgecError(f"{self.name} was built without a thread pool; recompile it")
        self._set_threads.argtypes = [ctypes.c_int]
        self._set_threads(int(n))

    @property
    def input_names(self) -> list[str]:
        return [i["name"] for i in self.manifest["inputs"]]

    @property
    def output_names(self) -> list[str]:
        return [o["name"] for o in self.manifest["outputs"]]

    def check_inputs(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        names = self.input_names
        missing = [n for n in names if n not in feeds]
        extra = [n for n in feeds if n not in names]
        if missing or extra:
            raise ShapeError(f"model {self.name} takes inputs {names}; "
                             f"missing {missing}, unknown {extra}")
        arrays = []
        for spec in self.manifest["inputs"]:
            a = np.asarray(feeds[spec["name"]])
            want = _np_dtype(spec["dtype"])
            if list(a.shape) != spec["shape"]:
                raise ShapeError(f"input '{spec['name']}' must have shape {spec['shape']}, "
                                 f"got {list(a.shape)}")
            if a.dtype != want:
                raise ShapeError(f"input '{spec['name']}' must be {want}, got {a.dtype}")
            arrays.append(np.ascontiguousarray(a))
        return arrays

    def _fast_inputs(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray] | None:
        """The inputs when they are exactly what the library takes (the common case), else
        None: check_inputs then explains or converts."""
        if len(feeds) != len(self._in_specs):
            return None
        arrays = []
        for name, shape, dtype in self._in_specs:
            a = feeds.get(name)
            if (type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype
                    or not a.flags.c_contiguous):
                return None
            arrays.append(a)
        return arrays

    def _init_device(self) -> None:
        """A CUDA library's NAME_init: the device arena and the weights' upload, or an
        EdgecError that says why it cannot run here."""
        init = getattr(self._lib, f"{self.name}_init")
        init.restype = ctypes.c_int
        status = init()
        if status != 0:
            why = getattr(self._lib, f"{self.name}_cuda_error")
            why.restype = ctypes.c_char_p
            raise EdgecError(f"{self.out_dir} is a CUDA library "
                             f"({', '.join(self.manifest['gpu_archs'])}) and cannot run here: "
                             f"{self._status(status).decode()} (CUDA: {why().decode()}); run "
                             "it on a machine with an NVIDIA GPU and a driver for CUDA 13.0, or "
                             "compile the model for a CPU target")

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        arrays = self._fast_inputs(feeds)
        if arrays is None:
            arrays = self.check_inputs(feeds)
        last = self._last_in
        for i, a in enumerate(arrays):
            if a is not last[i]:
                self._in_ptrs[i] = _address(a)
                last[i] = a
        fresh = {}
        for k, (j, name, shape, dtype) in enumerate(self._unstaged):
            spare = self._spare[k]
            if spare is None or not _unreferenced(spare[0]):
                spare = self._spare[k] = _aligned_array(shape, dtype)
            fresh[name], self._out_ptrs[j] = spare
        status = self._run(self._in_ptrs, self._out_ptrs, self._ws_ptr)
        if status:
            raise EdgecError(f"{self.name}_run failed: {self._status(status).decode()}")
        if not fresh:
            return {name: o.copy() for name, o in self._staged}
        return {name: fresh[name] if o is None else o.copy() for name, o in self._staged}


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _np_dtype(name: str) -> np.dtype:
    from ..ir.dtypes import DType

    return DType(name).np


def load(out_dir, emulator: Sequence[str] | None = None) -> CompiledModel | EmulatedModel:
    """Load the artifact that `edgec compile` wrote to `out_dir`. With `emulator` (argv words
    such as ["qemu-x86_64", "-cpu", "Haswell"]; [] for none) it runs as a program under that
    command instead of through ctypes (see `runtime/emulated.py`); a cross target's artifact
    (arm64, armv7) always does, by default under the target's own emulator, and so does a
    sanitized one (`edgec compile --sanitize`), natively only."""
    manifest = read_manifest(out_dir)
    if manifest.get("artifact") == "hls-project":  # run by C-simulation (g++)
        if emulator:
            raise EdgecError(f"{out_dir} is an HLS project, run by its C-simulation on this "
                             "machine; it takes no emulator")
        from .emulated import EmulatedModel

        return EmulatedModel(out_dir, [])
    if manifest.get("sanitize") and emulator:
        raise EdgecError(f"{out_dir} is built with sanitizers (--sanitize), whose runtimes "
                         f"do not run under {emulator[0]}; run it natively")
    if emulator is None:
        from ..targets.target import get_target, missing_host_flags

        target = get_target(manifest["target"])
        if target.cross:
            emulator = list(target.emulator)
        elif missing := missing_host_flags(target):
            # its first vector instruction would kill this process (SIGILL)
            raise EdgecError(
                f"{out_dir} is built for {target.name} ({target.doc}), and this CPU lacks "
                f"{', '.join(missing)}: run it on such a CPU, under an emulator that has them "
                f"(edgec.load(out, emulator=[...]), `edgec run --emulator`), or compile it for "
                f"a target this CPU has (x86 picks the best)")
        elif manifest.get("sanitize"):
            emulator = []
    if emulator is not None:
        from .emulated import EmulatedModel

        return EmulatedModel(out_dir, emulator)
    return CompiledModel(out_dir)
