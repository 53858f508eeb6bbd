"""One cluster member: its raft side started before the controller's services, its membership, its status.

A member's data folder holds its own store (``db/``), PKI (``pki/``: the cluster's
CA files, its own server certificate) and raft files (``raft/``). The members are
listed in the replicated table ``clusterMembers`` (id = instance id, API and raft
addresses, server certificate), which each member writes for itself once it has
caught up; a restarted member finds its partners there.

The raft transport is PySyncObj's TCP, encrypted with a password derived from the
cluster's root CA key (HKDF-SHA256): only holders of the trust domain's CA can
talk raft. A new member asks a running one to add it through the fabric API's
``cluster/add-member`` (as an admin), which is how ``ziti ops cluster add`` works too. A member's raft address is its API port + ``RAFT_PORT_OFFSET``
unless given (``raft_port_for``), so ``--cluster-member tls:HOST:PORT`` (an API
address, as the real quickstart's) names the raft address too.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from controller.cluster.settings import RaftSettings
from controller.errors import ClusterNoLeader

log = logging.getLogger(__name__)

MEMBERS_TABLE = "clusterMembers"
RAFT_PORT_OFFSET = 10000
READY_TIMEOUT = 60.0


def raft_port_for(api_port: int) -> int:
    """The raft port of a member whose API listens on ``api_port`` (documented, deterministic)."""
    port = api_port + RAFT_PORT_OFFSET
    return port if port <= 65535 else api_port - RAFT_PORT_OFFSET


def raft_address_of(member: str) -> str:
    """``tls:HOST:PORT`` or ``HOST:PORT`` of a member's API -> its raft ``HOST:PORT``."""
    text = member.split(":", 1)[1] if member.startswith(("tls:", "tcp:")) else member
    host, _, port = text.rpartition(":")
    return f"{host.strip('[]')}:{raft_port_for(int(port))}"


@dataclass
class ClusterConfig:
    """What makes a controller a cluster member."""

    instance_id: str
    #: this member's raft ``HOST:PORT`` (bind and advertise)
    raft_address: str
    #: raft addresses of members to join (first start of a member added to a running cluster); empty: a new cluster
    join: list[str] = field(default_factory=list)
    settings: RaftSettings = field(default_factory=RaftSettings)
    #: ``fn(cluster)``: ask a running member to add this one (first start of a joining member); raises until done
    ask_to_join: Callable[[Cluster], None] | None = None
    #: this member's API address as ``tls:HOST:PORT`` (what ``add-member`` is given)
    api_address: str = ""


class RaftPortInUse(OSError):
    """This member's raft port cannot be bound (the start reports it as it reports any listener's)."""

    def __init__(self, host: str, port: int):
        import errno

        super().__init__(errno.EADDRINUSE, f"raft port {port} on {host} is in use")
        self.host, self.port = host, port


def cluster_password(root_key) -> str:
    """The raft transport's password: derived from the trust domain's root CA key, never stored."""
    raw = root_key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"ziti-cluster-raft").derive(raw)
    return derived.hex()


class Cluster:
    """A started member: the replicator under its store, and what the APIs ask of the cluster."""

    def __init__(self, store, folder: Path, config: ClusterConfig, password: str):
        from controller.cluster.replication import Replicator  # the engine loads in cluster mode only

        self.store = store
        self.config = config
        self.instance_id = config.instance_id
        self.address = config.raft_address
        known = [r["raftAddress"] for r in store.all(MEMBERS_TABLE) if r["raftAddress"] != self.address]
        partners = list(dict.fromkeys([*known, *(a for a in config.join if a != self.address)]))
        self._password = password
        self._faults: dict[str, dict] = {}  # simulated partitions by id
        self._faults_lock = threading.Lock()
        self._fault_ids = itertools.count(1)
        #: ``fn(**fields)``: publish a cluster event (set by the app: the controller's events)
        self.on_event = None
        self._was_leader = False
        #: ``fn()`` of each control channel told the members' ctrl addresses (``watch_ctrl_endpoints``)
        self._endpoint_watchers: list[Callable[[], None]] = []
        store.add_listener(self._members_committed)
        self.replicator = Replicator(
            store,
            folder,
            self.address,
            partners,
            member_id=self.instance_id,
            settings=config.settings,
            password=password,
            on_state=self._state_changed,
        )
        self._bound()
        if config.join and config.ask_to_join is not None and store.get(MEMBERS_TABLE, self.instance_id) is None:
            self._ask_to_join()
        self._wait_ready()

    def _bound(self) -> None:
        """PySyncObj binds the raft port on its thread and, when it cannot, keeps trying in silence: a member whose
        port is taken (by anything, between the start's port check and now) would wait for a leader until it
        gave up. :class:`RaftPortInUse` instead, once ``RaftSettings.bind_retries`` attempts failed."""
        from pysyncobj import SyncObjException

        try:
            self.replicator.raft.waitBinded()
        except SyncObjException:
            self.replicator.close()
            host, _, port = self.address.rpartition(":")
            raise RaftPortInUse(host, int(port)) from None

    def _ask_to_join(self) -> None:
        """Have the cluster add this member: ``config.ask_to_join`` (the composition root's request to a
        member's ``/fabric/v1/cluster/add-member``) is retried in the background until one succeeds."""
        ask = self.config.ask_to_join

        def keep_asking() -> None:
            deadline = time.monotonic() + READY_TIMEOUT
            while time.monotonic() < deadline and not self.replicator.raft.isReady():
                try:
                    ask(self)
                    return
                except Exception as ex:  # not up yet, no leader yet: ask again
                    log.info("cluster: not added yet: %s", ex)
                time.sleep(0.5)

        threading.Thread(target=keep_asking, name="cluster-join", daemon=True).start()

    def _state_changed(self) -> None:
        """On the raft thread: a change of raft state; leadership gained or lost is a ``cluster`` event."""
        replicator = getattr(self, "replicator", None)
        if self.on_event is None or replicator is None or getattr(replicator, "raft", None) is None:
            return  # announced once the events exist (``announce``)
        leader = replicator.is_leader
        if leader == self._was_leader:
            return
        self._was_leader = leader
        kind = "leadership.gained" if leader else "leadership.lost"
        self.on_event(eventType=kind, leaderId=self.instance_id if leader else "")
        self._tell_endpoint_watchers()

    # -- the members' control channel addresses, as routers are told them ----------

    def ctrl_endpoints(self) -> dict:
        """What a router is told (the real ``UpdateCtrlAddresses``): every member's control channel address by id,
        the raft index they are as of, and whether this member leads."""
        records = sorted(self.store.all(MEMBERS_TABLE), key=lambda r: r["id"])
        return {
            "controllers": [{"id": r["id"], "address": r["ctrlAddress"]} for r in records if r.get("ctrlAddress")],
            "index": self.replicator.applied_index,
            "isLeader": self.replicator.is_leader,
        }

    def watch_ctrl_endpoints(self, changed: Callable[[], None]) -> Callable[[], None]:
        """Call ``changed()`` (quick, any thread) when a member's record changes or this member gains or loses the
        leadership; returns the unwatch function."""
        self._endpoint_watchers.append(changed)

        def unwatch() -> None:
            if changed in self._endpoint_watchers:
                self._endpoint_watchers.remove(changed)

        return unwatch

    def _members_committed(self, changes) -> None:
        if any(change.table == MEMBERS_TABLE for change in changes):
            self._tell_endpoint_watchers()

    def _tell_endpoint_watchers(self) -> None:
        for changed in list(self._endpoint_watchers):
            try:
                changed()
            except Exception:  # noqa: BLE001 - one router's channel must not stop the others'
                log.exception("cluster: telling a router the members failed")

    def announce(self, on_event) -> None:
        """Publish cluster events through ``on_event(**fields)`` from now on (this member's state first)."""
        self.on_event = on_event
        self._state_changed()

    def _wait_ready(self) -> None:
        """Until this member has applied what the leader had committed when it heard from it."""
        deadline = time.monotonic() + READY_TIMEOUT
        while not self.replicator.raft.isReady():
            if time.monotonic() > deadline:
                raise ClusterNoLeader(cause={"reason": "this member could not reach the cluster to catch up"})
            time.sleep(0.02)

    def until_written(self, write: Callable[[], None]) -> None:
        """Run ``write`` (idempotent start-up writes) until the cluster commits it, up to ``READY_TIMEOUT``."""
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                write()
                return
            except ClusterNoLeader:
                if time.monotonic() > deadline:
                    raise
                log.info("cluster: start-up writes wait for a leader")
                time.sleep(0.5)

    def register(self, api_address: str, server_cert_pem: str, version: str, ctrl_address: str | None = None) -> None:
        """This member's record in ``clusterMembers`` (a replicated write), when it changed. ``ctrl_address``: its
        control channel (``tls:HOST:PORT``), which routers are told so they connect to every member."""
        record = {
            "id": self.instance_id,
            "apiAddress": api_address,
            "ctrlAddress": ctrl_address,
            "raftAddress": self.address,
            "serverCert": server_cert_pem,
            "version": version,
        }
        if self.store.get(MEMBERS_TABLE, self.instance_id) != record:
            self.store.put(MEMBERS_TABLE, self.instance_id, record)

    def peer_keys(self) -> dict:
        """The other members' token signing keys, ``{kid: (public key, alg)}``, from their records."""
        from controller.pki.certs import fingerprint

        records = [r for r in self.store.all(MEMBERS_TABLE) if r["id"] != self.instance_id and r.get("serverCert")]
        marker = tuple((r["id"], r["serverCert"]) for r in records)
        if marker != getattr(self, "_peer_marker", None):
            from cryptography import x509

            keys = {}
            for record in records:
                cert = x509.load_pem_x509_certificates(record["serverCert"].encode())[0]
                key = cert.public_key()
                keys[fingerprint(cert)] = (key, _public_alg(key))
            self._peer_keys, self._peer_marker = keys, marker
        return self._peer_keys

    # -- what the APIs show ----------------------------------------------------

    def members(self) -> list[dict]:
        """Every voting member: id, addresses, leader, connected, version (self first, then by id)."""
        raft = self.replicator.raft
        by_address = {r["raftAddress"]: r for r in self.store.all(MEMBERS_TABLE)}
        leader = self.replicator.leader
        rows = []
        for node in [raft.selfNode, *sorted(raft.otherNodes, key=lambda n: n.id)]:
            record = by_address.get(node.id, {})
            rows.append(
                {
                    "id": record.get("id", node.id),
                    "address": node.id,
                    "apiAddress": record.get("apiAddress"),
                    "ctrlAddress": record.get("ctrlAddress"),
                    "version": record.get("version", ""),
                    "isVoter": True,
                    "isLeader": node.id == leader,
                    "isConnected": node is raft.selfNode or raft.isNodeConnected(node),
                    "serverCert": record.get("serverCert"),
                }
            )
        return rows

    @property
    def is_leader(self) -> bool:
        return self.replicator.is_leader

    def member_address(self, member_id: str) -> str | None:
        """A member's raft address by instance id (or raft address)."""
        record = self.store.get(MEMBERS_TABLE, member_id)
        if record is not None:
            return record["raftAddress"]
        known = {r["raftAddress"] for r in self.store.all(MEMBERS_TABLE)}
        return member_id if member_id in known else None

    def add_member(self, raft_address: str) -> str | None:
        """None once the cluster added it, else why not."""
        return self._membership("add", raft_address)

    def remove_member(self, raft_address: str) -> str | None:
        """None once the cluster removed it, else why not."""
        result = self._membership("remove", raft_address)
        if result is None:
            for record in self.store.all(MEMBERS_TABLE):
                if record["raftAddress"] == raft_address:
                    self.store.delete(MEMBERS_TABLE, record["id"])
        return result

    def transfer_leadership(self, raft_address: str | None) -> str | None:
        """None once the leader asked the member (None: the most caught-up one) to take over, else why not."""
        return self._call(lambda cb: self.replicator.raft.transferLeadership(raft_address, callback=cb))

    def _membership(self, verb: str, raft_address: str) -> str | None:
        raft = self.replicator.raft
        if verb == "add":
            return self._call(lambda cb: raft.addNodeToCluster(raft_address, callback=cb))
        return self._call(lambda cb: raft.removeNodeFromCluster(raft_address, callback=cb))

    def _call(self, start) -> str | None:
        from pysyncobj import FAIL_REASON

        done = threading.Event()
        outcome: list[int] = []

        def callback(_result, error):
            outcome.append(error)
            done.set()

        start(callback)
        if not done.wait(self.config.settings.write_timeout):
            return "unknown outcome"
        if outcome[0] == FAIL_REASON.SUCCESS:
            return None
        names = {value: name for name, value in vars(FAIL_REASON).items() if name.isupper()}
        return names.get(outcome[0], str(outcome[0])).lower().replace("_", " ")

    # -- simulated partitions (``/simulation/cluster-faults``, ``ZitiCluster.cut_off``) -------------

    def cut_off(self, members: list[str] | None = None) -> dict:
        """Cut this member's raft traffic with ``members`` (ids or raft addresses; None: every other member).

        The member keeps running: its API serves reads; writes fail once it has no quorum.
        Returns the fault's view; ``reconnect`` heals it.
        """
        from controller.errors import FieldError

        others = {node.id for node in self.replicator.raft.otherNodes}
        if members is None:
            addresses = others
        else:
            addresses = set()
            for member in members:
                address = self.member_address(member)
                if address is None or address not in others:
                    raise FieldError("members", f"no other member of this cluster is named {member!r}", member)
                addresses.add(address)
        with self._faults_lock:
            fault = {"id": f"cut-off-{next(self._fault_ids)}", "addresses": sorted(addresses)}
            self._faults[fault["id"]] = fault
            self._apply_faults()
        return self._fault_view(fault)

    def reconnect(self, fault_id: str | None = None) -> None:
        """Heal one cut-off (``fault_id``) or every one."""
        from controller.errors import NotFound

        with self._faults_lock:
            if fault_id is None:
                self._faults.clear()
            elif self._faults.pop(fault_id, None) is None:
                raise NotFound("cluster fault", fault_id)
            self._apply_faults()

    def faults(self) -> list[dict]:
        with self._faults_lock:
            return [self._fault_view(fault) for fault in self._faults.values()]

    def _apply_faults(self) -> None:
        self.replicator.cut_off({a for fault in self._faults.values() for a in fault["addresses"]})

    def _fault_view(self, fault: dict) -> dict:
        by_address = {r["raftAddress"]: r["id"] for r in self.store.all(MEMBERS_TABLE)}
        return {
            "id": fault["id"],
            "members": [{"id": by_address.get(a, a), "raftAddress": a} for a in fault["addresses"]],
        }

    def close(self) -> None:
        self.replicator.close()


def _public_alg(key) -> str:
    """The JWT algorithm a member signs with, from its certificate's public key (as ``ControllerPKI``)."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if isinstance(key, rsa.RSAPublicKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return {256: "ES256", 384: "ES384", 521: "ES512"}[key.curve.key_size]
    return "EdDSA"
