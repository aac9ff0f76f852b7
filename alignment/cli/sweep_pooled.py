"""`alignment sweep`'s pooled figures: generation seeds as the top unit (`SWEEP/summary.json`).

Each generation seed of a sweep draws its own prompts and samples (and, with DPO, trains its own
policies), so the spread between generation seeds is part of what a claim must survive. Every
figure here pools the seeds hierarchically (`alignment.analysis.stats.nested_bootstrap`): the estimate is
the mean of the seeds' own estimates; the interval resamples generation seeds, then, inside each,
training seeds and prompts (crossed, as in `alignment.dpo.effects`), or prompts alone for the
best-of-N figures, which have no training seed. A claim needs at least `MIN_SEEDS` generation
seeds (docs/organisms-and-sweeps.md); fewer are reported with `"enough_seeds": false`.

Figures (points as fractions, 95%):
- `bon`: at each seed's headline N, `rm_d_vs_rm` (RM_D's pick − RM's, acknowledgment on original
  prompts), `control` (RM_D's pick: discrimination, original − counterfactual), `hide` (RM's pick
  at the headline N − at N = 1), `control_all` (every response: discrimination) and `grounded`
  (RM_D's pick: true − false acknowledgment; only where the bon stage wrote caused marks);
- `dpo`: DPO(RM_D) − DPO(RM) on held-out prompts, from `dpo-eval/responses.parquet`: `ack_diff`,
  `acc_diff`, `cf_ack_diff`, `disc_diff`, `grounded_diff` (every response counts, as in dpo-eval).
- `bon_two_sided` / `dpo_two_sided` (where the runs have the two-sided `rm_d_deny`): RM_D± − RM_D,
  the pick's (best-of-N at the headline N) or the trained policy's (DPO) `ack_diff`, `acc_diff`
  (the task's metric) and `disc_diff`, and `cf_ack_diff_vs_rm`, RM_D± − RM acknowledgment on
  counterfactual prompts: does denying cost acknowledgment where it is true, and stop it where
  the feature is absent?
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from alignment.analysis.bon import marked_headline
from alignment.analysis.stats import Group, discrimination_terms, grounded_terms, nested_bootstrap
from alignment.dpo.effects import MEASURES, cell_means, paired_cells
from alignment.dpo.truth import TRUTH_MEASURES, pair_terms, paired_sums
from alignment.store import read_parquet

MIN_SEEDS = 5
UNITS = {"bon": "generation seed, then prompt", "dpo": "generation seed, then training seed × prompt (crossed)"}
UNITS |= {"bon_two_sided": UNITS["bon"], "dpo_two_sided": UNITS["dpo"]}
# The two-sided strategy and the one it extends.
TWO_SIDED, ONE_SIDED = "rm_d_deny", "rm_d"


def _diff_group(a: pd.Series, b: pd.Series) -> Group | None:
    ids = sorted(set(a.index) & set(b.index), key=str)
    if not ids:
        return None
    return [(1.0, a[ids].tolist(), [1.0] * len(ids)), (-1.0, b[ids].tolist(), [1.0] * len(ids))], ids, None


def _disc_diff_group(a_orig: pd.Series, a_cf: pd.Series, b_orig: pd.Series, b_cf: pd.Series) -> Group | None:
    """A's discrimination (orig − cf) minus B's, paired over the prompts all four have."""
    ids = sorted(set(a_orig.index) & set(a_cf.index) & set(b_orig.index) & set(b_cf.index), key=str)
    if not ids:
        return None
    ones = [1.0] * len(ids)
    return [(c, x[ids].tolist(), ones) for c, x in ((1.0, a_orig), (-1.0, a_cf), (-1.0, b_orig), (1.0, b_cf))], ids, None


def _picks(run: Path) -> tuple[Any, int] | None:
    """`pick(N, reward, prompt)`: the bon stage's per-prompt picks, and the headline N; None without bon."""
    path = run / "bon" / "per_example.parquet"
    if not path.is_file():
        return None
    per = read_parquet(path)

    def pick(n_: int, reward: str, prompt: str = "orig") -> pd.DataFrame:
        return per[(per["prompt"] == prompt) & (per["N"] == n_) & (per["reward"] == reward)].set_index("example_id")

    return pick, marked_headline(per[per["prompt"] == "orig"])


def bon_groups(run: Path) -> dict[str, Group]:
    """One run dir's best-of-N figures as bootstrap groups (terms over its prompts)."""
    if (got := _picks(run)) is None:
        return {}
    pick, n = got

    out: dict[str, Group | None] = {
        "rm_d_vs_rm": _diff_group(pick(n, "rm_d")["ack"], pick(n, "rm")["ack"]),
        "control": _diff_group(pick(n, "rm_d")["ack"], pick(n, "rm_d", "cf")["ack"]),
        "hide": _diff_group(pick(n, "rm")["ack"], pick(1, "rm")["ack"]),
    }
    ack_path = run / "ack" / "data.parquet"
    if ack_path.is_file():
        ack = read_parquet(ack_path)
        both = ack.groupby("example_id")["variant"].agg(lambda v: {"orig", "cf"} <= set(v))
        ack = ack[ack["example_id"].map(both)]
        if len(ack):
            out["control_all"] = (discrimination_terms(ack["variant"].tolist(), ack["ack"].astype(float).tolist()),
                                  ack["example_id"].tolist(), None)
    o = pick(n, "rm_d").reset_index()
    if "caused" in o.columns and len(o):
        out["grounded"] = (grounded_terms(o["ack"].tolist(), o["caused"].tolist(), o["ack_caused"].tolist()),
                           o["example_id"].tolist(), None)
    return {k: v for k, v in out.items() if v is not None}


def bon_two_sided_groups(run: Path, a: str = TWO_SIDED, b: str = ONE_SIDED) -> dict[str, Group]:
    """RM_D± − RM_D at the headline N (pick's acknowledgment, metric and discrimination), and
    RM_D± − RM on counterfactual prompts; empty where the run has no `a` picks."""
    if (got := _picks(run)) is None:
        return {}
    pick, n = got
    if pick(n, a).empty:
        return {}
    out: dict[str, Group | None] = {
        "ack_diff": _diff_group(pick(n, a)["ack"], pick(n, b)["ack"]),
        "acc_diff": _diff_group(pick(n, a)["metric"], pick(n, b)["metric"]) if "metric" in pick(n, a) else None,
        "disc_diff": _disc_diff_group(pick(n, a)["ack"], pick(n, a, "cf")["ack"], pick(n, b)["ack"], pick(n, b, "cf")["ack"]),
        "cf_ack_diff_vs_rm": _diff_group(pick(n, a, "cf")["ack"], pick(n, "rm", "cf")["ack"]),
    }
    return {k: v for k, v in out.items() if v is not None}


def dpo_two_sided_groups(run: Path, a: str = TWO_SIDED, b: str = ONE_SIDED) -> dict[str, Group]:
    """DPO(RM_D±) − DPO(RM_D) (`dpo_groups`' measures) and DPO(RM_D±) − DPO(RM) acknowledgment on
    counterfactual prompts; empty where `a` was not trained."""
    out = dpo_groups(run, a, b)
    vs_rm = dpo_groups(run, a, "rm").get("cf_ack_diff")
    return out | ({"cf_ack_diff_vs_rm": vs_rm} if vs_rm is not None else {})


def dpo_groups(run: Path, a: str = "rm_d", b: str = "rm") -> dict[str, Group]:
    """One run dir's DPO(A) − DPO(B) figures as bootstrap groups over (training seed, prompt)."""
    path = run / "dpo-eval" / "responses.parquet"
    if not path.is_file():
        return {}
    resp = read_parquet(path)
    if not {a, b} <= set(resp["reward"]):
        return {}
    out: dict[str, Group] = {}
    cells = cell_means(resp)
    for measure, (prompt, column) in MEASURES.items():
        if column not in cells:
            continue
        pair = paired_cells(cells, a, b, prompt, column)
        if len(pair):
            ones = [1.0] * len(pair)
            out[measure] = ([(1.0, pair[f"{column}_a"].tolist(), ones), (-1.0, pair[f"{column}_b"].tolist(), ones)],
                            pair["example_id"].tolist(), pair["seed"].tolist())
    for measure in TRUTH_MEASURES:
        pair = paired_sums(resp, a, b, measure)
        if len(pair):
            out[measure] = (pair_terms(pair, measure), pair["example_id"].tolist(), pair["seed"].tolist())
    return out


def _pool(groups: list[Group], replicates: int) -> dict[str, Any]:
    r = nested_bootstrap(groups, replicates=replicates)
    return {"est": r.estimate, "lo": r.low, "hi": r.high, "p": r.p_value, "generation_seeds": len(groups)}


def pooled_summary(runs: dict[int, Path], replicates: int = 2000) -> dict[str, Any]:
    """SWEEP/summary.json: every figure pooled over the finished generation seeds in `runs`."""
    out: dict[str, Any] = {"generation_seeds": sorted(runs), "min_generation_seeds": MIN_SEEDS,
                           "enough_seeds": len(runs) >= MIN_SEEDS, "units": UNITS, "bon": {}, "dpo": {}}
    parts = (("bon", bon_groups), ("dpo", dpo_groups), ("bon_two_sided", bon_two_sided_groups), ("dpo_two_sided", dpo_two_sided_groups))
    for part, read in parts:
        per_run = [read(path) for _, path in sorted(runs.items())]
        names = dict.fromkeys(k for groups in per_run for k in groups)
        for name in names:
            have = [groups[name] for groups in per_run if name in groups]
            out.setdefault(part, {})[name] = _pool(have, replicates)
    if out["dpo"]:
        out["dpo_comparison"] = "rm_d − rm"
    return out


TITLES = {"bon": "Best-of-N at each seed's headline N", "dpo": "DPO(RM_D) − DPO(RM), held-out prompts",
          "bon_two_sided": "Two-sided RM_D± (rm_d_deny) − RM_D, best-of-N picks at each seed's headline N",
          "dpo_two_sided": "Two-sided DPO(RM_D±) − DPO(RM_D), held-out prompts"}


NAMES = {"rm_d_vs_rm": "RM_D − RM pick, acknowledgment (orig)", "control": "RM_D pick: discrimination (orig − cf)",
         "hide": "RM pick: headline N − N = 1", "control_all": "all responses: discrimination (orig − cf)",
         "grounded": "RM_D pick: grounded acknowledgment (true − false)",
         "ack_diff": "acknowledgment (orig)", "acc_diff": "accuracy (orig)", "cf_ack_diff": "acknowledgment (cf, control)",
         "disc_diff": "discrimination (orig − cf)", "grounded_diff": "grounded acknowledgment (true − false)",
         "cf_ack_diff_vs_rm": "RM_D± − RM: acknowledgment (cf, control)"}


def pooled_markdown(summary: dict[str, Any]) -> list[str]:
    """sweep.md's section on the pooled figures, naming the unit of every interval."""
    k = len(summary["generation_seeds"])
    lines = ["## Pooled over generation seeds", "",
             f"{k} generation seed(s). Each figure is the mean of the seeds' own estimates; its 95% interval resamples "
             "generation seeds, then inside each its prompts (best-of-N) or its training seeds and prompts, crossed "
             "(DPO). " + (f"**Fewer than {MIN_SEEDS} generation seeds: not enough for a claim** (the interval over "
                          f"{k} seeds is coarse)." if not summary["enough_seeds"] else
                          f"At least {MIN_SEEDS} generation seeds, as a claim needs."), ""]
    for part, title in TITLES.items():
        if not summary.get(part):
            continue
        lines += [f"{title} (interval over: {UNITS[part]}):", "", "| figure | pooled, points [95% CI] | seeds |", "|---|---|---:|"]
        for name, r in summary[part].items():
            cell = "n/a" if pd.isna(r["est"]) else f"{100 * r['est']:+.1f} [{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}]"
            lines.append(f"| {NAMES.get(name, name)} | {cell} | {r['generation_seeds']} |")
        lines.append("")
    return lines
