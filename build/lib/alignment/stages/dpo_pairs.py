"""`alignment dpo-pairs CONFIG --out DIR`: DPO preference pairs per reward variant.

Reads build, generate and score; writes `dpo-pairs/<variant>/{train,valid}.parquet` in TRL's
conversational preference format, `dpo-pairs/<variant>/stats.json` (skip counts) and
`dpo-pairs/data.parquet` with every pair of every variant (`alignment.dpo.pairs`).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from alignment.context import Context
from alignment.dpo.config import DPOConfig
from alignment.dpo.pairs import make_pairs, split_pairs
from alignment.errors import UserError
from alignment.store import write_parquet, write_text


def dpo_pairs(cfg: DPOConfig, ctx: Context) -> dict[str, int]:
    examples, responses, scores = ctx.read("build"), ctx.read("generate"), ctx.read("score")
    if cfg.train_split is not None:
        examples = examples[examples["split"] == cfg.train_split]
        if examples.empty:
            raise UserError(f"dpo.train_split: no built examples in split {cfg.train_split!r}")
    responses = responses[responses["example_id"].isin(examples["id"])]
    counts: dict[str, int] = {}
    all_stats: dict[str, Any] = {}
    frames = []
    for variant in cfg.variants:
        pairs, stats = make_pairs(scores, responses, examples, variant)
        pairs = split_pairs(pairs, cfg.valid_fraction, cfg.pair_seed, cfg.max_pairs)
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
