"""The drop-in ``ziti``'s small things a newcomer notices (issue 32 item 9), through the command line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from harness.processes.server import free_port
from tests.ziti.conftest import ROOT, Ziti, env_for


def test_a_mistyped_verb_gets_a_did_you_mean(tmp_path):
    result = Ziti(tmp_path)("edge", "lisst", "identities")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: argument VERB: invalid choice: 'lisst'")
    assert line.endswith(": did you mean 'list'? (see 'ziti edge --help')")


def test_help_lists_the_exit_codes_one_to_a_line(tmp_path):
    out = Ziti(tmp_path).ok("--help")
    lines = out[out.index("exit codes:") :].splitlines()
    assert [line.split()[0] for line in lines[1:7]] == ["0", "1", "2", "3", "4", "130"]


def test_quickstart_makes_its_home_owner_only_whatever_the_umask(tmp_path):
    home = tmp_path / "qs-home"
    args = ["edge", "quickstart", "--home", str(home), "--configure-and-exit", "--no-router"]
    done = subprocess.run(
        [sys.executable, "-m", "harness.ziti", *args, "--ctrl-port", str(free_port())],
        cwd=ROOT,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.umask(0),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


@pytest.mark.parametrize(
    "option, value, says",
    [
        ("--ctrl-address", "::bad::", "is not an address clients can use"),
        ("--ctrl-address", "http://x", "is not an address clients can use"),
        ("--router-address", "127.0.0.1:99", "without a scheme or a port"),
        ("--router-address", "a/b", "is not an address clients can use"),
        ("--ctrl-address", "[::1]", "an IPv6 address is not supported here yet"),
        ("--ctrl-port", "70000", "70000 is not a port number: give 0 (any free port) to 65535"),
        ("--router-port", "-1", "-1 is not a port number"),
    ],
)
@pytest.mark.parametrize("mode", [[], ["ha"]])
def test_quickstart_refuses_an_address_or_port_it_cannot_use_before_making_anything(
    tmp_path, mode, option, value, says
):
    home = tmp_path / "qs-home"
    result = Ziti(tmp_path)("edge", "quickstart", *mode, "--home", home, "--configure-and-exit", f"{option}={value}")
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: argument {option}: ") and says in line, line
    assert not home.exists()
