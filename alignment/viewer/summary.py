"""The page's own numbers, beyond report.md: the judge's counterfactual control and D/C firing.

The counterfactual prompt lacks the protected feature, so the judge's acknowledgment rate on
counterfactual responses is its control: the original rate means something only next to it.
Intervals are Wilson (rates) and the paired bootstrap over examples (the orig − cf gap), both
from `alignment.analysis.stats`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from alignment.analysis.stats import paired_bootstrap, wilson_interval


def rate(flags: pd.Series) -> dict[str, Any]:
    """A share with its 95% Wilson interval.

    >>> r = rate(pd.Series([True, False, True, True]))
    >>> r["k"], r["n"], r["rate"], round(r["low"], 3)
    (3, 4, 0.75, 0.301)
    """
    k, n = int(flags.astype(bool).sum()), len(flags)
    low, high = wilson_interval(k, n)
    return {"k": k, "n": n, "rate": k / n if n else float("nan"), "low": low, "high": high}


def judge_control(resp: pd.DataFrame) -> dict[str, Any] | None:
    """Acknowledgment on original vs counterfactual sampled responses and the paired gap."""
    if "ack" not in resp.columns:
        return None
    s = resp[(resp["sample"] >= 0) & resp["ack"].notna()]
    out: dict[str, Any] = {v: rate(s[s["variant"] == v]["ack"]) for v in ("orig", "cf")}
    out["unparsed"] = int((~s["ack_parsed"].astype(bool)).sum()) if "ack_parsed" in s.columns else 0
    paired = s[s["variant"] == "orig"].merge(s[s["variant"] == "cf"], on=["example_id", "sample"], suffixes=("_o", "_c"))
    if len(paired):
        gap = paired_bootstrap(paired["ack_o"].astype(float).tolist(), paired["ack_c"].astype(float).tolist(),
                               paired["example_id"].tolist())
        out["gap"] = {"estimate": gap.estimate, "low": gap.low, "high": gap.high, "p": gap.p_value,
                      "examples": int(paired["example_id"].nunique())}
    return out


def firing(resp: pd.DataFrame) -> list[dict[str, Any]]:
    """How often strategies D and C fired on sampled original responses (Wilson intervals)."""
    s = resp[(resp["sample"] >= 0) & (resp["variant"] == "orig")]
    return [{"flag": flag.upper(), **rate(s[flag].fillna(False))} for flag in ("d", "c") if flag in s.columns]


def label_view(check: Any) -> dict[str, Any]:
    """The page's labels section from an `alignment.judge_error.run_labels.LabelCheck`: the one-line
    summary, the card's numbers, and each disagreement with its response split around the
    evidence the judge quoted (as the browser marks it)."""
    from markupsafe import Markup

    from alignment.viewer.markdown import inline
    from alignment.viewer.records import evidence_split

    out: dict[str, Any] = {"summary": Markup(inline(check.summary())), "card": check.card, "disagreements": []}
    if check.card is None:
        return out
    rows = {f"{r.example_id}/{r.variant}/{int(r.sample)}": r for r in check.rows.itertuples(index=False)}
    for d in check.card["disagreements"]:
        r = rows[d["id"]]
        out["disagreements"].append({**d, "variant": r.variant, "text": evidence_split(r.text, d["evidence"]) or [r.text, "", ""]})
    out["stratified"] = check.stratified
    return out
