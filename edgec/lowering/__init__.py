"""Lowering: each graph op to a kernel of the kernel IR (kernels/, one file per op family), the
micro-kernels of the hot loops, and the program of a planned graph."""
