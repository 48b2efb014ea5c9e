"""Kernel builders of the reduce ops."""
