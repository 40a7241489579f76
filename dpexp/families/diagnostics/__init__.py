"""Diagnostic components for testing and benchmarking the runner (not from any paper)."""
