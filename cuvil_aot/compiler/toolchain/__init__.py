"""Finding and running the toolchain: the C compiler (and, later, nvcc)."""
