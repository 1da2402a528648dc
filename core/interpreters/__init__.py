"""Interpreter functions for xnpu's dialects, one module per dialect (as xDSL's own)."""
