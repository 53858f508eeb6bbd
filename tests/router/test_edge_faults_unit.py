"""The router's edge faults on their own: which fault decides a frame, and held frames keep their order."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from router.faults import FROM_SDK, TO_SDK, EdgeFaults
from router.wire import ContentType as CT
from router.wire import Message

TYPES = (CT.CONNECT, CT.DATA, CT.STATE_CLOSED, CT.DIAL, CT.RESULT)


class FakeTransport:
    def get_write_buffer_size(self) -> int:
        return 0


class FakeWriter:
    def __init__(self):
        self.frames: list[int] = []

    def write(self, data: bytes) -> None:
        self.frames.append(int.from_bytes(data[4:8], "little"))


class FakeChannel:
    """What EdgeFaults touches of a channel: its attributes, its writer, dispatching a released frame."""

    def __init__(self):
        self.faults = self.held_in = self.held_out = None
        self.closed = False
        self.writer, self.transport = FakeWriter(), FakeTransport()
        self.dispatched: list[int] = []
        self.id, self.peer = "ch1", "test"

    def dispatch(self, message, handlers, unknown, released=False):
        assert released
        self.dispatched.append(message.content_type)

    def wake_writers(self) -> None:
        pass


faults_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "direction": st.sampled_from(["fromSdk", "toSdk", "both"]),
            "contentTypes": st.lists(st.sampled_from(TYPES), max_size=2, unique=True),
            "drop": st.booleans(),
            "latencyMs": st.sampled_from([1, 3]),
        }
    ),
    max_size=3,
)


def decide(faults: list[dict], direction: int, content_type: int) -> dict | None:
    """The oracle: the first fault, oldest first, whose direction and content types match."""
    masks = {"fromSdk": FROM_SDK, "toSdk": TO_SDK, "both": FROM_SDK | TO_SDK}
    for fault in faults:
        if masks[fault["direction"]] & direction and (
            not fault["contentTypes"] or content_type in fault["contentTypes"]
        ):
            return fault
    return None


@settings(deadline=None)
@given(faults=faults_strategy, frames=st.lists(st.tuples(st.sampled_from([FROM_SDK, TO_SDK]), st.sampled_from(TYPES))))
def test_frames_pass_dropped_or_held_as_the_first_matching_fault_says_and_keep_their_order(faults, frames):
    for index, fault in enumerate(faults):
        fault["id"] = f"f{index}"
    reports: list[tuple[int, dict]] = []

    async def run() -> FakeChannel:
        edge = EdgeFaults(lambda generation, hits: reports.append((generation, hits)))
        channel = FakeChannel()
        edge.opened(channel)
        edge.replace(7, [{**f, "latencyMs": 0 if f["drop"] else f["latencyMs"]} for f in faults])
        assert (channel.faults is edge) == bool(faults)
        for direction, content_type in frames:
            if channel.faults is None:  # the channel's own fast lane
                (channel.dispatched if direction == FROM_SDK else channel.writer.frames).append(content_type)
            elif direction == FROM_SDK:
                edge.incoming(channel, Message(content_type), {}, None)
            else:
                edge.outgoing(channel, Message(content_type).encode())
        while any(held is not None and held.task is not None for held in (channel.held_in, channel.held_out)):
            await asyncio.sleep(0.001)
        edge.replace(8, [])
        assert channel.faults is None  # nothing on, nothing held: the fast lane again
        return channel

    channel = asyncio.run(run())
    passed = {FROM_SDK: [], TO_SDK: []}
    hits: dict[str, int] = {}
    for direction, content_type in frames:
        fault = decide(faults, direction, content_type)
        if fault is not None:
            hits[fault["id"]] = hits.get(fault["id"], 0) + 1
        if fault is None or not fault["drop"]:
            passed[direction].append(content_type)
    assert channel.dispatched == passed[FROM_SDK]  # in order, delays or not
    assert channel.writer.frames == passed[TO_SDK]
    counted: dict[str, int] = {}
    for _generation, report in reports:
        for fault_id, count in report.items():
            counted[fault_id] = counted.get(fault_id, 0) + count
    assert counted == hits
    assert reports[0][0] == 7 and reports[-1][0] == 8  # each set acknowledged with its generation
