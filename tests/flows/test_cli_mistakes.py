"""A new user's mistakes on both command lines: one line saying what to do, the README's exit code.

2 usage (a bad option, file or network definition), 3 cannot reach, 4 this machine. Each case runs
the real command line as a subprocess; nothing here may end in a raw exception name or exit 1.
"""

from __future__ import annotations

import errno
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from controller.app import create_app
from controller.config import Config
from controller.server.serve import ThreadedServer
from harness.client import ZitiClient
from harness.processes.server import free_port
from tests.flows.test_cli_errors import ROOT, TIMEOUT, _start, _stopped, controller, harness, one_line


def no_exception_name(line: str) -> None:
    for name in ("Error:", "OverflowError", "Protocol", "Exception"):
        assert name not in line, line


#: both HTTP ports of ``python -m controller`` on any free one (``controller`` adds the others): the defaults may be held by
#: another test running at the same time, and a port in use is reported before the mistake a test makes
ANY_PORTS = ("--port", "0", "--http-port", "0")


def up(*args: str, **kwargs):
    return harness("up", "--port", "0", "--http-port", "0", "--no-router", "--exit-after-start", *args, **kwargs)


def made_folder(path: Path, password: str = "admin") -> Path:
    """A data folder made by a controller (store and PKI), then closed."""
    app = create_app(Config(data_dir=path, admin_password=password))
    app.controller.close()
    return path


@pytest.fixture(scope="module")
def served():
    app = create_app(Config(simulation=True))
    with ThreadedServer(app) as server:
        yield server.url, app
    app.controller.close()


# -- the data folder ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["controller", "up"])
def test_data_that_is_a_file_is_a_usage_error_naming_it(command, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    for data in (afile, afile / "sub"):
        result = controller("--data", str(data), *ANY_PORTS) if command == "controller" else up("--data", str(data))
        assert result.returncode == 2, result.stderr
        line = one_line(result)
        no_exception_name(line)
        assert str(afile) in line and "is a file" in line and "folder" in line


@pytest.mark.parametrize("command", ["controller", "up"])
def test_data_where_the_system_refuses_writes_is_this_machine(command):
    data = "/sys/ziti-data"  # sysfs: even root may not make a folder there
    result = controller("--data", data, *ANY_PORTS) if command == "controller" else up("--data", data)
    assert result.returncode == 4, result.stderr
    line = one_line(result)
    no_exception_name(line)
    assert line.startswith(f"error: cannot write {data}") and "choose" in line


@pytest.mark.parametrize(
    "number, words",
    [(errno.EROFS, "read-only"), (errno.EACCES, "this user may not write"), (errno.ENOSPC, "disk is full")],
)
def test_a_refused_write_maps_to_this_machine_with_what_to_do(number, words):
    from controller.console import LOCAL, USAGE, controller_errors

    error = controller_errors(OSError(number, "refused", "/mnt/ro/data/db"))
    assert error.code == LOCAL and "/mnt/ro/data/db" in str(error) and words in str(error)
    for kind in (NotADirectoryError, FileExistsError):
        assert controller_errors(kind(errno.EEXIST, "x", "/tmp/afile/db")).code == USAGE
    assert controller_errors(IsADirectoryError(errno.EISDIR, "x", "/tmp/net")).code == USAGE


@pytest.mark.parametrize("command", ["controller", "up"])
def test_a_damaged_pki_file_is_named(command, tmp_path):
    data = made_folder(tmp_path / "data")
    damaged = data / "pki" / "root-ca.cert.pem"
    damaged.write_text("-----BEGIN CERTIFICATE-----\nnot base64 !\n-----END CERTIFICATE-----\n")
    result = controller("--data", str(data), *ANY_PORTS) if command == "controller" else up("--data", str(data))
    assert result.returncode == 4, result.stderr
    line = one_line(result)
    no_exception_name(line)
    assert f"the PKI file {damaged} is damaged" in line and "restore it from a backup" in line


# -- options -------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["controller", "up"])
@pytest.mark.parametrize("option", ["--port", "--http-port", "--router-port", "--ctrl-port"])
def test_a_port_out_of_range_is_a_usage_error(command, option, tmp_path):
    args = ("--data", str(tmp_path / "data"), option, "99999")
    result = controller(*args) if command == "controller" else harness("up", *args, "--exit-after-start")
    assert result.returncode == 2, result.stderr
    line = one_line(result)
    no_exception_name(line)
    assert f"argument {option}: 99999 is not a port number" in line and "0 (any free port) to 65535" in line
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("value", ["5", "many"])
def test_a_raft_snapshot_threshold_that_is_not_a_count_of_entries_is_a_usage_error(value, tmp_path):
    result = controller("--data", str(tmp_path / "data"), "--cluster", "--raft-snapshot-threshold", value)
    assert result.returncode == 2, result.stderr
    line = one_line(result)
    no_exception_name(line)
    assert "argument --raft-snapshot-threshold:" in line and "whole number of entries" in line
    assert not (tmp_path / "data").exists()


def test_a_host_that_cannot_be_bound_names_the_host_not_the_port(tmp_path):
    for host in ("192.0.2.77", "no-such-host.invalid"):  # TEST-NET-1: on no interface of this machine
        result = controller(
            "--data", str(tmp_path / "data"), "--host", host, "--admin-password", "Long-Pass-1", *ANY_PORTS
        )
        assert result.returncode == 2, result.stderr
        line = one_line(result)
        assert line.startswith(f"error: --host {host}:") and "port" not in line.split(";")[0]
        assert "127.0.0.1" in line
    assert not (tmp_path / "data").exists()


def test_a_negative_session_timeout_is_refused(tmp_path):
    result = controller("--data", str(tmp_path / "data"), "--session-timeout", "-5")
    assert result.returncode == 2
    assert "argument --session-timeout: -5 minutes" in one_line(result) and "at least 1" in result.stderr
    assert not (tmp_path / "data").exists()


def test_argument_mistakes_are_one_line_on_both_command_lines():
    for result in (controller("--port", "eighty"), harness("list", "identities", "--bogus")):
        assert result.returncode == 2
        line = one_line(result)
        assert line.startswith("error: ") and "--help lists the options" in line


def test_a_weak_admin_password_is_refused_before_anything_is_written(tmp_path):
    result = controller("--data", str(tmp_path / "data"), *ANY_PORTS, "--admin-password", "abc")
    assert result.returncode == 2
    line = one_line(result)
    no_exception_name(line)
    assert "--admin-password" in line and "at least 5 characters" in line
    assert not (tmp_path / "data").exists()


# -- reaching a controller -----------------------------------------------------------------------


def test_http_to_the_https_port_says_to_write_https():
    from controller.pki.loader import load_pki
    from controller.server.tls import TLSServer

    app = create_app()
    with TLSServer(app, "127.0.0.1", 0, load_pki(app.controller.config)) as server:
        result = harness("list", "identities", "--url", f"http://127.0.0.1:{server.port}")
    app.controller.close()
    assert result.returncode == 3, result.stderr
    line = one_line(result)
    no_exception_name(line)
    assert "https://" in line


def _read_request(conn) -> None:
    """Read one HTTP request, head and body, so the client waits for the answer when the reset comes."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536) or b"\r\n\r\n"
    head, _, body = data.partition(b"\r\n\r\n")
    fields = dict(line.split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
    length = int({name.strip().lower(): value for name, value in fields.items()}.get(b"content-length", 0))
    while len(body) < length:
        body += conn.recv(65536) or b"\0" * length


def test_a_connection_reset_on_plain_http_says_to_write_https():
    # the TLS port resets a plain HTTP request about as often as it answers garbage (a flaky CI failure said
    # "ReadError: [Errno 104] Connection reset by peer"); a listener resetting after each request makes it certain
    import socket
    import struct
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def reset_each():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            _read_request(conn)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # an RST, not a FIN

    threading.Thread(target=reset_each, daemon=True).start()
    try:
        result = harness("list", "identities", "--url", f"http://127.0.0.1:{port}")
    finally:
        listener.close()
    assert result.returncode == 3, result.stderr
    line = one_line(result)
    no_exception_name(line)
    assert f"http://127.0.0.1:{port} closed the connection" in line and "https://" in line


def test_a_url_without_a_scheme_is_a_usage_error():
    result = harness("export", "--url", "127.0.0.1:1281")
    assert result.returncode == 2
    line = one_line(result)
    no_exception_name(line)
    assert "http://127.0.0.1:1281" in line


@pytest.mark.parametrize("command", ["apply", "up"])
def test_a_folder_given_as_the_network_file(command, served, tmp_path):
    folder = tmp_path / "nets"
    folder.mkdir()
    if command == "apply":
        result = harness("apply", str(folder), "--url", served[0], "--quiet")
    else:
        result = up(str(folder))
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.stderr
    no_exception_name(line)
    assert str(folder) in line and "is a folder, not a file" in line


# -- telling the truth ---------------------------------------------------------------------------


def test_the_banner_never_guesses_the_password_of_a_folder_made_earlier(tmp_path):
    data = made_folder(tmp_path / "data", password="Made-With-This-1")
    proc, banner = _start(data)
    try:
        login = next(line for line in banner if "admin login:" in line)
    finally:
        _stopped(proc, signal.SIGTERM)
    assert "admin / admin" not in login and "Made-With-This-1" not in login
    assert login.strip() == "admin login: admin / the password given when this folder was made"


def test_apply_quiet_prints_the_summary_only(served, tmp_path):
    net = tmp_path / "net.yaml"
    net.write_text(yaml.safe_dump({"identities": [{"name": f"quiet-{i}"} for i in range(5)]}))
    result = harness("apply", str(net), "--url", served[0], "--quiet")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["5 change(s)"] and result.stderr == ""


def applying_in_background(url: str, app, tmp_path: Path, names: list[str], latency_ms: int) -> subprocess.Popen:
    """``ziti-harness apply`` of identities ``names``, returned once its import is held ``latency_ms`` by the
    controller (the moment a Ctrl-C has to wait for the answer)."""
    net = tmp_path / "net.yaml"
    net.write_text(yaml.safe_dump({"identities": [{"name": name} for name in names]}))
    fault = app.controller.ops.faults.add("/imports$", method="POST", latency_ms=latency_ms, count=1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "apply", str(net), "--url", url, "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
    )
    deadline = time.monotonic() + TIMEOUT
    while fault.hits == 0 and proc.poll() is None and time.monotonic() < deadline:  # the import has reached it
        time.sleep(0.02)
    return proc


def test_ctrl_c_while_the_controller_imports_reports_what_it_applied(served, tmp_path):
    url, app = served
    proc = applying_in_background(url, app, tmp_path, [f"sigint-{i}" for i in range(6)], latency_ms=1500)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130, err
    assert "all 6 entities applied, then interrupted; nothing is left to apply" in err and "0 of 6" not in err
    assert "re-run to finish (" not in err  # nothing is unfinished
    with ZitiClient.in_process(app) as admin:
        admin.login("admin", "admin")
        assert len(list(admin.management.iterate("listIdentities", filter='name contains "sigint-"'))) == 6


#: ``apply``'s import interrupted the moment it is on its way: ``send`` (the request) Ctrl-Cs the main thread itself,
#: and the long switch interval keeps the interpreter on it until it sleeps, so the signal lands while the main
#: thread is still starting the request's thread
INTERRUPTED_AS_IT_LEAVES = """
import signal, sys, threading, time
from harness.network.apply_fast import _answer_of

sys.setswitchinterval(1.0)
main = threading.get_ident()

def send():
    signal.pthread_kill(main, signal.SIGINT)
    time.sleep(0.3)
    return "applied"

answer, interrupted = _answer_of(send)
print(answer, type(interrupted).__name__)
"""


def test_a_ctrl_c_as_the_import_leaves_still_waits_for_its_answer():
    """``ziti-harness apply`` once said "0 of 6 entities applied, then interrupted" for an import the controller
    applied: the Ctrl-C landed after the request left and before the wait for its answer began."""
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_AS_IT_LEAVES], capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["applied", "KeyboardInterrupt"]
    assert "waiting for the controller's answer" in done.stderr


def test_a_second_ctrl_c_stops_waiting_for_the_import_and_says_how_to_see_where_it_is(served, tmp_path):
    url, app = served
    proc = applying_in_background(url, app, tmp_path, [f"twice-{i}" for i in range(3)], latency_ms=20_000)
    proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + TIMEOUT
    while "Ctrl-C again" not in (line := proc.stderr.readline()) and line and time.monotonic() < deadline:
        pass
    assert "waiting for the controller's answer" in line
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert time.monotonic() - began < 15  # not the import's 20 s: the process does not wait for it
    assert proc.returncode == 130, err
    assert "diff shows where it is" in err


def test_show_delete_and_export_names_with_non_ascii_characters(served):
    url, app = served
    names = ["josé.müller", 'quote"and\\slash', "日本-service"]
    with ZitiClient.in_process(app) as admin:
        admin.login("admin", "admin")
        for name in names:
            admin.management.create_identity(body={"name": name, "type": "User", "isAdmin": False})
    exported = harness("export", "--url", url)
    assert exported.returncode == 0, exported.stderr
    assert "josé.müller" in exported.stdout and "日本-service" in exported.stdout and "\\u" not in exported.stdout
    for name in names:
        shown = harness("show", "identity", name, "--url", url, "-j")
        assert shown.returncode == 0, shown.stderr
        assert f'"name": {__import__("json").dumps(name)}' in shown.stdout
        deleted = harness("delete", "identity", name, "--url", url)
        assert deleted.returncode == 0, deleted.stderr
        assert deleted.stdout.strip() == f"deleted identities/{name}"


def test_a_second_controller_is_told_to_pick_its_own_router_port(tmp_path):
    from tests.flows.test_cli_errors import cli

    with __import__("socket").socket() as taken:  # the first controller's router port
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli(
            "-m", "controller", "--data", str(tmp_path / "data"), "--port", str(free_port()), "--http-port", "0",
            "--ctrl-port", "0", "--router-port", str(port),
        )  # fmt: skip
    assert result.returncode == 4
    line = one_line(result)
    assert f"port {port} on 127.0.0.1 is in use" in line and "--router-port PORT" in line
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    "args, module, distribution", [(["--help"], "yaml", "PyYAML"), (["generate", "small"], "yaml", "PyYAML")]
)
def test_without_the_harness_extra_ziti_harness_says_which_install_it_needs(args, module, distribution):
    # the base install (``pip install .``) lacks the extra: as if its module were not installed
    probe = f"import sys; sys.modules[{module!r}] = None; from harness.cli import entry; entry()"
    result = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 4, result.stderr
    assert one_line(result) == (
        f"error: this needs the harness extra ({distribution} not installed): "
        'pip install "/path/to/checkout[harness]" (in a checkout: pip install -e ".[harness]")'
    )
    assert result.stdout == ""


def test_ziti_harness_help_is_prose_that_says_where_commands_connect():
    result = harness("--help")
    assert result.returncode == 0
    head = result.stdout.split("positional arguments:")[0]
    assert "``" not in head  # no reStructuredText from the module's docstring
    assert "Without --url, commands use the login `ziti edge login`" in head and "http://127.0.0.1:1281" in head
