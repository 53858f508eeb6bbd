"""``python -m harness.ziti``: the ``ziti`` drop-in."""

from harness.ziti import entry

entry()
