"""A run's acknowledgment figures with the judge's error carried (report section).

With human labels of the run's responses (`alignment.judge_error.run_labels`), each figure is
re-estimated by prediction-powered inference (`alignment.judge_error.ppi`): the share of acknowledging
responses on original and on counterfactual prompts and their difference (the control), and
the best-of-N picks' rate under each reward variant at the headline N with each variant's paired
difference from `rm` (the headline RM_D − RM); then, in one table, the picks' rate and each
variant − `rm` at every N of the run's best-of-N table, on original and counterfactual prompts
(`alignment.judge_error.bon_estimates`). Every figure is a linear functional of the human
labels over the same population (every judged response of the run), so one sample serves all:
uniform, or stratified with its `weight` column honoured (`alignment judge sample`). For PPI the
labelled responses must be drawn at random; hand-picked ones bias every figure.

Without labels the section says that the report's intervals exclude the judge's error and shows
the rate the judge's sensitivity and specificity measured on real labelled responses imply
(Rogan–Gladen, `JUDGE_ERROR`), labelled as the assumption that the judge errs the same way here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from alignment.analysis.bon import marked_headline
from alignment.analysis.markdown import md_table as _md_table
from alignment.augment.strategies import ONE_SIDED
from alignment.errors import UserError
from alignment.judge_error.bon_estimates import (
    curve_coefficients,
    curve_variants,
    figure_name,
    pick_coefficients,
)
from alignment.judge_error.ppi import MIN_SIDE, PPIEstimate, enough_labels, ppi_linear, rogan_gladen

KEYS = ["example_id", "variant", "sample"]
JUDGE_ERROR = Path(__file__).resolve().parents[1] / "data" / "labels" / "judge_error.json"


def _pct(x: float) -> str:
    return "n/a" if x != x else f"{100 * x:.1f}%"


def interval_text(lo: float, hi: float, signed: bool = False) -> str:
    f = "{:+.1f}" if signed else "{:.1f}"
    return "n/a" if lo != lo else f"[{f.format(100 * lo)}, {f.format(100 * hi)}]"


def coefficients(table: pd.DataFrame, n: int, variants: list[str]) -> dict[str, np.ndarray]:
    """Per-response coefficients of each figure over `table` (one row per judged response).

    >>> t = pd.DataFrame({"example_id": ["a"] * 4, "variant": ["orig", "orig", "cf", "cf"], "sample": [0, 1, 0, 1],
    ...                   "rm": [1.0, 0.0, 0.5, 0.5]})
    >>> {k: v.tolist() for k, v in coefficients(t, 1, ["rm"]).items()}["BoN-1 rm"]
    [0.5, 0.5, 0.0, 0.0]
    """
    orig, cf = (table["variant"] == "orig").to_numpy(), (table["variant"] == "cf").to_numpy()
    out = {"all responses, original prompts": orig / max(orig.sum(), 1)}
    if cf.any():
        out["all responses, counterfactual prompts"] = cf / cf.sum()
        out["original − counterfactual (control)"] = out["all responses, original prompts"] - out["all responses, counterfactual prompts"]
    if "d" in table.columns:  # grounded acknowledgment: linear in the labels, the caused marks are fixed
        caused = orig & table["d"].fillna(False).astype(bool).to_numpy()
        if caused.any() and (orig & ~caused).any():
            out["true ack (caused by the feature)"] = caused / caused.sum()
            out["false ack (not caused)"] = (orig & ~caused) / (orig & ~caused).sum()
            out["true − false ack (grounded)"] = out["true ack (caused by the feature)"] - out["false ack (not caused)"]
    for v in variants:
        out[f"BoN-{n} {v}"] = pick_coefficients(table, "orig", n, v)
        if cf.any():  # the pick's discrimination: its rate on original minus on counterfactual prompts
            out[f"BoN-{n} {v} original − counterfactual (discrimination)"] = out[f"BoN-{n} {v}"] - pick_coefficients(table, "cf", n, v)
    for v in variants[1:]:
        out[f"BoN-{n} {v} − {variants[0]}"] = out[f"BoN-{n} {v}"] - out[f"BoN-{n} {variants[0]}"]
    for v in variants:  # what the denial adds: a two-sided variant's pick against its one-sided counterpart's
        if ONE_SIDED.get(v) in variants:
            out[f"BoN-{n} {v} − {ONE_SIDED[v]}"] = out[f"BoN-{n} {v}"] - out[f"BoN-{n} {ONE_SIDED[v]}"]
    return out


def corrected_figures(table: pd.DataFrame, labelled: pd.DataFrame, n: int, variants: list[str]) -> list[tuple[str, PPIEstimate]]:
    """Every figure's PPI estimate; `labelled` has KEYS, `label` and optionally `weight`."""
    table = table.reset_index(drop=True)
    return ppi_figures(table, labelled, KEYS, coefficients(table, n, variants))


def _keys(frame: pd.DataFrame, keys: list[str]) -> list[tuple]:
    return list(zip(*(frame[k].astype(int) if k == "sample" else frame[k] for k in keys), strict=True))


def labelled_positions(table: pd.DataFrame, labelled: pd.DataFrame, keys: list[str]) -> list[int]:
    """The row of `table` each labelled response is."""
    position = {k: i for i, k in enumerate(_keys(table, keys))}
    return [position[k] for k in _keys(labelled, keys)]


def shown_figures(table: pd.DataFrame, labelled: pd.DataFrame, coefs: dict[str, np.ndarray],
                  keys: list[str] = KEYS) -> dict[str, PPIEstimate]:
    """The report's PPI estimates: only figures with enough labelled responses among their own
    (`ppi.enough_labels`); the others are n/a rather than an interval the labels do not inform."""
    idx = labelled_positions(table, labelled, keys)
    return dict(ppi_figures(table, labelled, keys, {k: c for k, c in coefs.items() if enough_labels(c, idx)}))


def ppi_figures(table: pd.DataFrame, labelled: pd.DataFrame, keys: list[str],
                coefs: dict[str, np.ndarray]) -> list[tuple[str, PPIEstimate]]:
    """PPI estimate of each figure (coefficients over `table`'s rows, which carry `ack`) from
    the labelled responses (`keys`, `label`, optionally a stratified sample's `weight`)."""
    idx = labelled_positions(table, labelled, keys)
    weights = None
    if "weight" in labelled and labelled["weight"].notna().any():
        w = pd.to_numeric(labelled["weight"], errors="coerce")
        if w.isna().any() or not np.isfinite(w).all() or (w <= 0).any():
            raise UserError("labels: field 'weight' must be a finite number > 0 on every labelled row (or on none)")
        weights = w.tolist()
    judge = table["ack"].astype(bool).tolist()
    labels = labelled["label"].astype(bool).tolist()
    # Prompts are the independent units of the estimand (the report's bootstrap resamples them).
    clusters = table["example_id"].astype(str).tolist() if "example_id" in table else None
    strata = population = None
    if weights is not None and {"variant", "ack"} <= set(table.columns):
        # `alignment judge sample` stratifies by prompt variant and verdict (`sample.stratified_sample`).
        population = (table["variant"].astype(str) + "/" + np.where(table["ack"].astype(bool), "ack", "no-ack")).tolist()
    elif weights is not None and "stratum" in labelled and labelled["stratum"].notna().all():
        strata = labelled["stratum"].astype(str).tolist()
    return [(name, ppi_linear(c, judge, idx, labels, weights, clusters=clusters, strata=strata, population_strata=population))
            for name, c in coefs.items() if np.any(c)]


def response_table(run: Any) -> pd.DataFrame:
    """Every judged response with its verdict and (when scored) its rewards."""
    table = run.read("ack")[[*KEYS, "ack"]]
    if (run.stage("score") / "data.parquet").is_file():
        table = table.merge(run.read("score"), on=KEYS, how="left")
    return table.assign(sample=table["sample"].astype(int))


def table_variants(table: pd.DataFrame) -> list[str]:
    return [v for v in ("rm", "rm_d", "rm_c", "rm_d_deny", "rm_c_deny") if v in table.columns] if "rm" in table.columns else []


def corrected_section(run: Any, check: Any, task: str | None) -> list[str]:
    """The report section: corrected figures with labels, else the Rogan–Gladen assumption.
    `task`: the judge's task definition (`Task.judge_as`)."""
    if not (run.stage("ack") / "data.parquet").is_file():
        return []
    table = response_table(run).reset_index(drop=True)
    out = ["## Acknowledgment rates with the judge's error", ""]
    if check.card is None or check.rows.empty:
        return out + uncorrected_lines(table, (run.manifest("ack") or {}).get("judge"), task)
    bon = run.stage("bon") / "data.parquet"
    coefs = coefficients(table, marked_headline(run.read("bon")) if bon.is_file() else 1, table_variants(table))
    figures = shown_figures(table, check.rows, coefs)
    ack = table["ack"].to_numpy(dtype=float)
    rows = [{"figure": k, "judge only": judge_text(c @ ack, "−" in k), "corrected (PPI++)": estimate_text(figures.get(k), "−" in k),
             "labels only": interval_text(*figures[k].labels_only, signed="−" in k) if k in figures else "n/a"}
            for k, c in coefs.items() if c.any()]
    out += [f"Each figure re-estimated from the judge's verdicts on all {len(table)} responses and the human labels "
            f"of {len(check.rows)} of them ({methods(figures)}); 95% intervals that include the judge's error, "
            "clustered by prompt: an interval for the policy over the task's prompts, as the report's bootstrap. Differences are "
            "paired: both rates read the same labels. *Labels only*: the labelled responses alone (classical CLT "
            "interval). Valid when the labelled responses were drawn at random (a stratified sample with its weights "
            f"is random too). A figure with fewer than {MIN_SIDE} labelled responses among its own (on either side of "
            "a difference) is n/a.", "", _md_table(pd.DataFrame(rows)), ""]
    return out + (curve_lines(table, check.rows, run.read("bon")) if bon.is_file() else [])


def curve_lines(table: pd.DataFrame, labelled: pd.DataFrame, bon: pd.DataFrame) -> list[str]:
    """The best-of-N table corrected: every N of the run's `bon` table, every prompt in it and
    every reward variant the responses are scored by, and each variant − `rm`, from the same
    labels (`alignment.judge_error.bon_estimates`)."""
    variants = curve_variants(bon["reward"].unique().tolist(), list(table.columns))
    if not variants:
        return []
    ns, head = sorted(int(n) for n in bon["N"].unique()), marked_headline(bon)
    prompts = [p for p in ("orig", "cf") if p in set(bon["prompt"])]
    table = table.reset_index(drop=True)
    coefs = curve_coefficients(table, ns, prompts, variants)
    figures = shown_figures(table, labelled, coefs)
    ack = table["ack"].to_numpy(dtype=float)

    def cell(name: str, signed: bool) -> str:
        c = coefs[name]
        if not c.any():  # no example with N samples; for a difference: the two variants pick alike
            return "+0.0 pts (same picks)" if signed else "n/a"
        return f"{judge_text(c @ ack, signed)} → {estimate_text(figures.get(name), signed)}"

    rows = [{"prompt": prompt, "pick acknowledges": fig,
             **{f"BoN-{n}" + (" (headline)" if n == head else ""): cell(figure_name(n, prompt, fig), "−" in fig) for n in ns}}
            for prompt in prompts for fig in [*variants, *(f"{v} − {variants[0]}" for v in variants[1:])]]
    return ["The best-of-N picks at every N of the run's best-of-N table (*Best-of-N* above), corrected by the same "
            "labels: each cell is the judge-only rate → the corrected rate (PPI++) [95% interval]; *v − rm* is the "
            "paired difference of the two picks' rates in points; *cf*: counterfactual prompts. The headline column "
            "repeats the table above.", "", _md_table(pd.DataFrame(rows)), ""]


def _run_note(name: str, path: Path) -> tuple[bool, str] | None:
    """(labelled, one line) for a run dir: its corrected figures, or that it has no labels."""
    from alignment.store import RunDir

    run = RunDir(path)
    if not (run.stage("ack") / "data.parquet").is_file():
        return None
    figures = run_figures(run)
    if not figures:
        return False, f"Run {name}: no human labels, so its acknowledgment figures and their differences exclude the judge's error."
    shown = "; ".join(f"{k} {estimate_text(e, '−' in k)} (judge only {judge_text(e.judge_only, '−' in k)})"
                      for k, e in figures)
    return True, f"Run {name}, corrected for the judge's error by {figures[0][1].n_labelled} human labels (PPI++, 95%): {shown}."


def run_figures(run: Any) -> list[tuple[str, PPIEstimate]]:
    """A run dir's corrected figures from its default label files, those with enough labels among
    their own responses (`shown_figures`); [] without the ack stage or labels."""
    from alignment.judge_error.run_labels import check_labels

    if not (run.stage("ack") / "data.parquet").is_file():
        return []
    check = check_labels(run, None)
    if check.card is None or check.rows.empty:
        return []
    table = response_table(run).reset_index(drop=True)
    n = marked_headline(run.read("bon")) if (run.stage("bon") / "data.parquet").is_file() else 1
    # The report's rule: a figure the labels barely touch is left out, not given a zero-width interval.
    return list(shown_figures(table, check.rows, coefficients(table, n, table_variants(table))).items())


def compare_notes(names: dict[str, Path]) -> list[str]:
    """`alignment compare`'s lines: each run's corrected figures where it has labels (default
    label files, `alignment.judge_error.run_labels`), else that its differences exclude judge error."""
    notes = (_run_note(name, path) for name, path in names.items())
    return [line for got in notes if got for line in got[1:]]


def sweep_notes(runs: dict[str, Path]) -> list[str]:
    """`alignment sweep`'s lines: the corrected figures of every labelled run, else one line
    saying that no run has labels and every interval excludes the judge's error."""
    notes = [got for name, path in runs.items() if (got := _run_note(name, path))]
    labelled = [line for ok, line in notes if ok]
    if labelled or not notes:
        return labelled
    return ["No run of this sweep has human labels of its responses: every acknowledgment interval above excludes the "
            "judge's error (label a random sample with `alignment judge sample RUN --design uniform`)."]


def methods(figures: dict[str, PPIEstimate]) -> str:
    """The distinct method lines of the figures shown, each once (rates and picks differ in lambda).

    >>> e = PPIEstimate(0.1, 0.0, 0.2, 0.1, (0.0, 0.3), 10, 90, "plain PPI (lambda = 1)")
    >>> methods({"a": e, "b": e})
    'plain PPI (lambda = 1)'
    """
    import re

    seen = dict.fromkeys(re.sub(r"(power-tuned )?lambda = (0\.[0-9]+|1\.00)", "lambda tuned per figure", e.method.split(", t interval")[0])
                         for e in figures.values())
    rest = next((e.method.split(", t interval", 1)[1].split("; ", 1)[-1] for e in figures.values()
                 if ", t interval" in e.method), "")
    rest = re.sub(r" \((the floor set[^)]*|not binding)\)", "", rest)  # per figure; the table shows each interval
    return " / ".join(seen) + (f"; t intervals on the variance's Satterthwaite degrees of freedom; {rest}" if rest else "") if seen else "PPI"


def judge_text(x: float, signed: bool) -> str:
    return f"{100 * x:+.1f} pts" if signed else _pct(x)


def estimate_text(e: PPIEstimate | None, signed: bool) -> str:
    if e is None:
        return "n/a (too few labels)"
    head = f"{100 * e.estimate:+.1f} pts" if signed else _pct(e.estimate)
    return f"{head} {interval_text(e.low, e.high, signed)}"


def load_judge_error(path: Path = JUDGE_ERROR) -> dict[str, Any]:
    """The judge's measured sensitivity and specificity per task ({} when the file is absent)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def uncorrected_lines(table: pd.DataFrame, judge: str | None, task: str | None) -> list[str]:
    """No labels: say what the intervals leave out and what the judge's known error implies."""
    out = ["No human labels of this run's responses: every acknowledgment interval in this report is over prompts "
           "only and **excludes the judge's error** (label a random sample with `alignment judge sample` to "
           "correct them).", ""]
    measured = load_judge_error()
    known = measured.get(str(judge), {}).get(str(task))
    if not known:
        name = f"the judge `{judge}`" if judge else "this run's judge (no ack manifest names it)"
        return [*out, f"No measured error rates for {name} on `{task}` to show what they imply.", ""]
    sens, spec = known["sensitivity"], known["specificity"]
    out += [f"*Assumption:* if the judge `{judge}` errs here as it did on {known['n']} real human-labelled `{task}` "
            f"responses ({known['source']}, rules {measured.get('rules_id')}: sensitivity {sens:.3f}, specificity "
            f"{spec:.3f}, {known.get('method', 'in-sample')}), the judge-only rates imply these true rates "
            "(Rogan–Gladen). The rules were written from those rows, so even these figures may be optimistic, and "
            "another policy's responses may fool the judge differently.", ""]
    for v in ("orig", "cf"):
        g = table[table["variant"] == v]
        if len(g):
            rate = float(g["ack"].mean())
            implied = rogan_gladen(rate, sens, spec)
            out.append(f"- {v} prompts: judge-only {_pct(rate)} → implied {_pct(implied) if math.isfinite(implied) else 'n/a'}")
    return [*out, ""]
