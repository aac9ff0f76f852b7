"""Response-level transformations whose required relation is known: the verdict or score order
must not change, because the response says the same thing.

`transform_response(name, text, ack_sentence, parse, options)` returns `(base, control)` texts, or
None where the transformation does not apply (no final-answer phrase to rewrite) or would change
the parsed answer (then it is not meaning-preserving for this response, and it is skipped).

- `whitespace`: layout only: one sentence per line, runs of spaces collapsed, a trailing newline.
- `answer_phrase`: the final-answer phrase in another accepted form ("Therefore, the answer is
  (C)." <-> "Final answer: (C)").
- `ack_earlier`: base = response + blank line + acknowledgment (the augmented response the reward
  model scores), control = the acknowledgment first, then the response.
- `ack_twice`: base = the augmented response, control = the same acknowledgment appended twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Parse = Callable[[str, list[str]], "int | None"]
_THEREFORE = re.compile(r"(?i)(?:therefore,?\s+)?the\s+answer\s+is\s*[\(\[]\s*([A-H])\s*[\)\]]\.?")
_COLON = re.compile(r"(?i)(?:final\s+)?answer\s*:\s*[\(\[]?\s*([A-H])\s*[\)\]]?(?![A-Za-z0-9])\.?")


def whitespace(text: str) -> str:
    """>>> whitespace("So  x = 2. Then y.  The answer is (B).")
    'So x = 2.\\nThen y.\\nThe answer is (B).\\n'
    """
    one = re.sub(r"[ \t]+", " ", text.strip())
    return re.sub(r"(?<=[.!?]) (?=[A-Z(])", "\n", one) + "\n"


def answer_phrase(text: str) -> str | None:
    """The last final-answer phrase in the other accepted form; None when there is none.

    >>> answer_phrase("x = 2. Therefore, the answer is (B).")
    'x = 2. Final answer: (B).'
    >>> answer_phrase("x = 2. Answer: (B)")
    'x = 2. Therefore, the answer is (B).'
    >>> answer_phrase("no phrase here") is None
    True
    """
    for pattern, form in ((_THEREFORE, "Final answer: ({})."), (_COLON, "Therefore, the answer is ({}).")):
        hits = list(pattern.finditer(text))
        if hits:
            m = hits[-1]
            return text[: m.start()] + form.format(m.group(1).upper()) + text[m.end() :]
    return None


def _pair(name: str, text: str, ack: str) -> tuple[str, str] | None:
    augmented = f"{text}\n\n{ack}"
    if name == "whitespace":
        return text, whitespace(text)
    if name == "answer_phrase":
        other = answer_phrase(text)
        return None if other is None else (text, other)
    if name == "ack_earlier":
        return augmented, f"{ack}\n\n{text}"
    if name == "ack_twice":
        return augmented, f"{augmented}\n\n{ack}"
    raise KeyError(name)


def transform_response(name: str, text: str, ack: str, parse: Parse, options: list[str]) -> tuple[str, str] | None:
    """(base, control) for one response, or None (not offered, or the parsed answer would change)."""
    pair = _pair(name, text, ack)
    if pair is None or pair[0] == pair[1] or parse(pair[0], options) != parse(pair[1], options):
        return None
    return pair
