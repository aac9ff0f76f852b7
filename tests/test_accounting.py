"""Failure accounting, reason debt and selective thresholds on hand-made tables."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alignment.errors import UserError
from alignment.receipts import Cube, Prediction, execute_cube
from alignment.receipts.accounting import (
    classify,
    failure_accounting,
    fit_thresholds,
    reason_debt,
    selective_debt,
)

# Gold cases over grounds G and norms N (deny -> approve when the transition changes the verdict).
ONLY_G = execute_cube("GN", lambda t: "approve" if "G" in t else "deny")
EITHER = execute_cube("GN", lambda t: "approve" if t else "deny")
STABLE = execute_cube("GN", lambda t: "deny")


def pred(
    receipt: list[list[str]],
    old: str | None = None,
    new: str | None = None,
    confidence: float | None = None,
) -> Prediction:
    return Prediction(old=old, new=new, receipt=receipt, confidence=confidence)


def test_each_outcome() -> None:
    assert classify(STABLE, pred([])) == "stable"
    assert classify(STABLE, pred([["G"]])) == "drift"
    assert classify(ONLY_G, pred([])) == "inertia"
    assert classify(ONLY_G, pred([["G"]])) == "change"
    assert classify(ONLY_G, pred([["G"], ["N"]])) == "misattribution"
    # Ambiguous gold: only the complete family is right.
    assert classify(EITHER, pred([["G"], ["N"]])) == "change"
    assert classify(EITHER, pred([["G"]])) == "misattribution"
    # A right receipt with a wrong revised verdict is not a correct attribution.
    assert classify(ONLY_G, pred([["G"]], new="refer")) == "misattribution"
    # Without a receipt, endpoints decide whether a change is claimed.
    assert classify(STABLE, Prediction(old="deny", new="approve")) == "drift"


def test_failure_accounting_on_a_hand_made_table() -> None:
    golds: list[Cube] = [STABLE, STABLE, STABLE, ONLY_G, ONLY_G, EITHER, EITHER, EITHER]
    preds = [
        pred([]),  # stable
        pred([["N"]]),  # drift
        pred([]),  # stable
        pred([["G"]], "deny", "approve"),  # change, endpoints right
        pred([["N"]], "deny", "approve"),  # misattribution with both endpoints right
        pred([]),  # inertia
        pred([["G"]], "deny", "approve"),  # misattribution (ambiguous gold), endpoints right
        # change: the receipt and the revised verdict are right (the old verdict is not)
        pred([["G"], ["N"]], "approve", "approve"),
    ]
    r = failure_accounting(golds, preds)
    assert (r.cases, r.gold_changes, r.gold_stable) == (8, 5, 3)
    assert (r.stable, r.drift, r.inertia, r.misattribution, r.change) == (2, 1, 1, 2, 2)
    assert r.drift_rate == 1 / 3
    assert r.inertia_rate == 1 / 5
    assert r.misattribution_rate == 2 / 5
    assert (r.endpoints_correct, r.misattribution_endpoints_correct) == (3, 2)
    assert r.conditional_misattribution_rate == 2 / 3
    assert r.receipt_matches == 4 and r.receipt_accuracy == 4 / 8


def test_rates_with_empty_denominators_are_nan() -> None:
    r = failure_accounting([STABLE], [pred([])])
    assert math.isnan(r.inertia_rate) and math.isnan(r.conditional_misattribution_rate)
    assert r.drift_rate == 0.0


def test_reason_debt_keeps_coverage_and_recall() -> None:
    golds = [ONLY_G, ONLY_G, EITHER, STABLE]
    preds = [
        pred([["G"]], confidence=0.9),
        pred([["N"]], confidence=0.8),
        pred([], confidence=0.99),  # abstains from a change: never an accepted attribution
        pred([["G"]], confidence=0.1),
    ]
    everything = reason_debt(golds, preds)
    assert (everything.candidates, everything.accepted, everything.correct_accepted) == (3, 3, 1)
    assert everything.coverage == 1.0 and everything.debt == 2 / 3
    assert everything.recall == 1 / 3
    confident = reason_debt(golds, preds, threshold=0.85)
    assert (confident.accepted, confident.debt, confident.coverage) == (1, 0.0, 1 / 3)
    assert confident.recall == 1 / 3
    nothing = reason_debt(golds, preds, threshold=1.5)
    assert nothing.accepted == 0 and math.isnan(nothing.debt)
    assert nothing.coverage == 0.0 and nothing.recall == 0.0  # abstention does not look perfect


def test_fit_thresholds_ties_rounding_and_full_coverage() -> None:
    cal = [pred([["G"]], confidence=c) for c in (0.9, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)]
    cal.append(pred([], confidence=1.0))  # not a change: ignored
    thresholds = fit_thresholds(cal, (0.1, 0.2, 0.3, 0.5, 1.0))
    assert thresholds == {0.1: 0.9, 0.2: 0.9, 0.3: 0.8, 0.5: 0.6, 1.0: -math.inf}
    with pytest.raises(UserError, match=r"\(0, 1\]"):
        fit_thresholds(cal, (0.0,))
    with pytest.raises(UserError, match="no predicted changes"):
        fit_thresholds([pred([])])
    with pytest.raises(UserError, match="confidence"):
        fit_thresholds([pred([["G"]])])


def test_selective_debt_applies_calibration_thresholds_to_test() -> None:
    cal = [pred([["G"]], confidence=c / 10) for c in range(1, 11)]
    test_golds = [ONLY_G] * 4 + [STABLE] * 2
    test_preds = [
        pred([["G"]], confidence=0.95),
        pred([["G"]], confidence=0.85),
        pred([["N"]], confidence=0.35),
        pred([], confidence=0.5),
        pred([["G"]], confidence=0.05),  # drift, below every calibration score
        pred([], confidence=0.5),
    ]
    rows = selective_debt(cal, test_golds, test_preds, (0.2, 0.5, 1.0))
    assert [r.threshold for r in rows] == [0.9, 0.6, -math.inf]
    assert [r.calibration_coverage for r in rows] == [0.2, 0.5, 1.0]
    assert [r.test.accepted for r in rows] == [1, 2, 4]
    assert [r.test.debt for r in rows] == [0.0, 0.0, 0.5]
    assert [r.test.recall for r in rows] == [0.25, 0.5, 0.5]
    assert rows[-1].test.coverage == 1.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([ONLY_G, EITHER, STABLE]),
            st.sampled_from([[], [["G"]], [["N"]], [["G"], ["N"]]]),
            st.floats(0, 1),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_outcomes_partition_and_coverage_is_monotone(
    rows: list[tuple[Cube, list[list[str]], float]],
) -> None:
    golds = [g for g, _, _ in rows]
    preds = [pred(r, confidence=c) for _, r, c in rows]
    r = failure_accounting(golds, preds)
    assert r.stable + r.drift == r.gold_stable
    assert r.change + r.inertia + r.misattribution == r.gold_changes
    if not any(p.changed for p in preds):
        return
    reports = [row.test for row in selective_debt(preds, golds, preds)]
    coverages = [rep.coverage for rep in reports]
    assert coverages == sorted(coverages) and coverages[-1] == 1.0
    recalls = [rep.recall for rep in reports]
    assert all(math.isnan(x) for x in recalls) or recalls == sorted(recalls)
    full = reason_debt(golds, preds)
    assert full.correct_accepted == r.change


def test_input_errors() -> None:
    with pytest.raises(UserError, match="2 gold outcomes but 1"):
        failure_accounting([STABLE, STABLE], [pred([])])
    incoherent = Prediction(old="deny", new="approve", receipt=[])
    with pytest.raises(UserError, match="incoherent gold"):
        classify(incoherent, pred([]))
    with pytest.raises(UserError, match="exact receipt"):
        classify(Prediction(old="deny", new="deny"), pred([]))
    with pytest.raises(UserError, match="predicted receipt"):
        classify(ONLY_G, Prediction(old="deny", new="approve"))
    with pytest.raises(UserError, match="no receipt and no endpoints"):
        classify(ONLY_G, Prediction(new="approve"))
    with pytest.raises(UserError, match="finite"):
        Prediction(receipt=[], confidence=float("nan"))
    with pytest.raises(UserError, match="string"):
        Prediction(receipt="G")  # type: ignore[arg-type]
