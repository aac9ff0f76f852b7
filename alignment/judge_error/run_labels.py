"""Human labels of a run's own responses, against the verdicts its ack stage stored.

The report (`alignment report CONFIG --out RUN`, `report.md` and `report.html`) reads the labels
from `report.labels` when set, else from the first of these that exists in the run dir:

    RUN/judge_sample/sample_labelled.jsonl   (the download of `alignment judge sample`'s page)
    RUN/judge_sample/sample.jsonl            (the sample itself, when ack_label was set in place)

A labelled row names its response by `example_id`, `variant` and `sample` (or by `id` written as
`example_id/variant/sample`, as the sample does) and carries `ack_label` (true, false, or null:
not yet labelled). Rows whose `full_response` differs from the run's response text are stale
(the run was regenerated after labelling) and are skipped with a count, like rows naming no
response of this run. The judge is not rerun: the card (`alignment.judge_error.card`) compares the
labels with the verdicts and evidence the run's ack stage stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.cache import file_hash
from alignment.errors import UserError
from alignment.judge.base import Verdict
from alignment.judge_error.labels import read_rows
from alignment.store import RunDir

DEFAULT_FILES = ("judge_sample/sample_labelled.jsonl", "judge_sample/sample.jsonl")
KEYS = ["example_id", "variant", "sample"]


def candidates(run_path: Path, configured: str | None) -> list[Path]:
    """The labels files the report would read, in order of preference."""
    return [Path(configured)] if configured else [Path(run_path) / f for f in DEFAULT_FILES]


def fingerprint(run_path: Path, configured: str | None) -> dict[str, str | None]:
    """Content hash of each candidate file (None when absent), for the report stage's key: a
    labels file that appears, changes or goes away rebuilds the report. Default files are named
    relative to the run dir, so two run dirs with the same contents get the same key."""
    if configured:
        return {configured: file_hash(Path(configured)) if Path(configured).is_file() else None}
    return {name: file_hash(run_path / name) if (run_path / name).is_file() else None for name in DEFAULT_FILES}


def find_labels(run_path: Path, configured: str | None) -> Path | None:
    """The configured file (which must exist), else the first default file present."""
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise UserError(f"report.labels: {configured}: no such file (a JSONL with ack_label per response)")
        return path
    return next((p for p in candidates(run_path, None) if p.is_file()), None)


def _key(row: dict[str, Any], path: Path, line: int) -> tuple[str, str, int] | None:
    """The response a labelled row names, or None when it names none in the run's scheme."""
    if all(k in row for k in KEYS):
        ex, variant, sample = row["example_id"], row["variant"], row["sample"]
    elif isinstance(row.get("id"), str) and row["id"].count("/") >= 2:
        ex, variant, sample = row["id"].rsplit("/", 2)
    else:
        return None
    # An integer, or its digits (from an id): int() would also take 1.5 (as 1) or true (as 1).
    if isinstance(sample, bool) or not (isinstance(sample, int) or (isinstance(sample, str) and sample.isascii() and sample.isdigit())):
        raise UserError(f"{path} line {line}: field 'sample' must be an integer, got {sample!r}")
    return str(ex), str(variant), int(sample)


def match_labels(rows: list[dict[str, Any]], path: Path, key_of: Callable[[dict[str, Any], Path, int], Any],
                 index: dict[Any, dict[str, Any]], what: str) -> tuple[dict[Any, dict[str, Any]], dict[str, int]]:
    """Labelled rows matched to responses (`index`: key -> response record with `text`), each
    record plus `label` and `weight`; and the counts of rows skipped, by reason. `key_of(row,
    path, line)`: the response a row names, None when it names none in this scheme; `what`
    names the responses in the skip reason."""
    skipped = {"unlabelled": 0, f"not {what}": 0, "stale (response text changed since labelling)": 0}
    matched: dict[Any, dict[str, Any]] = {}
    for line, row in enumerate(rows, start=1):
        if row["ack_label"] is None:
            skipped["unlabelled"] += 1
            continue
        key = key_of(row, path, line)
        hit = index.get(key) if key else None
        if hit is None:
            skipped[f"not {what}"] += 1
        elif "full_response" in row and row["full_response"] != hit["text"]:
            skipped["stale (response text changed since labelling)"] += 1
        elif key in matched:
            raise UserError(f"{path} line {line}: response {'/'.join(map(str, key))} is labelled twice")
        else:
            matched[key] = {**hit, "label": bool(row["ack_label"]), "weight": row.get("weight")}
    return matched, skipped


@dataclass
class LabelCheck:
    """What the report shows: the file, the labelled responses matched to the run, the card."""

    path: Path | None
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)  # KEYS, label, weight (stratified), ack, ack_raw, text
    skipped: dict[str, int] = field(default_factory=dict)
    stratified: bool = False
    card: dict[str, Any] | None = None

    def labels(self) -> dict[tuple[str, str, int], bool]:
        return {(r.example_id, r.variant, int(r.sample)): bool(r.label) for r in self.rows.itertuples(index=False)}

    def summary(self) -> str:
        """One line: where the labels came from and what was skipped, or that there are none."""
        if self.path is None:
            return ("No human labels for this run's responses: label a sample (`alignment judge sample RUN`) and save "
                    "the page's download as RUN/judge_sample/sample_labelled.jsonl, or set report.labels.")
        skipped = ", ".join(f"{n} {why}" for why, n in self.skipped.items() if n)
        head = f"Labels: `{self.path}`, {len(self.rows)} labelled responses of this run"
        if self.card is None:
            head = f"Labels: `{self.path}` holds no labelled response of this run"
        return head + (f" (skipped: {skipped})" if skipped else "") + "."


def check_labels(run: RunDir, configured: str | None) -> LabelCheck:
    """Match the labels file to the run's responses and verdicts; the card when any match."""
    path = find_labels(run.path, configured)
    if path is None:
        return LabelCheck(None)
    rows = read_rows(path, ("ack_label",))
    if not (run.stage("ack") / "data.parquet").is_file():
        raise UserError(f"{path}: labels need the run's judge verdicts, but the ack stage has not run in {run.path}")
    table = run.read("generate")[[*KEYS, "text"]].merge(run.read("ack"), on=KEYS)
    table["sample"] = table["sample"].astype(int)
    index = {(r["example_id"], r["variant"], r["sample"]): r for r in table.to_dict("records")}
    matched, skipped = match_labels(rows, path, _key, index, "responses of this run")
    check = LabelCheck(path, pd.DataFrame(list(matched.values()), columns=[*table.columns, "label", "weight"]), skipped,
                       stratified=any("weight" in r for r in rows))
    if matched:
        from alignment.judge_error.card import judge_card

        r = check.rows
        verdicts = [Verdict(bool(a), str(raw), bool(p) if pd.notna(p) else True)
                    for a, raw, p in zip(r["ack"], r["ack_raw"], r.get("ack_parsed", [True] * len(r)), strict=True)]
        ids = ["/".join(map(str, k)) for k in matched]
        check.card = judge_card(ids, r["label"].tolist(), verdicts)
    return check
