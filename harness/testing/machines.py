"""A stateful machine that drives random API sequences and checks each answer against a model.

``IdentityMachine`` creates, renames, tags, disables, enables and deletes
identities and password authenticators, logs in, and compares every answer
with a plain dict model. Rules cannot take fixtures, so the machine builds its
own controller (in memory, frozen clock).
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule

from controller.clock import FrozenClock
from controller.embedded import EmbeddedController
from harness.client import ApiError, ZitiClient
from harness.testing.strategies import role_attributes

NAMES = st.sampled_from(["ann", "bea", "cal", "dee", "eli", "fay"])


class IdentityMachine(RuleBasedStateMachine):
    identities = Bundle("identities")

    def __init__(self):
        super().__init__()
        self.embedded = EmbeddedController(clock=FrozenClock("2025-06-01T12:00:00Z"))
        self.clock = self.embedded.clock
        self.client = ZitiClient.in_process(self.embedded.app)
        self.client.login("admin", "admin")
        #: the model: id -> {"name", "roleAttributes", "disabled", "password"}
        self.model: dict[str, dict] = {}

    def teardown(self):
        self.client.close()
        self.embedded.close()

    def _taken(self, name: str) -> bool:
        return any(entry["name"] == name for entry in self.model.values())

    @rule(target=identities, name=NAMES, attrs=role_attributes(max_size=3))
    def create(self, name, attrs):
        try:
            created = self.client.management.create_identity(
                body={"name": name, "type": "User", "isAdmin": False, "roleAttributes": attrs}
            )
        except ApiError as ex:
            assert self._taken(name) and ex.status == 400 and ex.cause["field"] == "name"
            return None
        assert not self._taken(name)
        self.model[created["id"]] = {"name": name, "roleAttributes": attrs, "disabled": False, "password": None}
        return created["id"]

    @rule(identity=identities, attrs=role_attributes(max_size=3))
    def patch_attributes(self, identity, attrs):
        if identity not in self.model:
            return
        self.client.management.patch_identity(identity, body={"roleAttributes": attrs})
        self.model[identity]["roleAttributes"] = attrs

    @rule(identity=identities, password=st.sampled_from(["pass-one", "pass-two"]))
    def set_password(self, identity, password):
        if identity not in self.model:
            return
        entry = self.model[identity]
        if entry["password"] is None:
            self.client.management.create_authenticator(
                body={
                    "identityId": identity,
                    "method": "updb",
                    "username": entry["name"] + "-login",
                    "password": password,
                }
            )
        else:
            auth = self.client.management.detail_identity(identity)["authenticators"]["updb"]["id"]
            self.client.management.patch_authenticator(auth, body={"password": password})
        entry["password"] = password

    @rule(identity=identities, minutes=st.integers(0, 3))
    def disable(self, identity, minutes):
        if identity not in self.model:
            return
        self.client.management.disable_identity(identity, body={"durationMinutes": minutes})
        self.model[identity]["disabled"] = "forever" if minutes == 0 else True

    @rule(identity=identities)
    def enable(self, identity):
        if identity not in self.model:
            return
        self.client.management.enable_identity(identity)
        self.model[identity]["disabled"] = False

    @rule(identity=identities)
    def login(self, identity):
        if identity not in self.model or self.model[identity]["password"] is None:
            return
        entry = self.model[identity]
        response = self.client.edge.call(
            "authenticate",
            method="password",
            raw=True,
            body={"username": entry["name"] + "-login", "password": entry["password"]},
        )
        assert response.status_code == (401 if entry["disabled"] else 200), response.text

    @precondition(lambda self: self.model)
    @rule()
    def advance_past_timed_disables(self):
        self.clock.advance(minutes=4)
        self.client.login("admin", "admin")
        for entry in self.model.values():
            if entry["disabled"] is True:
                entry["disabled"] = False

    @rule(identity=consumes(identities))
    def delete(self, identity):
        if identity not in self.model:
            return
        self.client.management.delete_identity(identity)
        del self.model[identity]

    @invariant()
    def listing_matches_the_model(self):
        listed = {
            i["id"]: i
            for i in self.client.management.iterate("listIdentities", page_size=500)
            if not i["isDefaultAdmin"]
        }
        assert set(listed) == set(self.model)
        for identity_id, entry in self.model.items():
            assert listed[identity_id]["name"] == entry["name"]
            assert listed[identity_id]["roleAttributes"] == entry["roleAttributes"]
            assert listed[identity_id]["disabled"] == bool(entry["disabled"])
