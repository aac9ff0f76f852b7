"""JSONL rows in and out of the judge, and validation against human labels (scikit-learn).

`alignment judge validate --task biasqa --labels data/labels/biasqa_ack.jsonl` prints the
report built here; `alignment judge --task ... --input IN.jsonl --output OUT.jsonl` uses the
readers and the atomic writer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alignment.errors import UserError
from alignment.judge.base import Judge, Verdict
from alignment.runtime.jsonl import read_objects

LABELS_DIR = Path(__file__).resolve().parents[1] / "data" / "labels"


def default_labels(task: str) -> Path:
    """The project's labelled set for `task` (written and labelled by hand, see `why` fields)."""
    return LABELS_DIR / f"{task}_ack.jsonl"


SPLIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def read_rows(path: str | Path, required: tuple[str, ...], unique_ids: bool = False) -> list[dict[str, Any]]:
    """JSON lines with the `required` fields (`alignment.runtime.jsonl`); a bad line is a one-line
    UserError naming the file, the line and the field. `unique_ids`: an `id` seen twice is an
    error (a labelled row counted twice in a card, perhaps with two labels)."""
    p = Path(path)
    rows, seen = [], {}
    sidecar: dict[str, dict[str, Any]] | None = None
    for n, row in read_objects(p):
        if "label_id" in row and "id" not in row:
            # The blind page's download names rows only by opaque label_id; the rest (id, prompt,
            # variant, policy, weight, stratum) is in the sample file beside it.
            sidecar = _sidecar(p) if sidecar is None else sidecar
            if str(row["label_id"]) not in sidecar:
                raise UserError(f"{p} line {n}: label_id {row['label_id']!r} is not in {p.parent / 'sample.jsonl'}")
            row = sidecar[str(row["label_id"])] | {k: v for k, v in row.items() if k in ("ack_label", "unsure")}
        for key in required:
            if key not in row:
                raise UserError(f"{p} line {n}: missing field '{key}'")
        if not isinstance(row.get("full_response", ""), str):
            raise UserError(f"{p} line {n}: field 'full_response' must be a string, got {_kind(row['full_response'])}")
        if "ack_label" in required:
            _check_label_row(row, p, n)
        if unique_ids and "id" in row:
            key = json.dumps(row["id"])
            if key in seen:
                raise UserError(f"{p} line {n}: id {row['id']!r} is labelled twice (first on line {seen[key]})")
            seen[key] = n
        rows.append(row)
    return rows


def _sidecar(download: Path) -> dict[str, dict[str, Any]]:
    """The sample file written beside the page (`alignment judge sample`), by label_id."""
    path = download.parent / "sample.jsonl"
    if not path.is_file():
        raise UserError(f"{download}: rows carry only label_id; the sample file {path} that maps them is missing "
                        "(keep the download beside the sample.jsonl it was drawn with)")
    return {str(r["label_id"]): r for _, r in read_objects(path) if "label_id" in r}


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check_label_row(row: dict[str, Any], p: Path, n: int) -> None:
    """A label row's own fields: the label, and the split the card reports it under."""
    if not isinstance(row["ack_label"], bool | None):
        raise UserError(f"{p} line {n}: field 'ack_label' must be true, false or null (not yet labelled)")
    split = row.get("split", "")
    # The card groups rows by split: a number, null or a padded name would be a group of its own.
    if "split" in row and not (isinstance(split, str) and SPLIT_NAME.fullmatch(split)):
        raise UserError(f"{p} line {n}: field 'split' must be a split name such as 'dev' or 'heldout3' "
                        f"(letters, digits, '_', '-', '.'), got {split!r}")


def write_rows(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """JSON lines, atomically; non-finite numbers become null (JSON has no Infinity or NaN)."""
    from alignment.store import finite_or_none, write_text

    try:
        text = "".join(json.dumps(finite_or_none(r), ensure_ascii=False, allow_nan=False) + "\n" for r in rows)
    except RecursionError:
        raise UserError(f"{path}: a row is nested too deeply to write as JSON") from None
    write_text(Path(path), text)


@dataclass
class Validation:
    labels: list[bool]
    verdicts: list[Verdict]
    splits: list[str]
    ids: list[str] | None = None

    def card(self) -> dict[str, Any]:
        from alignment.judge_error.card import judge_card

        ids = self.ids or [str(i + 1) for i in range(len(self.labels))]
        return judge_card(ids, self.labels, self.verdicts, self.splits)

    def report(self, title: str) -> str:
        """The judge card as text (`alignment.judge_error.card`)."""
        from alignment.judge_error.card import format_card

        card = self.card()
        if "splits" in card:  # heldout2 before heldout10
            card["splits"] = dict(sorted(card["splits"].items(), key=lambda kv: _natural(kv[0])))
        return format_card(card, title)


def _natural(split: str) -> tuple[str, int]:
    """Sort key: heldout2 before heldout10."""
    stem = split.rstrip("0123456789")
    return stem, int(split[len(stem) :] or 0)


def validate(judge: Judge, task: str, rows: list[dict[str, Any]]) -> Validation:
    """Judge the labelled rows (rows whose `ack_label` is null are not yet labelled: skipped)."""
    rows = [r for r in rows if r["ack_label"] is not None]
    verdicts = judge.judge(task, [r["full_response"] for r in rows])
    return Validation(
        labels=[r["ack_label"] for r in rows],
        verdicts=verdicts,
        splits=[str(r.get("split", "")) for r in rows],
        ids=[str(r.get("id", i + 1)) for i, r in enumerate(rows)],
    )
