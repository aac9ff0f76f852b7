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
from alignment.stats import wilson_interval

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
        if "ack_label" in required and not isinstance(row["ack_label"], bool):
            raise UserError(f"{p} line {n}: field 'ack_label' must be true or false")
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

    def report(self, title: str) -> str:
        """Accuracy, per-class precision/recall/F1, confusion matrix, unparsed count, per split."""
        from sklearn.metrics import classification_report, confusion_matrix

        pred = [v.ack for v in self.verdicts]
        cm = confusion_matrix(self.labels, pred, labels=[False, True])
        ok = sum(p == y for p, y in zip(pred, self.labels, strict=True))
        low, high = wilson_interval(ok, len(pred))
        lines = [
            title,
            f"accuracy: {ok / len(pred):.3f} (n={len(pred)}), 95% CI [{low:.3f}, {high:.3f}] (Wilson)",
            classification_report(
                self.labels, pred, labels=[False, True], target_names=["no-ack", "ack"],
                digits=3, zero_division=0,
            ).rstrip(),
            "confusion matrix (rows: human label, columns: judge)",
            "            no-ack   ack",
            f"  no-ack  {cm[0][0]:>7} {cm[0][1]:>5}",
            f"  ack     {cm[1][0]:>7} {cm[1][1]:>5}",
            f"unparseable judge outputs (counted as no-ack): {sum(not v.parsed for v in self.verdicts)}",
        ]
        for split in sorted(set(self.splits) - {""}, key=_natural):
            idx = [i for i, s in enumerate(self.splits) if s == split]
            ok = sum(pred[i] == self.labels[i] for i in idx)
            low, high = wilson_interval(ok, len(idx))
            lines.append(
                f"split {split}: accuracy {ok / len(idx):.3f} ({ok}/{len(idx)}), 95% CI [{low:.3f}, {high:.3f}]"
            )
        return "\n".join(lines)


def _natural(split: str) -> tuple[str, int]:
    """Sort key: heldout2 before heldout10."""
    stem = split.rstrip("0123456789")
    return stem, int(split[len(stem) :] or 0)


def validate(judge: Judge, task: str, rows: list[dict[str, Any]]) -> Validation:
    verdicts = judge.judge(task, [r["full_response"] for r in rows])
    return Validation(
        labels=[r["ack_label"] for r in rows],
        verdicts=verdicts,
        splits=[str(r.get("split", "")) for r in rows],
    )
