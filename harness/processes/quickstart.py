"""What ``ziti edge quickstart`` gives an SDK author, from Python.

A :class:`~harness.processes.server.LocalController` with its edge router and the
quickstart policies, and per test a :class:`Quickstart`: a fresh service
(end-to-end encrypted, as ``ziti edge create service`` makes it) with a
dialer and a binder identity, enrolled, their identity files written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.client import ZitiClient
from harness.dataplane import flows
from harness.dataplane.sync import SyncDataPlane


@dataclass
class Quickstart:
    """A fresh service and two enrolled identities on a running controller and router."""

    controller_url: str
    router_url: str
    service: str
    dialer: Path
    binder: Path
    ca: Path
    admin: ZitiClient = field(repr=False)

    def dataplane(self, identity_file: str | Path) -> SyncDataPlane:
        """The harness's own SDK client for an identity file (close it when done)."""
        return SyncDataPlane.from_identity_file(identity_file)


def enroll_identity(admin: ZitiClient, name: str, roles: list[str], path: Path) -> Path:
    """Create an identity with an ott enrollment, enroll it as an SDK does, write its identity file."""
    created = admin.management.create_identity(
        body={"name": name, "type": "User", "isAdmin": False, "roleAttributes": roles, "enrollment": {"ott": True}}
    )
    token = admin.management.detail_identity(created["id"])["enrollment"]["ott"]["jwt"]
    return flows.write_identity_file(flows.enroll_ott(admin, token), path)


def new_quickstart(
    admin: ZitiClient, folder: Path, stem: str, *, controller_url: str, router_url: str, encrypted: bool = True
) -> Quickstart:
    """A service ``stem`` that ``stem-binder`` may bind and ``stem-dialer`` may dial.

    Args:
        admin: a client logged in as an admin.
        folder: where the identity files and the CA bundle are written.
        stem: the service name, and the prefix of the identities and policies.
        controller_url: the HTTPS URL written into the identity files' ``ztAPI``.
        router_url: the edge router's ``tls://`` URL (for the caller's information).
        encrypted: the service's ``encryptionRequired`` (the CLI's default: on).
    """
    folder.mkdir(parents=True, exist_ok=True)
    admin.management.create_service(body={"name": stem, "encryptionRequired": encrypted, "roleAttributes": [stem]})
    for kind, who in (("Bind", "binder"), ("Dial", "dialer")):
        admin.management.create_service_policy(
            body={
                "name": f"{stem}-{who}",
                "type": kind,
                "semantic": "AnyOf",
                "identityRoles": [f"#{stem}-{who}"],
                "serviceRoles": [f"#{stem}"],
            }
        )
    files = {
        who: enroll_identity(admin, f"{stem}-{who}", [f"{stem}-{who}"], folder / f"{stem}-{who}.json")
        for who in ("dialer", "binder")
    }
    ca = folder / "ca.pem"
    ca.write_text(flows.ca_bundle(admin))
    return Quickstart(controller_url, router_url, stem, files["dialer"], files["binder"], ca, admin)
