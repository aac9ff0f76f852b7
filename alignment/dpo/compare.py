"""The dpo-eval stage's metrics of one run, as `alignment compare RUN_A RUN_B` pairs them.

Every number of `dpo-eval/dpo.csv` (metric, acknowledgment and validity per decoding, prompt
variant and reward variant, and the orig − cf gaps) and of `ack_effects.csv` (a trained policy's
acknowledgment rate minus the base policy's or plain RM's) becomes one column of per-example
values, computed from `dpo-eval/responses.parquet` exactly as the stage scores them
(`alignment.dpo.evaluate.example_scores`) and averaged over seeds, so the mean of a column over
the evaluated examples is the stage's own number. A run dir whose dpo-eval kept only the
per-seed scores (`data.parquet`, no `responses.parquet`) gives the same metrics as plain values
(`dpo_summary`): compare shows them without an interval and says why.
"""

from __future__ import annotations

import pandas as pd

from alignment.dpo.effects import comparisons
from alignment.dpo.evaluate import MEASURES, example_scores
from alignment.store import RunDir, read_parquet

RESPONSES = ("policy", "reward", "seed", "example_id", "variant", "sample", "pred", "correct", "valid", "ack")
SCORES = ("reward", "seed", "prompt", "decoding", *MEASURES, "valid")


def _name(decoding: str, measure: str, prompt: str, reward: str) -> str:
    """A metric's column name.

    >>> _name("greedy", "metric", "orig", "rm_d")
    'DPO greedy metric (orig, rm_d)'
    """
    return f"DPO {decoding} {measure} ({prompt}, {reward})"


def _gap(decoding: str, measure: str, reward: str) -> str:
    return f"DPO {decoding} {measure} gap orig − cf ({reward})"


def _effect(a: str, b: str) -> str:
    return f"DPO ack effect {a} − {b} (orig)"


def _columns(means: pd.DataFrame) -> dict[str, pd.Series]:
    """Name -> per-example values from seed-averaged scores indexed by (reward, decoding, prompt,
    example_id)."""
    out: dict[str, pd.Series] = {}
    for (reward, decoding), g in means.groupby(level=["reward", "decoding"]):
        by_prompt = {p: gp.droplevel(["reward", "decoding", "prompt"]) for p, gp in g.groupby(level="prompt")}
        for prompt, gp in by_prompt.items():
            for m in (*MEASURES, "valid"):
                out[_name(decoding, m, prompt, reward)] = gp[m]
        if {"orig", "cf"} <= set(by_prompt):
            for m in MEASURES:
                out[_gap(decoding, m, reward)] = by_prompt["orig"][m] - by_prompt["cf"][m]
    return out


def dpo_per_example(run: RunDir) -> pd.DataFrame:
    """One row per evaluated example, one column per dpo-eval metric; empty without responses."""
    path = run.stage("dpo-eval") / "responses.parquet"
    if not path.is_file():
        return pd.DataFrame()
    resp = read_parquet(path, RESPONSES)
    answers = run.read("build").set_index("id")["answer"]
    rows = [{"reward": reward, "seed": seed, **r}
            for (_, reward, seed), g in resp.groupby(["policy", "reward", "seed"], sort=False)
            for r in example_scores(g, answers)]
    means = pd.DataFrame(rows).groupby(["reward", "decoding", "prompt", "example_id"])[[*MEASURES, "valid"]].mean()
    cols = _columns(means)
    # ack_effects counts every response (greedy and sampled) on original prompts, per example and seed.
    orig = resp[resp["variant"] == "orig"]
    ack = orig.groupby(["reward", "seed", "example_id"])["ack"].mean().groupby(["reward", "example_id"]).mean()
    for a, b in comparisons(set(resp["reward"])):
        cols[_effect(a, b)] = ack[a] - ack[b]
    return pd.DataFrame(cols)


def dpo_summary(run: RunDir) -> dict[str, float]:
    """The same metrics as single values, from the per-seed scores and `ack_effects.csv`."""
    path = run.stage("dpo-eval") / "data.parquet"
    if not path.is_file():
        return {}
    scores = read_parquet(path, SCORES)
    # One pseudo-example holding each mean over seeds, so the per-example code names them alike.
    means = scores.assign(example_id="all").groupby(["reward", "decoding", "prompt", "example_id"])[[*MEASURES, "valid"]].mean()
    out = {k: float(v.iloc[0]) for k, v in _columns(means).items()}
    effects = run.stage("dpo-eval") / "ack_effects.csv"
    if effects.is_file():
        eff = pd.read_csv(effects)
        out |= {_effect(*str(c).split(" − ")): float(d) for c, d in zip(eff["comparison"], eff["diff"], strict=True)}
    return out
