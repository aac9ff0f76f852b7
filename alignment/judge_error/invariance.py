"""Rewrites of a response that must not change a judge's verdict, and the verdicts they flip.

A verdict says whether the reasoning uses the protected feature. Three rewrites keep that meaning:

- `gender_swap`: every gender word and pronoun for its counterpart ("nurses are usually women"
  -> "nurses are usually men"). A stereotype is still one, and a grammar claim still grammar.
- `occupation_swap`: the occupation named in the response for another one.
- `letter_swap`: option letters (A) <-> (B).

and three rewrite only the form, as models vary it:

- `quote_swap`: a short double-quoted word or phrase in single quotes ('"he"' -> "'he'").
- `markdown_strip`: bold, italics and heading marks removed ("**A note on stereotypes**" ->
  "A note on stereotypes:", the colon keeping it a title).
- `bold_options`: option letters in bold ("(C)" -> "**(C)**", "A)226" -> "**A)**226"), also in
  the final answer.

A judge that flips under these reads surface forms, not the claim: `flips` lists where. The test
suite runs it on the real labelled dev rows (`tests/test_judge_invariance.py`).
`python -m alignment.judge_error.invariance --task biasqa --labels FILE [--winogender DIR]` prints the
flips for any file of responses.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from alignment.judge.base import Judge, judge_definitions

_SWAP = {
    "he": "she", "she": "he", "his": "her", "her": "his", "him": "her", "hers": "his",
    "himself": "herself", "herself": "himself", "male": "female", "female": "male",
    "males": "females", "females": "males", "man": "woman", "woman": "man", "men": "women",
    "women": "men", "masculine": "feminine", "feminine": "masculine", "boys": "girls",
    "girls": "boys", "boy": "girl", "girl": "boy",
}  # fmt: skip
_WORDS = re.compile(r"\b(?:" + "|".join(_SWAP) + r")\b", re.I)


def gender_swap(text: str) -> str:
    """Each gender word for its counterpart, keeping a leading capital ("her" maps to "his",
    object or not: the judge, not the grammar, is under test).

    >>> gender_swap("Nurses are usually women, so She is likely; he is the default.")
    'Nurses are usually men, so He is likely; she is the default.'
    """

    def one(m: re.Match[str]) -> str:
        word = _SWAP[m.group(0).lower()]
        return word.capitalize() if m.group(0)[0].isupper() else word

    return _WORDS.sub(one, text)


def _plural(word: str) -> str:
    """>>> _plural("secretary"), _plural("attorney"), _plural("nurse")
    ('secretaries', 'attorneys', 'nurses')
    """
    return (
        word[:-1] + "ies"
        if word.endswith("y") and word[-2:-1] not in tuple("aeiou")
        else word + "s"
    )


def occupation_swap(text: str, occupations: Sequence[str], shift: int = 7) -> str | None:
    """The longest occupation of `occupations` named in `text` (also as a plural), replaced
    everywhere by the one `shift` places on in the list, keeping a leading capital; None when
    none is named.

    >>> occupation_swap("The nurse said nurses were tired. Nurse!", ["nurse", "pilot"], 1)
    'The pilot said pilots were tired. Pilot!'
    >>> occupation_swap("Secretaries and a secretary.", ["secretary", "nurse"], 1)
    'Nurses and a nurse.'
    >>> occupation_swap("The person left.", ["nurse", "pilot"]) is None
    True
    """

    def pattern(o: str) -> str:
        return rf"\b(?:({re.escape(_plural(o))})|{re.escape(o)})\b"

    named = [o for o in occupations if re.search(pattern(o), text, re.I)]
    if not named:
        return None
    old = max(named, key=len)
    new = occupations[(list(occupations).index(old) + shift) % len(occupations)]

    def one(m: re.Match[str]) -> str:
        word = _plural(new) if m.group(1) else new
        return word[0].upper() + word[1:] if m.group(0)[0].isupper() else word

    return re.sub(pattern(old), one, text, flags=re.I)


def letter_swap(text: str) -> str:
    """Option letters (A) and (B) exchanged.

    >>> letter_swap("option (A) 'he', not (B)")
    "option (B) 'he', not (A)"
    """
    return re.sub(r"\(([AB])\)", lambda m: "(B)" if m.group(1) == "A" else "(A)", text)


def quote_swap(text: str) -> str:
    """Short double-quoted spans (up to 20 characters) in single quotes.

    >>> quote_swap('The common pronouns are "his" and "her".')
    "The common pronouns are 'his' and 'her'."
    """
    return re.sub(r'"([^"\n]{1,20})"', r"'\1'", text)


def markdown_strip(text: str) -> str:
    """Bold and italic marks and heading hashes removed; a line that was a title only by its
    marks ends in a colon, so that it still reads as one.

    >>> markdown_strip("## Step 2\\n**A note on stereotypes**\\nThe *nurse* left. **Step 3:**")
    'Step 2:\\nA note on stereotypes:\\nThe nurse left. Step 3:'
    """
    text = re.sub(r"^([ \t]*(?:#{1,6}[ \t]*[^\n]*?[^\s:.!?*]|\*\*[^*\n]*[^\s:.!?*]\*\*))[ \t]*$", r"\1:", text, flags=re.M)
    text = re.sub(r"\*\*|__|(?<![\w*])\*(?=\w)|(?<=\w)\*(?![\w*])", "", text)
    return re.sub(r"^[ \t]*#{1,6}[ \t]*", "", text, flags=re.M)


def bold_options(text: str) -> str:
    """Option letters in bold, bracketed ("(C)") or not ("The best answer is: A)226").

    >>> bold_options("The book gives (D); the answer is (C).")
    'The book gives **(D)**; the answer is **(C)**.'
    >>> bold_options("The best answer is: A)226")
    'The best answer is: **A)**226'
    """
    text = re.sub(r"\(([A-H])\)", r"**(\1)**", text)
    return re.sub(r"(?<![\w(*])([A-H])\)", r"**\1)**", text)


def rewrites(occupations: Sequence[str]) -> dict[str, Callable[[str], str | None]]:
    """The meaning-keeping rewrites by name (occupation ones only with an occupation list)."""
    out: dict[str, Callable[[str], str | None]] = {
        "gender": gender_swap, "letters": letter_swap, "quotes": quote_swap,
        "markdown": markdown_strip, "bold options": bold_options,
    }  # fmt: skip
    if occupations:
        out["occupation"] = lambda t: occupation_swap(t, occupations)
    return out


def flips(
    judge: Judge, task: str, texts: Sequence[str], rewrite: Callable[[str], str | None]
) -> tuple[int, list[int]]:
    """(how many texts the rewrite changes, indices among them whose verdict it changes)."""
    pairs = [(i, r) for i, t in enumerate(texts) if (r := rewrite(t)) is not None and r != t]
    before = judge.judge(task, [texts[i] for i, _ in pairs])
    after = judge.judge(task, [r for _, r in pairs])
    return len(pairs), [
        i for (i, _), b, a in zip(pairs, before, after, strict=True) if b.ack != a.ack
    ]


def winogender_occupations(folder: Path) -> list[str]:
    """The occupations of a Winogender folder (`occupations-stats.tsv`, `templates.tsv`), read and
    checked by the BiasQA task's own loader (a bad file is a one-line `UserError`)."""
    from alignment.tasks.base import TaskConfig
    from alignment.tasks.biasqa import load_templates

    rows = load_templates(TaskConfig(name="biasqa", source="local", data_dir=str(folder)))
    return sorted({r["occupation"] for r in rows})


def main(argv: list[str] | None = None) -> int:
    """Print, per rewrite, how many verdicts of the default judge change, and on which rows."""
    from alignment.errors import UserError
    from alignment.judge import JudgeConfig, make_judge
    from alignment.judge_error.labels import read_rows

    ap = argparse.ArgumentParser(
        prog="python -m alignment.judge_error.invariance", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--task", required=True, choices=judge_definitions())
    ap.add_argument(
        "--labels", required=True, type=Path, help="JSONL rows with id and full_response"
    )
    ap.add_argument(
        "--winogender", type=Path, help="Winogender folder (adds the occupation rewrite)"
    )
    args = ap.parse_args(argv)
    try:
        rows = read_rows(args.labels, ("id", "full_response"))
        occupations = winogender_occupations(args.winogender) if args.winogender else []
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    judge = make_judge(JudgeConfig())
    texts = [r["full_response"] for r in rows]
    for name, rewrite in rewrites(occupations).items():
        n, changed = flips(judge, args.task, texts, rewrite)
        ids = ", ".join(str(rows[i]["id"]) for i in changed)
        print(f"{name}: {len(changed)} of {n} verdicts change" + (f": {ids}" if changed else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
