"""Access tests carried by a network file, as Tailscale's policy files carry tests of their rules.

A network file may end with a ``tests:`` section, one entry per identity:

.. code-block:: yaml

    tests:
      - {identity: ana.sales, dial: [crm, wiki], deny: [payroll, ssh]}
      - {identity: crm-server, bind: [crm], denyBind: [payroll]}
      - {identity: ben.sales, posture: {os: {type: Linux, version: "6.8"}}, deny: [crm]}

``dial`` / ``bind`` list services the identity must be able to use: a service
policy of that type grants it, posture does not refuse it, and it shares an
edge router with the service (what ``POST /sessions`` needs). ``deny`` /
``denyBind`` list services it must not be able to use. Posture is the state of
a device, not of the network, so it is not judged unless a test declares what
the device reports (``posture:``, the shape ``harness.analysis.posture.PostureState``
reads): then a failing check refuses, as the controller would.

``apply`` checks the tests against the network as it will be once applied and
refuses when one fails (unless forced); ``ziti-harness test FILE --url URL``
checks them against a live controller.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from harness.analysis import Analysis, apply_change
from harness.analysis.explain import Explanation
from harness.network import Network, NetworkError, export

#: test field -> (session type, whether access is expected)
EXPECTATIONS = {"dial": ("Dial", True), "deny": ("Dial", False), "bind": ("Bind", True), "denyBind": ("Bind", False)}
FIELDS = ("identity", "posture", *EXPECTATIONS)


class AccessTestsFailed(NetworkError):
    """Some access tests of a network file fail; ``report`` says which and why."""

    def __init__(self, report: "TestReport"):
        self.report = report
        super().__init__("\n".join([f"{report.summary()}; nothing applied", *(r.line() for r in report.failures)]))


@dataclass(frozen=True)
class AccessCase:
    """One expectation: ``identity`` can (``expect``) or cannot ``type`` ``service``."""

    index: int  # position in the tests section, for messages
    identity: str
    type: str
    service: str
    expect: bool
    posture: dict | None = None

    def __str__(self) -> str:
        verb = self.type.lower() if self.expect else f"not {self.type.lower()}"
        return f"tests[{self.index}] {self.identity} should {verb} {self.service}"


@dataclass
class CaseResult:
    case: AccessCase
    passed: bool
    reason: str  # the analysis's verdict, with the smallest change when it fails

    def line(self) -> str:
        return f"{'ok  ' if self.passed else 'FAIL'} {self.case}: {self.reason}"


@dataclass
class TestReport:
    """The results of every case of a tests section."""

    results: list[CaseResult]

    @property
    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if not r.passed]

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        failed = len(self.failures)
        if not failed:
            return f"all {len(self.results)} access test(s) pass"
        return f"{failed} of {len(self.results)} access test(s) fail"

    def lines(self) -> list[str]:
        return [r.line() for r in self.failures] + [self.summary()]


# -- reading the section -------------------------------------------------------------------------
def validate_tests(raw) -> list[dict]:
    """Check a ``tests:`` section's shape; return it. Raises NetworkError naming the entry and field."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise NetworkError("tests: must be a list of {identity: NAME, dial: [...], deny: [...]} entries")
    for n, entry in enumerate(raw):
        where = f"tests[{n}]"
        if not isinstance(entry, dict):
            raise NetworkError(f"{where}: must be a mapping such as {{identity: ana.sales, dial: [crm]}}")
        for key in entry:
            if key not in FIELDS:
                close = difflib.get_close_matches(str(key), FIELDS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(FIELDS)}"
                raise NetworkError(f"{where}: unknown field {key!r}{hint}")
        if not isinstance(entry.get("identity"), str) or not entry["identity"]:
            raise NetworkError(f"{where}: needs identity: NAME")
        if not any(key in entry for key in EXPECTATIONS):
            raise NetworkError(f"{where}: names no service; add dial, deny, bind or denyBind")
        for key in EXPECTATIONS:
            services = entry.get(key, [])
            if not isinstance(services, list) or not all(isinstance(s, str) and s for s in services):
                raise NetworkError(f"{where}.{key}: must be a list of service names")
        if entry.get("posture") is not None and not isinstance(entry["posture"], dict):
            raise NetworkError(f"{where}.posture: must be a mapping (domain, os, mac, mfa)")
    return raw


def cases_of(raw: list[dict]) -> list[AccessCase]:
    """The cases of a validated tests section, in file order."""
    return [
        AccessCase(n, entry["identity"], ptype, service, expect, entry.get("posture"))
        for n, entry in enumerate(raw)
        for key, (ptype, expect) in EXPECTATIONS.items()
        for service in entry.get(key, [])
    ]


# -- judging -------------------------------------------------------------------------------------
def run_tests(base: Analysis, cases: list[AccessCase]) -> TestReport:
    """Judge ``cases`` against the network of ``base`` (cases declaring posture get their own analysis)."""
    results = []
    for case in cases:
        analysis = base if case.posture is None else Analysis(base.network, posture={case.identity: case.posture})
        results.append(_judge(analysis, case))
    return TestReport(results)


def _judge(analysis: Analysis, case: AccessCase) -> CaseResult:
    missing = (
        [f"no identity named {case.identity!r}"]
        if case.identity not in analysis.populations["identities"].index
        else []
    )
    if case.service not in analysis.populations["services"].index:
        missing.append(f"no service named {case.service!r}")
    if missing:
        return CaseResult(case, False, " and ".join(missing) + " in the network")
    ex = analysis.explain(case.identity, case.service, case.type)
    return CaseResult(case, ex.can_connect == case.expect, _reason(ex))


def _reason(ex: Explanation) -> str:
    text = ex.headline()
    if ex.can_connect:
        granting = [c.policy for c in ex.policies if c.grants]
        text += f" (granted by {', '.join(granting)}; routers {', '.join(ex.common_routers)})"
    return f"{text}; smallest change: {ex.suggestion}"


# -- against a controller ------------------------------------------------------------------------
def planned_network(client, network: Network, *, prune: bool = False) -> Network:
    """The network a controller will hold once ``network`` is applied (merged by name unless ``prune``)."""
    if prune:
        return network
    return Network.from_dict(apply_change(export(client).to_dict(), network.to_dict()))


def check_before_apply(client, network: Network, *, prune: bool = False) -> TestReport:
    """Judge the file's tests on the network as it will be; raise AccessTestsFailed if one fails."""
    report = run_tests(Analysis(planned_network(client, network, prune=prune)), cases_of(network.tests))
    if not report.ok:
        raise AccessTestsFailed(report)
    return report


def check_live(client, network: Network) -> TestReport:
    """Judge the file's tests against what a live controller holds now (posture only where declared)."""
    return run_tests(Analysis.from_controller(client, posture=False), cases_of(network.tests))


__all__ = [
    "AccessCase",
    "AccessTestsFailed",
    "CaseResult",
    "TestReport",
    "cases_of",
    "check_before_apply",
    "check_live",
    "planned_network",
    "run_tests",
    "validate_tests",
]
