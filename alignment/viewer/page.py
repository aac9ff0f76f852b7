"""Render `report.html` from the Jinja2 template and the run dir's artifacts."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

import alignment.viewer.markdown as markdown
from alignment.store import RunDir, write_text
from alignment.viewer.records import browser_data, response_table
from alignment.viewer.summary import firing, judge_control, label_view


def environment() -> jinja2.Environment:
    """Templates ship as package data; autoescape is on, so text from responses is never markup."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("alignment.viewer", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["pct"] = lambda x: "n/a" if x is None or x != x else f"{100 * x:.1f}%"
    env.filters["pts"] = lambda x: "n/a" if x is None or x != x else f"{100 * x:+.1f}"
    env.globals["asset"] = lambda name: Markup(resources.files("alignment.viewer").joinpath("templates", name).read_text())
    return env


def json_blob(data: Any) -> Markup:
    """JSON safe inside <script type="application/json">: every `<` is written as the JSON escape
    \\u003c, so no `</script>` or `<!--` in a response can end the element early.

    >>> str(json_blob({"t": "</script>"}))
    '{"t":"\\\\u003c/script>"}'
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return Markup(text.replace("<", "\\u003c"))


def render_page(run: RunDir, report_md: str, title: str, task: Any, labels: Any = None) -> str:
    """`labels`: an `alignment.judge_error.run_labels.LabelCheck` (None: not checked, nothing shown)."""
    resp = response_table(run)
    data = browser_data(run, labels.labels() if labels is not None else {})
    data["task"] = {"name": task.name, "metric": task.metric_label, "feature": task.feature}
    return environment().get_template("report.html.j2").render(
        title=title,
        task=task,
        summary=Markup(markdown.to_html(report_md, run.path)),
        control=judge_control(resp),
        firing=firing(resp),
        labels=label_view(labels) if labels is not None else None,
        n_responses=len(resp),
        n_examples=len(data["examples"]),
        data=json_blob(data),
    )


def write_html_report(run: RunDir, report_md: str, task: Any, labels: Any = None) -> Path:
    """Write `report.html` next to `report.md` (atomically) and return its path."""
    path = run.path / "report.html"
    write_text(path, render_page(run, report_md, f"Report: {run.path.name}", task, labels))
    return path
