"""dpexp's version, on its own so that modules inside the package read it without importing the package's face
(``dpexp/__init__``, which hands on the Python API of ``dpexp.api``)."""

__version__ = "0.1.0"
