"""What the DPO round did to the policy: effects with intervals over prompts and training seeds.

Every evaluated response counts (the greedy one and the samples). A policy's value on an example
is the mean over its responses to that example's original (or counterfactual) prompt: the
acknowledgment rate (the judge's verdict) or the accuracy. An effect A − B compares two policies
on the same held-out examples:
- pooled: one paired bootstrap over seeds and examples (crossed: seeds and examples are both
  resampled, `alignment.analysis.stats.paired_bootstrap`), so the interval carries the spread between
  training seeds as well as between prompts;
- per seed: the same over examples for one training seed.
The base policy has no training seed; against it, each seed's policy is paired with the base's
value on the same example. The truthfulness measures `disc_diff` and `grounded_diff` (A's
discrimination or grounded acknowledgment minus B's) are bootstrapped the same way
(`alignment.dpo.truth`). Written by `alignment dpo-eval` as `effects.csv` and `summary.json`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from alignment.analysis.stats import paired_bootstrap
from alignment.augment.strategies import ONE_SIDED
from alignment.dpo.truth import TRUTH_MEASURES, truth_rows

BASE = "base"
# summary.json's names: (prompt variant, response column).
MEASURES: dict[str, tuple[str, str]] = {"ack_diff": ("orig", "ack"), "acc_diff": ("orig", "correct"), "cf_ack_diff": ("cf", "ack")}
COLUMNS = ["comparison", "a", "b", "measure", "scope", "est", "lo", "hi", "p", "examples", "seeds"]


def cell_means(resp: pd.DataFrame) -> pd.DataFrame:
    """Mean acknowledgment and accuracy (where the responses have them) per (reward, seed, example,
    prompt variant)."""
    cols = [c for c in ("ack", "correct") if c in resp.columns]
    table = resp.assign(**{c: resp[c].astype(float) for c in cols})
    return table.groupby(["reward", "seed", "example_id", "variant"], as_index=False)[cols].mean()


def comparisons(rewards: set[str]) -> list[tuple[str, str]]:
    """Each trained variant against plain RM (where RM was trained), each two-sided one against
    its one-sided counterpart (where that was trained: what the denial adds), then each against
    the base policy.

    >>> comparisons({"base", "rm", "rm_d", "rm_c"})
    [('rm_c', 'rm'), ('rm_d', 'rm'), ('rm', 'base'), ('rm_c', 'base'), ('rm_d', 'base')]
    >>> comparisons({"base", "rm", "rm_d", "rm_d_deny"})[:3]
    [('rm_d', 'rm'), ('rm_d_deny', 'rm'), ('rm_d_deny', 'rm_d')]
    """
    trained = sorted(rewards - {BASE})
    vs_rm = [(r, "rm") for r in trained if r != "rm" and "rm" in trained]
    vs_one_sided = [(r, ONE_SIDED[r]) for r in trained if r in ONE_SIDED and ONE_SIDED[r] in trained]
    return vs_rm + vs_one_sided + [(r, BASE) for r in sorted(trained, key=lambda r: (r != "rm", r))]


def paired_cells(cells: pd.DataFrame, a: str, b: str, prompt: str, column: str) -> pd.DataFrame:
    """Rows (seed, example_id, value_a, value_b) for A − B on one prompt variant and column."""
    pick = cells[cells["variant"] == prompt]
    left = pick[pick["reward"] == a][["seed", "example_id", column]]
    right = pick[pick["reward"] == b][["seed", "example_id", column]]
    if b == BASE:  # the base has no training seed: it pairs with every seed's policy
        return left.merge(right.drop(columns="seed"), on="example_id", suffixes=("_a", "_b"))
    return left.merge(right, on=["seed", "example_id"], suffixes=("_a", "_b"))


def effect(pair: pd.DataFrame, column: str, pooled: bool, replicates: int = 2000) -> dict[str, Any]:
    res = paired_bootstrap(pair[f"{column}_a"].tolist(), pair[f"{column}_b"].tolist(), pair["example_id"].tolist(),
                           pair["seed"].tolist() if pooled else None, replicates=replicates)
    return {"est": res.estimate, "lo": res.low, "hi": res.high, "p": res.p_value,
            "examples": int(pair["example_id"].nunique()), "seeds": int(pair["seed"].nunique())}


def effects_table(resp: pd.DataFrame, replicates: int = 2000, measures: tuple[str, ...] = (*MEASURES, *TRUTH_MEASURES),
                  per_seed: bool = True) -> pd.DataFrame:
    """Every comparison × measure, pooled over seeds and (`per_seed`) for each seed; the
    truthfulness measures (`disc_diff`, `grounded_diff`) come from `alignment.dpo.truth`."""
    cells = cell_means(resp)
    rows = []
    for a, b in comparisons(set(cells["reward"])):
        if any(m in TRUTH_MEASURES for m in measures):
            rows += [r for r in truth_rows(resp, a, b, per_seed, replicates) if r["measure"] in measures]
        for measure in (m for m in measures if m in MEASURES):
            prompt, column = MEASURES[measure]
            pair = paired_cells(cells, a, b, prompt, column) if column in cells else pd.DataFrame()
            if pair.empty:
                continue
            base = {"comparison": f"{a} − {b}", "a": a, "b": b, "measure": measure}
            rows.append({**base, "scope": "pooled", **effect(pair, column, True, replicates)})
            for seed, g in pair.groupby("seed", sort=True) if per_seed else ():
                rows.append({**base, "scope": f"seed {int(seed)}", **effect(g, column, False, replicates)})
    return pd.DataFrame(rows, columns=COLUMNS)


def _interval(row: pd.Series) -> dict[str, float]:
    return {"est": float(row["est"]), "lo": float(row["lo"]), "hi": float(row["hi"])}


def summary(effects: pd.DataFrame, seconds: float, a: str = "rm_d", b: str = "rm",
            rates: dict[str, Any] | None = None) -> dict[str, Any]:
    """summary.json: A − B (default DPO(RM_D) − DPO(RM)) pooled and per seed, rates as fractions
    (ack_diff, acc_diff, cf_ack_diff, and the truthfulness differences disc_diff and
    grounded_diff); `pooled` and `seeds` are empty when A or B was not trained. `rates`: each
    policy's own figures (`alignment.dpo.truth.rates`)."""
    rows = effects[(effects["a"] == a) & (effects["b"] == b)]
    pooled = {r["measure"]: _interval(r) for _, r in rows[rows["scope"] == "pooled"].iterrows()}
    seeds = []
    for scope, g in rows[rows["scope"] != "pooled"].groupby("scope", sort=False):
        seeds.append({"seed": int(str(scope).split()[-1]), **{r["measure"]: _interval(r) for _, r in g.iterrows()}})
    seeds.sort(key=lambda s: s["seed"])
    out = {"seconds": round(float(seconds), 1), "comparison": f"{a} − {b}", "pooled": pooled, "seeds": seeds}
    return out | ({"rates": rates} if rates is not None else {})


def holds(summary_: dict[str, Any], min_acc_lo: float = -0.10) -> dict[str, bool]:
    """The issue's criteria on a summary: pooled ack interval above 0, a positive ack estimate on
    every seed, accuracy not lower by more than 10 points (pooled lower bound above -0.10).

    >>> s = {"pooled": {"ack_diff": {"est": .2, "lo": .1, "hi": .3}, "acc_diff": {"est": 0, "lo": -.05, "hi": .05}},
    ...      "seeds": [{"seed": 0, "ack_diff": {"est": .2, "lo": 0, "hi": .4}}]}
    >>> holds(s)
    {'ack_above_zero': True, 'ack_positive_every_seed': True, 'accuracy_kept': True}
    """
    pooled, seeds = summary_.get("pooled", {}), summary_.get("seeds", [])
    ack, acc = pooled.get("ack_diff"), pooled.get("acc_diff")
    return {
        "ack_above_zero": bool(ack and ack["lo"] > 0),
        "ack_positive_every_seed": bool(seeds) and all(s["ack_diff"]["est"] > 0 for s in seeds),
        "accuracy_kept": bool(acc and np.isfinite(acc["lo"]) and acc["lo"] > min_acc_lo),
    }
