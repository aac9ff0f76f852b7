"""`alignment build CONFIG --out DIR` (or `--task T --data-dir D --out DIR`): the task's examples.

Writes `build/data.parquet`, one row per example: id, unit_id, split, system, query, cf_query,
template, sources, answer, options, category (see `alignment.tasks`).
"""

from __future__ import annotations

from pathlib import Path

from alignment.cache import file_hash
from alignment.context import Context
from alignment.errors import UserError
from alignment.store import RunDir, write_parquet
from alignment.tasks import TaskConfig


def data_files(cfg: TaskConfig, run: RunDir) -> dict[str, str | None]:
    """The runner's `files` hook: content hashes of the data files a local source reads, part of
    the build key, so editing the data rebuilds (the config alone would call it up to date)."""
    if cfg.source != "local" or not cfg.data_dir or not Path(cfg.data_dir).is_dir():
        return {}
    return {p.name: file_hash(p) for p in sorted(Path(cfg.data_dir).iterdir()) if p.is_file()}


def build(cfg: TaskConfig, ctx: Context) -> dict[str, int]:
    built = ctx.task.build(cfg)
    seen: set[str] = set()
    for r in built:
        if r["id"] in seen:
            raise UserError(f"task {cfg.name}: example id {r['id']!r} is built twice (duplicate rows in the data?)")
        seen.add(r["id"])
    # An example whose counterfactual prompt equals its original (a duplicated problem whose
    # "other" solution is its own) cannot show the feature's effect: drop it, counted.
    rows = [r for r in built if r["query"] != r["cf_query"]]
    if not rows:
        raise UserError(f"task {cfg.name}: no examples for splits {cfg.splits}"
                        + (f" ({len(built)} dropped: counterfactual equals original)" if built else ""))
    write_parquet(ctx.folder("build") / "data.parquet", rows)
    splits = {s: sum(r["split"] == s for r in rows) for s in cfg.splits}
    dropped = {f"dropped_{k}": v for k, v in getattr(built, "dropped", {}).items()}
    return {"examples": len(rows), **splits, "dropped_cf_equals_original": len(built) - len(rows), **dropped}
