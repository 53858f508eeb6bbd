"""The harness: client, networks as code, flows, virtual clients, analysis, pytest plugin.

Start with :class:`ZitiClient` (in-process or over the network), :func:`apply`
a :class:`Network`, drive :mod:`harness.dataplane.flows`, ask :class:`Analysis` who can
reach what, run a real controller (and its edge router) with
:class:`LocalController`, and push bytes through the router with
:class:`SyncDataPlane` / :class:`DataPlane`.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ZitiClient": "harness.client",
    "ApiError": "harness.client",
    "Network": "harness.network",
    "NetworkError": "harness.network",
    "apply": "harness.network",
    "export": "harness.network",
    "diff": "harness.network",
    "Analysis": "harness.analysis",
    "LocalController": "harness.processes.server",
    "Population": "harness.dataplane.virtual",
    "VirtualClient": "harness.dataplane.virtual",
    "generate": "harness.network.generate",
    "DataPlane": "harness.dataplane",
    "SyncDataPlane": "harness.dataplane.sync",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
