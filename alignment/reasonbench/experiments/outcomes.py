"""Per-prediction outcomes of the ReasonBench experiments, as pure functions of saved predictions.

`score(preds)` adds one indicator column per outcome to the predictions table (one row per model
x seed x case): revised-verdict, endpoint, exact receipt-family and cube-cell correctness, and the
failure-accounting outcome (`alignment.receipts.accounting.classify`: stable, drift, inertia,
misattribution, change). An unparseable completion is wrong on every accuracy and has its own
accounting outcome, `unparseable`, which stays in every rate's denominator (it is never dropped,
and it is never mistaken for a correct "no change").

`pairs(scored)` matches each control's prediction with its base case's prediction under the
same model and seed and checks the control's relation (`consistency.relation_holds`; an
unparseable side is a violation). `selective(scored, coverages)` fits confidence thresholds on
the calibration split per model and seed (`accounting.fit_thresholds`) and marks, on the locked
test, which predicted changes are accepted and which of those are right.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from alignment.errors import UserError
from alignment.reasonbench.benchmark.cases import SOURCES
from alignment.receipts import Prediction
from alignment.receipts.accounting import classify, fit_thresholds
from alignment.receipts.consistency import relation_holds

MODEL = ["regime", "learner", "target"]
PRED = ["parse_ok", "pred_old", "pred_new", "pred_receipt", "pred_cells"]


def records(df: pd.DataFrame, cols: list[str]) -> list[dict[str, Any]]:
    """Rows as dicts of only `cols` (building dicts of every column dominated the run time)."""
    return df[[c for c in dict.fromkeys(cols) if c in df.columns]].to_dict("records")


def family(keys: Any) -> frozenset[frozenset[str]]:
    """>>> sorted(sorted(t) for t in family(["G", "NA"]))
    [['A', 'N'], ['G']]
    """
    return frozenset(frozenset(k) for k in keys)


def gold_of(row: dict[str, Any]) -> Prediction:
    cells = json.loads(row["cube"])
    return Prediction(old=row["old_verdict"], new=row["new_verdict"], receipt=family(row["receipt"]),
                      cells={frozenset(k): v for k, v in cells.items()})  # fmt: skip


def predicted(row: dict[str, Any]) -> Prediction | None:
    """The parsed prediction of a row (None when unparseable), with its confidence if any."""
    if not row["parse_ok"]:
        return None
    receipt, cells, conf = row["pred_receipt"], row["pred_cells"], row.get("confidence_used")
    return Prediction(
        old=row["pred_old"], new=row["pred_new"],
        receipt=None if missing(receipt) else family(receipt),
        cells=None if missing(cells) else {frozenset(k): v for k, v in json.loads(cells).items()},
        confidence=None if missing(conf) else float(conf),
    )  # fmt: skip


def missing(value: Any) -> bool:
    """None or NaN (how a null reads back from Parquet, depending on the column's type).

    >>> missing(None), missing(float("nan")), missing([]), missing(0.0)
    (True, True, False, False)
    """
    return value is None or (isinstance(value, float) and math.isnan(value))


def _cell_share(gold: str, pred: str | None) -> float:
    """Share of the 8 cells a predicted cube gets right (0 when unparseable).

    >>> _cell_share('{"": "deny", "G": "approve"}', '{"": "deny", "G": "deny"}')
    0.5
    """
    if pred is None:
        return 0.0
    g, p = json.loads(gold), json.loads(pred)
    return sum(p.get(k) == v for k, v in g.items()) / len(g)


def score_row(row: dict[str, Any]) -> dict[str, Any]:
    """Indicators of one prediction (NaN where the target does not predict the thing)."""
    ok = bool(row["parse_ok"])
    has_receipt = row["target"] != "direct_verdict"
    gold_change = row["old_verdict"] != row["new_verdict"]
    endpoints = ok and row["pred_old"] == row["old_verdict"] and row["pred_new"] == row["new_verdict"]
    out: dict[str, Any] = {
        "parse_fail": float(not ok),
        "verdict_ok": float(ok and row["pred_new"] == row["new_verdict"]),
        "endpoints_ok": float(endpoints),
        "gold_change": float(gold_change),
        "gold_stable": float(not gold_change),
        "receipt_ok": math.nan, "outcome": None, "cells_acc": math.nan, "cube_exact": math.nan,
    }  # fmt: skip
    if has_receipt:
        receipt_ok = ok and list(row["pred_receipt"]) == list(row["receipt"])
        out["receipt_ok"] = float(receipt_ok)
        out["outcome"] = classify(gold_of(row), predicted(row)) if ok else "unparseable"  # type: ignore[arg-type]
        out["eligible"] = float(gold_change and endpoints)
        out["eligible_wrong"] = float(gold_change and endpoints and not receipt_ok)
    if row["target"] == "cube":
        out["cells_acc"] = _cell_share(row["cube"], row["pred_cells"] if ok else None)
        out["cube_exact"] = float(out["cells_acc"] == 1.0)
    return out


def score(preds: pd.DataFrame) -> pd.DataFrame:
    """The predictions with every per-observation outcome column added."""
    cols = ["target", "old_verdict", "new_verdict", "receipt", "cube", *PRED]
    extra = pd.DataFrame([score_row(r) for r in records(preds, cols)], index=preds.index)
    out = pd.concat([preds, extra], axis=1)
    for name in ("drift", "inertia", "misattribution", "change"):
        out[name] = (out["outcome"] == name).astype(float).where(out["outcome"].notna())
    out["unparseable"] = (out["outcome"] == "unparseable").astype(float).where(out["outcome"].notna())
    return out


# ------------------------------------------------------------------------------ consistency


def pairs(scored: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, seed, control): kind, unit, seed, `holds` (1/0) and `violated`."""
    controls = scored[scored["control_type"].notna()]
    if controls.empty:
        return pd.DataFrame(columns=[*MODEL, "seed", "id", "kind", "unit_id", "stratum", "holds", "violated"])
    cols = [*MODEL, "seed", "id", "unit_id", "stratum", "control_type", "control_of", *PRED]
    bases = {(r["regime"], r["learner"], r["target"], r["seed"], r["id"]): r
             for r in records(scored[scored["control_type"].isna()], cols)}  # fmt: skip
    rows = []
    for r in records(controls, cols):
        base = bases.get((r["regime"], r["learner"], r["target"], r["seed"], r["control_of"]))
        if base is None:
            raise UserError(f"prediction for control {r['id']} has no prediction of its base case")
        b, c = predicted(base), predicted(r)
        holds = b is not None and c is not None and relation_holds(r["control_type"], b, c, SOURCES)
        rows.append({**{k: r[k] for k in (*MODEL, "seed", "id", "unit_id", "stratum")},
                     "kind": r["control_type"], "base_id": r["control_of"],
                     "holds": float(holds), "violated": float(not holds)})  # fmt: skip
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ confidence


def agreement(scored: pd.DataFrame) -> pd.Series:
    """Per row, the share of the model's other receipt targets (same regime, learner, seed and
    case) that parse and give the same revised verdict and receipt; NaN with no other target."""
    cols = [*MODEL, "seed", "id", "parse_ok", "pred_new", "pred_receipt"]
    rows = records(scored, cols)
    claims: dict[tuple, dict[str, Any]] = {}
    for r in (r for r in rows if r["target"] != "direct_verdict"):
        key = (r["regime"], r["learner"], r["seed"], r["id"])
        claim = (r["pred_new"], tuple(r["pred_receipt"])) if r["parse_ok"] else None
        claims.setdefault(key, {})[r["target"]] = claim
    out = []
    for r in rows:
        others = {t: c for t, c in claims.get((r["regime"], r["learner"], r["seed"], r["id"]), {}).items()
                  if t != r["target"]}  # fmt: skip
        if r["target"] == "direct_verdict" or not others or not r["parse_ok"]:
            out.append(math.nan)
            continue
        mine = (r["pred_new"], tuple(r["pred_receipt"]))
        out.append(sum(c == mine for c in others.values()) / len(others))
    return pd.Series(out, index=scored.index, dtype=float)


def with_confidence(scored: pd.DataFrame, mode: str) -> pd.DataFrame:
    """Adds `confidence_used` and `confidence_source` (learner, agreement, or none)."""
    agree = agreement(scored)
    own = scored["confidence"].astype(float)
    learner_has = own.groupby([scored[c] for c in MODEL]).transform(lambda s: s.notna().all())
    use_own = learner_has.astype(bool) & (mode == "auto")
    out = scored.copy()
    out["confidence_used"] = np.where(use_own, own, agree)
    source = np.where(use_own, "learner", "agreement")
    out["confidence_source"] = np.where(out["confidence_used"].notna() | use_own, source, "none")
    return out


# ------------------------------------------------------------------------------ selective


def selective(scored: pd.DataFrame, coverages: list[float]) -> pd.DataFrame:
    """Per (model, seed, coverage target, locked case): candidate / accepted / correct flags.

    Thresholds come from the same model and seed's calibration predictions. Unparseable
    predictions claim nothing, so they are never accepted, and they still count in gold changes.
    Models without a confidence on every calibration change, or without predicted changes on
    calibration, get no rows.
    """
    rows = []
    main = scored[scored["control_type"].isna() & (scored["target"] != "direct_verdict")]
    for key, g in main.groupby([*MODEL, "seed"], sort=True):
        cols = ["id", "unit_id", "outcome", "gold_change", "confidence_used", *PRED]
        cal = [predicted(r) for r in records(g[g["split"] == "calibration"], cols)]
        cal = [p for p in cal if p is not None and p.changed]
        if not cal or any(p.confidence is None for p in cal):
            continue
        thresholds = fit_thresholds(cal, coverages)
        test = records(g[g["split"] == "locked"], cols)
        for c, thr in thresholds.items():
            cal_cov = sum(p.confidence >= thr for p in cal) / len(cal)  # type: ignore[operator]
            for r in test:
                p = predicted(r)
                cand = p is not None and p.changed
                acc = cand and (p.confidence is not None and p.confidence >= thr)  # type: ignore[union-attr]
                rows.append({**dict(zip([*MODEL, "seed"], key, strict=True)), "id": r["id"],
                             "unit_id": r["unit_id"], "coverage_target": c, "threshold": thr,
                             "calibration_coverage": cal_cov, "candidate": float(cand),
                             "accepted": float(acc), "correct": float(acc and r["outcome"] == "change"),
                             "gold_change": r["gold_change"]})  # fmt: skip
    return pd.DataFrame(rows)

