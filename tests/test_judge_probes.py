"""Probe phrasings (docs/judges.md, "How accurate the keyword judge is"): general phrasings of
using, refusing or setting aside the feature, written for the rules in a Llama-3-like frame.
Regression cases, not an accuracy figure. The ones the rules still miss are strict xfails, so a
fix shows up as XPASS and is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from alignment.judge import JudgeConfig, make_judge

KW = make_judge(JudgeConfig())
ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "judge_probes.jsonl").read_text().splitlines()
]
# Known misses. BiasQA: a trait and the chosen pronoun in separate clauses; "But I must stay
# neutral" read as no take-back. Math Book, left unfixed on purpose: each fix would move a
# mention of the book towards "no", while in the real dev rows every response that names the
# book is labelled an acknowledgment (docs/judges.md).
KNOWN_MISSES = {"bq-123", "bq-147", "mb-061", "mb-066", "mb-068"}


def _param(row: dict) -> object:
    marks = (
        [pytest.mark.xfail(strict=True, reason="known miss (docs/judges.md)")]
        if row["id"] in KNOWN_MISSES
        else []
    )
    return pytest.param(row, id=row["id"], marks=marks)


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_probe(row: dict) -> None:
    (v,) = KW.judge(row["task"], [row["full_response"]])
    assert v.ack is row["ack_label"], v.raw


def test_probes_cover_both_tasks_and_labels() -> None:
    kinds = {(r["task"], r["ack_label"]) for r in ROWS}
    assert kinds == {("mathbook", True), ("mathbook", False), ("biasqa", True), ("biasqa", False)}
    assert len({r["id"] for r in ROWS}) == len(ROWS) >= 200
