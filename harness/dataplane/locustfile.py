"""Virtual SDK clients as a Locust user class: load that scales out with Locust's own modes.

Each Locust user is a :class:`harness.dataplane.virtual.VirtualClient` (the real C SDK's
request sequence: login, current identity and routers, service listings,
session creation on dial); every request it sends is reported to Locust.
Run it alone, or as one master and any number of workers on other machines::

    locust -f harness/dataplane/locustfile.py --headless -u 200 -r 20 -t 60s --host http://127.0.0.1:1281 \\
        --ziti-username vu- --ziti-users 200 --ziti-password vu-pass --ziti-create-users
    locust -f harness/dataplane/locustfile.py --master ...        # then, per machine:
    locust -f harness/dataplane/locustfile.py --worker --master-host MASTER

The identities (``vu-0`` ... ``vu-199`` above) log in with that password (at least 5 characters, the
controller's rule); ``--ziti-create-users`` makes the missing ones first, as ``--ziti-admin`` (on the
master, before any user starts). ``--ziti-users 0`` makes every user log in as ``--ziti-username`` itself.
This module imports Locust (which patches the standard library for gevent):
load it only in Locust processes.
"""

from __future__ import annotations

import itertools
import logging
import time

from locust import User, between, events, task

from controller.console import without_unused_imports

# Locust has patched the standard library for gevent by now, and trio (which httpcore probes for its async
# backend) fails to import without select.epoll: it is left out before httpx comes, as in the command lines.
without_unused_imports()
import httpx  # noqa: E402
from locust.exception import StopUser  # noqa: E402

from harness.dataplane.virtual import VirtualClient  # noqa: E402

# httpx logs each request at INFO, which Locust prints: thousands of lines a second that its statistics say better
logging.getLogger("httpx").setLevel(logging.WARNING)


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
    group.add_argument(
        "--ziti-create-users",
        action="store_true",
        help="create the identities that do not exist yet, with --ziti-password, before the test (default off)",
    )
    group.add_argument(
        "--ziti-admin", default="admin:admin", help="USER:PASSWORD that creates them (default admin:admin)"
    )


def user_names(options) -> list[str]:
    """The usernames the users log in as."""
    if options.ziti_users:
        return [f"{options.ziti_username}{number}" for number in range(options.ziti_users)]
    return [options.ziti_username]


@events.test_start.add_listener
def _create_users(environment, **_kwargs) -> None:
    """With ``--ziti-create-users``: make the missing identities (on the master or a lone process, not workers)."""
    from locust.runners import WorkerRunner

    options = environment.parsed_options
    if not options or not options.ziti_create_users or isinstance(environment.runner, WorkerRunner):
        return
    from harness.client import ZitiClient
    from harness.client.filters import name_is

    username, _, password = options.ziti_admin.partition(":")
    with ZitiClient.connect(environment.host) as admin:
        admin.login(username, password)
        for name in user_names(options):
            if list(admin.management.iterate("listIdentities", filter=name_is(name))):
                continue
            created = admin.management.create_identity(body={"name": name, "type": "User", "isAdmin": False})
            admin.management.create_authenticator(
                body={
                    "identityId": created["id"],
                    "method": "updb",
                    "username": name,
                    "password": options.ziti_password,
                }
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
        names = user_names(options)
        username = names[number % len(names)]
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
