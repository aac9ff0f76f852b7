"""`.venv/bin/python -m pytest -q tests/test_reasonbench_outcomes.py`: outcomes from saved predictions.

Scripted completions (gold, wrong receipts, garbage) on a small build go through the same
parsing and certification as any learner's; the per-observation outcomes must agree with the
reference implementations in `alignment.receipts` (failure accounting, paired consistency,
reason debt), and unparseable output must count as wrong, never vanish.
"""

from __future__ import annotations

import random

import pandas as pd
import pytest

from alignment.reasonbench.benchmark.build import BuildConfig, build
from alignment.reasonbench.experiments.certify import Executor
from alignment.reasonbench.experiments.evaluate import comparison_metrics, consistency_metrics
from alignment.reasonbench.experiments.experiment_config import BootstrapConfig
from alignment.reasonbench.experiments.outcomes import (
    gold_of,
    pairs,
    predicted,
    score,
    selective,
    with_confidence,
)
from alignment.reasonbench.experiments.predict import prediction_rows
from alignment.reasonbench.experiments.targets import gold_fields, serialise, targets_table
from alignment.receipts import Prediction
from alignment.receipts.accounting import failure_accounting, fit_thresholds, reason_debt
from alignment.receipts.consistency import Pair, paired_consistency

BOOT = BootstrapConfig(replicates=100)


def _texts(rows: list[dict], target: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for r in rows:
        u = rng.random()
        if u < 0.1:
            out.append("I think it is approve")
        elif u < 0.35:
            f = gold_fields(r)
            wrong = ["N"] if f["receipt"] == ["G"] else ["G"]
            if target == "cube":
                f["cells"] = {**f["cells"], "G": "refer" if f["cells"]["G"] != "refer" else "deny"}
                out.append(serialise(target, f))
            else:
                out.append(serialise(target, {**f, "receipt": wrong}))
        else:
            out.append(r[f"completion_{target}"])
    return out


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("rbo")
    build(BuildConfig(out, seed=4, scale=0.02, quiet=True, workers=1))
    table = targets_table(pd.read_parquet(out / "reasonbench.parquet"))
    rows = table[table["split"] != "train"].to_dict("records")
    ex, parts = Executor(), []
    for seed in (0, 1):
        for target in ("direct_receipt", "cube"):
            conf = [random.Random(f"{seed}{target}{i}").random() for i in range(len(rows))]
            parts += prediction_rows(("standard", "scripted", target, seed), rows,
                                     _texts(rows, target, seed), conf, ex)  # fmt: skip
    return with_confidence(score(pd.DataFrame(parts)), "auto")


def test_unparseable_output_is_counted_wrong_not_dropped(scored: pd.DataFrame) -> None:
    bad = scored[~scored["parse_ok"]]
    assert len(bad) > 0 and (bad["raw"] == "I think it is approve").all()
    assert bad["parse_fail"].eq(1).all() and bad["verdict_ok"].eq(0).all() and bad["receipt_ok"].eq(0).all()
    assert bad["outcome"].eq("unparseable").all() and not bad["certified"].any()
    assert scored["parse_fail"].mean() == pytest.approx(len(bad) / len(scored))
    gold_change = bad["gold_change"] == 1
    # an unparseable output is neither a correct "no change" nor dropped from a rate's denominator
    assert (bad.loc[~gold_change, "drift"] == 0).all() and bad["unparseable"].eq(1).all()


def test_accounting_agrees_with_the_receipts_package(scored: pd.DataFrame) -> None:
    for _, g in scored[scored["parse_ok"] & scored["control_type"].isna()].groupby(["target", "seed"]):
        recs = g.to_dict("records")
        ref = failure_accounting([gold_of(r) for r in recs], [predicted(r) for r in recs])
        assert (ref.drift, ref.inertia, ref.misattribution, ref.change) == tuple(
            int(g[c].sum()) for c in ("drift", "inertia", "misattribution", "change"))
        assert ref.misattribution_endpoints_correct == int(g["eligible_wrong"].sum())
        assert ref.endpoints_correct == int(g["eligible"].sum())
    # certification by execution says the same as the stored labels on every parsed claim
    receipt_ok = scored["receipt_ok"].astype(bool)
    assert (scored["certified"].astype(bool) == receipt_ok).all()


def test_consistency_agrees_with_paired_consistency(scored: pd.DataFrame) -> None:
    p = pairs(scored)
    assert len(p) == int(scored["control_type"].notna().sum())
    by_key = {(r["target"], r["seed"], r["id"]): r for r in scored.to_dict("records")}
    for (target, kind), g in p.groupby(["target", "kind"]):
        ref_pairs = []
        for r in g.to_dict("records"):
            base, ctrl = by_key[(target, r["seed"], r["base_id"])], by_key[(target, r["seed"], r["id"])]
            b, c = predicted(base), predicted(ctrl)
            if b is None or c is None:  # unparseable: a violation (our rule), kept in the pair count
                b, c = Prediction(old="deny", new="deny", receipt=[]), Prediction(old="refer", new="refer", receipt=[])
            ref_pairs.append(Pair(kind, b, c, ("G", "N", "A"), base_id=(r["seed"], r["base_id"])))
        ref = paired_consistency(ref_pairs)
        assert g["holds"].mean() == pytest.approx(ref.consistency)
        rows = consistency_metrics(g, BOOT)
        bound = next(x for x in rows if x["metric"] == "error_lower_bound" and x["group"] == kind)
        assert bound["estimate"] == pytest.approx(ref.error_lower_bound)


def test_selective_debt_agrees_with_reason_debt(scored: pd.DataFrame) -> None:
    sel = selective(scored, [0.3, 0.6, 1.0])
    for (target, seed, c), g in sel.groupby(["target", "seed", "coverage_target"]):
        model = scored[(scored["target"] == target) & (scored["seed"] == seed) & scored["control_type"].isna()]
        cal = [predicted(r) for r in model[model["split"] == "calibration"].to_dict("records")]
        thr = fit_thresholds([p for p in cal if p is not None], [c])[c]
        test = model[model["split"] == "locked"].to_dict("records")
        preds = [predicted(r) or Prediction(receipt=[]) for r in test]  # unparseable claims nothing
        ref = reason_debt([gold_of(r) for r in test], preds, thr)
        assert (ref.accepted, ref.correct_accepted, ref.gold_changes) == (
            int(g["accepted"].sum()), int(g["correct"].sum()), int(g["gold_change"].sum()))


def test_cube_minus_direct_is_paired_and_holm_adjusted(scored: pd.DataFrame) -> None:
    rows = comparison_metrics(scored, BOOT)
    overall = {r["metric"]: r for r in rows if r["group"] == "overall"}
    locked = scored[(scored["split"] == "locked") & scored["control_type"].isna()]
    for metric, col in (("verdict_acc", "verdict_ok"), ("receipt_acc", "receipt_ok")):
        means = locked.groupby("target")[col].mean()
        assert overall[metric]["estimate"] == pytest.approx(means["cube"] - means["direct_receipt"])
        assert overall[metric]["p_holm"] >= overall[metric]["p"]
    # a corrupted cube cell does not always change the receipt the cells imply; a wrong receipt does
    assert overall["receipt_acc"]["estimate"] > 0
