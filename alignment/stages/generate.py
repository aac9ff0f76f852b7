"""`alignment generate CONFIG --out DIR`: N samples per example, original and counterfactual.

Reads `build/`, writes `generate/data.parquet` (example_id, variant, sample, greedy, seed, text,
pred, valid, correct). Finished batches are committed as shards under `generate/shards/`, so an
interrupted run resumes without regenerating or duplicating rows (`alignment.generation.sampling`).
"""

from __future__ import annotations

from alignment.context import Context
from alignment.generation.base import GenerationConfig, Generator, make_generator, select_splits
from alignment.generation.models import resolve_dtype
from alignment.generation.sampling import run_generation
from alignment.organism.presets import with_paths
from alignment.store import write_parquet


def generate(cfg: GenerationConfig, ctx: Context) -> dict[str, int]:
    examples = select_splits(ctx.read("build"), cfg.splits)
    shard_dir = ctx.shards("generate", cfg, ("build",))
    made: list[Generator] = []

    def make() -> Generator:  # loaded only when a shard is missing; kept to report its runtime
        made.append(make_generator(with_paths(cfg)))
        return made[0]

    df = run_generation(examples, cfg, shard_dir, ctx.quiet, generator=make, parse=ctx.task.parse)
    write_parquet(ctx.folder("generate") / "data.parquet", df)
    ctx.models["policy"] = cfg.model
    # What actually ran: the dtype `auto` chose and why, and the decoding path.
    dtype, why = resolve_dtype(cfg.dtype, cfg.device) if cfg.backend == "transformers" else (cfg.dtype, "vllm")
    ctx.extra["runtime"] = getattr(made[0], "runtime", None) if made else {"dtype": dtype, "dtype_reason": why}
    return {
        "responses": len(df),
        "valid": int(df["valid"].sum()) if len(df) else 0,
        "examples": int(df["example_id"].nunique()) if len(df) else 0,
    }
