"""Controller configuration: one dataclass, defaults like the real quickstart."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

#: the real OpenZiti release whose behaviour this project follows: `/version`, every command's `--version`,
#: `ziti version` and the routers (`router/version.py`, kept equal by a test) all say it
VERSION = "v2.0.3"
REVISION = "pyctrl"
BUILD_DATE = "2026-11-21 00:00:00"


@dataclass
class Config:
    """Everything ``create_app`` needs to know.

    ``data_dir`` None keeps everything in memory (tests); a folder makes the
    store durable and keeps the PKI there.
    """

    data_dir: Path | None = None
    host: str = "127.0.0.1"
    #: the public address clients use (``edge.api.address`` in the real config)
    api_address: str = "127.0.0.1:1280"
    #: the control channel address routers dial (``tls:host:port``; None: no control channel listener)
    ctrl_address: str | None = None
    #: extra names the TLS server certificate must cover
    hostnames: tuple[str, ...] = ("localhost",)
    session_timeout_seconds: int = 30 * 60
    admin_username: str = "admin"
    admin_password: str | None = "admin"
    admin_name: str = "Default Admin"
    totp_issuer: str = "openziti.io"
    enrollment_duration_minutes: int = 180
    router_enrollment_duration_minutes: int = 180
    trust_domain: str | None = None
    #: TLS server key of a new data folder: "rsa" (default, as the real quickstart: RS256 enrollment
    #: JWTs that older SDKs verify) or "ec" (P-256, ES256); None keeps an existing folder's key
    server_key_type: str | None = None
    #: seconds between snapshots (real controller: one a minute)
    snapshot_min_interval_seconds: int = 60
    simulation: bool = False
    #: ``events.jsonl`` rotates before it passes this size, keeping this many older files (``.1`` newest)
    events_max_bytes: int = 16 * 1024 * 1024
    events_keep_files: int = 4
    #: serve OIDC under /oidc and advertise OIDC_AUTH (as the real 2.x does by default)
    oidc: bool = True
    oidc_access_token_seconds: int = 30 * 60
    oidc_refresh_token_seconds: int = 24 * 60 * 60
    oidc_id_token_seconds: int = 30 * 60
    fsync: bool = True
    #: a single-page app's folder (the Admin Console's build) served at ``/zac/``; None serves none
    console_dir: Path | None = None
    #: a cluster member's settings (``controller.cluster.member.ClusterConfig``); None: a single controller
    cluster: object | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.data_dir is not None:
            self.data_dir = Path(self.data_dir)
        if self.session_timeout_seconds < 60:
            # NOTE: the real controller treats a timeout under a minute as the default.
            self.session_timeout_seconds = 30 * 60

    @property
    def base_url(self) -> str:
        return f"https://{self.api_address}"

    @property
    def is_loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
