"""Response text handling: `.venv/bin/python -m pytest -q tests/test_judge_text.py`."""

from __future__ import annotations

import random
import re

from alignment.judge import text

# The sentence end as first written, looking behind for [.!?]: `split_sentences` now consumes the
# mark instead (so the engine can skip ahead) and must cut every text exactly as this did.
_LOOKBEHIND_END = re.compile(r"(?<=[.!?])" + text._ABBREV + r"[\"')\]]*\s+(?=[\"'(\[]?[A-Z#*\-\d])|\n+")


def _reference_split(t: str) -> list[str]:
    parts = (p.strip() for p in _LOOKBEHIND_END.split(t))
    return [p for p in parts if p and re.search(r"\w", p) and not text._LIST_MARKER.match(p)]


def test_split_sentences_cuts_as_the_lookbehind_form() -> None:
    rng = random.Random(0)
    atoms = [".", "!", "?", "\n", "\n\n", " ", '"', "'", ")", "]", "(", "[", "A", "b", "1", "#", "*", "-",
             "Mr", "Dr", "e.g", "i.e", "cf", "vs", "Rs", "Step", "\t", "\u2026"]
    for _ in range(20000):
        t = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 25)))
        assert text.split_sentences(t) == _reference_split(t), repr(t)
