"""`alignment dpo-pairs CONFIG --out DIR`: DPO preference pairs per reward variant.

Reads build, generate, score and ack; writes `dpo-pairs/<variant>/{train,valid}.parquet` in TRL's
conversational preference format, `dpo-pairs/<variant>/stats.json` (pairs kept and skipped, reward
margin, how often the chosen and the rejected response acknowledge the feature and are correct)
and `dpo-pairs/data.parquet` with every pair of every variant (`alignment.dpo.pairs`). Pairs come
only from `dpo.train_split` / `dpo.valid_split` examples, never from `dpo.eval_split`. A two-sided
variant (`rm_d_deny`, `rm_c_deny`) takes pairs from original and counterfactual prompts; its stats
count both (`pairs_orig`, `pairs_cf`).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from alignment.augment.strategies import check_two_sided
from alignment.context import Context
from alignment.dpo.config import DPOConfig
from alignment.dpo.pairs import make_pairs, pair_outcomes, split_pairs
from alignment.errors import UserError
from alignment.store import write_parquet, write_text


def pair_examples(cfg: DPOConfig, built: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Examples whose samples give train (and valid) pairs; the eval split is never among them."""
    held = {cfg.eval_split} | ({cfg.valid_split} if cfg.valid_split else set())
    train = built[built["split"] == cfg.train_split] if cfg.train_split else built[~built["split"].isin(held)]
    if train.empty:
        raise UserError(f"dpo.train_split: no built examples in split {cfg.train_split!r}; built splits: "
                        f"{sorted(built['split'].unique())}")
    out = {"train": train}
    if cfg.valid_split:
        out["valid"] = built[built["split"] == cfg.valid_split]
        if out["valid"].empty:
            raise UserError(f"dpo.valid_split: no built examples in split {cfg.valid_split!r}")
    return out


def dpo_pairs(cfg: DPOConfig, ctx: Context) -> dict[str, int]:
    built, responses, scores, ack = ctx.read("build"), ctx.read("generate"), ctx.read("score"), ctx.read("ack")
    check_two_sided(cfg.variants, scores, ctx.task.deny_suffix, "dpo.variants")
    groups = pair_examples(cfg, built)
    for part, ex in groups.items():
        if not responses["example_id"].isin(ex["id"]).any():
            raise UserError(f"dpo: the {part} split's examples have no sampled responses; list it in generation.splits")
    counts: dict[str, int] = {}
    all_stats: dict[str, Any] = {}
    frames = []
    for variant in cfg.variants:
        parts, stats = [], {}
        for part, ex in groups.items():
            pairs, st = make_pairs(scores, responses[responses["example_id"].isin(ex["id"])], ex, variant)
            if part == "train":
                pairs = split_pairs(pairs, 0.0 if cfg.valid_split else cfg.valid_fraction, cfg.pair_seed, cfg.max_pairs)
            else:
                pairs = pairs.assign(split="valid")
            parts.append(pairs)
            stats = {k: v + stats.get(k, 0) for k, v in st.items() if k != "mean_margin"}
        pairs = pd.concat(parts, ignore_index=True)
        stats |= pair_outcomes(pairs, responses, ack)
        out = ctx.folder("dpo-pairs") / variant
        for split in ("train", "valid"):
            part = pairs[pairs["split"] == split] if len(pairs) else pairs
            write_parquet(out / f"{split}.parquet", part)
            stats[split] = len(part)
            counts[f"{variant}_{split}"] = len(part)
        write_text(out / "stats.json", json.dumps(stats, indent=2) + "\n")
        all_stats[variant] = stats
        frames.append(pairs.assign(reward=variant))
        ctx.log(f"[dpo-pairs] {variant}: {stats}")
    write_parquet(ctx.folder("dpo-pairs") / "data.parquet", pd.concat(frames, ignore_index=True))
    ctx.extra["pair_stats"] = all_stats
    return counts
