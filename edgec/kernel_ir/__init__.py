"""The kernel IR: typed loop-level kernels and the program IR that launches them, with their
builder, printer, interpreters, thread split and kernel passes."""
