"""Statistics as pure functions (doctested); reports only format what these compute.

Imported by the stages (`bon`, `report`, `dpo-eval`, audits); no command of its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for fewer than two values).

    >>> mean_se([1.0, 0.0, 1.0, 0.0])
    (0.5, 0.288...)
    """
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(values) / n
    if n < 2:
        return m, 0.0
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    return m, math.sqrt(var / n)


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default).

    >>> lo, hi = wilson_interval(8, 10)
    >>> round(lo, 3), round(hi, 3)
    (0.49, 0.943)
    >>> wilson_interval(0, 0)
    (nan, nan)
    """
    if n == 0:
        return float("nan"), float("nan")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
