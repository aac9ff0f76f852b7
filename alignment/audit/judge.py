"""The acknowledgment judge under response-level transformations, and on counterfactual responses.

- verdict agreement: the judge labels the base and the transformed text of each sampled original
  response (one `Judge.judge` call over all distinct texts); the two verdicts must be equal.
- counterfactual control: on counterfactual prompts the protected feature is absent, so every
  acknowledgment the `ack` stage recorded there is a false positive, a wrong verdict by itself
  (its error lower bound is the rate itself, not half of it as for a pair).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from alignment.analysis.stats import wilson_interval
from alignment.audit.responses import Parse
from alignment.audit.reward import response_pairs
from alignment.audit.summary import summary_row, verdict_pair, violation
from alignment.judge.base import Judge, Verdict, verdict_record

Row = Mapping[str, Any]


def judge_audit(
    judge: Judge | Callable[[], Judge], judge_as: str, examples: Mapping[str, Row], responses: pd.DataFrame,
    names: Sequence[str], ack: str, parse: Parse,
) -> tuple[pd.DataFrame, list[dict[str, Any]], list[dict[str, Any]]]:
    """(per-response verdicts, summary rows, violations) over sampled original responses."""
    items: list[tuple[str, str, int, str, str]] = []
    skipped = dict.fromkeys(names, 0)
    for eid, part in responses.sort_values(["example_id", "sample"]).groupby("example_id", sort=True):
        pairs, skip = response_pairs(names, part, ack, parse, list(examples[str(eid)]["options"]))
        for name in names:
            skipped[name] += skip[name]
            items += [(name, str(eid), s, b, c) for s, b, c in pairs[name]]
    texts = sorted({t for *_, b, c in items for t in (b, c)})
    verdicts: dict[str, Verdict] = {}
    if texts:
        model = judge() if callable(judge) and not hasattr(judge, "judge") else judge
        verdicts = dict(zip(texts, model.judge(judge_as, texts), strict=True))
    rows, summary, bad = [], [], []
    for name in names:
        mine = [it for it in items if it[0] == name]
        pairs = []
        for _, eid, s, b, c in mine:
            vb, vc = verdicts[b].ack, verdicts[c].ack
            rows.append({"transformation": name, "example_id": eid, "sample": s,
                         **verdict_record(verdicts[b], "base_"), **verdict_record(verdicts[c], "control_")})
            pairs.append(verdict_pair(name, vb, vc, (eid, s)))
            if vb != vc:
                bad.append(violation("judge", name, "verdict", eid, str(s), vb, vc, b, c))
        rate = sum(verdicts[c].ack for *_, c in mine) / len(mine) if mine else float("nan")
        summary.append(summary_row("judge", name, "verdict", pairs, skipped[name], control_ack_rate=rate))
    return pd.DataFrame(rows), summary, bad


def counterfactual_control(ack: pd.DataFrame, responses: pd.DataFrame) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The judge's acknowledgment rate on counterfactual responses: each one a false positive."""
    cf = ack[ack["variant"] == "cf"].merge(responses[["example_id", "variant", "sample", "text"]], on=["example_id", "variant", "sample"], how="left")
    n, k = len(cf), int(cf["ack"].sum()) if len(cf) else 0
    lo, hi = wilson_interval(n - k, n)
    row = {"evaluator": "judge", "transformation": "counterfactual", "relation": "no acknowledgment without the feature",
           "kind": "control", "pairs": n, "violations": k, "consistency": 1 - k / n if n else float("nan"),
           "ci_low": lo, "ci_high": hi, "error_lower_bound": k / n if n else float("nan"), "skipped": 0}
    bad = [violation("judge", "counterfactual", "no acknowledgment without the feature", str(r["example_id"]), str(r["sample"]),
                     "feature absent", "acknowledged", "", str(r["text"])) for r in cf[cf["ack"].astype(bool)].to_dict("records")]
    return row, bad
