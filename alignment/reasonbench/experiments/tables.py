"""`alignment reasonbench report CONFIG`: the paper-shaped tables and figures from `metrics.csv`.

Only formats what `alignment.reasonbench.experiments.evaluate` computed. Each table is written three ways
under `report/`: `<name>.csv` (numbers: estimate, low, high per metric, as fractions), `<name>.md`
and `<name>.tex` (percent with the 95% interval, `est [low, high]`). Figures: `consistency.png`
(paired consistency per control type, with intervals) and `reason_debt.png` (reason debt against
realised accepted-change coverage). `report.md` at the top of the run dir collects the Markdown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from alignment.store import write_text

MODEL = ["regime", "learner", "target"]


@dataclass(frozen=True)
class Spec:
    name: str
    title: str
    tables: tuple[str, ...]
    metrics: tuple[str, ...]
    groups: str | None = None  # a regex on `group`; None keeps every group


SPECS = (
    Spec("overall", "Locked test, main cases", ("locked",),
         ("verdict_acc", "receipt_acc", "endpoint_acc", "cell_acc", "cube_exact", "parse_fail"), "^overall$"),
    Spec("strata", "Locked test by stratum", ("locked",), ("verdict_acc", "receipt_acc"), "^stratum="),
    Spec("receipt_size", "Locked test by minimum receipt size (0 = stable), changed/stable, ambiguous",
         ("locked",), ("verdict_acc", "receipt_acc"), "^(?:min_receipt_size=|changed|stable|ambiguous)"),
    Spec("shifts", "Distribution shifts", ("shift",), ("verdict_acc", "receipt_acc", "endpoint_acc", "parse_fail")),
    Spec("controls", "Accuracy on the locked controls", ("control",), ("verdict_acc", "receipt_acc", "parse_fail")),
    Spec("consistency", "Paired consistency and the implied lower bound on mean pairwise error",
         ("consistency",), ("consistency", "error_lower_bound")),
    Spec("accounting", "Failure accounting on the locked test (drift: of stable cases; inertia, "
         "misattribution: of gold changes; last column: wrong receipts with both endpoints right)",
         ("locked",), ("drift", "inertia", "misattribution", "misattribution_endpoints_ok"), "^(?:overall|stratum=)"),
    Spec("certification", "Certification by execution (separate from prediction accuracy)", ("locked",),
         ("certified", "cells_certified", "executions"), "^overall$"),
    Spec("cardinality", "Cardinality: trained on single-source changes, tested on multi-source locked "
         "cases (the standard models' multi_source row for comparison)", ("cardinality", "locked"),
         ("verdict_acc", "receipt_acc", "endpoint_acc"), "^(?:overall|multi_source|min_receipt_size=)"),
    Spec("selective", "Selective acceptance: thresholds fitted on calibration, locked test",
         ("selective",), ("calibration_coverage", "coverage", "reason_debt", "recall")),
    Spec("comparison", "Cube - direct receipt (paired; Holm over the two overall co-primary rows), "
         "and augmented - standard consistency (exploratory, unadjusted)",
         ("comparison",), ("estimate",)),
)


def fmt(est: float, low: float, high: float, scale: float = 100.0, digits: int = 1) -> str:
    """>>> fmt(0.5, 0.4, 0.61), fmt(0.25, float("nan"), float("nan")), fmt(float("nan"), 0, 0)
    ('50.0 [40.0, 61.0]', '25.0', 'n/a')
    """
    if est is None or (isinstance(est, float) and math.isnan(est)):
        return "n/a"
    head = f"{scale * est:.{digits}f}"
    if low is None or math.isnan(low):
        return head
    return f"{head} [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"


def _select(metrics: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    sel = metrics[metrics["table"].isin(spec.tables)]
    if spec.groups:
        sel = sel[sel["group"].str.contains(spec.groups, regex=True)]
    if spec.name == "cardinality":
        sel = sel[(sel["table"] == "cardinality") | (sel["group"] == "multi_source")]
    if spec.name != "comparison":
        sel = sel[sel["metric"].isin(spec.metrics)]
    return sel


ORDER = {"regime": ("standard", "augmented", "cardinality"), "learner": ("majority", "tfidf", "sft"),
         "target": ("direct_verdict", "direct_receipt", "rationale_receipt", "cube")}  # fmt: skip


def ordered(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in the paper's order: regime, learner, target as listed in `ORDER`, then group.

    >>> ordered(pd.DataFrame({"regime": ["standard"] * 2, "learner": ["tfidf", "majority"],
    ...                       "target": ["cube", "cube"], "group": ["overall"] * 2}))["learner"].tolist()
    ['majority', 'tfidf']
    """
    keys = {c: df[c].map(lambda v, c=c: ORDER[c].index(v) if v in ORDER[c] else len(ORDER[c])) for c in ORDER}
    tmp = df.assign(**{f"_{c}": k for c, k in keys.items()})
    by = [f"_{c}" for c in ORDER] + (["group"] if "group" in df else [])
    return tmp.sort_values(by, kind="stable").drop(columns=[f"_{c}" for c in ORDER]).reset_index(drop=True)


def numeric(metrics: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """The table as numbers: one row per model and group, estimate/low/high per metric."""
    sel = _select(metrics, spec)
    if spec.name == "comparison":
        return ordered(sel[[*MODEL, "group", "metric", "n", "estimate", "low", "high", "p", "p_holm"]])
    if sel.empty:
        return pd.DataFrame(columns=[*MODEL, "group"])
    wide = sel.pivot_table(index=[*MODEL, "group"], columns="metric",
                           values=["estimate", "low", "high"], aggfunc="first", dropna=False)  # fmt: skip
    cols = [m for m in spec.metrics if m in wide["estimate"].columns]
    out = pd.DataFrame(index=wide.index)
    n = sel.groupby([*MODEL, "group"])["n"].max()
    out["n"] = n.reindex(wide.index)
    for m in cols:
        out[m], out[f"{m}_low"], out[f"{m}_high"] = wide["estimate"][m], wide["low"][m], wide["high"][m]
    return ordered(out.reset_index())


def formatted(table: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """Percent strings with intervals (executions per certificate as a plain count)."""
    if spec.name == "comparison":
        out = table[[*MODEL, "group", "metric", "n"]].copy()
        out["difference (points)"] = [fmt(e, lo, hi) for e, lo, hi in zip(table["estimate"], table["low"], table["high"], strict=True)]
        out["p"] = table["p"].map(lambda p: f"{p:.3f}")
        out["p (Holm)"] = table["p_holm"].map(lambda p: "" if pd.isna(p) else f"{p:.3f}")
        return out
    out = table[[*MODEL, "group", "n"]].copy()
    for m in spec.metrics:
        if m in table.columns:
            scale = 1.0 if m == "executions" else 100.0
            digits = 2 if m == "executions" else 1
            out[m] = [fmt(e, lo, hi, scale, digits)
                      for e, lo, hi in zip(table[m], table[f"{m}_low"], table[f"{m}_high"], strict=True)]  # fmt: skip
    return out


def markdown(df: pd.DataFrame) -> str:
    """A GitHub table (no tabulate dependency).

    >>> print(markdown(pd.DataFrame({"a": [1], "b": ["x|y"]})), end="")
    | a | b |
    |---|---|
    | 1 | x\\|y |
    """
    def cell(v: object) -> str:
        return ("" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)).replace("|", "\\|")

    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def latex(df: pd.DataFrame) -> str:
    return df.to_latex(index=False, escape=True, na_rep="")


def write_report(metrics: pd.DataFrame, folder: Path, summary: Path) -> list[Path]:
    """Every table (CSV, Markdown, LaTeX), both figures, and `summary` (all Markdown tables)."""
    written: list[Path] = []
    parts = ["# ReasonBench experiments\n",
             "Percentages with 95% hierarchical-bootstrap intervals (seeds x independent units); "
             "n = observations (cases x seeds) in the largest denominator of the row's rates "
             "(pairs for consistency, paired observations for comparisons).\n"]  # fmt: skip
    for spec in SPECS:
        num = numeric(metrics, spec)
        if num.empty:
            continue
        text = formatted(num, spec)
        for suffix, body in (("csv", num.to_csv(index=False)), ("md", markdown(text)), ("tex", latex(text))):
            path = folder / f"{spec.name}.{suffix}"
            write_text(path, body)
            written.append(path)
        parts += [f"\n## {spec.title}\n", markdown(text)]
    from alignment.reasonbench.experiments.figures import consistency_figure, debt_figure

    for name, draw in (("consistency.png", consistency_figure), ("reason_debt.png", debt_figure)):
        if draw(metrics, folder / name):
            written.append(folder / name)
    write_text(summary, "".join(parts))
    return written
