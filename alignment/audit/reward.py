"""The reward model under response-level transformations: score shift and rank agreement.

Per example, the base and transformed texts of its N sampled original responses are scored in one
`RewardModel.score` call (the shared-prefix path runs the prompt once). Best-of-N depends only on
the order of a prompt's scores, so the relations checked are order relations:

- top-1: the best-scored response must stay the best (one pair per prompt);
- pairwise order: every pair of the prompt's responses must keep its order (one pair per pair of
  responses; Kendall's tau (`scipy.stats.kendalltau`) summarises the same comparisons per prompt).

The score shift (control − base) is reported too; it has no required value, since only order
matters to best-of-N, but a large shift under a layout change is worth seeing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from alignment.audit.responses import Parse, transform_response
from alignment.audit.summary import summary_row, verdict_pair, violation
from alignment.generation.base import chat_for
from alignment.reward.base import RewardModel

Row = Mapping[str, Any]


def response_pairs(
    names: Sequence[str], part: pd.DataFrame, ack: str, parse: Parse, options: list[str]
) -> tuple[dict[str, list[tuple[int, str, str]]], dict[str, int]]:
    """name -> [(sample, base text, control text)] for one example's responses, and skip counts."""
    out, skipped = {}, {}
    for name in names:
        out[name], skipped[name] = [], 0
        for s, text in zip(part["sample"], part["text"], strict=True):
            p = transform_response(name, str(text), ack, parse, options)
            if p is None:
                skipped[name] += 1
            else:
                out[name].append((int(s), *p))
    return out, skipped


def _sign(x: float) -> int:
    return int(np.sign(x))


def _prompt_row(name: str, eid: str, items: list[tuple[int, str, str]], b: np.ndarray, c: np.ndarray) -> dict[str, Any]:
    n, shift = len(items), c - b
    tau = float(kendalltau(b, c).statistic) if n >= 2 else float("nan")
    return {"transformation": name, "example_id": eid, "responses": n,
            "top1_base": items[int(np.argmax(b))][0], "top1_control": items[int(np.argmax(c))][0],
            "kendall_tau": tau, "mean_shift": float(shift.mean()), "max_abs_shift": float(np.abs(shift).max())}


def _compare(name: str, eid: str, items: list[tuple[int, str, str]], b: np.ndarray, c: np.ndarray,
             sink: dict[str, list], out: dict[str, list]) -> None:
    """Append the prompt's row and violations to `out`, its top-1 and pairwise pairs to `sink`."""
    row = _prompt_row(name, eid, items, b, c)
    out["prompts"].append(row)
    if len(items) < 2:
        return
    bi, ci = int(np.argmax(b)), int(np.argmax(c))
    sink["top1"].append(verdict_pair(name, row["top1_base"], row["top1_control"], eid))
    if bi != ci:
        out["bad"].append(violation("reward", name, "top-1", eid, f"{row['top1_base']} vs {row['top1_control']}",
                                    f"{b[bi]:.3f} (sample {row['top1_base']})", f"{c[ci]:.3f} (sample {row['top1_control']})",
                                    items[bi][1], items[ci][2], severity=abs(c[ci] - c[bi])))
    for i, j in combinations(range(len(items)), 2):
        sb, sc = _sign(b[i] - b[j]), _sign(c[i] - c[j])
        sink["order"].append(verdict_pair(name, sb, sc, (eid, i, j)))
        if sb != sc:
            out["bad"].append(violation("reward", name, "pairwise order", eid, f"{items[i][0]},{items[j][0]}",
                                        f"{b[i]:.3f} vs {b[j]:.3f}", f"{c[i]:.3f} vs {c[j]:.3f}",
                                        items[i][2], items[j][2], severity=abs((b[i] - b[j]) - (c[i] - c[j]))))


def reward_audit(
    rm: RewardModel | Callable[[], RewardModel], examples: Mapping[str, Row], responses: pd.DataFrame,
    names: Sequence[str], ack: str, parse: Parse,
) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]], list[dict[str, Any]]]:
    """(per-response scores, per-prompt rows, summary rows, violations) over `responses`
    (sampled original responses of the audited examples)."""
    out: dict[str, list] = {"prompts": [], "bad": []}
    per_name = {n: {"top1": [], "order": []} for n in names}
    scores, skipped = [], dict.fromkeys(names, 0)
    model = None
    for eid, part in responses.sort_values(["example_id", "sample"]).groupby("example_id", sort=True):
        ex = examples[str(eid)]
        pairs, skip = response_pairs(names, part, ack, parse, list(ex["options"]))
        texts = sorted({t for items in pairs.values() for _, *ts in items for t in ts})
        if not texts:
            continue
        model = model or (rm() if callable(rm) and not hasattr(rm, "score") else rm)
        values = dict(zip(texts, model.score(chat_for(ex["system"], ex["query"]), texts, [""])[:, 0], strict=True))
        for name, items in pairs.items():
            skipped[name] += skip[name]
            if not items:
                continue
            b = np.array([values[x] for _, x, _ in items])
            c = np.array([values[y] for _, _, y in items])
            scores += [{"transformation": name, "example_id": str(eid), "sample": s, "base": bv, "control": cv}
                       for (s, _, _), bv, cv in zip(items, b, c, strict=True)]
            _compare(name, str(eid), items, b, c, per_name[name], out)
    prompts, per_response = pd.DataFrame(out["prompts"]), pd.DataFrame(scores)
    summary = []
    for name in names:
        mine = prompts[prompts["transformation"] == name] if len(prompts) else prompts
        shift = (per_response["control"] - per_response["base"])[per_response["transformation"] == name] if len(per_response) else pd.Series(dtype=float)
        extra = {"mean_kendall_tau": float(mine["kendall_tau"].mean()) if len(mine) else float("nan"),
                 "mean_shift": float(shift.mean()), "mean_abs_shift": float(shift.abs().mean())}
        summary.append(summary_row("reward", name, "top-1", per_name[name]["top1"], skipped[name], **extra))
        summary.append(summary_row("reward", name, "pairwise order", per_name[name]["order"], skipped[name]))
    return per_response, prompts, summary, out["bad"]
