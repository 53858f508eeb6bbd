"""A cluster of controllers as processes (``python -m controller --cluster``), under the harness's control.

``ZitiCluster(size).start()`` starts the first member, copies its CA into each other
member's data folder and starts them with ``--cluster-member`` (each asks the first to add
it), waits for every ready file, and hands out clients per member. ``kill(i)`` is kill -9,
``pause(i)``/``resume(i)`` SIGSTOP/SIGCONT, ``restart(i)`` the same command on the same
folder (the member catches up), ``cut_off(i)``/``reconnect(i)`` stop and restore member i's
raft traffic with the others while it runs (``/simulation/cluster-faults`` on that member:
members run with ``--simulation``). ``leader()`` reads ``/fabric/v1/cluster/list-members``.
Every member binds to loopback; ports are free ones, the raft port beside each.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.client import ApiError, ZitiClient
from harness.processes.routers import free_port

#: where a member writes its events (rotated copies beside it are older)
EVENTS_FILE = "events.jsonl"
#: the members' API and raft ports, kept in the cluster's folder
MEMBERS_FILE = "members.json"
CA_FILES = ("root-ca.cert.pem", "root-ca.key.pem", "intermediate-ca.cert.pem", "intermediate-ca.key.pem")
START_TIMEOUT = 60.0
#: starts of one member again after a port it picked was taken meanwhile by another process
RELAUNCHES = 3


class ClusterError(RuntimeError):
    """A member that did not start; ``log`` is what it printed."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


@dataclass
class Member:
    index: int
    instance_id: str
    folder: Path
    port: int
    raft_port: int
    process: subprocess.Popen | None = None
    log: Path | None = None
    paused: bool = False
    #: what the member wrote in its ready file (``https``, ``http``, ``router``, ``ctrl`` addresses)
    ready: dict = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return f"tls:127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class ZitiCluster:
    """``size`` controller processes forming one cluster; a context manager."""

    size: int = 3
    root: Path | None = None
    admin: tuple[str, str] = ("admin", "admin")
    #: extra ``python -m controller`` options for every member
    options: tuple[str, ...] = (
        "--no-router",
        "--http-port",
        "0",
        "--ctrl-port",
        "0",
        "--log-level",
        "warning",
        "--simulation",  # the cluster fault endpoints (``cut_off``); the clock is real time until advanced
    )
    #: the first member's API port (0: any free one); the others take free ports
    first_port: int = 0
    members: list[Member] = field(default_factory=list)
    #: per member, an admin client signed in before a cut-off (a cut-off member cannot create sessions)
    _fault_clients: dict = field(default_factory=dict)
    _temporary: bool = False

    def start(self) -> ZitiCluster:
        if self.root is None:
            self.root, self._temporary = Path(tempfile.mkdtemp(prefix="ziti-cluster-")), True
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        kept = self.root / MEMBERS_FILE  # a cluster started in this folder before: its members keep their ports
        ports = [tuple(pair) for pair in json.loads(kept.read_text())] if kept.exists() else []
        if ports and len(ports) != self.size:
            raise ValueError(f"{self.root} holds a cluster of {len(ports)} members, not {self.size}")
        for index in range(self.size):
            port, raft_port = ports[index] if ports else _port_pair(self.first_port if index == 0 else 0)
            self.members.append(Member(index, f"ctrl{index + 1}", self.root / f"ctrl{index + 1}", port, raft_port))
        if ports:  # a cluster that ran before: no member is ready before a quorum is up, so start them all first
            for member in self.members:
                self._launch(member)
            for member in self.members:
                self._wait_ready(member)
            return self
        first = self.members[0]
        self._launch(first)
        self._wait_ready(first)
        self._keep_ports()
        for member in self.members[1:]:
            self._copy_ca(member)
            self._launch(member)
            self._wait_ready(member)
            self._keep_ports()
        return self

    def _keep_ports(self) -> None:
        """Write the members' ports (a port taken meanwhile may have moved one) for a start on this folder later."""
        (self.root / MEMBERS_FILE).write_text(json.dumps([[m.port, m.raft_port] for m in self.members]))
        os.chmod(self.root / MEMBERS_FILE, 0o600)

    def add_member(self) -> Member:
        """One more member, joining the running cluster through a live member (as ``ziti edge quickstart join``)."""
        index = len(self.members)
        port, raft_port = _port_pair()
        member = Member(index, f"ctrl{index + 1}", self.root / f"ctrl{index + 1}", port, raft_port)
        self.members.append(member)
        self._copy_ca(member)
        self._launch(member)
        self._wait_ready(member)
        self.size = len(self.members)
        self._keep_ports()
        return member

    def _copy_ca(self, member: Member) -> None:
        """The cluster's CA files into a new member's folder (one trust domain)."""
        pki = member.folder / "pki"
        pki.mkdir(parents=True, exist_ok=True, mode=0o700)
        for name in CA_FILES:
            shutil.copy2(self.members[0].folder / "pki" / name, pki / name)

    @property
    def ca_file(self) -> str:
        return str(self.members[0].folder / "pki" / "root-ca.cert.pem")

    def _command(self, member: Member) -> list[str]:
        command = [sys.executable, "-m", "controller", "--data", str(member.folder), "--instance-id"]
        command += [member.instance_id, "--port", str(member.port)]  # raft: the port + 10000, as documented
        command += ["--ready-file", str(self._ready_file(member)), *self.options]
        others = [m for m in self.members if m is not member and (m.folder / "db").exists()]
        others.sort(key=lambda m: not m.alive)  # a live member to join through first
        if member.index == 0 or not others:
            command.append("--cluster")
        else:
            command += ["--cluster-member", others[0].address]
        return command

    def _ready_file(self, member: Member) -> Path:
        return self.root / f"{member.instance_id}.ready.json"

    def _launch(self, member: Member) -> None:
        self._ready_file(member).unlink(missing_ok=True)
        member.log = self.root / f"{member.instance_id}.log"
        with open(member.log, "ab") as log:
            member.process = subprocess.Popen(
                self._command(member), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        member.paused = False

    def _wait_ready(self, member: Member, timeout: float = START_TIMEOUT) -> None:
        deadline, relaunches = time.monotonic() + timeout, 0
        while not self._ready_file(member).exists():
            if not member.alive:
                text = member.log.read_text()
                last = text[-400:]
                # a free port another process took between its choice and its bind: the member's own API and raft
                # ports can move only before it has data (its cluster knows them), the ports it picks at each start
                # (control channel, router: "0") always can
                fresh = "is in use" in last and ("--ctrl-port" in last or "--router-port" in last)
                movable = not (member.index == 0 and self.first_port) and not (member.folder / "db").exists()
                if relaunches < RELAUNCHES and (fresh or ("is in use" in last and movable)):
                    relaunches += 1
                    if not fresh:
                        member.port, member.raft_port = _port_pair()
                    self._launch(member)
                    continue
                raise ClusterError(f"{member.instance_id} exited: {text[-2000:]}", text)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{member.instance_id} not ready in {timeout} s")
            time.sleep(0.05)
        member.ready = json.loads(self._ready_file(member).read_text())

    # -- faults ----------------------------------------------------------------

    def kill(self, index: int) -> None:
        """kill -9 member ``index`` (nothing flushed, nothing closed)."""
        member = self.members[index]
        if member.alive:
            os.kill(member.process.pid, signal.SIGKILL)
            member.process.wait(10)

    def pause(self, index: int) -> None:
        member = self.members[index]
        os.kill(member.process.pid, signal.SIGSTOP)
        member.paused = True

    def resume(self, index: int) -> None:
        member = self.members[index]
        os.kill(member.process.pid, signal.SIGCONT)
        member.paused = False

    def restart(self, index: int) -> None:
        """Start member ``index`` again on its folder (after ``kill`` or ``stop``); it catches up."""
        member = self.members[index]
        if member.alive:
            self.stop(index)
        self._launch(member)
        self._wait_ready(member)

    def cut_off(self, index: int, *, from_members: list[int] | None = None) -> str:
        """Cut member ``index``'s raft traffic with the others (or ``from_members``) while it keeps running.

        Its API goes on serving reads; its writes fail once it has no quorum. Returns the fault's id.
        """
        client = self._fault_client(index)
        body = {} if from_members is None else {"members": [self.members[i].instance_id for i in from_members]}
        response = client.raw.post(
            "/edge/management/v1/simulation/cluster-faults", json=body, headers={"zt-session": client.session_token}
        )
        if response.status_code != 201:
            raise ApiError(response)
        return response.json()["data"]["id"]

    def reconnect(self, index: int) -> None:
        """Heal every cut-off of member ``index``: it catches up with the cluster."""
        client = self._fault_client(index)
        response = client.raw.delete(
            "/edge/management/v1/simulation/cluster-faults", headers={"zt-session": client.session_token}
        )
        if response.status_code != 200:
            raise ApiError(response)

    def _fault_client(self, index: int) -> ZitiClient:
        port, client = self._fault_clients.get(index, (None, None))
        if client is None or port != self.members[index].port:
            client = self.client(index)
            self._fault_clients[index] = (self.members[index].port, client)
        return client

    def stop(self, index: int) -> None:
        member = self.members[index]
        if member.alive:
            if member.paused:
                self.resume(index)
            member.process.terminate()
            try:
                member.process.wait(15)
            except subprocess.TimeoutExpired:
                member.process.kill()
                member.process.wait(10)

    # -- clients and status ------------------------------------------------------

    def client(self, index: int, *, timeout: float = 15.0) -> ZitiClient:
        """An admin client of member ``index``'s management API (signed in there)."""
        client = ZitiClient.connect(self.members[index].url, ca=self.ca_file, timeout=timeout)
        return client.signed_in(*self.admin)

    def list_members(self, index: int | None = None) -> list[dict]:
        """``/fabric/v1/cluster/list-members`` as member ``index`` (default: the first alive, unpaused) sees it."""
        member = self.members[index] if index is not None else self._reachable()
        with ZitiClient.connect(member.url, ca=self.ca_file, timeout=5.0) as plain:
            client = plain.signed_in(*self.admin)
            response = client.raw.get("/fabric/v1/cluster/list-members", headers={"zt-session": client.session_token})
            if response.status_code != 200:
                raise ApiError(response)
            return response.json()["data"]

    def leader(self, timeout: float = 10.0, *, besides: int | None = None, asking: int | None = None) -> int:
        """The index of the member the first reachable member (or ``asking``) calls leader; waits up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                for row in self.list_members(asking):
                    if row["leader"] and row["connected"]:
                        index = next(m.index for m in self.members if m.address == row["address"])
                        if index != besides:
                            return index
            except Exception:  # a member between lives: ask again
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"no leader in {timeout} s")
            time.sleep(0.05)

    def events(self, namespace: str | None = None) -> list[dict]:
        """Every member's events (its ``events.jsonl``), each with the ``member`` that wrote it, oldest first;
        only ``namespace``'s when given (``"cluster"``: leadership gained and lost)."""
        events = []
        for member in self.members:
            path = member.folder / EVENTS_FILE
            for line in path.read_text().splitlines() if path.exists() else []:
                event = json.loads(line)
                if namespace is None or event.get("namespace") == namespace:
                    events.append({**event, "member": member.instance_id})
        return sorted(events, key=lambda event: event.get("timestamp", ""))

    def _reachable(self) -> Member:
        for member in self.members:
            if member.alive and not member.paused:
                return member
        raise RuntimeError("no member is running")

    def close(self) -> None:
        for _port, client in self._fault_clients.values():
            client.close()
        self._fault_clients.clear()
        for member in self.members:
            if member.process is not None and member.alive:
                self.stop(member.index)
        if self._temporary and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ZitiCluster:
        try:
            return self.start()
        except BaseException:  # a member that did not start: stop the ones that did
            self.close()
            raise

    def __exit__(self, *exc_info) -> None:
        self.close()


def _port_pair(wanted: int = 0) -> tuple[int, int]:
    """A member's API port (``wanted``, or a free one) and its raft port (the API port + 10000), free on loopback
    and, when picked here, both below the kernel's ephemeral range (``free_port``)."""
    import socket

    from controller.cluster.member import raft_port_for
    from controller.server.lifecycle import ephemeral_ports

    if wanted:
        return wanted, raft_port_for(wanted)
    ephemeral = ephemeral_ports()[0]
    for _ in range(200):
        port = free_port()
        raft_port = raft_port_for(port)
        if raft_port >= ephemeral:  # kept below the kernel's own range too: no outgoing connection can take it
            continue  # before the member binds it, at this start or at a restart on the kept ports
        with socket.socket() as probe:
            try:  # as PySyncObj binds it; listen too: Linux refuses a listener beside a TIME-WAIT socket of that
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # port only at listen()
                probe.bind(("127.0.0.1", raft_port))
                probe.listen(1)
            except OSError:
                continue
        return port, raft_port
    raise RuntimeError("no free pair of ports")
