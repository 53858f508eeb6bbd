"""Edge routers as their own processes, driven from Python: start, kill, restart, pause, wait online.

A :class:`RouterProcess` is one edge router created over the management API, enrolled with
``python -m router enroll`` from its JWT (written owner-only) and run with ``python -m router run
--ready-file``; it reaches the controller only over the control channel (``docs/control-channel.md``).
A :class:`RouterNetwork` is a controller with its control channel open and the routers it runs,
by name: what ``ziti-harness up`` starts for the ``process: true`` routers of a network file and
what the pytest fixture ``ziti_router_network`` gives. Faults: cut or slow a link (the fabric API), drop or
delay one router's edge messages for a while (``drop_edge``, ``delay_edge``: the simulation endpoints,
timed on the controller's clock).

Every wait polls a real process or the management API with a bounded deadline and fails with one
line naming the router (:class:`RouterError`, with the exit code a command line uses: 3 when the
router cannot reach the controller or never comes online, 4 when this machine refuses it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

from harness.processes.files import private_folder, write_private

#: seconds a router is given to enroll, come online, go offline or link (polled, never slept)
DEADLINE = 20.0
#: the repository root: routers run this checkout's ``router`` package
ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE, LOCAL = 3, 4


class RouterError(RuntimeError):
    """A router that did not come up (or go down) as asked: one line naming it, and an exit code."""

    def __init__(self, message: str, code: int = UNREACHABLE):
        super().__init__(message)
        self.code = code


def router_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "router", "--log-level", "info", *args]


def poll(predicate: Callable[[], object], timeout: float, failure: Callable[[], Exception]):
    """``predicate()`` once truthy, polling real processes or the API; ``failure()`` is raised at the deadline."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise failure()
        time.sleep(0.05)


def free_port(host: str = "127.0.0.1") -> int:
    from harness.processes.server import free_port as probe

    return probe(host)


# -- faults on one router's edge messages (the controller's simulation endpoints) ------------------------------


def add_edge_fault(
    admin,
    router: str,
    *,
    drop: bool = False,
    latency_ms: int = 0,
    seconds: float | None = None,
    direction: str = "both",
    content_types: Iterable[str] = (),
) -> str:
    """Drop or delay the edge messages of ``router`` (an edge router's id or name); returns the fault's id.

    ``seconds`` on the controller's clock (in simulation mode advancing the clock ends it), or None: until
    removed. ``direction``: ``fromSdk``, ``toSdk`` or ``both``; ``content_types``: edge protocol names
    (``Data``, ``Connect``, ``Dial``...), none meaning every message. Needs a controller in simulation mode.
    """
    from harness.client import ApiError

    body: dict = {"router": router, "direction": direction}
    if drop:
        body["drop"] = True
    if latency_ms:
        body["latencyMs"] = latency_ms
    if seconds is not None:
        body["seconds"] = seconds
    if content_types:
        body["contentTypes"] = list(content_types)
    try:
        return admin.management.create_simulation_router_fault(body=body)["id"]
    except ApiError as ex:
        raise _fault_error(admin, ex, router) from None


def edge_faults(admin, router: str | None = None) -> list[dict]:
    """The faults on routers' edge messages (of ``router``, an id or name, if given), with remaining time and hits."""
    from harness.client import ApiError

    try:
        faults = admin.management.list_simulation_router_faults()
    except ApiError as ex:
        raise _fault_error(admin, ex, router) from None
    return [f for f in faults if router is None or router in (f["router"]["id"], f["router"]["name"])]


def clear_edge_faults(admin, router: str | None = None) -> int:
    """Remove the edge faults of ``router`` (every router's if None); returns how many were removed."""
    from harness.client import ApiError

    faults = edge_faults(admin, router)
    if router is None:
        admin.management.delete_simulation_router_faults()
        return len(faults)
    for fault in faults:
        try:
            admin.management.delete_simulation_router_fault(fault["id"])
        except ApiError as ex:
            if ex.status != 404:  # ended meanwhile: gone is what was asked
                raise
    return len(faults)


def _fault_error(admin, ex, router: str | None) -> Exception:
    """One line saying what to do: no simulation mode, an unknown router, or the controller's own reason."""
    if ex.status == 404:
        if admin.management.call("detailSimulationClock", raw=True).status_code == 404:
            return RouterError(
                "the controller is not in simulation mode: start it with --simulation "
                "(LocalController(simulation=True), start_router_network(simulation=True))",
                1,
            )
        return RouterError(f"no edge router {router!r} on the controller", 1)
    cause = ex.cause if isinstance(ex.cause, dict) else {}
    return RouterError(f"the controller refused the fault: {cause.get('reason') or ex.message}", 1)


class RouterProcess:
    """One edge router as its own process, named ``name`` on the controller ``admin`` is logged in to.

    ``data_dir``, ``log`` and ``ready_file`` are its files (``ready`` the ready file's content, ``url`` its address
    for SDKs); ``listing()`` is how the fabric API shows it, ``edge_listing()`` the edge management API. A failure
    to enroll or start raises :class:`RouterError` with the router command's last error line; a test of that command
    line's own messages and exit codes runs ``python -m router`` itself (:func:`router_command`).

    Args:
        admin: a logged-in admin client (over HTTP or in-process) of the controller.
        name: the edge router's name (created unless it exists, e.g. applied from a network file).
        folder: where its data folder (``folder/name``), JWT, log and ready file go (made owner-only).
        roles: role attributes of a router this creates.
        tunneler: ``isTunnelerEnabled`` of a router this creates.
        cost: ``cost`` of a router this creates.
        link_listener: enroll with a link address (a free port) so other routers can link to it.
    """

    def __init__(
        self,
        admin,
        name: str,
        folder: str | Path,
        *,
        roles: Iterable[str] = (),
        tunneler: bool = False,
        cost: int = 0,
        link_listener: bool = False,
        host: str = "127.0.0.1",
    ):
        self.admin, self.name, self.host = admin, name, host
        self.folder = private_folder(folder)
        self.data_dir = self.folder / name
        self.jwt_file = self.folder / f"{name}.jwt"
        self.ready_file = self.folder / f"{name}.ready.json"
        #: what the router process prints (its log lines carry no key, certificate or token)
        self.log = self.folder / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.ready: dict = {}
        self._body = {"name": name, "roleAttributes": list(roles), "isTunnelerEnabled": tunneler, "cost": cost}
        self._link_listener = link_listener
        self._enrolling: subprocess.Popen | None = None
        self.id: str | None = None

    def __repr__(self) -> str:
        return f"RouterProcess({self.name!r}, pid={self.pid}, url={self.ready.get('url')!r})"

    # -- creation and enrollment -----------------------------------------------------
    def create(self) -> str:
        """Create the edge router over the management API (or find it by name); return its id."""
        from harness.client.filters import name_is

        found = list(self.admin.management.iterate("listEdgeRouters", filter=name_is(self.name)))
        self.id = found[0]["id"] if found else self.admin.management.create_edge_router(body=self._body)["id"]
        return self.id

    @property
    def enrolled(self) -> bool:
        return (self.data_dir / "config.json").exists()

    def begin_enroll(self) -> None:
        """Write the router's enrollment JWT owner-only and start ``python -m router enroll`` (see ``end_enroll``)."""
        if self.id is None:
            self.create()
        token = self.admin.management.detail_edge_router(self.id).get("enrollmentJwt")
        if not token:
            raise RouterError(f"router {self.name} has no enrollment JWT: enrolled before, without its data folder?")
        write_private(self.jwt_file, token)  # APPSEC(secrets-at-rest): a credential until used
        extra = ["--link-advertise", f"{self.host}:{free_port(self.host)}"] if self._link_listener else []
        command = router_command("enroll", str(self.jwt_file), "--data", str(self.data_dir), *extra)
        with self._open_log() as log:
            self._enrolling = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

    def end_enroll(self, timeout: float = DEADLINE) -> None:
        proc, self._enrolling = self._enrolling, None
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise RouterError(f"router {self.name} did not enroll within {timeout:g} s (see {self.log})") from None
        finally:
            self.jwt_file.unlink(missing_ok=True)  # used (or refused): never left behind
        if code != 0:
            raise RouterError(
                f"router {self.name} did not enroll (exit {code}: {self._last_error()})",
                LOCAL if code == LOCAL else UNREACHABLE,
            )

    def enroll(self, timeout: float = DEADLINE) -> "RouterProcess":
        """Create (if needed) and enroll the router; a folder enrolled before is kept as it is."""
        if not self.enrolled:
            self.begin_enroll()
            self.end_enroll(timeout)
        return self

    # -- the process -----------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def url(self) -> str | None:
        """The router's ``tls://`` address for SDKs (as of its last start)."""
        return self.ready.get("url")

    def launch(self) -> None:
        """Start ``python -m router run`` without waiting (see ``wait_ready``)."""
        if self.running:
            raise RouterError(f"router {self.name} is already running (pid {self.pid})", 1)
        if self.id is None:
            self.create()
        self.enroll()
        self.ready_file.unlink(missing_ok=True)
        command = router_command("run", "--data", str(self.data_dir), "--ready-file", str(self.ready_file))
        with self._open_log() as log:
            self.proc = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = DEADLINE) -> dict:
        """The ready file's content once the router wrote it (it is online then); RouterError if it exits."""
        poll(
            lambda: self.ready_file.exists() or self.proc.poll() is not None,
            timeout,
            lambda: RouterError(f"router {self.name} did not come up within {timeout:g} s (see {self.log})"),
        )
        code = self.proc.poll()
        if code is not None:
            raise RouterError(
                f"router {self.name} exited with {code} at start ({self._last_error()})",
                LOCAL if code == LOCAL else UNREACHABLE,
            )
        self.ready = json.loads(self.ready_file.read_text())
        return self.ready

    def start(self, timeout: float = DEADLINE) -> "RouterProcess":
        """Create, enroll (once) and run the router; return once it is online."""
        self.launch()
        self.wait_ready(timeout)
        return self

    def signal(self, sig: int) -> None:
        if not self.running:
            raise RouterError(f"router {self.name} is not running", 1)
        self.proc.send_signal(sig)  # a no-op once the process is reaped, never another process's pid

    def kill(self) -> None:
        """SIGKILL: the router vanishes without a word to the controller."""
        self.signal(signal.SIGKILL)
        self.proc.wait(DEADLINE)

    def pause(self) -> None:
        """SIGSTOP: the process stays, silent (the controller notices missed heartbeats)."""
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        self.signal(signal.SIGCONT)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (SIGKILL if it does not exit within ``timeout``); the exit code, None if it never ran."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGCONT)  # a paused router must run to exit
                self.proc.terminate()
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait(timeout)

    def restart(self, timeout: float = DEADLINE) -> "RouterProcess":
        """Stop (if running) and start again; returns once online."""
        self.stop()
        return self.start(timeout)

    # -- faults on its edge messages (simulation mode) ---------------------------------
    def drop_edge(
        self, seconds: float | None = None, *, direction: str = "both", content_types: Iterable[str] = ()
    ) -> str:
        """Drop this router's edge messages for ``seconds`` on the controller's clock (None: until cleared)."""
        return add_edge_fault(
            self.admin,
            self.id or self.name,
            drop=True,
            seconds=seconds,
            direction=direction,
            content_types=content_types,
        )

    def delay_edge(
        self,
        latency_ms: int,
        seconds: float | None = None,
        *,
        direction: str = "both",
        content_types: Iterable[str] = (),
    ) -> str:
        """Hold each of this router's edge messages ``latency_ms`` before it goes on, for ``seconds`` (see drop)."""
        return add_edge_fault(
            self.admin,
            self.id or self.name,
            latency_ms=latency_ms,
            seconds=seconds,
            direction=direction,
            content_types=content_types,
        )

    def edge_faults(self) -> list[dict]:
        """This router's edge faults as the controller lists them (remaining time, hits)."""
        return edge_faults(self.admin, self.id or self.name)

    def clear_edge_faults(self) -> int:
        return clear_edge_faults(self.admin, self.id or self.name)

    # -- what the controller says ----------------------------------------------------
    def listing(self) -> dict:
        """The router as ``GET /fabric/v1/routers/{id}`` shows it."""
        return self.admin.fabric.detail_router(self.id)

    def edge_listing(self) -> dict:
        """The router as ``GET /edge/management/v1/edge-routers/{id}`` shows it: ``isOnline``, ``isVerified``,
        ``supportedProtocols``, and ``enrollmentJwt`` until it is enrolled."""
        return self.admin.management.detail_edge_router(self.id)

    def online(self) -> bool:
        return bool(self.listing().get("connected"))

    def wait_online(self, timeout: float = DEADLINE) -> "RouterProcess":
        poll(self.online, timeout, lambda: RouterError(f"router {self.name} is not online after {timeout:g} s"))
        return self

    def wait_offline(self, timeout: float = DEADLINE) -> "RouterProcess":
        poll(
            lambda: not self.online(),
            timeout,
            lambda: RouterError(f"router {self.name} is still online after {timeout:g} s", 1),
        )
        return self

    def _open_log(self):
        descriptor = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.fchmod(descriptor, 0o600)  # owner-only whatever the umask, as the rest of the folder
        return os.fdopen(descriptor, "a")

    def _last_error(self) -> str:
        lines = [line for line in self.log.read_text(errors="replace").splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("error:")]
        return (errors or lines or ["no output"])[-1].removeprefix("error: ")


def linked_pairs(admin) -> set[frozenset[str]]:
    """The router id pairs ``/fabric/v1/links`` shows connected and not down (either direction)."""
    pairs = set()
    for link in admin.fabric.iterate("listLinks", page_size=500):
        if link.get("state") == "Connected" and not link.get("down"):
            pairs.add(frozenset((link["sourceRouter"]["id"], link["destRouter"]["id"])))
    return pairs


class RouterNetwork:
    """A controller with its control channel open and process routers by name.

    ``network["er-a"]`` is a :class:`RouterProcess`; ``stop()`` stops them all (the controller too when
    this object started it).
    """

    def __init__(self, admin, folder: str | Path, *, controller=None):
        self.admin = admin
        self.folder = private_folder(folder)
        #: the :class:`~harness.processes.server.LocalController` when this network started it
        self.controller = controller
        self.routers: dict[str, RouterProcess] = {}
        #: router name pairs expected linked (``links:`` of a network file)
        self.expected_links: set[frozenset[str]] = set()

    def __getitem__(self, name: str) -> RouterProcess:
        return self.routers[name]

    def __iter__(self):
        return iter(self.routers.values())

    def __len__(self) -> int:
        return len(self.routers)

    @property
    def names(self) -> list[str]:
        return list(self.routers)

    def add(self, name: str, *, links: Iterable[str] = (), **options) -> RouterProcess:
        """Declare a router (created and enrolled at :meth:`start`) and the routers it must link to."""
        links = list(links)
        router = RouterProcess(self.admin, name, self.folder, link_listener=True, **options)
        self.routers[name] = router
        self.expected_links.update(frozenset((name, other)) for other in links)
        return router

    def start(self, timeout: float = DEADLINE) -> "RouterNetwork":
        """Enroll and run every router not running (in parallel), wait until each is online and linked."""
        waiting = [router for router in self if not router.running]
        for router in waiting:
            if router.id is None:
                router.create()
            if not router.enrolled:
                router.begin_enroll()
        try:
            for router in waiting:
                if router._enrolling is not None:
                    router.end_enroll(timeout)
            for router in waiting:
                router.launch()
            for router in waiting:
                router.wait_ready(timeout)
            for router in waiting:
                router.wait_online(timeout)
            self.wait_linked(timeout=timeout)
        except BaseException:
            for router in waiting:  # enrollments still running: ended, their JWTs removed
                if router._enrolling is not None:
                    router._enrolling.kill()
                    router._enrolling.wait()
                    router._enrolling = None
                    router.jwt_file.unlink(missing_ok=True)
            self.stop_routers()
            raise
        return self

    def wait_linked(self, pairs: Iterable[tuple[str, str]] | None = None, timeout: float = DEADLINE) -> None:
        """Wait until every pair (default: the expected links) shows in ``/fabric/v1/links``."""
        wanted = {frozenset(pair) for pair in pairs} if pairs is not None else set(self.expected_links)
        if not wanted:
            return
        ids = {name: router.id for name, router in self.routers.items()}

        def missing() -> list[tuple[str, str]]:
            have = linked_pairs(self.admin)
            return sorted(tuple(sorted(pair)) for pair in wanted if frozenset(ids[n] for n in pair) not in have)

        def failure() -> RouterError:
            a, b = missing()[0]
            return RouterError(f"routers {a} and {b} are not linked after {timeout:g} s (GET /fabric/v1/links)")

        poll(lambda: not missing(), timeout, failure)

    # -- faults on links (the controller's path selection reads ``down`` and ``staticCost``) ----------------
    def links_between(self, a: str, b: str) -> list[dict]:
        """The live links between routers ``a`` and ``b`` (either direction) as ``/fabric/v1/links`` shows them."""
        pair = frozenset((self.routers[a].id, self.routers[b].id))
        return [
            link
            for link in self.admin.fabric.iterate("listLinks", page_size=500)
            if frozenset((link["sourceRouter"]["id"], link["destRouter"]["id"])) == pair
        ]

    def cut_link(self, a: str, b: str) -> None:
        """Mark the links between ``a`` and ``b`` down: no new circuit crosses them until :meth:`restore_link`."""
        self._patch_links(a, b, {"down": True})

    def restore_link(self, a: str, b: str) -> None:
        self._patch_links(a, b, {"down": False})

    def slow_link(self, a: str, b: str, static_cost: int) -> None:
        """Give the links between ``a`` and ``b`` a static cost: paths avoid them while a cheaper one exists."""
        self._patch_links(a, b, {"staticCost": static_cost})

    def _patch_links(self, a: str, b: str, body: dict) -> None:
        links = self.links_between(a, b)
        if not links:
            raise RouterError(f"routers {a} and {b} are not linked (GET /fabric/v1/links)")
        for link in links:
            self.admin.fabric.patch_link(link["id"], body=body)

    # -- faults on one router's edge messages (simulation mode; the controller's clock ends them) ---------------
    def _router_key(self, name: str) -> str:
        """A process router's id, or the name itself (the embedded router, or any router the controller knows)."""
        router = self.routers.get(name)
        return (router.id or name) if router is not None else name

    def drop_edge(
        self, name: str, seconds: float | None = None, *, direction: str = "both", content_types: Iterable[str] = ()
    ) -> str:
        """Drop the edge messages of router ``name`` (a process router or any the controller knows, e.g. the
        embedded one) for ``seconds`` on the controller's clock, or until cleared; returns the fault's id."""
        return add_edge_fault(
            self.admin,
            self._router_key(name),
            drop=True,
            seconds=seconds,
            direction=direction,
            content_types=content_types,
        )

    def delay_edge(
        self,
        name: str,
        latency_ms: int,
        seconds: float | None = None,
        *,
        direction: str = "both",
        content_types: Iterable[str] = (),
    ) -> str:
        """Hold each edge message of router ``name`` ``latency_ms`` before it goes on (see :meth:`drop_edge`)."""
        return add_edge_fault(
            self.admin,
            self._router_key(name),
            latency_ms=latency_ms,
            seconds=seconds,
            direction=direction,
            content_types=content_types,
        )

    def edge_faults(self, name: str | None = None) -> list[dict]:
        """The edge faults (of router ``name``) as the controller lists them, with remaining time and hits."""
        return edge_faults(self.admin, None if name is None else self._router_key(name))

    def clear_edge_faults(self, name: str | None = None) -> int:
        """Remove the edge faults of router ``name`` (of every router if None); how many were removed."""
        return clear_edge_faults(self.admin, None if name is None else self._router_key(name))

    def stop_routers(self) -> None:
        for router in self:
            router.stop()

    def stop(self) -> None:
        self.stop_routers()
        if self.controller is not None:  # started here: the admin client is this network's too
            self.admin.close()
            self.controller.stop()

    def __enter__(self) -> "RouterNetwork":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_router_network(
    n: int = 2, *, folder: str | Path | None = None, prefix: str = "router", timeout: float = DEADLINE, **controller
) -> RouterNetwork:
    """A :class:`~harness.processes.server.LocalController` with its control channel and ``n`` process routers, online.

    Routers are named ``{prefix}-1`` .. ``{prefix}-n`` with the attributes ``{prefix}`` and ``public``:
    the quickstart policies let every identity use every ``#public`` router for every service. ``stop()`` stops the routers and the controller.
    """
    import tempfile

    from harness.client import ZitiClient
    from harness.processes.server import LocalController

    controller.setdefault("quickstart_policies", True)
    local = LocalController(ctrl=True, **controller).start()
    try:
        admin = ZitiClient.connect(local.url)
        admin.login("admin", local.config.admin_password)
        folder = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="ziti-routers-", dir=local.data_dir))
        network = RouterNetwork(admin, folder, controller=local)
        for index in range(1, n + 1):
            network.add(f"{prefix}-{index}", roles=[prefix, "public"])
        return network.start(timeout)
    except BaseException:
        local.stop()
        raise
