"""What the ``harness`` extra installs (pyproject's ``[harness]``) and the one line said when it is missing.

The controller, the router and the drop-in ``ziti`` need only the base install; networks as code (PyYAML),
progress bars (tqdm), the data plane's end-to-end encryption (PyNaCl) and TOTP devices (PyOTP) need the
extra. A command or a test file that reaches one of them without it stops with :func:`extra_errors`' line.
"""

from __future__ import annotations

import importlib.util

from controller.console import LOCAL, CliError

#: import name -> the distribution the ``harness`` extra installs for it
HARNESS_EXTRA = {"yaml": "PyYAML", "tqdm": "tqdm", "nacl": "PyNaCl", "pyotp": "pyotp"}
#: how to install it, from a checkout (the package is not on PyPI)
INSTALL = 'pip install "/path/to/checkout[harness]" (in a checkout: pip install -e ".[harness]")'


def missing() -> list[str]:
    """The extra's import names this environment lacks."""
    return [name for name in HARNESS_EXTRA if importlib.util.find_spec(name) is None]


def needs_extra(names) -> str:
    """The line for ``names`` (import names) missing."""
    wanted = ", ".join(HARNESS_EXTRA[name] for name in names)
    return f"this needs the harness extra ({wanted} not installed): {INSTALL}"


def extra_errors(ex: BaseException) -> CliError | None:
    """A command-line translator: an import of the extra that failed is one line (exit 4, this machine)."""
    if isinstance(ex, ModuleNotFoundError) and (ex.name or "").partition(".")[0] in HARNESS_EXTRA:
        return CliError(needs_extra([ex.name.partition(".")[0]]), LOCAL)
    return None
