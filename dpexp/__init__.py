"""dpexp: reproducible experiments on differentially private linear regression."""

__version__ = "0.1.0"
