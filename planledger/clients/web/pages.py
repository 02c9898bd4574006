"""The web page's HTML, built in Python: every value passes through `html.escape`."""

from __future__ import annotations

from datetime import datetime
from html import escape
from urllib.parse import quote

from domain.errors import CorruptHistory
from planledger.service.results import SessionView
from projections.shapes import SessionList, SessionListItem


def layout(title: str, body: str, static: str, *, script: bool = False) -> str:
    """The page around `body` (already escaped): local styles, and the script when asked."""
    tag = f'<script src="{static}/ledger.js" defer></script>' if script else ""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} · plan ledger</title>
<link rel="icon" href="{static}/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{static}/ledger.css">
{tag}
</head>
<body>
<header class="bar"><a class="brand" href="/ui">plan ledger</a></header>
{body}
</body>
</html>
"""


def session_href(session_id: str) -> str:
    return f"/ui/sessions/{quote(session_id, safe='')}"


def when(moment: datetime | None) -> str:
    """A timestamp as `YYYY-MM-DD HH:MM:SS UTC`."""
    if moment is None:
        return "—"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def session_list_page(
    sessions: SessionList, static: str, *, source: str | None = None, query: str | None = None
) -> str:
    """Every session (newest first), or those of one `source` whose title or id holds
    `query`; with a form to choose them."""
    sources = sorted({item.source for item in sessions.sessions if item.source})
    needle = (query or "").strip().casefold()
    shown = [
        item
        for item in sessions.sessions
        if (not source or item.source == source)
        and (
            not needle
            or needle in (item.title or "").casefold()
            or needle in item.session_id.casefold()
        )
    ]
    rows = "\n".join(session_row(item) for item in shown)
    if rows:
        content = (
            '<table id="sessions"><thead><tr><th>session</th><th>plan</th>'
            '<th class="num">progress</th><th>source</th><th>mode</th>'
            '<th class="num">revision</th><th>last activity</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>"
        )
    elif sessions.sessions:
        content = '<p class="empty" id="sessions">No session matches.</p>'
    else:
        content = '<p class="empty" id="sessions">No sessions yet.</p>'
    options = "".join(
        f'<option value="{escape(name)}"{" selected" if name == source else ""}>'
        f"{escape(name)}</option>"
        for name in sources
    )
    filters = (
        '<form class="filters" id="filters" method="get" action="/ui" role="search">'
        '<select name="source" aria-label="source"><option value="">all sources</option>'
        f"{options}</select>"
        '<input type="search" name="q" placeholder="search titles" aria-label="search titles" '
        f'value="{escape(query or "")}"><button type="submit">filter</button></form>'
    )
    body = f'<main class="page"><h1>Sessions</h1>{filters}{content}</main>'
    return layout("sessions", body, static)


def session_row(item: SessionListItem) -> str:
    """A session's row: its plan at a glance, where it comes from, and when it last moved."""
    if item.corrupt:
        plan = '<span class="corrupt">corrupt history</span>'
    elif item.title:
        plan = escape(item.title)
    else:  # steps without a title or one in progress (say every task done), or none at all
        plan = f'<span class="muted">{"untitled" if item.revision else "no plan"}</span>'
    if item.parent_session_id:
        parent = escape(item.parent_session_id)
        plan += (
            f'<div class="sub">from <a href="{escape(session_href(item.parent_session_id))}">'
            f"{parent}</a></div>"
        )
    if item.cwd:
        plan += f'<div class="sub"><code>{escape(item.cwd)}</code></div>'
    progress = item.progress
    done = f"{progress.completed}/{progress.total}" if progress.total else ""
    return (
        f'<tr data-session-id="{escape(item.session_id)}" '
        f'data-source="{escape(item.source or "")}" data-corrupt="{str(item.corrupt).lower()}">'
        f'<td><a href="{escape(session_href(item.session_id))}">{escape(item.session_id)}</a></td>'
        f'<td class="title">{plan}</td>'
        f'<td class="num">{done}</td>'
        f"<td>{escape(item.source or '')}</td>"
        f"<td>{escape(item.mode)}</td>"
        f'<td class="num">{item.revision}</td>'
        f"<td>{escape(when(item.updated_at))}</td></tr>"
    )


def goal_items(view: SessionView) -> str:
    if not view.goals:
        return '<li class="muted">no goals</li>'
    return "".join(
        f'<li data-goal-id="{escape(goal.goal_id)}" data-state="{escape(goal.state)}">'
        f'<span class="badge">{escape(goal.state)}</span> <code>{escape(goal.goal_id)}</code> '
        f"{escape(goal.objective)}</li>"
        for goal in view.goals
    )


def origin_badges(view: SessionView) -> str:
    """Where the session comes from: its source, the session it forked from, its folder."""
    badges = ""
    if view.source:
        badges += f' <span class="badge" id="source">{escape(view.source)}</span>'
    if view.parent_session_id:
        parent = view.parent_session_id
        badges += (
            f' <span class="badge" id="parent">from <a href="{escape(session_href(parent))}">'
            f"{escape(parent)}</a></span>"
        )
    if view.cwd:
        badges += f' <code class="small muted" id="cwd">{escape(view.cwd)}</code>'
    return badges


def session_page(view: SessionView, after: int, static: str) -> str:
    """The shell the script fills: plan with its slider, and the history timeline."""
    sid = escape(view.session_id)
    body = f"""<main class="page" id="session" data-session-id="{sid}" data-after="{after}">
<section class="head">
  <h1><span class="muted">session</span> {sid}</h1>
  <p class="meta"><span class="badge">mode {escape(view.mode)}</span>{origin_badges(view)}
    <span id="live" class="live" data-state="connecting">connecting</span></p>
  <ul class="goals">{goal_items(view)}</ul>
</section>
<p id="error" class="error" role="alert" hidden></p>
<noscript><p class="error">This page needs JavaScript to show the plan.</p></noscript>
<div class="columns">
<section class="card" aria-labelledby="plan-heading">
  <div class="plan-head">
    <h2 id="plan-heading">Plan <span class="muted">revision
      <span id="revision">…</span> of <span id="latest">…</span></span></h2>
    <button id="to-latest" type="button" hidden>latest</button>
  </div>
  <input id="slider" type="range" min="0" max="0" value="0" disabled
    aria-label="revision on display">
  <p id="newer" class="notice" role="status" hidden></p>
  <h3 id="plan-title" class="plan-title"></h3>
  <p id="plan-meta" class="muted small"></p>
  <ol id="plan" class="steps"></ol>
  <p id="plan-empty" class="empty" hidden></p>
  <details id="compare" class="compare">
    <summary>Compare two revisions</summary>
    <form id="diff-form" class="diff-form">
      <label>from <input id="diff-from" type="number" min="0" value="0" required></label>
      <label>to <input id="diff-to" type="number" min="0" value="0" required></label>
      <button type="submit">compare</button>
    </form>
    <ul id="diff" class="diff"></ul>
  </details>
</section>
<section class="card" aria-labelledby="history-heading">
  <h2 id="history-heading">History <span class="muted small">newest first</span></h2>
  <ol id="history" class="timeline"></ol>
</section>
</div>
</main>"""
    return layout(view.session_id, body, static, script=True)


def not_found_page(session_id: str, static: str) -> str:
    body = (
        '<main class="page" id="not-found"><h1>Session not found</h1>'
        f"<p>There is no session <code>{escape(session_id)}</code> in this ledger.</p>"
        '<p><a href="/ui">All sessions</a></p></main>'
    )
    return layout("not found", body, static)


def corrupt_page(error: CorruptHistory, static: str) -> str:
    """A session whose stored history fails its checks: where, which rule, and what to run."""
    body = (
        '<main class="page" id="corrupt-history"><h1>Corrupt history</h1>'
        f"<p>The stored history of session <code>{escape(error.session_id)}</code> fails its "
        f"checks at event <code>{error.position}</code>: "
        f'<span class="corrupt">{escape(error.rule)}</span>.</p>'
        f'<p class="error">{escape(error.detail)}</p>'
        "<p>Nothing is shown as its history. <code>planledger verify</code> reports every "
        "session that fails, and a signed checkpoint proves what was there before.</p>"
        '<p><a href="/ui">All sessions</a></p></main>'
    )
    return layout("corrupt history", body, static)
