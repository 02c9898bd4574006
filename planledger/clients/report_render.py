"""A session's audit report (planledger.service.report) as Markdown, for a PR description or a
review, and as one self-contained HTML file (its style inline, no script, nothing fetched from
elsewhere), readable offline."""

from __future__ import annotations

import re
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


VERIFIED = "verified: every rule and every event's hash chain holds"


def verdict(report: SessionReport) -> str:
    if report.verified:
        return VERIFIED
    return "NOT VERIFIED: " + "; ".join(
        f"event {p.position} [{p.rule}] {p.message}" for p in report.problems
    )


# -- Markdown ---------------------------------------------------------------------------------


def markdown(report: SessionReport) -> str:
    session = report.session
    md = _MarkdownText()
    lines = [f"# Plan ledger report: session {md.code(session.session_id)}", ""]
    lines += [
        f"- **{_markdown_verdict(md, report)}**",
        f"- chain head: {md.code(report.chain_head or 'none')}",
        f"- mode: {md(session.mode)}; source: {md(session.source or 'unknown')}"
        + (f"; parent: {md.code(session.parent_session_id)}" if session.parent_session_id else ""),
        f"- {len(report.revisions)} revision(s), {len(report.rejections)} rejection(s); "
        f"exported {when(report.exported_at)}",
        "",
    ]
    if report.goals:
        lines += ["## Goals", ""]
        lines += [
            f"- {md.code(g.goal_id)} ({md(g.state)}): {md(g.objective)}" for g in report.goals
        ]
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
    """User text made literal in Markdown (CommonMark and GFM, GitHub's renderer included), on
    one line, by backslash escapes: CommonMark lets any ASCII punctuation character be escaped,
    and an escaped character is only itself. The report's own text is written as it is.

    Escaped: the backslash itself; what starts or ends code (`), emphasis (* _), strikethrough
    (~), a link, an image, a reference or a footnote ([ ]), raw HTML or an autolink (< >), an
    entity or character reference (&), a table cell (|), an ATX heading's closing sequence (#),
    math ($) and GFM's bare autolinks (: of a scheme, . of www. or a domain). Every run of
    whitespace (newlines too) becomes one space, and user text never begins a line, so nothing
    that only counts at the start of a line can start a block: a heading, a quote, a list item
    ("- ", "1. ", "1) "), a rule or underline, an indent, a fence or a reference definition.
    Other punctuation means nothing inside a line and is kept as it is, for the file to stay
    readable.

    A code span keeps its text verbatim (escapes don't work inside one): its fence is one
    backtick longer than the longest run inside, and a space pads text that begins or ends with
    a backtick (CommonMark strips one space at each end)."""

    SPECIAL = frozenset("\\`*_~[]<>&|#$:.")

    def __call__(self, text: str) -> str:
        return "".join(f"\\{c}" if c in self.SPECIAL else c for c in _one_line(text))

    def code(self, text: str) -> str:
        flat = _one_line(text)
        if not flat:
            return ""
        fence = "`" * (max(map(len, re.findall("`+", flat)), default=0) + 1)
        pad = " " if flat.startswith("`") or flat.endswith("`") else ""
        return f"{fence}{pad}{flat}{pad}{fence}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _markdown_verdict(md: _MarkdownText, report: SessionReport) -> str:
    if report.verified:
        return VERIFIED
    return "NOT VERIFIED: " + "; ".join(
        f"event {p.position} \\[{md(p.rule)}\\] {md(p.message)}" for p in report.problems
    )


def _markdown_revision(md: _MarkdownText, revision: ReportRevision) -> list[str]:
    plan = revision.plan
    lines = [
        f"### Revision {revision.revision}: {md(plan_title(revision))}",
        "",
        f"{when(revision.at)} by {md(revision.actor or 'unknown')}"
        + (f" via {md(revision.client)}" if revision.client else "")
        + f", proposal {md.code(revision.proposal_id)}",
        "",
    ]
    lines += [_markdown_step(md, step) for step in plan.steps] or ["(an empty plan)"]
    if revision.transitions:
        changes = "; ".join(_markdown_transition(md, t) for t in revision.transitions)
        lines += ["", f"Changes: {changes}"]
    return [*lines, ""]


def _markdown_step(md: _MarkdownText, step: Step) -> str:
    blocked = ", ".join(md(task) for task in step.blocked_by)
    blocked = f" (blocked by {blocked})" if blocked else ""
    owner = f" (owner {md(step.owner)})" if step.owner else ""
    mark = MARKS.get(step.status, f"[{_one_line(step.status)}]")
    return f"- {md.code(mark)} {md(step.title)} ({md.code(step.id)}){blocked}{owner}"


def _markdown_transition(md: _MarkdownText, change: Transition) -> str:
    if change.from_ is None:
        return f"{md(change.step_id)}: added ({md(change.to or '')})"
    if change.to is None:
        return f"{md(change.step_id)}: removed (was {md(change.from_)})"
    return f"{md(change.step_id)}: {md(change.from_)} -> {md(change.to)}"


def plan_title(revision: ReportRevision) -> str:
    plan = revision.plan
    return plan.title or ("(task list)" if plan.policy == "tasks" else "(untitled)")


def _markdown_rejection(md: _MarkdownText, rejection: ReportRejection) -> list[str]:
    lines = [
        f"- {when(rejection.at)} by {md(rejection.actor or 'unknown')}, proposal "
        f"{md.code(rejection.proposal_id)}:"
    ]
    lines += [f"  - {_markdown_violation(md, v)}" for v in rejection.violations]
    return lines


def _markdown_violation(md: _MarkdownText, violation: Violation) -> str:
    where = f" (step {md.code(violation.step_id)})" if violation.step_id else ""
    return f"{md.code(violation.code)}{where}: {md(violation.message)}"


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
