"""The SDK suites' own sequences, through the ``ziti`` drop-in only (issue 20, item 2).

``test_python_sdk_suite_sequence`` runs what OpenZiti's Python SDK fixtures run
(``tests/conftest.py``, ``tests/util.py``): ``ziti edge quickstart --home DIR
--ctrl-address=127.0.0.1 --router-address=127.0.0.1``, wait for ``controller and
router started``, create identities with ``-o FILE.jwt``, a service, an
``intercept.v1`` config, ``update service -c``, Dial/Bind service policies by
``@name``; then the real SDK (each version at hand, ``tests/real_sdk.py``) enrolls
both JWTs and echoes through the router; then SIGTERM and a clean exit. Every step is a
subprocess; the SDK runs in its own (libziti keeps process-wide state).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.ziti.conftest import QuickstartProcess, Ziti


def test_ziti_version_parses_as_the_suites_parse_it():
    from tests.ziti.conftest import ROOT

    out = subprocess.run(
        [sys.executable, "-m", "harness.ziti", "version"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    # the C SDK: Version.parse(out.strip().lstrip("v")); the Python SDK also joins "-" parts with "+build."
    text = out.strip().lstrip("v")
    major, minor, patch = (int(part) for part in text.split("."))
    assert (major, minor, patch) >= (2, 0, 0)  # the C SDK's ext-jwt-signer fixture needs >= 2
    assert "+build.".join(text.split("-")[:2]) == text


def test_python_sdk_suite_sequence(real_sdk, tmp_path):
    sdk = real_sdk.run
    ziti = Ziti(tmp_path / "user-home")
    home = tmp_path / "qs"
    qs = QuickstartProcess(ziti, "--home", str(home))
    try:
        qs.wait_ready()
        name = "test_echo"
        client_jwt, server_jwt = tmp_path / "client.jwt", tmp_path / "server.jwt"
        ziti.edge("create", "identity", f"client_{name}", "-o", client_jwt)
        ziti.edge("create", "identity", f"server_{name}", "-o", server_jwt)
        intercept = {
            "protocols": ["tcp", "udp"],
            "portRanges": [{"low": 80, "high": 80}],
            "addresses": [f"{name}.ziti.test"],
        }
        ziti.edge("create", "service", name)
        ziti.edge("create", "config", f"{name}-intercept", "intercept.v1", json.dumps(intercept))
        ziti.edge("update", "service", name, "-c", f"{name}-intercept")
        ziti.edge(
            "create",
            "service-policy",
            f"{name}-dial",
            "Dial",
            "--identity-roles",
            f"@client_{name}",
            "--service-roles",
            f"@{name}",
        )
        ziti.edge(
            "create",
            "service-policy",
            f"{name}-bind",
            "Bind",
            "--identity-roles",
            f"@server_{name}",
            "--service-roles",
            f"@{name}",
        )

        sdk("enroll", client_jwt, tmp_path / "client.json")
        sdk("enroll", server_jwt, tmp_path / "server.json")
        assert json.loads((tmp_path / "client.json").read_text())["ztAPI"] == f"https://127.0.0.1:{qs.ctrl_port}"
        out = sdk("both", tmp_path / "server.json", tmp_path / "client.json", name, "hello")
        assert "ECHO hello" in out

        service = json.loads(ziti.edge("list", "services", f'name = "{name}"', "-j"))["data"][0]
        config_id = json.loads(ziti.edge("list", "configs", f'name = "{name}-intercept"', "-j"))["data"][0]["id"]
        assert service["encryptionRequired"] is True and service["configs"] == [config_id]
    finally:
        code = qs.terminate(signal.SIGTERM)
    assert code == 0, qs.output
    assert "Signal to shutdown received" in qs.output
    assert f"Environment left intact at: {home}" in qs.output
    assert home.is_dir()


def test_quickstart_without_home_removes_its_temporary_home_on_sigint(tmp_path):
    ziti = Ziti(tmp_path / "user-home")
    qs = QuickstartProcess(ziti, "--no-router")
    try:
        qs.wait_ready()
        temporary = Path(next(line for line in qs.lines if "config dir located at" in line).split(": ", 1)[1])
        assert temporary.is_dir()
        # the saved login works for the next command, as after the real quickstart
        assert "all-endpoints-public-routers" in ziti.edge("list", "edge-router-policies")
        assert "all-routers-all-services" in ziti.edge("list", "service-edge-router-policies")
    finally:
        code = qs.terminate(signal.SIGINT)
    assert code == 0, qs.output
    assert f"Removing temp directory at: {temporary}" in qs.output
    assert not temporary.exists()


def test_configure_and_exit_sets_up_then_exits_and_a_rerun_keeps_the_network(tmp_path):
    ziti = Ziti(tmp_path / "user-home")
    home = tmp_path / "qs"
    admin = ("-u", "qs-admin", "-p", "qs-Secret-1")
    first = QuickstartProcess(ziti, "--home", str(home), "--configure-and-exit", *admin)
    assert first.proc.wait(60) == 0, first.output
    first.terminate()
    assert "configure-and-exit set to true, closing router and controller" in first.output
    assert "controller and router started." in first.output

    login = json.loads((ziti.home / ".config" / "ziti" / "ziti-cli.json").read_text())["edgeIdentities"]["default"]
    assert login["username"] == "qs-admin"

    again = QuickstartProcess(ziti, "--home", str(home), "--no-router", *admin)
    try:
        again.wait_ready()
        policies = json.loads(ziti.edge("list", "edge-router-policies", "-j"))["data"]
        assert [p["name"] for p in policies] == ["all-endpoints-public-routers"]  # not created twice
    finally:
        assert again.terminate() == 0, again.output


def test_a_busy_port_is_one_line_and_exit_code_4(tmp_path):
    import socket

    ziti = Ziti(tmp_path / "user-home")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = ziti("edge", "quickstart", "--ctrl-address=127.0.0.1", "--ctrl-port", port, "--no-router", timeout=60)
    assert done.returncode == 4, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(port) in errors[0]


def test_a_reader_that_went_away_does_not_stop_a_clean_exit(tmp_path):
    """Suites read the quickstart's output from a daemon thread; after it stops reading, SIGTERM still ends cleanly."""
    from tests.ziti.conftest import ROOT, env_for, free_port

    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.ziti", "edge", "quickstart", "--ctrl-port", str(free_port()), "--no-router"],
        cwd=ROOT,
        env=env_for(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        temporary = None
        for line in proc.stdout:  # bounded: the process prints these lines, or ends and the loop ends
            if "config dir located at" in line:
                temporary = Path(line.split(": ", 1)[1].strip())
            if "instance pid" in line:
                break
        assert temporary is not None and temporary.is_dir()
        proc.stdout.close()  # nobody reads the pipe any more
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert not temporary.exists()
