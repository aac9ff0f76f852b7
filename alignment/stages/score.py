"""`alignment score CONFIG --out DIR`: plain, augmented and per-strategy rewards for every response.

Reads `build/`, `generate/` and `attribute/`, writes `score/data.parquet` with `reward_plain`,
`reward_augmented` (the task's acknowledgment sentence appended; original responses only),
`reward_denied` (the task's denial sentence appended; every response, NaN when the task has no
`prompts/<task>_deny.txt`, and then the two-sided variants are left out), the receipt-worded `reward_receipt` when receipts are on, and one column per strategy
(`alignment.augment.strategies`). Each example is committed as its own shard, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

from functools import partial

import pandas as pd

from alignment.context import Context
from alignment.errors import UserError
from alignment.executor import map_shards
from alignment.organism.presets import with_paths
from alignment.receipts.records import disclaimer
from alignment.reward.base import RewardConfig, RewardModel, make_reward_model
from alignment.reward.scoring import final_rewards, receipt_suffixes, score_example
from alignment.store import write_parquet
from alignment.tasks import Task


def missing_deny(task: Task) -> str | None:
    """Why `task` has no denial sentence (the missing file, in words), or None when it has one."""
    try:
        task.deny_suffix()
    except UserError as e:
        return str(e)
    return None


def appended_sentences(task: Task) -> dict[str, str | None]:
    """The suffixes the stage appends: the acknowledgment and the denial (None: the task has none).
    Part of the stage key (`alignment.runner.stage_key`)."""
    return {"ack": task.ack_suffix(), "deny": None if missing_deny(task) else task.deny_suffix()}


def score(cfg: RewardConfig, ctx: Context, rm: RewardModel | None = None) -> dict[str, int]:
    examples = ctx.read("build").set_index("id", drop=False)
    responses, attrib = ctx.read("generate"), ctx.read("attribute")
    shards = ctx.shards("score", cfg, ("build", "generate", "attribute"))
    suffix = ctx.task.ack_suffix()
    deny = appended_sentences(ctx.task)["deny"]
    if deny is None:  # a custom task without the denial file still gets every other reward
        ctx.log(f"[score] the task has no denial sentence ({missing_deny(ctx.task)}): reward_denied left empty, "
                "two-sided variants left out")
    words = partial(disclaimer, ctx.task.name, prompt=ctx.task.prompt)
    ids = sorted(responses["example_id"].unique())

    def compute(model: RewardModel, i: int) -> list[dict]:
        group = responses[responses["example_id"] == ids[i]]
        return score_example(model, examples.loc[ids[i]].to_dict(), group, suffix, receipt_suffixes(words, attrib, ids[i]), deny)

    parts = map_shards(shards, len(ids), lambda: rm or make_reward_model(with_paths(cfg)), compute, "score", "example", ctx.quiet)
    scores = pd.concat(parts, ignore_index=True)
    df = final_rewards(scores, attrib)
    write_parquet(ctx.folder("score") / "data.parquet", df)
    ctx.models["reward"] = cfg.model
    return {"responses": len(df)}
