"""The CLI's saved login, as the real ``ziti`` keeps it, and the client built from it.

The real command saves ``ziti edge login`` in ``ziti-cli.json`` under
``$ZITI_CONFIG_DIR`` (default ``~/.config/ziti``):
``{"edgeIdentities": {"default": {"url", "username", "token", "loginTime",
"caCert", "readOnly"}}, "fabricIdentities": {}, "default": "default"}``, and
caches a controller's CA bundle in ``certificates/<hostname>`` beside it.
This module reads and writes the same file (owner-only), so either command
can use a login the other made.
"""

from __future__ import annotations

import json
import os
import ssl
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from controller.console import UNREACHABLE, USAGE, CliError

if TYPE_CHECKING:
    from harness.client import ZitiClient

MANAGEMENT_PATH = "/edge/management/v1"


def config_dir() -> Path:
    """``$ZITI_CONFIG_DIR``, else ``~/.config/ziti`` (as the real command)."""
    return Path(os.environ.get("ZITI_CONFIG_DIR") or Path.home() / ".config" / "ziti")


def config_file() -> Path:
    return config_dir() / "ziti-cli.json"


def load_config() -> dict:
    path = config_file()
    if not path.exists():
        return {"edgeIdentities": {}, "fabricIdentities": {}, "default": ""}
    try:
        config = json.loads(path.read_text() or "{}")
    except ValueError as ex:
        raise CliError(f"the CLI config {path} is not JSON ({ex}): delete it and log in again", USAGE) from ex
    config.setdefault("edgeIdentities", {})
    config.setdefault("fabricIdentities", {})
    return config


def save_config(config: dict) -> Path:
    """Write ``ziti-cli.json`` owner-only (the folder too)."""
    folder = config_dir()
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    config["default"] = config.get("default") or "default"
    path = config_file()
    write_private(path, json.dumps(config, indent=4))
    return path


def write_private(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)
    path.chmod(0o600)


def identity_name(config: dict, chosen: str | None = None) -> str:
    return chosen or config.get("default") or "default"


def save_login(
    url: str, username: str, token: str, ca_file: str | None, *, cli_identity: str | None = None, read_only=False
) -> Path:
    """Record a login under ``cli_identity`` (default ``default``); return the config file."""
    config = load_config()
    name = identity_name(config, cli_identity)
    config["edgeIdentities"][name] = {
        "url": url,
        "username": username,
        "token": token,
        "loginTime": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "caCert": ca_file or "",
        "readOnly": bool(read_only),
    }
    return save_config(config)


def forget_login(cli_identity: str | None = None) -> tuple[str, bool]:
    config = load_config()
    name = identity_name(config, cli_identity)
    found = config["edgeIdentities"].pop(name, None) is not None
    if found:
        save_config(config)
    return name, found


def cache_ca(hostname: str, pem: str) -> Path:
    """Keep a controller's CA bundle in ``certificates/<hostname>`` (as ``login -y`` does)."""
    folder = config_dir() / "certificates"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    path = folder / hostname
    write_private(path, pem)
    return path


def base_url(url: str) -> str:
    """``https://host:port`` of a saved management URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def saved_client(cli_identity: str | None = None, timeout: float = 5.0) -> ZitiClient:
    """A client carrying the saved session; CliError when there is none."""
    from harness.client import ZitiClient

    config = load_config()
    name = identity_name(config, cli_identity)
    login = config["edgeIdentities"].get(name)
    if not login:
        raise CliError(
            f"no identity '{name}' found in cli config {config_file()}: log in first with "
            "`ziti edge login HOST:PORT -u USER -p PASSWORD -y` (or start `ziti edge quickstart`)",
            UNREACHABLE,
        )
    ca = login.get("caCert") or None
    if ca and not Path(ca).exists():
        ca = None
    client = ZitiClient.connect(base_url(login["url"]), ca=ca, timeout=float(timeout))
    token = login.get("token") or ""
    if token.count(".") == 2:  # an OIDC access token given to `login --token`: sent as a bearer token
        client.http.headers["Authorization"] = f"Bearer {token}"
    else:
        client.token = token or None
    client.read_only = bool(login.get("readOnly"))
    client.cli_url = login["url"]
    return client


def trusted_by_system(url: str, timeout: float = 30.0) -> bool:
    """Whether the controller's TLS certificate verifies against this machine's CAs."""
    import httpx

    try:
        httpx.get(url + "/version", verify=ssl.create_default_context(), timeout=timeout)
    except httpx.ConnectError as ex:
        if "CERTIFICATE_VERIFY_FAILED" in str(ex):
            return False
        raise
    return True
