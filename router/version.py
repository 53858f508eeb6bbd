"""The build this router reports: at connect (the control channel's ``online``, shown as the router's
``versionInfo``) and in its edge hello to SDKs (``version|revision|buildDate|os|arch``, as the real router)."""

from __future__ import annotations

import platform

#: the real OpenZiti release whose behaviour this project follows (equal to ``controller.config.VERSION``)
VERSION = "v2.0.3"
REVISION = "pyrouter"
BUILD_DATE = "2026-11-21 00:00:00"
#: Go's names for machines, which the real router reports
_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386", "armv7l": "arm"}


def version_info() -> dict[str, str]:
    machine = platform.machine().lower()
    return {
        "version": VERSION,
        "revision": REVISION,
        "buildDate": BUILD_DATE,
        "os": platform.system().lower(),
        "arch": _GO_ARCH.get(machine, machine),
    }


def hello_version() -> bytes:
    info = version_info()
    return "|".join(info[key] for key in ("version", "revision", "buildDate", "os", "arch")).encode()
