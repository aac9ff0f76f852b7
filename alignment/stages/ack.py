"""`alignment ack CONFIG --out DIR`: the acknowledgment verdict of every response.

Reads `generate/`, writes `ack/data.parquet` (example_id, variant, sample, ack, ack_raw,
ack_parsed) with the configured judge (`judge.*`), on original and counterfactual responses
alike: the counterfactual rate is the control the original rate is read against.

The responses are judged in shards (`ack/shards/part-XXXXX.parquet`) of consecutive rows of
`generate/`, on whichever executor the stage runs on (`alignment.executor`): one judge per worker,
so an LLM judge spreads over GPUs, and an interrupted stage resumes at its missing shards.
"""

from __future__ import annotations

import pandas as pd

from alignment.context import Context
from alignment.errors import UserError
from alignment.executor import map_shards
from alignment.judge import Judge, JudgeConfig, make_judge
from alignment.judge.base import VERDICT_COLUMNS, verdict_record
from alignment.store import write_parquet

# About this many responses per shard: enough shards to spread a large run over many judge
# replicas, few enough that the keyword judge's local run is not dominated by shard files.
SHARD_RESPONSES = 256


def judge_task(ctx: Context) -> str:
    """The judge definition that labels this task's responses (`Task.judge_as`)."""
    if ctx.task.judge_as is None:
        raise UserError(f"task {ctx.task.name}: no judge definition (Task.judge_as) to label its responses")
    return ctx.task.judge_as


def shard_size(batch_size: int) -> int:
    """Responses per shard: a whole number of judge batches (`judge.batch_size`), about
    `SHARD_RESPONSES`. The transformers backend cuts one call's responses into consecutive batches,
    so shards of whole batches judge exactly the batches one call over all responses would: the same
    padding, hence the same greedy verdicts, as before `ack` had shards.

    >>> shard_size(8), shard_size(100), shard_size(1000)
    (256, 200, 1000)
    """
    return batch_size * max(1, SHARD_RESPONSES // batch_size)


def shard_count(responses: int, batch_size: int) -> int:
    """Shards of `responses` (the last one possibly shorter).

    >>> shard_count(257, 8), shard_count(0, 8)
    (2, 0)
    """
    return -(-responses // shard_size(batch_size))


def ack(cfg: JudgeConfig, ctx: Context) -> dict[str, int]:
    resp = ctx.read("generate")
    task, texts = judge_task(ctx), resp["text"].tolist()
    size = shard_size(cfg.batch_size)

    def compute(judge: Judge, i: int) -> list[dict]:
        # Only the verdicts: the closure ships `texts` alone to the workers, and the rows take
        # their keys from `generate/` below.
        verdicts = judge.judge(task, texts[i * size : (i + 1) * size])
        return [verdict_record(v) for v in verdicts]

    shards = ctx.shards("ack", cfg, ("generate",))
    parts = map_shards(shards, shard_count(len(texts), cfg.batch_size), lambda: make_judge(cfg), compute, "ack", "shard", ctx.quiet, VERDICT_COLUMNS)
    verdicts = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({c: [] for c in VERDICT_COLUMNS})
    if len(verdicts) != len(resp):
        raise UserError(f"{shards}: {len(verdicts)} verdicts for {len(resp)} responses; delete the folder and rerun ack")
    # Built from generate's own key columns and plain values, exactly as the one-call version did.
    df = resp[["example_id", "variant", "sample"]].assign(**{c: verdicts[c].tolist() for c in VERDICT_COLUMNS})
    write_parquet(ctx.folder("ack") / "data.parquet", df)
    ctx.extra["judge"] = cfg.name
    counts = {"responses": len(df), "ack": int(df["ack"].sum()), "unparsed": int((~df["ack_parsed"]).sum())}
    # The built-in control: the same rate on counterfactual prompts, where the feature is absent.
    counts |= {f"ack_{v}": int(df.loc[df["variant"] == v, "ack"].sum()) for v in ("orig", "cf")}
    counts |= {f"responses_{v}": int((df["variant"] == v).sum()) for v in ("orig", "cf")}
    return counts
