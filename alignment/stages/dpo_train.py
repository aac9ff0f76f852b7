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

SPEED = ("seconds", "train_seconds", "train_tokens", "train_tokens_per_second", "setup_seconds", "ref_computed", "ref_reused")


def speed(df: pd.DataFrame) -> dict[str, Any]:
    """Training tokens per second over every finished run, trained by this call or reused from an
    earlier one (a finished run keeps its record in `result.json`), how many reference
    log-probabilities were computed and reused, and the seconds the runs took when they trained:
    a resumed stage that skips finished runs still reports what the training cost."""
    done = df[df["train_seconds"].notna()] if len(df) and "train_seconds" in df else df.iloc[:0]
    if done.empty:
        return {}
    secs, tokens = float(done["train_seconds"].sum()), float(done["train_tokens"].sum())
    return {"train_tokens_per_second": round(tokens / secs, 1) if secs > 0 else None,
            "ref_logps_computed": int(done["ref_computed"].fillna(0).sum()),
            "ref_logps_reused": int(done["ref_reused"].fillna(0).sum()),
            "runs_trained_now": int((done["status"] == "trained").sum()),
            "training_seconds": round(float(done["seconds"].fillna(0).sum()), 1)}


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
                         "eval_loss": res.get("eval_loss"), "resumed_from": res.get("resumed_from"),
                         **{k: res.get(k) for k in SPEED}})
            ctx.log(f"[dpo-train] {name}: {res.get('status')} best step {res.get('best_step')} "
                    f"eval reward acc {res.get('eval_reward_accuracy')}")
    df = pd.DataFrame(rows)
    write_parquet(ctx.folder("dpo-train") / "data.parquet", df)
    ctx.extra |= speed(df)
    ctx.models["policy"] = str(cfg.model)
    return {"runs": len(df), "adapters": int(df["adapter"].notna().sum())}
