"""`alignment dpo-train CONFIG --out DIR`: one LoRA DPO run (TRL) per reward variant and seed.

Reads `dpo-pairs/<variant>/{train,valid}.parquet`; writes `dpo-train/<variant>-seed<k>/`
(best checkpoint's `adapter/`, `result.json`) and `dpo-train/data.parquet`, one row per run.
An interrupted run resumes from its newest checkpoint (`alignment.dpo.train`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from alignment.context import Context
from alignment.dpo.config import DPOConfig
from alignment.dpo.pairs import read_split
from alignment.dpo.train import run_name, train_one
from alignment.store import write_parquet


def dpo_train(cfg: DPOConfig, ctx: Context) -> dict[str, int]:
    rows = []
    for variant in cfg.variants:
        train, valid = read_split(ctx.run, variant, "train"), read_split(ctx.run, variant, "valid")
        for seed in cfg.seeds:
            name = run_name(variant, seed)
            out = ctx.folder("dpo-train") / name
            res: dict[str, Any] = {"status": "no_pairs"} if train.empty else train_one(cfg, train, valid, out, seed, ctx.quiet)
            adapter = out / "adapter"
            rows.append({"run": name, "reward": variant, "seed": seed, "status": res["status"],
                         "adapter": str(adapter.relative_to(ctx.run.path)) if (adapter / "adapter_config.json").is_file() else None,
                         "best_step": res.get("best_step"), "eval_reward_accuracy": res.get("eval_reward_accuracy"),
                         "eval_loss": res.get("eval_loss"), "resumed_from": res.get("resumed_from")})
            ctx.log(f"[dpo-train] {name}: {res.get('status')} best step {res.get('best_step')} "
                    f"eval reward acc {res.get('eval_reward_accuracy')}")
    df = pd.DataFrame(rows)
    write_parquet(ctx.folder("dpo-train") / "data.parquet", df)
    ctx.models["policy"] = str(cfg.model)
    return {"runs": len(df), "adapters": int(df["adapter"].notna().sum())}
