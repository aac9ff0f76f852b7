"""The keyword judge's pattern prefilter: `.venv/bin/python -m pytest -q tests/test_judge_fastre.py`.

A prefiltered pattern must give exactly the answers of the plain compiled pattern (it may only
skip searches that cannot match), and every judge pattern must be digit-blind, because the
keyword judge reads each sentence shape (digits written as 0) once.
"""

from __future__ import annotations

import importlib
import random
import re
from pathlib import Path

import pytest

from alignment.judge import fastre

# The rule modules `keyword.rules_id()` hashes (every lexicon is found, not listed).
_JUDGE_DIR = Path(fastre.__file__).parent
_MODULES = [
    importlib.import_module(f"alignment.judge.{p.stem}")
    for p in [_JUDGE_DIR / "keyword.py", *sorted(_JUDGE_DIR.glob("lexicon*.py")), _JUDGE_DIR / "text.py"]
]
PATTERNS = {
    f"{m.__name__.rsplit('.', 1)[-1]}.{name}": p
    for m in _MODULES
    for name, p in vars(m).items()
    if isinstance(p, fastre.Pattern)
}


def _fuzz_texts(n: int, seed: int = 0) -> list[str]:
    """Texts made of the patterns' own literals in random case, with separators, digits and the
    non-ASCII letters that fold to ASCII ones: near misses and hits for every prefilter."""
    rng = random.Random(seed)
    words = sorted({w for p in PATTERNS.values() for w in (p._lits or ())})
    glue = [" ", "  ", ", ", ". ", "'", "-", "\n", "(", ")", ":", "3", "42 ", "\u212a", "\u0130", "\u017f", "\u2019", "\u00e9"]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 8)):
            w = rng.choice(words)
            w = "".join(c.upper() if rng.random() < 0.3 else c for c in w)
            parts += [w, rng.choice(glue)]
        out.append("".join(parts).strip())
    return out


def test_prefilter_gives_the_plain_patterns_answers() -> None:
    texts = _fuzz_texts(250) + ["The book's worked solution gives 42, so I take 42.", "Nurses are usually women.", ""]
    for name, p in PATTERNS.items():
        for t in texts:
            want = p.regex.search(t)
            got = p.search(t)
            assert (got and got.span()) == (want and want.span()), (name, t)
            assert p.contains(t) == bool(want), (name, t)
            assert bool(p.match(t)) == bool(p.regex.match(t)), (name, t)
            assert [m.span() for m in p.finditer(t)] == [m.span() for m in p.regex.finditer(t)], (name, t)
            assert p.sub("", t) == p.regex.sub("", t) and p.split(t) == p.regex.split(t), (name, t)


def test_prefilter_skips_texts_without_a_required_literal() -> None:
    p = fastre.compile(r"\b(?:worked|given)\s+solutions?\b", re.I)
    assert p._lits == ("solution",)
    assert not p.possible("3x + 7 = 25, so x = 6") and p.possible("the given SOLUTION")
    assert p.possible("the \u212aelvin sign folds to k")  # such a text always runs the pattern


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_judge_pattern_is_digit_blind(name: str) -> None:
    p = PATTERNS[name]
    assert fastre.digit_blind(p.pattern, p.flags), name
