"""``LocalMember``: a cluster member's own ``RouterLink`` as one member of its embedded router's channels.

The router embedded in a cluster member (``python -m controller --cluster`` with a router port) connects to
every member, as a router process does (``router.members.ControllerMembers``, ``docs/control-channel.md``): to
the other members over their control channels, and to its own member in-process, through this adapter, which
gives the in-process ``RouterLink`` the shape of a member's channel: requests by their control channel name
(``controller.ctrl.messages``, so both kinds of member answer alike), always connected, and the member list
(``ctrlAddresses``) from this member. Composition-root code: the router imports none of it.
"""

from __future__ import annotations

import logging
import threading

from controller.ctrl.messages import MESSAGES, InvalidArgs

log = logging.getLogger("controller.ctrl")


class LocalMember:
    """This member's ``link`` for its embedded router; ``address`` is this member's control channel address."""

    def __init__(self, link, address: str, credentials: dict):
        self.link, self.address = link, address
        self._credentials = dict(credentials)
        self.router_id, self.name = credentials["router_id"], credentials["name"]
        self.ctrl_id = link.instance_id
        self.connected = threading.Event()
        self.connected.set()
        #: set by ``ControllerMembers`` (``members_changed(self, endpoints)``), and the state it keeps on members
        self.members_changed = None
        self.accepted = self.local_tokens = None
        self._online_url = self._link_url = None
        self._online_version: dict = {}
        self._telling = threading.Lock()

    def credentials(self) -> dict:
        return dict(self._credentials)

    # -- requests, by their control channel names --------------------------------------------
    def _call(self, name: str, **args):
        entry = MESSAGES[name]
        try:
            return entry.call(self.link, entry.check(args), self.router_id)
        except (PermissionError, LookupError) as ex:
            if isinstance(ex, KeyError):
                raise RuntimeError("the controller failed") from None
            raise
        except InvalidArgs as ex:
            raise RuntimeError(str(ex)) from None
        except Exception as ex:  # noqa: BLE001 - as a member's FAILED reply
            raise RuntimeError(str(ex) or type(ex).__name__) from None

    def _notify(self, name: str, **args) -> None:
        try:
            self._call(name, **args)
        except (PermissionError, LookupError, RuntimeError) as ex:
            log.info("router: %s not taken by this controller (%s)", name, ex)

    def online(self, url: str, version_info=None) -> None:
        self._online_url, self._online_version = url, dict(version_info or {})
        self.link.online(url, self._online_version)

    def reconcile_now(self, timeout: float | None = None) -> None:
        """In-process: never disconnected, nothing to report again."""

    def close(self) -> None:
        self.link.unwatch()

    # -- what this member tells ----------------------------------------------------------------
    def watch(self, revoked) -> None:
        self.link.watch(revoked)

    def watch_trusted_cas(self, changed) -> None:
        self.link.watch_trusted_cas(changed)

    def watch_peers(self, returned) -> None:
        self.link.watch_peers(returned)

    def watch_routes(self, deliver) -> None:
        self.link.watch_routes(deliver)

    def watch_state(self, report, reconciled) -> None:
        """In-process: never reconnects."""

    def watch_edge_faults(self, changed) -> None:
        self.link.watch_edge_faults(changed)

    def start_watching(self) -> None:
        """The member list now and whenever it (or this member's leadership) changes; the OIDC keys."""
        if self.local_tokens is not None:
            self.link.watch_oidc_keys(self.local_tokens.set_keys)
        self.link.watch_ctrl_endpoints(lambda: threading.Thread(target=self._tell, daemon=True).start())
        threading.Thread(target=self._tell, name="router-members", daemon=True).start()

    def _tell(self) -> None:
        """Off the signalling thread (raft's may hold what the store lock waits for): read the list, hand it on."""
        with self._telling:
            endpoints = self.link.ctrl_endpoints()
            if endpoints and endpoints["controllers"] and self.members_changed is not None:
                self.members_changed(self, endpoints)
