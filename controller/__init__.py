"""A Python edge controller wire-compatible with the OpenZiti Edge APIs.

The public surface is small: build an app with :func:`create_app`, configure it
with :class:`Config`, drive time with :class:`FrozenClock`, serve it with
:class:`ThreadedServer` (HTTP) or :class:`TLSServer` (HTTPS).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "create_app": "controller.app",
    "Controller": "controller.registry",
    "Config": "controller.config",
    "Clock": "controller.clock",
    "FrozenClock": "controller.clock",
    "Ids": "controller.ids",
    "ThreadedServer": "controller.server.serve",
    "TLSServer": "controller.server.tls",
    "ControllerError": "controller.errors",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    # Lazy, so importing any submodule never pulls in (or cycles through) the whole app.
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'controller' has no attribute {name!r}")
