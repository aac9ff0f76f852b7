"""JSONL rows in and out of the judge, and validation against human labels (scikit-learn).

`alignment judge validate --task biasqa --labels data/labels/biasqa_ack.jsonl` prints the
report built here; `alignment judge --task ... --input IN.jsonl --output OUT.jsonl` uses the
readers and the atomic writer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alignment.errors import UserError
from alignment.judge.base import Judge, Verdict

LABELS_DIR = Path(__file__).resolve().parents[1] / "data" / "labels"


def default_labels(task: str) -> Path:
    """The project's labelled set for `task` (written and labelled by hand, see `why` fields)."""
    return LABELS_DIR / f"{task}_ack.jsonl"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _lines(p: Path) -> list[str]:
    """The file's lines, split on newlines only: JSON strings may hold U+2028 and other
    characters that `str.splitlines` would treat as line breaks."""
    if p.is_dir():
        raise UserError(f"{p}: is a directory, expected a JSONL file")
    if not p.is_file():
        raise UserError(f"input file not found: {p}")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not UTF-8 text (byte {e.start}); expected JSON lines") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read ({e.strerror})") from None
    return [line.removesuffix("\r") for line in text.split("\n")]


def read_rows(path: str | Path, required: tuple[str, ...]) -> list[dict[str, Any]]:
    """JSON lines with the `required` fields; a bad line is a one-line UserError naming it."""
    p = Path(path)
    rows = []
    for n, line in enumerate(_lines(p), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line, parse_constant=_no_constant)
        except json.JSONDecodeError as e:
            raise UserError(f"{p} line {n}: not valid JSON ({e.msg})") from None
        except ValueError as e:  # NaN / Infinity literals
            raise UserError(f"{p} line {n}: not valid JSON ({e})") from None
        except RecursionError:
            raise UserError(f"{p} line {n}: JSON nested too deeply") from None
        if not isinstance(row, dict):
            raise UserError(f"{p} line {n}: expected a JSON object")
        for key in required:
            if key not in row:
                raise UserError(f"{p} line {n}: missing field '{key}'")
        if not isinstance(row.get("full_response", ""), str):
            raise UserError(f"{p} line {n}: field 'full_response' must be a string")
        if "ack_label" in required and not isinstance(row["ack_label"], bool | None):
            raise UserError(f"{p} line {n}: field 'ack_label' must be true, false or null (not yet labelled)")
        rows.append(row)
    return rows


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
        from alignment.judge.card import judge_card

        ids = self.ids or [str(i + 1) for i in range(len(self.labels))]
        return judge_card(ids, self.labels, self.verdicts, self.splits)

    def report(self, title: str) -> str:
        """The judge card as text (`alignment.judge.card`)."""
        from alignment.judge.card import format_card

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
