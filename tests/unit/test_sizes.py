"""The suite's sizes: bounded by default, full with ``--long`` (or ``ZITI_LONG=1``)."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import settings

from tests import conftest, sizes


def test_sizes_follow_the_variable(monkeypatch):
    monkeypatch.delenv(sizes.ENV, raising=False)
    assert (sizes.examples(1500, 200), sizes.examples(100), sizes.size(24, 9)) == (200, 20, 9)
    for value in ("0", "false", ""):
        monkeypatch.setenv(sizes.ENV, value)
        assert not sizes.is_long()
    monkeypatch.setenv(sizes.ENV, "1")
    assert (sizes.examples(1500, 200), sizes.examples(100), sizes.size(24, 9)) == (1500, 100, 24)


def test_this_run_uses_the_profile_its_option_names(request):
    long_run = request.config.getoption("--long") or sizes.is_long()
    assert settings.default.max_examples == (100 if long_run else 30)


def test_the_long_option_sets_the_variable_and_the_long_profile(monkeypatch):
    monkeypatch.delenv(sizes.ENV, raising=False)
    previous = settings.default.max_examples
    try:
        conftest.pytest_configure(SimpleNamespace(getoption=lambda name: name == "--long"))
        assert sizes.is_long() and settings.default.max_examples == 100  # subprocesses inherit the variable
        monkeypatch.delenv(sizes.ENV)
        conftest.pytest_configure(SimpleNamespace(getoption=lambda name: False))
        assert not sizes.is_long() and settings.default.max_examples == 30
    finally:
        settings.load_profile("long" if previous == 100 else "bounded")
