"""`alignment dpo-eval CONFIG --out DIR`: the base policy and every trained adapter, re-evaluated.

Reads build and dpo-train. Each policy answers the original and counterfactual prompts of
`dpo.eval_split` greedily and by majority of `dpo.eval_n_samples`; the judge (`judge.*`) labels
every response. Writes `dpo-eval/responses.parquet`, per-seed scores `data.parquet`,
`ack_effects.csv`, `dpo.csv` / `dpo.md` / `dpo.tex` and `dpo.png` (`alignment.dpo.evaluate`).
"""

from __future__ import annotations

import pandas as pd

from alignment.context import Context
from alignment.dpo.config import DPOConfig
from alignment.dpo.evaluate import (
    ack_effects,
    aggregate,
    gen_config,
    generate_policy,
    per_seed_scores,
    policies,
)
from alignment.dpo.tables import plot, write_tables
from alignment.errors import UserError
from alignment.judge import make_judge
from alignment.stages.ack import judge_task
from alignment.store import write_parquet, write_text


def dpo_eval(cfg: DPOConfig, ctx: Context) -> dict[str, int]:
    built = ctx.read("build")
    examples = built[built["split"] == cfg.eval_split].sort_values("id")
    if examples.empty:
        raise UserError(f"dpo.eval_split: no built examples in split {cfg.eval_split!r}; built splits: "
                        f"{sorted(built['split'].unique())}")
    if cfg.eval_max_examples is not None:
        examples = examples.iloc[: cfg.eval_max_examples]
    gcfg = gen_config(cfg, ctx.section("generation"))
    resp = pd.concat([generate_policy(ctx.run, p, examples, gcfg, ctx.quiet, ctx.task.parse) for p in policies(ctx.run)], ignore_index=True)
    judge_cfg = ctx.section("judge")
    resp["ack"] = [v.ack for v in make_judge(judge_cfg).judge(judge_task(ctx), resp["text"].tolist())]
    folder = ctx.folder("dpo-eval")
    write_parquet(folder / "responses.parquet", resp)
    scores = per_seed_scores(resp, examples.set_index("id")["answer"])
    write_parquet(folder / "data.parquet", scores)
    write_text(folder / "ack_effects.csv", ack_effects(resp).to_csv(index=False))
    agg = aggregate(scores)
    write_tables(agg, folder, ctx.task.metric_label)
    plot(agg, ctx.task.metric_label, folder / "dpo.png")
    ctx.models["policy"] = str(cfg.model)
    ctx.extra |= {"judge": judge_cfg.name, "metric": ctx.task.metric_label,
                  "eval_n_samples": cfg.eval_n_samples, "seeds": list(cfg.seeds)}
    return {"policies": int(resp["policy"].nunique()), "responses": len(resp), "examples": len(examples)}
