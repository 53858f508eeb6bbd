"""Command lines speak to people: one line per mistake, a documented exit code.

Both command lines (``ziti-controller`` and ``ziti-harness``) run their work
through :func:`run`: a known failure becomes ``error: <what to do>`` on
standard error and its exit code; ``--debug`` shows the traceback instead;
a closed pipe (``... | head``) ends quietly.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Callable

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


def controller_errors(ex: BaseException) -> CliError | None:
    """Failures of the controller's own start: ports and the data folder."""
    from controller.server.lifecycle import ListenerError
    from controller.store.journal import StoreCorruptError, StoreFormatError, StoreInUseError

    if isinstance(ex, ListenerError):
        return CliError(str(ex), LOCAL)
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


def exit_process(code: int) -> None:
    """Exit with ``code``, even when a listener thread did not stop in time."""
    sys.stdout.flush()
    sys.stderr.flush()
    stuck = [t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()]
    if stuck:  # NOTE(cli): a listener that missed the stop deadline must not keep the process up
        os._exit(code or 1)
    sys.exit(code)
