"""Which stage outputs of two runs are the same, column by column.

    python -m alignment.measure.run_diff RUN_A RUN_B [--json OUT]

For each stage folder both runs have, compares `data.parquet`: byte-identical files; else the
columns both have, row for row after sorting by the columns they share that identify a row (or
by every shared column when none does), with floats equal to 1e-9; and it names the columns only
one run has. Used to check that a refactor left every stage's output unchanged, or to list what
an intended change moved.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from alignment.errors import UserError
from alignment.store import write_text

ID_COLUMNS = ["example_id", "variant", "sample", "policy", "seed", "n", "N", "reward", "prompt"]


def _same(a: pd.Series, b: pd.Series) -> bool:
    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        return bool(np.allclose(a.to_numpy(float), b.to_numpy(float), rtol=0, atol=1e-9, equal_nan=True))
    return [repr(x) for x in a] == [repr(x) for x in b]


def table_diff(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Any]:
    """Rows, shared columns that differ, and columns only one side has.

    >>> x = pd.DataFrame({"example_id": ["a", "b"], "v": [1.0, 2.0], "old": [0, 0]})
    >>> y = pd.DataFrame({"example_id": ["b", "a"], "v": [2.0, 1.5], "new": [1, 1]})
    >>> d = table_diff(x, y)
    >>> d["differ"], d["only_a"], d["only_b"], d["max_abs"]
    (['v'], ['old'], ['new'], {'v': 0.5})
    """
    shared = [c for c in a.columns if c in b.columns]
    out: dict[str, Any] = {"rows": [len(a), len(b)], "only_a": [c for c in a.columns if c not in b.columns],
                           "only_b": [c for c in b.columns if c not in a.columns], "differ": []}
    keys = [c for c in ID_COLUMNS if c in shared] or shared
    if len(a) != len(b):
        # Rows added or dropped: compare the rows both have, where the key columns identify a row.
        if keys == shared or a.duplicated(keys).any() or b.duplicated(keys).any():
            out["differ"] = shared
            return out
        both = a[keys].merge(b[keys], on=keys)
        out["matched"] = len(both)
        a, b = (both.merge(t, on=keys, how="left") for t in (a, b))
    try:
        a, b = (t.sort_values(keys, kind="stable").reset_index(drop=True) for t in (a, b))
    except TypeError:  # unsortable cells (lists): compare in written order
        pass
    out["differ"] = [c for c in shared if not _same(a[c], b[c])]
    # How far apart differing float columns are: a refactor's rounding shows as ~1e-6, a change as more.
    out["max_abs"] = {c: float(np.nanmax(np.abs(a[c].to_numpy(float) - b[c].to_numpy(float))))
                      for c in out["differ"] if a[c].dtype.kind == "f" and b[c].dtype.kind == "f"}
    return out


def run_diff(run_a: Path, run_b: Path) -> dict[str, Any]:
    """Stage name -> its comparison (or why there is none)."""
    out: dict[str, Any] = {}
    for folder in sorted(p for p in run_a.iterdir() if (p / "data.parquet").is_file()):
        other = run_b / folder.name / "data.parquet"
        if not other.is_file():
            out[folder.name] = {"missing_in_b": True}
            continue
        mine = folder / "data.parquet"
        if mine.read_bytes() == other.read_bytes():
            out[folder.name] = {"identical_bytes": True}
            continue
        out[folder.name] = {"identical_bytes": False, **table_diff(pd.read_parquet(mine), pd.read_parquet(other))}
    return out


def page(data: dict[str, Any]) -> str:
    """A results page from `--json`'s file: one row per stage."""
    lines = [f"# {data['title']}", "", f"Written by `{data['command']}` (`--json`). A is the first run, B the second; "
             "max |d|: the largest absolute difference in a float column.", "",
             "| stage | same bytes | rows A / B | columns that differ | only in A | only in B |", "|---|---|---|---|---|---|"]
    for stage, d in data["stages"].items():
        if d.get("missing_in_b"):
            lines.append(f"| {stage} | n/a | only in A | | | |")
        elif d["identical_bytes"]:
            lines.append(f"| {stage} | yes | | | | |")
        else:
            cols = ", ".join(f"{c} ({d['max_abs'][c]:.1e})" if c in d.get("max_abs", {}) else c for c in d["differ"])
            rows = f"{d['rows'][0]} / {d['rows'][1]}" + (f" ({d['matched']} in both)" if "matched" in d else "")
            lines.append(f"| {stage} | no | {rows} | {cols or 'none'} | {', '.join(d['only_a'])} "
                         f"| {', '.join(d['only_b'])} |")
    return "\n".join([*lines, ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m alignment.measure.run_diff", description=__doc__.split("\n")[0])
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.add_argument("--json", help="also write the comparison to this file")
    p.add_argument("--title", default="Two runs compared stage by stage", help="with --json: the page title it records (say which runs)")
    args = p.parse_args(argv)
    a, b = Path(args.run_a), Path(args.run_b)
    for run in (a, b):
        if not run.is_dir():
            print(f"run_diff: error: {run}: not a run directory", file=sys.stderr)
            return 2
    try:
        diff = run_diff(a, b)
    except (UserError, OSError, ValueError) as e:
        print(f"run_diff: error: {e}", file=sys.stderr)
        return 2
    for stage, d in diff.items():
        if d.get("missing_in_b"):
            print(f"{stage}: only in {a}")
        elif d["identical_bytes"]:
            print(f"{stage}: identical bytes")
        else:
            same = "same values in shared columns" if not d["differ"] else "differ: " + ", ".join(
                f"{c} (max |d| {d['max_abs'][c]:.1e})" if c in d.get("max_abs", {}) else c for c in d["differ"])
            extra = "".join(f"; only in {n}: {', '.join(d[k])}" for k, n in (("only_a", "A"), ("only_b", "B")) if d[k])
            both = f" ({d['matched']} in both)" if "matched" in d else ""
            print(f"{stage}: rows {d['rows'][0]} / {d['rows'][1]}{both}; {same}{extra}")
    if args.json:
        data = {"title": args.title, "command": f"python -m alignment.measure.run_diff {args.run_a} {args.run_b}", "stages": diff}
        write_text(Path(args.json), json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
