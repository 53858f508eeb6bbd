"""The process heap of a serving controller: what is loaded at start stays out of the cyclic GC.

The store's records, the policy engine's indexes, the PKI and every imported
module live as long as the process. Left in the collector's oldest generation,
each full collection walks all of them: about 0.1-0.3 s for an empty controller
on a 2-core machine, seconds with a million records. Requests in flight wait out
that pause, and it comes back every time the heap grows by a quarter, so it costs
every write a share of it. ``freeze_started_heap`` moves what exists after start
into the permanent generation (``gc.freeze``): later collections walk only what
came after. Frozen objects are still freed by reference counting, as records and
events are; only reference cycles among them would outlive their use, and the
objects alive at start are the long-lived ones.

It freezes without collecting first: building a controller leaves no cyclic
garbage (a collection right after start frees nothing, on the default and on
the large shape alike), and that collection would walk every record once, 0.3 s
on the large shape, between start and ready. Called while the collector is
paused (``controller.gc_pause``), it also spares the young-generation walk the
collector would make of every record built during the pause.
"""

from __future__ import annotations

import gc


def freeze_started_heap() -> int:
    """Freeze every object alive; returns how many are frozen."""
    gc.freeze()
    return gc.get_freeze_count()


class SurvivorFreezer:
    """After each full collection, what survived it leaves the collector too (``gc.freeze``).

    A serving controller's heap grows with what its clients hold: each keep-alive connection's
    objects, each session and verified token. Left in the oldest generation, every full collection
    walks all of them (0.5-1.5 s with thousands of SDKs connected, with every request waiting), and
    one comes whenever a quarter as many objects again have been promoted. Frozen after the
    collection that found them alive, they are walked no more; later full collections walk only
    what came since. Frozen objects are still freed by reference counting (a closed connection
    breaks its own cycles, see ``controller.server.http_connection``); only cyclic garbage among
    them would stay, so once the frozen heap has doubled since the last full walk, the next full
    collection walks it all again (``gc.unfreeze`` first) and frees any such cycles: a rare,
    bounded pass instead of one per quarter of growth.
    """

    def __init__(self):
        self.baseline = gc.get_freeze_count()
        self.freezes = self.walks = 0

    def __call__(self, phase: str, info: dict) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        frozen = gc.get_freeze_count()
        if frozen > 2 * max(self.baseline, 100_000):
            gc.unfreeze()  # the next full collection walks everything once
            self.walks += 1
            self.baseline = frozen
            return
        gc.freeze()
        self.freezes += 1

    def install(self) -> "SurvivorFreezer":
        if not any(isinstance(callback, SurvivorFreezer) for callback in gc.callbacks):
            gc.callbacks.append(self)
        return self
