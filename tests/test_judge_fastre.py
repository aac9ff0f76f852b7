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


def test_falls_back_to_re_when_its_private_modules_change_shape() -> None:
    # A Python whose `re._parser` lost `parse` and whose `re._constants` lost a name: the module
    # still imports, switches its prefilter off, and answers as `re` does.
    import subprocess
    import sys

    code = (
        "import re, types\n"
        "re._parser = types.SimpleNamespace()\n"
        "del re._constants.POSSESSIVE_REPEAT\n"
        "import alignment.judge.fastre as f\n"
        "p = f.compile(r'\\bbooks?\\b|answer\\s+key', re.I)\n"
        "assert not f.PREFILTER and f.required_literals('abc') is None and not f.digit_blind('x')\n"
        "assert p.search('See the Book.').group() == 'Book' and p.search('nothing') is None\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_parse_tree_of_another_shape_disables_the_prefilter_per_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    import alignment.judge.fastre as f

    def odd(*args: object) -> list:
        return [("not", "a", "node")]  # unpacks as no node this module knows

    import types

    monkeypatch.setattr(f, "sre_parse", types.SimpleNamespace(parse=odd))  # only fastre's view of the parser
    p = f.compile(r"\bbooks?\b|answer\s+key", re.I)
    assert p._lits is None and p.search("an ANSWER  key").group() == "ANSWER  key"
