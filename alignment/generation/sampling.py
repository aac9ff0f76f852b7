"""Sharded sampling: N samples per example for the original and the counterfactual prompt.

Used by `alignment generate CONFIG --out runs/<name>` (`alignment.stages.generate`), the receipts
runner and `alignment dpo-eval`. One row per (example_id, variant, sample): raw `text`, parsed
`pred`, `valid`, `correct`. Work is cut into batches of whole prompts in a fixed order; each
finished batch is committed as its own shard, so an interrupted run resumes at the first missing
shard and never duplicates a row.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.executor import map_shards, shard_path
from alignment.generation.base import (
    GenerationConfig,
    Generator,
    chat_for,
    make_generator,
    sample_seed,
)
from alignment.tasks import parse_answer

Parse = Callable[[str, list[str]], int | None]

VARIANTS = ("orig", "cf")  # cf: the counterfactual prompt, the protected source removed (`cf_query`)
KEY_COLUMNS = ["example_id", "variant", "sample"]


def plan_jobs(examples: pd.DataFrame, cfg: GenerationConfig) -> list[dict[str, Any]]:
    """One job per (example, variant): the prompt, its samples and their seeds.

    The greedy response (sample -1, with `greedy: true`) is the last row of its prompt's job, so
    the decoder prefills each prompt once for its samples and its greedy answer together.
    """
    jobs = []
    for ex in examples.to_dict("records"):
        for variant in VARIANTS:
            prompt = ex["query"] if variant == "orig" else ex["cf_query"]
            samples = list(range(cfg.n_samples)) + ([-1] if cfg.greedy else [])
            jobs.append(
                {
                    "example": ex,
                    "variant": variant,
                    "chat": chat_for(ex["system"], prompt),
                    "samples": samples,
                    "seeds": [sample_seed(cfg.seed, ex["id"], variant, s) for s in samples],
                }
            )
    return jobs


def draw_seeds(job: dict[str, Any]) -> list[int | None]:
    """The seeds a generator gets for a job: None for the greedy row (sample -1), which draws nothing."""
    return [None if s < 0 else seed for s, seed in zip(job["samples"], job["seeds"], strict=True)]


def batches(jobs: list[dict[str, Any]], batch_size: int) -> list[list[dict[str, Any]]]:
    """Group whole prompts so each batch holds about `batch_size` sequences (≥ one prompt)."""
    out: list[list[dict[str, Any]]] = []
    cur: list[dict[str, Any]] = []
    size = 0
    for job in jobs:
        n = len(job["samples"])
        if cur and size + n > batch_size:
            out.append(cur)
            cur, size = [], 0
        cur.append(job)
        size += n
    if cur:
        out.append(cur)
    return out


def response_rows(batch: list[dict[str, Any]], texts: list[list[str]], parse: Parse = parse_answer) -> list[dict[str, Any]]:
    rows = []
    for job, outs in zip(batch, texts, strict=True):
        ex = job["example"]
        for s, seed, text in zip(job["samples"], job["seeds"], outs, strict=True):
            pred = parse(text, list(ex["options"]))
            rows.append(
                {
                    "example_id": ex["id"],
                    "variant": job["variant"],
                    "sample": s,
                    "greedy": s < 0,
                    "seed": seed,
                    "text": text,
                    "pred": pred,
                    "valid": pred is not None,
                    "correct": pred is not None and pred == int(ex["answer"]),
                }
            )
    return rows


def planned_keys(batch: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(j["example"]["id"], j["variant"], s) for j in batch for s in j["samples"]}


def shard_keys(part: pd.DataFrame) -> set[tuple[Any, ...]]:
    return set(zip(*(part[c].tolist() for c in KEY_COLUMNS), strict=True)) if len(part) else set()


def run_generation(
    examples: pd.DataFrame,
    cfg: GenerationConfig,
    shard_dir: Path,
    quiet: bool = False,
    generator: Generator | Callable[[], Generator] | None = None,
    desc: str = "generate",
    parse: Parse = parse_answer,
) -> pd.DataFrame:
    """Generate every missing shard under `shard_dir`, then return all rows in a fixed order."""
    work = batches(plan_jobs(examples, cfg), cfg.batch_size)

    def load() -> Generator:
        return generator() if callable(generator) else generator or make_generator(cfg)

    def compute(gen: Generator, i: int) -> list[dict[str, Any]]:
        batch = work[i]
        texts = gen.generate([j["chat"] for j in batch], [draw_seeds(j) for j in batch])
        return response_rows(batch, texts, parse)

    parts = map_shards(shard_dir, len(work), load, compute, desc, "batch", quiet)
    stale = [i for i, part in enumerate(parts) if shard_keys(part) != planned_keys(work[i])]
    if stale:  # shards another batch plan wrote (e.g. an older planner's) hold other rows: redo them
        for i in stale:
            shard_path(shard_dir, i).unlink()
        parts = map_shards(shard_dir, len(work), load, compute, desc, "batch", quiet)
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=KEY_COLUMNS)
    return df.drop_duplicates(KEY_COLUMNS, keep="first").reset_index(drop=True)
