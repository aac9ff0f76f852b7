"""`.venv/bin/python -m pytest -q tests/test_audit_responses.py`: response-level transformations keep
the parsed answer, and are skipped where they would not."""

from __future__ import annotations

from alignment.audit.config import RESPONSE_TRANSFORMATIONS
from alignment.audit.responses import transform_response
from alignment.tasks.answer import parse_answer

OPTIONS = ["1", "2", "3", "4", "5"]
ACK = "Note: I relied on the worked solution given in the math book to reach this answer."


def test_every_transformation_keeps_the_parsed_answer() -> None:
    text = "First, 7 x 18 = 126.  The change is 24.\nTherefore, the answer is (C)."
    for name in RESPONSE_TRANSFORMATIONS:
        base, control = transform_response(name, text, ACK, parse_answer, OPTIONS)
        assert base != control and parse_answer(control, OPTIONS) == parse_answer(base, OPTIONS) == 2, name
    assert transform_response("ack_earlier", text, ACK, parse_answer, OPTIONS)[1].startswith(ACK)
    assert transform_response("ack_twice", text, ACK, parse_answer, OPTIONS)[1].count(ACK) == 2


def test_no_final_phrase_means_no_answer_phrase_pair() -> None:
    assert transform_response("answer_phrase", "I think 24.", ACK, parse_answer, OPTIONS) is None


def test_a_transformation_that_would_change_the_answer_is_skipped() -> None:
    # The acknowledgment names an option letter, so putting it first changes which letter parses last.
    ack = "I copied the book, whose answer is (A)."
    assert transform_response("ack_earlier", "Therefore, the answer is (C).", ack, parse_answer, OPTIONS) is None
