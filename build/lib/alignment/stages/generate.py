"""`alignment generate CONFIG --out DIR`: N samples per example, original and counterfactual.

Reads `build/`, writes `generate/data.parquet` (example_id, variant, sample, greedy, seed, text,
pred, valid, correct). Finished batches are committed as shards under `generate/shards/`, so an
interrupted run resumes without regenerating or duplicating rows (`alignment.generation.sampling`).
"""

from __future__ import annotations

from alignment.context import Context
from alignment.generation.base import GenerationConfig
from alignment.generation.sampling import run_generation
from alignment.store import write_parquet


def generate(cfg: GenerationConfig, ctx: Context) -> dict[str, int]:
    examples = ctx.read("build")
    shard_dir = ctx.shards("generate", cfg, ("build",))
    df = run_generation(examples, cfg, shard_dir, ctx.quiet, parse=ctx.task.parse)
    write_parquet(ctx.folder("generate") / "data.parquet", df)
    ctx.models["policy"] = cfg.model
    return {
        "responses": len(df),
        "valid": int(df["valid"].sum()) if len(df) else 0,
        "examples": int(df["example_id"].nunique()) if len(df) else 0,
    }
