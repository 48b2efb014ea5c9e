"""Kernel builders of the tensor ops."""
