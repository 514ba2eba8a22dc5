"""Helpers shared by tests that run their workload in fresh interpreters."""
