"""Strategies D and C accounted against the executed example-level cube (failure accounting and
reason debt from `alignment.receipts.accounting`).

Gold accounts (one per example, read against every sampled original response of the example):

- `feature cube`: the one-source cube over the protected feature, executed from `generate`'s
  samples: the modal answer over the N original samples against the modal answer over the N
  counterfactual samples (`alignment.receipts.runner.modal_answer`). Always available.
- `full cube` (with `attribution.receipts: true`): the `receipts` stage's example-level cube over
  every declared source, with its exact receipt family.

Predictions, per sampled original response: strategy D claims the receipt {feature} when it fired
(its predicted endpoints: the response's answer and the drawn counterfactual answer); C the same
when it fired; `D cube` (full cube only) is the response's own strategy-D cube from `receipts`.
Against the full cube only receipts are compared for D and C (their "new" answer is the
feature-only hybrid's, not the all-sources one). `p_d >= t` accepts a {feature} attribution when
its confidence p_d clears t: its reason debt, coverage and gold-change recall say how much of the
augmented reward would land on responses whose answer the feature did not cause.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from alignment.analysis.stats import wilson_interval
from alignment.receipts.accounting import classify, failure_accounting, reason_debt
from alignment.receipts.cube import execute_cube
from alignment.receipts.prediction import Outcome, Prediction
from alignment.receipts.runner import (
    answer_of,
    hybrid_key,
    modal_answer,
    pool_from_responses,
    source_names,
)
from alignment.tasks.base import protected_source

Cases = list[tuple[Outcome, Prediction]]


def feature_golds(examples: pd.DataFrame, responses: pd.DataFrame) -> dict[str, Outcome]:
    """example id -> the executed one-source cube over the protected feature (modal answers)."""
    rows = examples.to_dict("records")
    pool = pool_from_responses(rows, responses)
    out: dict[str, Outcome] = {}
    for row in rows:
        eid, order, p = str(row["id"]), source_names(row), protected_source(row)
        cells = {t: pool.get((eid, hybrid_key(t, order))) for t in (frozenset(), frozenset({p}))}
        if all(cells.values()):
            out[eid] = execute_cube((p,), lambda t, c=cells: modal_answer(c[t]))
    return out


def full_golds(receipts: pd.DataFrame) -> dict[str, Outcome]:
    """example id -> the receipts stage's example-level cube (endpoints and exact receipt)."""
    return {str(r["example_id"]): Prediction(old=int(r["old_verdict"]), new=int(r["new_verdict"]),
                                             receipt=[list(a) for a in r["receipt"]])
            for r in receipts.to_dict("records")}


def strategy_cases(
    golds: Mapping[str, Outcome], attrib: pd.DataFrame, protected: Mapping[str, str], endpoints: bool
) -> dict[str, Cases]:
    """Strategy -> (gold, prediction) per sampled original response with a gold account."""
    out: dict[str, Cases] = {"D": [], "C": [], "p_d": []}
    for r in attrib[attrib["sample"] >= 0].to_dict("records"):
        gold = golds.get(str(r["example_id"]))
        if gold is None:
            continue
        feature = [[protected[str(r["example_id"])]]]
        old = answer_of(r["pred"])
        new = answer_of(r["cf_pred"]) if endpoints else None
        out["D"].append((gold, Prediction(old, new, feature if r["d"] else [], confidence=float(r["p_d"]))))
        out["C"].append((gold, Prediction(old, new, feature if r["c"] else [], confidence=float(r["p_c"]))))
        out["p_d"].append((gold, Prediction(old, None, feature if r["p_d"] > 0 else [], confidence=float(r["p_d"]))))
    return out


def cube_cases(golds: Mapping[str, Outcome], cubes: pd.DataFrame, order: Mapping[str, Sequence[str]]) -> Cases:
    """(gold, the response's own strategy-D cube) per response in `receipts/responses.parquet`."""
    out = []
    for r in cubes.to_dict("records"):
        eid = str(r["example_id"])
        if eid in golds:
            cells = json.loads(r["cells"])
            new = cells.get("+".join(order[eid]))
            out.append((golds[eid], Prediction(int(r["answer"]), new, [list(a) for a in r["receipt"]])))
    return out


def _rate(prefix: str, k: int, n: int) -> dict[str, float]:
    lo, hi = wilson_interval(k, n)
    return {prefix: k / n if n else float("nan"), f"{prefix}_low": lo, f"{prefix}_high": hi}


def failure_row(gold: str, strategy: str, cases: Cases) -> dict[str, Any]:
    r = failure_accounting([g for g, _ in cases], [p for _, p in cases])
    return {"gold": gold, "strategy": strategy, "cases": r.cases, "gold_changes": r.gold_changes, "gold_stable": r.gold_stable,
            "change": r.change, "drift": r.drift, "inertia": r.inertia, "misattribution": r.misattribution,
            **_rate("drift_rate", r.drift, r.gold_stable), **_rate("inertia_rate", r.inertia, r.gold_changes),
            **_rate("misattribution_rate", r.misattribution, r.gold_changes),
            "conditional_misattribution_rate": r.conditional_misattribution_rate, "receipt_accuracy": r.receipt_accuracy}


def debt_row(gold: str, acceptance: str, cases: Cases, threshold: float | None) -> dict[str, Any]:
    r = reason_debt([g for g, _ in cases], [p for _, p in cases], threshold)
    return {"gold": gold, "acceptance": acceptance, "threshold": threshold, "candidates": r.candidates, "accepted": r.accepted,
            "correct_accepted": r.correct_accepted, "gold_changes": r.gold_changes, "coverage": r.coverage,
            **_rate("debt", r.accepted - r.correct_accepted, r.accepted), "recall": r.recall}


def weighted_debt(gold: str, cases: Cases) -> dict[str, Any]:
    """Share of the expected variant's augmented weight (sum of p_d) on wrong attributions."""
    total = sum(p.confidence or 0.0 for _, p in cases)
    wrong = sum(p.confidence or 0.0 for g, p in cases if p.receipt and classify(g, p) != "change")
    return {"gold": gold, "acceptance": "p_d weight (rm_d_expected)", "threshold": float("nan"),
            "candidates": sum(bool(p.receipt) for _, p in cases), "accepted": sum(bool(p.receipt) for _, p in cases),
            "debt": wrong / total if total else float("nan"), "debt_low": float("nan"), "debt_high": float("nan")}


def account(gold: str, cases: Mapping[str, Cases], thresholds: Sequence[float], cube: Cases | None = None) -> tuple[list[dict], list[dict]]:
    """(failure rows, debt rows) for one gold account."""
    failures = [failure_row(gold, s, cases[s]) for s in ("D", "C")]
    debts = [debt_row(gold, "D fired", cases["D"], None), debt_row(gold, "C fired", cases["C"], None)]
    if cube:
        failures.append(failure_row(gold, "D cube", cube))
        debts.append(debt_row(gold, "D cube changed", cube, None))
    debts += [debt_row(gold, f"p_d >= {t:g}", cases["p_d"], t) for t in thresholds]
    debts.append(weighted_debt(gold, cases["p_d"]))
    return failures, debts
