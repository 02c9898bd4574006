"""`planledger export --format md` shows every piece of user text as literal text: rendered by a
real CommonMark renderer (with GFM's tables and strikethrough, and with bare-URL autolinks on
as well), a report with hostile text in any one field has exactly the elements of the same
report with a plain word there, no link, image or raw HTML, and shows the user's text as it is
(its runs of whitespace, newlines included, as one space)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from domain.models import Step, Violation
from planledger.clients.report_render import markdown
from planledger.service.report import ReportRejection, ReportRevision, SessionReport
from planledger.service.results import GoalView, Problem, SessionView
from projections.shapes import PlanView, Transition

AT = datetime(2025, 1, 1, tzinfo=UTC)
PLACEHOLDER = "PLACEHOLDER"

HOSTILE: dict[str, str] = {
    # links and images
    "inline link": "[click](javascript:alert(1))",
    "inline link with title": '[click](https://example.com "t")',
    "image": "![x](javascript:alert(1))",
    "remote image": "![pixel](https://example.com/p.png)",
    "nested link": "[![x](y)](javascript:alert(1))",
    "link in brackets": "[[x]](javascript:alert(1))",
    "escaped paren link": "[a](javascript:alert\\(1\\))",
    "reference link": "[x][1]\n[1]: javascript:alert(1)",
    "reference definition first": "[1]: javascript:alert(1)\n[x][1] [1] [x][]",
    "collapsed reference": "[javascript:alert(1)][]",
    "footnote": "x[^1]\n[^1]: javascript:alert(1)",
    # autolinks
    "autolink js": "<javascript:alert(1)>",
    "autolink http": "<http://example.com>",
    "autolink mail": "<a@example.com>",
    "bare url": "see https://example.com/x?a=1",
    "bare www": "see www.example.com",
    "bare domain": "see example.com",
    "bare js": "javascript:alert(1)",
    # raw HTML
    "img tag": "<img src=x onerror=alert(1)>",
    "script": "<script>alert(1)</script>",
    "anchor tag": '<a href="javascript:alert(1)">x</a>',
    "bold tag": "<b>bold</b>",
    "closing tag": "</p></li></ul>",
    "comment": "<!-- hidden -->",
    "cdata": "<![CDATA[x]]>",
    "declaration": "<!DOCTYPE html>",
    "processing instruction": "<?php echo 1; ?>",
    "html block": "x\n<div>\n<script>alert(1)</script>\n</div>",
    # entities and references
    "named entities": "&lt;b&gt; &amp; &copy; &nbsp;",
    "numeric entities": "&#60;img&#62; &#x3C;x&#x3e; &#0;",
    "entity made tag": "&lt;img src=x onerror=alert(1)&gt;",
    "bare ampersand": "Tom & Jerry &",
    # backslashes
    "backslash escapes": "\\*not\\* \\[x\\](y) \\<b\\>",
    "trailing backslash": "ends with \\",
    "backslash line break": "a\\\nb",
    "backslash before entity": "\\&lt;",
    # code and backticks
    "one backtick": "`",
    "code span": "`code`",
    "backtick runs": "a ` b `` c ``` d",
    "breaking out of code": "x` <img src=x onerror=alert(1)> `",
    "double backticks": "``a``",
    "padded backticks": "` a `",
    "fence": "```\ncode\n```",
    "tilde fence": "~~~\ncode\n~~~",
    # emphasis and strikethrough
    "emphasis": "*a* _b_ **c** __d__ ***e***",
    "intraword": "snake_case_name a*b*c",
    "strikethrough": "~~gone~~ ~x~",
    # blocks that a line break or a line start would open
    "heading after newline": "a\n# heading",
    "leading hash": "# heading",
    "trailing hashes": "title ##",
    "quote": "> quote",
    "quote after newline": "a\n> quote",
    "bullet": "- item",
    "bullet after newline": "a\n- item\n+ item\n* item",
    "ordered": "1. item",
    "ordered paren after newline": "a\n1) item\n2. item",
    "thematic break": "a\n\n---\n***",
    "setext": "a\n===",
    "setext dash": "a\n---",
    "indented code": "a\n\n    code",
    "blank lines": "a\r\n\r\n<b>x</b>\r\n",
    "hard break": "a  \nb",
    "task item": "a\n- [ ] task",
    "table": "a | b\n--- | ---\n<b>c</b> | d",
    "pipes": "|a|b|",
    "unicode spaces": "a\u2028b\u00a0c\u2003d\tx\x0bz",
    # GitHub extras
    "math": "$x^2$ $$y$$",
    "emoji": ":smile: :x:",
    "mention": "@someone #123",
    "all punctuation": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
}

# Where each piece of user text is placed; each renders once with the hostile text, the others
# keeping their plain values.
RUNNING_TEXT = [
    "source",
    "mode",
    "goal state",
    "objective",
    "plan title",
    "step title",
    "blocked by",
    "owner",
    "actor",
    "client",
    "transition step",
    "transition from",
    "transition to",
    "rejection actor",
    "violation message",
    "problem rule",
    "problem message",
]
CODE_SPANS = [
    "session id",
    "parent session id",
    "chain head",
    "goal id",
    "proposal id",
    "step id",
    "step status",
    "rejection proposal id",
    "violation code",
    "violation step id",
]
FIELDS = RUNNING_TEXT + CODE_SPANS


def report(field: str, text: str) -> SessionReport:
    def t(name: str) -> str:
        return text if name == field else name.replace(" ", "-")

    goal = GoalView(goal_id=t("goal id"), objective=t("objective"), state=t("goal state"))
    plan = PlanView(
        session_id="s1",
        revision=1,
        policy="tasks",
        title=t("plan title"),
        goal_id=None,
        steps=[
            Step(
                id=t("step id"),
                title=t("step title"),
                status=t("step status"),
                blocked_by=(t("blocked by"),),
                owner=t("owner"),
            )
        ],
        pending_proposal=None,
        updated_at=AT,
    )
    revision = ReportRevision(
        revision=1,
        at=AT,
        actor=t("actor"),
        client=t("client"),
        proposal_id=t("proposal id"),
        plan=plan,
        transitions=[
            Transition.model_validate(
                {
                    "step_id": t("transition step"),
                    "from": t("transition from"),
                    "to": t("transition to"),
                }
            )
        ],
    )
    rejection = ReportRejection(
        proposal_id=t("rejection proposal id"),
        at=AT,
        actor=t("rejection actor"),
        violations=[
            Violation(
                code=t("violation code"),
                message=t("violation message"),
                step_id=t("violation step id"),
            )
        ],
    )
    session = SessionView(
        session_id=t("session id"),
        mode=t("mode"),
        goals=[goal],
        should_continue=False,
        source=t("source"),
        parent_session_id=t("parent session id"),
    )
    return SessionReport(
        session=session,
        goals=[goal],
        revisions=[revision],
        rejections=[rejection],
        chain_head=t("chain head"),
        verified=False,
        problems=[
            Problem(
                session_id="s1", position=3, rule=t("problem rule"), message=t("problem message")
            )
        ],
        exported_at=AT,
    )


class Rendered(HTMLParser):
    """The elements of rendered HTML (name, attributes) and its visible text."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        self.elements.append((f"/{tag}", []))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.elements.append(("!--", [("data", data)]))

    def handle_decl(self, decl: str) -> None:
        self.elements.append(("!", [("data", decl)]))

    def handle_pi(self, data: str) -> None:
        self.elements.append(("?", [("data", data)]))

    def unknown_decl(self, data: str) -> None:
        self.elements.append(("![", [("data", data)]))


def renderer(linkify: bool) -> Callable[[str], str]:
    parser = MarkdownIt("commonmark", {"linkify": linkify}).enable(["table", "strikethrough"])
    if linkify:
        parser.enable("linkify")
    # markdown-it drops javascript: links by itself; other renderers don't, so neither may we.
    parser.validateLink = lambda url: True  # type: ignore[method-assign]
    return parser.render


RENDERERS = {"commonmark+gfm": renderer(False), "commonmark+gfm+linkify": renderer(True)}
ELEMENTS = {"h1", "h2", "h3", "p", "ul", "li", "strong", "code"}  # the report's own, no others


def one_line(text: str) -> str:
    return " ".join(text.split())


def check(render: Callable[[str], str], field: str, text: str) -> None:
    page = render(markdown(report(field, text)))
    shown, plain = Rendered(page), Rendered(render(markdown(report(field, PLACEHOLDER))))
    assert "<a" not in page and "<img" not in page, page
    assert not re.search(r"(?i)<[a-z][^>]*\s(href|src)\s*=", page), page  # no javascript: link
    assert {name.lstrip("/") for name, _ in shown.elements} <= ELEMENTS, page
    assert all(not attrs for _, attrs in shown.elements), page  # no href, no src, no onerror
    assert shown.elements == plain.elements, page  # no element of the user's
    expected = "".join(plain.text).replace(PLACEHOLDER, one_line(text))
    assert "".join(shown.text) == expected, page  # the user's text, as it is


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("renderer", RENDERERS)
def test_user_text_renders_as_literal_text(renderer: str, text: str) -> None:
    for field in FIELDS:
        try:
            check(RENDERERS[renderer], field, text)
        except AssertionError as error:
            raise AssertionError(f"{field}: {error}") from None


@pytest.mark.parametrize("field", FIELDS)
def test_every_field_is_in_the_report(field: str) -> None:
    assert markdown(report(field, PLACEHOLDER)).count(PLACEHOLDER) >= 1


@pytest.mark.parametrize(
    "text", ["[click](javascript:alert(1))", "<img src=x onerror=alert(1)>", "<http://e.com>"]
)
def test_the_check_sees_markup_that_is_not_escaped(text: str) -> None:
    # The renderer is the judge: the same text unescaped would be a link, an image or HTML.
    page = RENDERERS["commonmark+gfm"](f"- {text}")
    assert "<a" in page or "<img" in page
