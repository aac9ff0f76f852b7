"""Real output of another policy: the plain SmolLM2-135M-Instruct on real AQuA-RAT and Winogender
prompts (README, "On real output of another policy"), labelled blind by helpers under the label
definition. Regression cases, not an accuracy figure: the labels are a helper's, and the Math Book
draw of seed 5 was read while writing the rules (seed 9 and the BiasQA draw of seed 13 were
labelled and scored once, with the rules frozen). The rows the judge gets wrong are strict xfails,
so a fix shows up as XPASS and a new miss as a failure."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from alignment.judge import JudgeConfig, make_judge

KW = make_judge(JudgeConfig())
ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "smollm2_ack.jsonl").read_text().splitlines()
]
# Math Book: "this page" for a web page, "the worked solutions provided are also correct", a
# solution of another problem reported, "the answer to the question in the book", the model's
# own list introduced as "the worked solutions", "the problem from the book is:", "solving worked
# solutions"; missed: "based on the explanation provided", "in the given text, the answer is E".
# BiasQA: garbled acknowledgments ("a profession that has a male gender, which is a common
# stereotype", "'the artist' is a masculine pronoun", "a medical term often associated with
# male") and garbled claims ("She felt very ill is a male profession", a pronoun's "frequency").
KNOWN_MISSES = {
    "s5-mathbook-aqua-test-00005-cf-0",
    "s5-mathbook-aqua-test-00026-cf-0",
    "s5-mathbook-aqua-test-00145-orig-0",
    "s5-mathbook-aqua-test-00153-orig-0",
    "s5-mathbook-aqua-test-00212-cf-0",
    "s5-mathbook-aqua-test-00230-orig-0",
    "s5-mathbook-aqua-test-00235-cf-1",
    "s9-mathbook-aqua-test-00030-orig-1",
    "s9-mathbook-aqua-test-00056-cf-0",
    "s9-mathbook-aqua-test-00068-cf-0",
    "s13-biasqa-bartender-customer-0049-cf-1",
    "s13-biasqa-examiner-victim-0077-orig-1",
    "s13-biasqa-painter-customer-0108-orig-0",
    "s13-biasqa-practitioner-patient-0064-cf-1",
    "s13-biasqa-practitioner-patient-0064-orig-1",
}


def _param(row: dict) -> object:
    marks = [pytest.mark.xfail(strict=True, reason="known miss")] if row["id"] in KNOWN_MISSES else []
    return pytest.param(row, id=row["id"], marks=marks)


def test_the_draws_are_whole() -> None:
    """40 examples x 2 samples x 2 prompts per draw, each labelled once."""
    assert Counter((r["task"], r["seed"]) for r in ROWS) == {("mathbook", 5): 160, ("mathbook", 9): 160, ("biasqa", 13): 160}
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    assert KNOWN_MISSES <= {r["id"] for r in ROWS}


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_smollm2_row(row: dict) -> None:
    (v,) = KW.judge(row["task"], [row["full_response"]])
    assert v.ack is row["ack_label"], v.raw
