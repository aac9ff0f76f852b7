"""`report.html`: one self-contained page per run dir (written by the `report` stage).

The page holds report.md's sections (converted, figures embedded as base64), the judge's
counterfactual control, D/C firing rates and a per-example browser over every response. It is
rendered from `templates/report.html.j2` with Jinja2; the browser's data is one JSON blob that
inline script pages through (50 cards at a time), so the file opens from file:// with no network.

URL hash parameters set the browser's state on load, e.g. `report.html#variant=cf&ack=1&sort=-rm`
(variant: orig/cf; fired: d/c/any/none; ack, correct, valid: 1/0; sort: a reward column, `-` for
descending; q: search text; prompts=1: prompts unfolded; page: 1-based).
"""

from alignment.viewer.page import render_page, write_html_report

__all__ = ["render_page", "write_html_report"]
