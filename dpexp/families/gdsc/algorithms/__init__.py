"""Algorithms of this family, one concept per file (found by ``dpexp.registry.load_all``)."""
