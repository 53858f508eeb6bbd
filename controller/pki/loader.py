"""Where the controller's PKI lives: the data folder, or one per process in memory mode."""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

from controller.pki.ca import ControllerPKI

_shared: dict[tuple, ControllerPKI] = {}
_lock = threading.Lock()


def _names(config) -> tuple[tuple[str, ...], tuple[str, ...]]:
    host = config.api_address.rsplit(":", 1)[0].strip("[]")
    names = {"localhost", *config.hostnames}
    ips = {"127.0.0.1"}
    (ips if host.replace(".", "").isdigit() or ":" in host else names).add(host)
    return tuple(sorted(names)), tuple(sorted(ips))


def load_pki(config) -> ControllerPKI:
    """The data folder's PKI (created on first start), or a per-process one without a data folder.

    NOTE(lead): certificates are dated by the system clock, not the injected one,
    so a frozen test clock never makes the served TLS certificate invalid.
    """
    hostnames, ips = _names(config)
    key_type = config.server_key_type
    if config.data_dir is not None:
        return ControllerPKI.load_or_create(
            Path(config.data_dir) / "pki",
            hostnames=hostnames,
            ip_addresses=ips,
            trust_domain=config.trust_domain,
            server_key_type=key_type,
        )
    key = (hostnames, ips, config.trust_domain, key_type or "rsa")
    with _lock:
        if key not in _shared:
            folder = Path(tempfile.mkdtemp(prefix="ztc-pki-"))
            atexit.register(shutil.rmtree, folder, True)
            _shared[key] = ControllerPKI.load_or_create(
                folder,
                hostnames=hostnames,
                ip_addresses=ips,
                trust_domain=config.trust_domain,
                server_key_type=key_type,
            )
        return _shared[key]
