"""Human labels of dpo-eval's responses: every DPO policy's answers on the held-out prompts.

    alignment judge sample RUN --stage dpo-eval [--design uniform] [--n 50 | --width 0.15]
    (label RUN/judge_sample/dpo-eval/sample.html, save its download as
    RUN/judge_sample/dpo-eval/sample_labelled.jsonl; then `alignment report CONFIG --out RUN`)

The report reads the first of these that exists in the run dir:

    RUN/judge_sample/dpo-eval/sample_labelled.jsonl   (the download of the labelling page)
    RUN/judge_sample/dpo-eval/sample.jsonl            (the sample itself, ack_label set in place)

A dpo-eval response is named by `policy` (base, or a trained adapter such as rm_d-seed0),
`example_id`, `variant` and `sample` (-1: the greedy answer), or by `id` written as
`policy/example_id/variant/sample`, as the sample does. As for the run's own labels
(`alignment.judge_error.run_labels`), rows still null, rows naming no dpo-eval response and rows whose
`full_response` differs from the response (dpo-eval was rerun after labelling) are skipped and
counted; a response labelled twice is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.cache import file_hash
from alignment.errors import UserError
from alignment.judge_error.labels import read_rows
from alignment.judge_error.run_labels import match_labels

FOLDER = "judge_sample/dpo-eval"
DEFAULT_FILES = (f"{FOLDER}/sample_labelled.jsonl", f"{FOLDER}/sample.jsonl")
KEYS = ["policy", "example_id", "variant", "sample"]
Key = tuple[str, str, str, int]


def response_table(run: Any) -> pd.DataFrame:
    """dpo-eval's responses: KEYS, the policy's reward variant and training seed, text, verdict."""
    table = run.read("dpo-eval", "responses.parquet")
    return table[[*KEYS, "reward", "seed", "text", "ack"]].assign(sample=table["sample"].astype(int)).reset_index(drop=True)


def fingerprint(run_path: Path) -> dict[str, str | None]:
    """Content hash of each default labels file (None when absent), for the report stage's key."""
    return {name: file_hash(run_path / name) if (run_path / name).is_file() else None for name in DEFAULT_FILES}


def _integer(value: Any) -> int | None:
    """An integer, or its ASCII digits with an optional minus (from an id); else None.

    >>> _integer(-1), _integer("-1"), _integer("3"), _integer(1.5), _integer(True)
    (-1, -1, 3, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.removeprefix("-").isdigit():
        return int(value)
    return None


def row_key(row: dict[str, Any], path: Path, line: int) -> Key | None:
    """The response a labelled row names, or None when it names none in dpo-eval's scheme.

    >>> row_key({"id": "rm_d-seed0/ex/1/orig/-1"}, Path("L"), 1)
    ('rm_d-seed0', 'ex/1', 'orig', -1)
    >>> row_key({"id": "ex/orig/0"}, Path("L"), 1) is None
    True
    """
    if all(k in row for k in KEYS):
        policy, ex, variant, sample = (row[k] for k in KEYS)
    elif isinstance(row.get("id"), str) and row["id"].count("/") >= 3:
        policy, rest = row["id"].split("/", 1)  # a policy name is a folder name: no slash
        ex, variant, sample = rest.rsplit("/", 2)
    else:
        return None
    number = _integer(sample)
    if number is None:
        raise UserError(f"{path} line {line}: field 'sample' must be an integer, got {sample!r}")
    return str(policy), str(ex), str(variant), number


@dataclass
class DPOLabels:
    """The labels file and its rows matched to dpo-eval's responses (KEYS, label, weight)."""

    path: Path | None
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)
    skipped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        skipped = ", ".join(f"{n} {why}" for why, n in self.skipped.items() if n)
        return (f"Labels: `{self.path}`, {len(self.rows)} labelled dpo-eval responses"
                + (f" (skipped: {skipped})" if skipped else "") + ".")


def read_dpo_labels(run: Any) -> DPOLabels:
    """The first default labels file present, matched to dpo-eval's responses; no file: path None."""
    path = next((run.path / f for f in DEFAULT_FILES if (run.path / f).is_file()), None)
    if path is None or not (run.stage("dpo-eval") / "responses.parquet").is_file():
        return DPOLabels(None)
    rows = read_rows(path, ("ack_label",))
    table = response_table(run)
    index = {tuple(r[k] for k in KEYS): r for r in table[[*KEYS, "text"]].to_dict("records")}
    matched, skipped = match_labels(rows, path, row_key, index, "dpo-eval responses of this run")
    return DPOLabels(path, pd.DataFrame(list(matched.values()), columns=[*KEYS, "label", "weight"]), skipped)
