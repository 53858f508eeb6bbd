"""``controller.heap``: what exists after start leaves the cyclic GC, and is still freed when dropped."""

from __future__ import annotations

import subprocess
import sys

# Run in a fresh interpreter: freezing the test process's own heap would outlive the test.
PROBE = """
import gc, weakref
from controller.heap import freeze_started_heap

class Record(dict):
    pass

kept, dropped = Record(a=1), Record(b=2)
gone = weakref.ref(dropped)
frozen = freeze_started_heap()
tracked = gc.get_objects()
assert frozen > 1000, frozen
assert not any(obj is kept for obj in tracked), "a started object is still scanned"
del dropped
assert gone() is None, "a frozen object without cycles must still be freed by refcounting"
fresh = Record(c=3)
assert any(obj is fresh for obj in gc.get_objects()), "objects made after start are scanned as usual"
print("ok")
"""


def test_started_objects_leave_the_collector_and_are_still_freed_when_dropped():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
