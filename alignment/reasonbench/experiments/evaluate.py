"""`alignment reasonbench evaluate CONFIG`: every reported number, with its interval, in one table.

Reads the saved predictions (`predict/data.parquet`), scores them (`outcomes.score`) and writes
`evaluate/metrics.csv`, one row per (table, regime, learner, target, group, metric) with the
point estimate, a crossed seed x unit hierarchical-bootstrap percentile interval
(`stats.hierarchical_bootstrap`; units are the benchmark's independent `unit_id`s), `n` (the
rate's denominator in observations: cases x seeds) and, for comparisons, the paired p-value and
its Holm adjustment. Tables:

- `locked`: the locked test's main cases: overall, per stratum, per minimum receipt size, changed,
  stable, ambiguous, multi-source (the cardinality experiment's test cases);
- `shift`: each distribution shift; `control`: accuracy on each control type;
- `cardinality`: the cardinality regime (trained on single-source changes) on multi-source cases;
- `consistency`: per control type (and stratum), the share of pairs obeying the relation and the
  implied lower bound on mean pairwise error, violations / (2 pairs);
- `selective`: per coverage target, realised accepted-change coverage, reason debt and
  correctly-accepted gold-change recall on the locked test (thresholds from calibration);
- `comparison`: cube - direct_receipt, paired by seed and case, on revised verdict and exact
  receipt (Holm over these two co-primary comparisons; per-stratum rows are unadjusted); with the
  augmented regime also augmented - standard consistency per control kind (exploratory).

Rates: `verdict_acc`, `receipt_acc` (exact family), `endpoint_acc` (old and new), `cell_acc`
(share of the 8 cells), `cube_exact`, `parse_fail`, `certified` (the claim holds when executed),
`cells_certified`, `executions` (per certificate), `drift` (of gold-stable cases), `inertia` and
`misattribution` (of gold changes), `misattribution_endpoints_ok` (wrong receipts among gold
changes whose endpoints are both right).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from alignment.analysis.stats import co_primary, hierarchical_bootstrap, paired_bootstrap
from alignment.reasonbench.experiments.experiment_config import ExperimentConfig
from alignment.reasonbench.experiments.outcomes import (
    MODEL,
    pairs,
    score,
    selective,
    with_confidence,
)

# metric -> (value column, denominator column or None for "every observation")
METRICS: dict[str, tuple[str, str | None]] = {
    "verdict_acc": ("verdict_ok", None), "receipt_acc": ("receipt_ok", None),
    "endpoint_acc": ("endpoints_ok", None), "cell_acc": ("cells_acc", None),
    "cube_exact": ("cube_exact", None), "parse_fail": ("parse_fail", None),
    "certified": ("certified", None), "cells_certified": ("cells_certified", None),
    "executions": ("executions", None), "drift": ("drift", "gold_stable"),
    "inertia": ("inertia", "gold_change"), "misattribution": ("misattribution", "gold_change"),
    "misattribution_endpoints_ok": ("eligible_wrong", "eligible"),
}  # fmt: skip
ACCURACY = ("verdict_acc", "receipt_acc", "endpoint_acc", "cell_acc", "cube_exact", "parse_fail", "certified")
CONTROLS = ("inverse", "permutation", "distractor")
HEAVY = ("context", "old_state", "new_state")  # for re-execution only; no outcome reads them


def interval(values: Any, dens: Any, units: Any, seeds: Any, boot: Any) -> dict[str, float] | None:
    """Estimate and interval of Σ values / Σ dens, or None when the denominator is empty."""
    v = np.asarray(values, dtype=float)
    d = np.ones_like(v) if dens is None else np.asarray(dens, dtype=float)
    keep = ~np.isnan(v) & ~np.isnan(d)
    v, d = v[keep], d[keep]
    if d.sum() == 0:
        return None
    u, s = np.asarray(units)[keep], np.asarray(seeds)[keep]
    r = hierarchical_bootstrap(v, list(u), list(s), list(d), boot.replicates, boot.confidence, boot.seed)
    return {"n": int(d.sum()), "estimate": r.estimate, "low": r.low, "high": r.high}


def _groups(rows: pd.DataFrame, table: str) -> Iterator[tuple[str, pd.Series]]:
    if table in ("locked", "cardinality"):
        yield "overall", pd.Series(True, index=rows.index)
        for s in sorted(rows["stratum"].unique()):
            yield f"stratum={s}", rows["stratum"] == s
        for k in sorted(rows["min_receipt_size"].unique()):
            yield f"min_receipt_size={int(k)}", rows["min_receipt_size"] == k
        change = rows["old_verdict"] != rows["new_verdict"]
        yield "changed", change
        yield "stable", ~change
        yield "ambiguous", rows["ambiguous"].astype(bool)
        if table == "locked":
            yield "multi_source", rows["cardinality_split"] == "test"
    elif table == "shift":
        for s in sorted(rows["split"].unique()):
            yield f"shift={s.removeprefix('shift_')}", rows["split"] == s
    elif table == "control":
        for k in CONTROLS:
            yield f"control={k}", rows["control_type"] == k


def _table_rows(scored: pd.DataFrame) -> dict[str, pd.DataFrame]:
    main = scored["control_type"].isna()
    usual = scored["regime"] != "cardinality"
    return {
        "locked": scored[usual & main & (scored["split"] == "locked")],
        "shift": scored[usual & main & scored["split"].str.startswith("shift_")],
        "control": scored[usual & ~main],
        "cardinality": scored[(scored["regime"] == "cardinality") & main],
    }


def _model_metrics(g: pd.DataFrame, table: str, boot: Any) -> list[dict[str, Any]]:
    names = list(METRICS) if table in ("locked", "cardinality") else list(ACCURACY)
    cols = {c for m in names for c in METRICS[m] if c is not None}
    arrays = {c: g[c].to_numpy(dtype=float, na_value=np.nan) for c in cols}
    units, seeds = g["unit_id"].to_numpy(dtype=object), g["seed"].to_numpy()
    out = []
    for group, mask in _groups(g, table):
        m = mask.to_numpy(dtype=bool)
        if not m.any():
            continue
        for metric in names:
            col, den = METRICS[metric]
            values = arrays[col][m]
            if np.isnan(values).all():
                continue  # the target does not predict this
            res = interval(values, None if den is None else arrays[den][m], units[m], seeds[m], boot)
            if res is not None:
                out.append({"table": table, "group": group, "metric": metric, **res})
    return out


def accuracy_metrics(scored: pd.DataFrame, boot: Any) -> list[dict[str, Any]]:
    rows = []
    for table, data in _table_rows(scored).items():
        for key, g in data.groupby(MODEL, sort=True):
            rows += [{**dict(zip(MODEL, key, strict=True)), **r} for r in _model_metrics(g, table, boot)]
    return rows


def consistency_metrics(pair_rows: pd.DataFrame, boot: Any) -> list[dict[str, Any]]:
    """Consistency and the error lower bound per control kind (and per kind and stratum)."""
    rows = []
    for key, g in pair_rows.groupby([*MODEL, "kind"], sort=True):
        model = dict(zip(MODEL, key[:3], strict=True))
        groups = [(key[3], g)] + [(f"{key[3]}/stratum={s}", h) for s, h in g.groupby("stratum")]
        for group, h in groups:
            for metric, col, den in (("consistency", "holds", None), ("error_lower_bound", "violated", 2.0)):
                dens = None if den is None else np.full(len(h), den)
                res = interval(h[col], dens, h["unit_id"], h["seed"], boot)
                if res is not None:
                    res["n"] = len(h)  # pairs, not the bound's doubled denominator
                    rows.append({**model, "table": "consistency", "group": group, "metric": metric, **res})
    return rows


def selective_metrics(sel: pd.DataFrame, boot: Any) -> list[dict[str, Any]]:
    rows = []
    if sel.empty:
        return rows
    sel = sel.assign(wrong=sel["accepted"] - sel["correct"])
    for key, g in sel.groupby([*MODEL, "coverage_target"], sort=True):
        model = {**dict(zip(MODEL, key[:3], strict=True)), "table": "selective", "group": f"coverage={key[3]:g}"}
        for metric, col, den in (("coverage", "accepted", "candidate"), ("reason_debt", "wrong", "accepted"),
                                 ("recall", "correct", "gold_change")):  # fmt: skip
            res = interval(g[col], g[den], g["unit_id"], g["seed"], boot)
            if res is not None:
                rows.append({**model, "metric": metric, **res})
        cal = g.groupby("seed")["calibration_coverage"].first()
        rows.append({**model, "metric": "calibration_coverage", "n": len(cal),
                     "estimate": float(cal.mean()), "low": math.nan, "high": math.nan})  # fmt: skip
    return rows


def comparison_metrics(scored: pd.DataFrame, boot: Any, a: str = "cube", b: str = "direct_receipt") -> list[dict[str, Any]]:
    """a - b on the locked main cases, paired by (seed, case); Holm over the co-primary pair."""
    rows = []
    locked = _table_rows(scored)["locked"]
    for (regime, learner), g in locked.groupby(["regime", "learner"], sort=True):
        left = g[g["target"] == a].set_index(["seed", "id"]).sort_index()
        right = g[g["target"] == b].set_index(["seed", "id"]).sort_index()
        if left.empty or right.empty or not left.index.equals(right.index):
            continue
        groups = [("overall", np.ones(len(left), dtype=bool))]
        groups += [(f"stratum={s}", (left["stratum"] == s).to_numpy()) for s in sorted(left["stratum"].unique())]
        for group, m in groups:
            outcomes = {f"{t}_acc": (left[f"{t}_ok"].to_numpy()[m], right[f"{t}_ok"].to_numpy()[m])
                        for t in ("verdict", "receipt")}  # fmt: skip
            seeds = left.index.get_level_values("seed").to_numpy()[m]
            res = co_primary(outcomes, list(left["unit_id"].to_numpy()[m]), list(seeds),
                             boot.replicates, boot.confidence, boot.seed)  # fmt: skip
            for metric, (r, p_holm) in res.items():
                rows.append({"table": "comparison", "regime": regime, "learner": learner,
                             "target": f"{a} - {b}", "group": group, "metric": metric, "n": int(m.sum()),
                             "estimate": r.estimate, "low": r.low, "high": r.high, "p": r.p_value,
                             "p_holm": p_holm if group == "overall" else math.nan})  # fmt: skip
    return rows


def augmentation_metrics(pair_rows: pd.DataFrame, boot: Any) -> list[dict[str, Any]]:
    """augmented - standard consistency per control kind, paired by (seed, control); exploratory
    (the paper's post-hoc section 7.6), so no multiplicity adjustment."""
    rows: list[dict[str, Any]] = []
    if pair_rows.empty or not {"standard", "augmented"} <= set(pair_rows["regime"]):
        return rows
    for (learner, target, kind), g in pair_rows.groupby(["learner", "target", "kind"], sort=True):
        a = g[g["regime"] == "augmented"].set_index(["seed", "id"]).sort_index()
        b = g[g["regime"] == "standard"].set_index(["seed", "id"]).sort_index()
        if a.empty or not a.index.equals(b.index):
            continue
        r = paired_bootstrap(a["holds"].to_numpy(), b["holds"].to_numpy(), list(a["unit_id"]),
                             list(a.index.get_level_values("seed")), replicates=boot.replicates,
                             confidence=boot.confidence, seed=boot.seed)  # fmt: skip
        rows.append({"table": "comparison", "regime": "augmented - standard", "learner": learner,
                     "target": target, "group": kind, "metric": "consistency", "n": len(a),
                     "estimate": r.estimate, "low": r.low, "high": r.high, "p": r.p_value,
                     "p_holm": math.nan})  # fmt: skip
    return rows


def evaluate(preds: pd.DataFrame, cfg: ExperimentConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(metrics table, scored predictions) from the saved predictions."""
    preds = preds.drop(columns=[c for c in HEAVY if c in preds.columns])
    scored = with_confidence(score(preds), cfg.selective.confidence)
    boot = cfg.bootstrap
    rows = accuracy_metrics(scored, boot)
    pair_rows = pairs(scored)
    rows += consistency_metrics(pair_rows, boot)
    rows += selective_metrics(selective(scored, cfg.selective.coverages), boot)
    rows += comparison_metrics(scored, boot)
    rows += augmentation_metrics(pair_rows, boot)
    cols = ["table", *MODEL, "group", "metric", "n", "estimate", "low", "high", "p", "p_holm"]
    return pd.DataFrame(rows).reindex(columns=cols), scored
