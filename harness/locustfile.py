"""Virtual SDK clients as a Locust user class: load that scales out with Locust's own modes.

Each Locust user is a :class:`harness.virtual.VirtualClient` (the real C SDK's
request sequence: login, current identity and routers, service listings,
session creation on dial); every request it sends is reported to Locust.
Run it alone, or as one master and any number of workers on other machines::

    locust -f harness/locustfile.py --headless -u 200 -r 20 -t 60s \\
        --host http://127.0.0.1:1281 --ziti-username vu- --ziti-users 200 --ziti-password pw
    locust -f harness/locustfile.py --master ...        # then, per machine:
    locust -f harness/locustfile.py --worker --master-host MASTER

The identities (``vu-0`` ... ``vu-199`` above) must exist with that password;
``--ziti-users 0`` makes every user log in as ``--ziti-username`` itself.
This module imports Locust (which patches the standard library for gevent):
load it only in Locust processes.
"""

from __future__ import annotations

import itertools
import sys
import time

from locust import User, between, events, task

# NOTE(perf): Locust has patched the standard library for gevent by now, and trio (which httpcore
# probes for its async backend) fails to import without select.epoll; the sync client needs neither.
sys.modules.setdefault("trio", None)
import httpx  # noqa: E402
from locust.exception import StopUser  # noqa: E402

from harness.virtual import VirtualClient  # noqa: E402


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    group = parser.add_argument_group("ziti virtual clients")
    group.add_argument(
        "--ziti-username",
        default="admin",
        help="the identities' username, or their prefix when --ziti-users is set (default admin)",
    )
    group.add_argument(
        "--ziti-users",
        type=int,
        default=0,
        help="how many identities PREFIX0..PREFIX{N-1} the users spread over (default 0: one)",
    )
    group.add_argument("--ziti-password", default="admin", help="their password (default admin)")
    group.add_argument(
        "--ziti-dial-probability", type=float, default=0.5, help="chance that a step also dials a service (default 0.5)"
    )


class ReportingClient(VirtualClient):
    """A virtual SDK client whose every request is reported to Locust."""

    def __init__(self, fire, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._fire = fire

    def _send(self, method: str, path: str, **kwargs) -> httpx.Response | None:
        started = time.perf_counter()
        response = super()._send(method, path, **kwargs)
        failure = None
        if response is None:
            failure = ConnectionError(self.seen.errors[-1])
        elif response.status_code >= 400 and response.status_code != 401:  # 401: the SDK logs in again
            failure = RuntimeError(f"{response.status_code} {response.text[:200]}")
        self._fire(
            request_type=method,
            name=path,
            response_time=(time.perf_counter() - started) * 1000,
            response_length=len(response.content) if response is not None else 0,
            exception=failure,
            context={},
        )
        return response


class VirtualSdkUser(User):
    """One virtual SDK client: starts like the C SDK, then refreshes and dials."""

    wait_time = between(0.5, 2.0)
    _numbers = itertools.count()

    def on_start(self) -> None:
        options = self.environment.parsed_options
        number = next(self._numbers)
        username = options.ziti_username
        if options.ziti_users:
            username = f"{username}{number % options.ziti_users}"
        self.http = httpx.Client(base_url=self.host, timeout=30)
        self.sdk = ReportingClient(
            self.environment.events.request.fire,
            self.http,
            f"locust-{number}",
            username=username,
            password=options.ziti_password,
            dial_probability=options.ziti_dial_probability,
        )
        if not self.sdk.start():
            raise StopUser()

    @task
    def step(self) -> None:
        self.sdk.step()

    def on_stop(self) -> None:
        self.http.close()
