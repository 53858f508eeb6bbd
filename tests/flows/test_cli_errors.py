"""Day-one mistakes on both command lines: one line saying what to do, a documented exit code.

Every command runs as a subprocess with a bounded timeout; servers the harness
talks to run in this process on free loopback ports.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.app import create_app
from controller.config import Config
from controller.server.serve import ThreadedServer
from harness.client import ZitiClient
from harness.processes.server import free_port

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 90


def cli(*args: str, timeout: float = TIMEOUT, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=kwargs.pop("cwd", ROOT),
        **kwargs,
    )


def controller(*args: str, **kwargs):
    return cli("-m", "controller", "--log-level", "warning", "--no-router", "--ctrl-port", "0", *args, **kwargs)


def harness(*args: str, **kwargs):
    return cli("-m", "harness.cli", *args, **kwargs)


def one_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture
def taken_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.fixture(scope="module")
def served():
    """A plain-HTTP controller in this process (simulation: faults can be injected)."""
    app = create_app(Config(simulation=True))
    with ThreadedServer(app) as server:
        yield server.url, app
    app.controller.close()


# -- the controller ------------------------------------------------------------------


def test_controller_port_in_use_names_the_port_and_the_option_and_starts_nothing(taken_port, tmp_path):
    result = controller("--data", str(tmp_path / "data"), "--port", str(free_port()), "--http-port", str(taken_port))
    assert result.returncode == 4
    line = one_line(result)
    assert f"HTTP port {taken_port} on 127.0.0.1 is in use" in line and "--http-port PORT" in line
    assert not (tmp_path / "data").exists()  # checked before anything was written


def test_controller_https_port_in_use_with_debug_shows_the_traceback(taken_port, tmp_path):
    result = controller("--data", str(tmp_path / "data"), "--port", str(taken_port), "--http-port", "0", "--debug")
    assert result.returncode == 4
    assert "Traceback" in result.stderr and "ListenerError" in result.stderr
    assert f"error: HTTPS port {taken_port}" in result.stderr and "--port PORT" in result.stderr


def test_controller_refuses_a_store_from_a_newer_version(tmp_path):
    db = tmp_path / "data" / "db"
    db.mkdir(parents=True)
    (db / "format.json").write_text('{"format": "ziti-edge-controller-store", "version": 99}')
    result = controller("--data", str(tmp_path / "data"), "--port", str(free_port()), "--http-port", "0")
    assert result.returncode == 4
    line = one_line(result)
    assert "version 99" in line and "upgrade the controller" in line


def test_controller_refuses_a_damaged_store(tmp_path):
    db = tmp_path / "data" / "db"
    db.mkdir(parents=True)
    (db / "format.json").write_text("{not json")
    result = controller("--data", str(tmp_path / "data"), "--port", str(free_port()), "--http-port", "0")
    assert result.returncode == 4
    assert "format.json is not valid JSON" in one_line(result)


def test_controller_rejects_an_unknown_log_level():
    result = controller("--log-level", "loud")
    assert result.returncode == 2
    assert "invalid choice: 'loud'" in result.stderr


def test_controller_help_documents_exit_codes_and_version_and_every_option_has_help():
    from controller.__main__ import build_parser

    assert "exit codes:" in controller("--help").stdout
    assert controller("--version").stdout.startswith("ziti-controller v")
    for action in build_parser()._actions:
        assert action.help, f"{action.option_strings} has no help"


def _start(data: Path, *extra: str) -> tuple[subprocess.Popen, list[str]]:
    """A controller subprocess; return it once its banner is printed, with the banner lines."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller",
            "--ctrl-port",
            "0",
            "--log-level",
            "warning",
            "--router-port",
            "0",
            "--data",
            str(data),
            "--port",
            str(free_port()),
            "--http-port",
            str(free_port()),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    lines = []
    for line in proc.stdout:  # bounded: the process prints the banner or exits
        lines.append(line.rstrip())
        if "Ctrl-C stops it." in line:
            return proc, lines
    proc.wait(TIMEOUT)
    raise AssertionError(f"no banner: {proc.stderr.read()}")


def _stopped(proc: subprocess.Popen, sig: int) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_second_controller_on_one_data_folder_is_refused_and_sigterm_stops_the_first(tmp_path):
    first, banner = _start(tmp_path / "data")
    try:
        second = controller("--data", str(tmp_path / "data"), "--port", str(free_port()), "--http-port", "0")
        assert second.returncode == 4
        assert "another controller is using this data folder" in one_line(second)
        ports = [int(line.split(":")[3].split("/")[0]) for line in banner if "https://" in line or "http://" in line]
    finally:
        code = _stopped(first, signal.SIGTERM)
    assert code == 0
    for port in ports:
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_temp_data_folder_is_named_in_the_banner_and_removed_on_ctrl_c(tmp_path):
    proc, banner = _start(tmp_path / "unused", "--temp")
    data = Path(next(line for line in banner if "data folder:" in line).split("data folder:")[1].split()[0])
    ca = Path(next(line for line in banner if "CA bundle:" in line).split("CA bundle:")[1].split()[0])
    assert data.is_dir() and ca.is_file() and ca.is_relative_to(data)
    assert _stopped(proc, signal.SIGINT) == 0
    assert not data.exists() and not (tmp_path / "unused").exists()


# -- the harness ---------------------------------------------------------------------


def test_nothing_listening(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    result = harness("export", "--url", url)
    assert result.returncode == 3
    assert one_line(result) == (
        f"error: nothing is listening at {url}: start a controller (ziti-controller or "
        "ziti-harness up) or give its address with --url"
    )


def test_wrong_admin_password(served):
    url, _ = served
    result = harness("list", "identities", "--url", url, "--password", "not-the-password")
    assert result.returncode == 3
    line = one_line(result)
    assert "refused the login of 'admin'" in line and "--password" in line


def test_https_without_a_trusted_ca_names_the_ca_option_and_works_with_it():
    from controller.pki.loader import load_pki
    from controller.server.tls import TLSServer

    app = create_app()
    pki = load_pki(app.controller.config)
    with TLSServer(app, "127.0.0.1", 0, pki) as server:
        url = f"https://127.0.0.1:{server.port}"
        refused = harness("list", "identities", "--url", url)
        trusted = harness("list", "identities", "--url", url, "--ca", str(pki.folder / "root-ca.cert.pem"))
    app.controller.close()
    assert refused.returncode == 3
    line = one_line(refused)
    assert "not signed by a CA" in line and "--ca FILE" in line and "root-ca.cert.pem" in line
    assert trusted.returncode == 0, trusted.stderr
    assert "Default Admin" in trusted.stdout


def test_bad_yaml_names_file_line_and_column(served, tmp_path):
    url, _ = served
    net = tmp_path / "net.yaml"
    net.write_text("identities:\n  - name: a\n    roleAttributes: [x\n")
    result = harness("apply", str(net), "--url", url, "--quiet")
    assert result.returncode == 2
    assert f"{net}:4:1: " in result.stderr and "Traceback" not in result.stderr


def test_a_refused_network_file_is_reported_without_an_iri_grammar_or_trio(served, tmp_path):
    # where rfc3987-syntax is installed (with jupyter), importing jsonschema built a Lark grammar for the "iri"
    # formats no schema here uses (1.2 s of CPU before the first problem was printed); where trio is, httpcore
    # imported it for an async backend the synchronous client never uses (50 ms for each command that connects)
    from importlib.metadata import PackageNotFoundError, distribution

    installed = []
    for name in ("rfc3987-syntax", "trio"):
        try:
            installed.append(distribution(name).metadata["Name"])
        except PackageNotFoundError:
            pass
    if not installed:
        pytest.skip("neither rfc3987-syntax nor trio is installed: nothing to leave out")
    bad = tmp_path / "bad.yaml"
    bad.write_text("identities:\n  - {name: 5, bogus: 1}\n")
    result = cli("-X", "importtime", "-m", "harness.cli", "apply", str(bad), "--url", served[0])
    assert result.returncode == 2, result.stderr
    assert "unknown field 'bogus'" in result.stderr and "5 is not of type 'string'" in result.stderr
    imported = {
        line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")
    }
    assert {"jsonschema", "httpcore"} <= imported  # it connected, then judged the file
    # a module left out is only tried (one line of its own); one imported brings its submodules and Lark
    assert not [name for name in imported if name.startswith(("lark", "trio.", "rfc3987_syntax."))]


def test_every_problem_of_a_network_file_is_reported_before_anything_is_written(served, tmp_path):
    url, app = served
    net = tmp_path / "net.yaml"
    net.write_text(
        yaml.safe_dump(
            {
                "identities": [
                    {"name": "chk-ana", "roleAtributes": ["sales"]},
                    {"name": "chk-bo", "pasword": "secret-1"},
                ],
                "services": [{"name": "chk-crm"}],
                "servicePolicies": [
                    {"name": "chk-dial", "type": "Dail", "identityRoles": ["@chk-ann"], "serviceRoles": ["@chk-crm"]}
                ],
            }
        )
    )
    for dry in ([], ["--dry-run"]):
        result = harness("apply", str(net), "--url", url, "--quiet", *dry)
        assert result.returncode == 2
        assert f"error: 4 problem(s) in {net}:" in result.stderr
        for expected in (
            "identities/chk-ana: unknown field 'roleAtributes' (did you mean 'roleAttributes'?)",
            "identities/chk-bo: unknown field 'pasword' (did you mean 'password'?)",
            "servicePolicies/chk-dial: type: 'Dail' is not one of Dial, Bind",
            "servicePolicies/chk-dial: identityRoles: no identities named 'chk-ann' (did you mean 'chk-ana'?)",
        ):
            assert f"{net}: {expected}" in result.stderr
    with ZitiClient.in_process(app) as admin:
        admin.login("admin", "admin")
        assert not list(admin.management.iterate("listIdentities", filter='name contains "chk-"'))


def test_a_failure_mid_apply_says_how_far_it_got_and_a_rerun_finishes(served, tmp_path):
    url, app = served
    net = tmp_path / "net.yaml"
    net.write_text(
        yaml.safe_dump({"identities": [{"name": f"mid-{i}"} for i in range(3)], "services": [{"name": "mid-svc"}]})
    )
    app.controller.ops.faults.add("/imports$", method="POST", status=503, count=1)  # the creates: one import
    failed = harness("apply", str(net), "--url", url, "--quiet")
    assert failed.returncode == 1
    assert one_line(failed).startswith("error: 0 of 4 entities applied, then ApiError: 503")
    assert "re-run to finish" in failed.stderr
    again = harness("apply", str(net), "--url", url, "--quiet")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == "4 change(s)"


def test_output_into_a_closed_pipe_ends_quietly():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "generate", "medium"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout.readline().startswith(b"services:")
    proc.stdout.close()  # what `| head -1` does
    assert proc.wait(TIMEOUT) == 0
    assert proc.stderr.read() == b""


def test_up_checks_its_ports_before_writing_anything(taken_port, tmp_path):
    net = tmp_path / "net.yaml"
    net.write_text(yaml.safe_dump({"identities": [{"name": "dev", "enrollment": {"ott": True}}]}))
    result = harness(
        "up",
        str(net),
        "--data",
        str(tmp_path / "data"),
        "--port",
        "0",
        "--router-port",
        "0",
        "--http-port",
        str(taken_port),
        "--out",
        str(tmp_path / "ids"),
    )
    assert result.returncode == 4
    assert result.stderr.splitlines() == [
        f"reading {net}",
        f"error: HTTP port {taken_port} on 127.0.0.1 is in use; "
        "stop what uses it or pick another port with --http-port PORT",
    ]
    assert not (tmp_path / "ids").exists() and not (tmp_path / "data" / "db").exists()


def test_harness_help_documents_exit_codes_and_every_option_has_help():
    from harness.cli import parser

    assert "exit codes:" in harness("--help").stdout
    top = parser()
    for name, sub in top._subparsers._group_actions[0].choices.items():
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
