"""`alignment receipts CONFIG --out DIR`: judgment cubes and exact receipts over declared sources.

Only with `attribution.receipts: true`. Reads `build/` and `generate/` (whose `{}` and
`{protected}` samples are reused), generates the other hybrids, and writes `receipts/data.parquet`
(one row per example), `receipts/responses.parquet` (one row per original response, the
strategy-D cube) and `receipts/hybrids.parquet`; columns in `alignment.receipts.records`.
Generation is sharded by round under `receipts/shards/` and resumes like `generate`.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from alignment.augment.attribution import AttributionConfig
from alignment.config import config_hash, to_dict
from alignment.context import Context
from alignment.generation.base import Generator, select_splits
from alignment.receipts.records import example_row, response_row
from alignment.receipts.runner import run_cubes
from alignment.store import write_parquet


def receipts(
    cfg: AttributionConfig,
    ctx: Context,
    generator: Generator | Callable[[], Generator] | None = None,
    full: bool = False,
) -> dict[str, int]:
    """Cubes and receipts for every built example (`full`: all 2^k cells, not only those needed)."""
    gen_cfg = ctx.section("generation")
    examples, responses = select_splits(ctx.read("build"), gen_cfg.splits), ctx.read("generate")
    # Shards survive a change of attribution seed (draws only), not of what is generated.
    shard_key = config_hash({"generation": to_dict(gen_cfg), "build": ctx.input_id("build"), "full": full})
    shard_dir = ctx.shards("receipts", cfg, (), key=shard_key)
    result = run_cubes(examples, responses, gen_cfg, shard_dir, cfg.seed, generator, full, cfg.draw == "per_response")
    by_id = {str(r["id"]): r for r in examples.to_dict("records")}
    ex_rows = [example_row(by_id[e], c, result) for e, c in result.example_cubes.items()]
    resp_rows = [response_row(by_id[e], s, c, result.response_d[e, s]) for (e, s), c in result.response_cubes.items()]
    folder = ctx.folder("receipts")
    write_parquet(folder / "data.parquet", pd.DataFrame(ex_rows))
    write_parquet(folder / "responses.parquet", pd.DataFrame(resp_rows))
    write_parquet(folder / "hybrids.parquet", result.hybrids)
    ctx.models["policy"] = gen_cfg.model
    ctx.extra |= {"rounds": result.rounds, "full": full}
    return {
        "examples": len(ex_rows),
        "changed": sum(r["changed"] for r in ex_rows),
        "executions": sum(r["executions"] for r in ex_rows),
        "hybrids_generated": sum(len(r["generated"]) for r in ex_rows),
        "responses": len(resp_rows),
    }
