"""edgec: an ahead-of-time compiler from ONNX to small, self-contained static libraries."""

__version__ = "0.1.0"
