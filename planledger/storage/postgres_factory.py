"""The library's PostgreSQL factory with every wait bounded: a lost server is "storage
unavailable" within about 3 s (the spec's bound), and the first call after it is back connects.

The library's pool waits POSTGRES_CONNECT_TIMEOUT for a connection, connects without a timeout
and retries a lost server with backoff for 5 minutes, and its recorders retry each read 10
times (about 25 s in all on a lost server). The service's `heals` retries within its bound."""

from __future__ import annotations

import inspect

from eventsourcing.postgres import PostgresAggregateRecorder, PostgresFactory
from eventsourcing.utils import Environment, EnvType

from planledger.storage.settings import CONNECT_TIMEOUT, POOL_TIMEOUT


class UnretriedAggregateRecorder(PostgresAggregateRecorder):
    """The snapshot store's recorder, each read tried once."""

    select_events = inspect.unwrap(PostgresAggregateRecorder.select_events)


class BoundedPostgresFactory(PostgresFactory):
    aggregate_recorder_class = UnretriedAggregateRecorder

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        pool = self.datastore.pool
        assert isinstance(pool.kwargs, dict)  # the library passes a dict
        pool.kwargs["connect_timeout"] = CONNECT_TIMEOUT
        pool.timeout = POOL_TIMEOUT
        pool.reconnect_timeout = POOL_TIMEOUT
