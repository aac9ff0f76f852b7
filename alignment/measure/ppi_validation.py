"""Does the prediction-powered rate keep its promise on real labelled responses?

    python -m alignment.measure.ppi_validation [--data ../shared/data/ack_labels] [--draws 2000] [--n 20]
                                            [--seed 0] [--out results/ppi_validation]

On each task's development half (real Llama-3 responses, each labelled by a person) the judge
labels every row; then, many times over, `n` rows drawn uniformly at random without replacement
play the part of the human sample and `alignment.judge_error.ppi.ppi_rate` estimates the half's human
acknowledgment rate from them and the judge's verdicts on all rows. Measured: how often each
interval covers the half's human rate (nominal 95%), the median widths (PPI++, plain PPI with
lambda = 1, and the labels-only Wilson interval) and the judge-only rate's error. Nothing here is
fitted: the draws are uniform, the judge is the shipped one and the estimator has no settings.
The judge's rules were written while reading these rows, so its agreement here is optimistic;
`--flip F` adds a stress case where, in every draw afresh, each verdict is flipped with
probability F (a judge whose errors were not fitted to these rows).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from alignment.analysis.stats import wilson_interval
from alignment.judge_error.ppi import ppi_rate

TASKS = ("mathbook", "biasqa")
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "ack_labels"


@dataclass(frozen=True)
class Simulation:
    """One task's simulation: what was drawn, and what the intervals did."""

    task: str
    rows: int
    human_rate: float
    judge_rate: float
    judge_agreement: float
    flip: float
    draws: int
    n: int
    coverage: dict[str, float]
    median_width: dict[str, float]
    width_ratio: float  # median PPI++ width / median Wilson width
    judge_only_coverage: float  # share of draws whose judge-only Wilson interval holds the human rate

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def simulate(task: str, labels: list[bool], judge: list[bool], draws: int, n: int, seed: int,
             flip: float = 0.0) -> Simulation:
    """Coverage and width over `draws` uniform samples of `n` labelled rows.

    A perfect judge and 8 labels: every label agrees, so the interval rests on the small-sample
    floor (one pseudo-disagreement) and is never narrower than the labels' own; with so few labels
    the t quantile on the floor's few degrees of freedom makes it somewhat wider than Wilson's.

    >>> labels = [True] * 5 + [False] * 15
    >>> s = simulate("t", labels, labels, draws=50, n=8, seed=0)
    >>> s.coverage["labels-only Wilson"] >= 0.9, 0.9 < s.width_ratio < 1.5, s.judge_only_coverage
    (True, True, 1.0)
    """
    from ppi_py import ppi_mean_ci

    rng = np.random.default_rng(seed)
    y, shipped = np.asarray(labels, dtype=bool), np.asarray(judge, dtype=bool)
    truth = float(y.mean())
    hits: dict[str, list[bool]] = {"PPI++": [], "PPI (lambda=1)": [], "labels-only Wilson": [], "judge-only": []}
    widths: dict[str, list[float]] = {k: [] for k in hits}
    rates, agree = [], []
    for _ in range(draws):
        j = np.where(rng.random(len(y)) < flip, ~shipped, shipped) if flip else shipped
        rates.append(j.mean())
        agree.append((j == y).mean())
        idx = rng.choice(len(y), size=n, replace=False)
        est = ppi_rate(j.tolist(), idx.tolist(), y[idx].tolist())
        lo1, hi1 = (min(max(float(np.ravel(b)[0]), 0.0), 1.0)
                    for b in ppi_mean_ci(y[idx].astype(float), j[idx].astype(float), j.astype(float), alpha=0.05, lam=1))
        for name, (lo, hi) in {"PPI++": (est.low, est.high), "PPI (lambda=1)": (lo1, hi1),
                               "labels-only Wilson": est.labels_only,
                               "judge-only": wilson_interval(int(j.sum()), len(j))}.items():
            hits[name].append(lo <= truth <= hi)
            widths[name].append(hi - lo)
    med = {k: float(np.median(v)) for k, v in widths.items()}
    return Simulation(
        task=task, rows=len(y), human_rate=truth, judge_rate=float(np.mean(rates)), judge_agreement=float(np.mean(agree)),
        flip=flip, draws=draws, n=n, coverage={k: float(np.mean(v)) for k, v in hits.items()}, median_width=med,
        width_ratio=med["PPI++"] / med["labels-only Wilson"], judge_only_coverage=float(np.mean(hits["judge-only"])),
    )


def load(data: Path, task: str) -> tuple[list[bool], list[bool]]:
    """The half's human labels and the default judge's verdicts on the same rows."""
    from alignment.judge import JudgeConfig, make_judge
    from alignment.judge_error.labels import read_rows

    rows = [r for r in read_rows(data / f"{task}_dev.jsonl", ("full_response", "ack_label")) if r["ack_label"] is not None]
    verdicts = make_judge(JudgeConfig()).judge(task, [r["full_response"] for r in rows])
    return [bool(r["ack_label"]) for r in rows], [v.ack for v in verdicts]


def error_rates(labels: list[bool], judge: list[bool]) -> dict[str, Any]:
    """The judge's sensitivity and specificity against the labels, with the counts.

    >>> error_rates([True, True, False, False, False], [True, False, False, True, False])
    {'sensitivity': 0.5, 'specificity': 0.6666666666666666, 'positives': 2, 'negatives': 3, 'n': 5}
    """
    pos = [j for j, y in zip(judge, labels, strict=True) if y]
    neg = [not j for j, y in zip(judge, labels, strict=True) if not y]
    return {"sensitivity": sum(pos) / len(pos), "specificity": sum(neg) / len(neg), "positives": len(pos),
            "negatives": len(neg), "n": len(labels)}


def cross_validated_rates(data: Path, task: str) -> dict[str, Any]:
    """The keyword judge's sensitivity and specificity on the development half, each row judged
    with the rules that it alone motivated switched off (`provenance.loo_verdicts`): the rules
    were written from these rows, so the shipped rules' own figures there are in-sample (1.0 on
    Math Book). Wilson intervals beside them: the half has few positives."""
    from alignment.judge_error.labels import read_rows
    from alignment.judge_error.provenance import loo_verdicts

    rows = [r for r in read_rows(data / f"{task}_dev.jsonl", ("id", "full_response", "ack_label")) if r["ack_label"] is not None]
    labels = [bool(r["ack_label"]) for r in rows]
    out = error_rates(labels, loo_verdicts(task, rows))
    tp = round(out["sensitivity"] * out["positives"])
    tn = round(out["specificity"] * out["negatives"])
    return out | {
        "sensitivity_ci": list(wilson_interval(tp, out["positives"])), "specificity_ci": list(wilson_interval(tn, out["negatives"])),
        "method": "provenance leave-one-out: each row judged without the rules it alone motivated",
        "source": f"{task}_dev.jsonl (real Llama-3 responses, development half)",
    }


def markdown(sims: list[Simulation], command: str) -> str:
    """The results page: one table row per task and judge case, with the command."""
    head = ("| task | judge | rows | human rate | judge rate | agreement | PPI++ coverage | PPI (λ=1) coverage | Wilson coverage "
            "| median width PPI++ | median width Wilson | ratio | judge-only coverage |")
    lines = [f"# Prediction-powered acknowledgment rates on real labels\n\n`{command}`\n", head, "|" + "---|" * 13]
    for s in sims:
        judge = "keyword" + (f", {100 * s.flip:.0f}% flipped" if s.flip else "")
        c, w = s.coverage, s.median_width
        lines.append(
            f"| {s.task} | {judge} | {s.rows} | {s.human_rate:.3f} | {s.judge_rate:.3f} | {s.judge_agreement:.3f} "
            f"| {c['PPI++']:.3f} | {c['PPI (lambda=1)']:.3f} | {c['labels-only Wilson']:.3f} | {w['PPI++']:.3f} "
            f"| {w['labels-only Wilson']:.3f} | {s.width_ratio:.2f} | {c['judge-only']:.3f} |"
        )
    n, draws = sims[0].n, sims[0].draws
    lines += ["", f"{draws} draws of {n} labelled rows per case, uniform without replacement; nominal coverage 95%. "
              "Coverage: share of draws whose interval holds the half's human rate. Ratio: median PPI++ width over "
              "median labels-only Wilson width. Judge-only coverage: share of draws in which the Wilson interval of the "
              "judge's rate over all rows (what a judge-only report prints, error-free judge assumed) holds the human "
              "rate; without flips the judge is the same in every draw, so it is 0 or 1. Judge rate and agreement: "
              "means over draws.", "", *verdicts(sims), ""]
    return "\n".join(lines)


def verdicts(sims: list[Simulation]) -> list[str]:
    """The targets the corrected estimate must meet, checked on the shipped judge's rows (the flipped cases are stress only)."""
    out = ["Targets (shipped judge): coverage >= 0.88, median width <= 1.1x Wilson, narrower than Wilson on Math Book.", ""]
    for s in sims:
        ok = s.coverage["PPI++"] >= 0.88 and s.width_ratio <= 1.1 and (s.task != "mathbook" or s.width_ratio < 1)
        case = f"{s.task}" + (f" ({100 * s.flip:.0f}% flipped)" if s.flip else "")
        out.append(f"- {case}: {'met' if ok else 'NOT met'} (coverage {s.coverage['PPI++']:.3f}, ratio {s.width_ratio:.2f})")
    return [*out, "", "Caveats: the keyword judge's rules were written while reading these rows, so its agreement "
            "here is optimistic (the flipped cases show a judge that errs); the interval treats the judged rows as a "
            "sample from a larger population while the target here is the half's own rate, so coverage errs high."]


def main(argv: list[str] | None = None) -> int:
    from alignment.store import write_text

    p = argparse.ArgumentParser(prog="python -m alignment.measure.ppi_validation", description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with {task}_dev.jsonl")
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--n", type=int, default=20, help="labelled rows per draw")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--flip", type=float, default=0.0, help="also run with this share of judge verdicts flipped (0: no)")
    p.add_argument("--out", type=Path, default=Path("results/ppi_validation"), help="writes OUT.md and OUT.json")
    p.add_argument("--error-rates", type=Path, default=None,
                   help="also write the judge's sensitivity/specificity per task here (alignment/data/labels/judge_error.json)")
    args = p.parse_args(argv)
    sims, rates = [], {}
    for task in TASKS:
        labels, judge = load(args.data, task)
        rates[task] = cross_validated_rates(args.data, task)
        sims.append(simulate(task, labels, judge, args.draws, args.n, args.seed))
        if args.flip:
            sims.append(simulate(task, labels, judge, args.draws, args.n, args.seed, flip=args.flip))
    command = "python -m alignment.measure.ppi_validation " + " ".join(argv if argv is not None else __import__("sys").argv[1:])
    if args.error_rates:
        from alignment.judge.keyword import rules_id

        rates = {"keyword": rates, "rules_id": rules_id(), "command": command.strip()}
        write_text(args.error_rates, json.dumps(rates, indent=2) + "\n")
    write_text(args.out.with_suffix(".md"), markdown(sims, command.strip()))
    write_text(args.out.with_suffix(".json"), json.dumps({"command": command.strip(), "simulations": [s.as_dict() for s in sims]}, indent=2) + "\n")
    print(markdown(sims, command.strip()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
