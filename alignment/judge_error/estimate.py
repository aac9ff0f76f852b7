"""`alignment judge estimate`: a judged set's acknowledgment rate corrected by a few human labels.

    alignment judge estimate --judged J.jsonl --labels L.jsonl [--json]

J has `id` and `ack` per response (as `alignment judge` writes it) and optionally `example_id`,
the prompt each response answers: then the interval is clustered by prompt, an interval for the
policy's rate over prompts rather than over these responses. L has `id` and `ack_label`
(true, false, or null: not yet labelled, skipped) for a subset of J's ids, and may carry
`weight` and `stratum` (a stratified sample's inverse inclusion probability and stratum, as
`alignment judge sample` writes them). Prints the prediction-powered rate with its 95% interval (`alignment.judge_error.ppi`),
the judge-only rate, the labels-only interval, the counts and the method. For PPI the labelled
rows should be a random sample of J (or a stratified one with its weights); labels chosen by
hand, e.g. the judge's disagreements, bias the estimate.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from alignment.errors import UserError
from alignment.judge_error.labels import read_rows
from alignment.judge_error.ppi import PPIEstimate, ppi_rate


def _id(row: dict[str, Any], path: Path, line: int) -> str:
    value = row["id"]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise UserError(f"{path} line {line}: field 'id' must be a string or an integer, got {value!r}")
    return str(value)


def read_judged(path: str | Path) -> tuple[list[str], list[bool]]:
    """Ids and verdicts of the judged set, in file order (one-line errors name the row)."""
    ids, acks, _ = read_judged_prompts(path)
    return ids, acks


def read_judged_prompts(path: str | Path) -> tuple[list[str], list[bool], list[str] | None]:
    """Ids, verdicts and each row's prompt (`example_id`; None when no row has one), in file order."""
    p = Path(path)
    ids, acks, seen = [], [], set()
    prompts: list[str] = []
    for line, row in _numbered(p, ("id", "ack")):
        if ids and ("example_id" in row) != bool(prompts):
            raise UserError(f"{p} line {line}: field 'example_id' must be on every row or on none")
        if "example_id" in row:
            value = row["example_id"]
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise UserError(f"{p} line {line}: field 'example_id' must be a string or an integer, got {value!r}")
            prompts.append(str(value))
        key = _id(row, p, line)
        if key in seen:
            raise UserError(f"{p} line {line}: id {key!r} appears twice")
        if not isinstance(row["ack"], bool):
            raise UserError(f"{p} line {line}: field 'ack' must be true or false, got {row['ack']!r}")
        seen.add(key)
        ids.append(key)
        acks.append(row["ack"])
    if not ids:
        raise UserError(f"{p}: no judged rows")
    return ids, acks, (prompts or None)


def read_labels(path: str | Path, known: set[str]) -> tuple[dict[str, bool], dict[str, float] | None, int]:
    """Labels by id, weights by id (None when no row carries `weight`) and the count of rows
    still unlabelled (null)."""
    p = Path(path)
    labels: dict[str, bool] = {}
    weights: dict[str, float] = {}
    pending = 0
    for line, row in _numbered(p, ("id", "ack_label")):
        key = _id(row, p, line)
        if key not in known:
            raise UserError(f"{p} line {line}: id {key!r} is not in the judged file")
        if key in labels:
            raise UserError(f"{p} line {line}: id {key!r} is labelled twice")
        if row["ack_label"] is None:
            pending += 1
            continue
        labels[key] = row["ack_label"]
        if "weight" in row:
            w = row["weight"]
            if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w <= 0:
                raise UserError(f"{p} line {line}: field 'weight' must be a finite number > 0, got {w!r}")
            weights[key] = float(w)
    if not labels:
        raise UserError(f"{p}: no labelled rows (ack_label true or false)" + (f"; {pending} still null" if pending else ""))
    if len(labels) < 2:
        raise UserError(f"{p}: only 1 labelled row; an interval needs at least 2 (20 or more recommended)")
    if weights and len(weights) != len(labels):
        raise UserError(f"{p}: 'weight' is set on {len(weights)} of {len(labels)} labelled rows; set it on all or none")
    return labels, (weights or None), pending


def _numbered(p: Path, required: tuple[str, ...]) -> list[tuple[int, dict[str, Any]]]:
    """Rows with their line numbers (read_rows skips blank lines, so count them back)."""
    rows = read_rows(p, required)
    lines = [n for n, text in enumerate(p.read_bytes().decode("utf-8").split("\n"), start=1) if text.strip()]
    return list(zip(lines, rows, strict=True))


def estimate_files(judged: str | Path, labels: str | Path) -> tuple[PPIEstimate, int]:
    """The estimate for a judged file and a labels file, and the count of still-null labels.
    With `example_id` in the judged file the interval is clustered by prompt; with `stratum` in
    the labels (as `alignment judge sample` writes it) the strata are those rows'."""
    ids, acks, prompts = read_judged_prompts(judged)
    labelled, weights, pending = read_labels(labels, set(ids))
    position = {k: i for i, k in enumerate(ids)}
    keys = list(labelled)
    w = [weights[k] for k in keys] if weights else None
    strata = label_strata(labels, keys) if w else None
    return ppi_rate(acks, [position[k] for k in keys], [labelled[k] for k in keys], w,
                    clusters=prompts, strata=strata), pending


def label_strata(path: str | Path, keys: list[str]) -> list[str] | None:
    """Each labelled row's `stratum` (None when the rows carry none: then a weight is a stratum)."""
    found = {str(r["id"]): r.get("stratum") for r in read_rows(Path(path), ("id",))}
    strata = [found.get(k) for k in keys]
    return None if any(s is None for s in strata) else [str(s) for s in strata]


def format_estimate(e: PPIEstimate, pending: int = 0) -> str:
    """The estimate as text for a terminal (rates as fractions)."""
    kind = "stratified classical" if "stratified" in e.method else "Wilson"
    lines = [
        f"corrected acknowledgment rate: {e.estimate:.3f}, 95% CI [{e.low:.3f}, {e.high:.3f}]",
        f"judge-only rate: {e.judge_only:.3f} (its interval would exclude the judge's error)",
        f"labels-only 95% CI: [{e.labels_only[0]:.3f}, {e.labels_only[1]:.3f}] ({kind})",
        f"n labelled: {e.n_labelled}, n unlabelled: {e.n_unlabelled}" + (f" ({pending} label rows still null)" if pending else ""),
        f"method: {e.method}",
    ]
    if e.n_labelled < 20:  # the validation (results/ppi_validation.md) used 20; below it the interval is untested
        lines.append(f"note: only {e.n_labelled} labels; the large-sample interval may undercover below about 20")
    return "\n".join(lines)


def judge_changed(labels: str | Path) -> str | None:
    """A warning when the labels were sampled under keyword rules other than today's: the
    sample's strata and the verdicts it was drawn on may differ from the judged file's."""
    from alignment.judge_error.sample_design import judge_code_id

    ids = {str(r["judge_id"]) for r in read_rows(Path(labels), ()) if r.get("judge_id")}
    now = judge_code_id()
    old = sorted(i for i in ids if i.startswith("keyword:") and i != now)
    if not old:
        return None
    return (f"warning: {labels} was sampled under judge {', '.join(old)}; the judge is now {now}. Re-judge the "
            "responses with the rules the sample was drawn under, or draw a new sample: the strata and weights "
            "assume the old verdicts")


def run_estimate(args: argparse.Namespace) -> int:
    import sys

    warning = judge_changed(args.labels)
    if warning:
        print(warning, file=sys.stderr)
    est, pending = estimate_files(args.judged, args.labels)
    print(json.dumps(est.as_dict(), indent=2) if args.json else format_estimate(est, pending))
    return 0


def register_estimate(inner: Any) -> None:
    e = inner.add_parser("estimate", help="a judged set's ack rate corrected by human labels (prediction-powered)")
    e.add_argument("--judged", required=True, help="JSONL with id and ack per response (alignment judge output)")
    e.add_argument("--labels", required=True, help="JSONL with id and ack_label for a random sample of those ids")
    e.add_argument("--json", action="store_true", help="print the estimate as JSON")
    e.set_defaults(func=run_estimate)
