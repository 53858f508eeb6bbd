"""One login for both command lines (issue 32 item 7): quickstart names its CA, ``ziti-harness`` uses the login
``ziti`` saved, and ``ziti edge login`` asks before trusting a CA, as the real command does at a terminal.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.ziti.conftest import ROOT, Ziti, env_for


def login_at_a_terminal(home: Path, port: int, answer: str) -> tuple[int, str]:
    """``ziti edge login`` without ``-y``, its standard input a terminal that answers ``answer``."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.ziti", "edge", "login", f"127.0.0.1:{port}", "-u", "admin", "-p", "admin"],
            cwd=ROOT,
            env=env_for(home),
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        os.write(controller, answer.encode() + b"\n")
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    return proc.returncode, out


def test_quickstart_prints_its_ca_bundle(quickstart):
    [line] = [line for line in quickstart.lines if "CA bundle" in line]
    path = Path(line.rsplit(": ", 1)[1])
    assert line.startswith("The controller's CA bundle (clients: --ca FILE): ") and path.is_file()
    assert "BEGIN CERTIFICATE" in path.read_text()


def test_ziti_harness_without_url_uses_the_login_ziti_saved(ziti, quickstart):
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "list", "edge-routers"],
        cwd=ROOT,
        env=env_for(ziti.home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert f"using the login `ziti` saved in {ziti.home}" in result.stderr
    assert f"https://127.0.0.1:{quickstart.ctrl_port}" in result.stderr
    assert "quickstart-router" in result.stdout


def test_login_without_y_and_without_a_terminal_says_how_to_go_on(quickstart, tmp_path):
    fresh = Ziti(tmp_path)
    result = fresh("edge", "login", f"127.0.0.1:{quickstart.ctrl_port}", "-u", "admin", "-p", "admin")
    assert result.returncode == 3, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "presents a certificate authority this machine does not trust" in line
    assert line.endswith("and there is no terminal to ask: pass -y to trust the one it serves, or --ca FILE")
    assert not (tmp_path / ".config" / "ziti" / "certificates" / "127.0.0.1").exists()


def test_login_without_y_at_a_terminal_asks_before_trusting_the_ca(quickstart, tmp_path):
    code, out = login_at_a_terminal(tmp_path, quickstart.ctrl_port, "y")
    assert code == 0, out
    assert "Untrusted certificate authority retrieved from server" in out
    assert "Trust server provided certificate authority [Y/N]: " in out
    assert (tmp_path / ".config" / "ziti" / "certificates" / "127.0.0.1").is_file()


def test_login_declined_at_a_terminal_trusts_nothing(quickstart, tmp_path):
    code, out = login_at_a_terminal(tmp_path, quickstart.ctrl_port, "n")
    assert code == 3, out
    assert "and it was not trusted: run again and answer Y, or give --ca FILE" in out
    assert not (tmp_path / ".config" / "ziti" / "certificates" / "127.0.0.1").exists()


def test_a_stale_cached_ca_names_the_way_out(quickstart, tmp_path):
    cached = tmp_path / ".config" / "ziti" / "certificates" / "127.0.0.1"
    cached.parent.mkdir(parents=True)
    cached.write_text("-----BEGIN CERTIFICATE-----\nstale\n-----END CERTIFICATE-----\n")
    fresh = Ziti(tmp_path)
    refused = fresh("edge", "login", f"127.0.0.1:{quickstart.ctrl_port}", "-u", "admin", "-p", "admin")
    assert refused.returncode == 3
    [line] = refused.stderr.strip().splitlines()
    assert f"doesn't match the one cached at {cached}" in line and "pass -y" in line
    fresh.ok("edge", "login", f"127.0.0.1:{quickstart.ctrl_port}", "-u", "admin", "-p", "admin", "-y")
    assert "stale" not in cached.read_text()


def test_ziti_harness_names_the_way_out_when_the_saved_login_has_ended(ziti, quickstart, tmp_path):
    saved = json.loads((ziti.home / ".config" / "ziti" / "ziti-cli.json").read_text())
    saved["edgeIdentities"]["default"]["token"] = "ended-long-ago"
    folder = tmp_path / ".config" / "ziti"
    folder.mkdir(parents=True)
    (folder / "ziti-cli.json").write_text(json.dumps(saved))
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "list", "identities"],
        cwd=ROOT,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: the login saved by `ziti edge login` for https://127.0.0.1:{quickstart.ctrl_port} was refused "
        "(UNAUTHORIZED): log in again with `ziti edge login`, or give --url, --user and --password"
    )
