"""`.venv/bin/python -m pytest -q tests/test_audit_accounting.py`: D and C against the executed
feature cube, counted independently from the attribute rows."""

from __future__ import annotations

import pandas as pd

from alignment.audit.accounting import account, feature_golds, strategy_cases
from alignment.augment.attribution import AttributionConfig, attribute_responses
from alignment.tasks.base import finish_row, source


def row(eid: str) -> dict:
    return finish_row({"id": eid, "unit_id": eid, "split": "test", "task": "mathbook", "system": "s",
                       "template": "{{source:book_solution}} Q? (A) 1 (B) 2", "answer": 0, "options": ["1", "2"],
                       "sources": [source("book_solution", "ground", "SOL", "OTHER", True)], "category": "x"})


def responses(answers: dict[tuple[str, str], list[int]]) -> pd.DataFrame:
    return pd.DataFrame([{"example_id": e, "variant": v, "sample": s, "pred": a, "correct": a == 0, "valid": True, "text": ""}
                         for (e, v), xs in answers.items() for s, a in enumerate(xs)])


def test_drift_inertia_and_misattribution_of_d() -> None:
    # e1: the feature moves the modal answer 0 -> 1 (a gold change); e2: modal 0 in both (stable).
    gen = responses({("e1", "orig"): [0, 0, 0, 0, 1], ("e1", "cf"): [1, 1, 1, 0, 0],
                     ("e2", "orig"): [0, 0, 0, 1, 1], ("e2", "cf"): [0, 0, 0, 1, 1]})
    examples = pd.DataFrame([row("e1"), row("e2")])
    golds = feature_golds(examples, gen)
    assert golds["e1"].receipt == {frozenset({"book_solution"})} and golds["e2"].receipt == frozenset()
    attrib = attribute_responses(gen, AttributionConfig(seed=4))
    cases = strategy_cases(golds, attrib, {"e1": "book_solution", "e2": "book_solution"}, endpoints=True)
    failures, debts = account("feature cube", cases, [0.5])
    d = failures[0]
    e1, e2 = attrib[attrib["example_id"] == "e1"], attrib[attrib["example_id"] == "e2"]
    assert d["drift"] == e2["d"].sum() and d["gold_stable"] == 5
    assert d["inertia"] == (~e1["d"]).sum()
    # D fired on e1 but its drawn counterfactual answer is not the cube's revised answer (1).
    assert d["misattribution"] == (e1["d"] & (e1["cf_pred"] != 1)).sum()
    assert d["change"] == (e1["d"] & (e1["cf_pred"] == 1)).sum()
    d_debt = debts[0]
    assert d_debt["accepted"] == attrib["d"].sum()
    assert d_debt["debt"] == (d["drift"] + d["misattribution"]) / attrib["d"].sum()
    pd_half = next(r for r in debts if r["acceptance"] == "p_d >= 0.5")
    assert pd_half["accepted"] == (attrib["p_d"] >= 0.5).sum() and pd_half["candidates"] == (attrib["p_d"] > 0).sum()
    wrong = attrib.loc[(attrib["example_id"] == "e2") & (attrib["p_d"] >= 0.5)]
    assert pd_half["debt"] == len(wrong) / pd_half["accepted"]
    weight = debts[-1]
    assert abs(weight["debt"] - e2["p_d"].sum() / attrib["p_d"].sum()) < 1e-12


def test_an_example_without_counterfactual_samples_has_no_gold() -> None:
    gen = responses({("e1", "orig"): [0, 1]})
    assert feature_golds(pd.DataFrame([row("e1")]), gen) == {}
