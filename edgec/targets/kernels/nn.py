"""Kernel builders of the nn ops."""
