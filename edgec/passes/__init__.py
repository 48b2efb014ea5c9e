"""The pass pipeline: the PassManager, the pattern rewriter and the built-in passes.

    from edgec.passes import run_pipeline
    report = run_pipeline(graph, "fold-constants,fuse,plan-memory", check_numerics=True)

A pass is registered by name with `@register_pass`; see `manager` for the pass contract and
`rewrite` for writing a pass as a table of rewrite patterns.
"""

# the built-in passes register themselves on import
from . import (
    canonicalize,
    dce,
    equalize,
    fixed_point,
    fold_batchnorm,
    fold_constants,
    fuse,
    fuse_qdq,
    fuse_residual,
    layout,
    manager,
    pack_weights,
    plan_memory,
    prune,
    quantize,
    remove_identity,
    reorder,
    sparsify,
)
from .manager import (
    Pass,
    PassInfo,
    PassManager,
    PassRecord,
    PipelineReport,
    PipelineStep,
    make_pass,
    parse_pipeline,
    pass_spec,
    register_pass,
    registered_passes,
    run_pipeline,
    sample_inputs,
)
from .plan_memory import MemoryPlan
from .rewrite import (
    MatchFailure,
    NoMatch,
    Pattern,
    PatternPass,
    RewriteResult,
    apply_patterns,
    can_replace,
    constant,
    erase_dead,
    pattern,
    producer,
    replace_value,
    require,
    sole_user,
)


def _spec(name: str, **options) -> str:
    """`name{key=value,...}` in pipeline syntax; the bare name without options."""
    shown = ",".join(f"{k}={v}" for k, v in options.items())
    return f"{name}{{{shown}}}" if shown else name


def default_pipeline(vector_lanes: int = 1, registers: int = 16, uarch: str = "",
                     integer_only: bool = False) -> str:
    """The standard pipeline for a target whose float vectors have `vector_lanes` lanes in
    `registers` registers: with vectors, convolutional regions run in blocked NCHWc layout of
    that many channels, and the weights of blocked integer convolutions and int8 GEMMs are
    packed for tiles sized to the registers (and vectors) and requantized in fixed point.
    `uarch`: the CPU family whose costs sparsify's model uses (targets/uarch.py);
    `integer_only` (scalar code whose integer layers must compute in integers only: HLS, and
    GPUs, where float requantization would round as nvcc contracts it): every integer
    convolution and GEMM requantized in fixed point (`fixed-point{scalar=1}`). The
    order of the later passes is the one manager.RUNS_AFTER checks."""
    vectors = vector_lanes >= 2
    lanes = {"lanes": vector_lanes} if vectors else {}
    steps = ["fold-constants", "remove-identity", "dce", "fold-batchnorm", "fold-constants",
             "fuse-qdq", "dequantize-weights", "fuse", "dce",
             _spec("sparsify", **lanes, **({"uarch": uarch} if uarch else {})),
             _spec("reorder", **lanes, **({"registers": registers} if vectors else {}))]
    if vectors:
        steps += [_spec("layout-nchwc", block=vector_lanes),
                  _spec("pack-weights", registers=registers, lanes=vector_lanes),
                  "fixed-point", "fuse-residual", "dce"]
    elif integer_only:
        steps.append("fixed-point{scalar=1}")
    return ",".join([*steps, "plan-memory"])


DEFAULT_PIPELINE = default_pipeline()


__all__ = [
    "DEFAULT_PIPELINE", "default_pipeline", "MatchFailure", "canonicalize", "MemoryPlan",
    "NoMatch", "Pass", "PassInfo",
    "PassManager", "PassRecord", "Pattern", "PatternPass", "PipelineReport", "PipelineStep",
    "RewriteResult", "apply_patterns", "can_replace", "constant", "dce", "equalize",
    "erase_dead",
    "fixed_point", "fold_batchnorm", "fold_constants", "fuse", "fuse_qdq", "fuse_residual",
    "layout", "make_pass",
    "pack_weights", "parse_pipeline",
    "pass_spec", "pattern", "plan_memory", "producer", "quantize", "register_pass",
    "registered_passes",
    "remove_identity", "replace_value", "require", "run_pipeline", "sample_inputs",
    "sole_user", "sparsify", "prune", "reorder",
]

manager.mark_builtin()  # every pass registered so far is edgec's own
