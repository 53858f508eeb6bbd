"""Network-model figures of issue 3, on the real controller's "small" and "large" perf shapes.

The shapes (services / identities / edge routers / SPs / ERPs / SERPs) are those of
the real controller's perf tests: small 20/100/10/10/10/10, large 2,000/100,000/
500/250/250/100. Eight attributes are spread over 1/2, 1/2, 1/3, 1/4, 1/5, 1/8,
1/10, 1/10 of each population; policies are AnyOf combinations of them, plus
``#all`` and ``@id`` entries. Records go straight into the store in big
transactions (the engine and indexes follow through their store listeners), then
everything else goes through the in-process app:

* client ``GET /services`` p50 of a probe identity that sees the same 10 services in
  both shapes, and the large/small ratio; also a typical large identity;
* ``POST /sessions`` p50;
* time for one policy change to be visible in the probe's ``GET /services``;
* load time (store fill plus controller start) and RSS of the large shape.
"""

from __future__ import annotations

import random
import resource
import statistics
import time

import falcon.testing

from controller.app import create_app
from controller.clock import Clock, rfc3339
from controller.config import Config
from controller.model.identity import identity_record
from controller.store.db import Store

SHAPES = {
    "small": {"services": 20, "identities": 100, "routers": 10, "sps": 10, "erps": 10, "serps": 10},
    "large": {"services": 2000, "identities": 100_000, "routers": 500, "sps": 250, "erps": 250, "serps": 100},
    "quick": {"services": 400, "identities": 10_000, "routers": 100, "sps": 50, "erps": 50, "serps": 20},
}
ATTRS = [f"role{n}" for n in range(8)]
SPREAD = [2, 2, 3, 4, 5, 8, 10, 10]
PROBE_SERVICES = 10
ADMIN = {"username": "admin", "password": "admin"}
CLIENT, MGMT = "/edge/client/v1", "/edge/management/v1"


# -- loading ---------------------------------------------------------------------------
def spread(rng: random.Random) -> list[str]:
    return [attr for attr, one_in in zip(ATTRS, SPREAD) if rng.random() < 1 / one_in]


def roles(rng: random.Random, ids: list[str], allow_all: bool) -> list[str]:
    """An AnyOf combination of one to three attributes; sometimes ``#all`` or an ``@id``."""
    roll = rng.random()
    if allow_all and roll < 0.1:
        return ["#all"]
    picked = sorted({"#" + rng.choice(ATTRS) for _ in range(rng.randint(1, 3))})
    if roll > 0.9:
        picked.append("@" + rng.choice(ids))
    return sorted(picked)


def _base(record_id: str, name: str, now: str) -> dict:
    return {"id": record_id, "name": name, "created_at": now, "updated_at": now, "tags": {}}


def _insert_all(store, table: str, records, batch: int = 10_000) -> None:
    records = list(records)
    for start in range(0, len(records), batch):
        with store.lock, store.transaction():
            for record in records[start : start + batch]:
                store.insert(table, record["id"], record)


def load(store, shape: dict, now: str, seed: int = 7) -> dict[str, list[str]]:
    """Insert the shape's entities, then its policies; returns the ids by kind."""
    rng = random.Random(seed)
    ids = {
        "identities": [f"id{n:06d}" for n in range(shape["identities"])],
        "services": [f"svc{n:05d}" for n in range(shape["services"])],
        "routers": [f"er{n:04d}" for n in range(shape["routers"])],
    }
    _insert_all(
        store,
        "identities",
        (identity_record(i, now, name="name-" + i, role_attributes=spread(rng)) for i in ids["identities"]),
    )
    _insert_all(
        store,
        "services",
        (
            {
                **_base(s, "name-" + s, now),
                "configs": [],
                "encryption_required": True,
                "max_idle_time_millis": 0,
                "role_attributes": spread(rng),
                "terminator_strategy": "smartrouting",
            }
            for s in ids["services"]
        ),
    )
    _insert_all(
        store,
        "routers",
        (
            {
                **_base(r, "name-" + r, now),
                "cost": 0,
                "disabled": False,
                "no_traversal": False,
                "configs": [],
                "ctrl_chan_listeners": {},
                "app_data": {},
                "is_tunneler_enabled": False,
                "role_attributes": spread(rng),
                "is_edge": True,
                "is_transit": False,
                "is_verified": True,
                "fingerprint": None,
                "cert_pem": None,
            }
            for r in ids["routers"]
        ),
    )
    policies = {
        "service_policies": [
            {
                **_base(f"sp{n:04d}", f"sp-{n}", now),
                "type": rng.choice(["Dial", "Bind"]),
                "semantic": "AnyOf",
                "identity_roles": roles(rng, ids["identities"], False),
                "service_roles": roles(rng, ids["services"], True),
                "posture_check_roles": [],
                "is_system": False,
            }
            for n in range(shape["sps"])
        ],
        "edge_router_policies": [
            {
                **_base(f"erp{n:04d}", f"erp-{n}", now),
                "semantic": "AnyOf",
                "identity_roles": roles(rng, ids["identities"], False),
                "edge_router_roles": roles(rng, ids["routers"], True),
                "is_system": False,
            }
            for n in range(shape["erps"])
        ],
        "service_edge_router_policies": [
            {
                **_base(f"serp{n:04d}", f"serp-{n}", now),
                "semantic": "AnyOf",
                "service_roles": roles(rng, ids["services"], True),
                "edge_router_roles": roles(rng, ids["routers"], True),
                "is_system": False,
            }
            for n in range(shape["serps"])
        ],
    }
    for table, records in policies.items():
        _insert_all(store, table, records, batch=len(records))
    return ids


# -- measuring through the app ------------------------------------------------------------
class Bench:
    """One shape: the store is filled first, then the controller starts on it (indexes rebuilt on start)."""

    def __init__(self, shape: dict, store: Store | None = None):
        store, clock = store or Store(None), Clock()
        started = time.perf_counter()
        self.ids = load(store, shape, rfc3339(clock.now()))
        self.fill_seconds = time.perf_counter() - started
        self.app = create_app(Config(), clock=clock, store=store)
        self.ctl = self.app.controller
        self.load_seconds = time.perf_counter() - started
        self.start_seconds = self.load_seconds - self.fill_seconds
        self.client = falcon.testing.TestClient(self.app)
        self.admin = self.login(MGMT, ADMIN)
        self.probe_policy = self.make_probe()
        self.probe = self.login(CLIENT, {"username": "probe-user", "password": "probe-pass"})

    def login(self, prefix: str, body: dict) -> dict:
        reply = self.client.simulate_post(prefix + "/authenticate", params={"method": "password"}, json=body)
        return {"zt-session": reply.json["data"]["token"]}

    def call(self, method: str, path: str, headers: dict, **kwargs):
        reply = self.client.simulate_request(method, path, headers=headers, **kwargs)
        if reply.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {reply.status_code} {reply.text[:300]}")
        return reply

    def make_probe(self) -> str:
        """An identity that sees exactly the first 10 services, over one shared router."""
        create = lambda path, body: self.call("POST", MGMT + path, self.admin, json=body).json["data"]["id"]  # noqa: E731
        identity_id = create(
            "/identities", {"name": "probe", "type": "User", "isAdmin": False, "roleAttributes": ["probe"]}
        )
        create(
            "/authenticators",
            {"identityId": identity_id, "method": "updb", "username": "probe-user", "password": "probe-pass"},
        )
        wanted = ["@" + s for s in self.ids["services"][:PROBE_SERVICES]]
        router = "@" + self.ids["routers"][0]
        policy = create(
            "/service-policies",
            {
                "name": "probe-dial",
                "type": "Dial",
                "semantic": "AnyOf",
                "identityRoles": ["#probe"],
                "serviceRoles": wanted,
            },
        )
        create(
            "/edge-router-policies",
            {"name": "probe-erp", "semantic": "AnyOf", "identityRoles": ["#probe"], "edgeRouterRoles": [router]},
        )
        create(
            "/service-edge-router-policies",
            {"name": "probe-serp", "semantic": "AnyOf", "serviceRoles": wanted, "edgeRouterRoles": [router]},
        )
        return policy

    def list_services(self, headers: dict) -> list[dict]:
        return self.call("GET", CLIENT + "/services", headers, params={"configTypes": "all", "limit": "25"}).json[
            "data"
        ]

    def p50(self, fn, repeats: int) -> float:
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - started)
        return statistics.median(samples) * 1000

    def session_create_p50(self, repeats: int) -> float:
        samples = []
        for index in range(repeats):
            body = {"serviceId": self.ids["services"][index % PROBE_SERVICES], "type": "Dial"}
            started = time.perf_counter()
            reply = self.call("POST", CLIENT + "/sessions", self.probe, json=body)
            samples.append(time.perf_counter() - started)
            self.call("DELETE", CLIENT + f"/sessions/{reply.json['data']['id']}", self.probe)
        return statistics.median(samples) * 1000

    def change_visible_ms(self, policy_id: str, changes: list[tuple[dict, object]], rounds: int = 5) -> float:
        """p50 of PATCH-then-visible for alternating policy changes (each with its visibility check)."""
        samples = []
        for index in range(rounds * len(changes)):
            patch, check = changes[index % len(changes)]
            started = time.perf_counter()
            self.call("PATCH", MGMT + f"/service-policies/{policy_id}", self.admin, json=patch)
            if not check():
                raise RuntimeError("the policy change is not visible")
            samples.append(time.perf_counter() - started)
        return statistics.median(samples) * 1000

    def typical_identity(self) -> dict:
        """A loaded identity carrying the two most common attributes, logged in through a password."""
        identity_id = next(
            i
            for i in self.ids["identities"]
            if {"role0", "role1"} <= set(self.ctl.store.get("identities", i)["role_attributes"])
        )
        self.call(
            "POST",
            MGMT + "/authenticators",
            self.admin,
            json={"identityId": identity_id, "method": "updb", "username": "typical-user", "password": "typical-pass"},
        )
        return self.login(CLIENT, {"username": "typical-user", "password": "typical-pass"})

    def close(self) -> None:
        self.ctl.close()


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size in MB."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    current = int(fields.get("VmRSS", "0 kB").split()[0]) / 1024
    peak = max(
        int(fields.get("VmHWM", "0 kB").split()[0]) / 1024, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    return current, peak


def main(quick: bool = False) -> dict:
    repeats = 50 if quick else 200
    figures: dict = {}
    small = Bench(SHAPES["small"])
    assert len(small.list_services(small.probe)) == PROBE_SERVICES
    small_p50 = small.p50(lambda: small.list_services(small.probe), repeats)
    small.close()

    name = "quick" if quick else "large"
    large = Bench(SHAPES[name])
    current, peak = rss_mb()
    figures[f"{name}: load time (s)"] = large.load_seconds
    figures[f"{name}:   store fill, big transactions (s)"] = large.fill_seconds
    figures[f"{name}:   controller start, engine and indexes rebuilt (s)"] = large.start_seconds
    figures[f"{name}: RSS after load (MB)"] = current
    figures[f"{name}: peak RSS (MB)"] = peak
    assert len(large.list_services(large.probe)) == PROBE_SERVICES
    large_p50 = large.p50(lambda: large.list_services(large.probe), repeats)
    figures["small: GET /services p50, 10 services (ms)"] = small_p50
    figures[f"{name}: GET /services p50, same 10 services (ms)"] = large_p50
    figures[f"{name}/small GET /services ratio"] = large_p50 / small_p50
    typical = large.typical_identity()
    visible = large.call("GET", CLIENT + "/services", typical, params={"limit": "1"}).json["meta"]["pagination"][
        "totalCount"
    ]
    figures[f"{name}: typical identity's services"] = visible
    figures[f"{name}: GET /services p50, typical identity, page of 25 (ms)"] = large.p50(
        lambda: large.list_services(typical), repeats
    )
    figures[f"{name}: POST /sessions p50 (ms)"] = large.session_create_p50(repeats)
    extra = "@" + large.ids["services"][PROBE_SERVICES]
    wanted = ["@" + s for s in large.ids["services"][:PROBE_SERVICES]]
    probe_sees = lambda n: lambda: len(large.list_services(large.probe)) == n  # noqa: E731
    figures[f"{name}: probe policy change visible p50 (ms)"] = large.change_visible_ms(
        large.probe_policy,
        [
            ({"serviceRoles": [*wanted, extra]}, probe_sees(PROBE_SERVICES + 1)),
            ({"serviceRoles": wanted}, probe_sees(PROBE_SERVICES)),
        ],
    )
    figures[f"{name}: broad policy change (#role0: half the identities) visible p50 (ms)"] = large.change_visible_ms(
        large.probe_policy,
        [
            ({"identityRoles": ["#probe", "#role0"]}, probe_sees(PROBE_SERVICES)),
            ({"identityRoles": ["#probe"]}, probe_sees(PROBE_SERVICES)),
        ],
    )
    large.close()
    return figures


if __name__ == "__main__":
    for key, value in main().items():
        print(f"{key:<60} {value:,.3f}" if isinstance(value, float) else f"{key:<60} {value}")
