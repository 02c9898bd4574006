"""The library's PostgreSQL factory with every wait bounded: a lost server is "storage
unavailable" within about 3 s (the spec's bound), and the first call after it is back connects.

The library's pool waits POSTGRES_CONNECT_TIMEOUT for a connection, connects without a timeout
and retries a lost server with backoff for 5 minutes, and its recorders retry each read 10
times (about 25 s in all on a lost server): our recorders read once (postgres_reads), and the
service's `heals` retries within its bound. The pool's `kwargs`, `timeout` and
`reconnect_timeout` set here are psycopg_pool's public attributes. Closing sends the wake-up
that the application recorder's last commits are still due (planledger.storage.commit_notifier)
before the connections close."""

from __future__ import annotations

from typing import Any

from eventsourcing.persistence import ApplicationRecorder
from eventsourcing.postgres import PostgresAggregateRecorder, PostgresFactory
from eventsourcing.utils import Environment, EnvType

from planledger.storage.commit_notifier import CommitNotifier
from planledger.storage.postgres_reads import EventsReadOnce, OnceReads
from planledger.storage.postgres_recorder import ViewsPostgresRecorder
from planledger.storage.settings import CONNECT_TIMEOUT, POOL_TIMEOUT


class UnretriedAggregateRecorder(EventsReadOnce, PostgresAggregateRecorder):
    """The snapshot store's recorder, each read tried once (planledger.storage.postgres_reads)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads = OnceReads(self.datastore, self.events_table_name)


class BoundedPostgresFactory(PostgresFactory):
    aggregate_recorder_class = UnretriedAggregateRecorder

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        pool = self.datastore.pool
        assert isinstance(pool.kwargs, dict)  # the library passes a dict
        pool.kwargs["connect_timeout"] = CONNECT_TIMEOUT
        pool.timeout = POOL_TIMEOUT
        pool.reconnect_timeout = POOL_TIMEOUT
        self.notifiers: list[CommitNotifier] = []

    def application_recorder(self) -> ApplicationRecorder:
        recorder = super().application_recorder()
        if isinstance(recorder, ViewsPostgresRecorder):
            self.notifiers.append(recorder.notifier)
        return recorder

    def close(self) -> None:
        for notifier in self.notifiers:
            notifier.close()
        super().close()
