"""DPO preference pairs from the scored responses (`alignment dpo-pairs`, `alignment.stages.dpo_pairs`).

Reads build, generate and score; writes `dpo-pairs/<variant>/{train,valid}.parquet` in TRL's
conversational preference format (`prompt` = [system, user] messages, `chosen` / `rejected` = one
assistant message each) plus `dpo-pairs/<variant>/stats.json` and, for the manifest convention,
`dpo-pairs/data.parquet` with every pair of every variant.

A two-sided variant (`Strategy.two_sided`, e.g. `rm_d_deny`) gives pairs from both prompt types:
one per (example, prompt variant), the counterfactual pair prompted with the counterfactual query,
so that claiming the absent feature can be the rejected side; `prompt_variant` names the prompt
type of every pair (always `orig` for the other variants).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pandas as pd

from alignment.augment.strategies import BY_VARIANT
from alignment.errors import UserError
from alignment.generation import chat_for
from alignment.store import RunDir

KEYS = ["example_id", "variant", "sample"]
SKIPS = ("no_valid", "same_response", "equal_texts", "equal_rewards")
PAIR_COLUMNS = ["example_id", "prompt_variant", "prompt", "chosen", "rejected", "chosen_sample", "rejected_sample",
                "chosen_reward", "rejected_reward"]
# The query column each prompt type is asked with.
QUERY = {"orig": "query", "cf": "cf_query"}


def _pick(group: pd.DataFrame, reward: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Chosen = highest-reward valid response, rejected = lowest-reward response of any kind.

    Ties go to the lowest sample index (for the rejected one: the lowest other than the chosen),
    so the pair does not depend on row order.
    """
    g = group.sort_values("sample", kind="stable")
    valid = g[g["valid"]]
    if valid.empty:
        return None, None
    chosen = valid.loc[valid[reward].idxmax()]
    # Among equally low responses prefer one other than the chosen, so a tie reads as a tie.
    low = g[g[reward] == g[reward].min()]
    others = low[low["sample"] != chosen["sample"]]
    rejected = (others if len(others) else low).iloc[0]
    return chosen.to_dict(), rejected.to_dict()


def make_pairs(
    scores_df: pd.DataFrame, responses_df: pd.DataFrame, examples_df: pd.DataFrame, variant: str
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One pair per original-prompt example from its sampled responses (per example and prompt
    type for a two-sided variant), and the skip counts.

    A prompt is skipped when it has no valid response (`no_valid`), when chosen and rejected
    are the same response, e.g. a single sample (`same_response`), when they are two responses
    with the same text (`equal_texts`: a pair that teaches nothing, however the rewards differ),
    or when their rewards are equal (`equal_rewards`). Responses without a reward (NaN) are ignored.
    A two-sided variant's stats also count pairs per prompt type (`pairs_orig`, `pairs_cf`).
    """
    if variant not in scores_df.columns:
        raise UserError(f"score/data.parquet has no reward column {variant!r}; rerun `alignment score`")
    two_sided = BY_VARIANT[variant].two_sided if variant in BY_VARIANT else False
    prompts = ("orig", "cf") if two_sided else ("orig",)
    resp = responses_df[responses_df["variant"].isin(prompts) & (responses_df["sample"] >= 0)]
    table = resp[[*KEYS, "text", "valid"]].merge(scores_df[[*KEYS, variant]], on=KEYS, how="inner")
    table = table[table[variant].notna()]
    examples = examples_df.set_index("id")
    skips = dict.fromkeys(SKIPS, 0)
    rows, margins = [], []
    # Sorted by example first, so an example's original pair precedes its counterfactual one.
    order = {p: i for i, p in enumerate(prompts)}
    for (ex_id, prompt), group in sorted(table.groupby(["example_id", "variant"]), key=lambda kv: (kv[0][0], order[kv[0][1]])):
        chosen, rejected = _pick(group, variant)
        skip = _skip(chosen, rejected, variant)
        if skip or chosen is None or rejected is None:
            skips[skip or "no_valid"] += 1
            continue
        ex = examples.loc[ex_id]
        rows.append(
            {
                "example_id": ex_id,
                "prompt_variant": prompt,
                "prompt": chat_for(str(ex["system"]), str(ex[QUERY[prompt]])),
                "chosen": [{"role": "assistant", "content": chosen["text"]}],
                "rejected": [{"role": "assistant", "content": rejected["text"]}],
                "chosen_sample": int(chosen["sample"]),
                "rejected_sample": int(rejected["sample"]),
                "chosen_reward": float(chosen[variant]),
                "rejected_reward": float(rejected[variant]),
            }
        )
        margins.append(float(chosen[variant]) - float(rejected[variant]))
    stats = {
        "examples": int(table["example_id"].nunique()),
        "pairs": len(rows),
        **({f"pairs_{p}": sum(r["prompt_variant"] == p for r in rows) for p in prompts} if two_sided else {}),
        **{f"skipped_{k}": v for k, v in skips.items()},
        "mean_margin": float(np.mean(margins)) if margins else float("nan"),
    }
    return pd.DataFrame(rows, columns=PAIR_COLUMNS), stats


def _skip(chosen: dict[str, Any] | None, rejected: dict[str, Any] | None, reward: str) -> str | None:
    """Why this chosen / rejected choice makes no pair (a `SKIPS` name), or None."""
    if chosen is None or rejected is None:
        return "no_valid"
    if chosen["sample"] == rejected["sample"]:
        return "same_response"
    if chosen["text"] == rejected["text"]:
        return "equal_texts"
    return "equal_rewards" if float(chosen[reward]) - float(rejected[reward]) <= 0 else None


def split_pairs(pairs: pd.DataFrame, valid_fraction: float, seed: int, max_pairs: int | None) -> pd.DataFrame:
    """Shuffle examples with `seed`, keep the first `max_pairs` examples, hold out a share as `valid`.

    Splitting by example keeps one prompt out of both sides, and keeps a two-sided variant's
    original and counterfactual pairs of one example together (`max_pairs` counts examples, so
    such a variant can keep up to twice as many pairs); with two or more examples and a positive
    fraction at least one is held out so training always has an eval signal.
    """
    ids = sorted(set(pairs["example_id"].tolist()))
    random.Random(seed).shuffle(ids)
    if max_pairs is not None:
        ids = ids[:max_pairs]
    n_valid = round(valid_fraction * len(ids))
    if valid_fraction > 0 and len(ids) >= 2:
        n_valid = min(max(n_valid, 1), len(ids) - 1)
    split = {i: ("valid" if k < n_valid else "train") for k, i in enumerate(ids)}
    out = pairs[pairs["example_id"].isin(split)].copy()
    out["split"] = out["example_id"].map(split)
    order = {i: k for k, i in enumerate(ids)}
    return out.sort_values("example_id", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


def pair_outcomes(pairs: pd.DataFrame, responses: pd.DataFrame, ack: pd.DataFrame) -> dict[str, Any]:
    """Over the kept pairs: mean reward margin, and how often the chosen and the rejected response
    acknowledge the feature (the judge's verdict) and answer correctly, as fractions; each pair's
    responses are looked up under its own prompt type (`prompt_variant`, original if absent)."""
    out: dict[str, Any] = {"kept": len(pairs)}
    if pairs.empty:
        return out | dict.fromkeys(("mean_margin", "chosen_ack", "rejected_ack", "chosen_correct", "rejected_correct"), float("nan"))
    out["mean_margin"] = float((pairs["chosen_reward"] - pairs["rejected_reward"]).mean())
    table = responses[[*KEYS, "correct"]].merge(ack[[*KEYS, "ack"]], on=KEYS, how="left").set_index(KEYS)
    prompt = pairs["prompt_variant"] if "prompt_variant" in pairs.columns else pd.Series("orig", index=pairs.index)
    for side in ("chosen", "rejected"):
        rows = table.loc[list(zip(pairs["example_id"], prompt, pairs[f"{side}_sample"], strict=True))]
        out[f"{side}_ack"] = float(rows["ack"].astype(float).mean())
        out[f"{side}_correct"] = float(rows["correct"].astype(float).mean())
    return out


def read_split(run: RunDir, variant: str, split: str) -> pd.DataFrame:
    path = run.stage("dpo-pairs") / variant / f"{split}.parquet"
    return pd.read_parquet(path) if path.is_file() else pd.DataFrame()
