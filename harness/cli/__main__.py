"""``python -m harness.cli``: the same as ``ziti-harness``."""

from harness.cli import entry

entry()
