"""Several in-process routers on one controller, for link and multi-hop tests.

Each router has its own ``RouterLink`` (``controller.app.router_link(ctl, name=...)``), exactly as the
embedded router; identities reach only the routers their edge router policies name.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from pathlib import Path

from controller.app import router_link
from harness.client import ZitiClient
from harness.processes.quickstart import enroll_identity
from router import EdgeRouter


@dataclass
class Net:
    """Routers by short name, the admin client, the controller and its timeline."""

    local: object
    admin: ZitiClient
    timeline: object
    folder: Path
    stem: str
    routers: dict[str, EdgeRouter] = field(default_factory=dict)
    links: dict[str, object] = field(default_factory=dict)

    @property
    def ctl(self):
        return self.local.controller

    @property
    def fabric(self):
        return self.ctl.routing.fabric

    def name(self, short: str) -> str:
        return f"{self.stem}-{short}"

    def start(self, short: str, **options) -> EdgeRouter:
        """Start (or restart) router ``short``; it carries the attribute ``<stem>-<short>``."""
        name = self.name(short)
        if self.admin.management.list_edge_routers(filter=f'name = "{name}"') == []:
            self.admin.management.create_edge_router(body={"name": name, "roleAttributes": [name]})
        link = router_link(self.ctl, name=name)
        self.links[short] = link
        router = EdgeRouter(link, "127.0.0.1", 0, **options).start()
        self.routers[short] = router
        return router

    def start_together(self, *shorts: str) -> list[EdgeRouter]:
        """Start several routers at once (each in its thread): every one of them lists the others and dials them."""
        with concurrent.futures.ThreadPoolExecutor(len(shorts)) as pool:
            return list(pool.map(self.start, shorts))

    def stop(self, short: str) -> None:
        self.routers.pop(short).stop()

    def id(self, short: str) -> str:
        return self.routers[short].router_id

    def wait_links(self, count: int, timeout: float = 20) -> None:
        """Until ``count`` links are up among this net's routers, one per pair (two routers that dialed each other
        at once keep one of their two)."""
        ids = {r.router_id for r in self.routers.values()}

        def ready() -> bool:
            up = [link for link in self.fabric.links() if link.src_router_id in ids and link.dst_router_id in ids]
            pairs = {frozenset((link.src_router_id, link.dst_router_id)) for link in up}
            return len(up) >= count and len(pairs) == len(up)

        with self.timeline._cond:
            assert self.timeline._cond.wait_for(ready, timeout), f"links: {self.fabric.links()}"

    def link_between(self, a: str, b: str):
        pair = {self.id(a), self.id(b)}
        return next(link for link in self.fabric.links() if {link.src_router_id, link.dst_router_id} == pair)

    def service(self, short: str, *, encrypted: bool = True, strategy: str | None = None) -> str:
        name = self.name(short)
        body = {"name": name, "encryptionRequired": encrypted, "roleAttributes": [name]}
        if strategy:
            body["terminatorStrategy"] = strategy
        self.admin.management.create_service(body=body)
        return name

    def identity(self, who: str, service: str, kind: str | tuple[str, ...], routers: list[str]) -> Path:
        """An enrolled identity that may ``kind`` (Bind/Dial, or both as a tuple) ``service``, only through
        ``routers``."""
        name = self.name(who)
        kinds = (kind,) if isinstance(kind, str) else kind
        for each in kinds:
            self.admin.management.create_service_policy(
                body={
                    "name": name if len(kinds) == 1 else f"{name}-{each.lower()}",
                    "type": each,
                    "semantic": "AnyOf",
                    "identityRoles": [f"#{name}"],
                    "serviceRoles": [f"#{service}"],
                }
            )
        self.admin.management.create_edge_router_policy(
            body={
                "name": name,
                "semantic": "AnyOf",
                "identityRoles": [f"#{name}"],
                "edgeRouterRoles": [f"#{self.name(r)}" for r in routers],
            }
        )
        return enroll_identity(self.admin, name, [name], self.folder / f"{name}.json")

    def close(self) -> None:
        for short in list(self.routers):
            self.stop(short)
