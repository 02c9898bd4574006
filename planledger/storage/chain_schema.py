"""The events' `chain` column (domain.chain) and the tables of the audit, set up once with the
rest of the schema (planledger.storage.schema, under its lock).

On PostgreSQL the writer sends the chain of each new event whose previous chain it knows
(planledger.storage.known_chains), and a trigger computes the chain of any other, in the
inserting transaction, from the previous event of its stream (the writer holds that stream's
next version: no store-wide serialisation); on SQLite the recorder computes it
(planledger.storage.sqlite_recorder). Events stored before the chain existed are chained once,
here, over the canonical form of their state, while writers wait.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from domain.chain import GENESIS, canonical, link

CHECKPOINTS_DDL = (
    "CREATE TABLE IF NOT EXISTS planledger_checkpoints (position BIGINT PRIMARY KEY, "
    "made_at TEXT NOT NULL, statement TEXT NOT NULL)"
)
# Named tokens of the HTTP server (planledger.service.tokens): only their SHA-256 is kept.
TOKENS_DDL = (
    "CREATE TABLE IF NOT EXISTS planledger_tokens (name TEXT PRIMARY KEY, scope TEXT NOT NULL, "
    "token_hash TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL, revoked_at TEXT)"
)
PAGE = 5000

# The chain of a new row, as domain.chain.link computes it over the stored state.
POSTGRES_CHAIN_FUNCTION = """
CREATE OR REPLACE FUNCTION {schema}.planledger_chain() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE previous text;
BEGIN
  IF NEW.chain IS NOT NULL THEN
    RETURN NEW;  -- a row inserted with a chain of its own keeps it (and is judged by it)
  END IF;
  IF NEW.originator_version > 1 THEN
    SELECT chain INTO previous FROM {schema}.planledger_events
      WHERE originator_id = NEW.originator_id
      AND originator_version = NEW.originator_version - 1;
  END IF;
  NEW.chain := encode(sha256(convert_to(
      coalesce(previous, '{genesis}') || E'\\n' || NEW.topic || E'\\n' || NEW.originator_id
      || E'\\n' || NEW.originator_version || E'\\n', 'UTF8') || NEW.state), 'hex');
  RETURN NEW;
END $$
"""


def chain_missing(
    rows_after: Callable[[str, int, int], Sequence[tuple[Any, ...]]],
    update: Callable[[list[tuple[str, str, int]]], None],
) -> int:
    """Chain every event that has none, stream by stream in version order; returns how many.
    `rows_after(originator_id, version, limit)` pages through (originator_id, version, topic,
    state, chain) in key order; `update` writes (chain, originator_id, version) rows."""
    count, stream, previous = 0, None, GENESIS
    after: tuple[str, int] = ("", 0)
    while True:
        rows = rows_after(*after, PAGE)
        changes: list[tuple[str, str, int]] = []
        for originator_id, version, topic, state, chain in rows:
            if originator_id != stream:
                stream, previous = originator_id, GENESIS
            if chain is None:
                state = bytes(state)
                try:
                    content = canonical(state)
                except (ValueError, UnicodeError):  # not JSON: chained as it is
                    content = state
                chain = link(previous, topic, originator_id, version, content)
                changes.append((chain, originator_id, version))
            previous = chain
        if changes:
            update(changes)
            count += len(changes)
        if len(rows) < PAGE:
            return count
        after = (rows[-1][0], rows[-1][1])


def sqlite_chain_setup(conn: Any) -> None:
    """In the set-up's transaction: the column, the audit's tables, and the missing chains."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(stored_events)")}
    if "chain" not in columns:
        conn.execute("ALTER TABLE stored_events ADD COLUMN chain TEXT")
    conn.execute(CHECKPOINTS_DDL)
    conn.execute(TOKENS_DDL)
    chain_missing(
        lambda originator_id, version, limit: conn.execute(
            "SELECT originator_id, originator_version, topic, state, chain FROM stored_events "
            "WHERE (originator_id, originator_version) > (?, ?) "
            "ORDER BY originator_id, originator_version LIMIT ?",
            (originator_id, version, limit),
        ).fetchall(),
        lambda changes: conn.executemany(
            "UPDATE stored_events SET chain = ? WHERE originator_id = ? AND originator_version = ?",
            changes,
        ),
    )


def postgres_chain_setup(conn: Any, schema: str) -> None:
    """In the set-up's transaction (search_path set to `schema`): the column and its trigger,
    the audit's tables, and the missing chains, with writers held off."""
    quoted = f'"{schema}"'
    events = f"{quoted}.planledger_events"
    conn.execute(f"ALTER TABLE {events} ADD COLUMN IF NOT EXISTS chain TEXT")
    conn.execute(POSTGRES_CHAIN_FUNCTION.format(schema=quoted, genesis=GENESIS))
    conn.execute(f"DROP TRIGGER IF EXISTS planledger_chain ON {events}")
    conn.execute(
        f"CREATE TRIGGER planledger_chain BEFORE INSERT ON {events} "
        f"FOR EACH ROW EXECUTE FUNCTION {quoted}.planledger_chain()"
    )
    conn.execute(CHECKPOINTS_DDL)
    conn.execute(TOKENS_DDL)
    conn.execute(f"LOCK TABLE {events} IN EXCLUSIVE MODE")  # writers wait while it chains
    with conn.cursor(binary=True) as cursor:
        chain_missing(
            lambda originator_id, version, limit: cursor.execute(
                "SELECT originator_id, originator_version, topic, state, chain "
                f"FROM {events} WHERE (originator_id, originator_version) > (%s, %s) "
                "ORDER BY originator_id, originator_version LIMIT %s",
                (originator_id, version, limit),
            ).fetchall(),
            lambda changes: conn.cursor().executemany(
                f"UPDATE {events} SET chain = %s "
                "WHERE originator_id = %s AND originator_version = %s",
                changes,
            ),
        )
