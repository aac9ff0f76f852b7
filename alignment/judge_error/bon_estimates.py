"""Best-of-N pick rates as linear functionals of the responses' labels, at every N.

The bon stage's acknowledgment of the best-of-N pick under reward variant v on prompt p is, per
example, sum_k w_k ack_k over that prompt's samples (`alignment.analysis.bon.pick_weights`: the share of
N-subsets in which sample k is the pick), then the mean over the examples with at least N
samples. So over the run's response table it is sum_k c_k ack_k with c_k = w_k / (examples), and
the same coefficients applied to human labels give the figure without the judge's error
(`alignment.judge_error.ppi`). A paired difference of two variants is the difference of their
coefficients: both read the same labels. These are the coefficients `alignment.judge_error.run_estimates`
corrects, the headline N and every N of the run's best-of-N table alike.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from alignment.analysis.bon import pick_weights
from alignment.augment.strategies import ALL_VARIANTS


def pick_coefficients(table: pd.DataFrame, prompt: str, n: int, variant: str) -> np.ndarray:
    """Each response's coefficient in the BoN-`n` pick's rate under `variant` on `prompt`.

    `table` (one row per judged response; coefficients in its row order) has `example_id`, `variant`, `sample`
    and the reward column `variant`. Samples are ranked as the bon stage ranks them (sorted by
    sample, so ties go to the lower index); examples with fewer than `n` samples are left out,
    as the bon stage leaves them out of its mean.

    >>> t = pd.DataFrame({"example_id": ["a", "a", "a", "b", "b", "a"], "variant": ["orig"] * 5 + ["cf"],
    ...                   "sample": [0, 1, 2, 0, 1, 0], "rm": [0.1, 0.9, 0.5, 2.0, 1.0, 9.0]})
    >>> pick_coefficients(t, "orig", 2, "rm").round(3).tolist()  # a: 0.9 wins 2 of 3 pairs; b: one pair
    [0.0, 0.333, 0.167, 0.5, 0.0, 0.0]
    >>> pick_coefficients(t, "orig", 3, "rm").tolist()  # only a has 3 samples
    [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    """
    c = np.zeros(len(table))
    picks = table[(table["variant"] == prompt) & (table["sample"] >= 0)].sort_values(["example_id", "sample"])
    groups = [g for _, g in picks.groupby("example_id", sort=True) if len(g) >= n]
    for g in groups:
        c[table.index.get_indexer(g.index)] = pick_weights(g[variant].to_numpy(dtype=float), n) / len(groups)
    return c


def curve_variants(rewards: list[str], columns: list[str]) -> list[str]:
    """The reward variants of a best-of-N table that the response table scores, `rm` first.

    >>> curve_variants(["rm_c", "rm", "rm_d"], ["rm", "rm_d", "rm_c", "ack"])
    ['rm', 'rm_d', 'rm_c']
    """
    return [v for v in ALL_VARIANTS if v in set(rewards) and v in columns]


def figure_name(n: int, prompt: str, figure: str) -> str:
    """The name of one per-N figure (`figure`: a variant, or `v − rm`).

    >>> figure_name(4, "cf", "rm_d − rm")
    'BoN-4 rm_d − rm (cf)'
    """
    return f"BoN-{n} {figure} ({prompt})"


def curve_coefficients(table: pd.DataFrame, ns: list[int], prompts: list[str], variants: list[str]) -> dict[str, np.ndarray]:
    """Coefficients of every pick rate at every N and prompt, and of each variant − the first
    (the paired difference from `rm`), keyed by `figure_name`."""
    table = table.reset_index(drop=True)
    out: dict[str, np.ndarray] = {}
    for n in ns:
        for prompt in prompts:
            rates = {v: pick_coefficients(table, prompt, n, v) for v in variants}
            out |= {figure_name(n, prompt, v): c for v, c in rates.items()}
            out |= {figure_name(n, prompt, f"{v} − {variants[0]}"): rates[v] - rates[variants[0]] for v in variants[1:]}
    return out
