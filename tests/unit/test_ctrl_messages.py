"""The control channel's message table and framing refuse anything malformed with their own errors only."""

from __future__ import annotations

import asyncio
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol
from controller.ctrl.frames import MAX_FRAME, FrameError, encode, read_frame
from controller.ctrl.messages import MESSAGES, InvalidArgs

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


class Recorder:
    """A RouterLink stand-in that records the call it receives."""

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.called = (name, args, kwargs)

        return call


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(MESSAGES)), args=json_values)
def test_any_json_as_arguments_is_either_accepted_or_refused_with_invalid_args(name, args):
    entry = MESSAGES[name]
    try:
        entry.call(Recorder(), entry.check(args), "router-1")
    except InvalidArgs:
        pass


def test_arguments_are_exact_required_and_typed():
    entry = MESSAGES["connectionChanged"]
    assert entry.check({"identityId": "i", "connected": True}) == {"identityId": "i", "connected": True}
    for bad in (
        {"identityId": "i"},
        {"identityId": "i", "connected": 1},
        {"identityId": "i", "connected": True, "x": 1},
    ):
        with pytest.raises(InvalidArgs):
            entry.check(bad)


def test_emit_speaks_for_the_connected_router_only():
    link = Recorder()
    entry = MESSAGES["emit"]
    entry.call(link, entry.check({"namespace": "circuit", "eventType": "created", "fields": {"router_id": "x"}}), "r1")
    assert link.called == ("emit", ("circuit", "created"), {"router_id": "r1"})


def read(data: bytes):
    async def run():
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return await read_frame(reader)

    return asyncio.run(run())


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=64))
def test_random_bytes_are_a_frame_error_or_an_early_end(data):
    try:
        message = read(data)
    except (FrameError, asyncio.IncompleteReadError):
        return
    assert isinstance(message["type"], str)


def test_frames_round_trip_and_oversized_ones_are_refused_before_reading_them():
    assert read(encode({"type": "ping"})) == {"type": "ping"}
    with pytest.raises(FrameError, match="outside"):
        read(struct.pack(">I", MAX_FRAME + 1))


def parse_in_chunks(data: bytes, cuts: list[int]) -> list[dict]:
    """``protocol.FrameParser`` fed ``data`` cut at ``cuts``: every message complete by the end."""
    parser, messages, start = protocol.FrameParser(), [], 0
    for cut in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
        messages += parser.feed(data[start:cut])
        start = cut
    return messages


wire_values = st.recursive(  # what JSON carries as itself: integers within 64 bits, finite floats
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
frames = st.lists(
    st.fixed_dictionaries({"type": st.text(max_size=6)}, optional={"args": wire_values, "id": st.integers(0, 2**31)}),
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(messages=frames, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_frames_parsed_as_the_bytes_come_are_the_frames_sent_however_they_are_cut(messages, cuts):
    data = b"".join(encode(message) for message in messages)
    assert parse_in_chunks(data, cuts) == messages


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=64), cuts=st.lists(st.integers(min_value=0, max_value=64), max_size=3))
def test_the_parser_refuses_what_read_frame_refuses(data, cuts):
    try:
        expected = [read(data)]
    except FrameError:
        with pytest.raises(FrameError):
            parse_in_chunks(data, cuts)
        return
    except asyncio.IncompleteReadError:  # not a whole frame: nothing yet, or a frame error in a later one
        expected = []
    try:
        parsed = parse_in_chunks(data, cuts)
    except FrameError:
        return  # a malformed frame after the first whole one
    assert parsed[: len(expected)] == expected


def test_the_routers_control_frames_are_handled_as_they_arrive_and_a_malformed_one_ends_the_channel(caplog):
    from router.control import ControlFrames

    async def run():
        seen: list[dict] = []
        first, second = encode({"type": "reply", "id": 1}), encode({"type": "push", "name": "route"})
        frames = ControlFrames(seen.append, leftover=first[:3])  # part of a frame came with the hello's answer
        frames.parse()
        assert seen == [] and not frames.done.done()
        frames.data_received(first[3:] + second[:-1])
        assert seen == [{"type": "reply", "id": 1}]
        frames.data_received(second[-1:])
        assert seen[-1] == {"type": "push", "name": "route"}
        frames.data_received(struct.pack(">I", MAX_FRAME + 1))
        assert frames.done.done() and "malformed frame" in caplog.text
        frames.data_received(encode({"type": "ping"}))  # the connection is ending: nothing more is handled
        assert len(seen) == 2

    asyncio.run(run())


def test_a_hit_report_counts_non_negative_integers_only():
    link = Recorder()
    entry = MESSAGES["edgeFaultHits"]
    entry.call(link, entry.check({"generation": 3, "hits": {"f1": 2, "f2": 0}}), "r1")
    assert link.called == ("edge_fault_hits", (3, {"f1": 2, "f2": 0}), {})
    for hits in ({"f1": -1}, {"f1": 1.5}, {"f1": True}, {"f1": "2"}, {str(n): 1 for n in range(1001)}):
        with pytest.raises(InvalidArgs):
            entry.call(link, entry.check({"generation": 3, "hits": hits}), "r1")
    with pytest.raises(InvalidArgs):
        entry.check({"hits": {}})  # the generation it applies is part of every report


def test_every_message_and_push_is_documented():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "control-channel.md").read_text()
    assert [name for name in MESSAGES if f"| `{name}` |" not in text] == []
    assert [name for name in protocol.PUSHES if f"`{name}` {{" not in text] == []


def test_both_sides_handle_exactly_the_messages_declared_once():
    from router.control import PUSHES

    assert sorted(MESSAGES) == sorted(protocol.REQUESTS)
    assert sorted(PUSHES) == sorted(protocol.PUSHES)
