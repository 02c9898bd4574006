"""Store positions on PostgreSQL without a store-wide lock.

An event's store position (`notification_id`) is `(xid << ID_BITS) + n`: `xid` the id of the
transaction that writes it (`pg_current_xact_id()`, taken at the transaction's first write),
`n` its place among that transaction's events. Transactions commit in any order, so a reader
of the store-wide order (the projection runner, the checkpoints, the store position) reads
only positions below HORIZON: the oldest transaction id still in flight in its snapshot
(`pg_snapshot_xmin`), shifted alike.

Why no reader can skip a row: a transaction whose id is below the snapshot's xmin has ended,
so every row below the horizon that will ever be visible is visible now; a transaction still
in flight, or one that starts later, has an id at or above xmin, so all its rows have positions
at or above the horizon, which the reader has not passed. The horizon never goes down (xmin
only grows), so a reader that moves its position up to it keeps the order.

A session's events keep their order too: a writer reads the session's last event (committed)
before its transaction writes anything, so its transaction id, and every position it writes,
is higher than those of that event.

A transaction holding an id blocks the horizon while it lasts (anywhere on the server: ids are
server-wide), so readers lag by at most the longest write transaction in flight.
"""

from __future__ import annotations

from typing import Any

ID_BITS = 20
MAX_EVENTS_PER_WRITE = 1 << ID_BITS
# The position of the first event of the writing transaction (its n is added).
XACT_BASE = f"(pg_current_xact_id()::text::bigint << {ID_BITS})"
# The lowest position a transaction still in flight (or a later one) can write.
HORIZON = f"(pg_snapshot_xmin(pg_current_snapshot())::text::bigint << {ID_BITS})"
# The transactions on the server holding an id for more than %s seconds, oldest id first (the
# first is the one the horizon waits for; the next wait behind it), while the store has events
# at or above the horizon (readers are held back): (pid, database, state, seconds).
# Another role's sessions are visible only to roles with pg_read_all_stats (or superusers).
HORIZON_HOLDER = (
    "SELECT a.pid, a.datname, a.state, floor(extract(epoch FROM now() - a.xact_start))::bigint "
    "FROM pg_stat_activity a WHERE a.backend_xid IS NOT NULL AND a.pid <> pg_backend_pid() "
    "AND a.xact_start < now() - make_interval(secs => %s) "
    f"AND EXISTS (SELECT 1 FROM {{events}} WHERE notification_id >= {HORIZON}) "
    "ORDER BY age(a.backend_xid) DESC LIMIT 3"
)


def holder_warning(pid: int, database: str | None, state: str | None, seconds: int) -> str:
    """What a health report says of a transaction that holds the readers back."""
    return (
        f"PostgreSQL transaction of process {pid} (database {database!r}, {state or 'active'}) "
        f"has held a transaction id for {seconds} s: the views, the live feed and checkpoints "
        "wait for it to end before they pass the events written since. End it (or set "
        "idle_in_transaction_session_timeout)."
    )


def id_default(sequence: str) -> str:
    """The column default for events inserted by other means than the ledger's writes (a
    repair by hand): in its transaction's range, numbered by a sequence (the ledger's own
    writes number their events 0, 1, ... in order)."""
    return f"{XACT_BASE} + (nextval('{sequence}') % {MAX_EVENTS_PER_WRITE})"


def postgres_positions_setup(conn: Any, events: str) -> None:
    """In the schema set-up's transaction: new events' positions in their transaction's range
    (a store written before keeps its positions, all below those). Raises RuntimeError for a
    store whose positions already reach that range (more than 2**20 events per transaction on
    average: not one this ledger wrote)."""
    row = conn.execute("SELECT pg_get_serial_sequence(%s, 'notification_id')", (events,))
    sequence = row.fetchone()[0]
    conn.execute(
        f"ALTER TABLE {events} ALTER COLUMN notification_id SET DEFAULT {id_default(sequence)}"
    )
    above = conn.execute(
        f"SELECT COALESCE(max(notification_id), 0) >= {XACT_BASE} FROM {events}"
    ).fetchone()
    if above[0]:
        raise RuntimeError(f"{events}: store positions beyond the range of new transactions")
