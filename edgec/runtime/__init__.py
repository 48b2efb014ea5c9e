"""The minimal C runtime (package data under c/) and the Python loader of artifacts."""

from ..targets.runtime_c import C_DIR, c_source

__all__ = ["C_DIR", "c_source"]
