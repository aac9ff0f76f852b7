"""The policy under prompt-level transformations: its modal answer and answer distribution.

`transformed_frames(examples, names, pool, seed)` builds, per transformation, the frame of
transformed example rows that `alignment.generation.sampling.run_generation` samples exactly like
`generate` (same ids, so the same per-sample seeds: base and control share their randomness).
`policy_pairs(base, control, option_maps, name)` compares them per example:

- answer relation: the modal answer over the N original-prompt samples (ties as in
  `alignment.receipts.runner.modal_answer`) must be the same option, letters mapped back;
- attribution relation: the one-source account (modal answer on the original and on the
  counterfactual prompt, and whether they differ) must be identical, the paired-consistency
  relation of Method B for a permutation or a distractor.

The distance between the two answer distributions (total variation over options, INVALID one
more value) is reported beside each pair.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from alignment.audit.prompts import transform_prompt
from alignment.audit.summary import pair, summary_row, verdict_pair, violation
from alignment.receipts.prediction import Prediction
from alignment.receipts.runner import INVALID, answer_of, modal_answer

Row = Mapping[str, Any]


def transformed_frames(
    examples: pd.DataFrame, names: Sequence[str], pool: Sequence[Row], seed: int
) -> dict[str, tuple[pd.DataFrame, dict[str, tuple[int, ...]], int]]:
    """name -> (transformed rows, example id -> option map, rows that do not offer it)."""
    out = {}
    for name in names:
        rows, maps, skipped = [], {}, 0
        for row in examples.to_dict("records"):
            t = transform_prompt(name, row, pool, seed)
            if t is None:
                skipped += 1
                continue
            rows.append(t.row)
            maps[str(row["id"])] = t.option_map
        out[name] = (pd.DataFrame(rows), maps, skipped)
    return out


def _answers(df: pd.DataFrame, variant: str, option_map: Sequence[int] | None = None) -> list[int]:
    part = df[(df["variant"] == variant) & (df["sample"] >= 0)].sort_values("sample")
    answers = [answer_of(p) for p in part["pred"]]
    if option_map is not None:  # transformed option index -> base option index
        answers = [a if a == INVALID else int(option_map[a]) for a in answers]
    return answers


def total_variation(a: Sequence[int], b: Sequence[int]) -> float:
    """>>> total_variation([0, 0, 1, 1], [0, 0, 0, 1])
    0.25
    """
    ca, cb = Counter(a), Counter(b)
    return 0.5 * sum(abs(ca[k] / len(a) - cb[k] / len(b)) for k in set(ca) | set(cb))


def _text_for(df: pd.DataFrame, answer: int, option_map: Sequence[int] | None = None) -> str:
    """One original-prompt response whose (mapped) answer is the modal one, to show beside it."""
    part = df[(df["variant"] == "orig") & (df["sample"] >= 0)].sort_values("sample")
    for pred, text in zip(part["pred"], part["text"], strict=True):
        a = answer_of(pred)
        if (a if a == INVALID or option_map is None else option_map[a]) == answer:
            return str(text)
    return ""


def _endpoints(answers_orig: list[int], answers_cf: list[int], protected: str) -> Prediction:
    old = modal_answer(answers_orig)
    new = modal_answer(answers_cf) if answers_cf else None
    receipt = None if new is None else ([[protected]] if new != old else [])
    return Prediction(old=old, new=new, receipt=receipt)


def policy_pairs(
    name: str, base: pd.DataFrame, control: pd.DataFrame, option_maps: Mapping[str, Sequence[int]], protected: Mapping[str, str], skipped: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(per-example rows, summary rows, violations) for one transformation."""
    rows, answer_pairs, account_pairs, bad = [], [], [], []
    for eid, omap in option_maps.items():
        b, c = base[base["example_id"] == eid], control[control["example_id"] == eid]
        bo, co = _answers(b, "orig"), _answers(c, "orig", omap)
        if not bo or not co:
            continue
        be = _endpoints(bo, _answers(b, "cf"), protected[eid])
        ce = _endpoints(co, _answers(c, "cf", omap), protected[eid])
        answer_pairs.append(verdict_pair(name, be.old, ce.old, eid))
        if be.new is not None and ce.new is not None:
            account_pairs.append(pair(name, be, ce, eid))
        tv = total_variation(bo, co)
        rows.append({"transformation": name, "example_id": eid, "base_answer": be.old, "control_answer": ce.old,
                     "base_cf_answer": be.new, "control_cf_answer": ce.new,
                     "base_distribution": json.dumps(dict(sorted(Counter(bo).items()))),
                     "control_distribution": json.dumps(dict(sorted(Counter(co).items()))), "tv_distance": tv,
                     "answer_consistent": be.old == ce.old, "attribution_consistent": (be.old, be.new) == (ce.old, ce.new)})
        if be.old != ce.old:
            bad.append(violation("policy", name, "modal answer", eid, "orig", be.old, ce.old,
                                 _text_for(b, be.old), _text_for(c, ce.old, omap), severity=tv))
        if be.new is not None and ce.new is not None and (be.old, be.new) != (ce.old, ce.new):
            bad.append(violation("policy", name, "one-source account", eid, "orig+cf", (be.old, be.new), (ce.old, ce.new), severity=tv))
    mean_tv = float(pd.Series([r["tv_distance"] for r in rows]).mean()) if rows else float("nan")
    summary = [summary_row("policy", name, "modal answer", answer_pairs, skipped, mean_tv_distance=mean_tv),
               summary_row("policy", name, "one-source account", account_pairs, skipped)]
    return rows, summary, bad
