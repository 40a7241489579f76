"""Datasets of this family (found by ``dpexp.registry.load_all``)."""
