"""A newcomer's first hour on the command lines (issue 32): each mistake gets one line naming the right thing.

Every command runs as a subprocess; what it prints and its exit code are the assertions.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import jwt
import pytest

from harness.processes.server import free_port
from tests.flows.test_cli_errors import ROOT, TIMEOUT, cli, controller, one_line


def started(*args: str, ready, **kwargs) -> subprocess.Popen:
    """``python -m controller ARGS --ready-file READY``, returned once ready (the file is written)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller",
            "--log-level",
            "warning",
            "--ctrl-port",
            "0",
            *args,
            "--ready-file",
            str(ready),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        **kwargs,
    )
    deadline = time.monotonic() + TIMEOUT
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(proc.communicate()[1])
        time.sleep(0.05)  # NOTE: waiting on another process's file; no clock to advance
    return proc


def stopped(proc: subprocess.Popen) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


# -- item 4: error texts that name the right thing ------------------------------------------------


def test_one_port_given_to_two_options_is_a_usage_error_saying_so(tmp_path):
    port = str(free_port())
    result = controller("--data", str(tmp_path / "data"), "--port", port, "--http-port", port)
    assert result.returncode == 2, result.stderr
    assert one_line(result) == (
        f"error: --port and --http-port both give port {port}: give each its own port (0 picks any free one)"
    )
    assert not (tmp_path / "data").exists()


def test_quickstart_with_its_port_in_use_names_its_own_option(tmp_path):
    with httpx_free_socket() as taken:
        result = cli("-m", "harness.ziti", "edge", "quickstart", "--home", str(tmp_path / "qs"), "--ctrl-port", taken)
    assert result.returncode == 4, result.stderr
    line = one_line(result)
    assert f"HTTPS port {taken} on 127.0.0.1 is in use" in line
    assert line.endswith("pick another port with --ctrl-port PORT"), line


@pytest.mark.parametrize(
    "value", ["::bad::", "ctrl.example:0", "ctrl.example:99999", "two words", "under_score.example"]
)
def test_an_advertised_address_clients_cannot_use_is_a_usage_error(value, tmp_path):
    result = controller("--data", str(tmp_path / "data"), "--port", "0", "--advertise", value)
    assert result.returncode == 2, result.stderr
    line = one_line(result)
    assert line.startswith(f"error: ziti-controller: argument --advertise: {value!r}"), line
    assert not (tmp_path / "data").exists()


class httpx_free_socket:
    """A loopback port held by a listening socket (``str`` for a command line)."""

    def __enter__(self) -> str:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        return str(self.sock.getsockname()[1])

    def __exit__(self, *exc) -> None:
        self.sock.close()


# -- item 5: --admin-password on an existing folder -------------------------------------------------


def test_an_admin_password_given_for_an_existing_folder_is_named_as_not_applied(tmp_path):
    data, ready = tmp_path / "data", tmp_path / "ready.json"
    first = started("--data", str(data), "--port", "0", "--no-http", "--no-router", ready=ready)
    assert stopped(first)[0] == 0
    ready.unlink()
    second = started(
        "--data", str(data), "--port", "0", "--no-http", "--no-router", "--admin-password", "Other-Pass-2", ready=ready
    )
    code, out, err = stopped(second)
    assert code == 0
    assert "--admin-password (or ZITI_CTRL_ADMIN_PASSWORD) sets the admin password of a new data folder only" in err
    assert f"{data} keeps the one it was made with" in err
    assert "admin login: admin / the password given when this folder was made" in out


# -- issue 34 item 5 and issue 32 item 6: port 0 is any free port, and what clients are given names it ----


def test_port_0_is_any_free_port_and_every_address_clients_are_given_names_the_port_bound(tmp_path):
    ready = tmp_path / "ready.json"
    proc = started("--temp", "--port", "0", "--http-port", "0", "--router-port", "0", ready=ready)
    try:
        urls = json.loads(ready.read_text())
        https, http = urls["https"], urls["http"]
        assert not https.endswith(":0") and http and not http.endswith(":0")
        assert not urls["router"].endswith(":0") and not urls["ctrl"].endswith(":0")
        port = int(https.rsplit(":", 1)[1])
        with httpx.Client(base_url=http + "/edge/management/v1", timeout=30) as client:
            token = client.post(
                "/authenticate", params={"method": "password"}, json={"username": "admin", "password": "admin"}
            ).json()["data"]["token"]
            client.headers["zt-session"] = token
            created = client.post(
                "/identities", json={"name": "d", "type": "Device", "isAdmin": False, "enrollment": {"ott": True}}
            )
            identity = client.get(f"/identities/{created.json()['data']['id']}").json()["data"]
            claims = jwt.decode(identity["enrollment"]["ott"]["jwt"], options={"verify_signature": False})
            controllers = client.get("/controllers").json()["data"]
            base_urls = client.get("/version").json()["data"]["apiVersions"]["edge-management"]["v1"]["apiBaseUrls"]
    finally:
        code, out, _ = stopped(proc)
    assert claims["iss"] == f"https://127.0.0.1:{port}"
    assert all(f":{port}" in url for url in base_urls)
    assert all(":0/" not in json.dumps(c) and not json.dumps(c).count(':0"') for c in controllers)
    assert f"https://127.0.0.1:{port}/edge/management/v1" in out and "://127.0.0.1:0" not in out
    assert code == 0


def test_no_http_turns_plain_http_off(tmp_path):
    ready = tmp_path / "ready.json"
    proc = started("--temp", "--port", "0", "--no-http", "--no-router", ready=ready)
    try:
        assert json.loads(ready.read_text())["http"] is None
    finally:
        code, out, _ = stopped(proc)
    assert code == 0 and "HTTP  (local scripts)" not in out


# -- item 9: small things a user notices ------------------------------------------------------------


@pytest.fixture(scope="module")
def served():
    from controller.app import create_app
    from controller.config import Config
    from controller.server.serve import ThreadedServer

    app = create_app(Config())
    with ThreadedServer(app) as server:
        yield server.url
    app.controller.close()


def test_apply_prints_no_progress_bar_when_its_output_is_not_a_terminal(served, tmp_path):
    net = tmp_path / "net.yaml"
    net.write_text("identities:\n" + "".join(f"  - {{name: bar-{i}}}\n" for i in range(30)))
    result = cli("-m", "harness.cli", "apply", str(net), "--url", served)
    assert result.returncode == 0, result.stderr
    assert "entity/s" not in result.stderr and "\r" not in result.stderr, result.stderr
    assert "create identities/bar-0" in result.stdout


def test_ziti_harness_generates_every_shape_python_m_harness_generate_does():
    result = cli("-m", "harness.cli", "generate", "realistic")
    assert result.returncode == 0, result.stderr
    assert "identities:" in result.stdout


def test_a_mistyped_command_gets_a_did_you_mean():
    result = cli("-m", "harness.cli", "lisst", "identities")
    assert result.returncode == 2
    assert ": did you mean 'list'? (ziti-harness --help lists the options)" in one_line(result)
