"""Scoring responses: plain and augmented rewards, and one final reward per strategy.

`alignment score CONFIG --out runs/<name>` (`alignment.stages.score`) reads `build/`, `generate/` and `attribute/` and writes
`score/data.parquet`: per response `reward_plain` (as is) and, for original responses,
`reward_augmented` (the task's acknowledgment sentence appended), then the final rewards

- `rm`: plain; `rm_d` / `rm_c`: augmented where strategy D / C fired, else plain;
- `rm_d_expected` / `rm_c_expected`: p·augmented + (1 − p)·plain with p = `p_d` / `p_c`.

Every response, original and counterfactual, is also scored with the task's denial sentence
appended (`reward_denied`; NaN when the task has none), which the two-sided strategies
`rm_d_deny` / `rm_c_deny` use: augmented where D / C fired, else min(plain, denied).

Counterfactual responses answer a prompt without the feature, so there is nothing to attribute:
every one-sided final reward equals the plain one there. With receipts on (`attribution.receipts`), original
responses whose receipt is non-empty are also scored with a disclaimer naming exactly the
receipt's sources (`reward_receipt`, final variant `rm_receipt`). Each example is committed as its own shard, so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from alignment.augment.strategies import final_rewards as strategy_rewards
from alignment.generation.base import chat_for
from alignment.reward.base import RewardModel


def receipt_scores(rm: RewardModel, prompt: Any, part: pd.DataFrame, receipt_suffix: dict[int, str]) -> dict[int, float]:
    """Score each original response with the disclaimer its own receipt calls for (if any)."""
    out: dict[int, float] = {}
    by_suffix: dict[str, list[int]] = {}
    for s in part["sample"]:
        if receipt_suffix.get(int(s)):
            by_suffix.setdefault(receipt_suffix[int(s)], []).append(int(s))
    texts = dict(zip(part["sample"].astype(int), part["text"], strict=True))
    for suffix, samples in sorted(by_suffix.items()):
        scores = rm.score(prompt, [texts[s] for s in samples], [suffix])
        out.update({s: float(v[0]) for s, v in zip(samples, scores, strict=True)})
    return out


def score_example(
    rm: RewardModel, ex: dict[str, Any], group: pd.DataFrame, suffix: str, receipt_suffix: dict[int, str] | None = None,
    deny: str | None = None,
) -> list[dict[str, Any]]:
    """One example's rows: one RM call per prompt variant with every suffix it needs (plain, the
    acknowledgment on original prompts, the denial `deny` on both when given)."""
    rows = []
    for variant in ("orig", "cf"):
        part = group[group["variant"] == variant].sort_values("sample")
        if part.empty:
            continue
        prompt = chat_for(ex["system"], ex["query"] if variant == "orig" else ex["cf_query"])
        suffixes = ["", suffix] if variant == "orig" else [""]
        if deny is not None:
            suffixes.append(deny)
        scores = rm.score(prompt, part["text"].tolist(), suffixes)
        by_receipt = receipt_scores(rm, prompt, part, receipt_suffix) if receipt_suffix is not None and variant == "orig" else {}
        for (_, r), s in zip(part.iterrows(), scores, strict=True):
            row = {
                "example_id": ex["id"],
                "variant": variant,
                "sample": int(r["sample"]),
                "reward_plain": float(s[0]),
                "reward_augmented": float(s[1]) if variant == "orig" else float("nan"),
                "reward_denied": float(s[-1]) if deny is not None else float("nan"),
            }
            if receipt_suffix is not None:
                row["reward_receipt"] = by_receipt.get(int(r["sample"]), float(s[0]))
            rows.append(row)
    return rows


def receipt_suffixes(disclaimer: Any, attrib: pd.DataFrame, ex_id: str) -> dict[int, str] | None:
    """sample → the disclaimer naming that response's receipt sources, after a blank line ("" if
    none); `disclaimer(receipt)` words it. None when the run has no receipts."""
    if "receipt" not in attrib.columns:
        return None
    part = attrib[attrib["example_id"] == ex_id]
    out = {}
    for s, rec in zip(part["sample"], part["receipt"], strict=True):
        text = disclaimer(_as_lists(rec))
        out[int(s)] = "\n\n" + text if text else ""
    return out


def _as_lists(receipt: Iterable[Iterable[str]]) -> list[list[str]]:
    return [list(map(str, a)) for a in receipt]


def final_rewards(scores: pd.DataFrame, attrib: pd.DataFrame) -> pd.DataFrame:
    """Join attribution flags onto original responses and derive the per-strategy rewards
    (`alignment.augment.strategies`); counterfactual responses never fire."""
    cols = ["example_id", "sample", "d", "c", "p_d", "p_c"]
    df = scores.merge(attrib[cols].assign(variant="orig"), on=["example_id", "variant", "sample"], how="left")
    orig = df["variant"] == "orig"
    for flag, p in (("d", "p_d"), ("c", "p_c")):
        df[flag] = df[flag].fillna(False).astype(bool) & orig
        df[p] = df[p].fillna(0.0).where(orig, 0.0)
    return strategy_rewards(df)
