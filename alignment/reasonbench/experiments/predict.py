"""`alignment reasonbench predict CONFIG`: one model's saved predictions, parsed and certified.

One row per evaluated case: the model (`regime`, `learner`, `target`, `seed`), the case columns
every outcome needs (ids, unit, split, control, stratum, gold endpoints, receipt and cube, and the
states for re-execution), the raw completion (`raw`), the strict parse (`parse_ok`,
`parse_error`, `pred_old`, `pred_new`, `pred_receipt` as canonical keys, `pred_cells` as JSON),
the learner's confidence (NaN when it has none) and the certificate (`certified`,
`cells_certified`, `executions`; `alignment.reasonbench.experiments.certify`). Each model's part is written
to its own keyed folder first, so a rerun reuses finished models.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.reasonbench.experiments.certify import Executor, certificate
from alignment.reasonbench.experiments.experiment_config import ExperimentConfig
from alignment.reasonbench.experiments.learners import make_learner, timed_predict
from alignment.reasonbench.experiments.targets import parse, prompt_for
from alignment.store import read_parquet, write_json, write_parquet

KEEP = (
    "id", "unit_id", "stratum", "split", "control_of", "control_type", "min_receipt_size",
    "ambiguous", "cardinality_split", "old_verdict", "new_verdict", "receipt", "cube", "context",
    "old_state", "new_state",
)  # fmt: skip


def prediction_rows(
    m: tuple[str, str, str, int], rows: list[dict[str, Any]], texts: list[str],
    conf: list[float] | None, ex: Executor,
) -> list[dict[str, Any]]:  # fmt: skip
    regime, learner, target, seed = m
    out = []
    for i, (row, text) in enumerate(zip(rows, texts, strict=True)):
        p = parse(target, text)
        item = {"regime": regime, "learner": learner, "target": target, "seed": seed}
        item |= {k: row[k] for k in KEEP}
        item["receipt"] = list(row["receipt"])
        item |= {
            "raw": text, "parse_ok": p.ok, "parse_error": p.error, "pred_old": p.old,
            "pred_new": p.new, "pred_receipt": p.receipt,
            "pred_cells": None if p.cells is None else json.dumps(p.cells),
            "confidence": math.nan if conf is None else float(conf[i]),
        }  # fmt: skip
        item |= certificate(row, target, p, ex)
        out.append(item)
    return out


def predict_model(
    m: tuple[str, str, str, int], cfg: ExperimentConfig, rows: pd.DataFrame, train_dir: Path,
    folder: Path, ex: Executor | None,
) -> tuple[pd.DataFrame, dict[str, Any], Executor]:  # fmt: skip
    """The model's predictions on `rows` (reused from `folder` when already written there)."""
    ex = ex or Executor()
    part, stats_file = folder / "data.parquet", folder / "stats.json"
    if part.is_file() and stats_file.is_file():
        return read_parquet(part), json.loads(stats_file.read_text()), ex
    target = m[2]
    records = rows.to_dict("records")
    prompts = [prompt_for(target, r["input"]) for r in records]
    texts, conf, stats = timed_predict(make_learner(m[1], cfg), target, train_dir, prompts,
                                       [r["input"] for r in records])  # fmt: skip
    calls = ex.adjudicator_calls
    df = pd.DataFrame(prediction_rows(m, records, texts, conf, ex))
    stats["adjudicator_calls"] = ex.adjudicator_calls - calls
    write_parquet(part, df)
    write_json(stats_file, stats)
    return df, stats, ex
