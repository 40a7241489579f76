"""Dataset loaders and generators (each module registers its datasets)."""
