"""A session's audit report (planledger.service.report) as Markdown, for a PR description or a
review, and as one self-contained HTML file (its style inline, no script, nothing fetched from
elsewhere), readable offline."""

from __future__ import annotations

from datetime import datetime
from html import escape

from domain.models import Step, Violation
from planledger.service.report import ReportRejection, ReportRevision, SessionReport
from projections.shapes import Transition

MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]", "cancelled": "[-]"}


def when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def transition_text(change: Transition) -> str:
    if change.from_ is None:
        return f"{change.step_id}: added ({change.to})"
    if change.to is None:
        return f"{change.step_id}: removed (was {change.from_})"
    return f"{change.step_id}: {change.from_} -> {change.to}"


def violation_text(violation: Violation) -> str:
    where = f" (step {violation.step_id})" if violation.step_id else ""
    return f"{violation.code}{where}: {violation.message}"


def verdict(report: SessionReport) -> str:
    if report.verified:
        return "verified: every rule and every event's hash chain holds"
    return "NOT VERIFIED: " + "; ".join(
        f"event {p.position} [{p.rule}] {p.message}" for p in report.problems
    )


# -- Markdown ---------------------------------------------------------------------------------


def markdown(report: SessionReport) -> str:
    session = report.session
    md = _MarkdownText()
    lines = [f"# Plan ledger report: session `{md.code(session.session_id)}`", ""]
    lines += [
        f"- **{md(verdict(report))}**",
        f"- chain head: `{report.chain_head or 'none'}`",
        f"- mode: {session.mode}; source: {md(session.source or 'unknown')}"
        + (
            f"; parent: `{md.code(session.parent_session_id)}`" if session.parent_session_id else ""
        ),
        f"- {len(report.revisions)} revision(s), {len(report.rejections)} rejection(s); "
        f"exported {when(report.exported_at)}",
        "",
    ]
    if report.goals:
        lines += ["## Goals", ""]
        lines += [f"- `{md.code(g.goal_id)}` ({g.state}): {md(g.objective)}" for g in report.goals]
        lines.append("")
    lines += ["## Revisions", ""]
    for revision in report.revisions:
        lines += _markdown_revision(md, revision)
    if not report.revisions:
        lines += ["No plan was ever committed.", ""]
    if report.rejections:
        lines += ["## Rejections", ""]
        for rejection in report.rejections:
            lines += _markdown_rejection(md, rejection)
    return "\n".join(lines).rstrip() + "\n"


class _MarkdownText:
    """Text made safe to place in Markdown, on one line: what could be read as a link, an
    HTML tag, code, emphasis or a table cell is escaped."""

    SPECIAL = "\\`*[]<>|~"

    def __call__(self, text: str) -> str:
        flat = " ".join(text.split())
        return "".join(f"\\{c}" if c in self.SPECIAL else c for c in flat)

    def code(self, text: str) -> str:
        return text.replace("`", "'")


def _markdown_revision(md: _MarkdownText, revision: ReportRevision) -> list[str]:
    plan = revision.plan
    lines = [
        f"### Revision {revision.revision}: {md(plan_title(revision))}",
        "",
        f"{when(revision.at)} by {md(revision.actor or 'unknown')}"
        + (f" via {md(revision.client)}" if revision.client else "")
        + f", proposal `{md.code(revision.proposal_id)}`",
        "",
    ]
    lines += [_markdown_step(md, step) for step in plan.steps] or ["(an empty plan)"]
    if revision.transitions:
        lines += ["", "Changes: " + "; ".join(md(transition_text(t)) for t in revision.transitions)]
    return [*lines, ""]


def _markdown_step(md: _MarkdownText, step: Step) -> str:
    blocked = f" (blocked by {md(', '.join(step.blocked_by))})" if step.blocked_by else ""
    owner = f" (owner {md(step.owner)})" if step.owner else ""
    mark = MARKS.get(step.status, f"[{step.status}]")
    return f"- `{mark}` {md(step.title)} (`{md.code(step.id)}`){blocked}{owner}"


def plan_title(revision: ReportRevision) -> str:
    plan = revision.plan
    return plan.title or ("(task list)" if plan.policy == "tasks" else "(untitled)")


def _markdown_rejection(md: _MarkdownText, rejection: ReportRejection) -> list[str]:
    lines = [
        f"- {when(rejection.at)} by {md(rejection.actor or 'unknown')}, proposal "
        f"`{md.code(rejection.proposal_id)}`:"
    ]
    lines += [f"  - {md(violation_text(v))}" for v in rejection.violations]
    return lines


# -- HTML -------------------------------------------------------------------------------------

STYLE = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}h3{font-size:1rem;margin:1.2rem 0 .3rem}
code{font:13px ui-monospace,monospace;background:#f3f3f3;padding:0 .2rem;word-break:break-all}
.ok{color:#0a6b2d;font-weight:600}.bad{color:#b00020;font-weight:600}.meta{color:#666}
ul.steps{list-style:none;padding-left:0}ul.steps li{margin:.1rem 0}
.s{display:inline-block;min-width:6.5rem;font:12px ui-monospace,monospace}
.completed{color:#0a6b2d}.in_progress{color:#8a5a00;font-weight:600}.cancelled{color:#888}
section.rev{border-left:3px solid #ddd;padding-left:.8rem}.changes{color:#444}
"""


def html(report: SessionReport) -> str:
    session = report.session
    e = escape
    status = "ok" if report.verified else "bad"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # Nothing may come from elsewhere: no script at all, styles inline only.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        f"<title>Plan ledger report: {e(session.session_id)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Plan ledger report: session <code>{e(session.session_id)}</code></h1>",
        f'<p id="verdict" class="{status}">{e(verdict(report))}</p>',
        '<p class="meta">',
        f"chain head <code>{e(report.chain_head or 'none')}</code><br>",
        f"mode {e(session.mode)}, source {e(session.source or 'unknown')}",
        f", parent <code>{e(session.parent_session_id)}</code>"
        if session.parent_session_id
        else "",
        f"<br>{len(report.revisions)} revision(s), {len(report.rejections)} rejection(s); "
        f"exported {e(when(report.exported_at))}</p>",
    ]
    if report.goals:
        parts.append("<h2>Goals</h2><ul>")
        parts += [
            f"<li><code>{e(g.goal_id)}</code> ({e(g.state)}): {e(g.objective)}</li>"
            for g in report.goals
        ]
        parts.append("</ul>")
    parts.append("<h2>Revisions</h2>")
    parts += [_html_revision(revision) for revision in report.revisions]
    if not report.revisions:
        parts.append("<p>No plan was ever committed.</p>")
    if report.rejections:
        parts.append('<h2>Rejections</h2><ul id="rejections">')
        parts += [_html_rejection(rejection) for rejection in report.rejections]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(part for part in parts if part) + "\n"


def _html_revision(revision: ReportRevision) -> str:
    e = escape
    plan = revision.plan
    by = e(revision.actor or "unknown") + (f" via {e(revision.client)}" if revision.client else "")
    steps = "".join(
        f'<li class="{e(step.status)}"><span class="s">{e(step.status)}</span> {e(step.title)} '
        f"<code>{e(step.id)}</code>"
        + (f" (blocked by {e(', '.join(step.blocked_by))})" if step.blocked_by else "")
        + (f" (owner {e(step.owner)})" if step.owner else "")
        + "</li>"
        for step in plan.steps
    )
    changes = "; ".join(e(transition_text(t)) for t in revision.transitions)
    return (
        f'<section class="rev" data-revision="{revision.revision}">'
        f"<h3>Revision {revision.revision}: {e(plan_title(revision))}</h3>"
        f'<p class="meta">{e(when(revision.at))} by {by}, proposal '
        f"<code>{e(revision.proposal_id)}</code></p>"
        + (f'<ul class="steps">{steps}</ul>' if steps else "<p>(an empty plan)</p>")
        + (f'<p class="changes">Changes: {changes}</p>' if changes else "")
        + "</section>"
    )


def _html_rejection(rejection: ReportRejection) -> str:
    e = escape
    violations = "".join(f"<li>{e(violation_text(v))}</li>" for v in rejection.violations)
    return (
        f"<li>{e(when(rejection.at))} by {e(rejection.actor or 'unknown')}, proposal "
        f"<code>{e(rejection.proposal_id)}</code><ul>{violations}</ul></li>"
    )
