"""`alignment build CONFIG --out DIR` (or `--task T --data-dir D --out DIR`): the task's examples.

Writes `build/data.parquet`, one row per example: id, unit_id, split, system, query, cf_query,
template, sources, answer, options, category (see `alignment.tasks`).
"""

from __future__ import annotations

from alignment.context import Context
from alignment.errors import UserError
from alignment.store import write_parquet
from alignment.tasks import TaskConfig


def build(cfg: TaskConfig, ctx: Context) -> dict[str, int]:
    rows = ctx.task.build(cfg)
    if not rows:
        raise UserError(f"task {cfg.name}: no examples for splits {cfg.splits}")
    write_parquet(ctx.folder("build") / "data.parquet", rows)
    splits = {s: sum(r["split"] == s for r in rows) for s in cfg.splits}
    return {"examples": len(rows), **splits}
