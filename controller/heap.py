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
