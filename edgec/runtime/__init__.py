"""What consumes artifacts: the Python loader (loader.py), the manifest reader (manifest.py) and
the emulated runner (emulated.py). The C runtime's sources are code generation's data
(codegen/c), re-exported here for the loader and runner."""

from ..codegen.runtime_c import C_DIR, c_source

__all__ = ["C_DIR", "c_source"]
