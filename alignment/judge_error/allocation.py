"""How many labels each stratum of a stratified sample gets: Neyman allocation for a rate.

A stratified sample's prediction-powered rate (`alignment.judge_error.clustered`) has variance
sum_h N_h**2 S_h**2 / n_h, with S_h the spread of the residual (label − judge verdict) in stratum
h; for a fixed total n it is smallest with n_h proportional to N_h S_h (Neyman 1934). The strata
are (prompt variant, judge verdict): in the judge's "yes" stratum the residual is a false
positive, spread sqrt(q(1 − q)) with q = 1 − precision; in its "no" stratum a miss, with q the
share of the judge's "no"s that people call "yes". Both q come from the judge's rate in the
stratum's variant and a prior sensitivity and specificity (the measured ones in
`alignment/data/labels/judge_error.json` where there are, else `PRIOR`), and are held at least
`Q_FLOOR` so that a stratum the prior calls error-free still gets labels.
"""

from __future__ import annotations

import math
from typing import Any

PRIOR = (0.7, 0.95)  # sensitivity, specificity of an unmeasured judge: the low end of those measured
Q_FLOOR = 0.02
MIN_PER_STRATUM = 2  # fewer and a stratum's residual spread cannot be estimated


def residual_shares(judge_rate: float, sensitivity: float, specificity: float) -> tuple[float, float]:
    """(share of the judge's "yes" that are wrong, share of its "no" that are wrong) implied by the
    judge's rate and its sensitivity and specificity, each held within [Q_FLOOR, 0.5].

    >>> [round(x, 3) for x in residual_shares(0.1, 0.7, 0.95)]
    [0.462, 0.026]
    """
    youden = sensitivity + specificity - 1
    true_rate = min(max((judge_rate + specificity - 1) / youden, 0.0), 1.0) if youden > 0 else judge_rate
    yes = true_rate * sensitivity + (1 - true_rate) * (1 - specificity)
    false_yes = (1 - true_rate) * (1 - specificity) / yes if yes > 0 else 0.5
    false_no = true_rate * (1 - sensitivity) / (1 - yes) if yes < 1 else 0.5
    hold = lambda q: min(max(q, Q_FLOOR), 0.5)  # noqa: E731
    return hold(false_yes), hold(false_no)


def neyman(sizes: dict[Any, int], spreads: dict[Any, float], n: int) -> dict[Any, int]:
    """`n` draws over strata proportional to size × spread, at least `MIN_PER_STRATUM` (or the
    whole stratum) each and never more than a stratum holds; largest remainders round.

    >>> neyman({"a": 1000, "b": 100}, {"a": 0.1, "b": 0.5}, 30)
    {'a': 20, 'b': 10}
    >>> neyman({"a": 1000, "b": 3}, {"a": 0.1, "b": 0.5}, 30)
    {'a': 28, 'b': 2}
    """
    n = min(n, sum(sizes.values()))
    take = {k: min(sizes[k], MIN_PER_STRATUM) for k in sizes}
    while sum(take.values()) < n:
        open_ = [k for k in sizes if take[k] < sizes[k]]
        left = n - sum(take.values())
        mass = {k: sizes[k] * max(spreads[k], 1e-9) for k in open_}
        total = sum(mass.values())
        goal = {k: left * mass[k] / total for k in open_}
        add = {k: min(int(goal[k]), sizes[k] - take[k]) for k in open_}
        if not any(add.values()):  # hand out the remainder one at a time, largest share first
            k = max(open_, key=lambda key: (goal[key] - int(goal[key]), str(key)))
            add[k] = 1
        for k, a in add.items():
            take[k] += a
    return take


def stratum_spreads(strata: dict[str, list[dict[str, Any]]], sensitivity: float, specificity: float) -> dict[str, float]:
    """Each "variant/ack" or "variant/no-ack" stratum's residual spread sqrt(q(1 − q)).

    >>> rows = [{"ack": True}] + [{"ack": False}] * 9
    >>> {k: round(v, 3) for k, v in stratum_spreads({"orig/ack": rows[:1], "orig/no-ack": rows[1:]}, 0.7, 0.95).items()}
    {'orig/ack': 0.499, 'orig/no-ack': 0.158}
    """
    out = {}
    for key in strata:
        variant = key.rsplit("/", 1)[0]
        rows = [r for k, v in strata.items() if k.rsplit("/", 1)[0] == variant for r in v]
        rate = sum(bool(r["ack"]) for r in rows) / len(rows)
        false_yes, false_no = residual_shares(rate, sensitivity, specificity)
        q = false_no if key.endswith("/no-ack") else false_yes
        out[key] = math.sqrt(q * (1 - q))
    return out
