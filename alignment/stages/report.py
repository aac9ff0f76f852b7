"""`alignment report CONFIG --out DIR`: `report.md` and `report.html` at the top of the run dir.

Reads the artifacts of generate, attribute, bon (and the DPO and audit stages when present) and
formats the numbers they computed (`alignment.report`, `alignment.dpo.tables`); `report.html`
(`alignment.viewer`) shows the same sections plus a per-example browser.
"""

from __future__ import annotations

from typing import Any

from alignment.audit.report import audit_section
from alignment.context import Context
from alignment.dpo.tables import dpo_report_section
from alignment.report import write_report
from alignment.viewer import write_html_report


def audit_rows(ctx: Context) -> list[str]:
    """The audit section when the audit stage finished in this run dir (`alignment.audit.report`)."""
    return audit_section(ctx.run.stage("audit")) if ctx.run.manifest("audit") else []


def report(cfg: Any, ctx: Context) -> dict[str, int]:
    """`cfg` is unused: the report has no settings of its own (its key is the task and inputs)."""
    path = write_report(ctx, dpo_report_section(ctx.run) + audit_rows(ctx))
    html = write_html_report(ctx.run, path.read_text(), ctx.task)
    ctx.log(f"report: {path}, {html}")
    return {"lines": len(path.read_text().splitlines()), "html_bytes": html.stat().st_size}
