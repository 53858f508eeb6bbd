"""The realistic generator: a company whose planted mistakes the analysis finds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from harness.analysis import Analysis
from harness.network import Network
from harness.network.generate import generate
from harness.network.realistic import MISTAKES, realistic

ROOT = Path(__file__).resolve().parents[2]


def _with(analysis: Analysis, *attrs: str) -> list[str]:
    return sorted(n for n, held in analysis.identities.items() if set(attrs) <= held)


def test_the_realistic_network_is_valid_and_reproducible():
    network = generate("realistic")
    assert network == realistic(seed=7) and network != realistic(seed=8)
    Network.from_dict(network)  # names unique, kinds known
    assert len(network["identities"]) == 150 and len(realistic(people=400)["identities"]) > 400


def test_most_access_is_denied_and_contractors_never_reach_payroll():
    analysis = Analysis(realistic())
    counts = analysis.matrix().counts()
    assert counts["any"] < counts["identities"] * counts["services"] / 3
    for contractor in _with(analysis, "contractors"):
        assert analysis.can(contractor, "payroll") == (contractor == MISTAKES["contractor"])


def test_the_planted_mistakes_are_there_to_find():
    analysis = Analysis(realistic())
    typo = _with(analysis, MISTAKES["typo"])[0]
    assert analysis.explain(typo, "git").headline() == f"{typo} CANNOT dial git: no Dial policy grants it"
    assert analysis.explain(MISTAKES["contractor"], "ledger").can_connect
    apac = _with(analysis, "staff", "apac")[0]
    assert analysis.explain(apac, "wiki").headline().endswith("allowed, but no edge router is shared")
    finance = _with(analysis, "finance", "eu")[0]
    assert not analysis.explain(finance, MISTAKES["service"]).common_routers
    unused = analysis.policy_named("servicePolicies", MISTAKES["policy"])
    assert analysis.populations["identities"].mask(unused.matches["identityRoles"]) == 0
    assert analysis.identities[MISTAKES["orphan"]] == set()


def test_the_command_line_prints_the_realistic_shape():
    result = subprocess.run(
        [sys.executable, "-m", "harness.network.generate", "realistic"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert result.returncode == 0 and yaml.safe_load(result.stdout) == generate("realistic")
