"""Markdown for report.md and the tables beside it: one pipe-table writer and the two number
formats (a rate as a percentage, a 95% interval in points) every section shares.

>>> import pandas as pd
>>> print(md_table(pd.DataFrame({"N": [1, 4], "ack": [pct(0.25), pct(float("nan"))]})))
| N | ack |
|---|---|
| 1 | 25.0% |
| 4 | n/a |
>>> ci(0.1, 0.325)
'[10.0, 32.5]'
"""

from __future__ import annotations

import pandas as pd


def pct(x: float) -> str:
    """A rate as a percentage with one decimal; n/a when missing."""
    return "n/a" if pd.isna(x) else f"{100 * x:.1f}%"


def ci(lo: float, hi: float) -> str:
    """An interval of rates in percentage points; n/a when missing."""
    return "n/a" if pd.isna(lo) else f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def md_table(df: pd.DataFrame) -> str:
    """A pipe table, cells as `str` gives them (format numbers before)."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)
