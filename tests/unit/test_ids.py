"""Identifiers: UUIDs are valid random version-4 UUIDs, seeded generators repeat themselves."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from controller.ids import SHORT_ID_ALPHABET, Ids, uuid4_text


@given(st.binary(min_size=16, max_size=16))
def test_uuid4_text_is_the_standard_text_of_a_version_4_uuid(random16):
    text = uuid4_text(random16)
    assert text == str(uuid.UUID(bytes=random16, version=4))
    parsed = uuid.UUID(text)
    assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text


@given(st.binary(min_size=16, max_size=16))
def test_uuid4_text_keeps_every_random_bit_but_the_six_it_fixes(random16):
    kept = ~((0xF << 76) | (0x3 << 62)) & ((1 << 128) - 1)  # the version nibble and the two variant bits
    assert uuid.UUID(uuid4_text(random16)).int & kept == int.from_bytes(random16, "big") & kept


def test_os_random_uuids_are_valid_and_distinct():
    ids = Ids()
    drawn = [ids.uuid() for _ in range(2000)]
    assert len(set(drawn)) == len(drawn)
    for text in drawn:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text


@given(st.integers(min_value=0, max_value=2**32))
def test_a_seeded_generator_repeats_its_uuids(seed):
    first, again = Ids(seed=seed), Ids(seed=seed)
    drawn = [first.uuid() for _ in range(3)]
    assert drawn == [again.uuid() for _ in range(3)]
    assert all(uuid.UUID(text).version == 4 for text in drawn)


@given(st.binary(min_size=9, max_size=9))
def test_a_short_id_spells_its_random_bytes(raw):
    class Fixed(Ids):
        def _random_bytes(self, count: int) -> bytes:
            return raw[:count]

    text = Fixed().short()
    assert text == SHORT_ID_ALPHABET[raw[0] % 62] + "".join(SHORT_ID_ALPHABET[b & 63] for b in raw[1:])
    assert len(text) == 9 and text[0].isalnum() and set(text) <= set(SHORT_ID_ALPHABET)


def test_seeded_short_ids_repeat_and_os_random_ones_differ():
    assert [Ids(seed=7).short() for _ in range(2)] == [Ids(seed=7).short()] * 2
    ids = Ids()
    drawn = {ids.short() for _ in range(2000)}
    assert len(drawn) == 2000


def test_request_ids_are_short_ids_drawn_without_a_system_call(monkeypatch):
    ids = Ids()
    monkeypatch.setattr("controller.ids.os.urandom", lambda count: (_ for _ in ()).throw(AssertionError("syscall")))
    drawn = [ids.request_id() for _ in range(5000)]
    assert len(set(drawn)) == len(drawn)
    assert all(len(rid) == 9 and set(rid) <= set(SHORT_ID_ALPHABET) and rid[0].isalnum() for rid in drawn)


def test_a_request_draws_its_id_without_reading_the_os_random_source(monkeypatch):
    from controller.app import create_app
    from harness.client import ZitiClient

    app = create_app()
    drawn = []
    real = __import__("os").urandom
    with ZitiClient.in_process(app) as client:
        client.http.get("/edge/client/v1/version")
        monkeypatch.setattr("controller.ids.os.urandom", lambda count: drawn.append(count) or real(count))
        response = client.http.get("/edge/client/v1/nothing-here")
    app.controller.close()
    assert response.status_code == 404 and len(response.json()["error"]["requestId"]) == 9
    assert drawn == []
