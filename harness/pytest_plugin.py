"""Pytest plugin of the harness (fixtures arrive with the harness issue)."""
