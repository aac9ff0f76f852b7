"""`alignment reasonbench audit DIR`: re-execute every case and control of a built benchmark.

Nothing stored is trusted. For each row the eight hybrids are executed again from the serialized
states; the cube, endpoints, receipt (from the execution *and* by brute force over the stored
cube), changed sources, category columns and the rendered prompt must all match. Controls must
keep their relation to their original (permutation and distractor: same cube and receipt;
inverse: cell T equals the original's cell {G,N,A} minus T). No unit may appear in two splits and
no prompt in two splits. Every organisational state must be well-formed: `defects` counts, per
class, inverted requirements, duplicate conditions, tautologies, unsatisfiable conditions (all
from `policy.defects`), request types foreign to the clause and code syntax in prompts (`==`,
`True`, `['`); any of them fails the audit. Exit status: 0 when every check is zero, 1 when the audit found
problems, 2 when DIR cannot be read.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from alignment.errors import UserError
from alignment.reasonbench.benchmark.build import FILE, MANIFEST, counts
from alignment.reasonbench.benchmark.cases import (
    CUBE_KEYS,
    SOURCES,
    STRATA,
    category,
    changed_sources,
    execute,
    key_of,
    receipt_keys,
)
from alignment.reasonbench.benchmark.clauses import BY_ID
from alignment.reasonbench.benchmark.policy import defects
from alignment.reasonbench.benchmark.quotas import expected_counts
from alignment.reasonbench.benchmark.render import TEMPLATES, render
from alignment.receipts import receipt_family

REQUIRED = (
    "id", "unit_id", "stratum", "split", "context", "old_state", "new_state", "changed", "cube",
    "old_verdict", "new_verdict", "receipt", "prompt", "template", "source_order",
    "receipt_category", "min_receipt_size", "ambiguous", "control_of", "control_type",
)  # fmt: skip


@dataclass
class AuditReport:
    rows: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    count_errors: list[str] = field(default_factory=list)
    label_errors: list[str] = field(default_factory=list)
    control_errors: list[str] = field(default_factory=list)
    leaked_units: list[str] = field(default_factory=list)
    prompt_overlap: int = 0
    defects: dict[str, int] = field(default_factory=dict)
    distributions: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return not (
            self.count_errors or self.label_errors or self.control_errors
            or self.leaked_units or self.prompt_overlap or any(self.defects.values())
        )  # fmt: skip

    def summary(self) -> str:
        lines = [
            f"rows audited: {self.rows}",
            "counts: " + ", ".join(f"{k} {v}" for k, v in self.counts.items()),
            f"count errors: {len(self.count_errors)}",
            f"label errors: {len(self.label_errors)}",
            f"control relation errors: {len(self.control_errors)}",
            f"unit leakage across splits: {len(self.leaked_units)}",
            f"prompt overlap across splits: {self.prompt_overlap}",
            "malformed cases: " + ", ".join(f"{k} {v}" for k, v in self.defects.items()),
        ]
        for msg in (self.count_errors + self.label_errors + self.control_errors)[:20]:
            lines.append(f"  {msg}")
        for name, table in self.distributions.items():
            lines += ["", f"{name}:", table.to_string()]
        return "\n".join(lines)


def load(directory: Path) -> pd.DataFrame:
    path = Path(directory)
    if not (path / FILE).exists():
        raise UserError(f"{path}: no {FILE} (build it with `alignment reasonbench build`)")
    try:
        df = pd.read_parquet(path / FILE)
    except Exception as e:  # pyarrow raises several types for damaged files
        raise UserError(f"{path / FILE}: unreadable Parquet ({type(e).__name__})") from None
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise UserError(f"{path / FILE}: missing column(s) {', '.join(missing)}")
    nullable = {"control_of", "control_type"}
    for col in REQUIRED:
        if col not in nullable and df[col].isna().any():
            row = int(df[col].isna().to_numpy().argmax())
            raise UserError(f"{path / FILE}: row {row}: column {col!r} is null")
    check_cells(df, path / FILE)
    return df


JSON_OBJECTS = ("context", "old_state", "new_state", "cube")
LISTS = ("changed", "receipt")


def _cell_error(col: str, value: Any) -> str | None:
    """What is wrong with one cell's type or JSON (None when it can be audited)."""
    if col in LISTS:
        ok = hasattr(value, "__len__") and not isinstance(value, str | bytes | dict) and all(isinstance(x, str) for x in value)
        return None if ok else f"expected a list of source names, got {type(value).__name__}"
    if col == "min_receipt_size":
        return None if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_) else f"expected an integer, got {value!r}"
    if col == "ambiguous":
        return None if isinstance(value, bool | np.bool_) else f"expected true or false, got {value!r}"
    if not isinstance(value, str):
        return f"expected text, got {type(value).__name__}"
    if col == "source_order" and sorted(value) != sorted(SOURCES):
        return f"expected an order of {''.join(SOURCES)}, got {value!r}"
    if col not in JSON_OBJECTS:
        return None
    try:
        cell = json.loads(value)
    except (ValueError, RecursionError) as e:
        return f"not JSON ({type(e).__name__}: {str(e)[:80]})"
    if not isinstance(cell, dict):
        return f"expected a JSON object, got {type(cell).__name__}"
    if col == "cube" and (sorted(cell) != sorted(CUBE_KEYS) or not all(isinstance(v, str) for v in cell.values())):
        return f"expected a verdict for each of the cells {list(CUBE_KEYS)}"
    return None


def check_cells(df: pd.DataFrame, path: Path) -> None:
    """Every required cell has the type the audit reads (text, list, integer, flag) and every JSON
    cell parses to an object: a damaged file is a one-line error naming row and column (exit 2),
    not a crash half-way, nor a label error of the audit (exit 1)."""
    for col in REQUIRED:
        for i, value in enumerate(df[col].tolist()):
            if col in ("control_of", "control_type") and not isinstance(value, str) and pd.isna(value):
                continue
            bad = _cell_error(col, value)
            if bad:
                raise UserError(f"{path}: row {i} (id {str(df['id'].iloc[i])[:60]!r}): column {col!r}: {bad}")


def _check_row(row: Any) -> list[str]:
    """Everything wrong with one row's labels (empty when it re-executes exactly)."""
    try:
        ctx, old, new = (json.loads(row[c]) for c in ("context", "old_state", "new_state"))
        cube = json.loads(row["cube"])
        cells, receipt = execute(row["stratum"], ctx, old, new)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        return [f"not executable ({type(e).__name__}: {e})"]
    stored = list(row["receipt"])
    brute = receipt_keys(receipt_family(SOURCES, lambda t: cube[key_of(t)]))
    problems = {
        "cube": cube != cells or list(cube) != list(CUBE_KEYS),
        "receipt": stored != receipt,
        "receipt vs stored cube": stored != brute,
        "old_verdict": row["old_verdict"] != cube.get(""),
        "new_verdict": row["new_verdict"] != cube.get("GNA"),
        "changed": list(row["changed"]) != changed_sources(old, new),
        "receipt_category": row["receipt_category"] != category(stored),
        "min_receipt_size": row["min_receipt_size"] != min(map(len, stored), default=0),
        "ambiguous": bool(row["ambiguous"]) != (len(stored) > 1),
        "prompt": row["template"] not in TEMPLATES
        or row["prompt"]
        != render(row["stratum"], ctx, old, new, row["template"], row["source_order"]),
    }
    return [name for name, bad in problems.items() if bad]


DEFECTS = (
    "inverted requirement", "duplicate condition", "tautology", "unsatisfiable",
    "foreign request type", "code syntax",
)  # fmt: skip
_SYNTAX = re.compile(r"==|!=|\bTrue\b|\bFalse\b|\[\'")


def case_defects(row: Any) -> list[str]:
    """Malformations of one row: its prompt, and for organisational rows both states' rules."""
    out = ["code syntax"] if _SYNTAX.search(row["prompt"]) else []
    if row["stratum"] != "organizational":
        return out
    try:
        clause = BY_ID[json.loads(row["context"])["clause"]]
        states = [json.loads(row[c]) for c in ("old_state", "new_state")]
        for st in states:
            out += defects(st["N"], clause.by_name)
            if st["G"]["request_type"] != clause.request_type:
                out.append("foreign request type")
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return out  # not executable: reported as a label error
    return out


def _check_control(ctrl: Any, orig: Any) -> str | None:
    """The violated relation between a control and its original, if any."""
    kind = ctrl["control_type"]
    a, b = json.loads(ctrl["cube"]), json.loads(orig["cube"])
    if ctrl["unit_id"] != orig["unit_id"] or ctrl["split"] != orig["split"]:
        return "unit or split differs from the original"
    if kind in ("permutation", "distractor"):
        if a != b or list(ctrl["receipt"]) != list(orig["receipt"]):
            return f"{kind} changed the cube or receipt"
        if kind == "permutation" and (
            ctrl["old_state"] != orig["old_state"] or ctrl["source_order"] == orig["source_order"]
        ):
            return "permutation is not a reordering of the same states"
        return None
    if kind == "inverse":
        full = set(SOURCES)
        if any(a[k] != b[key_of(full - set(k))] for k in CUBE_KEYS):
            return "inverse cube is not the original cube mirrored"
        if ctrl["old_state"] != orig["new_state"] or ctrl["new_state"] != orig["old_state"]:
            return "inverse does not swap the states"
        return None
    return f"unknown control_type {kind!r}"


def _controls(df: pd.DataFrame) -> list[str]:
    errors = []
    main = df[df["control_type"].isna()]
    by_id = {r["id"]: r for r in main.to_dict("records")}
    for r in df[df["control_type"].notna()].to_dict("records"):
        orig = by_id.get(r["control_of"])
        msg = "control_of names no main case" if orig is None else _check_control(r, orig)
        if msg:
            errors.append(f"{r['id']}: {msg}")
    locked = main[main["split"] == "locked"]["id"]
    have = df[df["control_type"].notna()].groupby("control_of")["control_type"].apply(set)
    for cid in locked:
        if have.get(cid, set()) != {"inverse", "permutation", "distractor"}:
            errors.append(f"{cid}: locked example without its three controls")
    return errors


def distributions(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    main = df[df["control_type"].isna()]
    by = [main["split"], main["stratum"]]
    transition = main["old_verdict"] + ">" + main["new_verdict"]
    return {
        "min receipt size (0 = stable)": pd.crosstab(by, main["min_receipt_size"]),
        "ambiguous receipts": pd.crosstab(by, main["ambiguous"]),
        "verdict transitions": pd.crosstab(by, transition),
        "revised verdict (share)": pd.crosstab(by, main["new_verdict"], normalize="index").round(3),
        "rule operators": pd.crosstab(by, main["operator"]) if "operator" in main else pd.DataFrame(),
        "changed sources": pd.crosstab(by, main["changed"].map("".join)),
        "proof depth": pd.crosstab(by, main["depth"]) if "depth" in main else pd.DataFrame(),
        "controls": pd.crosstab(df["split"], df["control_type"].fillna("main case")),
    }


def audit(directory: Path) -> AuditReport:
    """Re-execute and cross-check every row under `directory` (see the module docstring)."""
    df = load(directory)
    report = AuditReport(rows=len(df), counts=counts(df))
    found: Counter[str] = Counter()
    for r in df.to_dict("records"):
        if r["stratum"] not in STRATA:
            report.label_errors.append(f"{r['id']}: unknown stratum {r['stratum']!r}")
            continue
        report.label_errors += [f"{r['id']}: {p}" for p in _check_row(r)]
        found.update(case_defects(r))
    report.defects = {k: found[k] for k in DEFECTS}
    report.control_errors = _controls(df)
    splits = df.groupby("unit_id")["split"].nunique()
    report.leaked_units = sorted(splits[splits > 1].index)
    report.prompt_overlap = int((df.groupby("prompt")["split"].nunique() > 1).sum())
    report.distributions = distributions(df)
    scale = manifest_scale(Path(directory) / MANIFEST)
    if scale is not None:  # no manifest: counts are reported, not checked
        want = expected_counts(scale)
        report.count_errors = [
            f"{k}: {report.counts.get(k)} != {v} expected at scale {scale}"
            for k, v in want.items()
            if report.counts.get(k) != v
        ]
    return report


def manifest_scale(path: Path) -> float | None:
    """The scale the manifest says the benchmark was built at; None without a manifest. A
    manifest that is there but unreadable is an error: the counts cannot be checked against it."""
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        raise UserError(f"{path}: not a readable JSON manifest ({type(e).__name__})") from None
    if not isinstance(manifest, dict):
        raise UserError(f"{path}: expected a JSON object, got {type(manifest).__name__}")
    scale = manifest.get("scale")
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not 0 < scale <= 1:
        raise UserError(f"{path}: field 'scale' must be a number in (0, 1], got {scale!r}")
    return float(scale)
