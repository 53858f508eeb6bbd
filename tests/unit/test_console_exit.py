"""How both console scripts end: with the exit code the work earned, whatever threads are left.

Each case runs ``controller.console.exit_process`` in a fresh interpreter, the
way ``ziti-controller`` and ``ziti-harness`` end, and reads its exit code.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ended(thread_body: str, code: int) -> tuple[int, float]:
    script = textwrap.dedent(
        f"""
        import threading, time
        from controller.console import exit_process
        threading.Thread(target=lambda: {thread_body}, name="left-over").start()
        exit_process({code})
        """
    )
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stderr == "", done.stderr
    return done.returncode, time.monotonic() - began


@pytest.mark.parametrize("code", [0, 1, 4])
def test_a_thread_that_is_just_finishing_leaves_the_exit_code_as_it_was(code):
    # a pool worker that has handed over its answer and is on its way out: success stays success
    assert ended("time.sleep(0.2)", code)[0] == code


@pytest.mark.parametrize("code", [0, 3])
def test_a_stuck_thread_does_not_keep_the_process_up_or_change_its_exit_code(code):
    returncode, took = ended("time.sleep(600)", code)
    assert returncode == code
    assert took < 30  # the grace is a second; the thread would hold the process for ten minutes


def test_ctrl_c_during_the_grace_ends_the_wait_without_a_traceback():
    script = textwrap.dedent(
        """
        import threading, time
        from controller.console import exit_process
        threading.Thread(target=lambda: time.sleep(600), name="left-over").start()
        print("waiting", flush=True)
        exit_process(0, grace=300)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline() == "waiting\n"
    time.sleep(0.5)  # into the join (it starts right after the line)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert err == ""
