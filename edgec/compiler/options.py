"""What a compile is asked to do: one typed record that the CLI and `edgec.compile` build and
the driver reads (compiler/driver.py `compile` says what each option does)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ..errors import EdgecError
from ..targets.target import Target

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


@dataclass(frozen=True)
class CompileOptions:
    """The options of a compile, besides the model and the output folder."""

    target: str | Target = "x86"  # a target's name (targets/target.py) or a Target
    name: str | None = None
    pipeline: str | None = None
    verify_each: bool = False
    print_ir_after_all: bool = False
    check_numerics: bool = False
    timing: bool = False
    log: IO[str] | None = None
    threads: bool = True
    backend: str = "c"
    quantize: str | None = None
    calib: Any = None  # {input: samples} or the path of an .npz
    calib_method: str = "minmax"
    quantize_skip: Sequence[str] = ()
    quantize_weights: str = "auto"
    accuracy_budget: float = 0.0
    quantize_methods: Sequence[str] = ()
    prune: float = 0.0
    prune_pattern: str | None = None
    prune_exclude: Sequence[str] = ()
    compress: bool = False
    sanitize: bool = False
    report: str | None = None
    cpu: str | None = None
    tune: bool | None = None
    emit_kernels: bool = False
    # a CUDA target's GPU architectures (nvcc's sm_XY); () for the target's own
    gpu_arch: Sequence[str] = ()
    # a CUDA target's NAME_run_device captures its launches into a CUDA graph once (again
    # when the pointers change) and replays it
    cuda_graph: bool = False
    # a CUDA target's float GEMMs and convolutions: "fp32" (CUDA cores), or "fp16", "bf16",
    # "tf32" operands on tensor cores with float32 sums (PRECISIONS)
    precision: str = "fp32"
    # the HLS target's FPGA part (as Vitis names it) and clock
    fpga_part: str | None = None
    clock_mhz: float = 200.0
    # the HLS target's frames per second to fold its matrix-vector units for (0: as fast as
    # the rest of the design allows, within the part)
    target_fps: float = 0.0
    # {node name: "KIND{k=v,...}" (or a lowering.strategies Forced / Candidate)}: the
    # strategy that builds the node's kernel, instead of the chooser's
    strategy: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, options: CompileOptions | None, changes: Mapping[str, Any]) -> CompileOptions:
        """`options` (default: the defaults) with `changes` (keyword arguments of `compile`)
        applied; an unknown name is a TypeError naming it and the known ones, as a Python
        call with a wrong keyword would be."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"compile() got unknown option(s) {', '.join(sorted(unknown))}; "
                            f"options: {', '.join(f.name for f in dataclasses.fields(cls))}")
        return dataclasses.replace(options or cls(), **changes).checked()

    def checked(self) -> CompileOptions:
        """These options, or an EdgecError naming the first pair that cannot go together."""
        if self.quantize is not None and self.pipeline is not None:
            raise EdgecError("give quantize= or a pipeline with a quantize{...} pass, not both")
        if self.prune and self.pipeline is not None:
            raise EdgecError("give prune= or a pipeline with a prune{...} pass, not both")
        if self.report not in (None, "html"):
            raise EdgecError(f"report={self.report!r}: choose html")
        from ..lowering.strategies import Forced

        for node, text in self.strategy.items():
            try:
                Forced.parse(text)
            except EdgecError as e:
                raise EdgecError(f"strategy for node {node}: {e}") from None
        return self
