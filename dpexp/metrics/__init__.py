"""Core metrics shared by the paper families (a family's own metrics live in ``dpexp/families/<family>/metrics.py``).

Every module here is imported by ``dpexp.registry.load_all()``: a new metric is one new file in this folder.
"""
