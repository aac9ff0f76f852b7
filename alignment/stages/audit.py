"""`alignment audit CONFIG --out DIR`: the policy, reward model and judge under paired consistency,
and strategies D and C accounted against the executed example-level cube.

Only with `audit.enabled: true`. Reads `build/`, `generate/`, `attribute/` and `ack/` (and
`receipts/` with `attribution.receipts: true`); transformed prompts are sampled with the run's
policy under `audit/shards/` (resumable, same per-sample seeds as `generate`). Writes under
`audit/`: `consistency.csv` (also `data.parquet`: one row per evaluator, transformation and
relation), `violations.csv` (every violating pair, side by side), `policy.csv`, `reward.csv`,
`reward_scores.parquet`, `judge.csv`, `accounting.csv` and `debt.csv`. See `alignment.audit`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pandas as pd

from alignment.audit.accounting import (
    account,
    cube_cases,
    feature_golds,
    full_golds,
    strategy_cases,
)
from alignment.audit.config import AuditConfig
from alignment.audit.judge import counterfactual_control, judge_audit
from alignment.audit.policy import policy_pairs, transformed_frames
from alignment.audit.reward import reward_audit
from alignment.audit.summary import VIOLATION_COLUMNS
from alignment.cache import keyed_dir
from alignment.config import config_hash, to_dict
from alignment.context import Context
from alignment.generation.base import Generator, make_generator, select_splits
from alignment.generation.sampling import run_generation
from alignment.judge.base import Judge
from alignment.organism.presets import with_paths
from alignment.receipts.runner import source_names
from alignment.reward.base import RewardModel
from alignment.stages.ack import judge_task
from alignment.store import write_parquet, write_text
from alignment.tasks.base import protected_source


@contextmanager
def _timed(seconds: dict[str, float], name: str) -> Iterator[None]:
    start = time.time()
    yield
    seconds[name] = round(time.time() - start, 3)


def _csv(ctx: Context, name: str, rows: list[dict[str, Any]] | pd.DataFrame) -> None:
    write_text(ctx.folder("audit") / name, pd.DataFrame(rows).to_csv(index=False))


class Once:
    """`make()` on the first call, the same object after (one policy load for every transformation
    in this process). Unlike `functools.cache` of a lambda it travels to Ray actors and SLURM
    tasks, which build their own (pickled without the loaded model)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make, self.value = make, None

    def __call__(self) -> Any:
        if self.value is None:
            self.value = self.make()
        return self.value

    def __getstate__(self) -> dict[str, Any]:
        return {"make": self.make, "value": None}


def _policy(cfg: AuditConfig, ctx: Context, chosen: pd.DataFrame, pool: pd.DataFrame, base: pd.DataFrame,
            generator: Generator | Callable[[], Generator] | None, n: int) -> tuple[list[dict], list[dict]]:
    gen_cfg = replace(ctx.section("generation"), greedy=False, n_samples=n)
    load = Once(lambda: generator() if callable(generator) else generator or make_generator(with_paths(gen_cfg)))
    protected = {str(r["id"]): protected_source(r) for r in chosen.to_dict("records")}
    rows, summary, bad, generated = [], [], [], []
    for name, (df, maps, skipped) in transformed_frames(chosen, cfg.prompt_level(), pool.to_dict("records"), cfg.seed).items():
        control = pd.DataFrame(columns=["example_id", "variant", "sample", "pred", "text"])
        if len(df):
            # Shards resume only for the same policy settings and the same transformed prompts.
            key = config_hash({"generation": to_dict(gen_cfg), "prompts": df[["id", "query", "cf_query"]].values.tolist()})
            shards = keyed_dir(ctx.folder("audit") / "shards" / name, key)
            control = run_generation(df, gen_cfg, shards, ctx.quiet, load, desc=f"audit {name}", parse=ctx.task.parse)
            generated.append(control.assign(transformation=name))
        r, s, b = policy_pairs(name, base, control, maps, protected, skipped)
        rows, summary, bad = rows + r, summary + s, bad + b
    _csv(ctx, "policy.csv", rows)
    if generated:  # the transformed prompts' responses, answers in the transformed option order
        write_parquet(ctx.folder("audit") / "responses.parquet", pd.concat(generated, ignore_index=True))
    ctx.models["policy"] = gen_cfg.model
    return summary, bad


def _accounting(cfg: AuditConfig, ctx: Context, examples: pd.DataFrame, responses: pd.DataFrame, attrib: pd.DataFrame) -> None:
    rows = examples.to_dict("records")
    protected = {str(r["id"]): protected_source(r) for r in rows}
    failures, debts = account("feature cube", strategy_cases(feature_golds(examples, responses), attrib, protected, True), cfg.thresholds)
    if ctx.section("attribution").receipts:
        full = full_golds(ctx.read("receipts"))
        order = {str(r["id"]): source_names(r) for r in rows}
        cube = cube_cases(full, ctx.read("receipts", "responses.parquet"), order)
        f, d = account("full cube", strategy_cases(full, attrib, protected, False), cfg.thresholds, cube)
        failures, debts = failures + f, debts + d
    _csv(ctx, "accounting.csv", failures)
    _csv(ctx, "debt.csv", debts)


def audit(
    cfg: AuditConfig,
    ctx: Context,
    generator: Generator | Callable[[], Generator] | None = None,
    rm: RewardModel | None = None,
    judge: Judge | None = None,
) -> dict[str, int]:
    """Audit every configured evaluator on the first `max_examples` examples; account D and C on all."""
    examples, responses, attrib = ctx.read("build"), ctx.read("generate"), ctx.read("attribute")
    examples = select_splits(examples, ctx.section("generation").splits)
    chosen = examples.head(cfg.max_examples) if cfg.max_examples else examples
    # The first n samples (and any greedy row, sample -1): the transformed prompts get n new ones.
    n = cfg.samples(ctx.section("generation").n_samples)
    base = responses[responses["example_id"].isin(chosen["id"]) & (responses["sample"] < n)]
    sampled = base[(base["variant"] == "orig") & (base["sample"] >= 0)]
    by_id = {str(r["id"]): r for r in chosen.to_dict("records")}
    ack, parse, names = ctx.task.ack_sentence(), ctx.task.parse, cfg.response_level()
    summary, bad, seconds = [], [], {}
    if "policy" in cfg.evaluators and cfg.prompt_level():
        with _timed(seconds, "policy"):
            s, b = _policy(cfg, ctx, chosen, examples, base, generator, n)
        summary, bad = summary + s, bad + b
    if "reward" in cfg.evaluators and names:
        with _timed(seconds, "reward"):
            from alignment.reward.base import make_reward_model

            model = rm or (lambda: make_reward_model(with_paths(ctx.section("reward"))))
            scores, prompts, s, b = reward_audit(model, by_id, sampled, names, ack, parse)
            write_parquet(ctx.folder("audit") / "reward_scores.parquet", scores)
            _csv(ctx, "reward.csv", prompts)
        summary, bad = summary + s, bad + b
        ctx.models["reward"] = ctx.section("reward").model
    if "judge" in cfg.evaluators:
        with _timed(seconds, "judge"):
            from alignment.judge import make_judge

            verdicts, s, b = judge_audit(judge or (lambda: make_judge(ctx.section("judge"))), judge_task(ctx), by_id, sampled, names, ack, parse)
            control, cb = counterfactual_control(ctx.read("ack"), responses)
            _csv(ctx, "judge.csv", verdicts)
        summary, bad = summary + s + [control], bad + b + cb
        ctx.models["judge"] = ctx.section("judge").name
    with _timed(seconds, "accounting"):
        _accounting(cfg, ctx, examples, responses, attrib)
    write_parquet(ctx.folder("audit") / "data.parquet", pd.DataFrame(summary))
    _csv(ctx, "consistency.csv", summary)
    violations = pd.DataFrame(bad, columns=VIOLATION_COLUMNS)
    _csv(ctx, "violations.csv", violations)
    worst = violations.sort_values("severity", ascending=False, kind="stable").groupby("evaluator", sort=False).head(cfg.worst)
    _csv(ctx, "worst.csv", worst)
    write_parquet(ctx.folder("audit") / "violations.parquet", violations)
    ctx.extra["audit_seconds"] = seconds  # cost per evaluator, in the manifest
    return {"examples": len(chosen), "pairs": int(sum(r["pairs"] for r in summary)), "violations": len(bad)}
