"""dpo-eval's acknowledgment figures with the judge's error carried (the report's DPO section).

With human labels of dpo-eval's responses (`alignment.judge_error.dpo_labels`), each policy's
acknowledgment rate on original and on counterfactual prompts, and each comparison's paired
difference (every trained variant against plain RM, then against the base policy, as in
`alignment.dpo.effects`: DPO(RM_D) − DPO(RM) first), is re-estimated by prediction-powered
inference through the same linear-functional machinery as the run's own figures
(`alignment.judge_error.run_estimates.ppi_figures`). A figure's coefficients reproduce the effects
table's point estimate exactly: a policy group's value is the mean over (training seed, example)
cells of the cell's mean verdict, and a difference pairs cells as `effects.paired_cells` does
(the base policy, which has no training seed, pairs with every seed's cell).

The corrected interval is clustered by prompt (the labelled sample and the judge's verdicts on all
of them): it carries the judge's error and the spread between prompts but, unlike the bootstrap
over prompts and training seeds beside it, not the spread between seeds. A figure with fewer than two labelled responses among
its own (for a difference: on either side) gets no corrected value: its labels-side variance
would be read as zero.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from alignment.augment.strategies import ORDER
from alignment.dpo.effects import BASE, comparisons, paired_cells
from alignment.judge_error.dpo_labels import KEYS, read_dpo_labels, response_table
from alignment.judge_error.ppi import MIN_SIDE, PPIEstimate, labelled_per_side
from alignment.judge_error.run_estimates import (
    estimate_text,
    interval_text,
    judge_text,
    labelled_positions,
    methods,
    shown_figures,
)

CELL = ["reward", "seed", "example_id", "variant"]
PROMPTS = (("orig", "original prompts"), ("cf", "counterfactual prompts"))


def _rewards(table: pd.DataFrame) -> list[str]:
    return sorted(set(table["reward"]), key=lambda r: (r != BASE, ORDER.get(r, 99), r))


def _cell_coef(table: pd.DataFrame, uses: pd.Series, on: list[str], reward: str, prompt: str) -> np.ndarray:
    """Coefficient of each response of `reward` on `prompt`: its cell's uses (how many paired
    rows read the cell, indexed by `on`) over the cell's size and the number of paired rows."""
    size = table.groupby(CELL)["ack"].transform("size").to_numpy(dtype=float)
    sel = ((table["reward"] == reward) & (table["variant"] == prompt)).to_numpy()
    key = pd.MultiIndex.from_frame(table[on]) if len(on) > 1 else pd.Index(table[on[0]])
    used = uses.reindex(key).fillna(0).to_numpy(dtype=float)
    return np.where(sel, used / (size * uses.sum()), 0.0) if uses.sum() else np.zeros(len(table))


def coefficients(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per-response coefficients of each dpo-eval figure over `table` (`dpo_labels.response_table`).

    >>> t = pd.DataFrame({"reward": ["base"] * 2 + ["rm"] * 4, "seed": [-1, -1, 0, 0, 1, 1], "example_id": ["a"] * 6,
    ...                   "variant": ["orig"] * 6, "sample": [-1, 0] * 3, "ack": [True, False, True, True, False, True]})
    >>> c = coefficients(t)
    >>> c["rm, original prompts"].tolist(), float(c["rm − base, original prompts"] @ t["ack"])
    ([0.0, 0.0, 0.25, 0.25, 0.25, 0.25], 0.25)
    """
    table = table.reset_index(drop=True)
    cells = table.groupby(CELL, as_index=False).size()
    out: dict[str, np.ndarray] = {}
    for reward in _rewards(table):
        for prompt, name in PROMPTS:
            mine = cells[(cells["reward"] == reward) & (cells["variant"] == prompt)]
            uses = mine.groupby(["seed", "example_id"]).size()
            if len(uses):
                out[f"{reward}, {name}"] = _cell_coef(table, uses, ["seed", "example_id"], reward, prompt)
    for a, b in comparisons(set(table["reward"])):
        for prompt, name in PROMPTS:
            pair = paired_cells(cells, a, b, prompt, "size")
            if pair.empty:
                continue
            b_on = ["example_id"] if b == BASE else ["seed", "example_id"]
            coef_a = _cell_coef(table, pair.groupby(["seed", "example_id"]).size(), ["seed", "example_id"], a, prompt)
            coef_b = _cell_coef(table, pair.groupby(b_on).size(), b_on, b, prompt)
            out[f"{a} − {b}, {name}"] = coef_a - coef_b
    return out


def dpo_figures(table: pd.DataFrame, labelled: pd.DataFrame) -> list[tuple[str, float, PPIEstimate | None, int]]:
    """(figure, judge-only value, PPI estimate or None when too few of its responses are
    labelled, labelled responses in it)."""
    table = table.reset_index(drop=True)
    coefs = coefficients(table)
    idx = labelled_positions(table, labelled, KEYS)
    got = shown_figures(table, labelled, coefs, KEYS)
    ack = table["ack"].to_numpy(dtype=float)
    return [(name, float(c @ ack), got.get(name), sum(labelled_per_side(c, idx))) for name, c in coefs.items()]


def dpo_corrected_lines(run: Any) -> list[str]:
    """The DPO section's corrected table; empty without labels of dpo-eval's responses."""
    labels = read_dpo_labels(run)
    if labels.path is None or len(labels.rows) < MIN_SIDE:
        return []
    table = response_table(run)
    figures = dpo_figures(table, labels.rows)
    method = methods({str(i): e for i, (*_, e, _) in enumerate(figures) if e is not None})
    out = [f"Corrected for the judge's error by human labels of {len(labels.rows)} of the {len(table)} dpo-eval "
           f"responses ({method}). {labels.summary()} Each figure pools every response (greedy and sampled) over "
           "training seeds, per example and seed as in the table above, so its judge-only value is the table's "
           "estimate; the 95% interval is **over prompts** (the labelled sample and the judge's verdicts on all "
           "of them, clustered by prompt): it carries the judge's error, not the spread between training seeds that the bootstrap above "
           "carries. Differences are paired: both policies' rates read the same labels. *Labels only*: the labelled "
           "responses alone (classical CLT interval). Valid when the labelled responses were drawn at random "
           f"(`alignment judge sample RUN --stage dpo-eval`); a figure with fewer than {MIN_SIDE} labelled responses "
           "among its own (on either side of a difference) is n/a.", "",
           "| figure | judge only | corrected (PPI++) | labels only | labelled in it |", "|---|---|---|---|---|"]
    for name, judge_only, e, n in figures:
        signed = "−" in name
        labels_only = interval_text(*e.labels_only, signed=signed) if e is not None else "n/a"
        out.append(f"| {name} | {judge_text(judge_only, signed)} | {estimate_text(e, signed)} | {labels_only} | {n} |")
    return [*out, ""]


def dpo_sweep_notes(runs: dict[str, Path]) -> list[str]:
    """`alignment sweep`'s lines on the DPO table: each run's DPO(RM_D) − DPO(RM) corrected by
    labels of its dpo-eval responses, else (where dpo-eval ran) that its intervals exclude the
    judge's error; nothing when no run has dpo-eval responses."""
    from alignment.store import RunDir

    ran, lines = 0, []
    for name, path in runs.items():
        run = RunDir(path)
        if not (run.stage("dpo-eval") / "responses.parquet").is_file():
            continue
        ran += 1
        labels = read_dpo_labels(run)
        if labels.path is None or len(labels.rows) < MIN_SIDE:
            continue
        got = [f"{prompt} {estimate_text(e, True)} (judge only {judge_text(j, True)})"
               for figure, j, e, _ in dpo_figures(response_table(run), labels.rows)
               if e is not None and (prompt := figure.removeprefix("rm_d − rm, ")) != figure]
        lines.append(f"Run {name}, DPO(RM_D) − DPO(RM) corrected for the judge's error by {len(labels.rows)} human labels "
                     f"of its dpo-eval responses (PPI++, 95%, over responses): {'; '.join(got) or 'n/a (too few labels)'}.")
    if ran and not lines:
        return ["No run of this sweep has human labels of its dpo-eval responses: the DPO table's intervals exclude "
                "the judge's error (label a random sample with `alignment judge sample RUN --stage dpo-eval --design uniform`)."]
    return lines
