"""edgec: an ahead-of-time compiler from ONNX to small, self-contained static libraries.

    import edgec
    art = edgec.compile("model.onnx", "out/", target="x86")
    outputs = edgec.load("out/").run({"input": x})
"""

__version__ = "0.1.0"

from .errors import EdgecError  # noqa: E402


def compile(model, out_dir, options=None, **kwargs):
    """Compile an ONNX model (path, bytes or onnx.ModelProto) into `out_dir`; the options are
    a `CompileOptions` (edgec.compiler.options) and/or its fields as keyword arguments
    (target, name, pipeline, quantize, ...; `edgec.compiler.driver.compile` says what each
    does), and `input_shapes`."""
    from .compiler.driver import compile as _compile

    return _compile(model, out_dir, options, **kwargs)


def load(out_dir, emulator=None):
    """Load a compiled artifact; `.run({name: array}) -> {name: array}`. `emulator` (argv words,
    e.g. ["qemu-x86_64", "-cpu", "Haswell"]) runs it as a program under that command."""
    from .runtime.loader import load as _load

    return _load(out_dir, emulator)


__all__ = ["EdgecError", "compile", "load", "__version__"]
