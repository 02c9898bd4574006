"""The endpoint a user would write instead of the ledger: FastAPI, a pydantic model of the
strict-form plan, a psycopg pool, and each plan stored as one JSONB row (no rules, history,
chain or views). bench/commit_rate.py runs it beside `planledger serve` as the HTTP baseline.

    python bench/handwritten.py --database postgresql://...?schema=S --port 8765
"""

from __future__ import annotations

import argparse
from typing import Literal

import common
import uvicorn
from fastapi import FastAPI
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from pydantic import BaseModel


class Step(BaseModel):
    id: str
    title: str
    status: Literal["pending", "in_progress", "completed"]


class PlanBody(BaseModel):
    title: str | None = None
    expected_revision: int | None = None
    steps: list[Step]


class SessionBody(BaseModel):
    session_id: str


def application(conninfo: str) -> FastAPI:
    pool = ConnectionPool(conninfo, min_size=1, max_size=4, open=True)
    with pool.connection() as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS handwritten_plans (id bigserial PRIMARY KEY, "
            "session_id text NOT NULL, plan jsonb NOT NULL)"
        )
    app = FastAPI()

    @app.post("/sessions", status_code=201)
    def open_session(body: SessionBody) -> dict[str, str]:
        return {"session_id": body.session_id}

    @app.post("/sessions/{session_id}/plan")
    def commit(session_id: str, body: PlanBody) -> dict[str, str]:
        with pool.connection() as conn:
            conn.execute(
                "INSERT INTO handwritten_plans (session_id, plan) VALUES (%s, %s)",
                (session_id, Jsonb(body.model_dump(mode="json"))),
            )
        return {"status": "committed"}

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="a bench store's postgresql:// URL")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(
        application(common.search_path(args.database)),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
