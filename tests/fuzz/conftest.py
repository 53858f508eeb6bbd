"""The fuzz run is opt-in: ``python -m pytest tests/fuzz -m fuzz`` (see the README)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items):
    if "fuzz" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="fuzzing is opt-in: python -m pytest tests/fuzz -m fuzz")
    for item in items:
        if "fuzz" in item.keywords:
            item.add_marker(skip)
