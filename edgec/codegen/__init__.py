"""Code generation: the renderers (C, LLVM) of kernels and programs, the library's sources,
the toolchains that build them, Huffman-coded weights, and the C runtime's sources (c/)."""
