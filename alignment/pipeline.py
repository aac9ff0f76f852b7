"""The run: a typed `RunConfig`, its stages in order, and `run_all` (`alignment run CONFIG`).

Each stage is a plain function of its config section and the run dir. A stage's key hashes its
config section(s) with the keys of the stages it reads, so editing one section reruns that stage
and everything downstream, and nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from alignment import attribution
from alignment import bon as bon_mod
from alignment import report as report_mod
from alignment.attribution import AttributionConfig
from alignment.bon import BonConfig
from alignment.config import apply_overrides, check, config_hash, doc, from_dict, read_yaml, to_dict
from alignment.dpo import DPOConfig, dpo_eval, dpo_pairs, dpo_train
from alignment.errors import UserError
from alignment.generation import GenerationConfig
from alignment.generation.stage import generate as generate_stage
from alignment.judge import JudgeConfig, make_judge
from alignment.receipts.stage import receipts as receipts_stage
from alignment.reward import RewardConfig
from alignment.reward.stage import score as score_stage
from alignment.store import RunDir, write_parquet, write_text
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

    def __post_init__(self) -> None:
        check(bool(self.name) and "/" not in self.name, "name", "must be a non-empty name without '/'")
        if self.dpo.model is None:  # DPO trains the policy that generated the pairs
            self.dpo.model = self.generation.model


def load_config(path: str | Path | None, overrides: list[str] | None = None) -> RunConfig:
    """Defaults < YAML file < `--set` overrides; the run name defaults to the file's stem."""
    data: dict[str, Any] = read_yaml(path) if path else {}
    if path and "name" not in data:
        data["name"] = Path(path).stem
    data = apply_overrides(data, overrides or [])
    return from_dict(RunConfig, data)


# ------------------------------------------------------------------------------------- stages


def build(cfg: RunConfig, run: RunDir, key: str, quiet: bool = False) -> dict[str, Any]:
    started = time.time()
    rows = TASKS.get(cfg.task.name).build(cfg.task)
    if not rows:
        raise UserError(f"task {cfg.task.name}: no examples for splits {cfg.task.splits}")
    write_parquet(run.stage("build") / "data.parquet", rows)
    splits = {s: sum(r["split"] == s for r in rows) for s in cfg.task.splits}
    return run.finish("build", key, started, {"examples": len(rows), **splits})


def generate(cfg: RunConfig, run: RunDir, key: str, quiet: bool = False) -> dict[str, Any]:
    return generate_stage(cfg.generation, run, key, quiet)


def receipts(cfg: RunConfig, run: RunDir, key: str, quiet: bool = False) -> dict[str, Any]:
    return receipts_stage(cfg.generation, cfg.attribution.seed, run, key, quiet)


def attribute(cfg: RunConfig, run: RunDir, key: str, quiet: bool = False) -> dict[str, Any]:
    return attribution.attribute(cfg.attribution, run, key, quiet)


def score(cfg: RunConfig, run: RunDir, key: str, quiet: bool = False) -> dict[str, Any]:
    return score_stage(cfg.reward, cfg.task.name, run, key, quiet)


def ack(cfg: RunConfig, run: RunDir, key: str, quiet: bool = False) -> dict[str, Any]:
    """Acknowledgment label for every response (original and counterfactual)."""
    started = time.time()
    resp = run.read("generate")
    verdicts = make_judge(cfg.judge).judge(cfg.task.name, resp["text"].tolist())
    df = resp[["example_id", "variant", "sample"]].assign(
        ack=[v.ack for v in verdicts], ack_raw=[v.raw for v in verdicts], ack_parsed=[v.parsed for v in verdicts]
    )
    write_parquet(run.stage("ack") / "data.parquet", df)
    counts = {"responses": len(df), "ack": int(df["ack"].sum()), "unparsed": int((~df["ack_parsed"]).sum())}
    # The built-in control: the same rate on counterfactual prompts, where the feature is absent.
    counts |= {f"ack_{v}": int(df.loc[df["variant"] == v, "ack"].sum()) for v in ("orig", "cf")}
    counts |= {f"responses_{v}": int((df["variant"] == v).sum()) for v in ("orig", "cf")}
    return run.finish("ack", key, started, counts, extra={"judge": cfg.judge.name})


def bon(cfg: RunConfig, run: RunDir, key: str, quiet: bool = False) -> dict[str, Any]:
    metric = TASKS.get(cfg.task.name).metric
    return bon_mod.bon(cfg.bon, report_mod.METRIC_LABEL[metric], run, key, quiet)


def report(cfg: RunConfig, run: RunDir, key: str, quiet: bool = False) -> dict[str, Any]:
    return report_mod.report(cfg.task.name, TASKS.get(cfg.task.name).metric, run, key, quiet)


@dataclass(frozen=True)
class Stage:
    name: str
    fn: Callable[[RunConfig, RunDir, str, bool], dict[str, Any]]
    sections: tuple[str, ...]  # config sections the stage depends on
    inputs: tuple[str, ...]  # stages whose artifacts it reads
    enabled: Callable[[RunConfig], bool] = lambda cfg: True


STAGES: list[Stage] = [
    Stage("build", build, ("task",), ()),
    Stage("generate", generate, ("generation",), ("build",)),
    Stage("receipts", receipts, ("generation", "attribution"), ("build", "generate"), lambda c: c.attribution.receipts),
    Stage("attribute", attribute, ("attribution",), ("generate",)),
    Stage("score", score, ("reward", "task"), ("build", "generate", "attribute")),
    Stage("ack", ack, ("judge", "task"), ("generate",)),
    Stage("bon", bon, ("bon", "task"), ("generate", "score", "ack")),
    Stage("dpo-pairs", dpo_pairs, ("dpo",), ("build", "generate", "score")),
    Stage("dpo-train", dpo_train, ("dpo",), ("dpo-pairs",)),
    Stage("dpo-eval", dpo_eval, ("dpo", "judge", "task"), ("build", "dpo-train")),
    Stage("report", report, ("task",), ("attribute", "bon", "dpo-eval")),
]


def stage_inputs(stage: Stage, cfg: RunConfig) -> list[str]:
    """Declared inputs, plus `receipts` for attribute when receipts are on."""
    extra = ["receipts"] if stage.name == "attribute" and cfg.attribution.receipts else []
    return [*stage.inputs, *extra]


def stage_key(stage: Stage, cfg: RunConfig, run: RunDir) -> str:
    parts: dict[str, Any] = {s: to_dict(getattr(cfg, s)) for s in stage.sections}
    parts["inputs"] = {name: run.key(name) for name in stage_inputs(stage, cfg)}
    organisms = sorted(organism_names(parts))
    if organisms:
        # A preset name says nothing about what was trained: key on the organism's content hash
        # so a changed recipe reruns the stages that used the old organism.
        from alignment.organism import organism_id

        parts["organisms"] = {name: organism_id(name) for name in organisms}
    if "judge" in stage.sections:
        # The keyword rules are code, not config: a rule fix must relabel cached responses.
        from alignment.judge.keyword import rules_id

        parts["judge_rules"] = rules_id()
    return config_hash({"stage": stage.name, **parts})


def organism_names(value: Any) -> set[str]:
    """Model-organism preset names anywhere in a (nested) config dict.

    >>> sorted(organism_names({"generation": {"model": "organism-policy"}, "x": ["organism-rm", 3]}))
    ['organism-policy', 'organism-rm']
    """
    if isinstance(value, str):
        return {value} if value.startswith("organism-") else set()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return set().union(*(organism_names(v) for v in value)) if value else set()
    return set()


def get_stage(name: str) -> Stage:
    for s in STAGES:
        if s.name == name:
            return s
    raise UserError(f"unknown stage {name!r}")


def prepare_run_dir(cfg: RunConfig, out: str | Path | None) -> RunDir:
    run = RunDir(out or Path("runs") / cfg.name)
    run.path.mkdir(parents=True, exist_ok=True)
    write_text(run.path / "config.yaml", yaml.safe_dump(to_dict(cfg), sort_keys=False))
    return run


def run_stage(name: str, cfg: RunConfig, run: RunDir, quiet: bool = False, log: Callable[[str], None] = print) -> bool:
    """Run one stage unless its key is unchanged; returns True when it ran."""
    stage = get_stage(name)
    if not stage.enabled(cfg):
        if not quiet:
            log(f"[{stage.name}] off in this config, skipped")
        return False
    for dep in stage_inputs(stage, cfg):
        run.require(dep)
    key = stage_key(stage, cfg, run)
    if run.is_done(stage.name, key):
        if not quiet:
            log(f"[{stage.name}] up to date, skipped")
        return False
    manifest = stage.fn(cfg, run, key, quiet)
    if not quiet:
        log(f"[{stage.name}] done in {manifest['seconds']:.1f}s: {manifest['rows']}")
    return True


def run_all(cfg: RunConfig, run: RunDir, quiet: bool = False, stages: list[str] | None = None) -> None:
    for stage in STAGES:
        if stages is None or stage.name in stages:
            run_stage(stage.name, cfg, run, quiet)
