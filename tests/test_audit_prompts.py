"""`.venv/bin/python -m pytest -q tests/test_audit_prompts.py`: prompt-level transformations keep the
problem, the answer and the leak, and change only their presentation."""

from __future__ import annotations

import re

import pytest

from alignment.audit.prompts import book_blocks, transform_prompt
from alignment.tasks import TASKS, TaskConfig
from alignment.tasks.answer import LETTERS, parse_answer


def _bodies(template: str) -> list[str]:
    return sorted(b.group(0).split(": ", 1)[1] for b in book_blocks(template))


def _query_number(row: dict) -> int:
    """The book number of the query problem (the block whose text is the query question)."""
    question = row["query"].split("=== Your question ===\n")[1].split("\nOptions: ")[0]
    return next(int(b.group(1)) for b in book_blocks(row["template"]) if b.group(0).split(": ", 1)[1].startswith(question))


def _solution_number(text: str) -> int:
    return int(re.match(r"Solution to Problem (\d+):", text).group(1))


@pytest.fixture(scope="module")
def mathbook_rows() -> list[dict]:
    return TASKS.get("mathbook").build(TaskConfig(n_examples=30))


def test_book_order_renumbers_everything_consistently(mathbook_rows) -> None:
    for row in mathbook_rows:
        new = transform_prompt("book_order", row, mathbook_rows).row
        assert new["query"] != row["query"] and _bodies(new["template"]) == _bodies(row["template"])
        leak = next(s for s in new["sources"] if s["protected"])
        # The leaked solution still names the query problem's (new) number.
        assert _solution_number(leak["original"]) == _query_number(new)
        assert [int(b.group(1)) for b in book_blocks(new["template"])] == [1, 2, 3]
        assert new["answer"] == row["answer"] and new["options"] == row["options"]


def test_the_distractor_adds_one_unsolved_problem(mathbook_rows) -> None:
    for row in mathbook_rows:
        new = transform_prompt("book_distractor", row, mathbook_rows).row
        before, after = _bodies(row["template"]), _bodies(new["template"])
        (extra,) = [b for b in after if b not in before]
        assert len(after) == 4 and "four practice problems" in new["query"]
        number = next(int(b.group(1)) for b in book_blocks(new["template"]) if b.group(0).endswith(extra))
        assert f"Solution to Problem {number}:" not in new["query"] and f"Solution to Problem {number}:" not in new["cf_query"]
        assert _solution_number(next(s for s in new["sources"] if s["protected"])["original"]) == _query_number(new)


def test_option_order_remaps_letters_in_query_book_and_solution(mathbook_rows) -> None:
    for row in mathbook_rows:
        t = transform_prompt("option_order", row, mathbook_rows)
        new, omap = t.row, t.option_map
        assert sorted(omap) == list(range(5)) and list(omap) != list(range(5))
        assert [row["options"][i] for i in omap] == new["options"]
        assert new["options"][new["answer"]] == row["options"][row["answer"]]
        leak = next(s for s in new["sources"] if s["protected"])["original"]
        assert parse_answer(leak, new["options"]) == new["answer"]
        assert f"Answer: ({LETTERS[new['answer']]})" in leak


def test_biasqa_offers_option_order_and_the_someone_participant() -> None:
    rows = TASKS.get("biasqa").build(TaskConfig(name="biasqa", n_examples=20))
    for row in rows:
        t = transform_prompt("option_order", row, rows)
        assert t.row["options"] == row["options"][::-1] and t.option_map == (1, 0)
        assert t.row["options"][t.row["answer"]] == row["options"][row["answer"]]
        p = transform_prompt("participant", row, rows)
        assert p is not None and "someone" in p.row["query"].lower() and "someone" in p.row["cf_query"].lower()
        assert p.row["query"].replace("someone", "").replace("Someone", "") != row["query"]
        assert transform_prompt("book_order", row, rows) is None


def test_math_book_has_no_participant(mathbook_rows) -> None:
    assert transform_prompt("participant", mathbook_rows[0], mathbook_rows) is None


def test_real_data_rows_take_every_transformation(shared_data) -> None:
    cfg = TaskConfig(source="local", data_dir=str(shared_data / "aqua_rat"), splits=["dev"], n_examples=40)
    rows = TASKS.get("mathbook").build(cfg)
    for name in ("book_order", "book_distractor", "option_order"):
        done = [t for r in rows if (t := transform_prompt(name, r, rows)) is not None]
        # An AQuA solution whose answer letter cannot be remapped with certainty is skipped.
        assert len(done) >= 0.75 * len(rows), (name, len(done))  # option_order: 223 of the 254 dev rows
        for t in done:
            assert t.row["options"][t.row["answer"]] in t.row["query"]
    wino = TASKS.get("biasqa").build(TaskConfig(name="biasqa", source="local", data_dir=str(shared_data / "winogender"), n_examples=40))
    someone = [t for r in wino if (t := transform_prompt("participant", r, wino)) is not None]
    assert len(someone) == len(wino)
