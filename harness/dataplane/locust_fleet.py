"""The fleet simulator as a Locust user class: each user is one SDK behaving as libziti 1.x does.

A user enrolls a certificate of its own (from a CA its Locust process registers once with auto-enrollment,
as ``--ziti-admin`` through ``--ziti-admin-url``), logs in by OIDC (``--ziti-legacy``: ``POST
/authenticate``), then polls ``service-updates`` every ``--ziti-poll-every`` seconds (10) and the edge
routers every ``--ziti-routers-every`` (60) on one keep-alive TLS connection, refreshing its tokens at
two thirds of their life. Every request is reported to Locust. Spread a fleet over machines with Locust's
own modes (``--master`` here, ``--worker --master-host MASTER`` on each machine)::

    locust -f harness/dataplane/locust_fleet.py --headless -u 2000 -r 100 -t 5m --host https://ctrl:1280 \\
        --ziti-admin-url http://ctrl:1281

This module imports Locust (which patches the standard library for gevent): load it only in Locust processes.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import time

from locust import User, constant, events, task

from controller.console import without_unused_imports

without_unused_imports()
import httpx  # noqa: E402
from gevent.lock import Semaphore  # noqa: E402
from locust.exception import StopUser  # noqa: E402

from harness.client import pki as hp  # noqa: E402
from harness.client.oidc import OidcError, OidcLogin  # noqa: E402
from harness.dataplane import flows  # noqa: E402
from harness.dataplane.fleet import SDK_BODY, provision  # noqa: E402

CLIENT = "/edge/client/v1"

# httpx logs each request at INFO, which Locust prints: thousands of lines a second that its statistics say better
logging.getLogger("httpx").setLevel(logging.WARNING)


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    group = parser.add_argument_group("ziti fleet")
    group.add_argument("--ziti-admin-url", default=None, help="the management API the CA is registered through")
    group.add_argument("--ziti-admin", default="admin:admin", help="USER:PASSWORD registering it (default admin:admin)")
    group.add_argument("--ziti-legacy", action="store_true", help="log in by POST /authenticate instead of OIDC")
    group.add_argument("--ziti-poll-every", type=float, default=10.0, help="service-update period (default 10 s)")
    group.add_argument("--ziti-routers-every", type=float, default=60.0, help="edge-router period (default 60 s)")


class _ProcessCA:
    """This Locust process's CA, registered once; each user gets a leaf of it."""

    lock = Semaphore()
    root = None
    ca_pem: str | None = None
    numbers = itertools.count()

    @classmethod
    def leaf(cls, options, host: str):
        with cls.lock:
            if cls.root is None:
                from harness.client import ZitiClient

                username, _, password = options.ziti_admin.partition(":")
                with ZitiClient.connect(options.ziti_admin_url or host, verify=False) as admin:
                    admin.login(username, password)
                    cls.ca_pem = flows.ca_bundle(admin)
                    cls.root = provision(admin, 0, prefix=f"locust-{secrets.token_hex(4)}", with_root=True)
            number = next(cls.numbers)
        return hp.make_leaf(cls.root, f"sdk-{number}")


class FleetSdkUser(User):
    """One SDK: enroll, log in, then poll on libziti's schedule (the task sleeps until the next poll is due)."""

    wait_time = constant(0)

    def on_start(self) -> None:
        options = self.environment.parsed_options
        self.poll_every, self.routers_every = options.ziti_poll_every, options.ziti_routers_every
        leaf = _ProcessCA.leaf(options, self.host)
        self.http = httpx.Client(base_url=self.host, verify=hp.client_ssl_context(_ProcessCA.ca_pem, leaf), timeout=30)
        self.headers: dict = {}
        self.last_change = None
        self._call("POST", f"{CLIENT}/enroll", params={"method": "ca"}, json={}, ok=(200, 409))
        self.login = OidcLogin(self.http, "cert", "c", body=SDK_BODY)
        self.tokens = None
        if not self._log_in(options.ziti_legacy):
            raise StopUser()
        now = time.monotonic()
        self.next_updates, self.next_routers = now + self.poll_every, now + self.routers_every

    def _log_in(self, legacy: bool) -> bool:
        started = time.perf_counter()
        failure = None
        try:
            if legacy:
                reply = self.http.post(f"{CLIENT}/authenticate", params={"method": "cert"}, json=SDK_BODY)
                reply.raise_for_status()
                self.headers = {"zt-session": reply.json()["data"]["token"]}
            else:
                self.tokens = self.login.run()
                self.headers = {"Authorization": f"Bearer {self.tokens.access_token}"}
        except (OidcError, httpx.HTTPError, KeyError) as ex:
            failure = ex
        self._fire("POST", "login (oidc)" if not legacy else "login (legacy)", started, failure)
        return failure is None

    def _fire(self, method: str, name: str, started: float, failure, length: int = 0) -> None:
        self.environment.events.request.fire(
            request_type=method,
            name=name,
            response_time=(time.perf_counter() - started) * 1000,
            response_length=length,
            exception=failure,
            context={},
        )

    def _call(self, method: str, path: str, *, ok=(200,), **kwargs):
        started = time.perf_counter()
        try:
            reply = self.http.request(method, path, headers=self.headers, **kwargs)
        except httpx.HTTPError as ex:
            self._fire(method, path, started, ex)
            return None
        failure = None if reply.status_code in ok else RuntimeError(f"{reply.status_code} {reply.text[:200]}")
        self._fire(method, path, started, failure, len(reply.content))
        return reply if failure is None else None

    @task
    def poll(self) -> None:
        due = min(self.next_updates, self.next_routers)
        time.sleep(max(0.0, due - time.monotonic()))  # gevent's sleep: other users run meanwhile
        if self.tokens is not None and self.tokens.due(time.time()):
            self.tokens = self.login.refresh(self.tokens)
            self.headers = {"Authorization": f"Bearer {self.tokens.access_token}"}
        if self.next_updates <= self.next_routers:
            self.next_updates += self.poll_every
            reply = self._call("GET", f"{CLIENT}/current-api-session/service-updates")
            marker = (reply.json().get("data") or {}) if reply is not None else {}
            if self.last_change is not None and marker.get("lastChangeAt") != self.last_change:
                self._call("GET", f"{CLIENT}/services", params={"limit": 500, "offset": 0})
            self.last_change = marker.get("lastChangeAt", self.last_change)
        else:
            self.next_routers += self.routers_every
            self._call("GET", f"{CLIENT}/current-identity/edge-routers")

    def on_stop(self) -> None:
        self.http.close()
