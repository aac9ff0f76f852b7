"""`alignment report CONFIG --out DIR`: `report.md` at the top of the run dir.

Reads the artifacts of generate, attribute, bon (and the DPO and audit stages when present) and formats
the numbers they computed (`alignment.report`, `alignment.dpo.tables`).
"""

from __future__ import annotations

from typing import Any

from alignment.audit.report import audit_section
from alignment.context import Context
from alignment.dpo.tables import dpo_report_section
from alignment.report import write_report


def audit_rows(ctx: Context) -> list[str]:
    """The audit section when the audit stage finished in this run dir (`alignment.audit.report`)."""
    return audit_section(ctx.run.stage("audit")) if ctx.run.manifest("audit") else []


def report(cfg: Any, ctx: Context) -> dict[str, int]:
    """`cfg` is unused: the report has no settings of its own (its key is the task and inputs)."""
    path = write_report(ctx, dpo_report_section(ctx.run) + audit_rows(ctx))
    ctx.log(f"report: {path}")
    return {"lines": len(path.read_text().splitlines())}
