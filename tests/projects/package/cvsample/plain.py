"""Mentions cuvil_aot and optimize only in this docstring: the byte scan's false positive."""

ANSWER = 42
