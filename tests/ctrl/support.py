"""What the control channel tests share besides :class:`harness.processes.routers.RouterProcess`: the router command line
run as a subprocess, a bounded poll, and edge router policies narrowing a test's identities to some routers."""

from __future__ import annotations

import subprocess

from harness.processes.routers import DEADLINE, ROOT, poll, router_command


def run_router(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``python -m router ARGS`` of this checkout to its end: the command line's own exit code and messages."""
    return subprocess.run(router_command(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def wait_until(predicate, timeout: float = DEADLINE, what: str = "condition"):
    """Poll ``predicate`` (real processes and sockets only) until truthy or the deadline passes."""
    return poll(predicate, timeout, lambda: AssertionError(f"{what} not reached within {timeout} s"))


def restrict_to(admin, stem: str, router_ids: list[str]) -> None:
    """Edge router policies letting ``#stem-*`` identities and the ``#stem`` service use only ``router_ids``."""
    routers = [f"@{router_id}" for router_id in router_ids]
    admin.create(
        "edge-router-policies",
        {
            "name": f"{stem}-routers",
            "semantic": "AnyOf",
            "identityRoles": [f"#{stem}-dialer", f"#{stem}-binder"],
            "edgeRouterRoles": routers,
        },
    )
    admin.create(
        "service-edge-router-policies",
        {"name": f"{stem}-routers", "semantic": "AnyOf", "serviceRoles": [f"#{stem}"], "edgeRouterRoles": routers},
    )


def terminators_on(admin, router_id: str) -> list[dict]:
    return [t for t in admin.mgmt_ok("GET", "/terminators", params={"limit": 500}) if t["routerId"] == router_id]
