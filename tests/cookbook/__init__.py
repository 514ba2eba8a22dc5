"""Inference snippets written the way ML engineers write NumPy, compiled and checked
against NumPy by tests/test_cookbook.py (one module per theme)."""
