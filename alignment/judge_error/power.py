"""How many human labels a corrected figure needs, before labelling.

    alignment judge plan RUN --figure "all responses, original prompts" --width 0.10

For a uniform sample of n of the run's M judged responses, the corrected figure
(`alignment.judge_error.ppi`, plain PPI, lambda = 1: the tuned lambda can only narrow it) has variance

    V(n) = V_judge + (M**2 / n) * Var_k(c_k r_k)

with V_judge the spread of the judge's verdicts between prompts (known from the run: every
response is judged) and r_k = label − verdict the judge's error on response k. The error's
moments come from a pilot (the run's labels, when it has any: the shares of the judge's "yes"
and "no" that people overturn, Jeffreys-smoothed) or else from the judge's measured sensitivity
and specificity on the task (`judge_error.json`, `alignment.judge_error.allocation`). Solving
2 z sqrt(V(n)) = width gives n. `ppi_py`'s power functions (`ppi_mean_power`) trade labels
against extra unlabelled predictions at a cost; here every response is already judged and the
prompts are clusters, so the formula above is solved directly.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from alignment.errors import UserError, did_you_mean


def labels_needed(c: np.ndarray, f: np.ndarray, clusters: np.ndarray | None, false_yes: float, false_no: float,
                  width: float, confidence: float = 0.95) -> tuple[int | None, float]:
    """(labels for a `width`-wide interval, possibly more than the M responses, or None when the
    judge part alone is wider; the judge part's width alone).

    A 2,000-response rate, judge rate 10%, responses independent: the judge part is narrow, so
    the labels set the width.

    >>> f = np.zeros(2000); f[::10] = 1
    >>> n, floor = labels_needed(np.full(2000, 1 / 2000), f, None, 0.3, 0.02, 0.10)
    >>> n, round(floor, 3)
    (80, 0.026)
    """
    from alignment.judge_error.clustered import Design, judge_influences, variance
    from alignment.judge_error.ppi import z_quantile

    m = len(c)
    design = Design(clusters=None if clusters is None else np.unique(clusters, return_inverse=True)[1].ravel())
    v_judge = variance(judge_influences(c, f, 1.0, design))
    z = z_quantile(confidence)
    q = np.where(f > 0, false_yes, false_no)  # P(label differs from the verdict)
    sign = np.where(f > 0, -1.0, 1.0)
    spread = float(np.mean(c**2 * q) - np.mean(c * sign * q) ** 2)
    room = (width / (2 * z)) ** 2 - v_judge
    floor = 2 * z * math.sqrt(v_judge)
    if room <= 0:
        return None, floor
    return max(math.ceil(m**2 * spread / room), 2), floor


def pilot_shares(judge: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Jeffreys-smoothed shares of the judge's "yes" and of its "no" that the labels overturn.

    >>> [round(x, 3) for x in pilot_shares(np.array([1, 1, 0, 0, 0]), np.array([1, 0, 0, 0, 1]))]
    [0.5, 0.375]
    """
    yes, no = judge > 0, judge <= 0
    return (float((np.sum(yes & (labels <= 0)) + 0.5) / (yes.sum() + 1)), float((np.sum(no & (labels > 0)) + 0.5) / (no.sum() + 1)))


def plan(run_path: str | Path, figure: str, width: float, task: str | None = None) -> list[str]:
    """The plan's lines for one figure of a finished run."""
    from alignment.analysis.bon import marked_headline
    from alignment.judge_error.allocation import residual_shares
    from alignment.judge_error.run_estimates import (
        coefficients,
        labelled_positions,
        response_table,
        table_variants,
    )
    from alignment.judge_error.run_labels import check_labels
    from alignment.judge_error.sample import judge_prior, task_of
    from alignment.store import RunDir

    if not 0 < width < 2:
        raise UserError(f"--width: must be a positive width (a fraction, below 2), got {width}")
    run = RunDir(Path(run_path))
    if not (run.stage("ack") / "data.parquet").is_file():
        raise UserError(f"{run.path}: the ack stage has not run (plan needs the judge's verdicts)")
    table = response_table(run).reset_index(drop=True)
    n_head = marked_headline(run.read("bon")) if (run.stage("bon") / "data.parquet").is_file() else 1
    coefs = {k: v for k, v in coefficients(table, n_head, table_variants(table)).items() if v.any()}
    if figure not in coefs:
        raise UserError(f"--figure: unknown {figure!r}; one of: {', '.join(coefs)}{did_you_mean(figure, coefs)}")
    c, f = coefs[figure], table["ack"].to_numpy(dtype=float)
    check = check_labels(run, None)
    if check.card is not None and len(check.rows) >= 2:
        idx = labelled_positions(table, check.rows, ["example_id", "variant", "sample"])
        false_yes, false_no = pilot_shares(f[idx], check.rows["label"].to_numpy(dtype=float))
        source = f"the pilot's {len(idx)} labels ({check.path})"
    else:
        sens, spec = judge_prior(task_of(run.path, task))
        support = c != 0
        false_yes, false_no = residual_shares(float(f[support].mean()), sens, spec)
        source = f"the judge's measured sensitivity {sens:.2f} and specificity {spec:.2f} (no labels yet)"
    n, floor = labels_needed(c, f, table["example_id"].astype(str).to_numpy(), false_yes, false_no, width)
    value = 100 * float(c @ f)
    head = f"{figure}: judge-only {value:+.1f} pts" if "−" in figure else f"{figure}: judge-only {value:.1f}%"
    head += f" over {len(table)} responses"
    shares = (f"judge's error from {source}: {100 * false_yes:.1f}% of its 'yes' and {100 * false_no:.1f}% of its "
              "'no' overturned")
    if n is None:
        return [head, shares, f"a 95% interval {width:.3f} wide is out of reach: the judge's spread between prompts "
                f"alone makes it {floor:.3f} wide; ask for a wider one"]
    if n > len(table):
        return [head, shares, f"a 95% interval {width:.3f} wide needs about {n} labels, more than the run's "
                f"{len(table)} responses: label them all, or ask for a wider one"]
    return [head, shares, f"labels needed for a 95% interval about {width:.3f} wide: {n} (uniform sample; the spread "
            f"between prompts alone is {floor:.3f} wide)",
            f"draw them with: alignment judge sample {run_path} --design uniform --n {n}"]


def run_plan(args: argparse.Namespace) -> int:
    print("\n".join(plan(args.run, args.figure, args.width, args.task)))
    return 0


def register_plan(inner: Any) -> None:
    p = inner.add_parser("plan", help="how many labels a corrected figure needs for an interval of a given width")
    p.add_argument("run", help="run folder (stages build, generate and ack finished)")
    p.add_argument("--figure", required=True, help="a figure of the report's corrected table, e.g. 'all responses, original prompts'")
    p.add_argument("--width", type=float, required=True, help="the 95%% interval's width wanted (a fraction, e.g. 0.1)")
    p.add_argument("--task", choices=["mathbook", "biasqa"], default=None, help="only for a RUN without a readable config.yaml")
    p.set_defaults(func=run_plan)
