"""alignment: which declared feature of the input caused this answer, and does the explanation admit it?

The curated Python API (docs/python-api.md runs it). Names load on first use,
so `import alignment` stays cheap for the command line:

- runs: `load_config`, `RunConfig`, `run`, `run_stage`, `RunDir`, `Context`, `STAGE_NAMES`;
- registries and their factories: `TASKS` / `Task`, `GENERATORS` / `make_generator`,
  `REWARD_MODELS` / `make_reward_model`, `JUDGES` / `make_judge`;
- Method A: `STRATEGIES`, `attribute_responses`, `AttributionConfig`, `best_of_n`, `BonConfig`,
  `make_pairs`, `split_pairs`;
- Method B (receipts): `receipt_family`, `execute_cube`, `certify`, `Cube`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from alignment.version import __version__

_API: dict[str, str] = {
    "load_config": "alignment.run_config",
    "RunConfig": "alignment.run_config",
    "run_stage": "alignment.runner",
    "STAGE_NAMES": "alignment.runner",
    "RunDir": "alignment.store",
    "Context": "alignment.context",
    "TASKS": "alignment.tasks",
    "Task": "alignment.tasks",
    "GENERATORS": "alignment.generation",
    "make_generator": "alignment.generation",
    "REWARD_MODELS": "alignment.reward",
    "make_reward_model": "alignment.reward",
    "JUDGES": "alignment.judge",
    "make_judge": "alignment.judge",
    "STRATEGIES": "alignment.augment.strategies",
    "attribute_responses": "alignment.augment.attribution",
    "AttributionConfig": "alignment.augment.attribution",
    "best_of_n": "alignment.analysis.bon",
    "BonConfig": "alignment.analysis.bon",
    "make_pairs": "alignment.dpo.pairs",
    "split_pairs": "alignment.dpo.pairs",
    "receipt_family": "alignment.receipts",
    "execute_cube": "alignment.receipts",
    "certify": "alignment.receipts",
    "Cube": "alignment.receipts",
}
__all__ = ["__version__", "run", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'alignment' has no attribute {name!r}")


def run(config: Any, out: str | Path | None = None, stages: list[str] | None = None,
        overrides: list[str] | None = None, quiet: bool = True) -> Any:
    """Load (a path) or take (a `RunConfig`) a config, run its stages, return the `RunDir`.

    The same as `alignment run CONFIG [--out OUT] [--set ...]`; `stages` limits it to some.
    """
    from alignment.run_config import RunConfig, load_config
    from alignment.runner import prepare_run_dir, run_all

    cfg = config if isinstance(config, RunConfig) else load_config(config, overrides)
    run_dir = prepare_run_dir(cfg, out)
    run_all(cfg, run_dir, quiet, stages)
    return run_dir
