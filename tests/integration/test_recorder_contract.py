"""The eventsourcing library's own application-recorder contract, run on our recorders: the
one-round-trip PostgreSQL recorder and the SQLite recorder that store views with events."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any
from urllib.parse import urlsplit

import psycopg
from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing.postgres import PostgresDatastore
from eventsourcing.sqlite import SQLiteDatastore
from eventsourcing.tests.persistence import ApplicationRecorderTestCase

from planledger.storage.postgres_recorder import ViewsPostgresRecorder
from planledger.storage.sqlite_recorder import ViewsSQLiteRecorder
from tests.conftest import POSTGRES_URL


class TestViewsPostgresRecorder(ApplicationRecorderTestCase[ViewsPostgresRecorder]):
    def setUp(self) -> None:
        self.schema = f"r_{uuid.uuid4().hex[:12]}"
        self.admin = psycopg.connect(POSTGRES_URL, autocommit=True)
        self.admin.execute(f'CREATE SCHEMA "{self.schema}"')
        parts = urlsplit(POSTGRES_URL)
        self.datastore = PostgresDatastore(
            dbname=parts.path.lstrip("/"),
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 5432,
            user=parts.username or "postgres",
            password=parts.password or "",
            schema=self.schema,
            originator_id_type="text",
            pool_size=4,
        )

    def tearDown(self) -> None:
        self.datastore.close()
        self.admin.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
        self.admin.close()

    def new_originator_id(self) -> str:
        return str(uuid.uuid4())

    def create_recorder(self) -> ViewsPostgresRecorder:
        recorder = ViewsPostgresRecorder(self.datastore, events_table_name="events")
        recorder.create_table()
        return recorder

    # The library's timing loops measure the machine, not the contract: not collected.
    test_performance = None  # type: ignore[assignment]
    test_concurrent_throughput = None  # type: ignore[assignment]

    def test_insert_select(self) -> None:
        """The library's test_insert_select, but for its store positions 1, 2 and 3: ours are
        transaction ids shifted (planledger.storage.horizon), increasing, consecutive within
        one write."""
        recorder = self.create_recorder()
        self.assertEqual(recorder.select_notifications(start=None, limit=3), [])
        self.assertIsNone(recorder.max_notification_id())
        first, second = self.new_originator_id(), self.new_originator_id()
        events = [
            StoredEvent(first, 1, "topic1", b"state1"),
            StoredEvent(first, 2, "topic2", b"state2"),
            StoredEvent(second, 1, "topic3", b"state3"),
        ]
        one, two = recorder.insert_events(events[:2])
        (three,) = recorder.insert_events(events[2:])
        self.assertEqual((two, three > two), (one + 1, True))
        with self.assertRaises(IntegrityError):
            recorder.insert_events(events[2:])
        self.assertEqual(len(recorder.select_events(first)), 2)
        self.assertEqual(recorder.max_notification_id(), three)

        def read(*args: Any, **kwargs: Any) -> list[tuple[int, str, str, bytes]]:
            found = recorder.select_notifications(*args, **kwargs)
            return [(n.id, n.originator_id, n.topic, n.state) for n in found]

        rows = [
            (n, e.originator_id, e.topic, e.state)
            for n, e in zip((one, two, three), events, strict=True)
        ]
        self.assertEqual(read(None, 10), rows)
        self.assertEqual(read(one, 10), rows)
        self.assertEqual(read(None, 10, stop=two), rows[:2])
        self.assertEqual(read(one, 10, inclusive_of_start=False), rows[1:])
        self.assertEqual(read(None, 10, topics=["topic1", "topic3"]), [rows[0], rows[2]])
        self.assertEqual(read(one, 3, topics=["topic2"]), [rows[1]])


class TestViewsSQLiteRecorder(ApplicationRecorderTestCase[ViewsSQLiteRecorder]):
    def setUp(self) -> None:
        self.folder = TemporaryDirectory()
        self.datastore = SQLiteDatastore(str(Path(self.folder.name) / "events.sqlite3"))
        self.threads_before = set(threading.enumerate())

    def tearDown(self) -> None:
        # The library's concurrency test leaves its reader threads to finish on their own:
        # closing the file under a reader still inside SQLite would crash the interpreter. Only
        # this test's threads are waited for (earlier tests' threads are not its business).
        for thread in set(threading.enumerate()) - self.threads_before:
            if thread.name.startswith("Thread-"):
                thread.join(timeout=30)
        self.datastore.close()
        self.folder.cleanup()

    def create_recorder(self) -> ViewsSQLiteRecorder:
        recorder = ViewsSQLiteRecorder(self.datastore)
        recorder.create_table()
        return recorder

    test_performance = None  # type: ignore[assignment]
    test_concurrent_throughput = None  # type: ignore[assignment]
