"""Executing an apply quickly: one all-or-nothing import, or concurrent requests.

``harness.network`` decides *what* to do (bodies by kind, changes, prunes);
this module does it. Creates go in one ``importEntities`` request (this
controller's extension: every item checked by its own create operation, in one
transaction) where entities created together refer to each other by
``{"$ref": "kind/name"}``. A controller without the extension (404) gets the
real API instead: each kind's creates, then the updates, sent over ``workers``
concurrent requests (which the controller's group commit turns into shared
fsyncs). Dry runs never come here.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

import httpx
import orjson

from harness.client import ApiError
from harness.client.kinds import KINDS, Kind

WORKERS = 8
IMPORT_TIMEOUT = 1800.0  # seconds: a network of millions of entities is one request
_MARK = "\x00ref:"  # stands for a not-yet-created entity while bodies are planned; never sent


def pending_id(key: str, name: str) -> str:
    """The placeholder id of entity ``name`` of kind ``key``, planned for creation."""
    return f"{_MARK}{key}/{name}"


@dataclass
class Create:
    kind: Kind
    name: str
    body: dict  # may hold pending ids
    after: list[tuple[str, dict]]  # follow-up creates (op id, body), e.g. an identity's password

    @property
    def ref(self) -> str:
        return f"{self.kind.key}/{self.name}"


@dataclass
class Patch:
    kind: Kind
    entity_id: str
    changes: dict  # may hold pending ids


def execute(
    client,
    creates: list[Create],
    patches: list[Patch],
    *,
    workers: int = WORKERS,
    tick: Callable[[int], None] = lambda n: None,
) -> dict[str, str]:
    """Run the creates then the patches; returns the created ids by ``kind/name``."""
    created = _import(client, creates, tick) if creates else {}
    if created is None:
        created = _create_concurrently(client, creates, workers, tick)
    _run_all(
        workers,
        [
            lambda p=p: client.management.call(p.kind.patch_op, p.entity_id, body=resolve(p.changes, created))
            for p in patches
        ],
    )
    return created


def resolve(value: Any, created: dict[str, str]) -> Any:
    """``value`` with every pending id replaced by the id created for it."""
    if isinstance(value, str) and _MARK in value:
        prefix, _, ref = value.partition(_MARK)
        return prefix + created[ref]
    if isinstance(value, dict):
        return {key: resolve(inner, created) for key, inner in value.items()}
    if isinstance(value, list):
        return [resolve(inner, created) for inner in value]
    return value


def _as_refs(value: Any) -> Any:
    """``value`` with every pending id written as the import's ``{"$ref", "prefix"}`` object."""
    if isinstance(value, str) and _MARK in value:
        prefix, _, ref = value.partition(_MARK)
        return {"$ref": ref, "prefix": prefix} if prefix else {"$ref": ref}
    if isinstance(value, dict):
        return {key: _as_refs(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_as_refs(inner) for inner in value]
    return value


def _import(client, creates: list[Create], tick) -> dict[str, str] | None:
    """One importEntities request; None when the controller does not have the extension."""
    items = []
    for create in creates:
        items.append({"op": create.kind.create_op, "ref": create.ref, "body": _as_refs(create.body)})
        items += [{"op": op, "body": _as_refs(body)} for op, body in create.after]
    http, saved = client.http, client.http.timeout
    http.timeout = httpx.Timeout(IMPORT_TIMEOUT)  # one transaction for everything: no per-request deadline fits
    interrupted = None
    try:
        body = orjson.dumps({"items": items}, option=orjson.OPT_NON_STR_KEYS)  # ~20x faster than json=
        reply, interrupted = _answer_of(
            lambda: client.management.call("importEntities", content=body, headers={"Content-Type": "application/json"})
        )
    except ApiError as ex:
        if ex.status not in (404, 405):
            raise
        return None
    finally:
        http.timeout = saved
    tick(len(creates))
    if interrupted is not None:  # the controller applied it all: say so, then stop as asked
        raise interrupted
    return reply["created"]


def _answer_of(send: Callable[[], Any]) -> tuple[Any, KeyboardInterrupt | None]:
    """``send()``'s answer and the Ctrl-C that came while waiting for it, if one did.

    The import is one all-or-nothing transaction on the controller: once sent, it
    is applied whether or not this process waits. So a first Ctrl-C waits for the
    answer (to report what the controller did); a second stops waiting. ``send``
    runs on a thread of its own, started inside the ``try``: a Ctrl-C that lands
    while it starts (it may be sending already) waits too, unless ``send`` had not
    begun, which it then never does.
    """
    import sys

    future: Future = Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():  # False: a Ctrl-C cancelled it before it began
            try:
                future.set_result(send())
            except BaseException as ex:  # noqa: BLE001 - handed to the waiting thread, as an executor does
                future.set_exception(ex)

    try:
        threading.Thread(target=run, name="import").start()
        return future.result(), None
    except KeyboardInterrupt as ex:
        if future.cancel():  # not begun: nothing was sent
            raise
        first = ex
    try:  # a Ctrl-C from here on, even while the line below is printed, is the second
        print(
            "interrupted: waiting for the controller's answer to the import it is applying (Ctrl-C again to "
            "stop waiting)",
            file=sys.stderr,
            flush=True,
        )
        return future.result(), first
    except KeyboardInterrupt:
        raise ImportUnanswered() from first


class ImportUnanswered(KeyboardInterrupt):
    """Ctrl-C twice during an import: the controller may still apply all of it."""

    def __str__(self) -> str:
        return "the controller may still apply the whole import (all or nothing): ziti-harness diff shows where it is"


def _create_concurrently(client, creates: list[Create], workers: int, tick) -> dict[str, str]:
    """The real API: kind by kind (later kinds refer to earlier ones), items concurrently."""
    created: dict[str, str] = {}

    def create_one(create: Create) -> None:
        reply = client.management.call(create.kind.create_op, body=resolve(create.body, created))
        created[create.ref] = reply["id"]  # NOTE: one dict store per thread: atomic under the GIL
        for op, body in create.after:
            client.management.call(op, body=resolve(body, created))
        tick(1)

    for kind in KINDS:
        batch = [create for create in creates if create.kind.key == kind.key]
        _run_all(workers, [lambda c=c: create_one(c) for c in batch])
    return created


def _run_all(workers: int, jobs: list[Callable[[], Any]]) -> None:
    """Run ``jobs`` on ``workers`` threads; the first failure is raised once all have stopped."""
    if not jobs:
        return
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
        futures = [pool.submit(job) for job in jobs]
    for future in futures:
        future.result()
