"""`alignment compare`'s corrected A − B rows: where both runs have human labels of their responses.

Each run's figures are corrected by its own labels (`alignment.judge_error.run_estimates.run_figures`:
original and counterfactual rates, the control, best-of-N picks and RM_D − RM; and, where its
dpo-eval responses are labelled, `alignment.judge_error.dpo_estimates`: every policy's rates and the
DPO differences, prefixed "DPO"). The two runs' labels are two independent samples, so A − B is
the difference of the two PPI estimates, their intervals' half-widths added in quadrature
(`alignment.judge_error.ppi.independent_difference`): an interval over responses, not the paired
bootstrap over shared examples of the judge-only rows, and without a p-value.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from alignment.judge_error.ppi import PPIEstimate, independent_difference
from alignment.store import RunDir

SUFFIX = " (corrected)"


def labelled_figures(path: Path) -> dict[str, PPIEstimate]:
    """Every corrected figure of a run dir, by name ({} when it has no labels)."""
    from alignment.judge_error.dpo_estimates import dpo_figures
    from alignment.judge_error.dpo_labels import read_dpo_labels, response_table
    from alignment.judge_error.run_estimates import run_figures

    run = RunDir(path)
    out = dict(run_figures(run))
    dpo = read_dpo_labels(run)
    if dpo.path is not None and len(dpo.rows) >= 2:
        out |= {f"DPO {name}": e for name, _, e, _ in dpo_figures(response_table(run), dpo.rows) if e is not None}
    return out


def _counts(figures: dict[str, PPIEstimate]) -> str:
    """How many responses each of a run's label samples labelled (all figures of one sample read
    the same labels).

    >>> e = PPIEstimate(0.1, 0.0, 0.2, 0.1, (0.0, 0.3), 24, 72, "m")
    >>> _counts({"all responses, original prompts": e, "DPO rm, original prompts": e})
    '24 of its responses labelled, 24 of its dpo-eval responses'
    """
    own = [e.n_labelled for k, e in figures.items() if not k.startswith("DPO ")]
    dpo = [e.n_labelled for k, e in figures.items() if k.startswith("DPO ")]
    parts = ([f"{own[0]} of its responses labelled"] if own else []) + ([f"{dpo[0]} of its dpo-eval responses"] if dpo else [])
    return ", ".join(parts)


def corrected_rows(path_a: Path, path_b: Path) -> tuple[pd.DataFrame, list[str]]:
    """Rows in `alignment.cli.compare`'s columns (metric, examples, A, B, diff, low, high, p, note)
    for every figure both runs have corrected, and the note that explains them; nothing when
    either run lacks labels."""
    a, b = labelled_figures(path_a), labelled_figures(path_b)
    shared = [name for name in a if name in b]
    if not shared:
        return pd.DataFrame(), []
    rows = []
    for name in shared:
        d = independent_difference(a[name], b[name])
        rows.append({"metric": name + SUFFIX, "examples": math.nan, "A": a[name].estimate, "B": b[name].estimate,
                     "diff": d.estimate, "low": d.low, "high": d.high, "p": math.nan,
                     "note": f"judge only A − B {100 * d.judge_only:+.1f}; {d.method}"})
    note = (f"Rows ending in *{SUFFIX.strip()}*: each run's figure corrected for the judge's error by its own human labels "
            f"(PPI++; A: {_counts(a)}; B: {_counts(b)}); A − B is the difference of two "
            "independent estimates, half-widths added in quadrature (95% interval over responses, not the paired "
            "bootstrap over examples; no p-value).")
    return pd.DataFrame(rows), [note]
