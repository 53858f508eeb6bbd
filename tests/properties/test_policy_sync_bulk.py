"""PolicySync on a real store: commits as large as the network take the bulk rebuild path.

Random networks are committed in random batches; with the bulk threshold lowered,
both paths (per-record updates and bulk rebuild) run. After every commit the
synced engine answers like an engine fed the same operations one by one, and its
listeners hear of at least every identity whose access changed.
"""

from __future__ import annotations

from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from controller.policy import sync
from controller.policy.verify import problems
from controller.store.db import Store
from tests.properties.test_engine_bulk import answers
from tests.properties.test_engine_oracle import SETTINGS, Harness, changes, concretize, networks

TABLES = {
    "identities": "identities",
    "services": "services",
    "edgeRouters": "routers",
    "postureChecks": "posture_checks",
}
POLICY_TABLES = {
    "servicePolicies": "service_policies",
    "edgeRouterPolicies": "edge_router_policies",
    "serviceEdgeRouterPolicies": "service_edge_router_policies",
}
ROLE_FIELDS = {
    "identities": "identity_roles",
    "services": "service_roles",
    "edgeRouters": "edge_router_roles",
    "postureChecks": "posture_check_roles",
}


def write(store: Store, op) -> None:
    """One engine operation as the store record it stands for."""
    if op[0] == "upsert":
        record = {"id": op[2], "role_attributes": list(op[3])}
        store.put(TABLES[op[1]], op[2], {**record, "is_edge": True} if op[1] == "edgeRouters" else record)
    elif op[0] == "remove":
        store.delete(TABLES[op[1]], op[2])
    elif op[0] == "policy":
        _, pkind, pid, ptype, semantic, lists = op
        record = {"id": pid, "semantic": semantic, **{ROLE_FIELDS[kind]: roles for kind, roles in lists.items()}}
        store.put(POLICY_TABLES[pkind], pid, {**record, "type": ptype} if ptype else record)
    else:
        store.delete(POLICY_TABLES[op[1]], op[2])


@SETTINGS
@given(networks(), st.lists(changes(), max_size=20), st.lists(st.integers(1, 8), min_size=1, max_size=12))
def test_synced_engine_matches_step_by_step_in_any_batching(network, steps, sizes):
    reference, store = Harness(), Store(None)
    policy_sync, reported = sync.PolicySync(store), set()
    store.add_listener(policy_sync.on_changes)  # as the registry registers it
    policy_sync.engine.add_listener(reported.update)
    ops = network + steps
    with mock.patch.object(sync, "BULK_BATCH", 1):
        while ops:
            batch, ops = ops[: sizes[0]], ops[sizes[0] :]
            sizes = sizes[1:] or sizes
            before = reference.oracle.signatures()
            reported.clear()
            with store.lock, store.transaction():
                for op in batch:
                    op = concretize(op, reference.oracle)
                    if op is not None:
                        write(store, op)
                        reference.step(op)
            after = reference.oracle.signatures()
            empty = (set(), set(), set(), {}, {})
            changed = {i for i in before.keys() | after.keys() if before.get(i, empty) != after.get(i, empty)}
            assert changed <= reported, (batch, changed - reported)
            assert answers(policy_sync.engine) == answers(reference.engine), batch
            assert not problems(policy_sync.engine)
