"""Reductions over axes (ReduceMean, ReduceSum, ReduceMax, ...)."""
