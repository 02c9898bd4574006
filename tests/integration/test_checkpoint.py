"""Signed checkpoints on both databases: an untouched store verifies against one; a history
rewritten by someone who knows the chain's formula (so every chain holds and every rule
holds) is caught against it, naming the session, the position and `checkpoint_mismatch`; a
statement edited or signed by another key is refused."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.checkpoint import Checkpoint
from domain.errors import CorruptHistory
from planledger.service import PlanLedger, open_planledger
from planledger.service.keys import public_key, signing_key
from tests.integration import test_chain
from tests.integration.storage import chain_again, delete_events, edit_event, swap_states
from tests.integration.test_chain import codex, inserted

ledger = test_chain.ledger  # sessions s1 and s2, each with commits, an explanation, a rejection


@pytest.fixture
def key(tmp_path: Path) -> Ed25519PrivateKey:
    made, _ = signing_key(None, tmp_path / "home")
    return made


def retitled(url: str) -> None:
    """The first step retitled in a proposal and in its commit alike (its id, derived from the
    text, stays the same): every rule still holds."""

    def proposal(data: dict[str, Any]) -> None:
        data["candidate"]["_data_"]["steps"][0]["title"] = "LOOK!"

    def commit(data: dict[str, Any]) -> None:
        data["snapshot"]["_data_"]["steps"][0]["title"] = "LOOK!"

    edit_event(url, "plan:s1", 4, proposal)
    edit_event(url, "plan:s1", 5, commit)


def reexplain(data: dict[str, Any]) -> None:
    data["explanation"] = "a reason given later"


def rechained(url: str, change: Callable[[str], None]) -> None:
    change(url)
    chain_again(url, "plan:s1")


# Each rewrite keeps every rule and leaves every chain valid: only a checkpoint tells.
REWRITES: dict[str, tuple[Callable[[str], None], int]] = {
    "a step title": (retitled, 9),
    "an explanation": (lambda url: edit_event(url, "plan:s1", 4, reexplain), 9),
    "the last event deleted": (lambda url: delete_events(url, "plan:s1", 9), 9),
    "two payloads swapped": (
        lambda url: rechained(url, lambda u: swap_states(u, "plan:s1", 7, 6)),
        9,
    ),
}


def test_an_untouched_store_verifies_against_its_checkpoint(
    ledger: PlanLedger, key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    made = ledger.checkpoint(key)
    assert (made.position, made.sessions, len(made.heads)) == (
        ledger.views.max_notification_id(),
        2,
        4,
    )
    assert ledger.verify(checkpoint=made, trusted=key.public_key()).ok
    ledger.submit("s2", codex(("Look", "completed"), ("Fix", "completed"), ("Ship", "pending")))
    assert ledger.verify(checkpoint=made, trusted=key.public_key()).ok  # later events: not its
    assert ledger.latest_checkpoint() == made


@pytest.mark.parametrize("rewrite", REWRITES)
def test_a_rewrite_that_keeps_rules_and_chains_is_caught_against_a_checkpoint(
    ledger: PlanLedger,
    database_url: str,
    new_ledger: Callable[[str], PlanLedger],
    key: Ed25519PrivateKey,
    rewrite: str,
) -> None:
    made = ledger.checkpoint(key)
    change, position = REWRITES[rewrite]
    change(database_url)
    new_ledger(database_url).runner.rebuild()  # the views made again from the rewrite
    reader = new_ledger(database_url)
    if rewrite != "two payloads swapped":  # (a rejection moved before its proposal breaks one)
        assert reader.verify().ok, "the rules and the chains alone cannot tell"
    report = reader.verify(checkpoint=made, trusted=key.public_key())
    found = [(p.session_id, p.position, p.rule) for p in report.problems]
    assert ("s1", position, "checkpoint_mismatch") in found
    assert all(sid == "s1" for sid, _, _ in found)
    with pytest.raises(CorruptHistory) as caught:  # marked: every read refuses it now
        reader.plan("s1")
    assert caught.value.rule in {"checkpoint_mismatch", "chain_broken"}
    assert reader.plan("s2").revision == 3


def test_an_event_inserted_is_caught_against_a_checkpoint(
    ledger: PlanLedger,
    database_url: str,
    new_ledger: Callable[[str], PlanLedger],
    key: Ed25519PrivateKey,
) -> None:
    made = ledger.checkpoint(key)
    rechained(database_url, inserted)
    report = new_ledger(database_url).verify(checkpoint=made, trusted=key.public_key())
    assert ("s1", 9, "checkpoint_mismatch") in [
        (p.session_id, p.position, p.rule) for p in report.problems
    ]


def test_a_statement_edited_or_signed_by_another_key_is_refused(
    ledger: PlanLedger, key: Ed25519PrivateKey, tmp_path: Path
) -> None:
    made = ledger.checkpoint(key)
    other, _ = signing_key(None, tmp_path / "elsewhere")
    (problem,) = ledger.verify(checkpoint=made, trusted=other.public_key()).problems
    assert (problem.session_id, problem.rule) == ("", "checkpoint_mismatch")
    assert "another key" in problem.message
    forged = made.model_copy(update={"position": made.position - 1})
    (problem,) = ledger.verify(checkpoint=forged).problems
    assert "signature does not hold" in problem.message
    heads = [made.heads[0]._replace(version=1), *made.heads[1:]]
    (problem,) = ledger.verify(checkpoint=made.model_copy(update={"heads": heads})).problems
    assert "heads" in problem.message


def test_a_checkpoint_verifies_elsewhere_with_only_the_public_key_and_the_store(
    sqlite_url: str, tmp_path: Path, new_ledger: Callable[[str], PlanLedger]
) -> None:
    with open_planledger(sqlite_url, home=None) as app:
        app.open_session("s1")
        app.submit("s1", codex(("Look", "in_progress")))
        signer, key_path = signing_key(None, tmp_path / "home")
        statement = app.checkpoint(signer).model_dump_json()
    assert key_path.stat().st_mode & 0o777 == 0o600
    assert key_path.parent.stat().st_mode & 0o777 == 0o700
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    copy = elsewhere / "copy.sqlite3"
    shutil.copy(sqlite_url.removeprefix("sqlite:///"), copy)
    shutil.copy(key_path.with_name("checkpoint.pub"), elsewhere / "signer.pub")
    reader = new_ledger(f"sqlite:///{copy}")
    checkpoint = Checkpoint.model_validate(json.loads(statement))
    assert reader.verify(checkpoint=checkpoint, trusted=public_key(elsewhere / "signer.pub")).ok
