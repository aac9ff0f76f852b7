"""`alignment dpo-eval CONFIG --out DIR`: the base policy and every trained adapter, re-evaluated.

Reads build, dpo-pairs and dpo-train. Each policy answers the original and counterfactual prompts
of the held-out `dpo.eval_split` (no example there gave a pair) greedily and with
`dpo.eval_n_samples` samples, all policies in shared batches (`dpo.eval_shared_batches`,
`alignment.dpo.shared_eval`); the judge (`judge.*`) labels every response. Writes
`dpo-eval/responses.parquet`, per-seed scores `data.parquet`, `effects.csv` (every comparison,
pooled over seeds and per seed, `alignment.dpo.effects`; with discrimination and grounded
acknowledgment, `alignment.dpo.truth`, whose `caused` column responses.parquet carries),
`summary.json` (DPO(RM_D) − DPO(RM), and `rates`: each policy's acknowledgment, discrimination and accuracy),
`ack_effects.csv`, `dpo.csv` / `dpo.md` / `dpo.tex` and `dpo.png` (`alignment.dpo.evaluate`).
"""

from __future__ import annotations

import json
import time

import pandas as pd

from alignment.augment.attribution import AttributionConfig
from alignment.context import Context
from alignment.dpo.config import DPOConfig
from alignment.dpo.effects import effects_table, summary
from alignment.dpo.evaluate import (
    ack_effects,
    aggregate,
    gen_config,
    generate_policy,
    per_seed_scores,
    policies,
)
from alignment.dpo.shared_eval import generate_policies
from alignment.dpo.tables import plot, write_tables
from alignment.dpo.truth import mark_caused, rates, truth_markdown
from alignment.errors import UserError
from alignment.judge import make_judge
from alignment.judge.base import verdict_columns
from alignment.stages.ack import judge_task
from alignment.store import write_parquet, write_text


def held_out(cfg: DPOConfig, ctx: Context) -> pd.DataFrame:
    """The evaluated examples: `eval_split`, capped; none of them may have given a pair."""
    built = ctx.read("build")
    examples = built[built["split"] == cfg.eval_split].sort_values("id")
    if examples.empty:
        raise UserError(f"dpo.eval_split: no built examples in split {cfg.eval_split!r}; built splits: "
                        f"{sorted(built['split'].unique())}")
    if cfg.eval_max_examples is not None:
        examples = examples.iloc[: cfg.eval_max_examples]
    paired = set(ctx.read("dpo-pairs")["example_id"]) if len(ctx.read("dpo-pairs")) else set()
    if shared := sorted(paired & set(examples["id"])):
        raise UserError(f"dpo.eval_split: {len(shared)} evaluated examples also gave training pairs (e.g. {shared[0]}); "
                        "evaluate on a split that gives no pairs")
    return examples


def dpo_eval(cfg: DPOConfig, ctx: Context) -> dict[str, int]:
    started = time.time()
    examples = held_out(cfg, ctx)
    gcfg = gen_config(cfg, ctx.section("generation"))
    pols = policies(ctx.run)
    if cfg.eval_shared_batches:
        resp = generate_policies(ctx.run, pols, examples, gcfg, ctx.quiet, ctx.task.parse)
    else:
        resp = pd.concat([generate_policy(ctx.run, p, examples, gcfg, ctx.quiet, ctx.task.parse) for p in pols], ignore_index=True)
    gen_seconds = time.time() - started
    judge_cfg = ctx.section("judge")
    resp = resp.assign(**verdict_columns(make_judge(judge_cfg).judge(judge_task(ctx), resp["text"].tolist())))
    attribution = ctx.section("attribution") if "attribution" in ctx.sections else AttributionConfig()
    resp["caused"] = mark_caused(resp, attribution.seed, attribution.invalid)
    folder = ctx.folder("dpo-eval")
    write_parquet(folder / "responses.parquet", resp)
    scores = per_seed_scores(resp, examples.set_index("id")["answer"])
    write_parquet(folder / "data.parquet", scores)
    effects = effects_table(resp)
    write_text(folder / "effects.csv", effects.to_csv(index=False))
    write_text(folder / "ack_effects.csv", ack_effects(resp, effects=effects).to_csv(index=False))
    agg = aggregate(scores)
    policy_rates = rates(resp)
    write_tables(agg, folder, ctx.task.metric_label, truth_markdown(policy_rates))
    plot(agg, ctx.task.metric_label, folder / "dpo.png")
    before = ["build", "generate", "attribute", "score", "ack", "dpo-pairs", "dpo-train"]
    seconds = sum(ctx.run.seconds(s) for s in before) + time.time() - started
    write_text(folder / "summary.json", json.dumps(summary(effects, seconds, rates=policy_rates), indent=2) + "\n")
    ctx.models["policy"] = str(cfg.model)
    ctx.extra |= {"judge": judge_cfg.name, "metric": ctx.task.metric_label, "eval_n_samples": cfg.eval_n_samples,
                  "seeds": list(cfg.seeds), "eval_split": cfg.eval_split,
                  "responses_per_second": round(len(resp) / gen_seconds, 2) if gen_seconds > 0 else None}
    return {"policies": int(resp["policy"].nunique()), "responses": len(resp), "examples": len(examples)}
