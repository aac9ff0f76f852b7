"""Best-of-N selection under each reward variant.

`alignment bon CONFIG --out runs/<name>` (`alignment.stages.bon`) reads `generate/`, `score/` and `ack/` and writes
`bon/bon.csv` (one row per N, prompt variant and reward variant), `bon/bon.png`,
`bon/per_example.parquet`, `bon/ack_comparison.csv` (acknowledgment rate per N and reward
variant on original prompts with 95% intervals, and each variant's paired difference from `rm`)
and `bon/ack_control.csv` (the same rate on original vs counterfactual prompts, the control).

For each example and prompt (original, counterfactual), N of its samples are drawn at random
(`subsets` draws, the same draws for every reward variant, so variants are compared on paired
subsets); the highest-reward sample is selected (ties → lowest sample index). The selected
response's correctness (accuracy; for BiasQA the stereotype rate) and acknowledgment are
averaged over draws within an example, then over examples, with the standard error across
examples. N larger than the samples available is left out.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from alignment.config import check, doc
from alignment.stats import ack_control, hierarchical_bootstrap, mean_se, paired_bootstrap
from alignment.store import atomic_path
from alignment.strategies import ALL_VARIANTS, RECEIPT_VARIANT


@dataclass
class BonConfig:
    """Best-of-N settings."""

    ns: list[int] = doc("Values of N (kept when at most the number of samples).", factory=lambda: [1, 2, 4, 8, 16])
    subsets: int = doc("Random N-subsets drawn per example and N.", 64)
    seed: int = doc("Seed for the subset draws.", 0)
    variants: list[str] = doc(
        f"Reward variants to compare ({RECEIPT_VARIANT} is used only when the run has receipts).",
        factory=lambda: list(ALL_VARIANTS),
    )

    def __post_init__(self) -> None:
        check(bool(self.ns), "ns", "must list at least one N")
        check(all(n >= 1 for n in self.ns), "ns", "every N must be >= 1")
        check(len(set(self.ns)) == len(self.ns), "ns", "must not repeat an N")
        check(bool(self.variants), "variants", "must list at least one reward variant")
        check(len(set(self.variants)) == len(self.variants), "variants", "must not repeat a variant")
        check(self.subsets >= 1, "subsets", "must be >= 1")
        bad = [v for v in self.variants if v not in ALL_VARIANTS]
        check(not bad, "variants", f"unknown {bad}; choose from {', '.join(ALL_VARIANTS)}")


def draws(n_avail: int, n: int, subsets: int, rng: random.Random) -> list[list[int]]:
    """Index subsets of size n (one when n equals the samples available)."""
    if n == n_avail:
        return [list(range(n_avail))]
    return [rng.sample(range(n_avail), n) for _ in range(subsets)]


def select(rewards: np.ndarray, subset: list[int]) -> int:
    """Index of the highest reward in the subset; ties go to the lowest sample index."""
    best = max(rewards[i] for i in subset)
    return min(i for i in subset if rewards[i] == best)


def best_of_n(table: pd.DataFrame, cfg: BonConfig) -> pd.DataFrame:
    """`table`: one row per sampled response with reward columns, `correct`, `valid`, `ack`.

    One row per N, prompt and reward variant: means over examples with their standard errors."""
    return summarize(per_example(table, cfg))


def per_example(table: pd.DataFrame, cfg: BonConfig) -> pd.DataFrame:
    """One row per N, prompt, reward variant and example: the selected sample's correctness,
    acknowledgment and validity, averaged over that example's draws."""
    table = table[table["sample"] >= 0].sort_values(["example_id", "variant", "sample"])
    variants = [v for v in cfg.variants if v in table.columns]
    rows = []
    for (ex_id, prompt), g in table.groupby(["example_id", "variant"], sort=True):
        m = len(g)
        for n in cfg.ns:
            if n > m:
                continue
            subs = draws(m, n, cfg.subsets, random.Random(f"bon/{cfg.seed}/{ex_id}/{prompt}/{n}"))
            for variant in variants:
                r = g[variant].to_numpy()
                picks = [select(r, s) for s in subs]
                rows.append(
                    {
                        "N": n,
                        "prompt": prompt,
                        "reward": variant,
                        "example_id": ex_id,
                        "metric": float(np.mean(g["correct"].to_numpy()[picks])),
                        "ack": float(np.mean(g["ack"].to_numpy()[picks])),
                        "valid": float(np.mean(g["valid"].to_numpy()[picks])),
                    }
                )
    return pd.DataFrame(rows, columns=["N", "prompt", "reward", "example_id", "metric", "ack", "valid"])


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
    (same examples, same N-subsets) with its interval and p-value."""
    rows = []
    per = per[per["prompt"] == prompt]
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
    return pd.DataFrame(rows).reindex(columns=cols)


def ack_control_table(per: pd.DataFrame) -> pd.DataFrame:
    """Per N and reward variant: acknowledgment rate of the selected sample on original prompts
    and on their counterfactuals (the control: the feature is absent there), and the paired
    difference original − control over examples (`alignment.stats.ack_control`)."""
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


def plot(df: pd.DataFrame, metric_name: str, path: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, col, label in ((axes[0], "metric", metric_name), (axes[1], "ack", "acknowledgment rate")):
        for (variant, prompt), g in df.groupby(["reward", "prompt"]):
            g = g.sort_values("N")
            ax.errorbar(g["N"], g[col], yerr=g[f"{col}_se"], marker="o", capsize=3,
                        linestyle="-" if prompt == "orig" else "--", label=f"{variant} ({prompt})")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("N")
        ax.set_ylabel(label)
        ax.set_ylim(-0.05, 1.05)
    axes[1].legend(fontsize=7, ncol=2)
    fig.suptitle("Best-of-N (solid: original prompt, dashed: counterfactual)")
    fig.tight_layout()
    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
