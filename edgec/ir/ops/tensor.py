"""Tensor and shape ops: reshaping, transposing, slicing, gathering, concatenation, casts."""
