"""`alignment report CONFIG --out DIR`: `report.md` and `report.html` at the top of the run dir.

Reads the artifacts of generate, attribute, bon (and the DPO and audit stages when present) and
formats the numbers they computed (`alignment.analysis.report`, `alignment.dpo.tables`); `report.html`
(`alignment.viewer`) shows the same sections plus a per-example browser. Human labels of the
run's responses (`report.labels`, default RUN/judge_sample/sample_labelled.jsonl; see
`alignment.judge_error.run_labels`) add the judge card against them and every disagreement; the
labels file is part of the stage key, so labels that appear or change rebuild the report.
"""

from __future__ import annotations

import importlib
from typing import Any

from alignment.analysis.report import ReportConfig, labels_section, write_report
from alignment.audit.report import audit_section
from alignment.context import Context
from alignment.dpo.tables import dpo_report_section
from alignment.judge_error.dpo_estimates import dpo_corrected_lines
from alignment.judge_error.dpo_labels import fingerprint as dpo_fingerprint
from alignment.judge_error.run_estimates import corrected_section
from alignment.judge_error.run_labels import check_labels, fingerprint
from alignment.store import RunDir
from alignment.viewer import write_html_report


def audit_rows(ctx: Context) -> list[str]:
    """The audit section when the audit stage finished in this run dir (`alignment.audit.report`)."""
    return audit_section(ctx.run.stage("audit")) if ctx.run.manifest("audit") else []


def label_files(cfg: ReportConfig | None, run: RunDir) -> dict[str, str | None]:
    """The runner's `files` hook: the labels files' content hashes (the run's own and
    dpo-eval's, `alignment.judge_error.dpo_labels`), part of the stage key."""
    return fingerprint(run.path, (cfg or ReportConfig()).labels) | dpo_fingerprint(run.path)


def report(cfg: ReportConfig | None, ctx: Context) -> dict[str, int]:
    """`cfg` None (called from Python) means the defaults."""
    labels = check_labels(ctx.run, (cfg or ReportConfig()).labels)
    judge = (ctx.run.manifest("ack") or {}).get("judge")
    corrected = corrected_section(ctx.run, labels, ctx.task.judge_as)  # figures corrected for the judge's error
    own = task_section(ctx.task.report_section, ctx.run)
    path = write_report(ctx, own + dpo_report_section(ctx.run, dpo_corrected_lines(ctx.run)) + audit_rows(ctx) + corrected + labels_section(labels, judge))
    html = write_html_report(ctx.run, path.read_text(), ctx.task, labels)
    ctx.log(f"report: {path}, {html}")
    if labels.path is not None:
        ctx.extra["labels"] = {"file": str(labels.path), "matched": len(labels.rows), **labels.skipped}
    return {"lines": len(path.read_text().splitlines()), "html_bytes": html.stat().st_size,
            "labelled": len(labels.rows), "disagreements": len(labels.card["disagreements"]) if labels.card else 0}


def task_section(spec: str | None, run: Any) -> list[str]:
    """The task's own report lines, from its `report_section` ('module:function'), or none."""
    if not spec:
        return []
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)(run)
