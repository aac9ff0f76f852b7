"""Best-of-N selection under each reward variant.

`alignment bon CONFIG --out runs/<name>` (`alignment.stages.bon`) reads `generate/`, `score/` and `ack/` and writes
`bon/bon.csv` (one row per N, prompt variant and reward variant), `bon/bon.png`,
`bon/per_example.parquet`, `bon/ack_comparison.csv` (acknowledgment rate per N and reward
variant on original prompts with 95% intervals, each variant's paired difference from `rm`, and
beside the rate the picks' truthfulness: discrimination `disc*` and grounded acknowledgment
`true_ack`, `false_ack`, `grounded*`, `alignment.stats`) and `bon/ack_control.csv` (the same rate
on original vs counterfactual prompts, the control; its `diff` is the discrimination).

For each example and prompt (original, counterfactual) with m samples, best-of-N is the
expectation over *every* N-subset of the m samples of the highest-reward sample's correctness
(accuracy; for BiasQA the stereotype rate), acknowledgment and validity (ties → lowest sample
index). It is computed exactly, not by drawing subsets: ranked by reward, the r-th best sample
(r = 0, 1, ...) is the pick of C(m − 1 − r, N − 1) of the C(m, N) subsets (`pick_weights`). This
is the unbiased estimate of what best-of-N from the policy would select, free of subset-draw
noise, and the same for every reward variant, so variants are compared on the same subsets. At
N = m there is one subset, so the estimate rests on a single pick per example; at N ≤ m / 2 it
averages over many, which is why the headline N (`headline_n`) defaults to the largest such N.
Means are then taken over examples, with the standard error across examples. N larger than the
samples available is left out.

Each variant picks by its own reward on both prompt types. On counterfactual prompts the
one-sided variants equal the plain score, so their control is plain RM's pick; a two-sided
variant (`rm_d_deny`) scores counterfactual responses min(plain, denial appended), so its control
is its own pick there (`alignment.augment.strategies`).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from alignment.analysis.stats import (
    ack_control,
    discrimination,
    grounded,
    hierarchical_bootstrap,
    mean_se,
    paired_bootstrap,
)
from alignment.augment.strategies import ALL_VARIANTS, RECEIPT_VARIANT
from alignment.config import check, doc
from alignment.errors import UserError
from alignment.store import atomic_path


@dataclass
class BonConfig:
    """Best-of-N settings."""

    ns: list[int] = doc("Values of N (kept when at most the number of samples).", factory=lambda: [1, 2, 4, 8, 16])
    headline_n: int | None = doc(
        "N of the headline comparisons (report, `alignment sweep`); null = the largest N in ns that is at most "
        "half the samples per prompt (so the estimate averages over many N-subsets), else the largest N.",
        None,
    )
    variants: list[str] = doc(
        f"Reward variants to compare ({RECEIPT_VARIANT} is used only when the run has receipts; the two-sided "
        "rm_d_deny and rm_c_deny need the task's denial sentence, prompts/<task>_deny.txt: left out without it, "
        "an error when listed here).",
        factory=lambda: list(ALL_VARIANTS),
    )

    def __post_init__(self) -> None:
        check(bool(self.ns), "ns", "must list at least one N")
        check(all(n >= 1 for n in self.ns), "ns", "every N must be >= 1")
        check(len(set(self.ns)) == len(self.ns), "ns", "must not repeat an N")
        check(bool(self.variants), "variants", "must list at least one reward variant")
        check(len(set(self.variants)) == len(self.variants), "variants", "must not repeat a variant")
        check(self.headline_n is None or self.headline_n in self.ns, "headline_n", f"must be one of ns {self.ns} or null")
        bad = [v for v in self.variants if v not in ALL_VARIANTS]
        check(not bad, "variants", f"unknown {bad}; choose from {', '.join(ALL_VARIANTS)}")


def pick_weights(rewards: np.ndarray, n: int) -> np.ndarray:
    """Share of all n-subsets of the samples in which each sample is the best-of-n pick.

    Ranked by reward (ties → lower sample index first), the r-th sample wins the
    C(m − 1 − r, n − 1) subsets whose other members all rank below it. A NaN reward ranks
    below every number (and NaNs among themselves by index).

    >>> pick_weights(np.array([0.1, 0.9, 0.5]), 2).round(3).tolist()  # 0.9 wins 2 of 3 pairs
    [0.0, 0.667, 0.333]
    >>> pick_weights(np.array([1.0, 1.0, 0.0, 2.0]), 4).tolist()
    [0.0, 0.0, 0.0, 1.0]
    >>> pick_weights(np.array([3.0, 1.0]), 1).tolist()
    [0.5, 0.5]
    >>> pick_weights(np.array([np.nan, -np.inf, 0.0]), 2).round(3).tolist()  # NaN below -inf
    [0.0, 0.333, 0.667]
    """
    m = len(rewards)
    nan = np.isnan(rewards)
    # lexsort: the last key sorts first. Numbers before NaNs, high before low, then by index.
    order = np.lexsort((np.arange(m), -np.where(nan, 0.0, rewards), nan))
    weights = np.zeros(m)
    weights[order] = [comb(m - 1 - r, n - 1) / comb(m, n) for r in range(m)]
    return weights


def headline_n(ns: list[int], samples: int, chosen: int | None = None) -> int:
    """The N the headline compares at: `chosen` if set, else the largest N with 2N ≤ samples
    (≥ 2), else the largest N available.

    >>> headline_n([1, 2, 4, 8, 16], 16), headline_n([1, 2, 4], 4), headline_n([1, 4], 3), headline_n([1, 16], 16, 1)
    (8, 2, 1, 1)
    """
    if chosen is not None:
        if chosen > samples:
            raise UserError(f"bon.headline_n: {chosen} exceeds the {samples} samples per prompt")
        return chosen
    avail = [n for n in ns if n <= samples]
    half = [n for n in avail if n >= 2 and 2 * n <= samples]
    return max(half or avail or [1])


def marked_headline(table: pd.DataFrame) -> int:
    """The headline N marked by the bon stage (`headline` column); the largest N in tables
    without the column.

    >>> marked_headline(pd.DataFrame({"N": [1, 8, 16], "headline": [False, True, False]})), marked_headline(pd.DataFrame({"N": [1, 4]}))
    (8, 4)
    """
    if "headline" in table and table["headline"].any():
        return int(table.loc[table["headline"].astype(bool), "N"].iloc[0])
    return int(table["N"].max())


def best_of_n(table: pd.DataFrame, cfg: BonConfig) -> pd.DataFrame:
    """`table`: one row per sampled response with reward columns, `correct`, `valid`, `ack`.

    One row per N, prompt and reward variant: means over examples with their standard errors."""
    return summarize(per_example(table, cfg))


def per_example(table: pd.DataFrame, cfg: BonConfig) -> pd.DataFrame:
    """One row per N, prompt, reward variant and example: the selected sample's correctness,
    acknowledgment and validity, averaged exactly over every N-subset of the example's samples;
    with attribution (`d`), `caused` (the chance the pick's answer is marked caused by the
    feature) and `ack_caused` (the chance it is caused and acknowledges)."""
    table = table[table["sample"] >= 0].sort_values(["example_id", "variant", "sample"])
    if "d" in table.columns:
        table = table.assign(caused=table["d"].astype(float), ack_caused=table["d"].astype(float) * table["ack"].astype(float))
    picked = [("metric", "correct"), ("ack", "ack"), ("valid", "valid")]
    picked += [(c, c) for c in ("caused", "ack_caused") if c in table.columns]
    variants = [v for v in cfg.variants if v in table.columns]
    rows = []
    for (ex_id, prompt), g in table.groupby(["example_id", "variant"], sort=True):
        m = len(g)
        for n in cfg.ns:
            if n > m:
                continue
            for variant in variants:
                w = pick_weights(g[variant].to_numpy(dtype=float), n)
                rows.append(
                    {
                        "N": n,
                        "prompt": prompt,
                        "reward": variant,
                        "example_id": ex_id,
                        **{col: float(w @ g[key].to_numpy(dtype=float)) for col, key in picked},
                    }
                )
    return pd.DataFrame(rows, columns=["N", "prompt", "reward", "example_id", *(c for c, _ in picked)])


def summarize(per: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (n, prompt, variant), g in per.groupby(["N", "prompt", "reward"], sort=True):
        metric, metric_se = mean_se(g["metric"].tolist())
        ack, ack_se = mean_se(g["ack"].tolist())
        rows.append(
            {
                "N": n,
                "prompt": prompt,
                "reward": variant,
                "metric": metric,
                "metric_se": metric_se,
                "ack": ack,
                "ack_se": ack_se,
                "valid": float(g["valid"].mean()),
                "examples": len(g),
            }
        )
    return pd.DataFrame(rows)


def ack_comparison(per: pd.DataFrame, baseline: str = "rm", prompt: str = "orig") -> pd.DataFrame:
    """Acknowledgment rate of the selected sample per N and reward variant on `prompt`, with a
    95% bootstrap interval over examples, and each variant's paired difference from `baseline`
    (same examples, same N-subsets) with its interval and p-value; on original prompts the
    picks' truthfulness beside it (`truth_table`)."""
    rows = []
    per_all, per = per, per[per["prompt"] == prompt]
    for (n, variant), g in per.groupby(["N", "reward"], sort=True):
        g = g.sort_values("example_id")
        level = hierarchical_bootstrap(g["ack"].tolist(), g["example_id"].tolist())
        row = {"N": n, "reward": variant, "ack": level.estimate, "ack_low": level.low, "ack_high": level.high, "examples": len(g)}
        base = per[(per["N"] == n) & (per["reward"] == baseline)].sort_values("example_id")
        if variant != baseline and len(base) == len(g):
            diff = paired_bootstrap(g["ack"].tolist(), base["ack"].tolist(), g["example_id"].tolist())
            row |= {"diff": diff.estimate, "diff_low": diff.low, "diff_high": diff.high, "diff_p": diff.p_value}
        rows.append(row)
    cols = ["N", "reward", "ack", "ack_low", "ack_high", "examples", "diff", "diff_low", "diff_high", "diff_p"]
    out = pd.DataFrame(rows).reindex(columns=cols)
    truth = truth_table(per_all) if prompt == "orig" else pd.DataFrame()
    return out.merge(truth, on=["N", "reward"], how="left") if len(truth) else out.reindex(columns=[*cols, *TRUTH_COLUMNS])


TRUTH_COLUMNS = ["disc", "disc_low", "disc_high", "true_ack", "false_ack", "grounded", "grounded_low", "grounded_high", "caused"]


def truth_table(per: pd.DataFrame) -> pd.DataFrame:
    """Per N and reward variant, the picks' truthfulness (`alignment.stats`): discrimination
    (acknowledgment on original − on counterfactual prompts, paired per example) and, where the
    responses carry attribution, grounded acknowledgment (rate among picks whose answer the
    feature caused − among the others; `caused` is the caused share of the picks), 95% intervals
    over examples."""
    rows = []
    for (n, variant), g in per.groupby(["N", "reward"], sort=True):
        row: dict[str, Any] = {"N": n, "reward": variant}
        if {"orig", "cf"} <= set(g["prompt"]):
            d = discrimination(g["example_id"].tolist(), g["prompt"].tolist(), g["ack"].tolist())
            row |= {"disc": d.estimate, "disc_low": d.low, "disc_high": d.high}
        o = g[g["prompt"] == "orig"]
        if "caused" in o.columns and len(o):
            r = grounded(o["example_id"].tolist(), o["ack"].tolist(), o["caused"].tolist(), acks_caused=o["ack_caused"].tolist())
            row |= {"true_ack": r.true.estimate, "false_ack": r.false.estimate, "grounded": r.difference.estimate,
                    "grounded_low": r.difference.low, "grounded_high": r.difference.high, "caused": r.caused / max(r.responses, 1e-12)}
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=["N", "reward", *TRUTH_COLUMNS])


def ack_control_table(per: pd.DataFrame) -> pd.DataFrame:
    """Per N and reward variant: acknowledgment rate of the selected sample on original prompts
    and on their counterfactuals (the control: the feature is absent there), and the paired
    difference original − control over examples (`alignment.analysis.stats.ack_control`)."""
    rows = []
    for (n, variant), g in per.groupby(["N", "reward"], sort=True):
        mean = g.groupby(["example_id", "prompt"], as_index=False)["ack"].mean()
        if set(mean["prompt"]) < {"orig", "cf"}:
            continue
        r = ack_control(mean["example_id"].tolist(), mean["prompt"].tolist(), mean["ack"].tolist())
        rows.append({
            "N": n, "reward": variant, "ack_orig": r.original.estimate, "ack_orig_low": r.original.low,
            "ack_orig_high": r.original.high, "ack_cf": r.control.estimate, "ack_cf_low": r.control.low,
            "ack_cf_high": r.control.high, "diff": r.difference.estimate, "diff_low": r.difference.low,
            "diff_high": r.difference.high, "exceeds_control": r.exceeds, "examples": r.examples,
        })
    return pd.DataFrame(rows)


def line_style(reward: str, prompt: str) -> tuple[str, str]:
    """(colour, line style) of one curve of `bon.png`: one colour per reward variant, the same on
    both prompts, solid on the original prompt and dashed on the counterfactual.

    >>> line_style("rm", "orig"), line_style("rm", "cf"), line_style("rm_d", "orig")
    (('C0', '-'), ('C0', '--'), ('C1', '-'))
    """
    return f"C{ALL_VARIANTS.index(reward) % 10}", "-" if prompt == "orig" else "--"


def figure(df: pd.DataFrame, metric_name: str) -> Any:
    """The best-of-N figure: the metric and the acknowledgment rate against N, one colour per
    reward variant; the legend names each colour once and the two line styles once."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    rewards = sorted(df["reward"].unique(), key=ALL_VARIANTS.index)
    for ax, col, label in ((axes[0], "metric", metric_name), (axes[1], "ack", "acknowledgment rate")):
        # The plain reward drawn last, on top: a one-sided strategy's counterfactual curve lies on it.
        curves = sorted(df.groupby(["reward", "prompt"]), key=lambda kg: -ALL_VARIANTS.index(kg[0][0]))
        for (variant, prompt), g in curves:
            g = g.sort_values("N")
            colour, style = line_style(variant, prompt)
            ax.errorbar(g["N"], g[col], yerr=g[f"{col}_se"], marker="o", capsize=3, color=colour, linestyle=style)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("N")
        ax.set_ylabel(label)
        ax.set_ylim(-0.05, 1.05)
    handles = [Line2D([], [], color=line_style(r, "orig")[0], marker="o", label=r) for r in rewards]
    handles += [Line2D([], [], color="grey", linestyle=line_style(rewards[0], p)[1], label=name)
                for p, name in (("orig", "original prompt"), ("cf", "counterfactual"))] if rewards else []
    axes[1].legend(handles=handles, fontsize=7, ncol=2)
    fig.suptitle("Best-of-N (solid: original prompt, dashed: counterfactual)")
    fig.tight_layout()
    return fig


def plot(df: pd.DataFrame, metric_name: str, path: Any) -> None:
    fig = figure(df, metric_name)  # first: it picks the file-only backend before pyplot loads
    import matplotlib.pyplot as plt

    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
