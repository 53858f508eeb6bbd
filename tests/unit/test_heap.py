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


def test_building_an_app_runs_no_collection_and_leaves_the_collector_as_it_found_it(tmp_path):
    """A collection between the bulk steps of a start walks every record built so far (seconds at scale)."""
    import gc
    import inspect
    import sys

    import pytest

    from controller import app as app_module
    from controller.app import create_app
    from controller.config import Config

    building = inspect.unwrap(app_module.create_app).__code__
    inside: list[int] = []

    def count(phase, info):
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not building:
            frame = frame.f_back
        if phase == "start" and frame is not None:
            inside.append(info["generation"])

    thresholds = gc.get_threshold()
    gc.callbacks.append(count)
    gc.set_threshold(1)  # without the pause, the first allocations inside would start collections
    try:
        app = create_app(Config())
        assert inside == [] and gc.isenabled()
        app.controller.close()
        gc.disable()
        create_app(Config()).controller.close()
        assert not gc.isenabled(), "a collector the caller paused stays paused"
        gc.enable()
        (tmp_path / "db").write_text("not a folder")
        with pytest.raises(NotADirectoryError):
            create_app(Config(data_dir=tmp_path))
        assert gc.isenabled(), "a refused start resumes the collector too"
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(count)
        gc.enable()


SURVIVORS = """
import gc, weakref
from controller.heap import SurvivorFreezer

class Held(dict):
    pass

freezer = SurvivorFreezer().install()
held = [Held(n=n) for n in range(1000)]
dropped = Held(x=1)
gone = weakref.ref(dropped)
gc.collect()
assert freezer.freezes == 1, freezer.freezes
assert not any(obj is held[0] for obj in gc.get_objects()), "a survivor of a full collection is still scanned"
del dropped
assert gone() is None, "a frozen survivor without cycles is still freed by refcounting"
young = Held(y=2)
gc.collect(1)
assert freezer.freezes == 1, "only full collections freeze"
assert any(obj is young for obj in gc.get_objects())
print("ok")
"""


def test_survivors_of_a_full_collection_leave_the_collector_and_are_still_freed_when_dropped():
    done = subprocess.run([sys.executable, "-c", SURVIVORS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
