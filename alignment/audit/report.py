"""The audit section of `report.md`, formatted from the CSVs the `audit` stage wrote under `audit/`
(`consistency.csv`, `accounting.csv`, `debt.csv`, `worst.csv`); nothing is computed here."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from alignment.analysis.markdown import ci as _ci
from alignment.analysis.markdown import md_table as _md_table
from alignment.analysis.markdown import pct as _pct

# The judge's rows count the judge's own verdicts; only those on the run's responses can be corrected.
JUDGE_NOTE = ("The judge's rows count its own verdicts. The *counterfactual* row is its acknowledgment rate on this run's "
              "counterfactual responses: with human labels of the run's responses, *Acknowledgment rates with the judge's "
              "error* corrects that rate (*all responses, counterfactual prompts*). *Ack rate on transformed* is over "
              "transformed texts that nobody labelled, so it excludes the judge's error.")
_TEXT = 180  # characters of a response shown in a side-by-side cell


def _cell(text: object) -> str:
    s = "" if pd.isna(text) else str(text)
    s = s if len(s) <= _TEXT else "…" + s[-_TEXT:]  # the end holds the answer and any acknowledgment
    return s.replace("|", "\\|").replace("\n", " ⏎ ")


def _detail(r: pd.Series) -> str:
    parts = []
    if not pd.isna(r.get("mean_tv_distance")):
        parts.append(f"mean TV distance {r['mean_tv_distance']:.2f}")
    if not pd.isna(r.get("mean_kendall_tau")):
        parts.append(f"mean Kendall τ {r['mean_kendall_tau']:.2f}")
    if not pd.isna(r.get("mean_abs_shift")):
        parts.append(f"mean |score shift| {r['mean_abs_shift']:.3f}")
    if not pd.isna(r.get("control_ack_rate")):
        parts.append(f"ack rate on transformed {_pct(r['control_ack_rate'])}")
    return "; ".join(parts)


def consistency_table(df: pd.DataFrame) -> str:
    rows = [{"evaluator": r["evaluator"], "transformation": r["transformation"], "relation": r["relation"],
             "pairs": int(r["pairs"]), "consistency": _pct(r["consistency"]), "95% CI": _ci(r["ci_low"], r["ci_high"]),
             "error rate ≥": _pct(r["error_lower_bound"]), "not applicable": int(r["skipped"]), "detail": _detail(r)}
            for _, r in df.iterrows()]
    return _md_table(pd.DataFrame(rows))


def accounting_table(df: pd.DataFrame) -> str:
    def rate(r: pd.Series, name: str) -> str:
        return "n/a" if pd.isna(r[name]) else f"{_pct(r[name])} {_ci(r[name + '_low'], r[name + '_high'])}"

    rows = [{"gold": r["gold"], "strategy": r["strategy"], "cases": int(r["cases"]), "gold changes": int(r["gold_changes"]),
             "drift": rate(r, "drift_rate"), "inertia": rate(r, "inertia_rate"), "misattribution": rate(r, "misattribution_rate"),
             "misattribution, endpoints right": _pct(r["conditional_misattribution_rate"])} for _, r in df.iterrows()]
    return _md_table(pd.DataFrame(rows))


def debt_table(df: pd.DataFrame) -> str:
    rows = [{"gold": r["gold"], "acceptance": r["acceptance"], "accepted / candidates": f"{int(r['accepted'])} / {int(r['candidates'])}",
             "coverage": _pct(r.get("coverage")), "reason debt": _pct(r["debt"]) + ("" if pd.isna(r["debt_low"]) else f" {_ci(r['debt_low'], r['debt_high'])}"),
             "gold-change recall": _pct(r.get("recall"))} for _, r in df.iterrows()]
    return _md_table(pd.DataFrame(rows))


def worst_table(df: pd.DataFrame) -> str:
    rows = [{"pair": f"{r['evaluator']} · {r['transformation']} · {r['relation']} · {r['example_id']} ({r['item']})",
             "base": f"**{_cell(r['base'])}** {_cell(r['base_text'])}", "control": f"**{_cell(r['control'])}** {_cell(r['control_text'])}"}
            for _, r in df.iterrows()]
    return _md_table(pd.DataFrame(rows))


def _read(folder: Path, name: str) -> pd.DataFrame | None:
    path = folder / name
    return pd.read_csv(path) if path.is_file() and path.stat().st_size > 1 else None


def audit_section(folder: Path) -> list[str]:
    """Lines of the report's audit section; [] when the audit stage has not run."""
    summary = _read(folder, "consistency.csv")
    if summary is None:
        return []
    out = ["## Evaluator audit: paired consistency", "",
           "Each transformation preserves meaning, so the evaluator's judgment must not change; every violated "
           "pair proves one of its two judgments wrong. *Error rate ≥* is the implied lower bound over the "
           "judgments compared (half the violation rate for disjoint pairs; the counterfactual control counts "
           "each acknowledgment as an error by itself). 95% Wilson intervals. All pairs: `audit/violations.csv`.", "",
           consistency_table(summary), ""]
    if (summary["evaluator"] == "judge").any():
        out += [JUDGE_NOTE, ""]
    worst = _read(folder, "worst.csv")
    if worst is not None and len(worst):
        out += ["Worst violating pairs, side by side (judgment in bold, then the text):", "", worst_table(worst), ""]
    acc, debt = _read(folder, "accounting.csv"), _read(folder, "debt.csv")
    if acc is not None and len(acc):
        out += ["## Strategies D and C against the executed cube", "",
                "Each sampled original response's attribution, read against its example's executed cube (modal "
                "answers over the N samples of each prompt). *Drift*: a change claimed where the cube has none "
                "(share of gold-stable cases); *inertia*: a cube change missed; *misattribution*: a change claimed "
                "with the wrong account or revised answer (shares of gold changes).", "", accounting_table(acc), ""]
    if debt is not None and len(debt):
        out += ["Reason debt: the share of accepted attributions that are wrong, i.e. of augmented rewards landing on "
                "responses whose answer the feature did not cause; read with coverage (accepted / claimed) and "
                "gold-change recall.", "", debt_table(debt), ""]
    return out
