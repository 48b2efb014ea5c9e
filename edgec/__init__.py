"""edgec: an ahead-of-time compiler from ONNX to small, self-contained static libraries.

    import edgec
    art = edgec.compile("model.onnx", "out/", target="x86")
    outputs = edgec.load("out/").run({"input": x})
"""

__version__ = "0.1.0"

from .errors import EdgecError  # noqa: E402


def compile(model, out_dir, **kwargs):
    """Compile an ONNX model (path, bytes or onnx.ModelProto) into `out_dir`; see
    `edgec.compiler.driver.compile` for the options (target, name, input_shapes, pipeline)."""
    from .compiler.driver import compile as _compile

    return _compile(model, out_dir, **kwargs)


def load(out_dir):
    """Load a compiled artifact; `.run({name: array}) -> {name: array}`."""
    from .runtime.loader import load as _load

    return _load(out_dir)


__all__ = ["EdgecError", "compile", "load", "__version__"]
