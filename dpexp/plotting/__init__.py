"""Core plotting: the shared machinery (``base``) and the plot kinds every family may use.

A family's own plot kinds live in ``dpexp/families/<family>/plots.py``.  Every module here is imported by
``dpexp.registry.load_all()``: a new plot kind is one new file in this folder (or in its family's ``plots.py``).
"""
