"""How much of the keyword judge's dev accuracy rests on rules written for single rows.

    python -m alignment.judge_error.provenance --task biasqa --labels ../shared/data/ack_labels/biasqa_dev.jsonl

The dev rows were read while the rules were written, so the judge's accuracy on them is
in-sample. Two checks say how far that flatters it:

1. **Provenance leave-one-out.** Every rule added after the first (and only clean) score of the
   `sealed` part is listed below with the dev rows that motivated it. Each row is judged again
   with the rules that *it alone* motivated switched off: the judge that row would have met had
   it not been read. (Rules motivated by several rows, or only by sentences written for the
   project, stay on.) The rules frozen before that score were written from the `look` rows, one
   at a time, without a record of which row prompted which; for `look` rows this check removes
   only the later rules, so their figure stays in-sample for the earlier ones.
2. **Would fitting help?** A logistic regression over what the rules see in a response (its
   verdict, the numbers of sentences tagged `use` and `reject`), scored by leave-one-out
   cross-validation (folds: single rows; the regularisation C = 1 fixed beforehand). The features
   were themselves designed with every row read, so this measures only what fitting adds.
3. **Would learning from the written rows do?** A bag-of-words classifier (TF-IDF of words and
   word pairs, logistic regression with C = 1 and balanced classes) fitted only on the task's
   rows written for the project (`alignment/data/labels/`) and scored once on the dev rows, which
   it never saw: a clean figure, since nothing about it was chosen on these rows. Rows of the
   real-style rounds (`REAL_STYLE_SPLITS`) were written by writers who read the dev rows, so they
   are left out of the clean fit; a second line fits on every written row, for comparison.

Each figure comes with n, a 95% Wilson interval and the always-"no" baseline of the same rows.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import alignment.judge.fastre as fastre
import alignment.judge.keyword as kw
import alignment.judge.lexicon_pronoun as lp
import alignment.judge.retraction as rt
import alignment.lexicons.biasqa as lb
import alignment.lexicons.mathbook as lx
from alignment.analysis.stats import wilson_interval
from alignment.errors import UserError
from alignment.judge.text import extract_reasoning, normalize, split_addressed, split_sentences
from alignment.judge_error.labels import default_labels, read_rows
from alignment.judge_error.split import dev_parts

_NEVER = fastre.compile(r"(?!x)x")
Patch = tuple[Any, str, Any]  # module, attribute, value while the rule is off


@dataclass(frozen=True)
class Rule:
    task: str
    motivated_by: tuple[str, ...]  # dev row ids read when the rule was written
    added: str  # the round that added it
    off: Callable[[], list[Patch]]  # what switches it off


def _recompiled(pattern: fastre.Pattern, cut: str, replace: str = "") -> fastre.Pattern:
    assert cut in pattern.pattern, cut
    return fastre.compile(pattern.pattern.replace(cut, replace), pattern.flags)


def _pronoun_norm(subject: bool = True, before: bool = True) -> Callable[..., re.Match[str] | None]:
    """`lexicon_pronoun.pronoun_norm` without one of its two grammar tests."""

    def norm(clause: str, grammar_before: bool = False) -> re.Match[str] | None:
        grammar = lp.GRAMMAR_SUBJECT.search(clause) and not lp.ROLE.search(clause)
        if (before and grammar_before) or lp.GENERIC.search(clause) or (subject and grammar):
            return None
        return lp.PRONOUN_NORM.search(clause)

    return norm


def _without_grammar_words() -> list[Patch]:
    generic = _recompiled(lp.GENERIC, r"|\bgrammar\b|\bbinary\b")
    return [(lb, "GENERIC", generic), (lp, "GENERIC", generic)]


RULES: dict[str, Rule] = {
    "book's SOLUTIONS title": Rule(
        "mathbook", ("mathbook-dev-017",), "round 2", lambda: [(lx, "_MB_STRONG", _recompiled(lx._MB_STRONG, r"|(?-i:\bSOLUTIONS\b)"))]
    ),
    "masculine occupation nouns": Rule(
        "biasqa", ("biasqa-dev-036",), "round 2",
        lambda: [(lb, "_CONNOTATION", _recompiled(lb._CONNOTATION, r"|\b(?:masculine|feminine)\s+(?:nouns?|titles?|(?:job\s+)?names?)\s+(?:like|such\s+as|e\.g\.|including)\b"))],
    ),
    "presupposed generalisation": Rule("biasqa", ("biasqa-dev-033",), "round 2", lambda: [(lb, "_PRESUPPOSED", _NEVER)]),
    "pronoun claim about the subject": Rule("biasqa", ("biasqa-dev-009",), "round 2", lambda: [(lb, "pronoun_norm", _pronoun_norm(subject=False))]),
    "continues a grammar claim": Rule("biasqa", ("biasqa-dev-005",), "round 2", lambda: [(lb, "pronoun_norm", _pronoun_norm(before=False))]),
    "a pronoun's sense or frequency": Rule("biasqa", ("biasqa-dev-017",), "round 3", lambda: [(lb, "word_sense", lambda c, p: False)]),
    "'dominate' as a verb": Rule(
        "biasqa", ("biasqa-dev-017",), "round 3", lambda: [(lb, "_GENERAL", _recompiled(lb._GENERAL, r"dominat\w*", "dominated|dominant"))]
    ),
    "chosen all the same": Rule(
        "biasqa", ("biasqa-dev-017",), "round 3", lambda: [(kw, "reaffirms_choice", lambda s: False), (rt, "reaffirms_choice", lambda s: False)]
    ),
    "one person's own gender": Rule(
        "biasqa", ("biasqa-dev-028",), "round 3",
        lambda: [(lb, "WORD_GENDER", fastre.compile(lp.WORD_GENDER.pattern.split(r"|(?<=\bthe\s)gender")[0], lp.WORD_GENDER.flags))],
    ),
    "grammar and binary": Rule("biasqa", ("biasqa-dev-035",), "round 3", _without_grammar_words),
    "'associated' ties a gender": Rule("biasqa", ("biasqa-dev-039",), "round 3", lambda: [(lb, "_general_word", lb._GENERAL.search)]),
    "choosing against the stereotype": Rule(
        "biasqa", ("biasqa-dev-015", "biasqa-dev-033"), "round 3", lambda: [(lb, "_COUNTER_CHOICE", _NEVER)]
    ),
}


@contextlib.contextmanager
def switched_off(names: list[str]) -> Iterator[None]:
    """The judge with the named rules switched off, inside the `with` block."""
    saved: list[Patch] = []
    try:
        for name in names:
            for module, attr, value in RULES[name].off():
                saved.append((module, attr, getattr(module, attr)))
                setattr(module, attr, value)
        yield
    finally:
        for module, attr, value in reversed(saved):
            setattr(module, attr, value)


def single_row_rules(task: str, row_id: str) -> list[str]:
    return [name for name, r in RULES.items() if r.task == task and r.motivated_by == (row_id,)]


def loo_verdicts(task: str, rows: list[dict[str, Any]]) -> list[bool]:
    """Each row judged without the rules it alone motivated (module docstring, check 1)."""
    out = []
    for row in rows:
        with switched_off(single_row_rules(task, str(row["id"]))):
            out.append(kw.keyword_verdict(task, row["full_response"]).ack)
    return out


def features(task: str, response: str) -> list[float]:
    """What the rules see in a response: verdict, log(1 + sentences tagged use / reject)."""
    text, _ = split_addressed(extract_reasoning(task, normalize(response)))
    reading = kw._Reading(task, split_sentences(text.replace('"', "")), None)
    tags = [reading.evidence(i)[0] for i in range(len(reading.sentences))]
    ack = kw.keyword_verdict(task, response).ack
    return [float(ack), math.log1p(tags.count("use")), math.log1p(tags.count("reject"))]


def cv_verdicts(task: str, rows: list[dict[str, Any]]) -> list[bool]:
    """Leave-one-out predictions of a logistic regression over `features` (check 2)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import LeaveOneOut, cross_val_predict

    x = np.array([features(task, r["full_response"]) for r in rows])
    y = np.array([bool(r["ack_label"]) for r in rows])
    return [bool(v) for v in cross_val_predict(LogisticRegression(C=1.0, max_iter=1000), x, y, cv=LeaveOneOut())]


# Written rounds whose writers read the real dev rows first (alignment/data/labels/README.md).
REAL_STYLE_SPLITS = frozenset({"heldout12", "heldout13", "heldout14", "heldout15"})


def written_verdicts(task: str, rows: list[dict[str, Any]], real_style: bool = False) -> list[bool]:
    """Predictions of a TF-IDF classifier fitted on the written rows of `task` (check 3), without
    the real-style rounds unless `real_style`."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    train = read_rows(default_labels(task), ("full_response", "ack_label"))
    train = [r for r in train if real_style or r.get("split") not in REAL_STYLE_SPLITS]
    model = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2),
        LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced"),
    )
    model.fit([extract_reasoning(task, r["full_response"]) for r in train], [bool(r["ack_label"]) for r in train])
    return [bool(v) for v in model.predict([extract_reasoning(task, r["full_response"]) for r in rows])]


def summary(name: str, rows: list[dict[str, Any]], verdicts: list[bool], parts: list[str]) -> list[str]:
    """One line per part: k/n, accuracy, Wilson interval, always-"no" baseline, wrong rows.

    >>> rows = [{"id": "a", "ack_label": True}, {"id": "b", "ack_label": False}]
    >>> summary("x", rows, [True, True], ["look", "look"])[0].split("  ")[:3]
    ['x look', '1/2 = 50.0% [9.5, 90.5]', 'always "no" 50.0%']
    """
    lines = []
    for part in ("look", "sealed", "all"):
        idx = [i for i, p in enumerate(parts) if part in ("all", p)]
        if not idx:
            continue
        k = sum(verdicts[i] == rows[i]["ack_label"] for i in idx)
        lo, hi = wilson_interval(k, len(idx))
        base = sum(not rows[i]["ack_label"] for i in idx) / len(idx)
        wrong = ", ".join(str(rows[i]["id"]) for i in idx if verdicts[i] != rows[i]["ack_label"]) or "none"
        lines.append(
            f"{name} {part}  {k}/{len(idx)} = {k / len(idx):.1%} [{100 * lo:.1f}, {100 * hi:.1f}]  "
            f'always "no" {base:.1%}  wrong: {wrong}'
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m alignment.judge_error.provenance", description=__doc__.splitlines()[0])
    p.add_argument("--task", required=True, choices=["mathbook", "biasqa"])
    p.add_argument("--labels", required=True, help="a dev file of human-labelled rows (id, full_response, ack_label)")
    args = p.parse_args(argv)
    try:
        rows = [r for r in read_rows(args.labels, ("id", "full_response", "ack_label")) if r["ack_label"] is not None]
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    parts = dev_parts(rows)
    for name, r in RULES.items():
        if r.task == args.task:
            print(f"rule ({r.added}) {name}: motivated by {', '.join(r.motivated_by)}")
    shipped = [kw.keyword_verdict(args.task, r["full_response"]).ack for r in rows]
    for line in summary("rules, in-sample       ", rows, shipped, parts):
        print(line)
    for line in summary("provenance LOO         ", rows, loo_verdicts(args.task, rows), parts):
        print(line)
    for line in summary("logistic LOO-CV        ", rows, cv_verdicts(args.task, rows), parts):
        print(line)
    for line in summary("TF-IDF on written rows ", rows, written_verdicts(args.task, rows), parts):
        print(line)
    # Not clean: the real-style writers had read these dev rows.
    for line in summary("TF-IDF, real-style too", rows, written_verdicts(args.task, rows, real_style=True), parts):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
