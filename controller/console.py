"""Command lines speak to people: one line per mistake, a documented exit code.

Both command lines (``ziti-controller`` and ``ziti-harness``) run their work
through :func:`run`: a known failure becomes ``error: <what to do>`` on
standard error and its exit code; ``--debug`` shows the traceback instead;
a closed pipe (``... | head``) ends quietly.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import re
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable, NoReturn

#: exit codes, documented in --help and the README
OK, FAILED, USAGE, UNREACHABLE, LOCAL, INTERRUPTED = 0, 1, 2, 3, 4, 130
EXIT_CODES = """exit codes:
  0    success
  1    the work failed (a failed check, a difference, a change not applied)
  2    usage: a bad option, file or network definition
  3    the controller cannot be reached or refused the login (URL, password, TLS trust)
  4    this machine: a port in use, a data folder in use, damaged or too new
  130  interrupted (Ctrl-C)"""


class CliError(Exception):
    """A failure a person can fix: ``message`` says what to do."""

    def __init__(self, message: str, code: int = FAILED):
        super().__init__(message)
        self.code = code


Translator = Callable[[BaseException], "CliError | None"]


# -- options: checked while parsing, so a bad value is a usage error (2) before anything runs ----------


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose mistakes are one line (``error: ...``) and exit code 2, as every other mistake."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"error: {self.prog}: {with_suggestion(message)} ({self.prog} --help lists the options)\n")


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


def with_suggestion(message: str) -> str:
    """argparse's ``invalid choice`` message, with ``did you mean`` the closest choice when one is close."""
    import difflib

    found = _INVALID_CHOICE.search(message)
    if not found:
        return message
    # quoted choices up to Python 3.11, bare ones (comma-separated) from 3.12
    choices = re.findall(r"'([^']*)'", found.group(2)) or [c.strip() for c in found.group(2).split(",")]
    close = difflib.get_close_matches(found.group(1), choices, n=1)
    return f"{message}: did you mean '{close[0]}'?" if close else message


def port_number(text: str) -> int:
    """An ``type=`` for port options: 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number: give 0 (any free port) to 65535")
    return port


_DNS_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def advertised_address(text: str) -> tuple[str, int | None]:
    """An ``type=`` for ``--advertise``: ``HOST`` or ``HOST:PORT`` (HOST a DNS name, an IPv4 or a ``[IPv6]``
    address; PORT 1-65535, default the HTTPS port) -> ``(host, port or None)``."""
    host, port = text, None
    bracketed = re.fullmatch(r"\[([^\]]*)\](?::(\d*))?", text)
    if bracketed:
        host, port = bracketed.group(1), bracketed.group(2)
    elif text.count(":") == 1:
        host, port = text.split(":")
    if port is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        raise argparse.ArgumentTypeError(f"{text!r}: the port must be a number from 1 to 65535 (HOST:PORT)")
    if not _is_host(host, ipv6=bool(bracketed) or text.count(":") > 1):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an address clients can use: give HOST or HOST:PORT, HOST a DNS name, an IPv4 address "
            "or an IPv6 address in brackets (e.g. [::1]:1280)"
        )
    return host, int(port) if port else None


def host_name(text: str) -> str:
    """An ``type=`` for an address without a port (``ziti edge quickstart --ctrl-address``): a DNS name or an
    IPv4 address (the quickstart's URLs and control channel addresses are not written for IPv6 yet)."""
    if ":" in text and _is_host(text.strip("[]"), ipv6=True):
        raise argparse.ArgumentTypeError(
            f"{text!r}: an IPv6 address is not supported here yet; give a DNS name (e.g. localhost) or an IPv4 address"
        )
    if not _is_host(text, ipv6=False):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an address clients can use: give a DNS name or an IPv4 address, without a scheme or "
            "a port (the ports have options of their own)"
        )
    return text


def _is_host(host: str, *, ipv6: bool) -> bool:
    try:
        return ipaddress.ip_address(host).version == (6 if ipv6 else 4)
    except ValueError:
        pass
    labels = host.rstrip(".").split(".")
    return not ipv6 and len(host) <= 253 and all(_DNS_LABEL.fullmatch(label) for label in labels)


def url_host(host: str) -> str:
    """``host`` as it stands in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def positive_minutes(text: str) -> int:
    """An ``type=`` for durations in whole minutes, at least 1."""
    try:
        minutes = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of minutes") from None
    if minutes < 1:
        raise argparse.ArgumentTypeError(f"{minutes} minutes: give a whole number of minutes, at least 1")
    return minutes


def controller_url(text: str) -> str:
    """An ``type=`` for controller URLs: ``http://`` or ``https://`` with a host."""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.strip("/"):
        hint = f" (did you mean http://{text} or https://{text}?)" if not sep and text else ""
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a controller URL: write http://HOST:PORT or https://...{hint}"
        )
    return text


def check_host(host: str) -> None:
    """CliError unless ``host`` is an address of this machine that a listener can bind."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as ex:
        raise CliError(
            f"--host {host}: no such address ({getattr(ex, 'strerror', None) or ex}); give an address of this "
            "machine, e.g. 127.0.0.1 (loopback only) or 0.0.0.0 (every interface)",
            USAGE,
        ) from ex
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address[0], 0))
        except OSError as ex:
            raise CliError(
                f"--host {host}: this machine cannot listen on that address ({ex.strerror or ex}); give an address "
                "of this machine, e.g. 127.0.0.1 (loopback only) or 0.0.0.0 (every interface)",
                USAGE,
            ) from ex


def check_data_folder(path: Path, option: str = "--data") -> None:
    """CliError when ``path`` cannot become a data folder; writes nothing (ports are checked after this)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise CliError(f"{option} {path} is a file, not a folder: give a folder path (it is made if missing)", USAGE)
    existing = path
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise CliError(
            f"{option} {path}: {existing} is a file, so no folder can be made there; give another folder path", USAGE
        )
    if existing.exists() and not os.access(existing, os.W_OK | os.X_OK):
        raise CliError(
            f"{option} {path}: {existing} cannot be written by this user (or its file system is read-only); "
            f"give {option} a writable folder",
            LOCAL,
        )


# -- failures: what each kind of exception means to a person ----------------------------------------


def controller_errors(ex: BaseException) -> CliError | None:
    """Failures of the controller's own start: ports, the data folder, the PKI, this machine."""
    from controller.pki.files import DamagedFile
    from controller.server.lifecycle import ListenerError, PortGivenTwice
    from controller.store.journal import StoreCorruptError, StoreFormatError, StoreInUseError

    if isinstance(ex, ListenerError):
        return CliError(str(ex), LOCAL)
    if isinstance(ex, PortGivenTwice):
        return CliError(str(ex), USAGE)
    if isinstance(ex, DamagedFile):
        return CliError(
            f"the PKI file {ex.path} is damaged ({ex.reason}): restore it from a backup of the data folder, "
            f"or move {ex.path.parent} away to make a new PKI (clients must then trust the new CA)",
            LOCAL,
        )
    if isinstance(ex, StoreInUseError):
        return CliError(
            f"another controller is using this data folder ({ex}); stop it, "
            "or give this one its own folder with --data",
            LOCAL,
        )
    if isinstance(ex, StoreCorruptError):
        return CliError(
            f"the store is damaged: {ex}; restore a backup of the data folder, or move it away to start afresh", LOCAL
        )
    if isinstance(ex, StoreFormatError):
        return CliError(f"{ex}; or point --data at another folder", LOCAL)
    return system_errors(ex)


#: errno -> (exit code, what to do) for failures of files and folders this machine refused
_REFUSED = {
    errno.EROFS: "its file system is read-only: choose a folder on a writable one",
    errno.EACCES: "this user may not write there: choose a folder this user owns",
    errno.EPERM: "the system does not allow it there: choose an ordinary folder",
    errno.ENOSPC: "the disk is full: free some space or choose a folder on another disk",
    errno.EDQUOT: "the disk quota is used up: free some space or choose a folder on another disk",
}


def system_errors(ex: BaseException) -> CliError | None:
    """Files, folders and numbers a person gave that this machine cannot use (both command lines)."""
    if isinstance(ex, OverflowError) and "port" in str(ex):
        return CliError(f"{ex}: give a port number from 0 (any free port) to 65535", USAGE)
    if not isinstance(ex, OSError) or ex.filename is None:
        return None
    name = ex.filename
    if isinstance(ex, IsADirectoryError):
        return CliError(f"{name} is a folder, not a file: give the path of the file itself", USAGE)
    if isinstance(ex, (NotADirectoryError, FileExistsError)):
        return CliError(
            f"{name}: a file stands where a folder is needed; give a folder path (e.g. --data DIR) that is "
            "not inside a file",
            USAGE,
        )
    if isinstance(ex, FileNotFoundError):
        return CliError(f"no such file or folder: {name}; check the path", USAGE)
    if ex.errno in _REFUSED:
        return CliError(f"cannot write {name}: {_REFUSED[ex.errno]}", LOCAL)
    return None


def run(work: Callable[[], int], *, debug: bool, translators: tuple[Translator, ...] = (controller_errors,)) -> int:
    """Run ``work`` and turn what it raises into one line and an exit code."""
    try:
        code = work()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _closed_pipe()
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        print("interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as ex:  # noqa: BLE001 - the one place that speaks for every failure
        error = ex if isinstance(ex, CliError) else _translate(ex, translators)
        if debug:
            traceback.print_exc()
        if error is None:
            print(f"error: {type(ex).__name__}: {ex} (--debug shows the traceback)", file=sys.stderr)
            return FAILED
        print(f"error: {error}", file=sys.stderr)
        return error.code


def _translate(ex: BaseException, translators) -> CliError | None:
    for translate in translators:
        error = translate(ex)
        if error is not None:
            return error
    return None


def _closed_pipe() -> int:
    # NOTE(cli): the reader went away (`| head`): point stdout at /dev/null so the
    # interpreter's final flush does not raise again, and end without a word.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return OK


#: modules third-party libraries import when installed, though no command line here uses them:
#: rfc3987-syntax (``import jsonschema`` builds a Lark grammar for the "iri" formats: 1.2 s of CPU),
#: trio (httpcore probes it for an async backend: 50 ms for each command that connects; ours are sync) and
#: httpx's own command line (``import httpx`` loads click, rich and pygments for it: 15 ms of CPU in each
#: process that imports httpx, a ninth of a ``ziti edge`` command's)
UNUSED_IMPORTS = ("rfc3987_syntax", "trio", "httpx._main")


def without_unused_imports(names: tuple[str, ...] = UNUSED_IMPORTS) -> None:
    """Make ``import NAME`` raise ImportError in this process for each of ``names`` not imported yet.

    jsonschema and httpcore treat that as "not installed", and httpx then defines ``httpx.main`` as a
    stub saying its command line's dependencies are missing. rfc3987-syntax comes with jupyter-events
    (jsonschema[format-nongpl]); no schema of the controller, the harness or nbformat uses the "iri"
    formats, so every check stays the same. Command lines call this first thing, and so do the Locust
    file (where trio would not even import under gevent) and the test suite's processes; ``router`` does
    the same itself, as it imports nothing of the controller.
    """
    for name in names:
        sys.modules.setdefault(name, None)  # type: ignore[assignment]


def exit_process(code: int, *, grace: float = 1.0) -> None:
    """Exit with ``code``, even when a listener thread did not stop in time.

    A thread that is just finishing (a pool worker that has handed over its
    answer) gets ``grace`` seconds to end; one still running after that is left
    behind by ``os._exit``, with the exit code the work earned.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    others = [t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()]
    deadline = time.monotonic() + grace
    try:
        for thread in others:
            thread.join(max(0.0, deadline - time.monotonic()))
    except KeyboardInterrupt:  # Ctrl-C during the grace: stop waiting, no traceback
        pass
    if any(thread.is_alive() for thread in others):
        os._exit(code)  # NOTE(cli): a listener that missed the stop deadline must not keep the process up
    sys.exit(code)
