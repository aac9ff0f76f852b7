"""`RunConfig`: one whole run's typed config (`alignment config show` lists every field).

`alignment run CONFIG` resolves defaults < YAML < `--set`, validates on construction and saves
the resolved config as `runs/<name>/config.yaml`. Each stage reads only the sections the stage
table in `alignment.runner` declares for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alignment.analysis.bon import BonConfig
from alignment.analysis.report import ReportConfig
from alignment.audit.config import AuditConfig
from alignment.augment.attribution import AttributionConfig
from alignment.config import apply_overrides, check, doc, from_dict, read_yaml
from alignment.dpo.config import DPOConfig
from alignment.executor import ExecutorConfig
from alignment.generation.base import GenerationConfig
from alignment.judge.base import JudgeConfig
from alignment.reward.base import RewardConfig
from alignment.tasks import TASKS, TaskConfig


@dataclass
class RunConfig:
    """A whole run: one task, one policy, and the settings of every stage."""

    name: str = doc("Run name; the default run dir is runs/<name>/.", "run")
    task: TaskConfig = doc("What to build (see task.*).", factory=TaskConfig)
    generation: GenerationConfig = doc("How the policy samples responses (see generation.*).", factory=GenerationConfig)
    attribution: AttributionConfig = doc("How answer changes are attributed (see attribution.*).", factory=AttributionConfig)
    reward: RewardConfig = doc("The reward model (see reward.*).", factory=RewardConfig)
    judge: JudgeConfig = doc("The acknowledgment judge (see judge.*).", factory=JudgeConfig)
    bon: BonConfig = doc("Best-of-N settings (see bon.*).", factory=BonConfig)
    dpo: DPOConfig = doc("DPO on reward-ranked pairs (see dpo.*).", factory=DPOConfig)
    audit: AuditConfig = doc("Evaluator audits: paired consistency, D/C against the cube (see audit.*).", factory=AuditConfig)
    report: ReportConfig = doc("What the report reads besides the stages' artifacts (see report.*).", factory=ReportConfig)
    executor: ExecutorConfig = doc("Where sharded stages run: local, ray or slurm (see executor.*); in no stage key.",
                                   factory=ExecutorConfig)

    def __post_init__(self) -> None:
        check_run_name(self.name)
        for section in ("generation", "reward", "judge", "dpo"):
            model = getattr(self, section).model
            check(model is None or bool(model.strip()), f"{section}.model", "must not be empty")
        try:
            TASKS.get(self.task.name)
        except Exception as e:  # the registry's one-line "did you mean" message, under its field
            raise type(e)(f"task.name: {e}") from None
        if self.dpo.model is None:  # DPO trains the policy that generated the pairs
            self.dpo.model = self.generation.model


def check_run_name(name: str) -> None:
    """A run name is one folder name under runs/: no path separators, not '.' or '..'.

    >>> check_run_name("tiny-run_1")
    >>> check_run_name("..")
    Traceback (most recent call last):
    alignment.errors.UserError: name: must be one folder name under runs/ (no path separators, not . or ..), got '..'
    """
    bad = (not name.strip() or name in (".", "..") or any(c in name for c in "/\\\0")
           or name != name.strip() or len(name) > 200)
    check(not bad, "name", f"must be one folder name under runs/ (no path separators, not . or ..), got {name[:80]!r}")


def load_config(path: str | Path | None, overrides: list[str] | None = None) -> RunConfig:
    """Defaults < YAML file < `--set` overrides; the run name defaults to the file's stem."""
    data: dict[str, Any] = read_yaml(path) if path else {}
    if path and "name" not in data:
        data["name"] = Path(path).stem
    data = apply_overrides(data, overrides or [])
    return from_dict(RunConfig, data)
