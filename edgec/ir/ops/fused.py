"""Fused ops made by the fusion pass: a convolution or matrix product with its epilogue."""
