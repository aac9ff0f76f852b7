"""Failure accounting and reason debt for receipt predictions scored against executed gold.

`failure_accounting(golds, preds)` counts drift, inertia and misattribution;
`reason_debt(golds, preds, threshold)` scores selective acceptance of attributions;
`selective_debt(calibration_preds, test_golds, test_preds)` fits confidence thresholds on
calibration predictions at coverage targets 20%..100% and applies them to test.

Golds are executed `Cube`s (or `Prediction`s holding exact endpoints and receipts), preds are
`Prediction`s, aligned by position. A prediction claims a change when its receipt is non-empty
(see `Prediction.changed`). Each case falls in exactly one outcome:

* ``stable``: no gold change, none predicted;
* ``drift``: no gold change, one predicted (a false-positive change);
* ``inertia``: a gold change, none predicted (a missed change);
* ``misattribution``: a gold change, a change predicted, but the receipt family differs from the
  gold family (or the predicted revised verdict, when given, differs from the gold one);
* ``change``: a gold change attributed exactly.

Misattribution is also reported conditional on both predicted endpoint verdicts being right, the
cases where label accuracy would call the prediction perfect.

Reason debt is the error rate among *accepted attributions*: the predicted changes whose
confidence clears the threshold. An accepted attribution is correct iff its case's outcome is
``change``. Debt is undefined (nan) when nothing is accepted, and it always comes with accepted
coverage (accepted / predicted changes) and gold-change recall (correctly accepted / gold
changes), so abstaining on everything reads as coverage 0 and recall 0, never as zero debt.
Rates with an empty denominator are nan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from alignment.errors import UserError
from alignment.receipts.prediction import Outcome, Prediction, changed

CaseOutcome = Literal["stable", "drift", "inertia", "misattribution", "change"]
DEFAULT_TARGETS: tuple[float, ...] = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_NAN = float("nan")


def _rate(num: int, den: int) -> float:
    return num / den if den else _NAN


def _gold_change(gold: Outcome) -> bool:
    if gold.receipt is None:
        raise UserError("a gold outcome must carry its exact receipt")
    if (
        gold.old is not None
        and gold.new is not None
        and (gold.old != gold.new) != bool(gold.receipt)
    ):
        raise UserError("incoherent gold: the receipt must be empty exactly when endpoints agree")
    return bool(gold.receipt)


def classify(gold: Outcome, pred: Prediction) -> CaseOutcome:
    """The one failure-accounting outcome of a prediction on a case.

    >>> from alignment.receipts.cube import execute_cube
    >>> gold = execute_cube("GN", lambda t: "approve" if "G" in t else "deny")
    >>> classify(gold, Prediction(receipt=[["G"]])), classify(gold, Prediction(receipt=[["N"]]))
    ('change', 'misattribution')
    >>> classify(gold, Prediction(old="deny", new="deny"))
    'inertia'
    """
    gold_change, pred_change = _gold_change(gold), changed(pred)
    if not gold_change:
        return "drift" if pred_change else "stable"
    if not pred_change:
        return "inertia"
    if pred.receipt is None:
        raise UserError("attribution needs a predicted receipt, got only endpoints")
    right = pred.receipt == gold.receipt and (pred.new is None or pred.new == gold.new)
    return "change" if right else "misattribution"


def _check_aligned(golds: Sequence[object], preds: Sequence[object]) -> None:
    if len(golds) != len(preds):
        raise UserError(f"{len(golds)} gold outcomes but {len(preds)} predictions")


@dataclass(frozen=True)
class FailureReport:
    """Counts of each outcome, and the rates that read them against the right denominators."""

    cases: int
    gold_changes: int
    gold_stable: int
    stable: int
    change: int
    drift: int
    inertia: int
    misattribution: int
    receipt_matches: int
    endpoints_correct: int
    misattribution_endpoints_correct: int

    @property
    def drift_rate(self) -> float:
        """Predicted changes among gold-stable cases."""
        return _rate(self.drift, self.gold_stable)

    @property
    def inertia_rate(self) -> float:
        """Missed changes among gold changes."""
        return _rate(self.inertia, self.gold_changes)

    @property
    def misattribution_rate(self) -> float:
        """Wrongly attributed changes among gold changes."""
        return _rate(self.misattribution, self.gold_changes)

    @property
    def conditional_misattribution_rate(self) -> float:
        """Wrong receipts among gold changes whose predicted endpoints are both right."""
        return _rate(self.misattribution_endpoints_correct, self.endpoints_correct)

    @property
    def receipt_accuracy(self) -> float:
        """Exact receipt-family matches among all cases (empty family on stable cases)."""
        return _rate(self.receipt_matches, self.cases)


def failure_accounting(golds: Sequence[Outcome], preds: Sequence[Prediction]) -> FailureReport:
    """Drift, inertia and misattribution of `preds` against `golds` (see the module docstring).

    >>> from alignment.receipts.cube import execute_cube
    >>> change = execute_cube("GN", lambda t: "approve" if "G" in t else "deny")
    >>> stable = execute_cube("GN", lambda t: "deny")
    >>> r = failure_accounting(
    ...     [change, change, stable],
    ...     [Prediction(old="deny", new="approve", receipt=[["N"]]), Prediction(receipt=[]),
    ...      Prediction(receipt=[["G"]])])
    >>> r.drift_rate, r.inertia_rate, r.misattribution_rate, r.conditional_misattribution_rate
    (1.0, 0.5, 0.5, 1.0)
    """
    _check_aligned(golds, preds)
    counts = dict.fromkeys(("stable", "change", "drift", "inertia", "misattribution"), 0)
    matches = eligible = eligible_wrong = 0
    for gold, pred in zip(golds, preds, strict=True):
        counts[classify(gold, pred)] += 1
        matches += pred.receipt is not None and pred.receipt == gold.receipt
        if _gold_change(gold) and pred.old == gold.old and pred.new == gold.new:
            eligible += 1
            eligible_wrong += pred.receipt != gold.receipt
    gold_changes = counts["change"] + counts["inertia"] + counts["misattribution"]
    return FailureReport(
        cases=len(golds),
        gold_changes=gold_changes,
        gold_stable=len(golds) - gold_changes,
        receipt_matches=matches,
        endpoints_correct=eligible,
        misattribution_endpoints_correct=eligible_wrong,
        **counts,
    )


@dataclass(frozen=True)
class DebtReport:
    """Reason debt with the coverage and recall it must be read with."""

    candidates: int
    accepted: int
    correct_accepted: int
    gold_changes: int
    coverage: float
    debt: float
    recall: float


def _confidence(pred: Prediction) -> float:
    if pred.confidence is None:
        raise UserError("selective acceptance needs a confidence on every predicted change")
    return pred.confidence


def reason_debt(
    golds: Sequence[Outcome], preds: Sequence[Prediction], threshold: float | None = None
) -> DebtReport:
    """Error among accepted attributions (confidence >= threshold; None accepts every change).

    >>> from alignment.receipts.cube import execute_cube
    >>> gold = execute_cube("G", lambda t: bool(t))
    >>> preds = [Prediction(receipt=[["G"]], confidence=0.9),
    ...          Prediction(receipt=[], confidence=0.1)]
    >>> r = reason_debt([gold, gold], preds, threshold=0.5)
    >>> r.coverage, r.debt, r.recall
    (1.0, 0.0, 0.5)
    >>> reason_debt([gold, gold], preds, threshold=2.0).debt
    nan
    """
    _check_aligned(golds, preds)
    candidates = accepted = correct = gold_changes = 0
    for gold, pred in zip(golds, preds, strict=True):
        gold_changes += _gold_change(gold)
        if not changed(pred):
            continue
        candidates += 1
        if threshold is not None and _confidence(pred) < threshold:
            continue
        accepted += 1
        correct += classify(gold, pred) == "change"
    return DebtReport(
        candidates=candidates,
        accepted=accepted,
        correct_accepted=correct,
        gold_changes=gold_changes,
        coverage=_rate(accepted, candidates),
        debt=_rate(accepted - correct, accepted),
        recall=_rate(correct, gold_changes),
    )


def fit_thresholds(
    calibration_preds: Sequence[Prediction], targets: Sequence[float] = DEFAULT_TARGETS
) -> dict[float, float]:
    """Confidence threshold per coverage target, fitted on calibration predicted changes.

    Target c accepts the ceil(c·m) most confident of the m calibration changes (ties at the
    threshold are all accepted, so realised coverage can exceed c). Target 1.0 accepts every
    change, on test too, so full coverage never depends on the calibration minimum.

    >>> preds = [Prediction(receipt=[["G"]], confidence=c) for c in (0.9, 0.8, 0.4, 0.2, 0.1)]
    >>> fit_thresholds(preds, (0.2, 0.6, 1.0))
    {0.2: 0.9, 0.6: 0.4, 1.0: -inf}
    """
    for c in targets:
        if not 0 < c <= 1:
            raise UserError(f"coverage targets must lie in (0, 1], got {c}")
    scores = sorted((_confidence(p) for p in calibration_preds if changed(p)), reverse=True)
    if not scores:
        raise UserError("no predicted changes in the calibration data to fit thresholds on")
    out: dict[float, float] = {}
    for c in targets:
        # The tolerance keeps 0.3 * 10 from rounding up to 4 accepted.
        keep = max(1, math.ceil(c * len(scores) - 1e-9))
        out[c] = -math.inf if c >= 1 else scores[keep - 1]
    return out


@dataclass(frozen=True)
class SelectiveRow:
    target: float
    threshold: float
    calibration_coverage: float
    test: DebtReport


def selective_debt(
    calibration_preds: Sequence[Prediction],
    test_golds: Sequence[Outcome],
    test_preds: Sequence[Prediction],
    targets: Sequence[float] = DEFAULT_TARGETS,
) -> list[SelectiveRow]:
    """Thresholds fitted on calibration at each coverage target, debt realised on test."""
    thresholds = fit_thresholds(calibration_preds, targets)
    cal = [_confidence(p) for p in calibration_preds if changed(p)]
    rows = []
    for c, thr in thresholds.items():
        cal_cov = sum(s >= thr for s in cal) / len(cal)
        rows.append(SelectiveRow(c, thr, cal_cov, reason_debt(test_golds, test_preds, thr)))
    return rows
