"""`alignment score CONFIG --out DIR`: plain, augmented and per-strategy rewards for every response.

Reads `build/`, `generate/` and `attribute/`, writes `score/data.parquet` with `reward_plain`,
`reward_augmented` (the task's acknowledgment sentence appended; original responses only), the
receipt-worded `reward_receipt` when receipts are on, and one column per strategy
(`alignment.augment.strategies`). Each example is committed as its own shard, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

from functools import partial

import pandas as pd

from alignment.context import Context
from alignment.executor import map_shards
from alignment.organism.presets import with_paths
from alignment.receipts.records import disclaimer
from alignment.reward.base import RewardConfig, RewardModel, make_reward_model
from alignment.reward.scoring import final_rewards, receipt_suffixes, score_example
from alignment.store import write_parquet


def score(cfg: RewardConfig, ctx: Context, rm: RewardModel | None = None) -> dict[str, int]:
    examples = ctx.read("build").set_index("id", drop=False)
    responses, attrib = ctx.read("generate"), ctx.read("attribute")
    shards = ctx.shards("score", cfg, ("build", "generate", "attribute"))
    suffix = ctx.task.ack_suffix()
    words = partial(disclaimer, ctx.task.name, prompt=ctx.task.prompt)
    ids = sorted(responses["example_id"].unique())

    def compute(model: RewardModel, i: int) -> list[dict]:
        group = responses[responses["example_id"] == ids[i]]
        return score_example(model, examples.loc[ids[i]].to_dict(), group, suffix, receipt_suffixes(words, attrib, ids[i]))

    parts = map_shards(shards, len(ids), lambda: rm or make_reward_model(with_paths(cfg)), compute, "score", "example", ctx.quiet)
    scores = pd.concat(parts, ignore_index=True)
    df = final_rewards(scores, attrib)
    write_parquet(ctx.folder("score") / "data.parquet", df)
    ctx.models["reward"] = cfg.model
    return {"responses": len(df)}
