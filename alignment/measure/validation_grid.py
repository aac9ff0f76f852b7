"""Do the corrected intervals hold where the toolkit uses them? A simulation grid.

    alignment judge grid [--replicates 300] [--seed 0] [--data ../shared/data/ack_labels] [--out results/ppi_grid]

Populations like a run's: `PROMPTS` prompts with `SAMPLES` responses each, half on the original
prompt and half on the counterfactual one; each prompt has its own true acknowledgment rate
(Beta-distributed around the cell's rate, so prompts differ), the counterfactual half
acknowledging `CF_RATIO` as often. Two reward models score every response (`rm` prefers
acknowledging ones a little, `rm_d` does not), and the best-of-`PICK_N` picks are weighted as the
bon stage weights them. The judge's verdicts are drawn with the sensitivity and specificity of
one of the project's real untuned judges on the development half of the human-labelled rows:
the keyword rules with every rule a row alone motivated switched off for that row
(`provenance.loo_verdicts`, frozen rules) and a TF-IDF classifier fitted only on the written
rows (`provenance.written_verdicts`). Each replicate draws the judge's rates afresh from their
Jeffreys posterior (the dev counts are small), so the judge's error is uncertain as it is in use.

Cells: true rate x label budget x design (uniform; stratified by variant and verdict with Neyman
allocation from a fixed prior, `alignment.judge_error.allocation.PRIOR`) x figure (the rate over all
responses; original - counterfactual rate; the best-of-8 pick's rate under `rm_d`; the paired
pick difference `rm_d` - `rm`) x judge. The truth is each figure over the prompts' distribution
(the estimand), from one large population per rate. Nothing is tuned to the development rows:
they only supply the judges' error counts.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from math import comb
from pathlib import Path
from typing import Any

import numpy as np

RATES = (0.03, 0.05, 0.20, 0.40)
BUDGETS = (30, 60, 120)
DESIGNS = ("uniform", "stratified")
FIGURES = ("rate", "orig − cf", "BoN-8 rm_d", "BoN-8 rm_d − rm")
PROMPTS, SAMPLES, PICK_N = 200, 16, 8
CONCENTRATION = 4.0  # Beta a + b of the prompts' true rates: between-prompt spread (intra-class correlation 0.2)
CF_RATIO = 0.5
RM_PREFERS_ACK = 0.5  # rm's reward shift for an acknowledging response, in units of its noise


@dataclass(frozen=True)
class JudgeErrors:
    """A real judge's confusion counts on a task's development half."""

    name: str
    tp: int
    fn: int
    tn: int
    fp: int

    def draw(self, rng: np.random.Generator) -> tuple[float, float]:
        """(sensitivity, specificity) from their Jeffreys posteriors."""
        return float(rng.beta(self.tp + 0.5, self.fn + 0.5)), float(rng.beta(self.tn + 0.5, self.fp + 0.5))


def confusion(name: str, labels: list[bool], verdicts: list[bool]) -> JudgeErrors:
    """Counts of a judge's verdicts against labels.

    >>> confusion("j", [True, True, False], [True, False, True])
    JudgeErrors(name='j', tp=1, fn=1, tn=0, fp=1)
    """
    pairs = list(zip(labels, verdicts, strict=True))
    return JudgeErrors(name, sum(y and v for y, v in pairs), sum(y and not v for y, v in pairs),
                       sum(not y and not v for y, v in pairs), sum(v and not y for y, v in pairs))


def pick_weight_by_rank(samples: int = SAMPLES, n: int = PICK_N) -> np.ndarray:
    """The best-of-n pick weight of the r-th best of `samples` (as `alignment.bon.pick_weights`).

    >>> pick_weight_by_rank(3, 2).round(3).tolist()
    [0.667, 0.333, 0.0]
    """
    return np.array([comb(samples - 1 - r, n - 1) / comb(samples, n) for r in range(samples)])


def population(rng: np.random.Generator, rate: float, prompts: int = PROMPTS) -> dict[str, np.ndarray]:
    """True labels, prompt ids, variants (1: original) and both rewards, prompt-major."""
    orig_mean = 2 * rate / (1 + CF_RATIO)  # so that the rate over all responses is `rate`
    a = orig_mean * CONCENTRATION
    p = rng.beta(a, CONCENTRATION - a, size=prompts)
    variant = np.tile(np.arange(SAMPLES) < SAMPLES // 2, prompts)
    p_resp = np.repeat(p, SAMPLES) * np.where(variant, 1.0, CF_RATIO)
    y = rng.random(prompts * SAMPLES) < p_resp
    rm = rng.standard_normal(len(y)) + RM_PREFERS_ACK * y
    return {"y": y, "prompt": np.repeat(np.arange(prompts), SAMPLES), "orig": variant, "rm": rm,
            "rm_d": rng.standard_normal(len(y))}


def coefficients(pop: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each figure's coefficient per response (`alignment.judge_error.run_estimates` shapes)."""
    m, g = len(pop["y"]), int(pop["prompt"].max()) + 1
    orig = pop["orig"].astype(float)
    by_rank = pick_weight_by_rank()

    def pick(reward: np.ndarray) -> np.ndarray:
        ranks = np.argsort(np.argsort(-reward.reshape(g, SAMPLES), axis=1, kind="stable"), axis=1)
        return by_rank[ranks].ravel() / g

    rm_d, rm = pick(pop["rm_d"]), pick(pop["rm"])
    return {"rate": np.full(m, 1 / m), "orig − cf": orig / orig.sum() - (1 - orig) / (1 - orig).sum(),
            "BoN-8 rm_d": rm_d, "BoN-8 rm_d − rm": rm_d - rm}


def truths(rate: float, seed: int, prompts: int = 40_000) -> dict[str, float]:
    """Each figure over the prompts' distribution, from one large population."""
    pop = population(np.random.default_rng(seed), rate, prompts)
    return {k: float(c @ pop["y"]) for k, c in coefficients(pop).items()}


def draw_labels(rng: np.random.Generator, pop: dict[str, np.ndarray], judge: np.ndarray, n: int,
                design: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Labelled positions, weights and every response's stratum (None, None for the uniform design)."""
    from alignment.judge_error.allocation import PRIOR, neyman, residual_shares

    if design == "uniform":
        return rng.choice(len(judge), size=n, replace=False), None, None
    key = pop["orig"].astype(int) * 2 + judge.astype(int)
    members = {h: np.flatnonzero(key == h) for h in range(4) if (key == h).any()}
    spreads = {}
    for h in members:
        in_variant = pop["orig"] == bool(h // 2)
        false_yes, false_no = residual_shares(float(judge[in_variant].mean()), *PRIOR)
        q = false_yes if h % 2 else false_no
        spreads[h] = math.sqrt(q * (1 - q))
    take = neyman({h: len(r) for h, r in members.items()}, spreads, n)
    idx, w = [], []
    for h, rows in members.items():
        if take[h]:
            idx.append(rng.choice(rows, size=take[h], replace=False))
            w += [len(rows) / take[h]] * take[h]
    return np.concatenate(idx), np.array(w), key


def judged(rng: np.random.Generator, y: np.ndarray, errors: JudgeErrors) -> np.ndarray:
    """The judge's verdicts: each response judged alone, with rates drawn from `errors`."""
    sens, spec = errors.draw(rng)
    return np.where(y, rng.random(len(y)) < sens, rng.random(len(y)) < 1 - spec)


def replicate(rng: np.random.Generator, rate: float, errors: JudgeErrors) -> list[dict[str, Any]]:
    """One population and judge; every budget, design and figure estimated on it."""
    from alignment.analysis.stats import wilson_interval
    from alignment.judge_error.ppi import enough_labels, ppi_linear

    pop = population(rng, rate)
    y, f = pop["y"], judged(rng, pop["y"], errors)
    coefs = coefficients(pop)
    out = []
    for n in BUDGETS:
        for design in DESIGNS:
            idx, w, strata = draw_labels(rng, pop, f, n, design)
            for name, c in coefs.items():
                row = {"rate": rate, "n": n, "design": design, "figure": name,
                       "positives": int((y[idx] & (c[idx] != 0)).sum())}
                if not enough_labels(c, idx.tolist()):
                    out.append(row | {"shown": False})
                    continue
                e = ppi_linear(c, f, idx, y[idx], w, clusters=pop["prompt"], population_strata=strata)
                labels = e.labels_only
                if name == "rate" and design == "uniform":
                    labels = wilson_interval(int(y[idx].sum()), n)
                out.append(row | {"shown": True, "ci": (e.low, e.high), "labels_ci": labels, "lam": e.lam})
    return out


def summarise(records: list[dict[str, Any]], truth: dict[float, dict[str, float]]) -> list[dict[str, Any]]:
    """One cell per (rate, n, design, figure): coverage and median widths of the shown intervals."""
    cells: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        cells.setdefault((r["judge"], r["rate"], r["n"], r["design"], r["figure"]), []).append(r)
    from alignment.analysis.stats import wilson_interval

    out = []
    for (judge, rate, n, design, figure), rows in cells.items():
        t = truth[rate][figure]
        shown = [r for r in rows if r["shown"]]
        width = [r["ci"][1] - r["ci"][0] for r in shown]
        lwidth = [r["labels_ci"][1] - r["labels_ci"][0] for r in shown]
        med, lmed = (float(np.median(x)) if x else float("nan") for x in (width, lwidth))
        hits = sum(r["ci"][0] <= t <= r["ci"][1] for r in shown)
        out.append({
            "judge": judge, "rate": rate, "n": n, "design": design, "figure": figure, "truth": t,
            "replicates": len(rows), "shown": len(shown),
            "expected_positives": float(np.mean([r["positives"] for r in rows])),
            "coverage": hits / len(shown) if shown else float("nan"),
            "coverage_interval": list(wilson_interval(hits, len(shown))),
            "labels_only_coverage": _share([r["labels_ci"][0] <= t <= r["labels_ci"][1] for r in shown]),
            "zero_width": sum(x <= 1e-12 for x in width), "median_width": med, "median_labels_only_width": lmed,
            "width_ratio": med / lmed if lmed > 0 else float("nan"),
            "mean_lambda": float(np.mean([r["lam"] for r in shown])) if shown else float("nan"),
        })
    return out


def _share(hits: list[bool]) -> float:
    return float(np.mean(hits)) if hits else float("nan")


def targets(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The grid's targets over the cells with at least 2 expected positives among the labels.

    A cell's coverage is a share of finitely many replicates, so it carries Monte-Carlo noise: a cell
    fails the coverage target only when the upper end of its 95% Wilson interval is below 90%
    (`coverage_credibly_below_90`); the cells whose point coverage is below 90% are counted too.
    """
    judged_cells = [c for c in cells if c["expected_positives"] >= 2 and c["shown"]]
    low = [c for c in judged_cells if c["coverage"] < 0.90]
    credibly_low = [c for c in judged_cells if c["coverage_interval"][1] < 0.90]
    wide = [c for c in judged_cells if c["width_ratio"] > 1.1]
    return {"cells": len(cells), "cells_with_2_positives": len(judged_cells), "coverage_below_90": len(low),
            "coverage_credibly_below_90": len(credibly_low),
            "zero_width_intervals": sum(c["zero_width"] for c in cells), "width_ratio_above_1_1": len(wide),
            "min_coverage": min((c["coverage"] for c in judged_cells), default=float("nan")),
            "max_width_ratio": max((c["width_ratio"] for c in judged_cells), default=float("nan"))}


def judges(data: Path) -> list[JudgeErrors]:
    """The real untuned judges' confusion counts on each task's development half."""
    from alignment.judge_error.labels import read_rows
    from alignment.judge_error.provenance import loo_verdicts, written_verdicts

    out = []
    for task in ("mathbook", "biasqa"):
        rows = [r for r in read_rows(data / f"{task}_dev.jsonl", ("id", "full_response", "ack_label"))
                if r["ack_label"] is not None]
        y = [bool(r["ack_label"]) for r in rows]
        out.append(confusion(f"{task} rules (provenance LOO)", y, loo_verdicts(task, rows)))
        out.append(confusion(f"{task} TF-IDF (written rows)", y, written_verdicts(task, rows)))
    return out


def markdown(cells: list[dict[str, Any]], errors: list[JudgeErrors], summary: dict[str, Any], command: str) -> str:
    """The results page: the judges, the targets, then one table row per cell."""
    lines = [f"# Corrected intervals on a simulated grid\n\n`{command}`\n", __doc__.split("\n\n", 2)[2].strip(), "",
             "| judge | TP | FN | TN | FP |", "|---|---|---|---|---|"]
    lines += [f"| {e.name} | {e.tp} | {e.fn} | {e.tn} | {e.fp} |" for e in errors]
    lines += ["", f"Targets over the {summary['cells_with_2_positives']} of {summary['cells']} cells with at least 2 "
              f"expected positives among the labels: coverage >= 90% (cells credibly below: "
              f"{summary['coverage_credibly_below_90']}; cells whose simulated coverage is below 90%: "
              f"{summary['coverage_below_90']}, lowest {summary['min_coverage']:.3f}); no zero-width interval (found: "
              f"{summary['zero_width_intervals']}); median width <= 1.1x labels-only (cells above: "
              f"{summary['width_ratio_above_1_1']}, largest {summary['max_width_ratio']:.2f}).", "",
              "A cell's coverage is a share of its replicates, so it carries Monte-Carlo noise (a true 95% has a "
              "standard error of 1.3 points over 300 replicates, 2.8 over 60, and among hundreds of cells some fall "
              "below 90% by chance alone). The rule: a cell fails the coverage target when the upper end of the 95% Wilson "
              "interval of its coverage (column `coverage MC 95%`) is below 90%, i.e. when its coverage is credibly "
              "below 90%; the cells whose simulated coverage is below 90% are counted beside them.", "",
              "Coverage: share of shown intervals holding the truth (nominal 95%). Widths: medians of the shown "
              "intervals; labels-only: Wilson for the rate under the uniform design, else the same estimator with "
              "lambda = 0. Shown: replicates with at least 2 labelled responses in the figure (on each side of a "
              "difference); pos: mean labelled positives in the figure.", "",
              "| judge | rate | n | design | figure | truth | shown | pos | coverage | coverage MC 95% | labels-only cov. "
              "| width | labels-only width | ratio | zero | mean λ |", "|" + "---|" * 16]
    for c in cells:
        lines.append(f"| {c['judge']} | {c['rate']:.2f} | {c['n']} | {c['design']} | {c['figure']} | {c['truth']:+.3f} "
                     f"| {c['shown']}/{c['replicates']} | {c['expected_positives']:.1f} | {c['coverage']:.3f} "
                     f"| {c['coverage_interval'][0]:.3f}-{c['coverage_interval'][1]:.3f} "
                     f"| {c['labels_only_coverage']:.3f} | {c['median_width']:.3f} | {c['median_labels_only_width']:.3f} "
                     f"| {c['width_ratio']:.2f} | {c['zero_width']} | {c['mean_lambda']:.2f} |")
    return "\n".join(lines) + "\n"


def run_grid(args: argparse.Namespace) -> int:
    from alignment.errors import UserError
    from alignment.store import write_text

    if args.replicates < 1:
        raise UserError(f"--replicates: must be >= 1, got {args.replicates}")
    errors = judges(Path(args.data))
    truth = {rate: truths(rate, args.seed + 1_000_003) for rate in RATES}
    rng = np.random.default_rng(args.seed)
    records = []
    for e in errors:
        for rate in RATES:
            for _ in range(args.replicates):
                records += [r | {"judge": e.name} for r in replicate(rng, rate, e)]
    cells = summarise(records, truth)
    summary = targets(cells)
    command = f"alignment judge grid --replicates {args.replicates} --seed {args.seed}"
    out = Path(args.out)
    write_text(out.with_suffix(".json"), json.dumps({"command": command, "judges": [e.__dict__ for e in errors],
                                                    "targets": summary, "cells": cells}, indent=2) + "\n")
    write_text(out.with_suffix(".md"), markdown(cells, errors, summary, command))
    print(json.dumps(summary, indent=2))
    return 0


def register_grid(inner: Any) -> None:
    from alignment.measure.ppi_validation import DEFAULT_DATA

    g = inner.add_parser("grid", help="simulate the corrected intervals' coverage and width on a realistic grid")
    g.add_argument("--replicates", type=int, default=300, help="populations per judge and rate (default 300)")
    g.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    g.add_argument("--data", default=str(DEFAULT_DATA), help="folder with {task}_dev.jsonl (the judges' error counts)")
    g.add_argument("--out", default="results/ppi_grid", help="writes OUT.json and OUT.md")
    g.set_defaults(func=run_grid)
