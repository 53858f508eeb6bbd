"""A new member's request to join: log in to a running member as an admin, ``POST /fabric/v1/cluster/add-member``.

Composition-root code (``python -m controller``, ``ziti edge quickstart join``): the
domain never calls HTTP. The running member's TLS certificate is checked against
the cluster's root CA, which the new member holds too.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Callable


def admin_join_request(members: list[str], ca_file: Path, username: str, password: str) -> Callable:
    """``ask(cluster)`` for ``ClusterConfig.ask_to_join``: ``members`` are API addresses (``tls:HOST:PORT``)."""
    import httpx

    def ask(cluster) -> None:
        context = ssl.create_default_context(cafile=str(ca_file))
        failures = []
        for member in members:
            base = "https://" + (member.split(":", 1)[1] if member.startswith("tls:") else member)
            try:
                with httpx.Client(base_url=base, verify=context, timeout=10.0) as client:
                    login = client.post(
                        "/edge/management/v1/authenticate",
                        params={"method": "password"},
                        json={"username": username, "password": password},
                    )
                    login.raise_for_status()
                    token = login.json()["data"]["token"]
                    added = client.post(
                        "/fabric/v1/cluster/add-member",
                        headers={"zt-session": token},
                        json={"address": cluster.config.api_address, "isVoter": True, "raftAddress": cluster.address},
                    )
                    if added.status_code == 200:
                        return
                    failures.append(f"{member}: {added.status_code} {added.text[:200]}")
            except (httpx.HTTPError, KeyError, ValueError) as ex:
                failures.append(f"{member}: {ex}")
        raise RuntimeError("; ".join(failures))

    return ask
