"""`alignment status RUN_DIR [CONFIG]`: what a run dir holds, stage by stage (the `dvc status` of a run).

One line per stage of the pipeline (or of a ReasonBench experiment):

- done: finished under the key the config gives, every file intact;
- stale: finished under another key (the config, an input or a labels file changed since), so
  `alignment run` recomputes it;
- damaged: a file it wrote is missing, cut short or changed (named);
- missing: never finished;
- running: another alignment process holds the run dir's lock (named by pid) and has not
  finished this stage yet;
- off: turned off by the config.

The config is the run dir's own `config.yaml` (the last command's), or CONFIG (with `--set`)
when given. Keys are computed as the next `alignment run` would: a stage after a stale one is
stale too. Exit status 0 only when every stage that is on is done; 1 otherwise (like
`reasonbench audit`, 1 is what the check found); 2 for a folder that is no run dir.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alignment.errors import UserError
from alignment.store import LOCK_FILE, RunDir, lock_holder_of


def lock_holder(folder: Path) -> str | None:
    """The pid written in the run dir's lock file while another process holds it, else None."""
    path = folder / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return lock_holder_of(fd)
    finally:
        os.close(fd)  # releases the lock if this call took it


class ExpectedKeys(RunDir):
    """The run dir as the next run sees it: an input's key is the one its stage will have
    after that run (its expected key), not the one its manifest holds now."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.expected: dict[str, str] = {}

    def key(self, name: str) -> str | None:
        return self.expected[name] if name in self.expected else super().key(name)


def stage_state(run: RunDir, name: str, key: str) -> tuple[str, str]:
    """(state, detail) of one stage that is on, lock aside."""
    manifest = run.manifest(name)
    if manifest is None:
        return "missing", ""
    why = run.damage(name)
    if why is not None:
        return "damaged", why
    if manifest["key"] != key:
        return "stale", "its config or an input changed since it ran"
    return "done", ""


def pipeline_stages(run: ExpectedKeys, cfg_path: Path, overrides: list[str]) -> list[tuple[str, str | None]]:
    """(stage, expected key, None when off) for every stage of the run config."""
    from alignment.run_config import load_config
    from alignment.runner import STAGE_NAMES, get_stage, stage_key

    cfg = load_config(cfg_path, overrides)
    out: list[tuple[str, str | None]] = []
    for name in STAGE_NAMES:
        stage = get_stage(name)
        key = stage_key(stage, cfg, run) if stage.enabled(cfg) else None
        if key is not None:
            run.expected[name] = key
        out.append((name, key))
    return out


def experiment_stages(run: ExpectedKeys, cfg_path: Path, overrides: list[str]) -> list[tuple[str, str | None]]:
    from alignment.reasonbench.experiments.experiment import STAGES, stage_key
    from alignment.reasonbench.experiments.experiment_config import load_experiment

    cfg = load_experiment(cfg_path, overrides).reasonbench
    out: list[tuple[str, str | None]] = []
    for name in STAGES:
        run.expected[name] = stage_key(name, cfg, run)
        out.append((name, run.expected[name]))
    return out


def status(path: Path, config: Path | None = None, overrides: list[str] | None = None) -> list[dict[str, Any]]:
    """One record per stage: stage, state, detail."""
    from alignment.reasonbench.experiments.experiment_config import is_experiment

    path = Path(path)
    if not path.is_dir():
        raise UserError(f"{path}: no such run dir")
    cfg_path = Path(config) if config is not None else path / "config.yaml"
    if not cfg_path.is_file():
        raise UserError(f"{cfg_path}: not found; {path} is no run dir (give its CONFIG as the second argument)")
    run = ExpectedKeys(path)
    stages: Callable[..., list[tuple[str, str | None]]] = experiment_stages if is_experiment(cfg_path) else pipeline_stages
    holder = lock_holder(path)
    records = []
    for name, key in stages(run, cfg_path, overrides or []):
        state, detail = ("off", "turned off by the config") if key is None else stage_state(run, name, key)
        if holder is not None and state in ("missing", "stale") and not any(r["state"] == "running" for r in records):
            state, detail = "running", f"pid {holder} holds the run dir"
        records.append({"stage": name, "state": state, "detail": detail})
    return records


def cmd_status(args: argparse.Namespace) -> int:
    records = status(Path(args.run_dir), args.config, args.overrides)
    if args.json:
        print(json.dumps({"run_dir": args.run_dir, "ok": all_done(records), "stages": records}, indent=2))
    else:
        width = max(len(r["stage"]) for r in records)
        for r in records:
            print(f"{r['stage']:<{width}}  {r['state']}" + (f": {r['detail']}" if r["detail"] else ""))
    return 0 if all_done(records) else 1


def all_done(records: list[dict[str, Any]]) -> bool:
    return all(r["state"] in ("done", "off") for r in records)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="each stage of a run dir: done, stale, damaged, missing or running")
    p.add_argument("run_dir", help="the run dir (runs/<name>/, or a run's --out)")
    p.add_argument("config", nargs="?", default=None,
                   help="compare with this config (default: the run dir's config.yaml, the last command's)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field of that config, as `alignment run` does")
    p.add_argument("--json", action="store_true", help="one JSON object: run_dir, ok, stages [{stage, state, detail}]")
    p.set_defaults(func=cmd_status)
