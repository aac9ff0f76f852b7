"""One row per (evaluator, transformation, relation): the consistency rate with its 95% Wilson
interval and the error lower bound `alignment.receipts.consistency.paired_consistency` implies.

Every transformation here is presentational (the relation is identity of the judgment), so a
pair is scored with the `permutation` relation of `alignment.receipts.consistency`, except
content added without meaning (`book_distractor`, `participant`, `ack_twice`), scored as
`distractor`. Both require identical judgments; the kind is kept for the record.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from alignment.analysis.stats import wilson_interval
from alignment.receipts.consistency import Pair, Transformation, paired_consistency
from alignment.receipts.prediction import Prediction

KIND = {
    "book_order": Transformation.PERMUTATION,
    "option_order": Transformation.PERMUTATION,
    "whitespace": Transformation.PERMUTATION,
    "answer_phrase": Transformation.PERMUTATION,
    "ack_earlier": Transformation.PERMUTATION,
    "book_distractor": Transformation.DISTRACTOR,
    "participant": Transformation.DISTRACTOR,
    "ack_twice": Transformation.DISTRACTOR,
}
SOURCES = ("judgment",)  # the one compared field; pairs never carry receipts over other sources


def pair(transformation: str, base: Prediction, control: Prediction, base_id: Hashable) -> Pair:
    return Pair(KIND[transformation], base, control, SOURCES, base_id=base_id)


def verdict_pair(transformation: str, base: Hashable, control: Hashable, base_id: Hashable) -> Pair:
    """A pair comparing one judgment (an answer, a verdict, an order) before and after."""
    return pair(transformation, Prediction(old=base), Prediction(old=control), base_id)


def summary_row(evaluator: str, transformation: str, relation: str, pairs: Iterable[Pair], skipped: int = 0, **extra: Any) -> dict[str, Any]:
    """Consistency with its interval and the implied error lower bound.

    >>> from alignment.receipts.prediction import Prediction
    >>> ps = [verdict_pair("whitespace", 1, 1, i) for i in range(3)] + [verdict_pair("whitespace", 1, 0, 3)]
    >>> r = summary_row("judge", "whitespace", "verdict", ps)
    >>> r["pairs"], r["violations"], r["consistency"], r["error_lower_bound"]
    (4, 1, 0.75, 0.125)
    """
    pairs = list(pairs)
    if not pairs:
        return {"evaluator": evaluator, "transformation": transformation, "relation": relation, "kind": str(KIND.get(transformation, "")),
                "pairs": 0, "violations": 0, "consistency": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
                "error_lower_bound": float("nan"), "skipped": skipped, **extra}
    r = paired_consistency(pairs)
    lo, hi = wilson_interval(r.pairs - r.violations, r.pairs)
    return {"evaluator": evaluator, "transformation": transformation, "relation": relation, "kind": str(pairs[0].kind),
            "pairs": r.pairs, "violations": r.violations, "consistency": r.consistency, "ci_low": lo, "ci_high": hi,
            "error_lower_bound": r.error_lower_bound, "skipped": skipped, **extra}


VIOLATION_COLUMNS = ["evaluator", "transformation", "relation", "example_id", "item", "base", "control", "base_text",
                     "control_text", "severity"]


def violation(evaluator: str, transformation: str, relation: str, example_id: str, item: str, base: Any, control: Any,
              base_text: str = "", control_text: str = "", severity: float = 1.0) -> dict[str, Any]:
    """One violating pair: a proof that one of its two judgments is wrong."""
    return {"evaluator": evaluator, "transformation": transformation, "relation": relation, "example_id": example_id,
            "item": item, "base": str(base), "control": str(control), "base_text": base_text,
            "control_text": control_text, "severity": float(severity)}
