"""The task form and the `tasks` policy (SPEC "Three input forms": Claude Code's TaskCreate /
TaskUpdate): every rule and code, replay and the views' fold re-applying each operation, and
random operation sequences against a small reference model written from the spec."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.errors import CorruptHistory
from domain.forms import detect_form, parse_proposal
from domain.ids import plan_aggregate_id
from domain.models import Form, PlanSnapshot, Step, TaskOperation
from domain.plan import Plan
from projections.fold import fold_events

SESSION = "s1"


def create(title: str, task_id: str | None = None, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"op": "create", "title": title, **extra}
    if task_id is not None:
        payload["id"] = task_id
    return payload


def update(task_id: Any, **fields: Any) -> dict[str, Any]:
    return {"op": "update", "id": task_id, **fields}


def run(*payloads: dict[str, Any]) -> tuple[Plan, list[tuple[str, list[str]]]]:
    """Propose and decide each payload in turn; (status, violation codes) of each."""
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    results = []
    for n, payload in enumerate(payloads):
        plan.propose(f"p{n}", parse_proposal(payload), f"fp-{n}", "unit")
        outcome = plan.decide(set())
        results.append((outcome.status, [v.code for v in outcome.violations]))
    return plan, results


def tasks(plan: Plan) -> list[tuple[str, str, str, tuple[str, ...]]]:
    assert plan.snapshot is not None
    return [(s.id, s.title, s.status, s.blocked_by) for s in plan.snapshot.steps]


THREE = (create("Write the test"), create("Fix the bug"), create("Run the suite"))


def test_detects_the_task_form() -> None:
    assert detect_form({"op": "create", "title": "x"}) is Form.TASK
    assert detect_form({"op": "update", "id": "1"}) is Form.TASK
    assert detect_form({"op": "create", "plan": []}) is Form.CODEX  # `plan` decides
    assert detect_form({"title": "x", "steps": []}) is Form.STRICT


def test_creates_are_numbered_as_claude_code_numbers_them() -> None:
    plan, results = run(*THREE)
    assert results == [("committed", [])] * 3
    assert tasks(plan) == [
        ("1", "Write the test", "pending", ()),
        ("2", "Fix the bug", "pending", ()),
        ("3", "Run the suite", "pending", ()),
    ]
    assert plan.policy == "tasks"
    assert plan.revision == 3
    plan, _ = run(create("A", "7"), create("B"), create("C", "x9"), create("D"))
    assert [t[0] for t in tasks(plan)] == ["7", "8", "x9", "9"]


def test_any_number_of_tasks_in_progress() -> None:
    plan, results = run(
        *THREE, update("1", status="in_progress"), update("2", status="in_progress")
    )
    assert results[-2:] == [("committed", []), ("committed", [])]
    assert [t[2] for t in tasks(plan)] == ["in_progress", "in_progress", "pending"]


def test_an_update_changes_only_what_it_names() -> None:
    plan, results = run(
        *THREE,
        update("2", title="  Fix the parser bug ", owner="agent-a", detail="in parse.py"),
        update("3", add_blocked_by=["1", "2", "1"]),
        update("1", add_blocks=["2"]),
    )
    assert all(status == "committed" for status, _ in results)
    assert plan.snapshot is not None
    second = plan.snapshot.steps[1]
    assert (second.title, second.owner, second.status) == (
        "Fix the parser bug",
        "agent-a",
        "pending",
    )
    assert second.blocked_by == ("1",)
    assert plan.snapshot.steps[2].blocked_by == ("1", "2")
    assert second.model_dump(mode="json") == {
        "id": "2",
        "title": "Fix the parser bug",
        "status": "pending",
        "blocked_by": ["1"],
        "owner": "agent-a",
    }
    # Unset, they are left out: the other policies' steps keep their three fields.
    assert plan.snapshot.steps[0].model_dump(mode="json") == {
        "id": "1",
        "title": "Write the test",
        "status": "pending",
    }


def test_deleted_leaves_the_plan_and_every_blocker_list() -> None:
    plan, results = run(*THREE, update("3", add_blocked_by=["2"]), update("2", status="deleted"))
    assert results[-1] == ("committed", [])
    assert tasks(plan) == [
        ("1", "Write the test", "pending", ()),
        ("3", "Run the suite", "pending", ()),
    ]
    assert plan.revision == 5


CASES = [
    pytest.param([create("  ")], ["blank_step_title"], id="blank-title"),
    pytest.param([create("A", "1"), create("B", "1")], ["duplicate_step_id"], id="duplicate-id"),
    pytest.param(
        [create("A", "1"), create(" ", "1")],
        ["duplicate_step_id", "blank_step_title"],
        id="duplicate-id-blank-title",
    ),
    pytest.param(
        [create("A", "1"), create("x" * 501, "1")],
        ["duplicate_step_id", "too_long"],
        id="duplicate-id-long-title",
    ),
    pytest.param([create("A", "bad id")], ["invalid_step_id"], id="invalid-id"),
    pytest.param(
        [create("A", "1"), update("99", status="completed")], ["unknown_step"], id="unknown-task"
    ),
    pytest.param(
        [create("A"), update("1", status="done")], ["invalid_status"], id="unknown-status"
    ),
    pytest.param(
        [create("A"), update("1", status="completed"), update("1", status="in_progress")],
        ["completed_step_reopened"],
        id="reopen",
    ),
    pytest.param(
        [create("A"), update("1", status="completed"), update("1", status="pending")],
        ["completed_step_reopened"],
        id="reopen-to-pending",
    ),
    pytest.param(
        [
            create("A"),
            create("B"),
            update("2", add_blocked_by=["1"]),
            update("2", status="in_progress"),
        ],
        ["blocked_step_started"],
        id="start-while-blocked",
    ),
    pytest.param(
        [create("A"), create("B"), update("1", add_blocks=["2"]), update("2", status="completed")],
        ["blocked_step_started"],
        id="complete-while-blocked",
    ),
    pytest.param(
        [create("A"), update("1", add_blocked_by=["7"])], ["unknown_step"], id="unknown-blocker"
    ),
    pytest.param(
        [create("A"), update("1", add_blocks=["7"])], ["unknown_step"], id="unknown-blocked"
    ),
    pytest.param(
        [create("A"), update("1", add_blocked_by=["1"])], ["dependency_cycle"], id="self-block"
    ),
    pytest.param(
        [
            create("A"),
            create("B"),
            create("C"),
            update("2", add_blocked_by=["1"]),
            update("3", add_blocked_by=["2"]),
            update("1", add_blocked_by=["3"]),
        ],
        ["dependency_cycle"],
        id="cycle-of-three",
    ),
    pytest.param(
        [create("A"), update(None, status="completed")], ["missing_field"], id="no-task-id"
    ),
    pytest.param(
        [create("A"), update(1, status="completed")],
        ["invalid_field", "missing_field"],
        id="numeric-id",
    ),
    pytest.param(
        [create("A"), update("1", add_blocked_by=[1])], ["invalid_field"], id="numeric-blocker"
    ),
    pytest.param(
        [create("A"), update("1", add_blocked_by="1")], ["invalid_field"], id="blockers-not-a-list"
    ),
    pytest.param([{"op": "remove", "id": "1"}], ["invalid_field", "unknown_step"], id="unknown-op"),
    pytest.param([create("A", status="pending")], ["unknown_field"], id="create-with-status"),
    pytest.param([create("A"), update("1", mode="plan")], ["mode_change_forbidden"], id="mode"),
    pytest.param([create("A"), update("1", owner="o" * 129)], ["too_long"], id="long-owner"),
    pytest.param(
        [create("A"), update("1", expected_revision=0)], ["revision_conflict"], id="stale"
    ),
    pytest.param([create(f"T{n}") for n in range(101)], ["too_many_steps"], id="too-many-tasks"),
    pytest.param(
        [{"plan": [{"step": "A", "status": "pending"}]}, create("B")],
        ["policy_mismatch"],
        id="task-on-a-codex-plan",
    ),
    pytest.param(
        [create("B"), {"plan": [{"step": "A", "status": "pending"}]}],
        ["policy_mismatch"],
        id="codex-on-a-task-plan",
    ),
]


@pytest.mark.parametrize(("payloads", "codes"), CASES)
def test_each_rule_rejects_the_last_operation(
    payloads: list[dict[str, Any]], codes: list[str]
) -> None:
    plan, results = run(*payloads)
    assert all(status == "committed" for status, _ in results[:-1]), results
    status, found = results[-1]
    assert status == "rejected"
    assert sorted(set(found)) == sorted(codes)
    if plan.snapshot is not None:  # a rejection leaves the list as it was
        replayed, _ = run(*payloads[:-1])
        assert plan.snapshot == replayed.snapshot


def test_every_violation_at_once() -> None:
    _, results = run(
        create("A"),
        create("B"),
        update("2", status="done", add_blocked_by=["2", "9"], owner=5),
    )
    assert sorted(results[-1][1]) == [
        "dependency_cycle",
        "invalid_field",
        "invalid_status",
        "unknown_step",
    ]


# -- replay and the views' fold re-apply every operation -----------------------------------


def history() -> tuple[Plan, list[Any]]:
    """Versions: 1 created; p0-p2 creates (2-7); p3 blockers (8-9); p4 start 1 (10-11);
    p5 a rejected start of 2 (12-13); p6 complete 1 (14-15); p7 start 2 (16-17)."""
    plan, results = run(
        *THREE,
        update("2", add_blocked_by=["1"]),
        update("1", status="in_progress"),
        update("2", status="in_progress"),
        update("1", status="completed"),
        update("2", status="in_progress", owner="sub-agent"),
    )
    assert [s for s, _ in results] == ["committed"] * 5 + ["rejected"] + ["committed"] * 2
    return plan, list(plan.collect_events())


def replay(events: Sequence[Any]) -> Plan:
    aggregate = None
    for event in events:
        aggregate = event.mutate(aggregate)
    assert isinstance(aggregate, Plan)
    return aggregate


def fold(events: Sequence[Any]) -> Any:
    changes = fold_events({}, [(event, None) for event in events])
    return changes


def edit(events: list[Any], kind: type[Any], proposal_id: str, **changes: Any) -> list[Any]:
    [index] = [
        n
        for n, e in enumerate(events)
        if isinstance(e, kind) and getattr(e, "proposal_id", None) == proposal_id
    ]
    forged = list(events)
    forged[index] = dataclasses.replace(events[index], **changes)
    return forged


def forge_list(events: list[Any], proposal_id: str, steps: Sequence[Step]) -> list[Any]:
    """Rewrite a proposal's candidate and its commit's list alike (as an edited table would)."""
    forged = PlanSnapshot(title=None, steps=tuple(steps))
    events = edit(events, Plan.PlanProposed, proposal_id, candidate=forged)
    return edit(events, Plan.PlanCommitted, proposal_id, snapshot=forged)


def test_a_task_history_replays_and_folds_to_the_same_list() -> None:
    plan, events = history()
    rebuilt = replay(events)
    assert rebuilt == plan
    changes = fold(events)
    assert not changes.corrupt
    _, view = changes.views[SESSION]
    assert view.revision == plan.revision == 7
    assert view.policy == "tasks"
    assert plan.snapshot is not None
    assert tuple(view.steps) == plan.snapshot.steps
    assert view.steps[1].owner == "sub-agent"
    entries = [row.entry for row in changes.history]
    proposed = [e for e in entries if e.kind == "proposed"]
    assert proposed[3].operation == TaskOperation(op="update", id="2", add_blocked_by=("1",))
    committed = [e for e in entries if e.kind == "committed"]
    assert [(t.step_id, t.from_, t.to) for t in committed[0].transitions or []] == [
        ("1", None, "pending")
    ]


STEP = Step(id="1", title="Write the test", status="completed")

FORGERIES = [
    pytest.param(
        lambda ev: forge_list(
            ev,
            "p7",
            [
                STEP,
                Step(
                    id="2",
                    title="Retitled",
                    status="in_progress",
                    blocked_by=("1",),
                    owner="sub-agent",
                ),
                Step(id="3", title="Run the suite", status="pending"),
            ],
        ),
        "snapshot_mismatch",
        17,
        id="list-not-what-the-operation-makes",
    ),
    pytest.param(
        lambda ev: edit(
            ev,
            Plan.PlanProposed,
            "p7",
            operation=TaskOperation(op="update", id="3", status="in_progress", owner="sub-agent"),
        ),
        "snapshot_mismatch",
        17,
        id="operation-edited",
    ),
    pytest.param(
        lambda ev: edit(
            ev,
            Plan.PlanProposed,
            "p4",
            operation=TaskOperation(op="update", id="9", status="in_progress"),
        ),
        "unknown_step",
        11,
        id="operation-on-a-missing-task",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanProposed, "p7", operation=None),
        "missing_field",
        17,
        id="operation-deleted",
    ),
]


@pytest.mark.parametrize(("forge", "rule", "position"), FORGERIES)
def test_forged_task_history_is_refused_by_replay_and_fold(
    forge: Callable[[list[Any]], list[Any]], rule: str, position: int
) -> None:
    _, events = history()
    forged = forge(events)
    with pytest.raises(CorruptHistory) as caught:
        replay(forged)
    assert (caught.value.position, caught.value.rule) == (position, rule)
    corrupt = fold(forged).corrupt[SESSION]
    assert corrupt.position == position
    assert corrupt.rule == rule


def test_a_forged_start_past_an_open_blocker_is_refused() -> None:
    _, events = history()
    # p5 (rejected: 2 is blocked by 1, still in progress) rewritten into a commit of 2's start
    index = next(
        n
        for n, e in enumerate(events)
        if isinstance(e, Plan.PlanRejected) and e.proposal_id == "p5"
    )
    started = (
        Step(id="1", title="Write the test", status="in_progress"),
        Step(id="2", title="Fix the bug", status="in_progress", blocked_by=("1",)),
        Step(id="3", title="Run the suite", status="pending"),
    )
    forged = edit(
        events, Plan.PlanProposed, "p5", candidate=PlanSnapshot(title=None, steps=started)
    )
    commit = Plan.PlanCommitted(
        originator_id=events[index].originator_id,
        originator_version=events[index].originator_version,
        timestamp=events[index].timestamp,
        proposal_id="p5",
        revision=6,
        snapshot=PlanSnapshot(title=None, steps=started),
    )
    forged = [*forged[:index], commit]
    with pytest.raises(CorruptHistory) as caught:
        replay(forged)
    assert caught.value.rule == "blocked_step_started"
    assert fold(forged).corrupt[SESSION].rule == "blocked_step_started"


# -- random operations against a reference model -------------------------------------------

IDS = ["1", "1", "2", "2", "3", "4", "9"]  # small pools, so that collisions happen
STATUSES = ["pending", "in_progress", "completed", "deleted", "done"]


@dataclass
class Model:
    """The spec's task list: (id, status, blockers) in creation order."""

    tasks: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    policy_fixed: bool = False

    def decide(self, op: dict[str, Any]) -> set[str]:
        if op["op"] == "create":
            task_id = op.get("id") or str(
                max([int(i) for i in self.tasks if i.isdigit()], default=0) + 1
            )
            codes = set()
            if not op["title"].strip():
                codes.add("blank_step_title")
            if task_id in self.tasks:
                codes.add("duplicate_step_id")
            elif len(self.tasks) >= 100:
                codes.add("too_many_steps")
            if not codes:
                self.tasks[task_id] = ("pending", [])
            return codes
        target = op["id"]
        missing = [i for i in [target, *op.get("add_blocks", [])] if i not in self.tasks]
        if missing:
            return {"unknown_step"}
        after = {i: (s, list(b)) for i, (s, b) in self.tasks.items()}
        status = op.get("status")
        if status == "deleted":
            del after[target]
            for _, blockers in after.values():
                if target in blockers:
                    blockers.remove(target)
            self.tasks = after
            return set()
        old_status = after[target][0]
        if status is not None:
            after[target] = (status, after[target][1])
        for blocker in op.get("add_blocked_by", []):
            if blocker not in after[target][1]:
                after[target][1].append(blocker)
        for blocked in op.get("add_blocks", []):
            if target not in after[blocked][1]:
                after[blocked][1].append(target)
        codes = set()
        new_status = after[target][0]
        if new_status not in ("pending", "in_progress", "completed"):
            codes.add("invalid_status")
        if old_status == "completed" and new_status in ("pending", "in_progress"):
            codes.add("completed_step_reopened")
        if any(b not in after for _, bs in after.values() for b in bs):
            codes.add("unknown_step")
        if _has_cycle({i: [b for b in bs if b in after] for i, (_, bs) in after.items()}):
            codes.add("dependency_cycle")
        for task_id, (status_now, blockers) in after.items():
            moved = (
                status_now in ("in_progress", "completed") and status_now != self.tasks[task_id][0]
            )
            if moved and any(b in after and after[b][0] != "completed" for b in blockers):
                codes.add("blocked_step_started")
        if not codes:
            self.tasks = after
        return codes


def _has_cycle(edges: dict[str, list[str]]) -> bool:
    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in edges.get(start, []):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    return any(reaches(node, node, {node}) for node in edges)


operations = st.one_of(
    st.builds(
        lambda title, task_id: create(title, task_id),
        st.sampled_from(["Do it", "Do it", "  Padded ", "  "]),
        st.sampled_from([None, None, None, "4", "2"]),
    ),
    st.builds(
        lambda task_id, status, blocked_by, blocks: {
            "op": "update",
            "id": task_id,
            **({"status": status} if status else {}),
            **({"add_blocked_by": blocked_by} if blocked_by else {}),
            **({"add_blocks": blocks} if blocks else {}),
        },
        st.sampled_from(IDS),
        st.sampled_from([None, *STATUSES, "completed", "in_progress"]),
        st.lists(st.sampled_from(IDS), max_size=1),
        st.lists(st.sampled_from(IDS), max_size=1),
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operations, max_size=30))
def test_random_operations_agree_with_the_model_replay_and_fold(ops: list[dict[str, Any]]) -> None:
    ops = [*THREE, *ops]  # tasks to work on from the start
    model = Model()
    plan, results = run(*ops)
    for op, (status, codes) in zip(ops, results, strict=True):
        expected = model.decide(op)
        assert set(codes) == expected, (op, codes)
        assert status == ("rejected" if expected else "committed")
    listed = (
        [(s.id, s.status, list(s.blocked_by)) for s in plan.snapshot.steps] if plan.snapshot else []
    )
    assert listed == [(i, s, b) for i, (s, b) in model.tasks.items()]
    events = list(plan.collect_events())
    assert replay(events) == plan
    changes = fold(events)
    assert not changes.corrupt
    if events[1:]:
        assert changes.views[SESSION][1].steps == (
            list(plan.snapshot.steps) if plan.snapshot else []
        )
