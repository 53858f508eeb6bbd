"""A cluster's raft timing (PySyncObj's settings), importable without the engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class RaftSettings:
    """PySyncObj's timing. Entries go out as soon as they are made (``appendEntriesUseBatch`` off: a
    command wakes the raft thread, a leader sends at once), so the ticks only pace heartbeats and timers."""

    tick: float = 0.01
    #: the leader's heartbeat when idle (new entries and commits are sent at once)
    append_entries: float = 0.05
    election_min: float = 0.8
    election_max: float = 2.0
    #: a leader steps down after hearing from no majority for this long (then writes fail fast)
    leader_fallback: float = 2.0
    #: how long a write keeps trying (elections included) before CLUSTER_NO_LEADER
    write_timeout: float = 6.0
    #: raft log entries kept before a snapshot of the store replaces them
    compaction_entries: int = 20000
    #: binding the raft port is tried this often, ``bind_retry`` s apart, before the member gives up starting
    bind_retries: int = 15
    bind_retry: float = 0.2
    #: ``HOST:PORT`` the raft port listens on (the member's raft address: PySyncObj's default is every interface)
    bind_address: str | None = None

    def conf(self, folder: Path, **kwargs):
        """PySyncObj's ``SyncObjConf`` for a member whose raft files live in ``folder``."""
        from pysyncobj import SyncObjConf

        return SyncObjConf(
            autoTickPeriod=self.tick,
            appendEntriesPeriod=self.append_entries,
            raftMinTimeout=self.election_min,
            raftMaxTimeout=self.election_max,
            connectionTimeout=max(3.5, self.election_max),
            connectionRetryTime=0.5,
            leaderFallbackTimeout=self.leader_fallback,
            commandsWaitLeader=False,
            dynamicMembershipChange=True,
            pollerType="poll",
            journalFile=str(folder / "raft.journal"),
            fullDumpFile=str(folder / "raft.snapshot"),
            logCompactionMinEntries=self.compaction_entries,
            maxBindRetries=self.bind_retries,
            bindAddress=self.bind_address,
            bindRetryTime=self.bind_retry,
            useFork=False,
            appendEntriesUseBatch=False,
            **kwargs,
        )
