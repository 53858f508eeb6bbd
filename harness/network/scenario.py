"""Scenario files: a list of steps run against a controller, with checks.

.. code-block:: yaml

    steps:
      - apply: network.yaml          # or an inline network dict
      - login: {username: alice, password: alice-pass}
      - expect: {op: getCurrentIdentity, api: client, status: 200}
      - advance: 3600                 # seconds (in-process or simulation mode)
      - fault: {path: "/services$", status: 503, count: 1}
      - expect: {op: listServices, api: client, status: 503}
      - clear_faults: true

Each step returns a line of the report; a failed ``expect`` raises ``ScenarioError``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.network import apply as apply_network


class ScenarioError(AssertionError):
    """A scenario step whose expectation was not met."""


class ScenarioRunner:
    def __init__(self, admin, *, make_client, base: Path | None = None, embedded=None):
        self.admin = admin
        self.make_client = make_client
        self.base = base or Path.cwd()
        #: an in-process controller's handle (``controller.embedded``): its clock and faults, without HTTP
        self.embedded = embedded
        self.user = None

    def run(self, scenario: dict) -> list[str]:
        report = []
        for index, step in enumerate(scenario.get("steps") or [], 1):
            ((action, argument),) = step.items()
            handler = getattr(self, f"step_{action}", None)
            if handler is None:
                raise ScenarioError(f"step {index}: unknown action {action!r}")
            report.append(f"{index:>3}. {action}: {handler(argument)}")
        return report

    def step_apply(self, argument) -> str:
        network = self.base / argument if isinstance(argument, str) else argument
        steps = apply_network(self.admin, network)
        return f"{len(steps)} change(s)"

    def step_login(self, argument: dict) -> str:
        self.user = self.make_client()
        self.user.login(argument["username"], argument["password"], api=argument.get("api", "client"))
        return f"logged in as {argument['username']}"

    def step_advance(self, seconds) -> str:
        if self.embedded is not None:
            self.embedded.clock.advance(seconds=float(seconds))
        else:
            self.admin.management.call("advanceSimulationClock", body={"seconds": float(seconds)})
        return f"clock +{seconds}s"

    def step_fault(self, argument: dict) -> str:
        if self.embedded is not None:
            fault = self.embedded.faults.add(
                argument.get("path", ".*"),
                method=argument.get("method"),
                status=argument.get("status"),
                latency_ms=argument.get("latencyMs", 0),
                drop=bool(argument.get("drop")),
                count=argument.get("count"),
            )
            return f"fault {fault.id}"
        created = self.admin.management.call("createSimulationFault", body=argument)
        return f"fault {created['id']}"

    def step_clear_faults(self, _argument) -> str:
        if self.embedded is not None:
            self.embedded.faults.remove()
        else:
            self.admin.management.call("deleteSimulationFaults")
        return "faults cleared"

    def step_expect(self, argument: dict) -> str:
        client = self.user if argument.get("as", "user") == "user" and self.user is not None else self.admin
        group = client.edge if argument.get("api", "client") == "client" else client.management
        args = argument.get("args", [])
        response = group.call(argument["op"], *args, raw=True, body=argument.get("body"), **argument.get("query", {}))
        wanted = argument.get("status", 200)
        if response.status_code != wanted:
            raise ScenarioError(
                f"{argument['op']}: expected {wanted}, got {response.status_code}: {response.text[:300]}"
            )
        count = argument.get("count")
        if count is not None and len(response.json().get("data") or []) != count:
            raise ScenarioError(f"{argument['op']}: expected {count} item(s), got {len(response.json()['data'])}")
        return f"{argument['op']} -> {response.status_code}"


def load_scenario(path: str | Path) -> dict:
    return yaml.safe_load(Path(path).read_text()) or {}
