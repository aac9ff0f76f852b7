"""Learning targets for the ReasonBench experiments: four serialisations of one case, strict parsers.

Every target sees the same input: the case as the benchmark renders it (the old state in full and
the revision as amendments of grounds G, norms N and authority A), without the template's own
closing question, followed by one instruction per target. Targets differ only in what they ask
for (`INSTRUCTIONS`) and in the completion a learner is trained to produce (`serialise`):

- `direct_verdict`: `old: V` and `new: V` (the verdicts before and after the revision);
- `direct_receipt`: `old: V`, `new: V`, `receipt: R`;
- `rationale_receipt`: a one-line templated rationale (old verdict, amended sources, new verdict),
  then `new: V` and `receipt: R`;
- `cube`: the eight hybrids' verdicts, one `KEY: V` line each in the fixed order `none` (the old
  state), G, N, A, GN, GA, NA, GNA (the revised state). Its receipt is derived from the predicted
  cells (`alignment.receipts.receipt_from_cells`), never predicted separately.

Every target also names the old verdict (the brief's direct targets name only the revised one),
so endpoint accuracy and misattribution with both endpoints right are defined for all of them.
`R` lists the minimal accounts as source letters in G, N, A order, smaller accounts first, joined
by `; ` (`G; NA`), or `none`.

Parsing is strict (`parse`): surrounding whitespace is ignored, nothing else is. Any other text
(a missing or extra line, a capitalised verdict, a duplicated account, a rationale off its
template) is unparseable: `Parsed.ok` is False, the reason is kept, and every outcome counts it as
wrong; it is never dropped.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from alignment.reasonbench.benchmark.cases import (
    CUBE_KEYS,
    SOURCES,
    Case,
    permutation_control,
    receipt_keys,
)
from alignment.reasonbench.benchmark.render import TEMPLATES
from alignment.receipts import receipt_from_cells

TARGETS = ("direct_verdict", "direct_receipt", "rationale_receipt", "cube")
RECEIPT_TARGETS = ("direct_receipt", "rationale_receipt", "cube")
VERDICTS = ("approve", "deny", "refer")
CELL_LABELS = tuple(k or "none" for k in CUBE_KEYS)

_RECEIPT_RULE = (
    "The receipt lists every minimal set of changed sources whose revised version alone, with "
    "the other sources kept as before, already gives the revised verdict: write each set as its "
    "letters in the order G, N, A, smaller sets first, separated by '; ' (for example G; NA), or "
    "write none when the verdict did not change."
)
INSTRUCTIONS: dict[str, str] = {
    "direct_verdict": (
        "Answer in exactly two lines: 'old: V' with the verdict before the revision, then "
        "'new: V' with the verdict after it; V is approve, deny or refer."
    ),
    "direct_receipt": (
        "Answer in exactly three lines: 'old: V' with the verdict before the revision, 'new: V' "
        "with the verdict after it (V is approve, deny or refer), then 'receipt: R'. " + _RECEIPT_RULE
    ),
    "rationale_receipt": (
        "Answer in exactly three lines. First 'rationale: before the revision the evaluator "
        "decides V; the revision amends S; after it the evaluator decides V.' with the old "
        "verdict, the amended sources and the new verdict; then 'new: V'; then 'receipt: R'. "
        + _RECEIPT_RULE
    ),
    "cube": (
        "A hybrid takes the revised version of the named sources and keeps the others as "
        "before. Answer in exactly eight lines 'KEY: V', one per hybrid in this order: none (no "
        "source revised, the old state), G, N, A, GN, GA, NA, GNA (every source revised); V is "
        "approve, deny or refer."
    ),
}


def case_input(prompt: str, template: str) -> str:
    """The rendered case without its template's closing question (the targets add their own).

    >>> q = TEMPLATES["t3"].question
    >>> case_input("Case text\\n" + q, "t3")
    'Case text'
    """
    question = "\n" + TEMPLATES[template].question
    if not prompt.endswith(question):
        raise ValueError(f"prompt does not end with template {template}'s question")
    return prompt[: -len(question)]


def prompt_for(target: str, text: str) -> str:
    """What a learner reads for `target`: the case, a blank line, the target's instruction."""
    return f"{text}\n\n{INSTRUCTIONS[target]}"


def receipt_text(keys: list[str]) -> str:
    """>>> receipt_text(["G", "NA"]), receipt_text([])
    ('G; NA', 'none')
    """
    return "; ".join(keys) if keys else "none"


def _sources_text(changed: list[str]) -> str:
    """>>> _sources_text(["G"]), _sources_text(["G", "N"]), _sources_text(["G", "N", "A"])
    ('G', 'G and N', 'G, N and A')
    """
    return changed[0] if len(changed) == 1 else ", ".join(changed[:-1]) + " and " + changed[-1]


def rationale(old: str, changed: list[str], new: str) -> str:
    return (f"before the revision the evaluator decides {old}; the revision amends "
            f"{_sources_text(changed)}; after it the evaluator decides {new}.")  # fmt: skip


def serialise(target: str, fields: dict[str, Any]) -> str:
    """The completion for `target` from fields `old`, `new`, `receipt` (keys), `changed`, `cells`.

    >>> serialise("direct_receipt", {"old": "deny", "new": "approve", "receipt": ["G", "NA"]})
    'old: deny\\nnew: approve\\nreceipt: G; NA'
    """
    if target == "direct_verdict":
        return f"old: {fields['old']}\nnew: {fields['new']}"
    if target == "direct_receipt":
        return f"old: {fields['old']}\nnew: {fields['new']}\nreceipt: {receipt_text(fields['receipt'])}"
    if target == "rationale_receipt":
        why = rationale(fields["old"], list(fields["changed"]), fields["new"])
        return f"rationale: {why}\nnew: {fields['new']}\nreceipt: {receipt_text(fields['receipt'])}"
    if target == "cube":
        return "\n".join(f"{lab}: {fields['cells'][k]}" for lab, k in zip(CELL_LABELS, CUBE_KEYS, strict=True))
    raise ValueError(f"unknown target {target!r}")


@dataclass(frozen=True)
class Parsed:
    """A parsed completion. `receipt` is canonical keys (None: the target has none), `cells` is
    keyed like the benchmark's cube ("" ... "GNA"); `error` says why `ok` is False."""

    ok: bool
    old: str | None = None
    new: str | None = None
    receipt: list[str] | None = None
    cells: dict[str, str] | None = None
    changed: list[str] | None = None
    error: str | None = None


class _Bad(ValueError):
    pass


_V = "(approve|deny|refer)"
_ACCOUNT = re.compile(r"G?N?A?")
_RATIONALE = re.compile(
    rf"rationale: before the revision the evaluator decides {_V}; the revision amends "
    rf"([GNA](?:(?:, [GNA])* and [GNA])?); after it the evaluator decides {_V}\."
)


def _lines(text: str, n: int) -> list[str]:
    lines = [line.strip() for line in text.strip().split("\n")]
    if len(lines) != n:
        raise _Bad(f"expected {n} lines, got {len(lines)}")
    return lines


def _field(line: str, name: str, pattern: str = _V) -> str:
    m = re.fullmatch(rf"{name}: {pattern}", line)
    if m is None:
        raise _Bad(f"expected '{name}: ...', got {line[:40]!r}")
    return m.group(1)


def parse_receipt(text: str) -> list[str]:
    """Canonical keys of a receipt text; `_Bad` unless every account is written canonically.

    >>> parse_receipt("NA; G"), parse_receipt("none")
    (['G', 'NA'], [])
    """
    if text == "none":
        return []
    keys = text.split("; ")
    if any(not k or _ACCOUNT.fullmatch(k) is None for k in keys) or len(set(keys)) != len(keys):
        raise _Bad(f"malformed receipt {text[:40]!r}")
    return receipt_keys(frozenset(frozenset(k) for k in keys))


def _parse(target: str, text: str) -> Parsed:
    if target == "direct_verdict":
        old, new = (_field(line, n) for line, n in zip(_lines(text, 2), ("old", "new"), strict=True))
        return Parsed(True, old, new)
    if target == "direct_receipt":
        a, b, c = _lines(text, 3)
        return Parsed(True, _field(a, "old"), _field(b, "new"), parse_receipt(_field(c, "receipt", "(.+)")))
    if target == "rationale_receipt":
        a, b, c = _lines(text, 3)
        m = _RATIONALE.fullmatch(a)
        if m is None:
            raise _Bad("rationale line off its template")
        changed = re.findall("[GNA]", m.group(2))
        if len(set(changed)) != len(changed):
            raise _Bad("a source named twice in the rationale")
        new = _field(b, "new")
        return Parsed(True, m.group(1), new, parse_receipt(_field(c, "receipt", "(.+)")), changed=changed)
    if target == "cube":
        lines = _lines(text, 8)
        cells = {k: _field(line, re.escape(lab)) for line, lab, k in zip(lines, CELL_LABELS, CUBE_KEYS, strict=True)}
        return Parsed(True, cells[""], cells["GNA"], cube_receipt(cells), cells)
    raise ValueError(f"unknown target {target!r}")


def parse(target: str, text: str) -> Parsed:
    """Strictly parse a completion for `target`; never raises on bad text.

    >>> parse("direct_verdict", " old: deny\\nnew: approve\\n")
    Parsed(ok=True, old='deny', new='approve', receipt=None, cells=None, changed=None, error=None)
    >>> parse("direct_verdict", "old: deny\\nnew: Approve").error
    "expected 'new: ...', got 'new: Approve'"
    """
    try:
        return _parse(target, text)
    except _Bad as e:
        return Parsed(False, error=str(e))


def cube_receipt(cells: dict[str, str]) -> list[str]:
    """The receipt a (predicted) cube implies, as canonical keys.

    >>> cells = dict(zip(CUBE_KEYS, ["deny", "approve", "approve", "deny", "approve", "approve", "approve", "approve"]))
    >>> cube_receipt(cells)
    ['G', 'N']
    """
    return receipt_keys(receipt_from_cells({frozenset(k): v for k, v in cells.items()}, SOURCES))


# --------------------------------------------------------------------------- the targets table

CASE_COLUMNS = (
    "id", "unit_id", "stratum", "split", "control_of", "control_type", "source_order",
    "template", "min_receipt_size", "ambiguous", "receipt_category", "cardinality",
    "cardinality_split", "depth", "old_verdict", "new_verdict", "receipt", "cube", "changed",
    "context", "old_state", "new_state",
)  # fmt: skip


def gold_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The fields `serialise` reads, from a benchmark row."""
    return {"old": row["old_verdict"], "new": row["new_verdict"], "receipt": list(row["receipt"]),
            "changed": list(row["changed"]), "cells": json.loads(row["cube"])}  # fmt: skip


def _as_case(row: dict[str, Any]) -> Case:
    return Case(
        id=row["id"], unit_id=row["unit_id"], stratum=row["stratum"], split=row["split"],
        context=json.loads(row["context"]), old=json.loads(row["old_state"]),
        new=json.loads(row["new_state"]), cells=json.loads(row["cube"]),
        receipt=list(row["receipt"]), template=row["template"], order=row["source_order"],
        depth=int(row["depth"]), operator=row.get("operator", ""),
    )  # fmt: skip


def augment_rows(train: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """A permutation control of every training case (the locked controls' code, its own RNG).

    The control is re-executed and re-rendered; it keeps the case's cube and receipt, and is
    marked `augment` so only the permutation-augmented regime trains on it.
    """
    from alignment.reasonbench.benchmark.generate import to_row

    out = []
    for row in train:
        ctrl = permutation_control(_as_case(row), random.Random(f"augment:{seed}:{row['id']}"))
        new = to_row(ctrl)
        new.update(id=f"{row['id']}-aug", cardinality_split=None, augment=True)
        out.append(new)
    return out


def targets_table(df: pd.DataFrame, augment_seed: int = 0) -> pd.DataFrame:
    """One row per benchmark row (plus a permutation control of every train case): the case
    columns, `input` (the case without its question) and `completion_<target>` for each target."""
    rows = df.to_dict("records")
    for r in rows:
        r["augment"] = False
    train = [r for r in rows if r["split"] == "train" and not isinstance(r["control_type"], str)]
    rows += augment_rows(train, augment_seed)
    out = []
    for r in rows:
        item = {c: r.get(c) for c in CASE_COLUMNS}
        item["receipt"], item["changed"] = list(r["receipt"]), list(r["changed"])
        item["augment"] = bool(r["augment"])
        item["input"] = case_input(r["prompt"], r["template"])
        fields = gold_fields(r)
        item |= {f"completion_{t}": serialise(t, fields) for t in TARGETS}
        out.append(item)
    return pd.DataFrame(out)
