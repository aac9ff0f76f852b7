"""Attribution: did the protected feature cause this answer? (strategies D, C, expected)

`alignment attribute CONFIG --out runs/<name>` (`alignment.stages.attribute`) reads `generate/`
and writes one row per original response (sampled or greedy):

- `d`: the answer differs from one counterfactual response drawn (seeded) from the same example's
  counterfactual samples; the drawn index is `cf_sample`. By default (`draw: per_prompt`) the
  draw is made once per example and every original response of it is compared with the same
  counterfactual response, as the paper's code does; `draw: per_response` draws afresh for each
  original response, a deviation from the paper that adds reward noise within a prompt.
- `c`: the original response is correct and the drawn counterfactual is not.
- `p_d`: share of the example's counterfactual samples whose answer differs from this one's;
  `p_c` = [this response correct] × share of counterfactual samples that are not correct.
  These "expected" variants average over every counterfactual sample instead of one draw.

Invalid answers (no parseable option): with `invalid: as_answer` (default) "invalid" is treated as
one more answer value, so an invalid response differs from any valid one and equals another
invalid one; with `invalid: never_fires` a pair involving an invalid answer never counts as a
difference. An invalid answer is never correct. With `receipts: true` each row also carries the
response's receipt over all declared sources as a list of source lists (from the `receipts` stage; see
`alignment/receipts/runner.py` for the verdict definition). An example without counterfactual samples gets
`cf_sample = -1`, no firing and `p_d = p_c = 0` (nothing to attribute against).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from alignment.augment.strategies import draw_counterfactual
from alignment.config import doc


@dataclass
class AttributionConfig:
    """How answer changes are attributed to the protected feature."""

    seed: int = doc("Seed for drawing the counterfactual response each original is compared with.", 0)
    draw: Literal["per_prompt", "per_response"] = doc(
        "Counterfactual draws for strategies D and C: per_prompt (one draw per example, shared by all its "
        "original responses: the paper's procedure) or per_response (a fresh draw for each original response; "
        "a deviation from the paper that adds reward noise within a prompt).",
        "per_prompt",
    )
    invalid: Literal["as_answer", "never_fires"] = doc(
        "Invalid answers: as_answer (one more answer value) or never_fires (no difference).",
        "as_answer",
    )
    receipts: bool = doc(
        "Also execute the judgment cube over every declared source (extra generations for the "
        "hybrids) and attach each response's receipt; scoring then adds the `rm_receipt` variant, "
        "whose acknowledgment names exactly the sources in the receipt.",
        False,
    )


def answers_differ(a: Any, b: Any, invalid: str) -> bool:
    a_none, b_none = a is None or pd.isna(a), b is None or pd.isna(b)
    if a_none or b_none:
        return invalid == "as_answer" and a_none != b_none
    return int(a) != int(b)


def attribute_example(
    orig: pd.DataFrame, cf: pd.DataFrame, cfg: AttributionConfig, example_id: str
) -> list[dict[str, Any]]:
    """Rows for one example's original responses against its counterfactual samples."""
    cf = cf[cf["sample"] >= 0].sort_values("sample")
    cf_rows = cf.to_dict("records")
    rows = []
    for r in orig.sort_values("sample").to_dict("records"):
        row = {"example_id": example_id, "sample": int(r["sample"]), "pred": r["pred"], "correct": bool(r["correct"]), "valid": bool(r["valid"])}
        if not cf_rows:
            rows.append({**row, "cf_sample": -1, "cf_pred": None, "d": False, "c": False, "p_d": 0.0, "p_c": 0.0})
            continue
        key = int(r["sample"]) if cfg.draw == "per_response" else None
        drawn = cf_rows[draw_counterfactual(cfg.seed, example_id, key, len(cf_rows))]
        diffs = [answers_differ(r["pred"], x["pred"], cfg.invalid) for x in cf_rows]
        cf_wrong = [not bool(x["correct"]) for x in cf_rows]
        rows.append(
            {
                **row,
                "cf_sample": int(drawn["sample"]),
                "cf_pred": drawn["pred"],
                "d": answers_differ(r["pred"], drawn["pred"], cfg.invalid),
                "c": bool(r["correct"]) and not bool(drawn["correct"]),
                "p_d": sum(diffs) / len(diffs),  # p_d: D's probability over every counterfactual sample
                "p_c": float(bool(r["correct"])) * sum(cf_wrong) / len(cf_wrong),
            }
        )
    return rows


def attribute_responses(responses: pd.DataFrame, cfg: AttributionConfig) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for example_id, group in responses.groupby("example_id", sort=True):
        rows.extend(
            attribute_example(
                group[group["variant"] == "orig"], group[group["variant"] == "cf"], cfg, str(example_id)
            )
        )
    return pd.DataFrame(rows)


def attach_receipts(df: pd.DataFrame, receipts: pd.DataFrame) -> pd.DataFrame:
    """Join the per-response receipts of the `receipts` stage: a list of source lists per row
    (`[]` when the endpoints agree or the response has no cube)."""
    rec = receipts[["example_id", "sample", "receipt"]]
    rec = rec.assign(receipt=[[list(map(str, a)) for a in r] for r in rec["receipt"]])
    out = df.merge(rec, on=["example_id", "sample"], how="left")
    out["receipt"] = [r if isinstance(r, list) else [] for r in out["receipt"]]
    return out
