"""`alignment report CONFIG --out DIR`: `report.md` at the top of the run dir.

Reads the artifacts of generate, attribute, bon (and the DPO stages when present) and formats
the numbers they computed (`alignment.report`, `alignment.dpo.tables`).
"""

from __future__ import annotations

from typing import Any

from alignment.context import Context
from alignment.dpo.tables import dpo_report_section
from alignment.report import write_report


def report(cfg: Any, ctx: Context) -> dict[str, int]:
    """`cfg` is unused: the report has no settings of its own (its key is the task and inputs)."""
    path = write_report(ctx, dpo_report_section(ctx.run))
    ctx.log(f"report: {path}")
    return {"lines": len(path.read_text().splitlines())}
